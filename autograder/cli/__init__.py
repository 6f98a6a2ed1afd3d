"""The command line: ``python -m autograder COMMAND ...`` (or ``autograder COMMAND``).

The one command-line package: every command's arguments and its few lines of
glue live here (the learner's commands in ``learner``, the instructor's in ``grading``, the
course maintainers' in ``course``); the work is done by library functions in ``checks/``,
the engine's folders and ``course/``, which never import this module.  Exit codes:
0 success (for ``check``: every test that ran passed), 1 a check or part fell short, 2 a usage
error (one line on stderr, never a traceback), 3 (``grade``) graded, but some submissions were
skipped, 130 interrupted.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Callable

import autograder
from autograder.cli import course, grading, learner
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
    for add in (learner.add_doctor, learner.add_check, learner.add_placement, course.add_bench, course.add_roofline,
                grading.add_grade, grading.add_export, grading.add_report, grading.add_gradescope,
                grading.add_gradescope_run, course.add_release, course.add_init_course, learner.add_serve,
                learner.add_trace):
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


