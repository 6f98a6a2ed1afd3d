"""The one place a judged part's result is decided."""
from __future__ import annotations

from autograder.results.results import TestResult
from autograder.judge.protocol import Verdict


def decide(grade_id: str, points: float, *, pending: str = "", verdict: Verdict | None = None,
           failure: str = "") -> TestResult:
    """A part's result: a limit an earlier cell broke (``pending``) costs the part whatever
    the judge found; then the grader's own failure (``failure``); then the judge's verdict."""
    if pending:
        return TestResult(grade_id, 0.0, points, pending, "visible", "failed")
    if failure or verdict is None:
        return TestResult(grade_id, 0.0, points, failure or "this test did not run", "visible", "error")
    if verdict.status == "passed":
        return TestResult(grade_id, points, points, verdict.message, "visible", "passed")
    return TestResult(grade_id, 0.0, points, verdict.message, "visible", verdict.status)
