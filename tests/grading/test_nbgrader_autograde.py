"""nbgrader's own autograde still grades the course (issue 21, item 7).

There, with no judge, each hidden test's ``__ag_judge`` runs inside the kernel through an
in-process learner (``checks.probe.judge_here``): the reference solution must take full
marks and a wrong answer must lose its part, graded by nbgrader's commands themselves.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from tests.conftest import SOLUTIONS

# Exercise 6: no timed part, and its cells may take 600 s.
pytestmark = pytest.mark.slow
ASSIGNMENT = "06_autograph"


def _nbgrader(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")}
    return subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=root, env=env, capture_output=True,
                          text=True, timeout=1200)


def _scores(root: Path, student: str) -> dict[str, float]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root}/gradebook.db") as gradebook:
        submission = gradebook.find_submission(ASSIGNMENT, student)
        return {grade.name: grade.auto_score for notebook in submission.notebooks for grade in notebook.grades
                if grade.name.startswith("test-")}


def test_nbgrader_autograde_grades_the_judged_hidden_tests_in_the_kernel(tmp_path):
    root = tmp_path / "course"
    shutil.copytree(SOLUTIONS / ASSIGNMENT, root / "source" / ASSIGNMENT)
    (root / "nbgrader_config.py").write_text(
        "c = get_config()\n"
        f"c.CourseDirectory.root = {str(root)!r}\n"
        f"c.CourseDirectory.db_url = 'sqlite:///{root}/gradebook.db'\n"
        "c.ExecutePreprocessor.timeout = 600\n")
    made = _nbgrader(root, "generate_assignment", ASSIGNMENT, "--force")
    assert made.returncode == 0, made.stdout[-2000:] + made.stderr[-2000:]
    solution = root / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    for student, change in (("right", None), ("wrong", "collatz")):
        folder = root / "submitted" / student / ASSIGNMENT
        folder.mkdir(parents=True)
        nb = nbformat.read(solution, as_version=4)
        if change:  # collatz drops the start value: only the collatz part may lose its points
            for cell in nb.cells:
                if "def collatz" in cell.source and cell.metadata.get("nbgrader", {}).get("solution"):
                    cell.source = cell.source.replace("    return values", "    return values[1:]")
        nbformat.write(nb, folder / f"{ASSIGNMENT}.ipynb")
        graded = _nbgrader(root, "autograde", ASSIGNMENT, "--student", student, "--force")
        assert graded.returncode == 0, graded.stdout[-2000:] + graded.stderr[-2000:]
    right, wrong = _scores(root, "right"), _scores(root, "wrong")
    full = {"test-rnn-graph": 3.0, "test-rnn-gradients": 2.0, "test-collatz": 2.0, "test-standardize": 2.0}
    assert right == full
    assert wrong == {**full, "test-collatz": 0.0}
