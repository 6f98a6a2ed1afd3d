"""The grade command: layout, resume, atomic outputs, interruption, the CLI as users see it."""
from __future__ import annotations

import csv
import html
import io
import json
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from autograder.frontends import grade
from autograder.sandbox import host as sandbox
from autograder.errors import UsageError
from autograder.results.results import Results, TestResult
from tests.conftest import ROOT, is_sandbox_kernel
from tests.files.hostile.catalogue import TINY_SOURCE, answers


def _submit(root, student: str, data: bytes | None = None, assignment: str = "tiny", name: str = "tiny.ipynb"):
    folder = root / student / assignment
    folder.mkdir(parents=True, exist_ok=True)
    if data is not None:
        (folder / name).write_bytes(data)
    return folder


class FakeSandbox:
    """Stands in for run_submission: instant, counts calls, can block or fail on demand."""

    def __init__(self):
        self.calls: list[str] = []
        self.lock = threading.Lock()
        self.block = threading.Event()
        self.block_for: set[str] = set()

    def __call__(self, submission, source, **kwargs):
        student = submission.parent.parent.name
        with self.lock:
            self.calls.append(student)
        if student in self.block_for:
            self.block.wait(30)
        return Results(tests=[TestResult("test-double", 3.0, 3.0, f"ok {student}"),
                              TestResult("test-word", 0.0, 2.0, "SECRET_WORD is None", status="failed")],
                       notebook=submission.name)


@pytest.fixture
def fake(monkeypatch):
    fake = FakeSandbox()
    monkeypatch.setattr(grade.sandbox, "run_submission", fake)
    return fake


def _grade(subs, out, **kw):
    return grade.grade(subs, out, source=TINY_SOURCE, progress_stream=io.StringIO(), **kw)


def test_layout_problems_are_graded_as_zero_with_a_reason(tmp_path, fake):
    subs = tmp_path / "submitted"
    _submit(subs, "alice", b"{}")
    _submit(subs, "bob")  # no notebook at all
    _submit(subs, "carol", b"{}", name="mine.ipynb")  # one notebook, another name: accepted
    folder = _submit(subs, "dave", b"{}", name="a.ipynb")
    (folder / "b.ipynb").write_bytes(b"{}")
    rows = {r.student: r.results for r in _grade(subs, tmp_path / "out")}
    assert sorted(fake.calls) == ["alice", "carol"]
    assert rows["bob"].score == 0 and "no notebook in the submission" in rows["bob"].tests[0].output
    assert rows["bob"].max_score == 5
    assert "2 notebooks and none named tiny.ipynb" in rows["dave"].output


def test_outputs_and_resume_and_force(tmp_path, fake):
    subs, out = tmp_path / "submitted", tmp_path / "out"
    for student in ("alice", "bob"):
        _submit(subs, student, b"{}")
    _grade(subs, out, workers=2)
    assert sorted(fake.calls) == ["alice", "bob"]
    data = json.loads((out / "alice" / "tiny" / "results.json").read_text())
    assert data["score"] == 3 and data["max_score"] == 5 and data["tests"][0]["output"] == "ok alice"
    assert "ok alice" in (out / "alice" / "tiny" / "feedback.html").read_text()
    csv_before = (out / "grades.csv").read_text()
    assert csv_before.splitlines()[1].startswith("tiny,,,alice,")
    _submit(subs, "carol", b"{}")
    _grade(subs, out)
    assert sorted(fake.calls) == ["alice", "bob", "carol"]  # only the new one
    assert (out / "grades.csv").read_text().count("\n") == 4
    _grade(subs, out, force=True)
    assert len(fake.calls) == 6
    assert not list(out.rglob(".*.tmp"))  # atomic writes leave no temporary files


def test_a_batch_is_graded_assignment_by_assignment(tmp_path, fake):
    """Discovery is student by student; grading goes assignment by assignment (so a warm judge
    serves the next submission of its assignment); grades.csv is written in its own order."""
    source, subs, out = tmp_path / "source", tmp_path / "submitted", tmp_path / "out"
    for name in ("a_first", "b_second"):
        (source / name).mkdir(parents=True)
        (source / name / f"{name}.ipynb").write_bytes((TINY_SOURCE / "tiny" / "tiny.ipynb").read_bytes())
        for student in ("alice", "bob", "carol"):
            _submit(subs, student, b"{}", assignment=name, name=f"{name}.ipynb")
    batch = grade.plan(subs, out, source=source, progress_stream=io.StringIO())
    assert [(s.student, s.assignment) for s in batch.subs] == [
        ("alice", "a_first"), ("alice", "b_second"), ("bob", "a_first"), ("bob", "b_second"),
        ("carol", "a_first"), ("carol", "b_second")]
    assert [(s.assignment, s.student) for s in batch.todo] == [
        ("a_first", "alice"), ("a_first", "bob"), ("a_first", "carol"),
        ("b_second", "alice"), ("b_second", "bob"), ("b_second", "carol")]
    grade.grade(subs, out, source=source, workers=1, progress_stream=io.StringIO())
    assert fake.calls == ["alice", "bob", "carol"] * 2
    rows = (out / "grades.csv").read_text().splitlines()[1:]
    assert [(r.split(",")[0], r.split(",")[3]) for r in rows] == [  # grades.csv's own order, not the grading's
        ("a_first", "alice"), ("a_first", "bob"), ("a_first", "carol"),
        ("b_second", "alice"), ("b_second", "bob"), ("b_second", "carol")]


def test_workers_side_by_side_grade_different_assignments(tmp_path, fake, monkeypatch):
    """With two workers the two submissions graded at once are of two assignments (turns.Turns),
    and each worker then keeps to its own."""
    source, subs, out = tmp_path / "source", tmp_path / "submitted", tmp_path / "out"
    for name in ("a_first", "b_second"):
        (source / name).mkdir(parents=True)
        (source / name / f"{name}.ipynb").write_bytes((TINY_SOURCE / "tiny" / "tiny.ipynb").read_bytes())
        for student in ("alice", "bob"):
            _submit(subs, student, b"{}", assignment=name, name=f"{name}.ipynb")
    both = threading.Barrier(2, timeout=30)
    side_by_side, lock = [], threading.Lock()

    def graded(submission, source, **kw):
        with lock:
            side_by_side.append(submission.parent.name)
        both.wait()  # two at a time, in step
        return fake(submission, source, **kw)

    monkeypatch.setattr(grade.sandbox, "run_submission", graded)
    grade.grade(subs, out, source=source, workers=2, progress_stream=io.StringIO())
    assert sorted(side_by_side[:2]) == ["a_first", "b_second"] == sorted(side_by_side[2:])


def test_a_half_written_result_is_regraded(tmp_path, fake):
    subs, out = tmp_path / "submitted", tmp_path / "out"
    _submit(subs, "alice", b"{}")
    (out / "alice" / "tiny").mkdir(parents=True)
    (out / "alice" / "tiny" / "results.json").write_text('{"score": 3, "tests": [')
    _grade(subs, out)
    assert fake.calls == ["alice"]


def test_interrupted_batch_keeps_finished_results_and_resumes(tmp_path, fake, monkeypatch):
    subs, out = tmp_path / "submitted", tmp_path / "out"
    for student in ("alice", "bob", "carol"):
        _submit(subs, student, b"{}")
    fake.block_for = {"carol"}
    stopped = []
    monkeypatch.setattr(sandbox, "stop_all", lambda: (stopped.append(True), fake.block.set()))
    original_wait = grade.wait

    def wait_then_interrupt(pending, **kw):
        done, rest = original_wait(pending, **kw)
        if len(fake.calls) == 3 and (out / "alice" / "tiny" / "results.json").exists() \
                and (out / "bob" / "tiny" / "results.json").exists():
            raise KeyboardInterrupt
        return done, rest

    monkeypatch.setattr(grade, "wait", wait_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        _grade(subs, out, workers=3)
    assert stopped
    assert not (out / "carol" / "tiny" / "results.json").exists()  # killed: not a grade
    assert (out / "grades.csv").read_text().count("\n") == 3  # header + the two finished
    monkeypatch.setattr(grade, "wait", original_wait)
    fake.block_for = set()
    _grade(subs, out)
    assert fake.calls[-1] == "carol" and len(fake.calls) == 4


def test_usage_errors(tmp_path, fake):
    with pytest.raises(UsageError, match="no such folder"):
        _grade(tmp_path / "nope", tmp_path / "out")
    (tmp_path / "empty").mkdir()
    with pytest.raises(UsageError, match="no submissions"):
        _grade(tmp_path / "empty", tmp_path / "out")
    _submit(tmp_path / "subs", "alice", b"{}", assignment="other")
    with pytest.raises(UsageError, match="no source notebook"):
        _grade(tmp_path / "subs", tmp_path / "out")
    with pytest.raises(UsageError, match="inside the submissions folder"):
        _grade(tmp_path / "subs", tmp_path / "subs" / "out")


def test_progress_shows_counts_and_eta():
    stream = io.StringIO()
    progress = grade.Progress(total=4, skipped=1, stream=stream)
    progress.update(stopped_early=False)
    progress.update(stopped_early=True)
    last = stream.getvalue().strip().splitlines()[-1]
    assert "2/4" in last and "1 already graded" in last and "1 stopped early" in last and "ETA" in last


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "autograder", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)


def test_cli_usage_error_is_one_line_exit_2(tmp_path):
    proc = _cli("grade", str(tmp_path / "missing"), "--out", str(tmp_path / "out"))
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("error:") and len(proc.stderr.strip().splitlines()) == 1


def test_cli_grades_a_small_class_end_to_end(tmp_path):
    subs, out = tmp_path / "submitted", tmp_path / "out"
    _submit(subs, "alice", answers()(None))
    _submit(subs, "bob", answers(double="def double(x):\n    return x\n")(None))
    proc = _cli("grade", str(subs), "--out", str(out), "--source", str(TINY_SOURCE), "--workers", "2")
    assert proc.returncode == 0, proc.stderr
    assert "grades.csv: 2 submission(s)" in proc.stdout
    assert proc.stdout.splitlines()[-1].split() == ["tiny", "2", "0", "0", "0", "0", "0", "3.50", "/", "5"]
    assert "2/2" in proc.stderr and "ETA" in proc.stderr
    lines = (out / "grades.csv").read_text().splitlines()
    assert lines[1].startswith("tiny,,,alice,,,,5,0,5,5,3,2,graded")
    assert lines[2].startswith("tiny,,,bob,,,,2,0,2,5,0,2,graded")
    bob = (out / "bob" / "tiny" / "feedback.html").read_text()
    assert "double(2) returned 2, expected 4" in bob and "hidden-marker" not in bob


def test_a_grader_failure_on_one_submission_does_not_stop_the_batch(tmp_path, fake, monkeypatch):
    subs, out = tmp_path / "submitted", tmp_path / "out"
    for student in ("alice", "bob"):
        _submit(subs, student, b"{}")

    def flaky(submission, source, **kw):
        if submission.parent.parent.name == "alice":
            raise OSError("disk full")
        return fake(submission, source, **kw)

    monkeypatch.setattr(grade.sandbox, "run_submission", flaky)
    rows = {r.student: r.results for r in _grade(subs, out)}
    assert rows["bob"].score == 3
    assert rows["alice"].score == 0 and "the grader failed on this submission (OSError: disk full)" in rows["alice"].output


def _descendants(pid: int) -> list:
    import psutil

    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


@pytest.mark.parametrize("how", ["SIGKILL", "SIGINT"])
def test_killing_the_grader_leaves_no_sandbox_running(tmp_path, how):
    import signal
    import time

    import psutil

    subs, out = tmp_path / "submitted", tmp_path / "out"
    _submit(subs, "alice", answers(double="while True:\n    pass\n")(None))
    proc = subprocess.Popen([sys.executable, "-m", "autograder", "grade", str(subs), "--out", str(out),
                             "--source", str(TINY_SOURCE), "--cell-timeout", "120"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        tree = _descendants(proc.pid)
        if any(is_sandbox_kernel(p) for p in tree if p.is_running()):
            break
        time.sleep(0.2)
    else:
        proc.kill()
        pytest.fail("the sandbox's kernel never started")
    proc.send_signal(getattr(signal, how))
    _, stderr = proc.communicate(timeout=60)
    gone, alive = psutil.wait_procs(tree, timeout=30)
    assert not alive, f"left running after {how}: {[p.cmdline() for p in alive]}"
    assert not (out / "alice" / "tiny" / "results.json").exists()  # stopped, not graded
    if how == "SIGINT":
        assert proc.returncode == 130 and stderr.strip().endswith("interrupted")
    sandbox.sweep_stale()  # the next grade run does this first
    assert not list(Path(tempfile.gettempdir()).glob(f"{sandbox.SANDBOX_PREFIX}{proc.pid}-*"))
    assert not list(Path("/sys/fs/cgroup").glob(f"**/{sandbox.CGROUP_PREFIX}{proc.pid}-*"))


def test_a_resubmission_is_regraded_without_force(tmp_path, fake):
    """nbgrader collect --update replaces a submission: its newer files mean grade again."""
    import os

    subs, out = tmp_path / "submitted", tmp_path / "out"
    folder = _submit(subs, "alice", b"{}")
    _submit(subs, "bob", b"{}")
    _grade(subs, out)
    assert sorted(fake.calls) == ["alice", "bob"]
    results = out / "alice" / "tiny" / "results.json"
    later = results.stat().st_mtime + 5
    (folder / "timestamp.txt").write_text("2026-11-30 12:00:00.000000 UTC")
    os.utime(folder / "timestamp.txt", (later, later))
    _grade(subs, out)
    assert sorted(fake.calls) == ["alice", "alice", "bob"]  # bob's unchanged submission is kept


def test_inconclusive_speed_is_graded_again_alone_once_the_batch_is_done(tmp_path, fake, monkeypatch):
    """A part left inconclusive (the neighbours were busy) gets one more try, with nothing else
    of the batch running; failed parts and a second inconclusive verdict are final."""
    subs, out = tmp_path / "submitted", tmp_path / "out"
    for student in ("alice", "bob", "carol", "dave"):
        _submit(subs, student, b"{}")
    running, overlapped, lock = set(), [], threading.Lock()
    verdicts = {"alice": ["inconclusive", "passed"], "bob": ["failed"], "carol": ["inconclusive", "inconclusive"],
                "dave": ["passed"]}

    def timed(submission, source, **kw):
        student = submission.parent.parent.name
        with lock:
            if fake.calls.count(student) and running:  # a second try must run alone
                overlapped.append((student, sorted(running)))
            running.add(student)
        try:
            fake(submission, source, **kw)
            status = verdicts[student][fake.calls.count(student) - 1]
            score = 3.0 if status == "passed" else 0.0
            return Results(tests=[TestResult("test-fast", score, 3.0, f"{status} {student}", status=status)])
        finally:
            with lock:
                running.discard(student)

    monkeypatch.setattr(grade.sandbox, "run_submission", timed)
    stream = io.StringIO()
    rows = {r.student: r.results for r in grade.grade(subs, out, source=TINY_SOURCE, workers=4,
                                                        progress_stream=stream)}
    assert sorted(fake.calls) == ["alice", "alice", "bob", "carol", "carol", "dave"]
    assert fake.calls[-2:] in (["alice", "carol"], ["carol", "alice"]) and not overlapped
    assert {s: r.tests[0].status for s, r in rows.items()} == {
        "alice": "passed", "bob": "failed", "carol": "inconclusive", "dave": "passed"}
    assert json.loads((out / "alice" / "tiny" / "results.json").read_text())["score"] == 3
    assert "passed alice" in (out / "alice" / "tiny" / "feedback.html").read_text()
    assert "speed was inconclusive in 2 submission(s)" in stream.getvalue()
    assert "6/6" in stream.getvalue().strip().splitlines()[-1]
    _grade(subs, out)  # graded: a rerun grades nothing, carol's inconclusive result included
    assert len(fake.calls) == 6


def test_retry_inconclusive_grades_only_the_pending_submissions(tmp_path, fake, monkeypatch, capsys):
    """Pending is not 0: a later `grade --retry-inconclusive` grades only the submissions whose
    speed part was left undecided, and their new verdict replaces it in grades.csv."""
    from autograder import cli

    subs, out = tmp_path / "submitted", tmp_path / "out"
    for student in ("alice", "bob"):
        _submit(subs, student, b"{}")
    later = {"alice": "passed", "bob": "inconclusive"}

    def speed(submission, source, **kw):
        student = submission.parent.parent.name
        fake(submission, source, **kw)
        status = later[student]
        return Results(tests=[TestResult("test-fast", 3.0 * (status == "passed"), 3.0, status, status=status)])

    monkeypatch.setattr(grade.sandbox, "run_submission", speed)
    common = ["grade", str(subs), "--out", str(out), "--source", str(TINY_SOURCE), "--workers", "1"]
    assert cli.main(common) == 0
    assert sorted(fake.calls) == ["alice", "bob", "bob"]  # bob's second try, alone, is undecided too
    printed = capsys.readouterr().out
    assert "pending: the grader could not decide a speed part of 1 submission (bob/tiny)" in printed
    with open(out / "grades.csv", newline="") as f:
        assert {r["student_id"]: r["status"] for r in csv.DictReader(f)} == {"alice": "graded", "bob": "pending"}
    later["bob"] = "passed"  # a quieter hour
    assert cli.main([*common, "--retry-inconclusive"]) == 0
    assert sorted(fake.calls) == ["alice", "bob", "bob", "bob"]  # alice, graded, is left alone
    with open(out / "grades.csv", newline="") as f:
        rows = {r["student_id"]: r for r in csv.DictReader(f)}
    assert rows["bob"]["status"] == "graded" and rows["bob"]["score"] == "3" and rows["bob"]["message"] == ""
    assert cli.main([*common, "--retry-inconclusive"]) == 0 and len(fake.calls) == 4  # nothing pending now
    capsys.readouterr()
    assert cli.main([*common, "--retry-inconclusive", "--force"]) == 2
    assert "--retry-inconclusive grades only the pending submissions" in capsys.readouterr().err


def test_the_suites_batches_give_the_same_second_try():
    """tests.conftest.graded_as_a_batch (how the suite grades solutions and the catalogue)
    retries an inconclusive result alone, as grade does, and keeps an exception for its test."""
    from tests.conftest import graded_as_a_batch

    calls = []

    def fake_grade(name):
        calls.append(name)
        if name == "broken":
            raise RuntimeError("grader failed")
        status = "inconclusive" if (name, calls.count(name)) in {("slow", 1), ("stuck", 1), ("stuck", 2)} else "passed"
        return Results(tests=[TestResult("test-fast", 3.0 * (status == "passed"), 3.0, name, status=status)])

    futures = graded_as_a_batch(["slow", "stuck", "fine", "broken"], fake_grade, workers=2)
    assert sorted(calls) == ["broken", "fine", "slow", "slow", "stuck", "stuck"]
    assert futures["slow"].result().tests[0].status == "passed"
    assert futures["stuck"].result().tests[0].status == "inconclusive"
    with pytest.raises(RuntimeError, match="grader failed"):
        futures["broken"].result()


def test_the_suite_excuses_only_an_undecided_speed_part_that_must_keep_full_marks():
    """tests.conftest.undecided_speed: a right answer's speed part left inconclusive is excused,
    with a warning; a failed part, or an inconclusive part not expected at full marks, is not."""
    from tests.conftest import undecided_speed

    results = Results(tests=[TestResult("test-fast", 0.0, 2.0, "inconclusive: noisy", status="inconclusive"),
                             TestResult("test-slow", 0.0, 2.0, "inconclusive: noisy", status="inconclusive"),
                             TestResult("test-values", 0.0, 2.0, "wrong", status="failed")])
    with pytest.warns(UserWarning, match="test-fast"):
        assert undecided_speed(results, ["test-fast", "test-values"]) == {"test-fast"}
    assert undecided_speed(results, []) == set()


def test_the_suites_batches_are_handed_out_as_grade_hands_them_out():
    """graded_as_a_batch with ``key`` (the catalogue's assignment) grades two assignments side by side,
    as grade's workers do, not two cases of one."""
    from tests.conftest import graded_as_a_batch

    both = threading.Barrier(2, timeout=30)
    side_by_side, lock = [], threading.Lock()

    def fake_grade(value):
        with lock:
            side_by_side.append(value[0])
        both.wait()
        return value

    values = [("ex1", 0), ("ex1", 1), ("ex2", 0), ("ex2", 1)]
    futures = graded_as_a_batch(values, fake_grade, workers=2, key=lambda value: value[0])
    assert [futures[v].result() for v in values] == values
    assert sorted(side_by_side[:2]) == ["ex1", "ex2"] == sorted(side_by_side[2:])


# --- a term of grading: every row kept, one student, misnamed folders, the summary ------------------


def _two_assignments(tmp_path, students=("alice", "bob")):
    """A source folder with a_first and b_second (the tiny assignment twice) and their submissions."""
    source, subs = tmp_path / "source", tmp_path / "submitted"
    for name in ("a_first", "b_second"):
        (source / name).mkdir(parents=True)
        (source / name / f"{name}.ipynb").write_bytes((TINY_SOURCE / "tiny" / "tiny.ipynb").read_bytes())
        for student in students:
            _submit(subs, student, b"{}", assignment=name, name=f"{name}.ipynb")
    return source, subs


def _csv_rows(out):
    import csv

    return list(csv.DictReader((out / "grades.csv").open()))


def test_grading_one_assignment_or_one_student_keeps_every_other_row(tmp_path, fake):
    """grades.csv is rebuilt from every results.json under --out, not from this run's submissions."""
    source, subs = _two_assignments(tmp_path)
    out = tmp_path / "out"
    grade.grade(subs, out, source=source, assignment="a_first", progress_stream=io.StringIO())
    assert [(r["assignment"], r["student_id"]) for r in _csv_rows(out)] == [("a_first", "alice"), ("a_first", "bob")]
    rows = grade.grade(subs, out, source=source, assignment="b_second", progress_stream=io.StringIO())
    expected = [("a_first", "alice"), ("a_first", "bob"), ("b_second", "alice"), ("b_second", "bob")]
    assert [(r["assignment"], r["student_id"]) for r in _csv_rows(out)] == expected
    assert [(r.assignment, r.student) for r in rows] == expected
    assert all(r["test-double"] == "3" and r["status"] == "graded" for r in _csv_rows(out))
    before = (out / "grades.csv").read_text()
    grade.grade(subs, out, source=source, students=["bob"], progress_stream=io.StringIO())
    assert (out / "grades.csv").read_text() == before  # the same rows, in the same order


def test_student_regrades_only_those_students(tmp_path, fake):
    source, subs = _two_assignments(tmp_path, ("alice", "bob", "carol"))
    out = tmp_path / "out"
    grade.grade(subs, out, source=source, progress_stream=io.StringIO())
    assert len(fake.calls) == 6
    grade.grade(subs, out, source=source, students=["bob"], progress_stream=io.StringIO())
    assert fake.calls[6:] == ["bob", "bob"]  # graded already: named, so graded again
    grade.grade(subs, out, source=source, students=["carol", "alice"], assignment="b_second",
                progress_stream=io.StringIO())
    assert sorted(fake.calls[8:]) == ["alice", "carol"]
    assert len(_csv_rows(out)) == 6
    with pytest.raises(UsageError, match=r"--student bobby: no such student folder .*students there: alice, bob, carol$"):
        grade.grade(subs, out, source=source, students=["bobby"], progress_stream=io.StringIO())


def test_a_folder_that_names_no_assignment_is_skipped_and_the_rest_is_graded(tmp_path, fake):
    subs, out = tmp_path / "submitted", tmp_path / "out"
    for student in ("alice", "bob"):
        _submit(subs, student, b"{}")
    _submit(subs, "bob", b"{}", assignment="1_tiny", name="1_tiny.ipynb")  # misnamed beside a good one
    stream = io.StringIO()
    rows = grade.grade(subs, out, source=TINY_SOURCE, progress_stream=stream)
    assert sorted(fake.calls) == ["alice", "bob"]
    assert "skipped bob/1_tiny: no assignment of this folder's name (the source folder has tiny)" in stream.getvalue()
    table = {(r["student_id"], r["assignment"]): r for r in _csv_rows(out)}
    assert table[("bob", "1_tiny")]["status"] == "skipped"
    assert "rename the folder" in table[("bob", "1_tiny")]["message"]
    assert table[("bob", "tiny")]["status"] == table[("alice", "tiny")]["status"] == "graded"
    assert not (out / "bob" / "1_tiny").exists()  # no result: nothing was graded
    assert len(rows) == 3


def test_another_exercises_notebook_is_skipped_and_named(tmp_path, fake):
    """A notebook whose cells are another assignment's is not run: its row says whose it is,
    instead of one "answer cell missing" per part."""
    import nbformat

    source, subs, out = tmp_path / "source", tmp_path / "submitted", tmp_path / "out"
    shutil.copytree(TINY_SOURCE / "tiny", source / "tiny")
    other = nbformat.read(TINY_SOURCE / "tiny" / "tiny.ipynb", as_version=4)
    for cell in other.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade_id"):
            meta["grade_id"] = "other-" + meta["grade_id"]
    (source / "other").mkdir()
    nbformat.write(other, source / "other" / "other.ipynb")
    _submit(subs, "alice", answers()(None))  # tiny's notebook, in tiny's folder
    _submit(subs, "bob", answers()(None), assignment="other", name="other.ipynb")  # tiny's, in other's folder
    stream = io.StringIO()
    grade.grade(subs, out, source=source, progress_stream=stream)
    assert fake.calls == ["alice"]
    message = "this is exercise tiny's notebook, not other's"
    assert f"skipped bob/other: {message}" in stream.getvalue()
    bob = json.loads((out / "bob" / "other" / "results.json").read_text())
    assert bob["score"] == 0 and bob["max_score"] == 5 and message in bob["output"]
    assert {t["status"] for t in bob["tests"]} == {"skipped"}
    assert html.escape(message) in (out / "bob" / "other" / "feedback.html").read_text()
    table = {r["student_id"]: r for r in _csv_rows(out)}
    assert table["bob"]["status"] == "skipped" and message in table["bob"]["message"]


def test_the_summary_is_a_table_per_assignment():
    from autograder.results.exporters.base import Row

    def results(status, score, output=""):
        return Results(tests=[TestResult("a", score, 3.0, status=status), TestResult("b", 0.0, 2.0)], output=output)

    rows = [Row("ann", "ps1", results("passed", 3.0)), Row("ben", "ps1", results("inconclusive", 0.0)),
            Row("cal", "ps1", results("error", 0.0, "the kernel died")),
            Row("dan", "ps1", Results(tests=[TestResult("a", 0, 3, "x", status="skipped")], output="x")),
            Row("ann", "ps2", Results(tests=[TestResult("c", 1.0, 1.0)])),
            Row("eve", "ps2", Results(tests=[TestResult("c", 0, 1.0, "none", status="missing")], output="none"))]
    lines = [line.split() for line in grade.summary_table(rows).splitlines()]
    assert lines[0] == ["assignment", "graded", "pending", "manual", "failed", "to", "run", "missing", "skipped",
                        "mean"]
    assert lines[1] == ["ps1", "1", "1", "0", "1", "0", "1", "1.00", "/", "5"]  # the skipped one not in the mean
    assert lines[2] == ["ps2", "1", "0", "0", "0", "1", "0", "0.50", "/", "1"]
    assert " ".join(lines[3]) == ("pending: the grader could not decide a speed part of 1 submission (ben/ps1); "
                                  "`grade --retry-inconclusive` grades them again")


def _run_cli(*args):
    from autograder import cli

    return cli.main(["grade", *args])


def test_cli_exit_status_says_some_were_skipped(tmp_path, fake, capsys):
    subs, out = tmp_path / "submitted", tmp_path / "out"
    _submit(subs, "alice", b"{}")
    _submit(subs, "bob", b"{}", assignment="1_tiny", name="1_tiny.ipynb")
    assert _run_cli(str(subs), "--out", str(out), "--source", str(TINY_SOURCE)) == 3
    captured = capsys.readouterr()
    assert "skipped bob/1_tiny: no assignment of this folder's name" in captured.err
    assert captured.out.splitlines()[-2].split()[:2] == ["1_tiny", "0"]  # its row in the table, as skipped
    assert captured.out.splitlines()[-1].split() == ["tiny", "1", "0", "0", "0", "0", "0", "3.00", "/", "5"]
    shutil.rmtree(subs / "bob" / "1_tiny")
    assert _run_cli(str(subs), "--out", str(out), "--source", str(TINY_SOURCE)) == 0
    from autograder.cli import build_parser

    assert "3 graded,\nbut grades.csv holds skipped submissions" in build_parser()._subparsers._group_actions[0] \
        .choices["grade"].format_help()


def test_rostered_students_without_a_submission_get_a_missing_zero(tmp_path, fake):
    """As nbgrader's gradebook: a rostered student who submitted nothing has a 0 row, status missing,
    in grades.csv and in every LMS export; a student not on the roster adds no row."""
    import csv

    from autograder.results.exporters import read_roster

    subs, out = tmp_path / "submitted", tmp_path / "out"
    for student in ("alice", "bob"):
        _submit(subs, student, b"{}")
    (tmp_path / "roster.csv").write_text("id,first_name\nalice,Alice\nbob,Bob\nzed,Zed\n")
    roster = read_roster(tmp_path / "roster.csv")
    rows = grade.grade(subs, out, source=TINY_SOURCE, progress_stream=io.StringIO(), roster=roster,
                       exports=["canvas"])
    table = {r["student_id"]: r for r in _csv_rows(out)}
    assert sorted(table) == ["alice", "bob", "zed"] and len(rows) == 3
    zed = table["zed"]
    assert (zed["status"], zed["score"], zed["max_score"], zed["test-double"], zed["first_name"]) == \
        ("missing", "0", "5", "0", "Zed")
    assert "no submission" in zed["message"]
    assert not (out / "zed").exists()
    canvas = list(csv.reader((out / "grades_canvas.csv").open()))
    assert [line[-1] for line in canvas[2:]] == ["3", "3", "0"]  # alice, bob, zed
    assert "missing" in grade.summary_table(rows).splitlines()[0]
    assert grade.summary_table(rows).splitlines()[1].split()[1:7] == ["2", "0", "0", "0", "1", "0"]


@pytest.mark.parametrize("content", [b"{}", b"[1, 2]", b"not json", b"[" * 100_000, b'{"cells": 3}',
                                     b'{"cells": [1, {"metadata": []}, {"metadata": {"nbgrader": {"grade_id": 7}}}]}'])
def test_grade_ids_of_a_broken_notebook_tell_nothing(tmp_path, content):
    """The grader reads a submission's grade_ids itself: no malformed notebook may raise there
    (the sandbox reports what is wrong with it)."""
    path = tmp_path / "tiny.ipynb"
    path.write_bytes(content)
    assert grade.grade_ids(path) in (None, set())
    assert grade.other_exercise(grade.grade_ids(path), "tiny", {"tiny": {"answer-double"}}) == ""


def test_other_exercise_tells_only_what_the_grade_ids_show():
    known = {"ex1": {"setup", "a1", "t1"}, "ex2": {"setup", "a2", "t2", "t2b"}, "bare": set()}
    assert grade.other_exercise({"setup", "a1", "t1"}, "ex1", known) == ""
    assert grade.other_exercise({"setup", "a1"}, "ex1", known) == ""  # an answer cell deleted: still ex1's
    assert grade.other_exercise({"setup", "a2", "t2"}, "ex1", known).startswith("this is exercise ex2's notebook")
    assert grade.other_exercise({"mine"}, "ex1", known).startswith("this notebook has none of ex1's cells")
    assert grade.other_exercise({"setup", "a2"}, "bare", known) == ""  # a source without grade_ids tells nothing
    assert grade.other_exercise(set(), "ex1", known) == grade.other_exercise(None, "ex1", known) == ""
