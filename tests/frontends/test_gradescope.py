"""The Gradescope autograder zip, and results.json written whatever happens."""
from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import zipfile

import pytest

from autograder.cli import main as cli_main
from autograder.frontends import gradescope
from autograder.errors import UsageError
from tests.conftest import ROOT
from tests.files.hostile.catalogue import TINY_SOURCE, answers


def test_zip_has_gradescope_layout(tmp_path):
    path = gradescope.build_zip("tiny", tmp_path / "autograder.zip", source_root=TINY_SOURCE)
    with zipfile.ZipFile(path) as zf:
        names = set(zf.namelist())
        assert {"setup.sh", "run_autograder", "package/pyproject.toml", "package/autograder/sandbox/host.py",
                "source/tiny/tiny.ipynb", "source/tiny/data.txt"} <= names
        for script in ("setup.sh", "run_autograder"):
            mode = zf.getinfo(script).external_attr >> 16
            assert mode & stat.S_IXUSR, f"{script} is not executable"
        run = zf.read("run_autograder").decode()
        assert "-m autograder gradescope-run tiny" in run and "results.json" in run


def test_unknown_assignment_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="no source notebook"):
        gradescope.build_zip("nope", tmp_path / "a.zip", source_root=TINY_SOURCE)


def test_cli_builds_the_zip(tmp_path):
    out = tmp_path / "ag.zip"
    proc = subprocess.run([sys.executable, "-m", "autograder", "gradescope", "tiny", "--out", str(out),
                           "--source", str(TINY_SOURCE)], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert out.is_file() and "upload it as the Gradescope autograder" in proc.stdout


def test_no_notebook_still_writes_results(tmp_path):
    (tmp_path / "submission").mkdir()
    results = tmp_path / "results" / "results.json"
    assert cli_main(["gradescope-run", "tiny", "--submission", str(tmp_path / "submission"),
                            "--results", str(results), "--source", str(TINY_SOURCE)]) == 0
    data = json.loads(results.read_text())
    assert data["score"] == 0 and data["max_score"] == 5
    assert all("upload tiny.ipynb" in t["output"] for t in data["tests"])


def test_a_grader_crash_still_writes_results(tmp_path, monkeypatch):
    (tmp_path / "submission").mkdir()
    (tmp_path / "submission" / "tiny.ipynb").write_bytes(answers()(None))

    def crash(*a, **k):
        raise RuntimeError("boom")

    monkeypatch.setattr(gradescope.pipeline.sandbox, "run_submission", crash)
    results = tmp_path / "results.json"
    cli_main(["gradescope-run", "tiny", "--submission", str(tmp_path / "submission"),
                     "--results", str(results), "--source", str(TINY_SOURCE)])
    data = json.loads(results.read_text())
    assert data["score"] == 0 and "the grader failed on this submission (RuntimeError: boom)" in data["tests"][0]["output"]


def test_run_autograder_script_writes_results_even_without_python(tmp_path):
    path = gradescope.build_zip("tiny", tmp_path / "autograder.zip", source_root=TINY_SOURCE)
    base = tmp_path / "autograder"
    with zipfile.ZipFile(path) as zf:
        zf.extractall(base / "source")
    (base / "submission").mkdir()
    proc = subprocess.run(["bash", str(base / "source" / "run_autograder")], capture_output=True, text=True,
                          env={**os.environ, "AUTOGRADER_ROOT": str(base)}, timeout=60)
    assert proc.returncode == 0
    data = json.loads((base / "results" / "results.json").read_text())
    assert data["score"] == 0 and "autograder itself failed" in data["output"]


def test_run_autograder_grades_a_submission(tmp_path):
    path = gradescope.build_zip("tiny", tmp_path / "autograder.zip", source_root=TINY_SOURCE)
    base = tmp_path / "autograder"
    with zipfile.ZipFile(path) as zf:
        zf.extractall(base / "source")
    (base / "venv" / "bin").mkdir(parents=True)
    python = base / "venv" / "bin" / "python"  # stands in for the venv setup.sh builds
    python.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    python.chmod(0o755)
    (base / "submission").mkdir()
    (base / "submission" / "tiny.ipynb").write_bytes(answers(double="def double(x):\n    return x\n")(None))
    proc = subprocess.run(["bash", str(base / "source" / "run_autograder")], capture_output=True, text=True,
                          env={**os.environ, "AUTOGRADER_ROOT": str(base)}, timeout=300)
    assert proc.returncode == 0, proc.stderr
    data = json.loads((base / "results" / "results.json").read_text())
    scores = {t["name"]: (t["score"], t["status"], t["visibility"]) for t in data["tests"]}
    # both parts hold hidden tests: their visible tests' verdict shows at once, their points once published
    assert scores == {"test-double (visible tests)": (0.0, "failed", "visible"),
                      "test-double (all tests)": (0.0, "failed", "after_published"),
                      "test-word (visible tests)": (0.0, "passed", "visible"),
                      "test-word (all tests)": (2.0, "passed", "after_published")}, data
    visible = next(t for t in data["tests"] if t["name"] == "test-double (visible tests)")
    assert "double(2) returned 2, expected 4" in visible["output"]
    assert data["output"].startswith("Score: 2 / 5\n") and "(visible tests) lines show now" in data["output"]
    assert "hidden-marker" not in json.dumps(data)
    shutil.rmtree(base)


def test_hidden_visibility_applies_to_parts_with_hidden_tests_only(tmp_path):
    import nbformat

    source = tmp_path / "source" / "tiny"
    shutil.copytree(TINY_SOURCE / "tiny", source)
    nb = nbformat.read(source / "tiny.ipynb", as_version=4)
    for cell in nb.cells:  # test-double keeps only its visible tests
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "test-double":
            lines, inside = [], False
            for line in cell.source.splitlines():
                if line.strip().startswith("### BEGIN HIDDEN TESTS"):
                    inside = True
                elif line.strip().startswith("### END HIDDEN TESTS"):
                    inside = False
                elif not inside:
                    lines.append(line)
            cell.source = "\n".join(lines)
    nbformat.write(nb, source / "tiny.ipynb")
    (tmp_path / "submission").mkdir()
    (tmp_path / "submission" / "tiny.ipynb").write_bytes(answers()(None))
    results = tmp_path / "results.json"
    assert cli_main(["gradescope-run", "tiny", "--submission", str(tmp_path / "submission"),
                     "--results", str(results), "--source", str(tmp_path / "source"),
                     "--hidden-visibility", "after_published"]) == 0
    visibility = {t["name"]: t["visibility"] for t in json.loads(results.read_text())["tests"]}
    assert visibility == {"test-double": "visible", "test-word (visible tests)": "visible",
                          "test-word (all tests)": "after_published"}


def test_unknown_hidden_visibility_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="--hidden-visibility must be one of"):
        gradescope.build_zip("tiny", tmp_path / "a.zip", source_root=TINY_SOURCE, hidden_visibility="later")
    proc = subprocess.run([sys.executable, "-m", "autograder", "gradescope", "tiny", "--source", str(TINY_SOURCE),
                           "--hidden-visibility", "later"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 2 and "invalid choice: 'later'" in proc.stderr


def test_a_pending_or_manual_part_says_so_in_the_top_level_output():
    from autograder.results.results import TestResult

    undecided = TestResult("test-speed", 0.0, 4.0, "inconclusive: ...", status="inconclusive")
    manual = TestResult("explain", 0.0, 2.0, "needs manual grading", status="manual")
    tests = gradescope.split_parts([TestResult("test-word", 2.0, 2.0), undecided, manual],
                                   frozenset({"test-speed"}), {}, "after_published")
    assert [t.name for t in tests] == ["test-word", "test-speed (visible tests)", "test-speed (all tests)", "explain"]
    assert tests[1].status == "inconclusive" and tests[1].max_score == 0 and tests[1].visibility == "visible"
    text = gradescope.summary(gradescope.Results(tests=tests))
    assert text.splitlines()[0] == "Score: 2 / 8 (not final)"
    assert "Needs a regrade: the grader could not decide test-speed" in text
    assert "Needs manual grading: explain" in text
