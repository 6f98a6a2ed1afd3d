"""The learner's commands: ``doctor`` (what this machine can check), ``check`` (a notebook's
visible tests), ``placement`` (where ops ran), ``serve`` and ``trace``."""
from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
from pathlib import Path

import autograder
from autograder.errors import UsageError


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


def add_doctor(sub) -> None:
    parser = sub.add_parser("doctor", help="describe this machine and which checks will run here")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(func=_doctor)


def _doctor(args: argparse.Namespace) -> int:
    from autograder.frontends.doctor import format_report, machine_report

    report = machine_report()
    print(json.dumps(report, indent=2) if args.json else format_report(report))
    return 0


def add_check(sub) -> None:
    from autograder.sandbox.host import Limits

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
    from autograder.frontends.check import check_notebook, format_results, full_marks

    if args.cell_timeout is not None and args.cell_timeout <= 0:
        raise UsageError("--cell-timeout must be a positive number of seconds")
    checked = check_notebook(args.notebook, source=args.source, parts=args.part, cell_timeout_s=args.cell_timeout)
    print(checked.to_json() if args.json else format_results(checked))
    return 0 if full_marks(checked.results) else 1


PLACEMENT_TIMEOUT_S = 600.0


def add_placement(sub) -> None:
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


def add_serve(sub) -> None:
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


def add_trace(sub) -> None:
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
