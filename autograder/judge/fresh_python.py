"""Fresh Python processes for the judge's checks, forked warm.

A check that must see a learner's SavedModel without the exporter's Python state
(:mod:`autograder.checks.savedmodel`) runs it in a fresh ``python -I`` process, and pays about
4 s of ``import tensorflow`` for each.  In the judge, which checks one submission after another,
such a process is forked instead from a zygote (``python -I -m autograder.judge.fresh_python FD``)
that imported TensorFlow and the checks once and did nothing else.  The child takes its
environment and folder from the request, its module and arguments from its stdin, and is the
process :func:`autograder.checks.clean_subprocess.run_module` would have started: isolated mode,
the same ``sys.path``, TensorFlow's runtime not yet started (the zygote refuses to serve if it
has), a NumPy seed of its own.  :func:`install` makes ``run_module`` use it; the judge does at
start, a learner's kernel never does.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from autograder import forking
from autograder.checks import clean_subprocess

_PRELOADED_ENV: dict[str, str] = {}  # what the zygote's imports put in os.environ
_POOL = forking.ZygotePool(size=1)


def _preload() -> None:
    import numpy  # noqa: F401
    import tensorflow  # noqa: F401

    from autograder.checks import savedmodel  # noqa: F401


def _become_module(request: bytes, fds: list[int]) -> None:
    def body() -> int:
        import runpy

        import numpy

        forking.become_child(request, fds, "ag-fresh-python", _PRELOADED_ENV)
        job = json.loads(sys.stdin.read())
        numpy.random.seed()  # the zygote's global RandomState would be every child's
        sys.argv = [job["module"], *job["args"]]
        try:
            runpy.run_module(job["module"], run_name="__main__", alter_sys=True)
        except SystemExit as stop:
            return stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        return 0

    forking.run_child(body)


def run_module(module: str, args: list[str], *, env: dict[str, str], timeout: float,
               cwd: str) -> clean_subprocess.Finished:
    """:func:`autograder.checks.clean_subprocess.run_module`, forked from the zygote for ``env``
    (started on first use); a fresh interpreter where no zygote can start or fork."""
    def start() -> forking.Zygote:
        return forking.Zygote(lambda fd: clean_subprocess.python_argv("autograder.judge.fresh_python", [fd]),
                              env, Path(tempfile.gettempdir()) / "ag-fresh-python", "ag-fresh-python-",
                              "fresh-process zygote")

    with tempfile.TemporaryFile() as stderr:
        try:
            child = _POOL.spawn(forking.env_key(env), start, Path(cwd), env, stderr)
        except OSError:
            return clean_subprocess.run_new_interpreter(module, args, env=env, timeout=timeout, cwd=cwd)
        out: list[bytes] = []
        reader = threading.Thread(target=lambda: out.append(child.stdout.read()), daemon=True)
        reader.start()
        child.stdin.write(json.dumps({"module": module, "args": args}).encode())
        child.stdin.close()
        reader.join(timeout)  # its stdout ends when it does; the pipe is read before wait() closes it
        if reader.is_alive():
            child.kill()
            child.wait()
            raise subprocess.TimeoutExpired([module, *args], timeout)
        child.wait()
        stderr.seek(0)
        return clean_subprocess.Finished(None, b"".join(out).decode("utf-8", "replace"),
                                         stderr.read().decode("utf-8", "replace"))


def close() -> None:
    """Stop the zygote and remove its folder (the judge does as it ends)."""
    _POOL.close_all()


def install() -> None:
    """Fork the judge's fresh processes (unless ``AUTOGRADER_KERNELS=cold``)."""
    if forking.warm_enabled():
        clean_subprocess.RUNNER = run_module


if __name__ == "__main__":
    raise SystemExit(forking.run_zygote(sys.argv[1:], "ag-fresh-zygote", _preload, _become_module, _PRELOADED_ENV))
