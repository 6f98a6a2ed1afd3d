"""Warm judges: ``python -I -m autograder.judge.zygote FD tf|plain`` imports what a judge
would (TensorFlow for a TensorFlow assignment, the checks hidden tests use), then forks a
judge (:func:`autograder.judge.process.main`) for each request on the socket FD until the
grader closes it (or dies).  ``judge/client.py`` asks it for judges (see :mod:`autograder.forking`).

A forked judge is the judge a fresh ``python -I -m autograder.judge.process`` would be: its
own session, only its three pipes, exactly its environment and folder.  The zygote holds no
assignment and no submission: the locked cells reach each judge on its own stdin.
"""
from __future__ import annotations

import sys

from autograder.forking import become_child, run_child, run_zygote

_PRELOADED_ENV: dict[str, str] = {}  # what the imports put in os.environ (TensorFlow sets a few)


def _preload(with_tf: bool) -> None:
    """What a judge imports before its first part: its own modules, NumPy, the checks its hidden
    tests use, and TensorFlow when ``with_tf``."""
    import numpy  # noqa: F401

    from autograder.checks import plain, probe, timing  # noqa: F401
    from autograder.judge import process, protocol  # noqa: F401

    if with_tf:
        import tensorflow  # noqa: F401

        from autograder.checks import graph_guard, tracing  # noqa: F401


def _become_judge(request: bytes, fds: list[int]) -> None:
    def body() -> int:
        become_child(request, fds, "ag-judge", _PRELOADED_ENV)
        from autograder.judge import process

        return process.main()

    run_child(body)


def zygote_main(argv: list[str]) -> int:
    """Preload, then fork a judge for each request on the socket ``argv[0]`` until it closes."""
    return run_zygote(argv, "ag-judge-zygote", lambda: _preload(argv[1:2] == ["tf"]), _become_judge, _PRELOADED_ENV)


if __name__ == "__main__":
    raise SystemExit(zygote_main(sys.argv[1:]))
