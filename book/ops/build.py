"""Build the course's custom TensorFlow ops: one command, cached.

    python book/ops/build.py              # CPU library (+ GPU libraries and nvcc probes when nvcc exists)
    python book/ops/build.py --harness    # also compile the standalone CUDA harness
    python book/ops/build.py --harness --run   # ... and run it (needs a GPU)
    make ops                              # the same as the second line

Two compiles run at a time (:func:`build_all`), the longest first.

Every artefact lands in ``book/ops/build/`` under a name that contains a hash
of its sources, the compiler command and the TensorFlow version, so a second
call with unchanged sources returns at once instead of paying the ~15 s of
compiling against TensorFlow's headers again.  The chapter and the tests
share that cache.

The recipe itself is the package's :mod:`autograder.checks.opbuild` (the
exercise builds learners' kernels with it, from an installed package too);
this file adds the book's op, the CUDA harness and the nvcc probe.  As a
module (the chapter imports it by path) the entry points are
:func:`build_library` and :func:`build_from_text`; both raise
:class:`BuildError` with a one-line reason.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
try:
    from autograder.checks import opbuild
except ImportError:  # run with a Python that has the checkout's TensorFlow but not the package installed
    sys.path.insert(0, str(HERE.parents[1]))
    from autograder.checks import opbuild
# The generic recipe (toolchain, TensorFlow's flags, nvcc, the cache key) is
# the package's, so the exercise builds the same way from a `pip install`.
from autograder.checks.opbuild import (CUDA_ARCH_FLAGS, CUDA_HOME, RECIPE_VERSION, BuildError,  # noqa: F401
                                       Toolchain, find_toolchain, tf_flags)

_digest, _run, _nvcc_flags = opbuild.digest, opbuild.run_compiler, opbuild.nvcc_flags

BUILD_DIR = Path(os.environ.get("COURSE_OPS_BUILD_DIR", HERE / "build"))

BIAS_GELU_SOURCES = ("bias_gelu_op.cc",)
BIAS_GELU_CUDA_SOURCES = ("bias_gelu_kernel.cu.cc",)
BIAS_GELU_HEADERS = ("bias_gelu.h", "bias_gelu_math.h", "bias_gelu_cuda.cuh")
HARNESS_SOURCE = "bias_gelu_harness.cu"


# Where builds go when BUILD_DIR is read-only.
FALLBACK_DIR = opbuild.fallback_dir()


def writable_build_dir() -> Path:
    """BUILD_DIR when this process may write there, else FALLBACK_DIR."""
    return opbuild.writable_build_dir([BUILD_DIR, FALLBACK_DIR])


def build_library(name: str, sources: list[Path], *, cuda_sources: list[Path] = (),
                  headers: list[Path] = (), defines: list[str] = (), out_dir: Path | None = None,
                  toolchain: Toolchain | None = None) -> Path:
    """:func:`autograder.checks.opbuild.build_library`, cached in BUILD_DIR (or FALLBACK_DIR)."""
    return opbuild.build_library(name, sources, cuda_sources=cuda_sources, headers=headers, defines=defines,
                                 out_dir=out_dir, toolchain=toolchain, dirs=[BUILD_DIR, FALLBACK_DIR])


def build_from_text(name: str, source: str, *, cuda_source: str | None = None,
                    out_dir: Path | None = None, toolchain: Toolchain | None = None) -> Path:
    """:func:`autograder.checks.opbuild.build_from_text`, cached in BUILD_DIR (or FALLBACK_DIR)."""
    return opbuild.build_from_text(name, source, cuda_source=cuda_source, out_dir=out_dir or writable_build_dir(),
                                   toolchain=toolchain)


def build_bias_gelu(*, gpu: bool = False, gpu_only: bool = False, toolchain: Toolchain | None = None) -> Path:
    """The chapter's fused bias + GELU library: CPU kernels only, or (``gpu``)
    CPU and GPU kernels, or (``gpu_only``) the GPU kernels alone."""
    srcs = [HERE / s for s in BIAS_GELU_SOURCES]
    cuda = [HERE / s for s in BIAS_GELU_CUDA_SOURCES] if (gpu or gpu_only) else []
    name = "bias_gelu_gpu_only" if gpu_only else "bias_gelu_gpu" if gpu else "bias_gelu"
    return build_library(name, srcs, cuda_sources=cuda, headers=[HERE / h for h in BIAS_GELU_HEADERS],
                         defines=["COURSE_OPS_GPU_ONLY"] if gpu_only else [], toolchain=toolchain)


def build_harness(*, toolchain: Toolchain | None = None) -> Path:
    """Compile the standalone CUDA harness (no TensorFlow) and return the binary."""
    toolchain = toolchain or find_toolchain()
    if toolchain.nvcc is None:
        raise BuildError("nvcc not found: the CUDA harness needs the CUDA toolkit (or set NVCC)")
    inputs = [HERE / HARNESS_SOURCE, *(HERE / h for h in BIAS_GELU_HEADERS)]
    key = _digest([RECIPE_VERSION, toolchain.nvcc, *CUDA_ARCH_FLAGS, *(p.read_bytes() for p in inputs)])
    return opbuild.build_once(BUILD_DIR / f"bias_gelu_harness-{key}", lambda partial: _run(
        [toolchain.nvcc, "-std=c++17", "-O2", *CUDA_ARCH_FLAGS, str(HERE / HARNESS_SOURCE), "-o", str(partial)],
        f"nvcc {HARNESS_SOURCE}"))


def nvcc_probe(source: Path, *, relaxed_constexpr: bool, toolchain: Toolchain | None = None) -> dict:
    """Compile ``source``'s device code with nvcc and TensorFlow's headers (to PTX for
    compute_80), with or without ``--expt-relaxed-constexpr``; return ``{"returncode",
    "errors", "first_error", "seconds", "cached"}`` (``seconds``: the compile's own, also
    when cached).  The flag's errors are in device code, so the host half of an object
    compile (g++ over TensorFlow's headers) is not run: each probe takes about half the time
    of an object compile or less (the chapter prints the probe's own ``seconds``).  The outcome
    is cached like a build, so the chapter shows the result of the compile `make ops` ran."""
    import json

    toolchain = toolchain or find_toolchain()
    if toolchain.nvcc is None:
        raise BuildError("nvcc not found: install the CUDA toolkit (or set NVCC)")
    key = _digest([RECIPE_VERSION, "ptx-compute_80-timed", toolchain.nvcc, toolchain.tf_version,
                   str(relaxed_constexpr), Path(source).read_bytes()])
    probed = []  # this call's own probe, when it ran one

    def probe(partial: Path) -> None:
        probed.append(_probe_once(source, relaxed_constexpr, toolchain))
        partial.write_text(json.dumps(probed[0]))

    record = opbuild.build_once(BUILD_DIR / f"nvcc-probe-{Path(source).name}-{key}.json", probe)
    return {**json.loads(record.read_text()), "cached": not probed}


def _probe_once(source: Path, relaxed_constexpr: bool, toolchain: Toolchain) -> dict:
    """:func:`nvcc_probe`'s compile, uncached."""
    compile_flags, _ = tf_flags()
    flags = [f for f in _nvcc_flags(compile_flags) if f not in CUDA_ARCH_FLAGS and f != "-w"]
    if not relaxed_constexpr:
        flags.remove("--expt-relaxed-constexpr")
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=BUILD_DIR, prefix=".probe-") as tmp:
        proc = subprocess.run([toolchain.nvcc, "--ptx", str(source), "-o", str(Path(tmp) / "probe.ptx"),
                               "-arch=compute_80", *flags], capture_output=True, text=True)
    errors = [line for line in (proc.stdout + proc.stderr).splitlines() if re.search(r"\berror\b", line)
              and "errors detected" not in line]
    return {"returncode": proc.returncode, "errors": len(errors),
            "first_error": re.sub(r"(?<![\w.])/\S*/", "", errors[0]) if errors else "",
            "seconds": round(time.perf_counter() - start, 1)}


def build_all(*, gpu: bool = True, harness: bool = False, jobs: int | None = None,
              toolchain: Toolchain | None = None) -> dict:
    """Everything ``make ops`` builds, ``jobs`` compiles at a time (default: two, or one on a
    one-core machine): ``{"cpu library": path}``, and where nvcc exists (and ``gpu``) the GPU
    and GPU-only libraries and the two nvcc probes (``"probe without"``/``"probe with"``:
    :func:`nvcc_probe`'s records), and with ``harness`` the CUDA harness.  Each build is cached
    and locked on its own, so the two GPU libraries compile their shared CUDA object once.
    The longest compiles start first; the first build that failed raises its BuildError."""
    toolchain = toolchain or find_toolchain()
    jobs = jobs or max(1, min(2, os.cpu_count() or 1))
    source = HERE / "guide_style_kernel.cu.cc"
    plan = []  # (name, build), longest first: the GPU-only library waits for the shared object last
    if gpu and toolchain.nvcc is not None:
        plan += [("gpu library", lambda: build_bias_gelu(gpu=True, toolchain=toolchain)),
                 ("probe without", lambda: nvcc_probe(source, relaxed_constexpr=False, toolchain=toolchain)),
                 ("probe with", lambda: nvcc_probe(source, relaxed_constexpr=True, toolchain=toolchain))]
    plan.append(("cpu library", lambda: build_bias_gelu(toolchain=toolchain)))
    if gpu and toolchain.nvcc is not None:
        plan.append(("gpu-only library", lambda: build_bias_gelu(gpu_only=True, toolchain=toolchain)))
    if harness:
        plan.append(("cuda harness", lambda: build_harness(toolchain=toolchain)))
    with ThreadPoolExecutor(jobs) as pool:  # compilers are processes: threads only wait on them
        futures = [(name, pool.submit(build)) for name, build in plan]
    return {name: future.result() for name, future in futures}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python book/ops/build.py",
                                     description="Build the course's custom ops (cached in book/ops/build/).")
    parser.add_argument("--cpu-only", action="store_true", help="skip the GPU build even when nvcc exists")
    parser.add_argument("--harness", action="store_true", help="also compile the standalone CUDA harness")
    parser.add_argument("--run", action="store_true", help="run the harness after compiling it (needs a GPU)")
    args = parser.parse_args(argv)
    try:
        toolchain = find_toolchain()
        built = build_all(gpu=not args.cpu_only, harness=args.harness or args.run, toolchain=toolchain)
        print(f"cpu library:      {built['cpu library']}")
        if "gpu library" not in built:
            print("gpu library:      skipped (" + ("--cpu-only" if args.cpu_only else "nvcc not found") + ")")
        else:
            print(f"gpu library:      {built['gpu library']}")
            print(f"gpu-only library: {built['gpu-only library']}")
            for relaxed in (False, True):
                probe = built[f"probe {'with' if relaxed else 'without'}"]
                print(f"nvcc {'with' if relaxed else 'without'} --expt-relaxed-constexpr on guide_style_kernel.cu.cc: "
                      f"exit {probe['returncode']}, {probe['errors']} errors")
        if "cuda harness" in built:
            harness = built["cuda harness"]
            print(f"cuda harness:     {harness}")
            if args.run:
                return subprocess.run([str(harness)]).returncode
    except BuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
