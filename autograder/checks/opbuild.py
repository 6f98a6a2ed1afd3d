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

A source that starts with :data:`PRELUDE` (exercise 7's skeleton does) compiles against a
precompiled header of it when one is built (:func:`build_prelude_header`, once a machine:
``pch/`` there, or ``$COURSE_OPS_PCH_DIR``, which the grader hands its sandboxes read-only):
parsing TensorFlow's framework headers is most of a build, and the header parses them once.
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["BuildError", "Toolchain", "find_toolchain", "tf_flags", "build_library", "build_from_text",
           "build_dirs", "writable_build_dir", "CUDA_ARCH_FLAGS", "CUDA_HOME", "RECIPE_VERSION", "PRELUDE",
           "PCH_ENV", "prelude_header", "prelude_root", "build_prelude_header", "prune_preludes", "build_lock", "build_once"]

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
# The host compile's own flags (TensorFlow's come after them); a precompiled header is made with them too.
CXX_FLAGS = ("-std=c++17", "-fPIC", "-O2", "-w")
# The first lines of exercise 7's skeleton, and of any source that wants the precompiled header.
PRELUDE = """#define EIGEN_USE_THREADS
#include <cmath>
#include "tensorflow/core/framework/common_shape_fns.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/shape_inference.h"
"""
PCH_ENV = "COURSE_OPS_PCH_DIR"  # a folder that holds a built prelude header (the grader sets it)
HEADERS_NOTE = "headers.txt"  # in a built prelude's folder: the TensorFlow headers it was made from


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


@contextlib.contextmanager
def build_lock(folder: Path, filename: str):
    """Hold ``folder/.<filename>.lock`` while building ``filename`` there: a second process
    building the same thing (the book's chapter beside a test, two graders of one op) waits
    for the first and then finds its result, instead of compiling it again at the same time."""
    with open(Path(folder) / f".{filename}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def build_once(target: Path, build: Callable[[Path], None]) -> Path:
    """``target``, made by ``build(partial)`` unless it is there: one build at a time
    (:func:`build_lock`; a process that waited takes the first one's result), written to
    ``partial`` in a private folder beside it and renamed into place, so a reader never sees half
    of it."""
    target = Path(target)
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with build_lock(target.parent, target.name):
        if target.is_file():  # built while this process waited for the lock
            return target
        with tempfile.TemporaryDirectory(dir=target.parent, prefix=f".{target.name}-") as tmp:
            partial = Path(tmp) / target.name
            build(partial)
            os.replace(partial, target)  # atomic
    return target


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
    compile_flags, link_flags = tf_flags()
    include_dirs = sorted({f"-I{Path(p).resolve().parent}" for p in inputs})
    defs = [f"-D{d}" for d in defines]
    gpu_flags = (["-DGOOGLE_CUDA=1", f"-I{CUDA_HOME / 'include'}"] if gpu else [])
    # cudart is linked statically so the .so loads on machines without
    # the CUDA runtime libraries (TensorFlow's pip wheel brings its own).
    gpu_libs = ([f"-L{CUDA_HOME / 'lib64'}", "-lcudart_static", "-lrt", "-ldl", "-lpthread"] if gpu else [])

    def compile_into(partial: Path) -> None:
        objects = [str(_cuda_object(Path(cu), [*cuda_sources, *headers], include_dirs, compile_flags,
                                    toolchain, out_dir)) for cu in cuda_sources]
        prelude = [] if gpu or len(sources) != 1 or not starts_with_prelude(Path(sources[0])) \
            else prelude_header(toolchain)
        run_compiler([toolchain.cxx, *CXX_FLAGS, "-shared", *(["-include", str(prelude)] if prelude else []),
                      *[str(s) for s in sources], *objects, "-o", str(partial), *include_dirs, *defs, *compile_flags, *gpu_flags,
                      *link_flags, *gpu_libs], f"{toolchain.cxx} {' '.join(Path(s).name for s in sources)}")

    return build_once(out_dir / f"{name}-{key}.so", compile_into)


def starts_with_prelude(source: Path) -> bool:
    """Whether ``source`` begins with :data:`PRELUDE` (blank lines before it allowed): only then does
    including the precompiled prelude first leave its meaning unchanged (what it includes again is
    guarded, the macro defined the same way)."""
    try:
        return source.read_text(errors="replace").lstrip().startswith(PRELUDE)
    except OSError:
        return False


def _tf_include_dir() -> str | None:
    """The folder of this TensorFlow's C++ headers, or None when TensorFlow cannot be found."""
    spec = importlib.util.find_spec("tensorflow")
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.join(list(spec.submodule_search_locations)[0], "include")


def _prelude_key(toolchain: Toolchain) -> str | None:
    """What a precompiled prelude is valid for: this compiler (its version too), this TensorFlow's
    headers, the flags and the prelude; None when the compiler or TensorFlow cannot be found."""
    try:
        version = subprocess.run([toolchain.cxx, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    include = _tf_include_dir()
    if include is None:
        return None
    return digest([RECIPE_VERSION, toolchain.tf_version, toolchain.cxx, version, include, *CXX_FLAGS, PRELUDE])


def prelude_root(dirs: Sequence[Path] | None = None) -> Path:
    """Where precompiled preludes are built and looked up first: ``$COURSE_OPS_PCH_DIR``, else
    ``pch/`` in the first build folder."""
    chosen = os.environ.get(PCH_ENV)
    return Path(chosen) if chosen else Path((dirs if dirs is not None else build_dirs())[0]) / "pch"


def _prelude_folders(dirs: Sequence[Path] | None = None) -> list[Path]:
    folders = [prelude_root(dirs), *(Path(d) / "pch" for d in (dirs if dirs is not None else build_dirs()))]
    return list(dict.fromkeys(folders))


def prelude_header(toolchain: Toolchain | None = None, dirs: Sequence[Path] | None = None) -> Path | None:
    """The header of a built, readable precompiled :data:`PRELUDE` for this toolchain
    (``<folder>/<key>/prelude.h`` next to its ``.gch``), or None: it is never built here."""
    key = _prelude_key(toolchain or find_toolchain())
    if key is None:
        return None
    for folder in _prelude_folders(dirs):
        header = folder / key / "prelude.h"
        try:
            if os.access(header, os.R_OK) and os.access(header.with_name("prelude.h.gch"), os.R_OK):
                return header
        except (OSError, RuntimeError):  # a folder the sandbox's audit hook hides
            continue
    return None


def build_prelude_header(toolchain: Toolchain | None = None, dirs: Sequence[Path] | None = None) -> Path:
    """Build the precompiled :data:`PRELUDE` (~18 s and ~400 MB here) unless one is there; return
    its header.  One build at a time (a lock file), each made in a private folder and renamed
    into place, so a reader never sees half of one."""
    toolchain = toolchain or find_toolchain()
    found = prelude_header(toolchain, dirs)
    if found is not None:
        return found
    key = _prelude_key(toolchain)
    if key is None:
        raise BuildError(f"cannot ask {toolchain.cxx} its version or find TensorFlow's headers")
    root = prelude_root(dirs)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError:
        root = writable_build_dir(dirs) / "pch"
        root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a second grader waits for the first one's build
        target = root / key
        if not (target / "prelude.h.gch").is_file():
            compile_flags, _ = tf_flags()
            tmp = Path(tempfile.mkdtemp(dir=root, prefix=f".{key}-"))
            try:
                (tmp / "prelude.h").write_text(PRELUDE)
                (tmp / HEADERS_NOTE).write_text(_tf_include_dir() or "")
                run_compiler([toolchain.cxx, *CXX_FLAGS, "-x", "c++-header", str(tmp / "prelude.h"),
                              "-o", str(tmp / "prelude.h.gch"), *compile_flags], "precompiling the prelude")
                os.chmod(tmp, 0o755)
                shutil.rmtree(target, ignore_errors=True)
                os.replace(tmp, target)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
            prune_preludes(root, keep=target)
    return target / "prelude.h"


def prune_preludes(root: Path, keep: Path) -> list[Path]:
    """Remove the built preludes under ``root`` whose TensorFlow headers are gone (a deleted
    virtual environment: each one's prelude is ~400 MB, and a fresh clone makes a new one), and
    those built before :data:`HEADERS_NOTE` was written; never ``keep``.  Returns what was removed."""
    removed = []
    for entry in sorted(root.iterdir()):
        if entry == keep or entry.name.startswith(".") or not entry.is_dir():
            continue
        try:
            headers = (entry / HEADERS_NOTE).read_text().strip()
        except OSError:
            headers = ""
        if not headers or not os.path.isdir(headers):
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    return removed


def _cuda_object(source: Path, inputs: Sequence[Path], include_dirs: list[str], compile_flags: list[str],
                 toolchain: Toolchain, out_dir: Path) -> Path:
    """``source`` compiled by nvcc for :data:`CUDA_ARCH_FLAGS` into ``out_dir/objects``, cached
    under a hash of everything the compile reads (``inputs``: the CUDA sources and headers)."""
    flags = [*include_dirs, *nvcc_flags(compile_flags)]
    key = digest([RECIPE_VERSION, toolchain.tf_version, str(toolchain.nvcc), *flags, source.name,
                  *(Path(p).name for p in inputs), *(Path(p).read_bytes() for p in inputs)])
    return build_once(out_dir / "objects" / f"{source.name}-{key}.o", lambda partial: run_compiler(
        [toolchain.nvcc, "-c", str(source), "-o", str(partial), *flags], f"nvcc {source.name}"))


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


def main() -> int:
    """``python -m autograder.checks.opbuild``: build the precompiled prelude (the grader runs this
    in a process of its own: it imports TensorFlow, which the grader's process never does)."""
    try:
        print(build_prelude_header())
    except BuildError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
