"""Run a Python program with TensorFlow's placement logging on.

``python -m autograder.checks.placement_boot (SCRIPT | -c CODE | -m MODULE) [ARGS...]``
imports TensorFlow with ``TF_CPP_MIN_LOG_LEVEL=0`` (unless already set),
calls ``tf.debugging.set_log_device_placement(True)`` (unless
``AUTOGRADER_LOG_DEVICE_PLACEMENT=0``) and then runs the
program as ``__main__`` the way ``python`` would.  Turning logging on does not
start TensorFlow's runtime, so the program can still configure devices
(logical devices, memory growth) first.  :func:`autograder.checks.placement.capture_command`
uses this; it is rarely run by hand.
"""
from __future__ import annotations

import os
import runpy
import sys

from autograder.checks.placement import PLACEMENT_ENV

USAGE = "usage: python -m autograder.checks.placement_boot (SCRIPT | -c CODE | -m MODULE) [ARGS...]"


def main(argv: list[str]) -> None:
    if not argv or (argv[0] in ("-c", "-m") and len(argv) < 2):
        print(USAGE, file=sys.stderr)
        raise SystemExit(2)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "0")
    import tensorflow as tf

    # capture_command sets the flag to 1; 0 runs the program with logging left off.
    tf.debugging.set_log_device_placement(os.environ.get(PLACEMENT_ENV, "1") != "0")
    if argv[0] == "-c":
        sys.argv = ["-c", *argv[2:]]
        sys.path.insert(0, "")
        exec(compile(argv[1], "<string>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})  # noqa: S102
    elif argv[0] == "-m":
        sys.argv = [argv[1], *argv[2:]]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:
        script = argv[0]
        if not os.path.exists(script):
            print(f"error: no such script: {script}", file=sys.stderr)
            raise SystemExit(2)
        sys.argv = list(argv)
        # ``python script.py`` puts the script's folder first on sys.path.
        sys.path[0] = os.path.dirname(os.path.abspath(script))
        runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
