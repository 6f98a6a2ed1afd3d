"""``python -m autograder grade SUBMISSIONS --out DIR``: grade a whole class.

``SUBMISSIONS`` uses nbgrader's layout ``<student>/<assignment>/<notebook>.ipynb``
(an nbgrader ``submitted/`` folder works as is).  Each submission is graded by
:func:`autograder.grading.sandbox.run_submission` in its own sandboxed process tree,
``--workers`` at a time, and gets ``DIR/<student>/<assignment>/results.json``
(Gradescope's shape) and ``feedback.html``; ``DIR/grades.csv`` covers every
graded submission, and ``exports`` adds LMS gradebooks beside it
(:mod:`autograder.grading.exporters`).

Every file is written atomically, results before feedback, and a submission
counts as graded once its ``results.json`` exists: after Ctrl-C, a kill or a
power cut, re-running the command grades only what is missing (``--force``
regrades everything).  ``--scheduler ADDRESS`` grades the same :class:`Batch` on a Dask
cluster instead (:mod:`autograder.grading.distributed_grade`); files are written here,
by :meth:`Batch.record`, either way.  A submission that breaks a limit or crashes is scored,
never fatal, and runs in its own tree, so it cannot change a neighbour's score.

**A second try for undecided speed.**  A speed check that runs out of trials before its
interval clears the threshold says "inconclusive" (never a pass), usually because the
machine was busy: with ``--workers 2`` on two cores, the neighbour's TensorFlow shares the
cores with the trials.  Once the batch is done, every submission with an inconclusive part
is graded once more, by itself, and that grade replaces the first (:func:`grade`).  Only an
undecided result earns the second try, so a wrong "pass" is at most twice the check's own
rate (2.5% each at an answer exactly at its threshold, :mod:`autograder.checks.timing_stats`).
"""
from __future__ import annotations

import os
import stat
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, wait
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Callable

from autograder.grading import exporters, feedback, pipeline, sandbox, turns
from autograder.errors import UsageError
from autograder.atomic import write_atomic
from autograder.grading.exporters.base import Graded, Roster, Row, read_timestamp
from autograder.grading.limits import with_overrides
from autograder.grading.results import Results, read_results



@dataclass
class Submission:
    student: str
    assignment: str
    folder: Path
    notebook: Path | None
    problem: str = ""


def find_submissions(root: Path, assignment: str | None = None) -> list[Submission]:
    """Every ``<student>/<assignment>/`` folder under ``root``, sorted, with its notebook
    found by :func:`autograder.grading.pipeline.find_notebook`."""
    found = []
    for student_dir in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        for folder in sorted(p for p in student_dir.iterdir() if p.is_dir() and not p.name.startswith(".")):
            if assignment and folder.name != assignment:
                continue
            notebook, problem = pipeline.find_notebook(folder, folder.name)
            found.append(Submission(student_dir.name, folder.name, folder, notebook, problem))
    return found


def _paths(out: Path, sub: Submission) -> tuple[Path, Path]:
    folder = out / sub.student / sub.assignment
    return folder / "results.json", folder / "feedback.html"


def needs_grading(out: Path, sub: Submission) -> bool:
    """No readable results yet, or the submission changed after they were written
    (``nbgrader collect --update`` brought in a resubmission)."""
    results_path = _paths(out, sub)[0]
    if read_results(results_path) is None:
        return True
    graded_at = results_path.stat().st_mtime
    changed = [p for p in (sub.notebook, sub.folder / "timestamp.txt") if p is not None and p.is_file()]
    return any(p.stat().st_mtime > graded_at for p in changed)


class Progress:
    """A one-line progress bar with counts and ETA on stderr (a line per update when not a TTY)."""

    def __init__(self, total: int, skipped: int, stream=sys.stderr) -> None:
        self.total, self.skipped, self.done, self.problems = total, skipped, 0, 0
        self.stream = stream
        self.start = time.monotonic()
        self.tty = stream.isatty()
        self.lock = threading.Lock()

    def line(self) -> str:
        elapsed = time.monotonic() - self.start
        left = self.total - self.done
        eta = f"{elapsed / self.done * left:.0f}s" if self.done else "?"
        width = 24
        filled = int(width * self.done / self.total) if self.total else width
        return (f"grading [{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} "
                f"({self.skipped} already graded, {self.problems} stopped early) "
                f"elapsed {elapsed:.0f}s ETA {eta}")

    def update(self, stopped_early: bool) -> None:
        with self.lock:
            self.done += 1
            self.problems += int(stopped_early)
            self.show()

    def show(self) -> None:
        end = "\r" if self.tty and self.done < self.total else "\n"
        print(self.line(), end=end, file=self.stream, flush=True)


def _write(out: Path, sub: Submission, results: Results, nbgrader_feedback: Path | None = None) -> None:
    results_path, feedback_path = _paths(out, sub)
    html = feedback.render_html(results, student=sub.student, assignment=sub.assignment)
    write_atomic(feedback_path, html)
    if nbgrader_feedback is not None:
        write_nbgrader_feedback(nbgrader_feedback, sub, html)
    write_atomic(results_path, results.to_json())  # last: its presence marks the submission graded


def write_nbgrader_feedback(feedback_root: Path, sub: Submission, html: str) -> Path:
    """Put ``html`` where ``nbgrader release_feedback`` looks:
    ``<feedback>/<student>/<assignment>/<notebook>.html`` beside copies of the
    submission's ``timestamp.txt`` and ``submission_secret.txt`` (nbgrader names the
    released file by a hash of that secret and the notebook's name).

    The page is made readable by all (0644, as nbgrader's own feedback under the usual
    umask): ``release_feedback`` copies it into the exchange with its mode, and the
    student, another user, must be able to read it there.  The two copies keep the
    submission's modes; a stale copy whose original is gone is removed, so the page is
    never released under an older submission's secret."""
    folder = feedback_root / sub.student / sub.assignment
    stem = sub.notebook.stem if sub.notebook is not None else sub.assignment
    for name in ("timestamp.txt", "submission_secret.txt"):
        original, copy = sub.folder / name, folder / name
        if original.is_file():
            write_atomic(copy, original.read_bytes(), mode=stat.S_IMODE(original.stat().st_mode))
        elif copy.is_file():
            copy.unlink()
    return write_atomic(folder / f"{stem}.html", html, mode=0o644)


def nbgrader_feedback_dir(submissions: Path) -> Path | None:
    """The course's ``feedback/`` folder when ``submissions`` is an nbgrader course's
    ``submitted/`` folder (its parent holds ``nbgrader_config.py``), else None.
    ``submissions`` may be relative (``.`` from inside ``submitted/``)."""
    submitted = Path(submissions).resolve()
    course = submitted.parent
    if submitted.name == "submitted" and (course / "nbgrader_config.py").is_file():
        return course / "feedback"
    return None


@dataclass
class Batch:
    """One ``grade`` run: what it grades, against what, and where each result goes.

    Whatever grades the submissions (threads here, a Dask cluster in
    :mod:`autograder.grading.distributed_grade`) hands each finished one to
    :meth:`record`, the one place a submission's files are written."""

    out: Path
    subs: list[Submission]  # every submission found (grades.csv covers them all)
    todo: list[Submission]  # those not graded yet (or all, with force)
    assignments: dict[str, pipeline.Assignment]
    hidden: list[Path]  # folders no submission may read: source, submissions, out
    limits: sandbox.Limits | None  # None: each assignment's own (grading.toml), with limit_overrides on top
    isolate: bool
    progress: Progress
    nbgrader_feedback: Path | None = None
    limit_overrides: dict = field(default_factory=dict)
    undecided: list[Submission] = field(default_factory=list)  # recorded with an inconclusive part

    def limits_for(self, assignment: str) -> sandbox.Limits:
        """The limits a submission of ``assignment`` gets."""
        if self.limits is not None:
            return self.limits
        return with_overrides(self.assignments[assignment].limits, self.limit_overrides)

    def grade_one(self, sub: Submission) -> Results:
        """Grade ``sub`` on this machine through the pipeline, in its own sandbox."""
        return pipeline.grade_notebook(sub.notebook, self.assignments[sub.assignment],
                                       limits=self.limits_for(sub.assignment), hidden_dirs=self.hidden,
                                       isolate=self.isolate, problem=sub.problem)

    def record(self, sub: Submission, results: Results) -> None:
        """Write ``sub``'s finished grade (results.json last: it marks it graded) and count it."""
        _write(self.out, sub, results, self.nbgrader_feedback)
        if timing_inconclusive(results):
            self.undecided.append(sub)  # list.append is atomic: record runs on the grading threads
        self.progress.update(bool(results.output))

    def second_tries(self) -> list["Batch"]:
        """One batch per submission left inconclusive, each graded alone once this one is done."""
        return [replace(self, todo=[sub], undecided=[]) for sub in self.undecided]


def timing_inconclusive(results: Results) -> bool:
    """Whether a part of ``results`` is a speed check that ran out of trials undecided."""
    return any(t.status == "inconclusive" for t in results.tests)


def plan(submissions: Path | str, out: Path | str, *, assignment: str | None = None,
         source: Path | str | None = None, force: bool = False, limits: sandbox.Limits | None = None,
         isolate: bool = True, progress_stream=sys.stderr, nbgrader_feedback: Path | str | None = None,
         limit_overrides: dict | None = None) -> Batch:
    """Check the folders, find the submissions and their assignments, and pick those
    still to grade; bad input is a :class:`UsageError`."""
    submissions, out = Path(submissions).resolve(), Path(out).resolve()
    source_root = Path(source or "solutions").resolve()
    if not submissions.is_dir():
        raise UsageError(f"{submissions}: no such folder; give nbgrader's submitted/ folder "
                         "(<student>/<assignment>/<notebook>.ipynb)")
    if not source_root.is_dir():
        raise UsageError(f"{source_root}: no such source folder; give --source (default: solutions/)")
    if out == submissions or submissions in out.parents:
        raise UsageError(f"--out {out} is inside the submissions folder; choose another folder")
    subs = find_submissions(submissions, assignment)
    if not subs:
        what = f" for assignment {assignment!r}" if assignment else ""
        raise UsageError(f"no submissions{what} in {submissions}; expected <student>/<assignment>/<notebook>.ipynb")
    assignments = {name: pipeline.load_assignment(source_root / name / f"{name}.ipynb")
                   for name in sorted({s.assignment for s in subs})}
    # Listed assignment by assignment (students in order within one); grade_here hands them out by
    # turns.Turns, each worker kept to one assignment while it can: a judge is kept warm for the next
    # submission of its assignment, and a few are kept at most (judge.client.MAX_IDLE).
    todo = sorted((sub for sub in subs if force or needs_grading(out, sub)), key=lambda sub: sub.assignment)
    out.mkdir(parents=True, exist_ok=True)
    return Batch(out, subs, todo, assignments, sorted({source_root, submissions, out}), limits, isolate,
                 Progress(len(todo), len(subs) - len(todo), progress_stream),
                 Path(nbgrader_feedback) if nbgrader_feedback else None, dict(limit_overrides or {}))


def grade(submissions: Path | str, out: Path | str, *, workers: int | None = None, assignment: str | None = None,
          source: Path | str | None = None, force: bool = False, limits: sandbox.Limits | None = None,
          isolate: bool = True, progress_stream=sys.stderr, limit_overrides: dict | None = None,
          nbgrader_feedback: Path | str | None = None, exports: list[str] | None = None,
          roster: Roster | None = None, assignment_ids: dict[str, str] | None = None,
          run: Callable[[Batch], None] | None = None) -> list[Row]:
    """Grade every submission under ``submissions`` into ``out``; return the CSV rows.
    ``nbgrader_feedback``: also write each feedback page into that nbgrader
    ``feedback/`` folder (see :func:`write_nbgrader_feedback`).  ``exports``: gradebook
    formats written beside ``grades.csv`` (``canvas``, ``moodle``), with ``roster`` and
    ``assignment_ids`` (see :mod:`autograder.grading.exporters`).  ``run`` grades the
    batch: by default :func:`grade_here`, ``workers`` at a time; a Dask cluster's is
    :func:`autograder.grading.distributed_grade.grade_on_cluster`'s."""
    batch = plan(submissions, out, assignment=assignment, source=source, force=force, limits=limits,
                 isolate=isolate, progress_stream=progress_stream, nbgrader_feedback=nbgrader_feedback,
                 limit_overrides=limit_overrides)
    batch.progress.show()
    run = run or partial(grade_here, workers=workers)
    try:
        run(batch)
        again = batch.second_tries()
        if again:
            print(f"speed was inconclusive in {len(again)} submission(s); grading each again by itself",
                  file=progress_stream, flush=True)
            batch.progress.total += len(again)
        for one in again:  # one at a time: nothing else of this batch shares the machine
            run(one)
    finally:  # also after Ctrl-C: grades.csv holds what finished
        rows = _write_exports(batch.out, batch.subs, batch.assignments, exports, roster, assignment_ids)
    return rows


def grade_here(batch: Batch, workers: int | None = None) -> None:
    """Grade ``batch.todo`` on this machine, ``workers`` at a time (default: CPU cores), each in
    its own sandboxed process tree, the submissions handed out by :class:`turns.Turns` (side by
    side, different assignments where there are; each worker kept to one while it can); Ctrl-C
    kills every running sandbox."""
    workers = max(1, workers or os.cpu_count() or 1)
    sandbox.sweep_stale()  # what a grader killed with -9 could not clean up
    stopping = threading.Event()

    def task(sub: Submission) -> None:
        results = batch.grade_one(sub)
        if stopping.is_set():
            return  # killed by Ctrl-C: not a real grade, grade it again next time
        batch.record(sub, results)

    order = turns.Turns(batch.todo, key=lambda sub: sub.assignment)
    futures, threads = turns.run_in_turns(order, task, workers, name="grade")
    try:
        pending = set(futures)
        while pending:
            finished, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
            for future in finished:
                future.result()
    except BaseException:
        stopping.set()
        order.close()
        sandbox.stop_all()
        raise
    finally:
        for thread in threads:
            thread.join()


def _write_exports(out: Path, subs: list[Submission], assignments: dict[str, pipeline.Assignment],
                   exports: list[str] | None, roster: Roster | None,
                   assignment_ids: dict[str, str] | None) -> list[Row]:
    """grades.csv and the ``exports`` from the results on disk (the record that survives an interruption)."""
    rows = []
    for sub in subs:
        results = read_results(_paths(out, sub)[0])
        if results is not None:
            rows.append(Row(sub.student, sub.assignment, results, read_timestamp(sub.folder)))
    columns: list[str] = []
    for name in sorted(assignments):
        columns += [p for p in assignments[name].part_names if p not in columns]
    graded = Graded(rows, columns)
    for fmt in [exporters.DEFAULT_FORMAT, *(f for f in exports or [] if f != exporters.DEFAULT_FORMAT)]:
        exporters.write(graded, fmt, out / exporters.EXPORTERS[fmt].filename, roster=roster,
                        assignment_ids=assignment_ids)
    return graded.rows
