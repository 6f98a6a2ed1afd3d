"""The one grading pipeline: load → restore → execute in a sandbox → score → redact.

``check``, ``grade`` and the Gradescope runner all call :func:`grade_notebook`;
they differ only in where the result goes (the terminal, ``<out>/<student>/
<assignment>/``, Gradescope's ``results.json``).  Each step is a small function:

- :func:`autograder.submission.assignment.load_assignment` reads the instructor's source
  notebook (tests, points, hidden lines, data files);
- :func:`autograder.submission.folders.find_notebook` picks the submitted notebook in a folder;
- :func:`grade_notebook` restores locked and test cells from the source, runs the
  notebook in :func:`autograder.sandbox.host.run_submission` (which scores each
  test cell by the kernel's reply and its sentinel) and redacts hidden test lines;
- :func:`autograder.results.results.zero_results` is the one way a whole
  submission scores 0 with a reason.
"""
from __future__ import annotations

from pathlib import Path

from autograder.results import feedback
from autograder.report import review
from autograder.sandbox import host as sandbox
from autograder.sandbox import startup
from autograder.submission.assignment import Assignment
from autograder.submission import notebook as nbtools
from autograder.results.results import NEEDS_MANUAL, Results, TestResult, zero_results


def grade_notebook(notebook: Path | None, assignment: Assignment, *, limits: sandbox.Limits | None = None,
                   hidden_dirs: list[Path] | None = None, isolate: bool = True, problem: str = "",
                   only_parts: list[str] | None = None) -> Results:
    """Grade one submitted notebook against ``assignment``; never raises for the submission.

    ``notebook`` None scores every part 0 with ``problem`` (nothing was submitted);
    ``only_parts`` runs and reports just those parts' tests (``check --part``); ``limits``
    default to the assignment's own (the course's ``grading.toml``)."""
    if notebook is None:
        return zero_results(assignment.parts, problem or "no notebook was submitted", status="missing")
    try:
        with startup.counting() as started:
            results = sandbox.run_submission(notebook, assignment.source, limits=limits or assignment.limits,
                                             data_files=assignment.data_files, hidden_dirs=hidden_dirs,
                                             isolate=isolate, only_parts=only_parts, source_nb=assignment.notebook)
            _apart(results, started())
    except Exception as exc:  # the grader's own failure must not stop a batch or lose a results file
        message = (f"the grader failed on this submission ({exc.__class__.__name__}: {exc}); "
                   "grade it again, and tell the course maintainers if it keeps failing")
        return zero_results(assignment.parts, message, notebook=notebook.name)
    results = feedback.clean_messages(feedback.redact_hidden(results, assignment.hidden_lines))
    results = with_manual_parts(results, assignment, only_parts)
    results.review = _review(notebook, assignment, results)
    return results


def _apart(results: Results, startup_s: float) -> None:
    """Report the grader's start-up (:mod:`autograder.sandbox.startup`) apart from the submission's time."""
    results.startup_s = round(startup_s, 3)
    if results.execution_time_s is not None:
        results.execution_time_s = round(max(0.0, results.execution_time_s - startup_s), 3)


def with_manual_parts(results: Results, assignment: Assignment, only_parts: list[str] | None = None) -> Results:
    """``results`` with a ``manual`` result (0 of its points, "needs manual grading") for each
    manually graded part, every part in the source's order: its points count in ``max_score``
    and the score is not final until an instructor grades it (nbgrader's formgrader)."""
    have = results.by_name()
    tests = []
    for part in assignment.parts:
        if part.grade_id in have:
            tests.append(have.pop(part.grade_id))
        elif part.grade_id in assignment.manual and (only_parts is None or part.grade_id in only_parts):
            tests.append(TestResult(part.grade_id, 0.0, part.points, NEEDS_MANUAL.format(points=part.points),
                                    "visible", "manual"))
    results.tests = tests + list(have.values())
    return results


def _review(notebook: Path, assignment: Assignment, results) -> list[dict]:
    """The integrity review of a graded submission (:mod:`autograder.report.review`); a notebook
    that cannot be read again is reviewed from its results alone."""
    try:
        submission = nbtools.load(notebook)
    except Exception:  # noqa: BLE001  (unreadable: the grade already says so)
        return review.review(None, assignment.notebook, results)
    return review.review(submission, assignment.notebook, results)


