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
regrades everything).  A submission that breaks a limit or crashes is scored,
never fatal, and runs in its own tree, so it cannot change a neighbour's score.
"""
from __future__ import annotations

import json
import os
import stat
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

from autograder.grading import exporters, feedback, pipeline, sandbox
from autograder.errors import UsageError
from autograder.atomic import write_atomic
from autograder.grading.exporters.base import Graded, Roster, Row, read_timestamp
from autograder.grading.results import Results



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


def read_results(path: Path) -> Results | None:
    try:
        return Results.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError, KeyError):
        return None


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


def grade(submissions: Path | str, out: Path | str, *, workers: int | None = None, assignment: str | None = None,
          source: Path | str | None = None, force: bool = False, limits: sandbox.Limits = sandbox.Limits(),
          isolate: bool = True, progress_stream=sys.stderr,
          nbgrader_feedback: Path | str | None = None, exports: list[str] | None = None,
          roster: Roster | None = None, assignment_ids: dict[str, str] | None = None) -> list[Row]:
    """Grade every submission under ``submissions`` into ``out``; return the CSV rows.
    ``nbgrader_feedback``: also write each feedback page into that nbgrader
    ``feedback/`` folder (see :func:`write_nbgrader_feedback`).  ``exports``: gradebook
    formats written beside ``grades.csv`` (``canvas``, ``moodle``), with ``roster`` and
    ``assignment_ids`` (see :mod:`autograder.grading.exporters`)."""
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
    workers = max(1, workers or os.cpu_count() or 1)
    hidden = sorted({source_root, submissions, out})
    sandbox.sweep_stale()  # what a grader killed with -9 could not clean up
    todo = [sub for sub in subs if force or needs_grading(out, sub)]
    out.mkdir(parents=True, exist_ok=True)
    progress = Progress(len(todo), len(subs) - len(todo), progress_stream)
    progress.show()
    stopping = threading.Event()

    def task(sub: Submission) -> None:
        results = pipeline.grade_notebook(sub.notebook, assignments[sub.assignment], limits=limits,
                                          hidden_dirs=hidden, isolate=isolate, problem=sub.problem)
        if stopping.is_set():
            return  # killed by Ctrl-C: not a real grade, grade it again next time
        _write(out, sub, results, Path(nbgrader_feedback) if nbgrader_feedback else None)
        progress.update(bool(results.output))

    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="grade")
    try:
        pending = {pool.submit(task, sub) for sub in todo}
        while pending:
            finished, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
            for future in finished:
                future.result()
    except BaseException:
        stopping.set()
        pool.shutdown(wait=False, cancel_futures=True)
        sandbox.stop_all()
        pool.shutdown(wait=True)
        _write_exports(out, subs, assignments, exports, roster, assignment_ids)
        raise
    pool.shutdown(wait=True)
    return _write_exports(out, subs, assignments, exports, roster, assignment_ids)


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
