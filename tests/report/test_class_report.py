"""The class report: counts from a graded batch with known outcomes, hidden lines, the CLI.

The batch is built directly as ``results.json`` files (Results dataclasses, as
``grade`` writes them) for the tiny and speed assignments of ``tests/files/hostile``;
the speed messages are made by :mod:`autograder.checks.timing`'s own formatters,
so the report reads the words a real speed check prints.  One slow test grades a
few tiny submissions for real and reports on that folder.
"""
from __future__ import annotations

import csv
import io
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.checks import timing
from autograder.report import class_report, report_page
from autograder.report.class_report import build_report, clauses_of, identify_clause, normalize, parse_speeds
from autograder.results.results import Results, TestResult
from tests.conftest import ROOT
from tests.files.hostile.catalogue import TINY_SOURCE, answers


SPEED_SOURCE = ROOT / "tests" / "files" / "hostile" / "speed" / "source"
HIDDEN_DOUBLE = "assert double(21) == 42"  # the start of a hidden test line of tiny.ipynb
HIDDEN_WORD = "assert isinstance(SECRET_WORD, str)"
TIME_OUT = "cell 5 ran longer than 300 s and was stopped (an infinite loop?); make it finish faster"


def _fixed(ratio: float, verdict: str, low: float, high: float) -> str:
    res = timing.SpeedResult(verdict=verdict, profile="cpu", message="", check="hostile-speed", label="fast_total",
                             baseline_label="slow_total", min_ratio=1.5, baseline_s=3.4e-3,
                             candidate_s=3.4e-3 / ratio, ratio=ratio, ci_low=low, ci_high=high, trials=12)
    return timing._speedup_message(res, 6, 15.0)


def _relative(speedup: float, reference: float, verdict: str) -> str:
    needed = reference ** 0.5
    res = timing.RelativeSpeedResult(
        verdict=verdict, profile="cpu", message="", label="fast_pipeline", baseline_label="the slow pipeline",
        fraction=0.5, floor=1.3, baseline_s=0.02, reference_s=0.02 / reference, candidate_s=0.02 / speedup,
        speedup=speedup, reference_speedup=reference, needed=needed, margin=speedup / needed,
        margin_ci_low=0.8 * speedup / needed, margin_ci_high=1.2 * speedup / needed,
        reference_ci_low=reference * 0.9, reference_ci_high=reference * 1.1, trials=9)
    return timing._relative_message(res, verdict if verdict in ("pass", "fail") else None, 6, "", 20.0)


def _tiny(double: tuple[float, str, str], word: tuple[float, str, str], *, output: str = "",
          seconds: float = 20.0) -> Results:
    return Results(tests=[TestResult("test-double", double[0], 3.0, double[1], status=double[2]),
                          TestResult("test-word", word[0], 2.0, word[1], status=word[2])],
                   notebook="tiny.ipynb", output=output, execution_time_s=seconds)


PASS_DOUBLE = (3.0, "double works", "passed")
PASS_WORD = (2.0, "passed", "passed")
# What graded the tiny assignment looks like: a known count for every row of the report.
TINY_BATCH = {
    "alice": _tiny(PASS_DOUBLE, PASS_WORD, seconds=12.5),
    "bob": _tiny((0.0, "double(2) returned 3, expected 4", "failed"), PASS_WORD, seconds=14.0),
    "carol": _tiny((0.0, "double(2) returned 5, expected 4", "failed"),
                   (0.0, "SECRET_WORD is 'abc': output differs: got 'abc', expected 'HELLO'; use the data file",
                    "failed"), seconds=15.0),
    "dave": _tiny((0.0, "hidden: double(21) must be 42 (zebra-hidden-marker)", "failed"), PASS_WORD, seconds=13.0),
    # A results.json from an older grader that did not redact: the message quotes a hidden line.
    "erin": _tiny(PASS_DOUBLE, (0.0, "AssertionError in: assert isinstance(SECRET_WORD, str), 'hidden: SECRET_WORD "
                                     "must be a str (okapi-hidden-marker)'", "failed"), seconds=11.0),
    "frank": _tiny((0.0, TIME_OUT, "error"), (0.0, TIME_OUT, "error"), output=TIME_OUT, seconds=310.0),
    "gina": _tiny((0.0, "not answered yet: replace `raise NotImplementedError()` with your code", "failed"),
                  (0.0, "not answered yet: replace `raise NotImplementedError()` with your code", "failed"),
                  seconds=9.0),
}
SPEED_BATCH = {
    "alice": (3.0, _fixed(2.8, "pass", 2.5, 3.1), "passed"),
    "bob": (0.0, _fixed(1.1, "fail", 1.0, 1.2), "failed"),
    "carol": (0.0, _fixed(1.6, "inconclusive", 1.2, 2.0), "inconclusive"),
    "dave": (3.0, _relative(2.4, 3.0, "pass"), "passed"),
}


def _write_batch(out: Path) -> Path:
    for student, results in TINY_BATCH.items():
        path = out / student / "tiny" / "results.json"
        path.parent.mkdir(parents=True)
        path.write_text(results.to_json())
    for student, (score, message, status) in SPEED_BATCH.items():
        path = out / student / "speed" / "results.json"
        path.parent.mkdir(parents=True)
        path.write_text(Results(tests=[TestResult("test-fast", score, 3.0, message, status=status)],
                                execution_time_s=30.0).to_json())
    return out


@pytest.fixture
def source(tmp_path) -> Path:
    """One nbgrader source folder holding both assignments."""
    root = tmp_path / "source"
    shutil.copytree(TINY_SOURCE / "tiny", root / "tiny")
    shutil.copytree(SPEED_SOURCE / "speed", root / "speed")
    return root


@pytest.fixture
def graded(tmp_path) -> Path:
    return _write_batch(tmp_path / "graded")


def _csv(path: Path) -> list[dict]:
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))


# --- the pieces ----------------------------------------------------------------------------


def test_the_speed_checks_own_words_are_read_back():
    assert parse_speeds(_fixed(2.8, "pass", 2.5, 3.1)) == [
        {"label": "fast_total", "speedup": 2.8, "needed": 1.5, "reference": None}]
    inconclusive = _fixed(1.6, "inconclusive", 1.2, 2.0)
    assert inconclusive.startswith("inconclusive: ") and parse_speeds(inconclusive)[0]["label"] == "fast_total"
    relative = parse_speeds(_relative(2.4, 3.0, "pass"))
    assert relative == [{"label": "fast_pipeline", "speedup": 2.4, "needed": 1.7, "reference": 3.0}]
    assert parse_speeds("double works") == []


def test_numbers_are_normalized_so_the_same_failure_groups_together():
    assert normalize("double(2) returned 3, expected 4") == normalize("double(2) returned 5,  expected 4")
    assert normalize("collatz(6) returned [6, 3, 10], expected [6, 3, 10, 5]") == \
        "collatz(N) returned [N, N, …], expected [N, N, …]"
    assert normalize("x is float32 on gpu-cc9") == "x is float32 on gpu-cc9"  # names keep their digits
    assert normalize(_fixed(1.1, "fail", 1.0, 1.2)) == normalize(_fixed(1.2, "fail", 1.1, 1.3).replace("ms", "µs"))


def test_a_message_is_traced_to_its_clause_visible_or_hidden():
    cell = (TINY_SOURCE / "tiny" / "tiny.ipynb").read_text()
    import nbformat

    nb = nbformat.reads(cell, as_version=4)
    test_double = next(c.source for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "test-double")
    clauses = clauses_of(test_double)
    visible = identify_clause("double(2) returned 3, expected 4", clauses)
    hidden = identify_clause("hidden: double(21) must be 42 (zebra-hidden-marker)", clauses)
    assert visible.line == 1 and not visible.hidden
    assert hidden.hidden and hidden.label(instructor=False) == "a hidden test"
    assert HIDDEN_DOUBLE in hidden.label(instructor=True)
    assert identify_clause("NameError: name 'double' is not defined", clauses) is None


# --- the report on a batch with known outcomes ------------------------------------------------


def test_counts_in_the_csv_files(graded, source):
    report = build_report(graded, source=source)
    paths = report_page.write_report(report)
    assert [p.name for p in paths] == list(report_page.REPORT_FILES)
    parts = {(r["assignment"], r["part"]): r for r in _csv(graded / "report_parts.csv")}
    double, word, fast = parts["tiny", "test-double"], parts["tiny", "test-word"], parts["speed", "test-fast"]
    assert (double["submissions"], double["passed"], double["failed"], double["error"]) == ("7", "2", "4", "1")
    assert double["pass_rate"] == f"{2 / 7:.4f}" and word["pass_rate"] == f"{3 / 7:.4f}"
    assert (fast["passed"], fast["failed"], fast["inconclusive"]) == ("2", "1", "1")
    assert double["has_hidden_tests"] == "yes" and fast["has_hidden_tests"] == "no"

    failures = _csv(graded / "report_failures.csv")
    counts = {(f["part"], f["status"], f["message"]): int(f["count"]) for f in failures}
    assert counts["test-double", "failed", "double(N) returned N, expected N"] == 2  # bob and carol, one group
    assert counts["test-double", "error", normalize(TIME_OUT)] == 1
    assert counts["test-word", "failed", "not answered yet: replace `raise NotImplementedError()` with your code"] == 1
    assert sum(int(f["count"]) for f in failures if f["assignment"] == "tiny") == 4 + 1 + 4  # every non-pass once
    clauses = {f["message"]: f["clause"] for f in failures}
    assert clauses["double(N) returned N, expected N"].startswith("test line 1: assert double(2) == 4")
    assert clauses["hidden: double(N) must be N (zebra-hidden-marker)"] == "a hidden test"

    speeds = _csv(graded / "report_speedups.csv")
    assert [(s["student"], s["speedup"], s["needed"], s["reference_speedup"]) for s in speeds] == [
        ("alice", "2.8", "1.5", ""), ("bob", "1.1", "1.5", ""), ("carol", "1.6", "1.5", ""),
        ("dave", "2.4", "1.7", "3")]


def test_the_page_shows_rates_groups_speedups_and_time_outs(graded, source):
    report = build_report(graded, source=source)
    page = report_page.render_html(report)
    assert page.count('<img class="plot"') == 2 * 2 + 1  # score and parts per assignment, one speed part
    assert "29%" in page and "43%" in page  # test-double 2/7, test-word 3/7 pass
    assert "<td>test-double</td><td>failed</td><td class=\"num\">2</td>" in page
    assert "Stopped early (1, 1 by a time limit)" in page and TIME_OUT in page
    tiny = report.assignments["tiny"]
    assert [s for s, _ in tiny.slowest][:2] == ["frank", "carol"]
    assert sorted(s.speedup for s in report.assignments["speed"].speeds) == [1.1, 1.6, 2.4, 2.8]


def test_hidden_lines_are_absent_without_instructor(graded, source):
    page = report_page.render_html(build_report(graded, source=source))
    failures = class_report.failures_csv(build_report(graded, source=source))
    for text in (page, failures):
        assert HIDDEN_DOUBLE not in text and HIDDEN_WORD not in text
        assert "a hidden test" in text
    assert "quoted the hidden tests and was removed" in page  # erin's old, unredacted message
    instructor = report_page.render_html(build_report(graded, source=source, instructor=True))
    assert HIDDEN_DOUBLE in instructor and "Instructor view" in instructor


def test_without_a_source_the_stored_messages_are_shown_as_grade_redacted_them(graded):
    report = build_report(graded)
    assert report.source is None and "double(N) returned N, expected N" in class_report.failures_csv(report)
    assert all(not f.clause for a in report.assignments.values() for f in a.failures)


@pytest.mark.parametrize("make, needle", [
    (lambda tmp: tmp / "nowhere", "no such folder"),
    (lambda tmp: tmp, "no graded submissions"),
    (lambda tmp: _broken(tmp), "no graded submissions (1 unreadable)"),
])
def test_a_malformed_folder_is_a_one_line_usage_error(tmp_path, make, needle):
    proc = subprocess.run([sys.executable, "-m", "autograder", "report", str(make(tmp_path))],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == 2, proc.stderr
    assert needle in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def _broken(tmp: Path, student: str = "alice") -> Path:
    path = tmp / student / "tiny" / "results.json"
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    return tmp


def test_instructor_without_a_source_is_a_usage_error(graded):
    from autograder.errors import UsageError

    with pytest.raises(UsageError, match="needs --source"):
        build_report(graded, instructor=True)


def test_the_command_writes_the_page_and_csv_files(graded, source, tmp_path):
    from autograder.cli import main

    dest = tmp_path / "report"
    assert main(["report", str(graded), "--source", str(source), "--out", str(dest)]) == 0
    assert sorted(p.name for p in dest.iterdir()) == sorted(report_page.REPORT_FILES)
    assert main(["report", str(graded), "--similarity"]) == 2  # needs --submissions
    assert main(["report", str(graded), "--out", str(dest), "--export", "canvas"]) == 0
    canvas = (dest / "grades_canvas.csv").read_text().splitlines()
    assert canvas[0].startswith("Student,ID,SIS User ID,SIS Login ID,Section") and len(canvas) == 2 + 7


def test_an_unreadable_results_file_is_counted_out_and_said(graded, source):
    _broken(graded, "zoe")  # a broken results.json beside the batch
    report = build_report(graded, source=source)
    assert len(report.unreadable) == 1 and "1 results.json file(s) could not be read" in report_page.render_html(report)
    assert len(report.assignments["tiny"].totals) == len(TINY_BATCH)


def _speed_submission(folder: Path, answer: str) -> None:
    import nbformat

    nb = nbformat.read(SPEED_SOURCE / "speed" / "speed.ipynb", as_version=4)
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "answer-fast":
            cell.source = answer
    folder.mkdir(parents=True)
    nbformat.write(nb, folder / "speed.ipynb")


@pytest.mark.slow
def test_a_real_graded_batch_is_reported(tmp_path, source):
    """grade three tiny and two speed submissions for real (sandbox, TensorFlow, the speed
    check's own timing), then report on the folder."""
    from tests.files.hostile.catalogue import Context

    from autograder.frontends.grade import grade

    subs, out = tmp_path / "submitted", tmp_path / "graded"
    ctx = Context(subs, out, 0)
    builds = {"alice": answers(), "bob": answers(double="def double(x):\n    return x + 1\n"),
              "carol": answers(double="def double(x):\n    return x + 1\n", word="SECRET_WORD = 'nope'\n")}
    for student, build in builds.items():
        folder = subs / student / "tiny"
        folder.mkdir(parents=True)
        (folder / "tiny.ipynb").write_bytes(build(ctx))
    _speed_submission(subs / "alice" / "speed", "@tf.function\ndef fast_total(x):\n    return slow_total(x)\n")
    _speed_submission(subs / "bob" / "speed", "def fast_total(x):\n    return slow_total(x)\n")  # no faster
    grade(subs, out, source=source, workers=2, progress_stream=io.StringIO())
    report = build_report(out, source=source)
    report_page.write_report(report)
    speeds = {s["student"]: s for s in _csv(out / "report_speedups.csv")}
    # A right answer: passed, or left inconclusive by load after grade's second try; never failed.
    alice = speeds["alice"]
    assert (alice["status"] == "passed" and float(alice["speedup"]) >= 1.5) or alice["status"] == "inconclusive", alice
    # No faster than the baseline: failed (inconclusive only if the other core is very busy).
    assert speeds["bob"]["status"] in ("failed", "inconclusive") and float(speeds["bob"]["speedup"]) < 1.5
    assert {s["needed"] for s in speeds.values()} == {"1.5"}
    parts = {r["part"]: r for r in _csv(out / "report_parts.csv")}
    assert (parts["test-double"]["passed"], parts["test-double"]["failed"]) == ("1", "2")
    assert (parts["test-word"]["passed"], parts["test-word"]["failed"]) == ("2", "1")
    groups = {f["message"]: f for f in _csv(out / "report_failures.csv")}
    double = groups["double(N) returned N, expected N"]
    assert double["count"] == "2" and double["clause"].startswith("test line 1:")
    assert HIDDEN_DOUBLE not in (out / "report.html").read_text()


def test_a_bad_results_shape_keeps_the_rest(graded, source):
    path = graded / "alice" / "tiny" / "results.json"
    path.write_text('{"tests": [{"name": "test-double"}]}')  # a test without its fields
    report = build_report(graded, source=source)
    assert path in report.unreadable and len(report.assignments["tiny"].totals) == len(TINY_BATCH) - 1


def test_flagged_submissions_are_listed_by_part_with_their_lines(tmp_path, source):
    out = _write_batch(tmp_path / "graded")
    flagged = _tiny(PASS_DOUBLE, PASS_WORD)
    flagged.review = [{"part": "test-word", "cell": "answer-word", "line": 3, "reason": "reaches gc"},
                      {"part": "test-double", "cell": "answer-double", "line": 1, "reason": "imports ctypes"}]
    (out / "mallory" / "tiny").mkdir(parents=True)
    (out / "mallory" / "tiny" / "results.json").write_text(flagged.to_json())
    report = class_report.build_report(out, source=source)
    rows = _csv_text(class_report.review_csv(report))
    assert [(r["student"], r["part"], r["line"], r["reason"]) for r in rows] == [
        ("mallory", "test-double", "1", "imports ctypes"), ("mallory", "test-word", "3", "reaches gc")]
    page = report_page.render_html(report)
    assert "Flagged for review (2)" in page and "imports ctypes" in page
    assert page.count("Nothing flagged.") == 1  # the speed assignment


def _csv_text(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text)))


def test_parts_that_are_not_final_are_listed(tmp_path):
    """A speed part left undecided and a manually graded part are counted by status and listed
    as not final, with what each waits for."""
    out = tmp_path / "graded"
    batch = {"ann": Results(tests=[TestResult("test-fast", 0.0, 3.0, "inconclusive: ...", status="inconclusive"),
                                   TestResult("explain", 0.0, 2.0, "needs manual grading", status="manual")]),
             "ben": Results(tests=[TestResult("test-fast", 3.0, 3.0, "fast"),
                                   TestResult("explain", 0.0, 2.0, "needs manual grading", status="manual")])}
    for student, results in batch.items():
        path = out / student / "speedy" / "results.json"
        path.parent.mkdir(parents=True)
        path.write_text(results.to_json())
    report = build_report(out)
    assignment = report.assignments["speedy"]
    assert assignment.parts["explain"].statuses == {"manual": 2}
    assert sorted(assignment.pending) == [("ann", "explain", "manual"), ("ann", "test-fast", "inconclusive"),
                                          ("ben", "explain", "manual")]
    page = report_page.write_report(report)[0].read_text(encoding="utf-8")
    assert "Not final (3 parts)" in page and "regrade (the grader could not decide its speed)" in page
    parts = _csv(out / "report_parts.csv")
    assert {r["part"]: r["manual"] for r in parts} == {"test-fast": "0", "explain": "2"}
