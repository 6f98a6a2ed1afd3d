"""A learner's self-check: one notebook through the grading pipeline, reported as text.

``python -m autograder check NOTEBOOK`` (see :mod:`autograder.cli`) calls
:func:`check_notebook` and prints :func:`format_results`.  It runs the same
pipeline as ``grade`` and Gradescope (:mod:`autograder.frontends.pipeline`:
restoration, time-outs, limits, scoring), without the namespace isolation a
learner's own machine does not need.

What it ran depends on where the tests come from.  A released notebook
(``exercises/``) has had its hidden tests removed by nbgrader, so checking it runs
the visible tests only, and a full score there is not the grade: the report says so
in its first and last lines and in ``--json``'s ``extra_data.tests_run``.  With
``--source`` (the instructor's copy, or a source notebook checked as itself) the
hidden tests run too, and the report says that instead.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from autograder.submission import notebook as nbtools
from autograder.frontends import pipeline
from autograder.submission.limits import with_overrides
from autograder.results.results import Results
from autograder.submission.assignment import files_beside, load_assignment, select_parts

MARKS = {"passed": "PASS", "failed": "FAIL", "error": "ERR ", "inconclusive": "????", "skipped": "SKIP", "missing": "MISS",
         "manual": "HAND"}
NO_PARTS = "no graded parts found: is this an exercise notebook from exercises/?"
HIDDEN_LATER = "hidden tests run when your instructor grades"
# extra_data.tests_run.hidden_tests: what happened to the hidden tests.
NOT_AVAILABLE, INCLUDED, NONE_IN_SOURCE = "not available", "included", "none in source"


@dataclass
class Checked:
    """A check's results and what it ran: which tests, from which source, which parts."""

    results: Results
    source: Path  # where the tests came from: --source, else the notebook itself
    hidden_tests: str  # NOT_AVAILABLE, INCLUDED or NONE_IN_SOURCE
    parts_total: int  # graded parts in the assignment (``--part`` may check fewer)

    @property
    def scope(self) -> str:
        """The report's first line: which tests ran."""
        if self.hidden_tests == INCLUDED:
            return f"all tests, hidden included (tests from {self.source})"
        if self.hidden_tests == NONE_IN_SOURCE:
            return f"all tests in {self.source}; it holds no hidden tests"
        return f"visible tests only: {HIDDEN_LATER}"

    @property
    def summary(self) -> str:
        """The report's last line: the score of what ran, and what did not."""
        score = f"{self.results.score:g}/{self.results.max_score:g}"
        checked = len(self.results.tests)
        if self.parts_total and checked < self.parts_total:
            score += f" ({checked} of {self.parts_total} parts)"
        if self.hidden_tests == INCLUDED:
            return f"all tests, hidden included: {score}"
        if self.hidden_tests == NONE_IN_SOURCE:
            return f"all tests (no hidden tests in {self.source.name}): {score}"
        return f"visible tests: {score}; {HIDDEN_LATER}"

    def to_dict(self) -> dict:
        """Gradescope's results.json shape, with what ran in ``extra_data.tests_run``."""
        data = self.results.to_dict()
        data["extra_data"]["tests_run"] = {
            "hidden_tests": self.hidden_tests, "summary": self.summary, "source": str(self.source),
            "parts": [t.name for t in self.results.tests], "parts_total": self.parts_total,
        }
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)


def format_results(checked: Checked) -> str:
    """The human-readable report: what ran, one line per graded part, the score of what ran."""
    results = checked.results
    width = max([len(t.name) for t in results.tests] + [4])
    lines = [checked.scope,
             f"{results.notebook}  (profile {results.profile.get('name') if results.profile else '?'})"]
    for test in results.tests:
        message = " ".join(test.output.split())
        if len(message) > 300:
            message = message[:297] + "..."
        lines.append(
            f"  {MARKS.get(test.status, test.status):4}  {test.name:<{width}}  "
            f"{test.score:g}/{test.max_score:g}  {message}"
        )
    if results.output:
        lines.append(f"  note: {results.output}")
    lines.append(checked.summary)
    return "\n".join(lines)


def check_notebook(path: str | Path, *, source: str | Path | None = None, parts: list[str] | None = None,
                   cell_timeout_s: float | None = None) -> Checked:
    """Grade ``path`` against ``source`` (default: the notebook itself, as released);
    the notebook's sibling files are its data files.  ``parts``: only those parts."""
    path = Path(path)
    nbtools.load(path)  # a missing, non-notebook or folder path is a usage error, said in one line
    source_path = Path(source) if source else path
    assignment = load_assignment(source_path, data_files=files_beside(path))
    only = select_parts(assignment, parts)
    limits = with_overrides(assignment.limits, {"cell_timeout_s": cell_timeout_s})
    results = pipeline.grade_notebook(path, assignment, limits=limits, isolate=False, only_parts=only)
    results.notebook = str(path)
    results.review = None  # the integrity review is the instructor's: a learner's check never shows it
    if not results.tests:
        results.output = (results.output + " " if results.output else "") + NO_PARTS
    if assignment.hidden_parts:  # the instructor's copy: every test of the parts checked ran
        hidden = INCLUDED
    elif source:
        hidden = NONE_IN_SOURCE
    else:
        hidden = NOT_AVAILABLE  # nbgrader's release removed them: only the instructor's copy has them
    return Checked(results, source_path, hidden, len(assignment.parts))


def full_marks(results: Results) -> bool:
    """Every part that ran scored its points (and there was at least one)."""
    return bool(results.tests) and all(t.score >= t.max_score for t in results.tests)
