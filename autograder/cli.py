"""Command line: ``python -m autograder <command> ...``.

Each subcommand is a thin wrapper over a function with keyword defaults, so a
default lives in one place.  Usage errors exit 2 with one line on stderr;
failed checks exit 1; a graded notebook exits 0 whatever its score.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Callable

from autograder.errors import UsageError

# Each entry is a module that defines ``register(subparsers)``; the parser it
# adds must set ``func`` (a callable taking the parsed args, returning an exit code).
COMMAND_MODULES = (
    "autograder.doctor",
    "autograder.check",
    "autograder.placement_cli",
    "autograder.bench",
    "autograder.roofline",
    "autograder.grade",
    "autograder.gradescope",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m autograder",
        description="Check and grade the TensorFlow-on-the-GPU course exercises.",
    )
    parser.add_argument(
        "--profile",
        help="hardware profile to judge against (cpu, gpu-cc7, gpu-cc8, gpu-cc9, gpu-cc10); "
        "default: detected from this machine",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser




def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.profile:
        from autograder.hardware import KNOWN_PROFILES, PROFILE_ENV

        if args.profile not in KNOWN_PROFILES:
            print(
                f"error: unknown profile {args.profile!r}; use one of {', '.join(KNOWN_PROFILES)}",
                file=sys.stderr,
            )
            return 2
        os.environ[PROFILE_ENV] = args.profile
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return func(args)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
