"""Shared fixtures: repository paths, notebook runs, GPU marker handling, and how the
suite is shared between pytest-xdist's workers (``make test`` runs one per core)."""
from __future__ import annotations

import os
import sys
import time
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


def batch_workers() -> int:
    """How many notebooks a test's batch grades at a time: the cores this pytest process
    may use (all of them alone; its share beside pytest-xdist's other workers), at least 1.
    A batch is graded the way ``grade --workers N`` grades a class, and the machine is never
    asked to run more notebooks at once than it has cores."""
    cores = len(os.sched_getaffinity(0))
    return max(1, cores // int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))


def graded_together(request, grade, param: str = "name", workers: int | None = None):
    """``grade(value)`` for this test's ``param``.  The first time one is asked for, every
    selected test of the same function is graded, ``workers`` (default :func:`batch_workers`)
    at a time (as `grade --workers 2` grades a class); each test then gets its own result, or
    its own exception.  Every test of one function runs on one xdist worker (:func:`xdist_group`)."""
    workers = workers or batch_workers()
    function = request.node.function
    key = (function.__module__, function.__qualname__)
    if key not in _TOGETHER:
        from concurrent.futures import ThreadPoolExecutor

        values = list(dict.fromkeys(item.callspec.params[param] for item in request.session.items
                                    if getattr(item, "function", None) is function and hasattr(item, "callspec")))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            _TOGETHER[key] = {value: pool.submit(grade, value) for value in values}
    return _TOGETHER[key][request.node.callspec.params[param]].result()


def is_sandbox_kernel(proc) -> bool:
    """A sandboxed kernel: ``python -m ipykernel_launcher`` when cold, named ``ag-kernel`` when forked warm."""
    from autograder.grading.sandbox_kernel import WARM_KERNEL_NAME

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


# Test modules whose tests are graded in batches (``graded_together``, the catalogue): their
# groups are per test function and assignment, so the batches spread over the workers.
BATCHED_MODULES = ("tests/grading/test_assignments.py", "tests/grading/test_onednn_matrix.py")


def xdist_group(item) -> str:
    """The pytest-xdist group ``item`` runs in (``--dist loadgroup``: a group runs whole on one
    worker).  Every book test shares one built book and the custom-op build folder: one group.
    A batched module's tests group by function and assignment (a batch grades all of its
    function's selected tests at once).  Any other test runs with the rest of its module,
    so a module's fixtures (a class graded once, a started server) are set up once."""
    module = item.nodeid.split("::")[0]
    if module.startswith("tests/book/"):
        return "tests/book"
    if module in BATCHED_MODULES:
        params = getattr(item, "callspec", None)
        assignment = params.params.get("assignment") if params else None
        return "::".join(filter(None, (module, item.originalname, assignment)))
    return module


def pytest_xdist_auto_num_workers(config) -> int:
    """``-n auto``: one worker per core this process may use (at most 8: each imports TensorFlow)."""
    return max(1, min(len(os.sched_getaffinity(0)), 8))


def slow_groups_first(items: list) -> list:
    """``items`` with the groups holding a ``slow`` test first, each group's tests together and
    in their order: xdist hands out whole groups in this order (``--no-loadscope-reorder``),
    so the long ones start at once and the many short ones fill in at the end."""
    groups: dict[str, int] = {}
    slow: set[str] = set()
    for item in items:
        group = xdist_group(item)
        groups.setdefault(group, len(groups))
        if item.get_closest_marker("slow"):
            slow.add(group)
    position = {id(item): n for n, item in enumerate(items)}
    return sorted(items, key=lambda item: (xdist_group(item) not in slow, groups[xdist_group(item)], position[id(item)]))


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups (its hook is registered later)
def pytest_collection_modifyitems(config, items):
    items[:] = slow_groups_first(items)
    for item in items:
        item.add_marker(pytest.mark.xdist_group(xdist_group(item)))
    if not any(item.get_closest_marker("gpu") for item in items):
        return
    if _has_gpu():
        return
    skip = pytest.mark.skip(reason="needs a GPU: TensorFlow sees none on this machine (run `make gpu-check` on one)")
    for item in items:
        if item.get_closest_marker("gpu"):
            item.add_marker(skip)
