"""A regrade of the same submission gives the same grade, part by part.

The hidden tests draw their inputs at random, seeded per submission by the judge
(``autograder/judge/process.py``); here a submission is graded twice through the grade path
(``load_assignment`` and ``pipeline.grade_notebook``, as ``python -m autograder grade``
does) and its verdicts, which quote what was drawn, are compared."""
from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from autograder.submission import notebook as nbtools
from autograder.frontends import pipeline
from tests.conftest import SOLUTIONS, notebook_for
from autograder.submission.assignment import load_assignment

pytestmark = pytest.mark.slow

# Exercise 2's verdicts quote its draws: the model's sizes (test-train-step), the warm-up and repeat
# counts (test-time-per-call) and the memory limits (test-configure-memory).
ASSIGNMENT = "02_gpu_placement"
# What a timing part measured (seconds on the clock) differs at every run; what it drew does not.
SECONDS = re.compile(r"\d+\.\d+ s\b")


def _verdicts(results) -> dict[str, tuple[float, str]]:
    return {t.name: (t.score, SECONDS.sub("<seconds> s", t.output)) for t in results.tests}


def _submit(folder: Path, notebook) -> Path:
    path = folder / f"{ASSIGNMENT}.ipynb"
    folder.mkdir(parents=True)
    nbformat.write(notebook, path)
    return path


def test_a_regrade_of_a_submission_gives_the_same_verdicts(tmp_path):
    source = notebook_for(SOLUTIONS, ASSIGNMENT)
    assignment = load_assignment(source)
    submission = _submit(tmp_path / "alice", nbtools.load(source))
    hidden = [SOLUTIONS, tmp_path]
    first, second = (_verdicts(pipeline.grade_notebook(submission, assignment, hidden_dirs=hidden))
                     for _ in range(2))
    assert first == second, f"a regrade changed the verdicts:\n{first}\n{second}"
    assert all(score > 0 for score, _ in first.values()), f"the reference solution lost points: {first}"
    limits = re.search(r"limits of (\[\d+, \d+\]) MB", first["test-configure-memory"][1])
    assert limits, f"the verdict no longer quotes the drawn limits: {first['test-configure-memory'][1]}"

    # Another submission (one answer cell differs by a comment) draws other inputs: the verdicts
    # compared above quote draws, not constants.
    other = nbtools.load(source)
    cell = next(c for c in other.cells if nbtools.nbgrader_meta(c).get("grade_id") == "answer-configure-memory")
    cell.source += "\n# checked against the docs"
    resubmitted = _submit(tmp_path / "bob", other)
    third = _verdicts(pipeline.grade_notebook(resubmitted, assignment, hidden_dirs=hidden,
                                              only_parts=["test-configure-memory"]))
    assert third["test-configure-memory"][0] > 0, third
    assert limits.group(1) not in third["test-configure-memory"][1], (
        f"two submissions drew the same limits {limits.group(1)}: draws are not seeded per submission")
