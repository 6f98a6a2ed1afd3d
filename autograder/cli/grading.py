"""The instructor's commands: ``grade`` (a class), ``export`` (gradebooks), ``report`` (where a
class fails) and ``gradescope`` / ``gradescope-run`` (an autograder for Gradescope)."""
from __future__ import annotations

import argparse
import importlib.util
import json
import signal
import sys
from pathlib import Path

import autograder
from autograder.errors import UsageError


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


def add_grade(sub) -> None:
    from autograder.sandbox.host import Limits

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
    from autograder.results.exporters import DEFAULT_FORMAT, EXPORTERS
    from autograder.frontends.grade import grade, nbgrader_feedback_target, summary_table
    from autograder.submission.limits import Limits, with_overrides
    from autograder.results.results import submission_status

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
            from autograder.frontends.distributed_grade import grade_on_cluster
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
    from autograder.results.exporters import parse_assignment_ids, parse_formats, read_roster

    return parse_formats(formats), read_roster(args.roster), parse_assignment_ids(args.assignment_id)


def _warn_not_in_roster(missing: list[str]) -> None:
    if missing:
        shown = ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")
        print(f"warning: {len(missing)} student(s) not in the roster ({shown}); their rows use the nbgrader "
              "student id", file=sys.stderr)


def add_export(sub) -> None:
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
    from autograder.results.exporters import DEFAULT_FORMAT, write_export

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


def add_report(sub) -> None:
    from autograder.report.similarity import DEFAULT_THRESHOLD

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
    from autograder.report.class_report import build_report
    from autograder.report.report_page import write_report

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
        from autograder.report.similarity import find_similar

        if report.source is None:
            raise UsageError("--similarity ignores the released template, so it needs --source (the source folder)")
        report.similarity = find_similar(args.submissions, report.source, list(report.assignments), args.threshold)
        report.similarity_threshold = args.threshold
    paths = write_report(report, args.out)
    print(f"wrote {paths[0]} and {len(paths) - 1} CSV files ({sum(len(a.totals) for a in report.assignments.values())} "
          f"graded submissions" + (f", {len(report.similarity)} similar pair(s)" if args.similarity else "") + ")")
    if formats:
        from autograder.results.exporters import EXPORTERS, write_export

        folder = Path(args.out) if args.out else Path(args.graded)
        for fmt in formats:
            written = write_export(args.graded, fmt, roster=roster, assignment_ids=assignment_ids,
                                   submissions=args.submissions, path=folder / EXPORTERS[fmt].filename)
            print(f"wrote {written.path} ({fmt}, {written.rows} graded submission(s))")
        _warn_not_in_roster(written.not_in_roster)
    return 0


def add_gradescope(sub) -> None:
    parser = sub.add_parser("gradescope", help="build a Gradescope autograder zip for an assignment")
    parser.add_argument("assignment", help="assignment name (a folder under the source folder)")
    parser.add_argument("--out", default="autograder.zip", help="zip to write (default %(default)s)")
    parser.add_argument("--source", help="nbgrader source folder (default: ./solutions)")
    _add_visibility(parser)
    parser.set_defaults(func=_gradescope)


def _add_visibility(parser: argparse.ArgumentParser) -> None:
    from autograder.frontends.gradescope import VISIBILITIES

    parser.add_argument("--hidden-visibility", default="after_published", choices=VISIBILITIES,
                        help="Gradescope visibility of parts whose tests include hidden tests "
                        "(default %(default)s: students see those scores once grades are published)")


def _gradescope(args: argparse.Namespace) -> int:
    from autograder.frontends.gradescope import build_zip

    path = build_zip(args.assignment, args.out, source_root=args.source, hidden_visibility=args.hidden_visibility)
    print(f"wrote {path}: upload it as the Gradescope autograder for {args.assignment}")
    return 0


def add_gradescope_run(sub) -> None:
    parser = sub.add_parser("gradescope-run", help="(run_autograder calls this) grade /autograder/submission")
    parser.add_argument("assignment")
    parser.add_argument("--submission", type=Path, default=Path("/autograder/submission"))
    parser.add_argument("--results", type=Path, default=Path("/autograder/results/results.json"))
    parser.add_argument("--source", type=Path, default=Path("/autograder/source/source"))
    _add_visibility(parser)
    parser.set_defaults(func=_gradescope_run)


def _gradescope_run(args: argparse.Namespace) -> int:
    from autograder.frontends.gradescope import grade_gradescope

    try:
        grade_gradescope(args.assignment, args.submission, args.results, args.source,
                         hidden_visibility=args.hidden_visibility)
    except Exception:  # grade_gradescope has written a results.json saying why
        return 1
    return 0
