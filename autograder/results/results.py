"""Results of a graded notebook, in Gradescope's ``results.json`` shape.

One shape serves ``check --json``, Gradescope and the CSV export:
``{"score", "max_score", "tests": [{"name", "score", "max_score", "output",
"visibility"}], ...}``.  Serialisation lives here only (files are written by ``autograder.atomic``).
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path


# A part's status: ``manual`` is an nbgrader manually graded answer (no test; 0 until an instructor
# grades it), ``inconclusive`` a speed part the grader could not decide (pending, not 0).
TEST_STATUSES = ("passed", "failed", "error", "skipped", "missing", "inconclusive", "manual")
NEEDS_MANUAL = ("needs manual grading: an instructor grades this answer (nbgrader's formgrader); "
                "its {points:g} point(s) are not in this score yet")


@dataclass
class TestResult:
    """One graded part (an nbgrader ``grade_id``)."""

    name: str
    score: float
    max_score: float
    output: str = ""
    visibility: str = "visible"
    status: str = "passed"  # one of TEST_STATUSES

    __test__ = False  # not a pytest test class


@dataclass
class Results:
    """A whole notebook's grade."""

    tests: list[TestResult] = field(default_factory=list)
    notebook: str = ""
    profile: dict | None = None
    output: str = ""
    execution_time_s: float | None = None  # the submission's own time, the grader's start-up left out
    startup_s: float | None = None  # the grader's start-up charged to it (worker zygote, judge), reported apart
    sandbox: dict | None = None  # which isolation mechanisms were in force (grade only)
    # the integrity review (grading.review): what an instructor should read; None where no review ran
    review: list[dict] | None = None

    @property
    def score(self) -> float:
        return round(sum(t.score for t in self.tests), 6)

    @property
    def max_score(self) -> float:
        return round(sum(t.max_score for t in self.tests), 6)

    def by_name(self) -> dict[str, TestResult]:
        return {t.name: t for t in self.tests}

    def to_dict(self) -> dict:
        return {
            "score": self.score,
            "max_score": self.max_score,
            "output": self.output,
            "execution_time": self.execution_time_s,
            "tests": [asdict(t) for t in self.tests],
            "extra_data": {"notebook": self.notebook, "profile": self.profile,
                           **({"startup_s": self.startup_s} if self.startup_s is not None else {}),
                           **({"sandbox": self.sandbox} if self.sandbox is not None else {}),
                           **({"review": self.review} if self.review is not None else {})},
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=False)

    @classmethod
    def from_dict(cls, data: dict) -> "Results":
        extra = data.get("extra_data") or {}
        return cls(
            tests=[TestResult(**t) for t in data.get("tests", [])],
            notebook=extra.get("notebook", ""),
            profile=extra.get("profile"),
            output=data.get("output", ""),
            execution_time_s=data.get("execution_time"),
            sandbox=extra.get("sandbox"),
            review=extra.get("review"),
            startup_s=extra.get("startup_s"),
        )


def read_results(path: Path) -> Results | None:
    """The ``Results`` in ``path``, or None when it is missing, half-written or not a
    results file (``grade`` regrades such a submission; readers skip or list it)."""
    try:
        return Results.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


def graded_files(out_dir: Path) -> list[tuple[str, str, Path, Results | None]]:
    """``(student, assignment, path, results or None)`` for every
    ``out_dir/<student>/<assignment>/results.json``, in path order: the one scan of a
    ``grade --out`` folder (the class report and the gradebook exporters read it)."""
    return [(path.parent.parent.name, path.parent.name, path, read_results(path))
            for path in sorted(Path(out_dir).glob("*/*/results.json"))]


SUBMISSION_STATUSES = ("graded", "pending", "manual", "error", "missing", "skipped")


def submission_status(results: Results) -> str:
    """One keyword for a whole submission (``grades.csv``'s ``status``, ``grade``'s summary):
    ``skipped`` not graded (another exercise's notebook, a folder that names no assignment),
    ``missing`` no notebook to grade, ``error`` the notebook did not run to the end (a limit,
    a dead kernel, the grader's own failure: ``output`` says which), ``pending`` a speed part
    left undecided (``inconclusive``: ``grade --retry-inconclusive`` grades it again), ``manual`` a
    manually graded part not graded yet (the score is not final), else ``graded``."""
    statuses = {t.status for t in results.tests}
    if statuses <= {"skipped"}:
        return "skipped"
    if results.output and statuses == {"missing"}:
        return "missing"
    if results.output:
        return "error"
    if "inconclusive" in statuses:
        return "pending"
    if "manual" in statuses:
        return "manual"
    return "graded"


def is_final(results: Results) -> bool:
    """Whether ``results``' score is final: no part waits for a regrade or an instructor."""
    return submission_status(results) not in ("pending", "manual")


def zero_results(parts, message: str, *, status: str = "error", notebook: str = "") -> Results:
    """Every one of ``parts`` (each with ``grade_id`` and ``points``) scored 0 with
    ``message``: the one place a whole submission's zero is built."""
    tests = [TestResult(p.grade_id, 0.0, p.points, message, "visible", status) for p in parts]
    return Results(tests=tests, notebook=notebook, output=message)
