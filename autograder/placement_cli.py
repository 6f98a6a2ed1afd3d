"""``python -m autograder placement``: capture or read a placement log and explain it.

    python -m autograder placement [--json] SCRIPT.py [ARGS...]
    python -m autograder placement [--json] -- python -c CODE
    python -m autograder placement [--json] --parse FILE

Prints, per op type, the devices it ran on, how many eager and graph lines
logged it, and the Python calls that typically produce it (``OP_ORIGINS``).
Exit 0 when placement lines were found, 1 when none were or the command
failed or ran out of time, 2 (one line on stderr) for a usage error.
"""
from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
from pathlib import Path

from autograder.errors import UsageError
from autograder.placement import Capture, capture_command

DEFAULT_TIMEOUT_S = 600.0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "placement",
        usage="python -m autograder placement [--json] [--timeout S] "
        "(SCRIPT.py [ARGS...] | -- python ARGS... | --parse FILE)",
        help="capture or read a placement log and say which device each op ran on",
        description="Run a Python script or command with TensorFlow's placement logging on (or read a "
        "saved log with --parse) and print, per op type, the devices it ran on and the Python calls "
        "that typically produce it.",
    )
    parser.add_argument("--parse", metavar="FILE", help="read a saved log instead of running a command")
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    parser.add_argument(
        "--timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="S",
        help=f"stop the command after S seconds (default {DEFAULT_TIMEOUT_S:g})",
    )
    parser.add_argument(
        "command", nargs=argparse.REMAINDER,
        help="SCRIPT.py [ARGS] or, after --, a python command (python script.py, python -c CODE, python -m MODULE)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    command = list(args.command)
    if command[:1] == ["--"]:
        command = command[1:]
    if args.parse and command:
        raise UsageError("give either --parse FILE or a command to run, not both")
    if args.parse:
        capture, source = _read_log(Path(args.parse)), args.parse
    elif command:
        try:
            capture, source = _run_command(command, timeout=args.timeout), shlex.join(command)
        except subprocess.TimeoutExpired:
            print(f"error: the command ran longer than {args.timeout:g} s; raise --timeout or run less",
                  file=sys.stderr)
            return 1
    else:
        raise UsageError(
            "nothing to do: give a script (placement SCRIPT.py), a command (placement -- python -c CODE) "
            "or a saved log (placement --parse FILE)"
        )
    return _report(capture, source, as_json=args.json, ran_command=not args.parse)


def _read_log(path: Path) -> Capture:
    if not path.exists():
        raise UsageError(f"no such log file: {path} (save one with: python script.py > run.log 2>&1)")
    if not path.is_file():
        raise UsageError(f"{path} is not a file: give the path of a saved placement log")
    return Capture.from_text(path.read_text(encoding="utf-8", errors="replace"))


def _run_command(command: list[str], *, timeout: float) -> Capture:
    if command[0].endswith(".py") and not Path(command[0]).is_file():
        raise UsageError(f"no such script: {command[0]}")
    try:
        return capture_command(command, timeout=timeout)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    except FileNotFoundError:
        raise UsageError(f"cannot run {command[0]!r}: no such program") from None


def _report(capture: Capture, source: str, *, as_json: bool, ran_command: bool) -> int:
    status = capture.result if ran_command else None
    rows = capture.summary()
    if as_json:
        print(json.dumps(
            {
                "source": source,
                "returncode": status,
                "lines": len(capture.records),
                "ops": [row.to_dict() for row in rows],
            },
            indent=2,
        ))
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
