"""``python -m autograder grade SUBMISSIONS --out DIR``: grade a whole class.

``SUBMISSIONS`` uses nbgrader's layout ``<student>/<assignment>/<notebook>.ipynb``
(an nbgrader ``submitted/`` folder works as is).  Each submission is graded by
:func:`autograder.sandbox.run_submission` in its own sandboxed process tree,
``--workers`` at a time, and gets ``DIR/<student>/<assignment>/results.json``
(Gradescope's shape) and ``feedback.html``; ``DIR/grades.csv`` covers every
graded submission (:mod:`autograder.export`).

Every file is written atomically, results before feedback, and a submission
counts as graded once its ``results.json`` exists: after Ctrl-C, a kill or a
power cut, re-running the command grades only what is missing (``--force``
regrades everything).  A submission that breaks a limit or crashes is scored,
never fatal, and runs in its own tree, so it cannot change a neighbour's score.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

from autograder import export, feedback, sandbox
from autograder import notebook as nbtools
from autograder.errors import UsageError
from autograder.results import Results, write_atomic

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Submission:
    student: str
    assignment: str
    folder: Path
    notebook: Path | None
    problem: str = ""


@dataclass
class Assignment:
    name: str
    source: Path
    data_files: list[Path] = field(default_factory=list)
    parts: list[str] = field(default_factory=list)
    hidden_lines: list[str] = field(default_factory=list)


def find_submissions(root: Path, assignment: str | None = None) -> list[Submission]:
    """Every ``<student>/<assignment>/`` folder under ``root``, sorted."""
    found = []
    for student_dir in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        for folder in sorted(p for p in student_dir.iterdir() if p.is_dir() and not p.name.startswith(".")):
            if assignment and folder.name != assignment:
                continue
            preferred = folder / f"{folder.name}.ipynb"
            notebooks = sorted(p for p in folder.glob("*.ipynb") if not p.name.startswith("."))
            sub = Submission(student_dir.name, folder.name, folder, None)
            if preferred.is_file():
                sub.notebook = preferred
            elif len(notebooks) == 1:
                sub.notebook = notebooks[0]
            elif notebooks:
                sub.problem = (f"{len(notebooks)} notebooks and none named {preferred.name}: "
                               f"{', '.join(p.name for p in notebooks)}; submit {preferred.name}")
            else:
                sub.problem = f"no notebook in the submission; submit {preferred.name}"
            found.append(sub)
    return found


def load_assignment(source_root: Path, name: str) -> Assignment:
    folder = source_root / name
    notebook = folder / f"{name}.ipynb"
    if not notebook.is_file():
        raise UsageError(f"no source notebook {notebook}; --source must hold <assignment>/<assignment>.ipynb")
    source_nb = nbtools.load(notebook)
    data = [p for p in sorted(folder.iterdir())
            if p.suffix != ".ipynb" and not p.name.startswith(".") and p.name != "__pycache__"]
    return Assignment(name, notebook, data, [p.grade_id for p in nbtools.graded_parts(source_nb)],
                      sandbox.hidden_test_lines(source_nb))


def _paths(out: Path, sub: Submission) -> tuple[Path, Path]:
    folder = out / sub.student / sub.assignment
    return folder / "results.json", folder / "feedback.html"


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


def grade_one(sub: Submission, assignment: Assignment, *, limits: sandbox.Limits,
              hidden_dirs: list[Path], isolate: bool) -> Results:
    """Grade one submission (each kernel reports the hardware profile its checks used)."""
    if sub.notebook is None:
        results = Results(notebook=sub.folder.name, output=sub.problem)
        results.tests = [sandbox.TestResult(p, 0.0, 0.0, sub.problem, "visible", "missing") for p in assignment.parts]
        source_parts = {p.grade_id: p.points for p in nbtools.graded_parts(nbtools.load(assignment.source))}
        for test in results.tests:
            test.max_score = source_parts.get(test.name, 0.0)
    else:
        try:
            results = sandbox.run_submission(sub.notebook, assignment.source, limits=limits,
                                             data_files=assignment.data_files, hidden_dirs=hidden_dirs,
                                             isolate=isolate)
        except Exception as exc:  # the grader's own failure must not stop the batch
            message = (f"the grader failed on this submission ({exc.__class__.__name__}: {exc}); "
                       "regrade it with --force")
            parts = nbtools.graded_parts(nbtools.load(assignment.source))
            results = Results(notebook=sub.notebook.name, output=message,
                              tests=[sandbox.TestResult(p.grade_id, 0.0, p.points, message, "visible", "error")
                                     for p in parts])
    results = feedback.redact_hidden(results, assignment.hidden_lines)
    return results


def _write(out: Path, sub: Submission, results: Results) -> None:
    results_path, feedback_path = _paths(out, sub)
    write_atomic(feedback_path, feedback.render_html(results, student=sub.student, assignment=sub.assignment))
    write_atomic(results_path, results.to_json())  # last: its presence marks the submission graded


def grade(submissions: Path | str, out: Path | str, *, workers: int | None = None, assignment: str | None = None,
          source: Path | str | None = None, force: bool = False, limits: sandbox.Limits = sandbox.Limits(),
          isolate: bool = True, progress_stream=sys.stderr) -> list[export.Row]:
    """Grade every submission under ``submissions`` into ``out``; return the CSV rows."""
    submissions, out = Path(submissions).resolve(), Path(out).resolve()
    source_root = Path(source or ROOT / "solutions").resolve()
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
    assignments = {name: load_assignment(source_root, name) for name in sorted({s.assignment for s in subs})}
    workers = max(1, workers or os.cpu_count() or 1)
    hidden = sorted({source_root, (ROOT / "solutions").resolve(), submissions, out})
    sandbox.sweep_stale()  # what a grader killed with -9 could not clean up
    todo = [sub for sub in subs if force or read_results(_paths(out, sub)[0]) is None]
    out.mkdir(parents=True, exist_ok=True)
    progress = Progress(len(todo), len(subs) - len(todo), progress_stream)
    progress.show()
    stopping = threading.Event()

    def task(sub: Submission) -> None:
        results = grade_one(sub, assignments[sub.assignment], limits=limits, hidden_dirs=hidden,
                            isolate=isolate)
        if stopping.is_set():
            return  # killed by Ctrl-C: not a real grade, grade it again next time
        _write(out, sub, results)
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
        _write_csv(out, subs, assignments)
        raise
    pool.shutdown(wait=True)
    return _write_csv(out, subs, assignments)


def _write_csv(out: Path, subs: list[Submission], assignments: dict[str, Assignment]) -> list[export.Row]:
    """grades.csv from the results on disk (the record that survives an interruption)."""
    rows = []
    for sub in subs:
        results = read_results(_paths(out, sub)[0])
        if results is not None:
            rows.append(export.Row(sub.student, sub.assignment, results, export.read_timestamp(sub.folder)))
    columns: list[str] = []
    for name in sorted(assignments):
        columns += [p for p in assignments[name].parts if p not in columns]
    export.write_grades_csv(out / "grades.csv", rows, columns)
    return sorted(rows, key=lambda r: (r.assignment, r.student))


def _run(args: argparse.Namespace) -> int:
    limits = sandbox.Limits(cell_timeout_s=args.cell_timeout, notebook_timeout_s=args.notebook_timeout,
                            memory_mb=args.memory_mb)
    if args.workers is not None and args.workers < 1:
        raise UsageError("--workers must be at least 1")

    def on_term(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_term)
    try:
        rows = grade(args.submissions, args.out, workers=args.workers, assignment=args.assignment,
                     source=args.source, force=args.force, limits=limits)
    finally:
        signal.signal(signal.SIGTERM, previous)
    total = sum(r.results.score for r in rows)
    print(f"graded {len(rows)} submission(s); wrote {Path(args.out) / 'grades.csv'} "
          f"(mean score {total / len(rows):.2f})")
    return 0


def register(subparsers) -> None:
    defaults = sandbox.Limits()
    parser = subparsers.add_parser("grade", help="grade a class's submissions, each in its own sandbox")
    parser.add_argument("submissions", help="nbgrader's submitted/ folder: <student>/<assignment>/<notebook>.ipynb")
    parser.add_argument("--out", required=True, help="folder for grades.csv and per-submission results")
    parser.add_argument("--workers", type=int, default=None, help="submissions graded at once (default: CPU cores)")
    parser.add_argument("--assignment", help="grade only this assignment")
    parser.add_argument("--source", help="nbgrader source folder with the tests (default: solutions/)")
    parser.add_argument("--force", action="store_true", help="regrade submissions that already have results")
    parser.add_argument("--cell-timeout", type=float, default=defaults.cell_timeout_s,
                        help="seconds one cell may run (default %(default)s)")
    parser.add_argument("--notebook-timeout", type=float, default=defaults.notebook_timeout_s,
                        help="seconds a whole notebook may run (default %(default)s)")
    parser.add_argument("--memory-mb", type=int, default=defaults.memory_mb,
                        help="memory per submission in MB (default %(default)s)")
    parser.set_defaults(func=_run)
