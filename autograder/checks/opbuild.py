"""Compile TensorFlow custom-op libraries from C++ (and CUDA) sources, cached.

Exercise 7 builds the learner's kernel with :func:`build_from_text`; the
book's own op (``book/ops/build.py``) builds with :func:`build_library`.  Both
raise :class:`BuildError` with a one-line reason a person can act on.

Every library lands under a name that contains a hash of its sources, the
compiler command and the TensorFlow version, so a second call with unchanged
sources returns at once instead of paying the ~15 s of compiling against
TensorFlow's headers again.  Where: ``$COURSE_OPS_BUILD_DIR`` when set, else
``$XDG_CACHE_HOME/tf-gpu-course/ops`` (``~/.cache/...``), and when that
cannot be written (the sandboxed grader lets a notebook write only in its own
folder and its TMPDIR) ``<tmp>/course-ops-build``.  Never inside the
installed package.  A CUDA source's object is cached there too (``objects/``), so the
libraries that share a kernel (the book's GPU and GPU-only builds) compile it once.
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["BuildError", "Toolchain", "find_toolchain", "tf_flags", "build_library", "build_from_text",
           "build_dirs", "writable_build_dir", "CUDA_ARCH_FLAGS", "CUDA_HOME", "RECIPE_VERSION"]

# Bumped when the recipe below changes, so old cached builds are not reused.
RECIPE_VERSION = "1"
# Architectures for the CUDA code: sm_75 is the oldest CUDA 13 supports;
# compute_90 PTX lets newer GPUs JIT-compile it.
CUDA_ARCH_FLAGS = (
    "-gencode=arch=compute_75,code=sm_75",
    "-gencode=arch=compute_80,code=sm_80",
    "-gencode=arch=compute_90,code=[sm_90,compute_90]",
)
CUDA_HOME = Path(os.environ.get("CUDA_HOME", "/usr/local/cuda"))


class BuildError(RuntimeError):
    """A build could not run or failed; the message is one line a person can act on."""


@dataclass(frozen=True)
class Toolchain:
    cxx: str
    nvcc: str | None
    tf_version: str


def find_toolchain() -> Toolchain:
    """The C++ compiler, nvcc (or None) and the TensorFlow version, checked
    before any compiling so a missing piece is named in one line."""
    cxx = os.environ.get("CXX", "g++")
    if shutil.which(cxx) is None:
        raise BuildError(f"C++ compiler {cxx!r} not found: install g++ (e.g. `apt-get install g++`) "
                         "or set CXX to a C++17 compiler")
    try:
        tf_version = importlib.metadata.version("tensorflow")
    except importlib.metadata.PackageNotFoundError:
        raise BuildError("TensorFlow is not installed in this Python "
                         f"({sys.executable}); run `make venv` or `pip install tensorflow`") from None
    nvcc = os.environ.get("NVCC") or shutil.which("nvcc")
    if nvcc is None and (CUDA_HOME / "bin" / "nvcc").exists():
        nvcc = str(CUDA_HOME / "bin" / "nvcc")
    return Toolchain(cxx=cxx, nvcc=nvcc, tf_version=tf_version)


def fallback_dir() -> Path:
    """``<tmp>/course-ops-build``: where builds go when the cache folder is read-only."""
    return Path(tempfile.gettempdir()) / "course-ops-build"


def build_dirs() -> list[Path]:
    """The folders a build is looked up in, in order; new builds go to the
    first writable one.  Read at each call, so HOME, TMPDIR and
    COURSE_OPS_BUILD_DIR set after import count."""
    chosen = os.environ.get("COURSE_OPS_BUILD_DIR")
    if chosen:
        return [Path(chosen), fallback_dir()]
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return [Path(cache) / "tf-gpu-course" / "ops", fallback_dir()]


def writable_build_dir(dirs: Sequence[Path] | None = None) -> Path:
    """The first of ``dirs`` (default :func:`build_dirs`) this process may write to."""
    dirs = [Path(d) for d in (dirs if dirs is not None else build_dirs())]
    for candidate in dirs:
        try:
            candidate.mkdir(parents=True, exist_ok=True)
            probe = candidate / f".write-probe-{os.getpid()}"
            probe.write_text("")
            probe.unlink()
            return candidate
        except OSError:
            continue
    raise BuildError(f"cannot write to {' or '.join(map(str, dirs))}: "
                     "set COURSE_OPS_BUILD_DIR to a writable folder")


def _cached(filename: str, dirs: Sequence[Path]) -> Path | None:
    """An existing, readable build of that name in one of ``dirs``."""
    for folder in dirs:
        path = Path(folder) / filename
        try:
            with open(path, "rb"):
                return path
        except OSError:
            continue
    return None


def tf_flags() -> tuple[list[str], list[str]]:
    """TensorFlow's compile and link flags, from the installed wheel."""
    spec = importlib.util.find_spec("tensorflow")
    if spec is None or not spec.submodule_search_locations:
        raise BuildError("TensorFlow is not importable; run `make venv` or `pip install tensorflow`")
    import tensorflow as tf  # imported only on a cache miss: it takes seconds

    compile_flags = list(tf.sysconfig.get_compile_flags())
    include = next((f[2:] for f in compile_flags if f.startswith("-I")), "")
    if not (Path(include) / "tensorflow" / "core" / "framework" / "op_kernel.h").exists():
        raise BuildError(f"TensorFlow's C++ headers are missing under {include!r}; "
                         "reinstall the tensorflow wheel (it ships them in tensorflow/include)")
    # The wheel says --std=c++17; the official guide's -std=c++14 no longer
    # compiles against TensorFlow 2.21's headers (they use C++17 features).
    return compile_flags, list(tf.sysconfig.get_link_flags())


def digest(parts: Sequence[str | bytes]) -> str:
    """A short hash of ``parts`` (the cache key of a build)."""
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode() if isinstance(part, str) else part)
        h.update(b"\0")
    return h.hexdigest()[:16]


def first_errors(output: str, limit: int = 3) -> str:
    """The first compiler errors, shortened to what a person needs.

    When the first error sits inside a TensorFlow header (a macro such as
    OP_REQUIRES_OK expanded after a missing ``;``), the compiler's last
    context line from the person's own file comes first, so the message
    still says where to look."""
    raw = [line.strip() for line in output.splitlines()]
    errors = [i for i, line in enumerate(raw) if re.search(r"\berror\b", line)]
    if not errors:
        return raw[-1] if raw else "no output"
    chosen = [raw[i] for i in errors[:limit]]
    first = errors[0]
    if "/include/" in raw[first]:
        context = [line for line in raw[:first]
                   if re.match(r"[^\s:]+:(\d+:\d+:| In )", line) and "/include/" not in line]
        if context:
            chosen = [context[-1], *chosen[: limit - 1]]
    # Paths of generated files say nothing to a reader; keep the file's name.
    return " | ".join(shorten_paths(line) for line in chosen)


def shorten_paths(line: str) -> str:
    """``line`` with every absolute path cut to its file name."""
    return re.sub(r"(?<![\w.])/\S*/", "", line)


def run_compiler(cmd: list[str], what: str) -> None:
    """Run one compiler command; a failure is a :class:`BuildError` with its first errors."""
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise BuildError(f"{what} failed: {first_errors(proc.stdout + proc.stderr)}")


def nvcc_flags(compile_flags: list[str]) -> list[str]:
    """nvcc's flags for a TensorFlow GPU kernel, from TensorFlow's compile flags."""
    # nvcc spells the standard -std=c++17 and rejects g++'s --std; TF's Eigen
    # headers call constexpr host functions from device code, which nvcc 13
    # refuses without --expt-relaxed-constexpr.
    tf_only = [f for f in compile_flags if not f.startswith("--std") and not f.startswith("-std")]
    return ["-std=c++17", *tf_only, "-DGOOGLE_CUDA=1", "-x", "cu", "-Xcompiler", "-fPIC",
            "--expt-relaxed-constexpr", "-O2", "-w", *CUDA_ARCH_FLAGS]


def build_library(name: str, sources: Sequence[Path], *, cuda_sources: Sequence[Path] = (),
                  headers: Sequence[Path] = (), defines: Sequence[str] = (), out_dir: Path | None = None,
                  toolchain: Toolchain | None = None, dirs: Sequence[Path] | None = None) -> Path:
    """Compile ``sources`` (and, with ``cuda_sources``, a GPU build) into a
    TensorFlow op library and return its path; reuse a cached build when
    nothing that goes into it changed.  The build is looked up in and
    written to ``out_dir`` when given, else looked up in ``dirs`` (default
    :func:`build_dirs`) and written to the first writable one.  ``defines``
    reach the C++ sources only: a CUDA source compiles the same for every
    library it goes into, so its object (:func:`_cuda_object`) is cached on its
    own and two libraries of one kernel pay nvcc once."""
    toolchain = toolchain or find_toolchain()
    gpu = bool(cuda_sources)
    if gpu and toolchain.nvcc is None:
        raise BuildError("nvcc not found: install the CUDA toolkit (or set NVCC) to build the GPU kernel; "
                         "the CPU build does not need it")
    inputs = [*sources, *cuda_sources, *headers]
    for path in inputs:
        if not Path(path).exists():
            raise BuildError(f"source file {path} does not exist")
    key = digest([RECIPE_VERSION, toolchain.tf_version, toolchain.cxx, str(toolchain.nvcc if gpu else ""),
                  *defines, *CUDA_ARCH_FLAGS, *(Path(p).name for p in inputs),
                  *(Path(p).read_bytes() for p in inputs)])
    search = [Path(out_dir)] if out_dir else [Path(d) for d in (dirs if dirs is not None else build_dirs())]
    cached = _cached(f"{name}-{key}.so", search)
    if cached is not None:
        return cached
    out_dir = Path(out_dir) if out_dir else writable_build_dir(search)
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"{name}-{key}.so"
    compile_flags, link_flags = tf_flags()
    include_dirs = sorted({f"-I{Path(p).resolve().parent}" for p in inputs})
    defs = [f"-D{d}" for d in defines]
    with tempfile.TemporaryDirectory(dir=out_dir, prefix=f".{name}-") as tmp:
        objects = [str(_cuda_object(Path(cu), [*cuda_sources, *headers], include_dirs, compile_flags,
                                    toolchain, out_dir)) for cu in cuda_sources]
        gpu_flags = (["-DGOOGLE_CUDA=1", f"-I{CUDA_HOME / 'include'}"] if gpu else [])
        # cudart is linked statically so the .so loads on machines without
        # the CUDA runtime libraries (TensorFlow's pip wheel brings its own).
        gpu_libs = ([f"-L{CUDA_HOME / 'lib64'}", "-lcudart_static", "-lrt", "-ldl", "-lpthread"] if gpu else [])
        partial = Path(tmp) / target.name
        run_compiler([toolchain.cxx, "-std=c++17", "-shared", "-fPIC", "-O2", "-w", *[str(s) for s in sources],
                      *objects, "-o", str(partial), *include_dirs, *defs, *compile_flags, *gpu_flags,
                      *link_flags, *gpu_libs], f"{toolchain.cxx} {' '.join(Path(s).name for s in sources)}")
        # rename is atomic: a concurrent build of the same key never sees half a file
        os.replace(partial, target)
    return target


def _cuda_object(source: Path, inputs: Sequence[Path], include_dirs: list[str], compile_flags: list[str],
                 toolchain: Toolchain, out_dir: Path) -> Path:
    """``source`` compiled by nvcc for :data:`CUDA_ARCH_FLAGS` into ``out_dir/objects``, cached
    under a hash of everything the compile reads (``inputs``: the CUDA sources and headers)."""
    flags = [*include_dirs, *nvcc_flags(compile_flags)]
    key = digest([RECIPE_VERSION, toolchain.tf_version, str(toolchain.nvcc), *flags, source.name,
                  *(Path(p).name for p in inputs), *(Path(p).read_bytes() for p in inputs)])
    target = out_dir / "objects" / f"{source.name}-{key}.o"
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".nvcc-") as tmp:
        partial = Path(tmp) / target.name
        run_compiler([toolchain.nvcc, "-c", str(source), "-o", str(partial), *flags], f"nvcc {source.name}")
        os.replace(partial, target)  # atomic, as for libraries
    return target


def build_from_text(name: str, source: str, *, cuda_source: str | None = None,
                    out_dir: Path | None = None, toolchain: Toolchain | None = None) -> Path:
    """Build an op library from C++ source text (the exercise's learner code):
    the text is written to a file named by its hash, then built as above."""
    out_dir = Path(out_dir) if out_dir else writable_build_dir()
    src_dir = out_dir / "src" / digest([source, cuda_source or ""])
    src_dir.mkdir(parents=True, exist_ok=True)
    cc = src_dir / f"{name}.cc"
    cc.write_text(source)
    cuda = []
    if cuda_source is not None:
        cu = src_dir / f"{name}_kernel.cu.cc"
        cu.write_text(cuda_source)
        cuda = [cu]
    return build_library(name, [cc], cuda_sources=cuda, out_dir=out_dir, toolchain=toolchain)
