"""Shared fixtures: repository paths, notebook runs, GPU marker handling."""
from __future__ import annotations

import os
import sys
import time
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOLUTIONS = ROOT / "solutions"
EXERCISES = ROOT / "exercises"


def assignments() -> list[str]:
    return sorted(p.name for p in SOLUTIONS.iterdir() if p.is_dir() and p.name[:2].isdigit())


def notebook_for(folder: Path, name: str) -> Path:
    return folder / name / f"{name}.ipynb"


_TOGETHER: dict = {}


def graded_as_a_batch(values, grade, workers: int = 2, key=None) -> dict:
    """``{value: Future of grade(value)}``, graded as ``grade --workers 2`` grades a class:
    ``workers`` at a time, handed out by :class:`autograder.frontends.work_queue.Turns` (values of one
    ``key``, an assignment, are kept to one worker while another assignment is free), then each
    result with an inconclusive speed part once more, alone (:func:`autograder.frontends.grade.grade`'s
    second try)."""
    from concurrent.futures import Future

    from autograder.frontends.grade import timing_inconclusive
    from autograder.results.results import Results
    from autograder.frontends.work_queue import Turns, run_in_turns

    values = list(values)
    ran, threads = run_in_turns(Turns(values, key or (lambda value: value)), grade, workers, name="graded-as-a-batch")
    for thread in threads:
        thread.join()
    futures = dict(zip(values, ran))
    for value, future in futures.items():
        results = None if future.exception() else getattr(future.result(), "results", future.result())
        if isinstance(results, Results) and timing_inconclusive(results):
            futures[value] = again = Future()
            try:
                again.set_result(grade(value))
            except Exception as exc:  # the test that asked for it gets it
                again.set_exception(exc)
    return futures


def graded_together(request, grade, param: str = "name", workers: int = 2):
    """``grade(value)`` for this test's ``param``.  The first time one is asked for, every
    selected test of the same function is graded by :func:`graded_as_a_batch`; each test
    then gets its own result, or its own exception."""
    function = request.node.function
    key = (function.__module__, function.__qualname__)
    if key not in _TOGETHER:
        values = list(dict.fromkeys(item.callspec.params[param] for item in request.session.items
                                    if getattr(item, "function", None) is function and hasattr(item, "callspec")))
        _TOGETHER[key] = graded_as_a_batch(values, grade, workers)
    return _TOGETHER[key][request.node.callspec.params[param]].result()


def undecided_speed(results, full_marks) -> set[str]:
    """Those of the parts ``full_marks`` names (parts whose answer is right, so they must keep full
    marks) that a speed check left inconclusive, once graded again alone (:func:`graded_as_a_batch`
    and ``grade`` retry such a result once). Load may leave a right answer's speed undecided but never
    decides it wrong, and an undecided part scores 0 whatever the answer, so a test of a right answer
    excuses these (named in a warning) and a wrong answer is never excused: its parts must score 0."""
    wanted = set(full_marks)
    undecided = {t.name for t in results.tests if t.name in wanted and t.status == "inconclusive"}
    if undecided:
        warnings.warn(f"speed left inconclusive after its second try (a busy machine?): {sorted(undecided)}",
                      stacklevel=2)
    return undecided


def is_sandbox_kernel(proc) -> bool:
    """A sandboxed kernel: ``python -m ipykernel_launcher`` when cold, named ``ag-kernel`` when forked warm."""
    from autograder.sandbox.kernel import WARM_KERNEL_NAME

    return "ipykernel_launcher" in " ".join(proc.cmdline()) or proc.name() == WARM_KERNEL_NAME


def still_running(pids: list[int], after_s: float) -> list[int]:
    """Those of ``pids`` still running (not ended, not zombies) once ``after_s`` seconds have
    passed, or as soon as none is."""
    import psutil

    def running(pid: int) -> bool:
        try:
            return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        except psutil.Error:
            return False

    deadline = time.monotonic() + after_s
    alive = [p for p in pids if running(p)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        alive = [p for p in alive if running(p)]
    return alive


def _has_gpu() -> bool:
    # Ask a child process: importing TensorFlow here would slow every collection.
    import subprocess

    code = "import tensorflow as tf; print(len(tf.config.list_physical_devices('GPU')))"
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
        return out.stdout.strip().splitlines()[-1] != "0"
    except Exception:
        return False


def pytest_sessionfinish(session):
    fresh = sys.modules.get("autograder.judge.fresh_python")
    if fresh is not None:  # the fresh-process zygote the checks' tests started, and its folder
        fresh.close()


def pytest_collection_modifyitems(config, items):
    if not any(item.get_closest_marker("gpu") for item in items):
        return
    if _has_gpu():
        return
    skip = pytest.mark.skip(reason="needs a GPU: TensorFlow sees none on this machine (run `make gpu-check` on one)")
    for item in items:
        if item.get_closest_marker("gpu"):
            item.add_marker(skip)
