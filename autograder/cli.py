"""The command line: ``python -m autograder COMMAND ...`` (or ``autograder COMMAND``).

The one command-line module: every command's arguments and its few lines of
glue live here; the work is done by library functions in ``checks/``,
``grading/`` and ``course/``, which never import this module.  Exit codes:
0 success (for ``check``: every test that ran passed), 1 a check or part fell short, 2 a usage
error (one line on stderr, never a traceback), 3 (``grade``) graded, but some submissions were
skipped, 130 interrupted.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path
from typing import Callable

import autograder
from autograder.errors import UsageError

EXAMPLES = """examples:
  python -m autograder doctor                      what this machine can check
  python -m autograder check exercises/04_xla/04_xla.ipynb
                                                   run your notebook's visible tests; exit 0 when all pass
  python -m autograder check NOTEBOOK --part test-xla-step
                                                   re-check one part
  python -m autograder init-course ~/tfcourse --course-id tf-gpu-2026
                                                   start an nbgrader course (config and sources)
  python -m autograder grade submitted/ --out graded/   grade a class (nbgrader layout)
  python -m autograder grade submitted/ --out graded/ --scheduler tcp://HOST:8786
                                                   the same on a Dask cluster (the book: Grading on a cluster)
  python -m autograder report graded/              where the class fails: graded/report.html
  python -m autograder gradescope 04_xla --out 04_xla.zip --hidden-visibility after_published
"""
CHECK_EXAMPLES = """examples:
  python -m autograder check exercises/03_mixed_precision/03_mixed_precision.ipynb
  python -m autograder check my.ipynb --part test-train-step --part test-choose-policy
  python -m autograder check my.ipynb --json > results.json
  python -m autograder check my.ipynb && echo "every visible test passes"
  python -m autograder check my.ipynb --source solutions/03_mixed_precision/03_mixed_precision.ipynb

what runs: a released notebook (exercises/) holds the visible tests only; nbgrader removed the
hidden ones, which run when your instructor grades. The report's first and last lines say which
tests ran ("visible tests: 8/10; hidden tests run when your instructor grades"), as does --json's
extra_data.tests_run. With --source (the instructor's copy) every test runs, hidden included.

exit status: 0 every test that ran passed (on a released notebook: the visible tests, which is
not your grade), 1 a part fell short, 2 usage error
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m autograder",
        description="Check and grade the TensorFlow-on-the-GPU course exercises.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {autograder.__version__}")
    parser.add_argument(
        "--profile",
        help="hardware profile to judge against (cpu, gpu-cc7, gpu-cc8, gpu-cc9, gpu-cc10); "
        "default: detected from this machine",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for add in (_add_doctor, _add_check, _add_placement, _add_bench, _add_roofline, _add_grade,
                _add_export, _add_report, _add_gradescope, _add_gradescope_run, _add_release, _add_init_course,
                _add_serve, _add_trace):
        add(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.profile:
            _set_profile(args.profile)
        func: Callable[[argparse.Namespace], int] = args.func
        return func(args)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def _set_profile(name: str) -> None:
    from autograder.checks.hardware import KNOWN_PROFILES, PROFILE_ENV

    if name not in KNOWN_PROFILES:
        raise UsageError(f"unknown profile {name!r}; use one of {', '.join(KNOWN_PROFILES)}")
    os.environ[PROFILE_ENV] = name


# --- doctor ---------------------------------------------------------------------------

def _add_doctor(sub) -> None:
    parser = sub.add_parser("doctor", help="describe this machine and which checks will run here")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(func=_doctor)


def _doctor(args: argparse.Namespace) -> int:
    from autograder.grading.doctor import format_report, machine_report

    report = machine_report()
    print(json.dumps(report, indent=2) if args.json else format_report(report))
    return 0


# --- check ----------------------------------------------------------------------------

def _add_check(sub) -> None:
    from autograder.grading.sandbox import Limits

    parser = sub.add_parser(
        "check", help="run your notebook's tests in a fresh kernel; exit 0 when every test that ran passed",
        description="Run a notebook in a fresh kernel through the same pipeline as `grade` and "
        "print which tests ran, one line per graded part and the score of what ran.",
        epilog=CHECK_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("notebook", help="path to the .ipynb notebook")
    parser.add_argument("--part", action="append", metavar="ID",
                        help="check only this graded part (its test cell's grade_id); repeatable")
    parser.add_argument("--source", help="source notebook with the tests, hidden ones included: the instructor's "
                        "copy (default: the notebook itself, whose visible tests only run when it is a release)")
    parser.add_argument("--json", action="store_true",
                        help="print Gradescope's results.json shape (what ran: extra_data.tests_run)")
    parser.add_argument("--cell-timeout", type=float, default=None,
                        help=f"seconds one cell may run (default: as grade, the course's grading.toml, else "
                        f"{Limits.cell_timeout_s:g})")
    parser.set_defaults(func=_check)


def _check(args: argparse.Namespace) -> int:
    from autograder.grading.check import check_notebook, format_results, full_marks

    if args.cell_timeout is not None and args.cell_timeout <= 0:
        raise UsageError("--cell-timeout must be a positive number of seconds")
    checked = check_notebook(args.notebook, source=args.source, parts=args.part, cell_timeout_s=args.cell_timeout)
    print(checked.to_json() if args.json else format_results(checked))
    return 0 if full_marks(checked.results) else 1


# --- placement ------------------------------------------------------------------------

PLACEMENT_TIMEOUT_S = 600.0


def _add_placement(sub) -> None:
    parser = sub.add_parser(
        "placement",
        usage="python -m autograder placement [--json] [--timeout S] "
        "(SCRIPT.py [ARGS...] | -- python ARGS... | --parse FILE)",
        help="capture or read a placement log and say which device each op ran on",
        description="Run a Python script or command with TensorFlow's placement logging on (or read a "
        "saved log with --parse) and print, per op type, the devices it ran on and the Python calls "
        "that typically produce it. Exit 0 when placement lines were found, 1 when none were or the "
        "command failed or ran out of time.",
    )
    parser.add_argument("--parse", metavar="FILE", help="read a saved log instead of running a command")
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    parser.add_argument("--timeout", type=float, default=PLACEMENT_TIMEOUT_S, metavar="S",
                        help=f"stop the command after S seconds (default {PLACEMENT_TIMEOUT_S:g})")
    parser.add_argument(
        "command", nargs=argparse.REMAINDER,
        help="SCRIPT.py [ARGS] or, after --, a python command (python script.py, python -c CODE, python -m MODULE)",
    )
    parser.set_defaults(func=_placement)


def _placement(args: argparse.Namespace) -> int:
    from autograder.checks.placement import Capture, capture_command

    command = list(args.command)
    if command[:1] == ["--"]:
        command = command[1:]
    if args.parse and command:
        raise UsageError("give either --parse FILE or a command to run, not both")
    if args.parse:
        path = Path(args.parse)
        if not path.exists():
            raise UsageError(f"no such log file: {path} (save one with: python script.py > run.log 2>&1)")
        if not path.is_file():
            raise UsageError(f"{path} is not a file: give the path of a saved placement log")
        capture = Capture.from_text(path.read_text(encoding="utf-8", errors="replace"))
        return _placement_report(capture, args.parse, as_json=args.json, ran_command=False)
    if not command:
        raise UsageError("nothing to do: give a script (placement SCRIPT.py), a command "
                         "(placement -- python -c CODE) or a saved log (placement --parse FILE)")
    if command[0].endswith(".py") and not Path(command[0]).is_file():
        raise UsageError(f"no such script: {command[0]}")
    try:
        capture = capture_command(command, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        print(f"error: the command ran longer than {args.timeout:g} s; raise --timeout or run less", file=sys.stderr)
        return 1
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    except FileNotFoundError:
        raise UsageError(f"cannot run {command[0]!r}: no such program") from None
    return _placement_report(capture, shlex.join(command), as_json=args.json, ran_command=True)


def _placement_report(capture, source: str, *, as_json: bool, ran_command: bool) -> int:
    status = capture.result if ran_command else None
    rows = capture.summary()
    if as_json:
        print(json.dumps({"source": source, "returncode": status, "lines": len(capture.records),
                          "ops": [row.to_dict() for row in rows]}, indent=2))
    elif rows:
        eager = sum(r.kind == "eager" for r in capture.records)
        print(f"{source}: {len(rows)} op types from {eager} eager and "
              f"{len(capture.records) - eager} graph placement lines")
        print(capture.summary_table())
    if status:
        tail = [line for line in capture.stderr.splitlines() if line.strip()][-5:]
        print(f"the command exited with status {status}; last lines of its stderr:", file=sys.stderr)
        for line in tail:
            print(f"  {line}", file=sys.stderr)
        return 1
    if not rows:
        hint = ("the command ran no TensorFlow ops" if ran_command
                else "save the log with both streams: python script.py > run.log 2>&1")
        print(f"no placement lines found in {source}: {hint}", file=sys.stderr)
        return 1
    return 0


# --- bench and roofline -------------------------------------------------------------

def _add_bench(sub) -> None:
    parser = sub.add_parser(
        "bench", help="time the book's benchmark pairs and write a results JSON file",
        description="Time every registered benchmark pair (baseline vs faster version) and write "
        "ratios with confidence intervals and machine metadata to one JSON file. "
        "Exit 1 if a pair fails its threshold or errors.")
    parser.add_argument("--out", metavar="FILE",
                        help="where to write the JSON (default: book/data/results/<gpu-or-host>-<date>.json)")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run only these pairs")
    parser.add_argument("--budget", type=float, default=20.0, metavar="S",
                        help="seconds of timed trials per pair before a verdict is 'inconclusive' (default 20)")
    parser.set_defaults(func=_bench)


def _bench(args: argparse.Namespace) -> int:
    from autograder.course.bench import run_benchmarks, select

    if args.budget <= 0:
        raise UsageError(f"--budget must be a positive number of seconds, got {args.budget:g}")
    select(args.only)  # report unknown names before TensorFlow starts
    out = Path(args.out) if args.out else None
    if out is not None and out.is_dir():
        raise UsageError(f"--out {args.out} is a directory; give a file name such as {args.out}/results.json")
    path, data = run_benchmarks(args.only, budget_s=args.budget, out=out)
    print(f"wrote {path}")
    verdicts = [p["verdict"] for p in data["pairs"].values()]
    if "inconclusive" in verdicts:
        print("some pairs were inconclusive: re-run on a quieter machine or with a larger --budget", file=sys.stderr)
    return 1 if {"fail", "error"} & set(verdicts) else 0


def _add_roofline(sub) -> None:
    parser = sub.add_parser(
        "roofline", help="measure this machine's memory bandwidth and matmul throughput",
        description="Probe the memory bandwidth (large elementwise copy and add, GB/s) and the matmul "
        "throughput per dtype (GFLOP/s) that TensorFlow reaches on one device: the limits the "
        "book's speedups are compared with.")
    parser.add_argument("--device", help="device to probe, e.g. /CPU:0 or /GPU:0 (default: /GPU:0 if present)")
    parser.add_argument("--repeats", type=int, default=20, help="timed calls per probe; the fastest counts (default 20)")
    parser.add_argument("--json", action="store_true", help="print the probes as JSON")
    parser.set_defaults(func=_roofline)


def _roofline(args: argparse.Namespace) -> int:
    from autograder.course.roofline import format_peaks, measure_peaks

    if args.repeats < 1:
        raise UsageError(f"--repeats must be at least 1, got {args.repeats}")
    if args.device is not None and not args.device.upper().lstrip("/").startswith(("CPU:", "GPU:")):
        raise UsageError(f"--device must look like /CPU:0 or /GPU:0, got {args.device!r}")
    try:
        peaks = measure_peaks(args.device, repeats=args.repeats)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    print(json.dumps(peaks.to_dict(), indent=2) if args.json else format_peaks(peaks))
    return 0


# --- grade ----------------------------------------------------------------------------

GRADE_EPILOG = """examples:
  python -m autograder grade submitted/ --out graded/
  python -m autograder grade submitted/ --out graded/ --assignment 03_mixed_precision
  python -m autograder grade submitted/ --out graded/ --student bob --student carol --force
  python -m autograder grade submitted/ --out graded/ --retry-inconclusive

grades.csv (and each --export) always covers every results.json under --out, whatever was graded
this time; its status column is one keyword (graded, pending, manual, error, missing, skipped) and
its message column says why: pending is a speed part the grader could not decide (not a 0;
--retry-inconclusive grades those again), manual a manually graded part (nbgrader grade: true,
solution: true, no test) counted in max_score and waiting for nbgrader's formgrader. Inside an
nbgrader course (SUBMISSIONS is its submitted/, beside nbgrader_config.py) the source folder,
students' names, due dates, extensions and late penalty come from the course and its gradebook.
A folder that names no assignment of the source folder, or a notebook that is another
exercise's, is named on stderr, skipped (a `skipped` row) and the rest graded.

exit status: 0 every submission found was graded; 2 usage error (nothing graded); 3 graded,
but grades.csv holds skipped submissions (named on stderr); 130 interrupted
"""
EXIT_SKIPPED = 3


def _add_grade(sub) -> None:
    from autograder.grading.sandbox import Limits

    parser = sub.add_parser("grade", help="grade a class's submissions, each in its own sandbox",
                            epilog=GRADE_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("submissions", help="nbgrader's submitted/ folder: <student>/<assignment>/<notebook>.ipynb")
    parser.add_argument("--out", required=True, help="folder for grades.csv and per-submission results")
    parser.add_argument("--workers", type=int, default=None, help="submissions graded at once (default: CPU cores)")
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="grade on the Dask cluster whose scheduler is at ADDRESS (tcp://HOST:8786), one task "
                        "per submission; its workers need only `pip install` of this package")
    parser.add_argument("--assignment", help="grade only this assignment")
    parser.add_argument("--student", action="append", metavar="ID",
                        help="grade only this student's submissions (their folder's name; repeatable), again "
                        "where they are graded already; grades.csv keeps everyone's rows")
    parser.add_argument("--source", help="nbgrader source folder with the tests (default: the course's "
                        "source_directory when SUBMISSIONS is an nbgrader course's submitted/, else ./solutions)")
    parser.add_argument("--force", action="store_true", help="regrade submissions that already have results")
    parser.add_argument("--retry-inconclusive", action="store_true",
                        help="grade again only the submissions left pending (a speed part the grader could not "
                        "decide), e.g. later, on a quieter machine; the rest is left as graded")
    parser.add_argument("--nbgrader-feedback", nargs="?", const="auto", metavar="DIR",
                        help="also write feedback where `nbgrader release_feedback` finds it (DIR default: the "
                        "course's feedback/ folder; on by default when SUBMISSIONS is an nbgrader course's submitted/ "
                        "and --out lies inside that course)")
    parser.add_argument("--no-nbgrader-feedback", action="store_true",
                        help="leave the course's feedback/ folder alone, even when grading inside the course")
    parser.add_argument("--cell-timeout", type=float, default=None,
                        help=f"seconds one cell may run (default: the course's grading.toml, else "
                        f"{Limits.cell_timeout_s:g})")
    parser.add_argument("--notebook-timeout", type=float, default=None,
                        help=f"seconds a whole notebook may run (default: grading.toml, else "
                        f"{Limits.notebook_timeout_s:g})")
    parser.add_argument("--memory-mb", type=int, default=None,
                        help=f"memory per submission in MB (default: grading.toml, else {Limits.memory_mb})")
    parser.add_argument("--export", action="append", metavar="FORMAT",
                        help="also write this LMS gradebook beside grades.csv: canvas, moodle (repeatable or "
                        "comma-separated; nbgrader's grades.csv is always written)")
    _add_export_options(parser)
    parser.set_defaults(func=_grade)


def _grade(args: argparse.Namespace) -> int:
    from autograder.grading.exporters import DEFAULT_FORMAT, EXPORTERS
    from autograder.grading.grade import grade, nbgrader_feedback_target, summary_table
    from autograder.grading.limits import Limits, with_overrides
    from autograder.grading.results import submission_status

    if args.workers is not None and args.workers < 1:
        raise UsageError("--workers must be at least 1")
    if args.retry_inconclusive and args.force:
        raise UsageError("--retry-inconclusive grades only the pending submissions and --force all of them; give one")
    if args.workers is not None and args.scheduler:
        raise UsageError("--workers and --scheduler do not go together: on a cluster, its workers' threads "
                         "say how many submissions run at once")
    formats, roster, assignment_ids = _export_settings(args, args.export)  # bad input fails before grading
    overrides = {"cell_timeout_s": args.cell_timeout, "notebook_timeout_s": args.notebook_timeout,
                 "memory_mb": args.memory_mb}
    with_overrides(Limits(), overrides)  # a bad value fails before grading, in one line
    feedback_dir, feedback_note = nbgrader_feedback_target(args.submissions, args.out, args.nbgrader_feedback,
                                                           args.no_nbgrader_feedback)

    def on_term(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_term)
    if args.scheduler:
        from functools import partial

        try:
            from autograder.grading.distributed_grade import grade_on_cluster
        except ModuleNotFoundError as exc:
            raise UsageError(f"--scheduler needs Dask ({exc.name} is not installed): pip install "
                             "'tf-gpu-course-autograder[cluster]' (in a checkout: pip install '.[cluster]')") from None
        grade = partial(grade_on_cluster, args.scheduler)
    try:
        rows = grade(args.submissions, args.out, workers=args.workers, assignment=args.assignment,
                     source=args.source, force=args.force, limit_overrides=overrides, nbgrader_feedback=feedback_dir,
                     exports=formats, roster=roster, assignment_ids=assignment_ids, students=args.student,
                     retry_inconclusive=args.retry_inconclusive)
    finally:
        signal.signal(signal.SIGTERM, previous)
    names = [EXPORTERS[f].filename for f in dict.fromkeys([DEFAULT_FORMAT, *formats])]
    print(f"wrote {', '.join(str(Path(args.out) / n) for n in names)}: {len(rows)} submission(s)"
          + (f"; nbgrader feedback in {feedback_dir}" if feedback_dir else ""))
    print(summary_table(rows))
    if feedback_note:
        print(f"note: {feedback_note}", file=sys.stderr)
    _warn_not_in_roster(roster.missing(sorted({r.student for r in rows})))
    skipped = [r for r in rows if submission_status(r.results) == "skipped"]
    for row in skipped:
        print(f"skipped {row.student}/{row.assignment}: {' '.join(row.results.output.split())}", file=sys.stderr)
    return EXIT_SKIPPED if skipped else 0


# --- export ---------------------------------------------------------------------------

EXPORT_EPILOG = """examples:
  python -m autograder export graded/ --format canvas --roster roster.csv
  python -m autograder export graded/ --format canvas,moodle --assignment-id 01_op_logs=4757
  python -m autograder export graded/ --format nbgrader --submissions submitted/

formats: nbgrader (grades.csv: nbgrader export's columns, one row per student and assignment),
canvas (grades_canvas.csv: Canvas's Grades > Import CSV), moodle (grades_moodle.csv: Moodle's
Import > CSV file; map Username to username, ID number to useridnumber or Email address to
useremail). The roster CSV has nbgrader's student-import columns (id, first_name, last_name,
email, lms_user_id) and optionally sis_user_id, sis_login_id, section; only id is required.
"""


def _add_export_options(parser: argparse.ArgumentParser) -> None:
    """The options every command that writes a gradebook takes (grade, export)."""
    parser.add_argument("--roster", metavar="CSV",
                        help="map nbgrader student ids to LMS users: columns id (required), first_name, last_name, "
                        "email, lms_user_id, sis_user_id, sis_login_id, section")
    parser.add_argument("--assignment-id", action="append", metavar="NAME=ID",
                        help="the LMS's id of an assignment (Canvas: the number in its URL); repeatable")


def _export_settings(args: argparse.Namespace, formats: list[str] | None):
    """The formats, roster and assignment ids asked for, checked (a usage error on bad input)."""
    from autograder.grading.exporters import parse_assignment_ids, parse_formats, read_roster

    return parse_formats(formats), read_roster(args.roster), parse_assignment_ids(args.assignment_id)


def _warn_not_in_roster(missing: list[str]) -> None:
    if missing:
        shown = ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")
        print(f"warning: {len(missing)} student(s) not in the roster ({shown}); their rows use the nbgrader "
              "student id", file=sys.stderr)


def _add_export(sub) -> None:
    parser = sub.add_parser(
        "export", help="write a graded folder's grades as an nbgrader, Canvas or Moodle gradebook CSV",
        description="Read OUT/<student>/<assignment>/results.json (a `grade --out OUT` folder) and write one "
        "gradebook file per format, atomically.",
        epilog=EXPORT_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("graded", metavar="OUT", help="the --out folder of a `grade` run")
    parser.add_argument("--format", action="append", metavar="FORMAT",
                        help="nbgrader (default), canvas or moodle; repeatable or comma-separated")
    parser.add_argument("--out", metavar="FILE", help="file to write (one format only; default: OUT/<format's file>)")
    parser.add_argument("--submissions", metavar="DIR",
                        help="nbgrader's submitted/ folder, for the nbgrader format's timestamp column")
    _add_export_options(parser)
    parser.set_defaults(func=_export)


def _export(args: argparse.Namespace) -> int:
    from autograder.grading.exporters import DEFAULT_FORMAT, write_export

    formats, roster, assignment_ids = _export_settings(args, args.format or [DEFAULT_FORMAT])
    if args.out and len(formats) > 1:
        raise UsageError(f"--out names one file but {len(formats)} formats were asked for; drop --out "
                         "(each format has its own file name) or export one format at a time")
    missing: list[str] = []
    for fmt in formats:
        written = write_export(args.graded, fmt, roster=roster, assignment_ids=assignment_ids,
                               submissions=args.submissions, path=args.out)
        print(f"wrote {written.path} ({fmt}, {written.rows} graded submission(s))")
        missing = written.not_in_roster
    _warn_not_in_roster(missing)
    return 0


# --- report ---------------------------------------------------------------------------

REPORT_EPILOG = """examples:
  python -m autograder report graded/                       graded/report.html and four CSV files
  python -m autograder report graded/ --instructor          also name failing hidden tests by their line
  python -m autograder report graded/ --similarity --submissions submitted/ [--threshold 0.8]
  python -m autograder report graded/ --export canvas --roster roster.csv

writes report.html (one self-contained page: plots embedded), report_parts.csv (per part: counts by
status, pass rate), report_failures.csv (failure messages grouped, counted), report_speedups.csv
(every measured speedup against the reference solution's) and report_review.csv (the submissions
flagged for review: part, cell, line and why; never shown to learners). Hidden tests never appear without
--instructor. --similarity compares answer cells with copydetect, the released template ignored,
and lists the pairs at or above --threshold on the page and in report_similarity.csv.
"""


def _add_report(sub) -> None:
    from autograder.grading.similarity import DEFAULT_THRESHOLD

    parser = sub.add_parser(
        "report", help="a class report from a graded folder: where learners fail, speedups, similar pairs",
        description="Read OUT/<student>/<assignment>/results.json (a `grade --out OUT` folder) and write "
        "one HTML page and CSV files: per assignment and part the score distribution, pass rate and "
        "grouped failure messages, the measured speedups, the slowest and stopped submissions.",
        epilog=REPORT_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("graded", metavar="OUT", help="the --out folder of a `grade` run")
    parser.add_argument("--out", metavar="DIR", help="folder for the report (default: OUT)")
    parser.add_argument("--source", help="nbgrader source folder (default: ./solutions when it exists)")
    parser.add_argument("--instructor", action="store_true",
                        help="name failing hidden tests by their line in the source (never share this page)")
    parser.add_argument("--similarity", action="store_true",
                        help="list pairs of submissions whose answer cells are alike (needs --submissions)")
    parser.add_argument("--submissions", metavar="DIR", help="the folder `grade` read, for --similarity")
    parser.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD,
                        help="similarity from which a pair is listed, 0-1 (default %(default)s)")
    parser.add_argument("--export", action="append", metavar="FORMAT",
                        help="also write this LMS gradebook into the report folder: nbgrader, canvas, moodle")
    _add_export_options(parser)
    parser.set_defaults(func=_report)


def _report(args: argparse.Namespace) -> int:
    from autograder.grading.class_report import build_report
    from autograder.grading.report_page import write_report

    if args.similarity and not args.submissions:
        raise UsageError("--similarity reads the answer cells: give --submissions DIR (the folder `grade` read)")
    for module in ("matplotlib", "copydetect") if args.similarity else ("matplotlib",):
        if importlib.util.find_spec(module) is None:
            raise UsageError(f"the report needs {module}: pip install 'tf-gpu-course-autograder[report]' "
                             "(or pip install -r requirements.txt in a checkout)")
    formats, roster, assignment_ids = _export_settings(args, args.export)
    source = args.source or ("solutions" if Path("solutions").is_dir() else None)
    report = build_report(args.graded, source=source, instructor=args.instructor)
    if args.similarity:
        from autograder.grading.similarity import find_similar

        if report.source is None:
            raise UsageError("--similarity ignores the released template, so it needs --source (the source folder)")
        report.similarity = find_similar(args.submissions, report.source, list(report.assignments), args.threshold)
        report.similarity_threshold = args.threshold
    paths = write_report(report, args.out)
    print(f"wrote {paths[0]} and {len(paths) - 1} CSV files ({sum(len(a.totals) for a in report.assignments.values())} "
          f"graded submissions" + (f", {len(report.similarity)} similar pair(s)" if args.similarity else "") + ")")
    if formats:
        from autograder.grading.exporters import EXPORTERS, write_export

        folder = Path(args.out) if args.out else Path(args.graded)
        for fmt in formats:
            written = write_export(args.graded, fmt, roster=roster, assignment_ids=assignment_ids,
                                   submissions=args.submissions, path=folder / EXPORTERS[fmt].filename)
            print(f"wrote {written.path} ({fmt}, {written.rows} graded submission(s))")
        _warn_not_in_roster(written.not_in_roster)
    return 0


# --- Gradescope -----------------------------------------------------------------------

def _add_gradescope(sub) -> None:
    parser = sub.add_parser("gradescope", help="build a Gradescope autograder zip for an assignment")
    parser.add_argument("assignment", help="assignment name (a folder under the source folder)")
    parser.add_argument("--out", default="autograder.zip", help="zip to write (default %(default)s)")
    parser.add_argument("--source", help="nbgrader source folder (default: ./solutions)")
    _add_visibility(parser)
    parser.set_defaults(func=_gradescope)


def _add_visibility(parser: argparse.ArgumentParser) -> None:
    from autograder.grading.gradescope import VISIBILITIES

    parser.add_argument("--hidden-visibility", default="after_published", choices=VISIBILITIES,
                        help="Gradescope visibility of parts whose tests include hidden tests "
                        "(default %(default)s: students see those scores once grades are published)")


def _gradescope(args: argparse.Namespace) -> int:
    from autograder.grading.gradescope import build_zip

    path = build_zip(args.assignment, args.out, source_root=args.source, hidden_visibility=args.hidden_visibility)
    print(f"wrote {path}: upload it as the Gradescope autograder for {args.assignment}")
    return 0


def _add_gradescope_run(sub) -> None:
    parser = sub.add_parser("gradescope-run", help="(run_autograder calls this) grade /autograder/submission")
    parser.add_argument("assignment")
    parser.add_argument("--submission", type=Path, default=Path("/autograder/submission"))
    parser.add_argument("--results", type=Path, default=Path("/autograder/results/results.json"))
    parser.add_argument("--source", type=Path, default=Path("/autograder/source/source"))
    _add_visibility(parser)
    parser.set_defaults(func=_gradescope_run)


def _gradescope_run(args: argparse.Namespace) -> int:
    from autograder.grading.gradescope import grade_gradescope

    try:
        grade_gradescope(args.assignment, args.submission, args.results, args.source,
                         hidden_visibility=args.hidden_visibility)
    except Exception:  # grade_gradescope has written a results.json saying why
        return 1
    return 0


# --- course tools ---------------------------------------------------------------------

def _add_init_course(sub) -> None:
    parser = sub.add_parser(
        "init-course", help="start an nbgrader course folder: nbgrader_config.py and the assignments' sources",
        description="Write DIR/nbgrader_config.py (course_id, Exchange.root, source/ and release/ folders) and copy "
        "the assignments' sources (solutions, hidden tests, data) into DIR/source/; then run nbgrader in DIR.")
    parser.add_argument("folder", metavar="DIR", help="the new course's folder")
    parser.add_argument("--course-id", required=True, help="nbgrader's course_id (the exchange's folder name)")
    parser.add_argument("--exchange", default="/srv/nbgrader/exchange",
                        help="nbgrader's Exchange.root, shared with the students (default %(default)s)")
    parser.add_argument("--assignment", action="append", metavar="NAME",
                        help="copy only this assignment (repeatable; default: all of solutions/)")
    parser.set_defaults(func=_init_course)


def _init_course(args: argparse.Namespace) -> int:
    from autograder.course.new_course import init_course

    written = init_course(args.folder, course_id=args.course_id, exchange=args.exchange, assignments=args.assignment)
    print(f"wrote {written[0]} and {len(written) - 1} source folder(s) in {Path(args.folder) / 'source'}; "
          f"next: cd {args.folder} && nbgrader generate_assignment NAME")
    return 0


def _add_release(sub) -> None:
    parser = sub.add_parser("release", help="generate exercises/ from solutions/ with nbgrader")
    parser.add_argument("assignments", nargs="+", help="assignment names under solutions/")
    parser.add_argument("--into", type=Path, help="release folder (default: exercises/)")
    parser.set_defaults(func=_release)


def _release(args: argparse.Namespace) -> int:
    from autograder.course.release import generate

    generate(args.assignments, release_dir=args.into)
    return 0


def _add_serve(sub) -> None:
    parser = sub.add_parser("serve", help="serve a SavedModel over TF Serving's REST API on 127.0.0.1")
    parser.add_argument("--model-dir", required=True, help="the SavedModel directory")
    parser.add_argument("--model-name", default="model", help="the <name> in /v1/models/<name>")
    parser.add_argument("--port", type=int, default=8501,
                        help="port on 127.0.0.1 (0: any free port; the default is TF Serving's REST port)")
    parser.add_argument("--port-file", help="write the bound port here once listening")
    parser.set_defaults(func=_serve)


def _serve(args: argparse.Namespace) -> int:
    from autograder.checks.serving import serve

    if not (Path(args.model_dir) / "saved_model.pb").exists():
        raise UsageError(f"{args.model_dir!r} is not a SavedModel directory (no saved_model.pb)")
    serve(args.model_dir, args.model_name, args.port_file, args.port)
    return 0


def _add_trace(sub) -> None:
    parser = sub.add_parser("trace", help="print the op table of a TensorFlow profiler trace")
    parser.add_argument("trace", help="a profiler logdir (newest run is read) or an .xplane.pb file")
    parser.add_argument("--by", choices=("type", "name"), default="type", help="group by op type or node name")
    parser.add_argument("--top", type=int, default=15, help="rows to print (default %(default)s)")
    parser.add_argument("--plane", default=None, help="only planes whose name starts with this, e.g. /device:GPU")
    parser.set_defaults(func=_trace)


def _trace(args: argparse.Namespace) -> int:
    from autograder.checks.profiler_trace import TraceNotFound, find_xplane, format_table, op_table

    path = Path(args.trace)
    try:
        if not path.exists():
            raise TraceNotFound(f"{path} does not exist")
        file = find_xplane(path) if path.is_dir() else path
        rows = op_table(file, by=args.by, plane=args.plane)
    except (TraceNotFound, ValueError) as error:
        raise UsageError(str(error)) from None
    print(f"{file}  ({sum(r.count for r in rows)} op executions)")
    print(format_table(rows, top=args.top))
    return 0
