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
    assert sorted(p.name.split("-")[0] for p in (out / "objects").iterdir()) == ["op_kernel.cu.cc"] * 2
