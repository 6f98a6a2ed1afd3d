"""The sandbox: what reaches the worker, the clean environment, one real run."""
from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from autograder.checks import opbuild
from autograder.sandbox import host as sandbox
from tests.files.hostile.catalogue import TINY, TINY_SOURCE, answers
from autograder.submission.restore import prepare

DATA = [TINY.parent / "data.txt"]


def _write(tmp_path: Path, data: bytes, name: str = "tiny.ipynb") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_clean_env_keeps_no_grader_secrets(tmp_path, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "hunter2")
    monkeypatch.setenv("AUTOGRADER_PROFILE", "cpu")
    env = sandbox.clean_env(tmp_path)
    assert "AWS_SECRET_ACCESS_KEY" not in env and env["AUTOGRADER_PROFILE"] == "cpu"
    assert env["HOME"] == str(tmp_path)
    # Its folders are its own, but for where exercise 7's precompiled prelude is (bound read-only, below).
    assert env[opbuild.PCH_ENV] == str(opbuild.prelude_root())
    assert all(v.startswith(str(tmp_path)) for k, v in env.items()
               if k.endswith(("_DIR", "_PATH")) and k != opbuild.PCH_ENV)


def test_cgroups_are_created_and_removed_when_available():
    groups = sandbox._Cgroups(sandbox.Limits(memory_mb=256, max_processes=50))
    if not groups.paths:
        pytest.skip("this machine does not let the grader create cgroups (the psutil watchdog is used)")
    try:
        assert groups.procs() == []
        assert (groups.pids / "pids.max").read_text().strip() == "50"
    finally:
        groups.remove()
    assert not any(p.exists() for p in groups.paths)


@pytest.mark.parametrize("isolate", [True, False], ids=["isolated", "fallback"])
def test_a_correct_submission_scores_full_marks_and_leaves_nothing(tmp_path, isolate, monkeypatch):
    parent = tmp_path / "sandboxes"
    parent.mkdir()
    monkeypatch.setattr(sandbox, "_sandbox_parent", lambda: parent)
    submission = _write(tmp_path, answers()(None))
    results = sandbox.run_submission(submission, TINY, data_files=DATA, hidden_dirs=[TINY_SOURCE],
                                     isolate=isolate, limits=sandbox.Limits(cell_timeout_s=60))
    assert {t.name: t.score for t in results.tests} == {"test-double": 3.0, "test-word": 2.0}, results.to_json()
    assert results.output == ""
    # Nothing of the submission is left; the grader's own warm zygote (kept for the next
    # submission) may have made its folder here, named with this process's pid.
    assert [p.name for p in parent.iterdir() if not p.name.startswith(sandbox.zygote_prefix())] == []
    if isolate and "namespaces" not in results.sandbox:
        assert results.sandbox["network"].startswith("namespace")
        assert results.sandbox["hidden"] == ["everything not on the allowlist"]
    elif not isolate:
        assert results.sandbox["network"] == "audit hook"


def test_a_notebook_out_of_time_is_stopped_and_scored(tmp_path):
    submission = _write(tmp_path, answers(word="import time\nwhile True:\n    time.sleep(0.1)\n")(None))
    results = sandbox.run_submission(submission, TINY, data_files=DATA,
                                     limits=sandbox.Limits(cell_timeout_s=60, notebook_timeout_s=8))
    assert {t.name: t.score for t in results.tests} == {"test-double": 3.0, "test-word": 0.0}
    assert "longer than 8 s in total" in results.by_name()["test-word"].output


def test_without_namespaces_or_cgroups_the_watchdog_stops_a_memory_bomb(tmp_path):
    bomb = "hog = []\nwhile True:\n    hog.append(bytearray(32 * 2**20))\n"
    submission = _write(tmp_path, answers(double=bomb)(None))
    results = sandbox.run_submission(submission, TINY, data_files=DATA, isolate=False,
                                     limits=sandbox.Limits(cell_timeout_s=60, memory_mb=400))
    assert results.sandbox["cgroups"].startswith("none")
    assert results.score == 0
    assert "more than 400 MB of memory" in results.by_name()["test-double"].output, results.to_json()


def _cell(kind: str, source: str, **meta) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["nbgrader"] = {"schema_version": 3, "grade": False, "locked": kind != "answer",
                                 "solution": kind == "answer", "task": False, **meta}
    return cell


def test_a_sandbox_that_builds_ops_reads_the_precompiled_prelude_and_no_other_does(tmp_path):
    """Exercise 7's sandboxes get the prelude the grader built (read-only): its compiles skip
    TensorFlow's headers (~9 s -> ~2.5 s a build).  An assignment that builds no ops gets no bind."""
    found = ("import os\nfrom autograder.checks import opbuild\nheader = opbuild.prelude_header()\n"
             "assert header is not None, 'no prelude in the sandbox'\n"
             "try:\n    open(header.with_name('planted'), 'w')\nexcept OSError:\n    pass\n"
             "else:\n    raise AssertionError('the prelude folder is writable')\n")
    nb = nbformat.v4.new_notebook()
    nb.cells = [_cell("locked", "from autograder.checks import opbuild  # builds ops", grade_id="setup"),
                _cell("answer", "answer = 1", grade_id="answer-x"),
                _cell("test", found, grade_id="test-x", grade=True, points=1)]
    source = tmp_path / "ops.ipynb"
    nbformat.write(nb, source)
    prepared = prepare(source, source)
    folder = sandbox.op_prelude(prepared)  # builds it in this user's cache when missing, as grading does
    assert folder is not None and (folder / "prelude.h.gch").is_file()
    assert str(folder) in sandbox._job(tmp_path, prepared, sandbox.Limits(), [], True, None, folder)["allow_paths"]
    results = sandbox.run_submission(source, source, limits=sandbox.Limits(cell_timeout_s=120))
    assert [(t.name, t.score) for t in results.tests] == [("test-x", 1.0)], results.to_json()

    nb.cells[0].source = "import os  # builds nothing"
    nbformat.write(nb, source)
    assert sandbox.op_prelude(prepare(source, source)) is None
    results = sandbox.run_submission(source, source, limits=sandbox.Limits(cell_timeout_s=120))
    assert [(t.name, t.score) for t in results.tests] == [("test-x", 0.0)]
    assert "no prelude in the sandbox" in results.tests[0].output
