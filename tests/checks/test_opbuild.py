"""autograder.checks.opbuild: where builds are cached (never in the package,
somewhere writable inside the grader's sandbox) and one-line build errors.
The builds themselves are exercised by tests/book/test_ops_build.py (the
book's op) and the exercise 7 catalogue (learners' kernels)."""
from __future__ import annotations

from pathlib import Path

import pytest

import autograder
from autograder.checks import opbuild


def test_cache_is_the_users_cache_folder_then_tmp(tmp_path, monkeypatch):
    monkeypatch.delenv("COURSE_OPS_BUILD_DIR", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    monkeypatch.setattr(opbuild.tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    assert opbuild.build_dirs() == [tmp_path / "home" / ".cache" / "tf-gpu-course" / "ops",
                                    tmp_path / "tmp" / "course-ops-build"]
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert opbuild.build_dirs()[0] == tmp_path / "xdg" / "tf-gpu-course" / "ops"
    monkeypatch.setenv("COURSE_OPS_BUILD_DIR", str(tmp_path / "chosen"))
    assert opbuild.build_dirs()[0] == tmp_path / "chosen"


def test_cache_is_never_inside_the_package(monkeypatch):
    monkeypatch.delenv("COURSE_OPS_BUILD_DIR", raising=False)
    package = Path(autograder.__file__).resolve().parent
    for folder in opbuild.build_dirs():
        assert package not in folder.resolve().parents


def test_read_only_cache_falls_back(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert opbuild.writable_build_dir([blocker / "cache", tmp_path / "fallback"]) == tmp_path / "fallback"
    with pytest.raises(opbuild.BuildError, match="COURSE_OPS_BUILD_DIR"):
        opbuild.writable_build_dir([blocker / "cache", blocker / "fallback"])


def test_a_cached_build_is_found_in_any_of_the_folders(tmp_path):
    (tmp_path / "second").mkdir()
    (tmp_path / "second" / "op-1234.so").write_bytes(b"")
    assert opbuild._cached("op-1234.so", [tmp_path / "first", tmp_path / "second"]) == tmp_path / "second" / "op-1234.so"
    assert opbuild._cached("op-5678.so", [tmp_path / "first", tmp_path / "second"]) is None


def test_missing_source_and_missing_nvcc_are_one_line(tmp_path):
    toolchain = opbuild.Toolchain(cxx="g++", nvcc=None, tf_version="0")
    with pytest.raises(opbuild.BuildError, match="does not exist"):
        opbuild.build_library("x", [tmp_path / "missing.cc"], out_dir=tmp_path, toolchain=toolchain)
    with pytest.raises(opbuild.BuildError, match="nvcc not found"):
        opbuild.build_library("x", [tmp_path / "missing.cc"], cuda_sources=[tmp_path / "k.cu.cc"],
                              out_dir=tmp_path, toolchain=toolchain)


def test_first_errors_put_the_learners_line_before_a_header_error():
    output = ("/tmp/x/src/ab/swish.cc: In member function 'void Compute()':\n"
              "SWISH_COMPUTE:3:5: note: in expansion of macro 'OP_REQUIRES_OK'\n"
              "/venv/tensorflow/include/tensorflow/core/framework/op_requires.h:9:1: error: expected ';'\n")
    assert opbuild.first_errors(output) == ("SWISH_COMPUTE:3:5: note: in expansion of macro 'OP_REQUIRES_OK' | "
                                            "op_requires.h:9:1: error: expected ';'")


def _fake_compilers(monkeypatch) -> tuple[opbuild.Toolchain, list[list[str]]]:
    """A toolchain whose compilers only record their command lines and write their -o file."""
    calls: list[list[str]] = []

    def run_compiler(cmd, what):
        calls.append(cmd)
        Path(cmd[cmd.index("-o") + 1]).write_bytes(b"built by " + cmd[0].encode())

    monkeypatch.setattr(opbuild, "run_compiler", run_compiler)
    monkeypatch.setattr(opbuild, "tf_flags", lambda: (["-I/tf/include", "--std=c++17"], ["-ltensorflow_framework"]))
    return opbuild.Toolchain(cxx="g++", nvcc="/cuda/bin/nvcc", tf_version="2.21.0"), calls


def test_two_libraries_of_one_kernel_pay_nvcc_once(tmp_path, monkeypatch):
    toolchain, calls = _fake_compilers(monkeypatch)
    op, kernel, header = tmp_path / "op.cc", tmp_path / "op_kernel.cu.cc", tmp_path / "op.h"
    op.write_text("// op\n")
    kernel.write_text("// kernel\n")
    header.write_text("// header\n")
    out = tmp_path / "build"
    nvcc = lambda: [c for c in calls if c[0] == toolchain.nvcc]

    both = opbuild.build_library("op_gpu", [op], cuda_sources=[kernel], headers=[header], out_dir=out,
                                 toolchain=toolchain)
    gpu_only = opbuild.build_library("op_gpu_only", [op], cuda_sources=[kernel], headers=[header], out_dir=out,
                                     defines=["GPU_ONLY"], toolchain=toolchain)
    assert both != gpu_only and both.exists() and gpu_only.exists()
    assert len(nvcc()) == 1 and len(calls) == 3  # one kernel object, two host compiles and links
    assert "-DGPU_ONLY" in calls[-1] and not any("-DGPU_ONLY" in c for c in nvcc())  # defines: C++ only
    assert nvcc()[0][-1] in opbuild.CUDA_ARCH_FLAGS  # compiled for every architecture
    header.write_text("// header, changed\n")  # what the kernel includes changed: compiled again
    opbuild.build_library("op_gpu", [op], cuda_sources=[kernel], headers=[header], out_dir=out, toolchain=toolchain)
    assert len(nvcc()) == 2
    assert sorted(p.name.split("-")[0] for p in (out / "objects").iterdir() if not p.name.startswith(".")) \
        == ["op_kernel.cu.cc"] * 2


def test_builds_of_one_library_at_the_same_time_compile_it_once(tmp_path, monkeypatch):
    """The book's chapter and a test (or two graders) asking for one library at once: the
    first compiles, the others wait for it and take its result."""
    import threading
    import time

    toolchain, calls = _fake_compilers(monkeypatch)
    record = opbuild.run_compiler

    def slow_compiler(cmd, what):
        time.sleep(0.3)  # long enough for every thread to miss the cache first
        record(cmd, what)

    monkeypatch.setattr(opbuild, "run_compiler", slow_compiler)
    op, kernel = tmp_path / "op.cc", tmp_path / "op_kernel.cu.cc"
    op.write_text("// op\n")
    kernel.write_text("// kernel\n")
    built, start = [], threading.Barrier(3)

    def build():
        start.wait()
        built.append(opbuild.build_library("op_gpu", [op], cuda_sources=[kernel], out_dir=tmp_path / "build",
                                           toolchain=toolchain))

    threads = [threading.Thread(target=build) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(built) == 3 and len(set(built)) == 1 and built[0].read_bytes() == b"built by g++"
    assert [c[0] for c in calls] == [toolchain.nvcc, "g++"], "one kernel object and one library, compiled once"


def _fake_prelude(monkeypatch, tmp_path) -> Path:
    """A 'built' prelude under ``tmp_path/cache/pch`` for a fixed key; returns its header."""
    monkeypatch.delenv(opbuild.PCH_ENV, raising=False)
    monkeypatch.setattr(opbuild, "_prelude_key", lambda toolchain: "k")
    header = tmp_path / "cache" / "pch" / "k" / "prelude.h"
    header.parent.mkdir(parents=True)
    header.write_text(opbuild.PRELUDE)
    header.with_name("prelude.h.gch").write_bytes(b"pch")
    return header


def test_only_a_cpu_source_that_starts_with_the_prelude_includes_its_precompiled_header(tmp_path, monkeypatch):
    toolchain, calls = _fake_compilers(monkeypatch)
    header = _fake_prelude(monkeypatch, tmp_path)
    monkeypatch.setenv("COURSE_OPS_BUILD_DIR", str(tmp_path / "cache"))
    skeleton, other, kernel = tmp_path / "skeleton.cc", tmp_path / "other.cc", tmp_path / "k.cu.cc"
    skeleton.write_text("\n" + opbuild.PRELUDE + "// the op\n")
    other.write_text("// a comment first\n" + opbuild.PRELUDE)
    kernel.write_text("// kernel\n")
    out = tmp_path / "build"

    opbuild.build_library("skeleton", [skeleton], out_dir=out, toolchain=toolchain)
    assert calls[-1][calls[-1].index("-include") + 1] == str(header)
    opbuild.build_library("other", [other], out_dir=out, toolchain=toolchain)
    assert "-include" not in calls[-1]  # its meaning could change: compiled as written
    opbuild.build_library("skeleton_gpu", [skeleton], cuda_sources=[kernel], out_dir=out, toolchain=toolchain)
    assert "-include" not in calls[-1]  # -DGOOGLE_CUDA=1 changes what the headers say
    header.with_name("prelude.h.gch").unlink()  # half a prelude (say, one unreadable) is none
    opbuild.build_library("skeleton_again", [skeleton], out_dir=out, toolchain=toolchain)
    assert "-include" not in calls[-1]


def test_the_prelude_is_built_once_into_a_folder_renamed_into_place(tmp_path, monkeypatch):
    toolchain, calls = _fake_compilers(monkeypatch)
    monkeypatch.delenv(opbuild.PCH_ENV, raising=False)
    monkeypatch.setattr(opbuild, "_prelude_key", lambda toolchain: "k")
    dirs = [tmp_path / "cache"]
    assert opbuild.prelude_header(toolchain, dirs) is None  # looking builds nothing
    assert calls == []
    header = opbuild.build_prelude_header(toolchain, dirs)
    assert header == tmp_path / "cache" / "pch" / "k" / "prelude.h" and header.read_text() == opbuild.PRELUDE
    assert calls[0][calls[0].index("-o") + 1].endswith("prelude.h.gch") and "c++-header" in calls[0]
    assert oct(header.parent.stat().st_mode & 0o777) == "0o755"  # sandboxes of another user read it
    assert [p.name for p in (tmp_path / "cache" / "pch").iterdir() if p.name != ".lock"] == ["k"]
    assert opbuild.build_prelude_header(toolchain, dirs) == header and len(calls) == 1
    monkeypatch.setenv(opbuild.PCH_ENV, str(tmp_path / "handed"))  # what the grader hands a sandbox comes first
    assert opbuild.prelude_root(dirs) == tmp_path / "handed"
    assert opbuild.prelude_header(toolchain, dirs) == header  # and the build folders after it


def test_a_new_prelude_removes_those_whose_tensorflow_headers_are_gone(tmp_path, monkeypatch):
    """A fresh clone's venv makes a new ~400 MB prelude: the ones of deleted venvs go when it is
    built; the ones of venvs still there stay, and so does one being built (a dot folder)."""
    toolchain, calls = _fake_compilers(monkeypatch)
    monkeypatch.delenv(opbuild.PCH_ENV, raising=False)
    root = tmp_path / "cache" / "pch"
    living, deleted = tmp_path / "venv-a" / "include", tmp_path / "venv-b" / "include"
    living.mkdir(parents=True)
    for key, headers in (("alive", living), ("dead", deleted), ("unnoted", None)):
        (root / key).mkdir(parents=True)
        (root / key / "prelude.h.gch").write_bytes(b"pch")
        if headers is not None:
            (root / key / opbuild.HEADERS_NOTE).write_text(str(headers))
    (root / ".other-in-progress").mkdir()
    monkeypatch.setattr(opbuild, "_tf_include_dir", lambda: str(tmp_path / "venv-c" / "include"))
    monkeypatch.setattr(opbuild, "_prelude_key", lambda toolchain: "new")

    opbuild.build_prelude_header(toolchain, [tmp_path / "cache"])
    assert sorted(p.name for p in root.iterdir()) == [".lock", ".other-in-progress", "alive", "new"]
    assert (root / "new" / opbuild.HEADERS_NOTE).read_text() == str(tmp_path / "venv-c" / "include")
    # venv-c is not made by this test: the prelude being kept is never removed, whatever its note says
    assert opbuild.prune_preludes(root, keep=root / "new") == [] and (root / "new").is_dir()
    assert opbuild.prune_preludes(root, keep=root / "alive") == [root / "new"]


@pytest.mark.slow  # compiles the op with and without the prelude
def test_an_op_built_against_the_real_prelude_computes_what_one_built_without_it_does(tmp_path, monkeypatch):
    """g++ for real: the prelude the grader uses (built in the user's cache, as grading does) and
    two builds of one op, with and without it, that must agree."""
    import numpy as np
    import tensorflow as tf

    header = opbuild.build_prelude_header()
    source = opbuild.PRELUDE + """
using namespace tensorflow;
REGISTER_OP("{name}").Input("x: float").Output("y: float").SetShapeFn(shape_inference::UnchangedShape);
namespace {{
class CubeOp : public OpKernel {{
 public:
  explicit CubeOp(OpKernelConstruction* c) : OpKernel(c) {{}}
  void Compute(OpKernelContext* c) override {{
    const Tensor& x = c->input(0);
    Tensor* y = nullptr;
    OP_REQUIRES_OK(c, c->allocate_output(0, x.shape(), &y));
    auto in = x.flat<float>();
    auto out = y->flat<float>();
    for (int64_t i = 0; i < in.size(); ++i) out(i) = std::pow(in(i), 3.0f) + 1.0f;
  }}
}};
}}  // namespace
REGISTER_KERNEL_BUILDER(Name("{name}").Device(DEVICE_CPU), CubeOp);
"""
    commands: list[list[str]] = []
    real = opbuild.run_compiler
    monkeypatch.setattr(opbuild, "run_compiler", lambda cmd, what: (commands.append(cmd), real(cmd, what)))
    x = tf.constant(np.linspace(-2, 2, 9, dtype=np.float32))
    outputs = []
    for name, use in (("CoursePreludeCubeWith", True), ("CoursePreludeCubeWithout", False)):
        if not use:
            monkeypatch.setattr(opbuild, "prelude_header", lambda *args, **kwargs: None)
        library = tf.load_op_library(str(opbuild.build_from_text(name, source.format(name=name),
                                                                 out_dir=tmp_path / name)))
        outputs.append(getattr(library, "course_prelude_cube_" + name[len("CoursePreludeCube"):].lower())(x).numpy())
    assert str(header) in commands[0] and "-include" not in commands[1]
    np.testing.assert_array_equal(outputs[0], outputs[1])
    np.testing.assert_allclose(outputs[0], x.numpy() ** 3 + 1, rtol=1e-6)
