"""``python -m autograder grade SUBMISSIONS --out DIR``: grade a whole class.

``SUBMISSIONS`` uses nbgrader's layout ``<student>/<assignment>/<notebook>.ipynb``
(an nbgrader ``submitted/`` folder works as is).  Each submission is graded by
:func:`autograder.sandbox.host.run_submission` in its own sandboxed process tree,
``--workers`` at a time, and gets ``DIR/<student>/<assignment>/results.json``
(Gradescope's shape) and ``feedback.html``; ``DIR/grades.csv`` covers every
``results.json`` under ``DIR``, whichever run graded it (one ``--assignment``, one
``--student``, a resumed run), and ``exports`` adds LMS gradebooks beside it
(:mod:`autograder.results.exporters`).  A folder that names no assignment, or a notebook
that is another exercise's (:func:`other_exercise`), is named and skipped, never graded,
and the rest of the class is graded.  nbgrader's ``feedback/`` folder is written only for a
grade of the course into the course (:func:`nbgrader_feedback_target`).

Every file is written atomically, results before feedback, and a submission
counts as graded once its ``results.json`` exists: after Ctrl-C, a kill or a
power cut, re-running the command grades only what is missing (``--force``
regrades everything).  ``--scheduler ADDRESS`` grades the same :class:`Batch` on a Dask
cluster instead (:mod:`autograder.frontends.distributed_grade`); files are written here,
by :meth:`Batch.record`, either way.  A submission that breaks a limit or crashes is scored,
never fatal, and runs in its own tree, so it cannot change a neighbour's score.

**A second try for undecided speed.**  A speed check that runs out of trials before its
interval clears the threshold says "inconclusive" (never a pass), usually because the
machine was busy: with ``--workers 2`` on two cores, the neighbour's TensorFlow shares the
cores with the trials.  Once the batch is done, every submission with an inconclusive part
is graded once more, by itself, and that grade replaces the first (:func:`grade`).  Only an
undecided result earns the second try, so a wrong "pass" is at most twice the check's own
rate (2.5% each at an answer exactly at its threshold, :mod:`autograder.checks.timing_stats`).
One still undecided is ``pending`` (not a 0): grades.csv, the summary and the report say so,
and ``--retry-inconclusive`` grades only those later (:func:`is_pending`).
"""
from __future__ import annotations

import json
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

from autograder.results import exporters, feedback, gradebook
from autograder.frontends import pipeline, work_queue as turns
from autograder.sandbox import host as sandbox
from autograder.errors import UsageError
from autograder.atomic import write_atomic
from autograder.results.exporters.base import Graded, Roster, Row, read_timestamp
from autograder.submission.limits import with_overrides
from autograder.submission.notebook import GradedPart
from autograder.results.results import Results, graded_files, read_results, submission_status, zero_results
from autograder.submission.assignment import Assignment, load_assignment
from autograder.submission.folders import Submission, check_students, find_submissions
from autograder.submission.restore import MAX_NOTEBOOK_BYTES


def grade_ids(notebook: Path) -> set[str] | None:
    """The nbgrader ``grade_id``s of ``notebook``'s cells, or None when it cannot be read as a
    notebook of a sane size (the sandbox then says what is wrong with it)."""
    try:
        info = notebook.stat()
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_NOTEBOOK_BYTES:
            return None  # a FIFO would block the grader; the sandbox refuses a huge one
        cells = json.loads(notebook.read_text(encoding="utf-8")).get("cells", [])
    except (OSError, ValueError, AttributeError, RecursionError, MemoryError):
        return None
    ids = set()
    for cell in cells if isinstance(cells, list) else []:
        meta = cell.get("metadata") if isinstance(cell, dict) else None
        nbgrader = meta.get("nbgrader") if isinstance(meta, dict) else None
        gid = nbgrader.get("grade_id") if isinstance(nbgrader, dict) else None
        if isinstance(gid, str) and gid:
            ids.add(gid)
    return ids


def other_exercise(ids: set[str] | None, assignment: str, known: dict[str, set[str]]) -> str:
    """Why a notebook whose cells carry the grade_ids ``ids`` is not ``assignment``'s (``known``:
    each source notebook's grade_ids), or "" when it is, or when that cannot be told (no
    nbgrader cells at all: the sandbox grades it and names the missing answer cells).  Another
    exercise's notebook holds none of this one's ids, or more of another's than of this one's."""
    if not ids or not known.get(assignment):
        return ""
    own = len(ids & known[assignment])
    best = max(sorted(n for n in known if n != assignment), key=lambda n: len(ids & known[n]), default=None)
    other = len(ids & known[best]) if best is not None else 0
    if other > own and 2 * other > len(ids):
        return (f"this is exercise {best}'s notebook, not {assignment}'s; submit {assignment}.ipynb "
                f"in the {assignment} folder (and {best}.ipynb in its own)")
    if own == 0:
        return (f"this notebook has none of {assignment}'s cells (no grade_id in common with its source); "
                f"submit the {assignment}.ipynb that was released, with your answers in its cells")
    return ""


def _known_grade_ids(source_root: Path) -> dict[str, set[str]]:
    """Each assignment of the source folder (a ``<name>/<name>.ipynb``): the grade_ids of its
    source notebook (none when it cannot be read: loading it then says why, as a usage error)."""
    known = {}
    for folder in sorted(p for p in source_root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        notebook = folder / f"{folder.name}.ipynb"
        if notebook.is_file():
            known[folder.name] = grade_ids(notebook) or set()
    return known


def _paths(out: Path, sub: Submission) -> tuple[Path, Path]:
    folder = out / sub.student / sub.assignment
    return folder / "results.json", folder / "feedback.html"


def is_pending(out: Path, sub: Submission) -> bool:
    """Whether ``sub``'s results say a part is still undecided (``--retry-inconclusive`` grades it)."""
    results = read_results(_paths(out, sub)[0])
    return results is not None and submission_status(results) == "pending"


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
    submission's modes; a stale secret whose original is gone is removed, so the page is
    never released under an older submission's secret.  ``release_feedback`` needs a
    ``timestamp.txt``: a submission not collected by nbgrader (none there) gets one written,
    its notebook's modification time in nbgrader's format."""
    folder = feedback_root / sub.student / sub.assignment
    stem = sub.notebook.stem if sub.notebook is not None else sub.assignment
    for name in ("timestamp.txt", "submission_secret.txt"):
        original, copy = sub.folder / name, folder / name
        if original.is_file():
            write_atomic(copy, original.read_bytes(), mode=stat.S_IMODE(original.stat().st_mode))
        elif name == "timestamp.txt":
            write_atomic(copy, _nbgrader_timestamp(sub.notebook or sub.folder))
        elif copy.is_file():
            copy.unlink()
    return write_atomic(folder / f"{stem}.html", html, mode=0o644)


def _nbgrader_timestamp(path: Path) -> str:
    """``path``'s modification time as nbgrader writes a ``timestamp.txt`` (UTC, microseconds)."""
    from datetime import datetime, timezone

    return datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f UTC")


def nbgrader_feedback_dir(submissions: Path) -> Path | None:
    """The course's ``feedback/`` folder when ``submissions`` is an nbgrader course's
    ``submitted/`` folder (its parent holds ``nbgrader_config.py``), else None.
    ``submissions`` may be relative (``.`` from inside ``submitted/``)."""
    course = gradebook.course_of(submissions)
    return course / "feedback" if course is not None else None


def nbgrader_feedback_target(submissions: Path | str, out: Path | str, asked: str | None = None,
                             off: bool = False) -> tuple[Path | None, str]:
    """Where ``grade`` writes nbgrader's feedback pages, and a note when it leaves the course's alone.

    ``asked``: ``--nbgrader-feedback``'s value (None: not given; ``"auto"``: given without a
    folder); ``off``: ``--no-nbgrader-feedback``.  Unasked, the course's ``feedback/`` is
    written only when ``out`` lies inside that course (the course's own grading): a scratch
    run (``--out /tmp/scratch``) must not replace feedback the instructor may have released."""
    if off and asked is not None:
        raise UsageError("--nbgrader-feedback and --no-nbgrader-feedback contradict each other; give one")
    course_feedback = nbgrader_feedback_dir(Path(submissions))
    if off:
        return None, ""
    if asked not in (None, "auto"):
        return Path(asked), ""
    if asked == "auto":
        if course_feedback is None:
            raise UsageError("--nbgrader-feedback without DIR needs SUBMISSIONS to be an nbgrader course's "
                             "submitted/ folder (beside nbgrader_config.py); give the feedback folder instead")
        return course_feedback, ""
    if course_feedback is None:
        return None, ""
    course = course_feedback.parent
    if course in Path(out).resolve().parents:
        return course_feedback, ""
    return None, (f"--out is outside the course {course}: its feedback/ was left as it is "
                  "(--nbgrader-feedback writes it)")


@dataclass
class Batch:
    """One ``grade`` run: what it grades, against what, and where each result goes.

    Whatever grades the submissions (threads here, a Dask cluster in
    :mod:`autograder.frontends.distributed_grade`) hands each finished one to
    :meth:`record`, the one place a submission's files are written."""

    out: Path
    subs: list[Submission]  # every submission found (grades.csv covers them all)
    todo: list[Submission]  # those not graded yet (or all, with force)
    assignments: dict[str, Assignment]
    hidden: list[Path]  # folders no submission may read: source, submissions, out
    limits: sandbox.Limits | None  # None: each assignment's own (grading.toml), with limit_overrides on top
    isolate: bool
    progress: Progress
    nbgrader_feedback: Path | None = None
    limit_overrides: dict = field(default_factory=dict)
    undecided: list[Submission] = field(default_factory=list)  # recorded with an inconclusive part
    unknown: list[Submission] = field(default_factory=list)  # folders that name no assignment: not graded
    submissions: Path | None = None  # the folder graded (its timestamp.txt files date the rows)
    course: gradebook.Course | None = None  # the nbgrader course whose submitted/ this is

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
        self.progress.update(submission_status(results) == "error")

    def record_skipped(self, stream) -> None:
        """Score 0 every submission of ``todo`` that is another exercise's notebook (status
        ``skipped``, the reason in each part and in the note), name it on ``stream``, and
        leave the rest in ``todo``: nothing of it runs."""
        for sub in [s for s in self.todo if s.skip]:
            print(f"skipped {sub.student}/{sub.assignment}: {sub.skip}", file=stream, flush=True)
            parts = self.assignments[sub.assignment].parts
            self.record(sub, zero_results(parts, sub.skip, status="skipped",
                                          notebook=sub.notebook.name if sub.notebook else ""))
        self.todo = [s for s in self.todo if not s.skip]

    def second_tries(self) -> list["Batch"]:
        """One batch per submission left inconclusive, each graded alone once this one is done."""
        return [replace(self, todo=[sub], undecided=[]) for sub in self.undecided]


def timing_inconclusive(results: Results) -> bool:
    """Whether a part of ``results`` is a speed check that ran out of trials undecided."""
    return any(t.status == "inconclusive" for t in results.tests)


def plan(submissions: Path | str, out: Path | str, *, assignment: str | None = None,
         source: Path | str | None = None, force: bool = False, limits: sandbox.Limits | None = None,
         isolate: bool = True, progress_stream=sys.stderr, nbgrader_feedback: Path | str | None = None,
         limit_overrides: dict | None = None, students: list[str] | None = None,
         retry_inconclusive: bool = False) -> Batch:
    """Check the folders, find the submissions and their assignments, and pick those
    still to grade; bad input is a :class:`UsageError`.

    A folder that names no assignment of the source folder is left out (``Batch.unknown``)
    unless none does, which is a usage error (the wrong ``--source``); a notebook that is
    another exercise's is marked ``skip`` (:func:`other_exercise`).  Inside an nbgrader course
    (:func:`autograder.results.gradebook.course_of`) the source folder defaults to the course's.
    ``retry_inconclusive``: only the submissions whose results are pending (a speed part undecided)."""
    submissions, out = Path(submissions).resolve(), Path(out).resolve()
    course = gradebook.find_course(submissions)
    # Inside an nbgrader course its nbgrader_config.py names the source folder (CourseDirectory.source_directory).
    source_root = Path(source or (course.source if course is not None else "solutions")).resolve()
    if not submissions.is_dir():
        raise UsageError(f"{submissions}: no such folder; give nbgrader's submitted/ folder "
                         "(<student>/<assignment>/<notebook>.ipynb)")
    if not source_root.is_dir():
        raise UsageError(f"{source_root}: no such source folder; give --source (default: the nbgrader course's "
                         "source_directory, else solutions/)")
    if out == submissions or submissions in out.parents:
        raise UsageError(f"--out {out} is inside the submissions folder; choose another folder")
    if course is not None and (out == course.autograded or course.autograded in out.parents):
        raise UsageError(f"--out {out} is nbgrader's autograded folder, which `nbgrader autograde` replaces; "
                         "choose another folder (e.g. graded/)")
    check_students(submissions, students)
    subs = find_submissions(submissions, assignment, students)
    if not subs:
        what = f" for assignment {assignment!r}" if assignment else ""
        raise UsageError(f"no submissions{what} in {submissions}; expected <student>/<assignment>/<notebook>.ipynb")
    known = _known_grade_ids(source_root)
    unknown = [sub for sub in subs if sub.assignment not in known]
    for sub in unknown:
        sub.skip = unknown_reason(sorted(known))
    subs = [sub for sub in subs if sub.assignment in known]
    if not subs:  # nothing names a known assignment: the source folder is the wrong one
        load_assignment(source_root / unknown[0].assignment / f"{unknown[0].assignment}.ipynb")
    assignments = {name: load_assignment(source_root / name / f"{name}.ipynb")
                   for name in sorted({s.assignment for s in subs})}
    for sub in subs:
        if sub.notebook is not None:
            sub.skip = other_exercise(grade_ids(sub.notebook), sub.assignment, known)
    # Listed assignment by assignment (students in order within one); grade_here hands them out by
    # turns.Turns, each worker kept to one assignment while it can: a judge is kept warm for the next
    # submission of its assignment, and a few are kept at most (judge.client.MAX_IDLE).
    # Naming students asks for them to be graded now: theirs are regraded as with force.
    if retry_inconclusive:  # only what an earlier run left pending; nothing new is graded
        todo = sorted((sub for sub in subs if is_pending(out, sub)), key=lambda sub: sub.assignment)
    else:
        todo = sorted((sub for sub in subs if force or students or needs_grading(out, sub)),
                      key=lambda sub: sub.assignment)
    out.mkdir(parents=True, exist_ok=True)
    return Batch(out, subs, todo, assignments, sorted({source_root, submissions, out}), limits, isolate,
                 Progress(len(todo), len(subs) - len(todo), progress_stream),
                 Path(nbgrader_feedback) if nbgrader_feedback else None, dict(limit_overrides or {}),
                 unknown=unknown, submissions=submissions, course=course)


def unknown_reason(assignments: list[str]) -> str:
    """Why a folder that names no assignment is skipped, with the names it could have."""
    shown = ", ".join(assignments[:10]) + (" ..." if len(assignments) > 10 else "")
    return (f"no assignment of this folder's name (the source folder has {shown}); "
            "rename the folder to the assignment's name and grade again")


def grade(submissions: Path | str, out: Path | str, *, workers: int | None = None, assignment: str | None = None,
          source: Path | str | None = None, force: bool = False, limits: sandbox.Limits | None = None,
          isolate: bool = True, progress_stream=sys.stderr, limit_overrides: dict | None = None,
          nbgrader_feedback: Path | str | None = None, exports: list[str] | None = None,
          roster: Roster | None = None, assignment_ids: dict[str, str] | None = None,
          run: Callable[[Batch], None] | None = None, students: list[str] | None = None,
          retry_inconclusive: bool = False) -> list[Row]:
    """Grade every submission under ``submissions`` into ``out``; return grades.csv's rows:
    every result under ``out`` (whatever an earlier run graded too), and a ``skipped`` row per
    folder that names no assignment.  ``students``: grade only theirs (``--student``);
    ``retry_inconclusive``: only those an earlier run left pending (``--retry-inconclusive``).
    Inside an nbgrader course, with no ``roster``, the course's gradebook is the roster, and its
    due dates, extensions and late penalty fill grades.csv (:mod:`autograder.results.gradebook`).
    ``nbgrader_feedback``: also write each feedback page into that nbgrader
    ``feedback/`` folder (see :func:`write_nbgrader_feedback`).  ``exports``: gradebook
    formats written beside ``grades.csv`` (``canvas``, ``moodle``), with ``roster`` and
    ``assignment_ids`` (see :mod:`autograder.results.exporters`).  ``run`` grades the
    batch: by default :func:`grade_here`, ``workers`` at a time; a Dask cluster's is
    :func:`autograder.frontends.distributed_grade.grade_on_cluster`'s."""
    batch = plan(submissions, out, assignment=assignment, source=source, force=force, limits=limits,
                 isolate=isolate, progress_stream=progress_stream, nbgrader_feedback=nbgrader_feedback,
                 limit_overrides=limit_overrides, students=students, retry_inconclusive=retry_inconclusive)
    if batch.course is not None and (roster is None or not roster.people):
        roster = gradebook.read_roster(batch.course)  # inside a course, its gradebook names the students
    skipped = [Row(sub.student, sub.assignment, Results(output=sub.skip), read_timestamp(sub.folder))
               for sub in batch.unknown]
    for sub in batch.unknown:
        print(f"skipped {sub.student}/{sub.assignment}: {sub.skip}", file=progress_stream, flush=True)
    batch.progress.show()
    run = run or partial(grade_here, workers=workers)
    try:
        batch.record_skipped(progress_stream)
        run(batch)
        again = batch.second_tries()
        if again:
            print(f"speed was inconclusive in {len(again)} submission(s); grading each again by itself",
                  file=progress_stream, flush=True)
            batch.progress.total += len(again)
        for one in again:  # one at a time: nothing else of this batch shares the machine
            run(one)
    finally:  # also after Ctrl-C: grades.csv holds what finished
        rows = _write_exports(batch, skipped, exports, roster, assignment_ids)
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


def _write_exports(batch: Batch, skipped: list[Row], exports: list[str] | None, roster: Roster | None,
                   assignment_ids: dict[str, str] | None) -> list[Row]:
    """grades.csv and the ``exports`` from every result on disk under ``batch.out`` (the record
    that survives an interruption, and what earlier runs graded: another assignment, other
    students), plus ``skipped``'s rows in grades.csv; each file replaced atomically."""
    rows = []
    for student, assignment, _path, results in graded_files(batch.out):
        if student.startswith(".") or assignment.startswith(".") or results is None:
            continue  # None: half-written, graded again next time
        stamp = read_timestamp(batch.submissions / student / assignment) if batch.submissions else ""
        rows.append(Row(student, assignment, results, stamp))
    columns: list[str] = []
    for name in sorted({r.assignment for r in rows} | set(batch.assignments)):
        if name in batch.assignments:
            parts = batch.assignments[name].part_names
        else:  # graded by an earlier run: its results list its parts in the source's order
            parts = [t.name for r in rows if r.assignment == name for t in r.results.tests]
        columns += [p for p in dict.fromkeys(parts) if p not in columns]
    rows += _not_submitted(rows, batch.assignments, roster)
    if batch.course is not None:
        gradebook.fill_rows(batch.course, rows)
    graded = Graded(rows, columns, skipped=skipped)
    for fmt in [exporters.DEFAULT_FORMAT, *(f for f in exports or [] if f != exporters.DEFAULT_FORMAT)]:
        exporters.write(graded, fmt, batch.out / exporters.EXPORTERS[fmt].filename, roster=roster,
                        assignment_ids=assignment_ids)
    return [*graded.rows, *graded.skipped]


def _not_submitted(rows: list[Row], assignments: dict[str, Assignment], roster: Roster | None) -> list[Row]:
    """A 0 row, status ``missing``, for each rostered student with no result of an assignment
    that has results (as nbgrader's gradebook gives a 0); none without a roster.  Not written
    as a results.json: a later submission is graded as any other."""
    if roster is None or not roster.people:
        return []
    have = {(r.student, r.assignment) for r in rows}
    missing = []
    for name in sorted({r.assignment for r in rows}):
        if name in assignments:
            parts = assignments[name].parts
        else:
            first = next(r for r in rows if r.assignment == name)
            parts = [GradedPart(t.name, t.max_score) for t in first.results.tests]
        for student in sorted(roster.people):
            if (student, name) not in have:
                results = zero_results(parts, NOT_SUBMITTED.format(assignment=name), status="missing")
                missing.append(Row(student, name, results))
    return missing


NOT_SUBMITTED = "no submission: the roster lists this student, who has no {assignment} folder in the submissions"
SUMMARY_COLUMNS = ("graded", "pending", "manual", "failed to run", "missing", "skipped")
_COUNTED = {"graded": "graded", "pending": "pending", "manual": "manual", "error": "failed to run",
            "missing": "missing", "skipped": "skipped"}


def summary_table(rows: list[Row]) -> str:
    """One line per assignment of ``rows`` (grades.csv's): how many submissions are graded,
    pending (a speed part undecided), manual (a manually graded part waits for an instructor),
    failed to run (``error``), missing (no notebook) and skipped, and their mean score out of the
    assignment's maximum (skipped ones not counted); then the pending submissions by name."""
    by_assignment: dict[str, list[Row]] = {}
    for row in rows:
        by_assignment.setdefault(row.assignment, []).append(row)
    header = ["assignment", *SUMMARY_COLUMNS, "mean"]
    table = [header]
    for name in sorted(by_assignment):
        counts = dict.fromkeys(SUMMARY_COLUMNS, 0)
        scored = []
        for row in by_assignment[name]:
            status = submission_status(row.results)
            counts[_COUNTED[status]] += 1
            if status != "skipped":
                scored.append(row.results)
        maximum = max((r.max_score for r in scored), default=0.0)
        mean = f"{sum(r.score for r in scored) / len(scored):.2f} / {maximum:g}" if scored else "-"
        table.append([name, *(str(counts[c]) for c in SUMMARY_COLUMNS), mean])
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    text = "\n".join("  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in
                               enumerate(zip(line, widths))).rstrip() for line in table)
    pending = sorted(f"{row.student}/{row.assignment}" for row in rows if submission_status(row.results) == "pending")
    if pending:
        shown = ", ".join(pending[:5]) + (f" and {len(pending) - 5} more" if len(pending) > 5 else "")
        text += (f"\npending: the grader could not decide a speed part of {len(pending)} submission"
                 f"{'s' if len(pending) != 1 else ''} ({shown}); `grade --retry-inconclusive` grades them again")
    flagged = sorted(f"{row.student}/{row.assignment}" for row in rows if row.results.review)
    if flagged:
        shown = ", ".join(flagged[:5]) + (f" and {len(flagged) - 5} more" if len(flagged) > 5 else "")
        text += (f"\nflagged for review: {len(flagged)} submission{'s' if len(flagged) != 1 else ''} ({shown}); "
                 "`python -m autograder report` lists the lines and why")
    return text
