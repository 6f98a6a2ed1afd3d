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
