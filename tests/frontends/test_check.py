"""`check` says what it ran: visible tests only on a release, every test with --source.

The report's first and last lines and ``--json``'s ``extra_data.tests_run`` carry it; the
CLI tests run the tiny assignment as a learner gets it (hidden tests removed, as nbgrader's
release does) and against the instructor's copy.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.frontends import check
from autograder.results.results import Results, TestResult
from tests.conftest import ROOT
from tests.files.hostile.catalogue import TINY, answers


# Passes the visible test (double(2) == 4) and fails the hidden one (double(21) == 42):
# the case otter-grader #138 reports as "All tests passed".
VISIBLE_ONLY_DOUBLE = "def double(x):\n    return 4 if x == 2 else x\n"


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "autograder", *args], capture_output=True, text=True,
                          cwd=ROOT, env={**os.environ}, timeout=600)


def released(folder: Path, **answer_kwargs) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    notebook = folder / "tiny.ipynb"
    notebook.write_bytes(answers(**answer_kwargs)(None))
    shutil.copy(TINY.parent / "data.txt", folder / "data.txt")
    return notebook


def _checked(hidden: str, *scores, parts_total: int = 2) -> check.Checked:
    tests = [TestResult(name, float(s), float(m), "ok") for name, s, m in scores]
    return check.Checked(Results(tests=tests, notebook="my.ipynb", profile={"name": "cpu"}),
                         Path("solutions/tiny/tiny.ipynb"), hidden, parts_total)


def test_a_release_reports_visible_tests_only_first_and_last():
    checked = _checked(check.NOT_AVAILABLE, ("test-double", 3, 3), ("test-word", 0, 2))
    lines = check.format_results(checked).splitlines()
    assert lines[0] == "visible tests only: hidden tests run when your instructor grades"
    assert lines[1] == "my.ipynb  (profile cpu)"
    assert lines[-1] == "visible tests: 3/5; hidden tests run when your instructor grades"
    assert checked.to_dict()["extra_data"]["tests_run"] == {
        "hidden_tests": "not available", "summary": lines[-1], "source": "solutions/tiny/tiny.ipynb",
        "parts": ["test-double", "test-word"], "parts_total": 2}


def test_the_instructors_copy_reports_every_test():
    checked = _checked(check.INCLUDED, ("test-double", 3, 3), ("test-word", 2, 2))
    lines = check.format_results(checked).splitlines()
    assert lines[0] == "all tests, hidden included (tests from solutions/tiny/tiny.ipynb)"
    assert lines[-1] == "all tests, hidden included: 5/5"
    assert checked.to_dict()["extra_data"]["tests_run"]["hidden_tests"] == "included"


def test_a_source_without_hidden_tests_says_so_and_part_counts_show():
    checked = _checked(check.NONE_IN_SOURCE, ("test-word", 2, 2), parts_total=2)
    assert checked.scope == "all tests in solutions/tiny/tiny.ipynb; it holds no hidden tests"
    assert checked.summary == "all tests (no hidden tests in tiny.ipynb): 2/2 (1 of 2 parts)"


@pytest.mark.slow
def test_cli_on_a_release_runs_visible_tests_and_exit_0_is_not_the_grade(tmp_path):
    notebook = released(tmp_path / "mine", double=VISIBLE_ONLY_DOUBLE)
    proc = run_cli("check", str(notebook))
    assert proc.returncode == 0, "every visible test passed\n" + proc.stdout + proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert lines[0] == "visible tests only: hidden tests run when your instructor grades"
    assert lines[-1] == "visible tests: 5/5; hidden tests run when your instructor grades"

    graded = run_cli("check", str(notebook), "--source", str(TINY))
    assert graded.returncode == 1, "the hidden test fails\n" + graded.stdout + graded.stderr
    lines = graded.stdout.strip().splitlines()
    assert lines[0] == f"all tests, hidden included (tests from {TINY})"
    assert lines[-1] == "all tests, hidden included: 2/5"
    assert "FAIL  test-double  0/3  hidden: double(21) must be 42" in graded.stdout, "the hidden test ran"
    assert "assert double(21) == 42" not in graded.stdout, "its code is not shown"

    as_json = json.loads(run_cli("check", str(notebook), "--json", "--part", "test-word").stdout)
    assert as_json["extra_data"]["tests_run"]["hidden_tests"] == "not available"
    assert as_json["extra_data"]["tests_run"]["summary"] == \
        "visible tests: 2/2 (1 of 2 parts); hidden tests run when your instructor grades"


def test_help_says_what_exit_0_means():
    helped = run_cli("check", "--help")
    assert helped.returncode == 0
    text = " ".join(helped.stdout.split())
    assert "exit status: 0 every test that ran passed (on a released notebook: the visible tests, " \
           "which is not your grade), 1 a part fell short, 2 usage error" in text
    assert "With --source (the instructor's copy) every test runs, hidden included." in text
