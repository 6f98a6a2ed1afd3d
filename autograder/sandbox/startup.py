"""The grader's own start-up, counted apart from a submission's execution time.

A submission's ``execution_time`` would otherwise carry what the grader starts for it: the
first submission of a run waits for the worker zygote's imports (TensorFlow among them,
:mod:`autograder.sandbox.warm_start`) and for its judge's start (locked cells, reference
solution); a blank notebook graded first took longer than a full one graded next.
:func:`counting` opens a count for the grade running on this thread, the steps that wait for
the grader's own processes add to it with :func:`charged`, and
:func:`autograder.frontends.pipeline.grade_notebook` reports the sum as ``startup_s`` and
takes it out of ``execution_time``.  A grade runs on one thread from start to end (a
``grade`` worker thread, a Dask task), so the count is per thread.
"""
from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator

_LOCAL = threading.local()


@contextmanager
def counting() -> Iterator[Callable[[], float]]:
    """Count the start-up charged on this thread while inside; yields a reader of the seconds."""
    outer = getattr(_LOCAL, "seconds", None)
    _LOCAL.seconds = 0.0
    try:
        yield lambda: _LOCAL.seconds
    finally:
        if outer is None:
            del _LOCAL.seconds
        else:
            _LOCAL.seconds = outer


@contextmanager
def charged() -> Iterator[None]:
    """Time what runs inside as the grader's start-up (nothing is counted outside :func:`counting`)."""
    started = time.perf_counter()
    try:
        yield
    finally:
        if getattr(_LOCAL, "seconds", None) is not None:
            _LOCAL.seconds += time.perf_counter() - started
