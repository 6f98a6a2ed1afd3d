"""A learner's self-check: one notebook through the grading pipeline, reported as text.

``python -m autograder check NOTEBOOK`` (see :mod:`autograder.cli`) calls
:func:`check_notebook` and prints :func:`format_results`.  It runs the same
pipeline as ``grade`` and Gradescope (:mod:`autograder.grading.pipeline`:
restoration, time-outs, limits, scoring), without the namespace isolation a
learner's own machine does not need.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from autograder.grading import notebook as nbtools
from autograder.grading import pipeline, sandbox
from autograder.grading.results import Results

MARKS = {"passed": "PASS", "failed": "FAIL", "error": "ERR ", "inconclusive": "????", "skipped": "SKIP", "missing": "MISS"}
NO_PARTS = "no graded parts found: is this an exercise notebook from exercises/?"


def format_results(results: Results) -> str:
    """The human-readable report, one line per graded part."""
    width = max([len(t.name) for t in results.tests] + [4])
    lines = [f"{results.notebook}  (profile {results.profile.get('name') if results.profile else '?'})"]
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
    lines.append(f"Score: {results.score:g}/{results.max_score:g}")
    return "\n".join(lines)


def check_notebook(path: str | Path, *, source: str | Path | None = None, parts: list[str] | None = None,
                   cell_timeout_s: float = sandbox.Limits.cell_timeout_s) -> Results:
    """Grade ``path`` against ``source`` (default: the notebook itself, as released);
    the notebook's sibling files are its data files.  ``parts``: only those parts."""
    path = Path(path)
    nbtools.load(path)  # a missing, non-notebook or folder path is a usage error, said in one line
    assignment = pipeline.load_assignment(Path(source) if source else path, data_files=pipeline.files_beside(path))
    only = pipeline.select_parts(assignment, parts)
    limits = replace(sandbox.Limits(), cell_timeout_s=cell_timeout_s)
    results = pipeline.grade_notebook(path, assignment, limits=limits, isolate=False, only_parts=only)
    results.notebook = str(path)
    if not results.tests:
        results.output = (results.output + " " if results.output else "") + NO_PARTS
    return results


def full_marks(results: Results) -> bool:
    """Every part scored its points (and there was at least one)."""
    return bool(results.tests) and all(t.score >= t.max_score for t in results.tests)
