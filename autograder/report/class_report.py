"""``python -m autograder report OUT``: where a class fails, read from a graded folder.

``OUT`` is what ``grade`` writes: ``OUT/<student>/<assignment>/results.json``
(Gradescope's shape, :mod:`autograder.results.results`).  From those files alone
:func:`build_report` counts, per assignment and part, the scores, the pass rate and
each status; groups the failure messages (same part, same status, same test
clause where one can be told, same text once numbers are replaced by ``N``); reads
the measured speedups out of the speed checks' messages
(:mod:`autograder.checks.timing` words them, and grade keeps only the text); and
lists the slowest submissions and those a limit stopped.  The CSV text is made
here; :func:`autograder.report.report_page.write_report` writes it beside the page.

Hidden tests: ``results.json`` already holds only messages that quote no hidden
line (:func:`autograder.results.feedback.redact_hidden`); with the source folder
the report redacts again (a folder graded by an older grader or copied from
Gradescope is covered too) and names a failing hidden clause only as "a hidden
test".  ``instructor=True`` shows that clause's line of the source instead.
"""
from __future__ import annotations

import ast
import csv
import io
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from autograder.errors import UsageError
from autograder.results import feedback
from autograder.submission import notebook as nbtools
from autograder.results.results import Results, graded_files
from autograder.submission.assignment import Assignment, HIDDEN_BEGIN, load_assignment

STATUSES = ("passed", "failed", "inconclusive", "manual", "error", "missing", "skipped")
PENDING = {"inconclusive": "regrade (the grader could not decide its speed)", "manual": "manual grading"}
SLOWEST = 10
HIDDEN_END = "### END HIDDEN TESTS"
TIMED_OUT = "ran longer than"  # the sandbox's words for a cell or notebook time limit
MIN_FRAGMENT = 4  # shorter string literals ("x", "ok") would tie clauses together


@dataclass
class Graded:
    """One ``results.json``: a student's graded submission of one assignment."""

    student: str
    assignment: str
    results: Results


def read_graded(out: Path | str) -> tuple[list[Graded], list[Path]]:
    """Every readable ``OUT/<student>/<assignment>/results.json`` and the unreadable ones.
    A folder with none is a usage error that says what ``OUT`` must be."""
    out = Path(out)
    if not out.is_dir():
        raise UsageError(f"{out}: no such folder; give the folder `grade --out` wrote")
    graded, broken = [], []
    for student, assignment, path, results in graded_files(out):
        if results is None:
            broken.append(path)
        else:
            graded.append(Graded(student, assignment, results))
    if not graded:
        what = f" ({len(broken)} unreadable)" if broken else ""
        raise UsageError(f"{out}: no graded submissions{what}; expected <student>/<assignment>/results.json "
                         "as `python -m autograder grade SUBMISSIONS --out OUT` writes")
    return graded, broken


# --- speedups, from the words of autograder.checks.timing ---------------------------------

_TIME = r"[\d.]+ (?:s|ms|µs)"
# measure_relative_speedup: "LABEL: T vs T BASE, 2.1x faster; REF is 3.0x faster (T), so 1.7x was needed"
_RELATIVE = re.compile(rf"(?P<label>[^;\[]+?): {_TIME} vs {_TIME} [^;]*?, (?P<speedup>[\d.]+)x faster; "
                       rf"(?P<ref_label>.+?) is (?P<reference>[\d.]+)x faster \({_TIME}\), "
                       r"so (?P<needed>[\d.]+)x was needed")
# measure_speedup: "LABEL: T vs T BASE (2.1x, needed 1.5x on profile P)" or "(..., not graded on profile P"
_FIXED = re.compile(rf"(?P<label>[^;\[]+?): {_TIME} vs {_TIME} [^;(]*?\((?P<speedup>[\d.]+)x, "
                    r"(?:needed (?P<needed>[\d.]+)x|not graded) on profile")


@dataclass
class Speed:
    """One measured speedup of a speed part (``reference`` None: a fixed threshold)."""

    student: str
    assignment: str
    part: str
    label: str
    speedup: float
    needed: float | None
    reference: float | None
    status: str


def parse_speeds(text: str) -> list[dict]:
    """The speedups a speed check's message states, in order: ``label``, ``speedup``,
    ``needed`` and ``reference`` (the reference solution's speedup, relative checks only)."""
    found = []
    for match in _RELATIVE.finditer(text):
        found.append({"label": match["label"].strip().removeprefix("inconclusive: "),
                      "speedup": float(match["speedup"]), "needed": float(match["needed"]),
                      "reference": float(match["reference"]), "at": match.start()})
    taken = [(m["at"]) for m in found]
    for match in _FIXED.finditer(text):
        if match.start() not in taken:
            found.append({"label": match["label"].strip().removeprefix("inconclusive: "),
                          "speedup": float(match["speedup"]),
                          "needed": float(match["needed"]) if match["needed"] else None,
                          "reference": None, "at": match.start()})
    found.sort(key=lambda s: s.pop("at"))
    return found


# --- messages and clauses ------------------------------------------------------------------

_NUMBER = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_RUN_OF_N = re.compile(r"N(?:, N){2,}")
_HEX = re.compile(r"0x[0-9a-fA-F]+")
_DURATION = re.compile(r"\bN (?:s|ms|µs|ns)\b")  # timing.format_seconds picks the unit by size


def normalize(message: str) -> str:
    """``message`` with every number ``N`` (a run of them ``N, N, …``), every duration
    ``T`` (whatever its unit), addresses ``0x…`` and whitespace collapsed: what two
    learners' failures share."""
    text = " ".join(message.split())
    text = _DURATION.sub("T", _NUMBER.sub("N", _HEX.sub("0x…", text)))
    return _RUN_OF_N.sub("N, N, …", text)


@dataclass(frozen=True)
class Clause:
    """One statement of a test cell that can fail (an ``assert`` or a check call)."""

    line: int
    text: str
    hidden: bool
    fragments: tuple[str, ...] = ()

    def label(self, instructor: bool) -> str:
        if self.hidden and not instructor:
            return "a hidden test"
        return f"{'hidden ' if self.hidden else ''}test line {self.line}: {self.text}"


def clauses_of(source: str) -> list[Clause]:
    """The statements of a test cell that carry string literals a failure message can
    quote (an assertion's message, a check's ``name=``/``hint=``), each with its line
    and whether it lies inside the hidden tests."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    lines = source.splitlines()
    hidden, inside = set(), False
    for number, line in enumerate(lines, 1):
        if line.strip().startswith(HIDDEN_BEGIN):
            inside = True
        elif line.strip().startswith(HIDDEN_END):
            inside = False
        elif inside:
            hidden.add(number)
    clauses = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert) or (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)):
            fragments = tuple(sorted({n.value.strip() for n in ast.walk(node) if isinstance(n, ast.Constant)
                                      and isinstance(n.value, str) and len(n.value.strip()) >= MIN_FRAGMENT}))
            if fragments:
                clauses.append(Clause(node.lineno, lines[node.lineno - 1].strip(), node.lineno in hidden, fragments))
    return sorted(clauses, key=lambda c: c.line)


def identify_clause(message: str, clauses: list[Clause]) -> Clause | None:
    """The clause whose literals the message quotes most (by characters), or None when
    none is quoted or two clauses tie."""
    scored = sorted(((sum(len(f) for f in c.fragments if f in message), c) for c in clauses),
                    key=lambda sc: -sc[0])
    if not scored or scored[0][0] == 0 or (len(scored) > 1 and scored[1][0] == scored[0][0]):
        return None
    return scored[0][1]


# --- the report --------------------------------------------------------------------------


@dataclass
class FailureGroup:
    """Failures of one part that share status, clause and normalized message."""

    assignment: str
    part: str
    status: str
    clause: str
    message: str
    example: str
    students: list[str] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.students)


@dataclass
class PartStats:
    assignment: str
    part: str
    max_score: float
    scores: list[float] = field(default_factory=list)
    statuses: dict[str, int] = field(default_factory=dict)
    hidden: bool = False

    @property
    def count(self) -> int:
        return len(self.scores)

    @property
    def pass_rate(self) -> float:
        return self.statuses.get("passed", 0) / self.count if self.count else 0.0


@dataclass
class Stopped:
    """A submission a limit or a crash stopped before its end."""

    student: str
    assignment: str
    reason: str
    timed_out: bool
    execution_time_s: float | None


@dataclass
class AssignmentReport:
    name: str
    totals: list[float] = field(default_factory=list)
    max_score: float = 0.0
    parts: dict[str, PartStats] = field(default_factory=dict)
    failures: list[FailureGroup] = field(default_factory=list)
    speeds: list[Speed] = field(default_factory=list)
    slowest: list[tuple[str, float]] = field(default_factory=list)
    stopped: list[Stopped] = field(default_factory=list)
    review: list[dict] = field(default_factory=list)  # flagged for review: {"student", "part", "cell", "line", "reason"}
    # parts whose grade is not final: (student, part, status) with status inconclusive (a regrade
    # decides it: `grade --retry-inconclusive`) or manual (nbgrader's formgrader grades it)
    pending: list[tuple[str, str, str]] = field(default_factory=list)


@dataclass
class ClassReport:
    out: Path
    assignments: dict[str, AssignmentReport]
    unreadable: list[Path]
    instructor: bool = False
    source: Path | None = None
    similarity: list = field(default_factory=list)  # similarity.Pair, when asked for
    similarity_threshold: float | None = None


def _load_sources(source_root: Path | None, names: set[str]) -> dict[str, tuple[Assignment, dict]]:
    """Each assignment's source (hidden lines) and its test cells' clauses by part."""
    found = {}
    for name in sorted(names):
        path = source_root / name / f"{name}.ipynb" if source_root else None
        if path is None or not path.is_file():
            continue
        assignment = load_assignment(path, data_files=[])
        clauses = {}
        for cell in nbtools.load(path).cells:
            if nbtools.is_test_cell(cell):
                clauses.setdefault(nbtools.nbgrader_meta(cell).get("grade_id"), clauses_of(cell.source))
        found[name] = (assignment, clauses)
    return found


def build_report(out: Path | str, *, source: Path | str | None = None, instructor: bool = False) -> ClassReport:
    """Read ``out`` and count everything the page and CSV files show.  ``source``: the
    nbgrader source folder (``<assignment>/<assignment>.ipynb``) for clauses and a second
    redaction; ``instructor`` needs it and names hidden clauses by their line."""
    graded, broken = read_graded(out)
    source_root = Path(source).resolve() if source is not None else None
    if instructor and source_root is None:
        raise UsageError("--instructor shows the hidden tests' lines, so it needs --source (the nbgrader source folder)")
    if source_root is not None and not source_root.is_dir():
        raise UsageError(f"{source_root}: no such source folder; give --source (the nbgrader source folder)")
    sources = _load_sources(source_root, {g.assignment for g in graded})
    reports: dict[str, AssignmentReport] = {}
    for item in sorted(graded, key=lambda g: (g.assignment, g.student)):
        spec, clauses = sources.get(item.assignment, (None, {}))
        results = item.results
        if spec is not None and not instructor:
            results = feedback.redact_hidden(results, spec.hidden_lines)
        report = reports.setdefault(item.assignment, AssignmentReport(item.assignment))
        _add(report, item.student, results, clauses, instructor, spec.hidden_parts if spec else frozenset())
    for report in reports.values():
        report.failures.sort(key=lambda f: (list(report.parts).index(f.part), -f.count, f.message))
        report.slowest = sorted(report.slowest, key=lambda s: -s[1])[:SLOWEST]
        report.stopped.sort(key=lambda s: (not s.timed_out, s.student))
        order = list(report.parts)
        report.review.sort(key=lambda f: (order.index(f["part"]) if f["part"] in order else len(order),
                                          f["student"], f["cell"], f["line"]))
    return ClassReport(Path(out), reports, broken, instructor, source_root)


def _add(report: AssignmentReport, student: str, results: Results, clauses: dict, instructor: bool,
         hidden_parts: frozenset[str]) -> None:
    """Count one submission into its assignment's report."""
    report.totals.append(results.score)
    report.max_score = max(report.max_score, results.max_score)
    groups = {(f.part, f.status, f.clause, f.message): f for f in report.failures}
    for test in results.tests:
        part = report.parts.setdefault(test.name, PartStats(report.name, test.name, test.max_score,
                                                            hidden=test.name in hidden_parts))
        part.max_score = max(part.max_score, test.max_score)
        part.scores.append(test.score)
        part.statuses[test.status] = part.statuses.get(test.status, 0) + 1
        if test.status in PENDING:
            report.pending.append((student, test.name, test.status))
        for speed in parse_speeds(test.output):
            report.speeds.append(Speed(student, report.name, test.name, speed["label"], speed["speedup"],
                                       speed["needed"], speed["reference"], test.status))
        if test.status == "passed":
            continue
        clause = identify_clause(test.output, clauses.get(test.name, []))
        key = (test.name, test.status, clause.label(instructor) if clause else "", normalize(test.output))
        if key not in groups:
            groups[key] = FailureGroup(report.name, *key, example=test.output)
            report.failures.append(groups[key])
        groups[key].students.append(student)
    report.review += [{"student": student, **finding} for finding in results.review or []]
    if results.execution_time_s is not None:
        report.slowest.append((student, results.execution_time_s))
    reasons = [results.output] if results.output else []
    reasons += [t.output for t in results.tests if TIMED_OUT in t.output and t.output not in reasons]
    if reasons:
        report.stopped.append(Stopped(student, report.name, reasons[0], any(TIMED_OUT in r for r in reasons),
                                      results.execution_time_s))


# --- CSV files ------------------------------------------------------------------------------


def _rows_to_csv(header: list[str], rows: list[list]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue()


def _num(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


def parts_csv(report: ClassReport) -> str:
    """One row per assignment and part: counts by status, pass rate, mean and median score."""
    rows = []
    for assignment in report.assignments.values():
        for part in assignment.parts.values():
            rows.append([assignment.name, part.part, _num(part.max_score), part.count,
                         *[part.statuses.get(s, 0) for s in STATUSES], f"{part.pass_rate:.4f}",
                         f"{statistics.fmean(part.scores):.4g}", _num(statistics.median(part.scores)),
                         "yes" if part.hidden else "no"])
    return _rows_to_csv(["assignment", "part", "max_score", "submissions", *STATUSES, "pass_rate",
                         "mean_score", "median_score", "has_hidden_tests"], rows)


def failures_csv(report: ClassReport) -> str:
    """One row per failure group, most frequent first within each part."""
    rows = [[f.assignment, f.part, f.status, f.count, f.clause, f.message, " ".join(f.example.split())[:500]]
            for a in report.assignments.values() for f in a.failures]
    return _rows_to_csv(["assignment", "part", "status", "count", "clause", "message", "example"], rows)


def speeds_csv(report: ClassReport) -> str:
    """One row per measured speedup (student, part, the speedup, what was needed, the reference's)."""
    rows = [[s.assignment, s.part, s.student, s.label, _num(s.speedup), _num(s.needed), _num(s.reference), s.status]
            for a in report.assignments.values() for s in a.speeds]
    return _rows_to_csv(["assignment", "part", "student", "label", "speedup", "needed", "reference_speedup",
                         "status"], rows)


def review_csv(report: ClassReport) -> str:
    """One row per finding of the integrity review (flagged for review), by assignment and part."""
    rows = [[name, f["part"], f["student"], f["cell"], f["line"], f["reason"]]
            for name, a in report.assignments.items() for f in a.review]
    return _rows_to_csv(["assignment", "part", "student", "cell", "line", "reason"], rows)
