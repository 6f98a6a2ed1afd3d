"""Shared fixtures: repository paths, notebook runs, GPU marker handling."""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from tests import lanes

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
    ``workers`` at a time, handed out by :class:`autograder.grading.turns.Turns` (values of one
    ``key``, an assignment, are kept to one worker while another assignment is free), then each
    result with an inconclusive speed part once more, alone (:func:`autograder.grading.grade.grade`'s
    second try)."""
    from concurrent.futures import Future

    from autograder.grading.grade import timing_inconclusive
    from autograder.grading.results import Results
    from autograder.grading.turns import Turns, run_in_turns

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


# --- the book build: one per session, beside the untimed tests, its readers last ----------

BOOK_BUILD = pytest.StashKey()
LANE = pytest.StashKey()  # tests/lanes.py: the Helper (in the session) or InHelper (in the helper)
TIMED = pytest.StashKey()  # the TimedPhase of the session's tests that are not marked untimed
MACHINE = pytest.StashKey()  # the MachineCPU of the session: what the whole machine did meanwhile
READS_THE_BOOK = ("built_book", "book_build_done")  # fixtures of tests/book/conftest.py


def reads_the_book(item) -> bool:
    return any(name in getattr(item, "fixturenames", ()) for name in READS_THE_BOOK)


def untimed(item) -> bool:
    """Marked ``untimed``: it times nothing and grades no speed part, so it may run beside the book build."""
    return item.get_closest_marker("untimed") is not None


def after_the_books_compiles(item) -> bool:
    """Marked ``book_compiles``: it compiles what the book's chapter 7 compiles (same cache), so it
    runs last of the untimed tests, when the build has compiled those (or is compiling them: a
    build waits on the other's lock instead of compiling the same thing again)."""
    return item.get_closest_marker("book_compiles") is not None


def in_build_order(items: list) -> list:
    """``items`` in three groups, order kept within each: the untimed tests (they run while the
    session's book build does; those that share the book's compiles last), the rest (each waits
    for the build to end), then the tests that read the built book."""
    readers = [reads_the_book(item) for item in items]
    first = [i for i, r in zip(items, readers) if not r and untimed(i)]
    first = [i for i in first if not after_the_books_compiles(i)] + [i for i in first if after_the_books_compiles(i)]
    then = [i for i, r in zip(items, readers) if not r and not untimed(i)]
    return first + then + [i for i, r in zip(items, readers) if r]


def shares_a_lane(item) -> bool:
    """Whether the helper lane may run it (tests/lanes.py): untimed, not after the book's compiles,
    not a reader of the book."""
    return untimed(item) and not after_the_books_compiles(item) and not reads_the_book(item)


def pytest_collection_finish(session):
    if not session.config.option.collectonly:
        _start_the_helper_lane(session)
    if session.config.option.collectonly or not any("built_book" in getattr(item, "fixturenames", ())
                                                    for item in session.items):
        return
    from tests.book.book_build import BookBuild

    build = BookBuild([sys.executable, str(ROOT / "book" / "build_book.py"), "build", ".", "--builder", "html",
                       "-W", "-n", "--keep-going"], cwd=ROOT)
    session.config.stash[BOOK_BUILD] = build
    build.start()


def _start_the_helper_lane(session) -> None:
    if lanes.in_helper():  # its reports go to the session through the plugin's hooks
        session.config.stash[LANE] = lane = lanes.InHelper(session.config, Path(os.environ[lanes.HELPER_ENV]))
        session.config.pluginmanager.register(lane, "course-helper-lane")
        return
    shared = [item for item in session.items if shares_a_lane(item)]
    if lanes.wanted(session.config, shared):
        session.config.stash[LANE] = lanes.Helper(session.config, shared)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    """In a session with a helper lane, a test the helper ran is reported from its reports; in the
    helper, a test of a module the session claimed is passed over."""
    lane = item.config.stash.get(LANE, None)
    if isinstance(lane, lanes.Helper) and lane.owns(item):
        lane.replay(item, nextitem)
        return True
    if isinstance(lane, lanes.InHelper) and not lane.runs(item):
        item.session._setupstate.teardown_exact(nextitem)
        return True
    return None


class TimedPhase:
    """When the tests that may time something ran: the first one's start (once the book build and
    the helper lane had ended) and the last one's end, from the session's start."""

    def __init__(self) -> None:
        self.session_start = time.monotonic()
        self.count, self.first, self.last = 0, None, None

    def began(self) -> None:
        self.count += 1
        if self.first is None:
            self.first = time.monotonic()

    def ended(self) -> None:
        self.last = time.monotonic()

    def summary(self) -> str:
        if self.first is None or self.last is None:
            return "timed tests: none ran"
        return (f"timed tests: {self.count}, from {self.first - self.session_start:.0f} s after the session "
                f"began, for {self.last - self.first:.0f} s")


class MachineCPU:
    """What the whole machine's CPUs did over the session (``/proc/stat``, through psutil), in
    core-seconds: busy (every process on it, the kernel's threads too), idle (waiting on disk
    counted as idle) and taken by the hypervisor (steal), beside the wall time and the cores."""

    BUSY = ("user", "nice", "system", "irq", "softirq")  # Linux counts guest time inside user and nice

    def __init__(self, read=None, clock=time.monotonic) -> None:
        import psutil

        self.read, self.clock = read or psutil.cpu_times, clock
        self.cores = psutil.cpu_count() or 1
        self.start, self.started = self.read(), self.clock()

    def spent(self) -> dict[str, float]:
        """Core-seconds busy, idle and stolen since the session began, and the wall seconds."""
        now, wall = self.read(), self.clock() - self.started
        delta = {name: getattr(now, name, 0.0) - getattr(self.start, name, 0.0)
                 for name in (*self.BUSY, "idle", "iowait", "steal")}
        return {"busy": sum(delta[name] for name in self.BUSY), "idle": delta["idle"] + delta["iowait"],
                "steal": delta["steal"], "wall": wall}

    def summary(self) -> str:
        spent = self.spent()
        return (f"machine CPU: {spent['busy']:.0f} core-s busy, {spent['idle']:.0f} idle, {spent['steal']:.0f} "
                f"taken by the hypervisor, in {spent['wall']:.0f} s on {self.cores} cores")


def pytest_sessionstart(session):
    if not lanes.in_helper():  # the helper runs no timed test, and the session counts the whole machine
        session.config.stash[TIMED] = TimedPhase()
        session.config.stash[MACHINE] = MachineCPU()


def pytest_runtest_setup(item):
    """A test that may time something does not share the CPU with the book build or the helper
    lane: it waits for both to end."""
    build = item.config.stash.get(BOOK_BUILD, None)
    if build is not None and build.running and not untimed(item):
        build.wait()
    lane = item.config.stash.get(LANE, None)
    if isinstance(lane, lanes.Helper) and not untimed(item):
        lane.wait()
    timed = item.config.stash.get(TIMED, None)
    if timed is not None and not untimed(item):
        timed.began()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item):
    try:
        return (yield)  # the test's fixtures that end with it end here
    finally:
        timed = item.config.stash.get(TIMED, None)
        if timed is not None and not untimed(item):
            timed.ended()


def pytest_sessionfinish(session):
    build = session.config.stash.get(BOOK_BUILD, None)
    if build is not None:
        build.stop()
    lane = session.config.stash.get(LANE, None)
    if lane is not None:
        lane.close()
    fresh = sys.modules.get("autograder.judge.fresh_python")
    if fresh is not None:  # the fresh-process zygote the checks' tests started, and its folder
        fresh.close()


def pytest_terminal_summary(terminalreporter, config):
    lane = config.stash.get(LANE, None)
    if lane is not None and not isinstance(lane, lanes.InHelper):
        terminalreporter.write_line(lane.summary())
    build = config.stash.get(BOOK_BUILD, None)
    if build is not None and build.finished is not None:
        where = "beside the untimed tests" if build.in_background else "in the foreground"
        terminalreporter.write_line(f"book build: {where}, {build.finished - build.started:.0f} s; the first test "
                                    f"that needed it to end waited {build.waited:.0f} s for it")
    timed = config.stash.get(TIMED, None)
    if timed is not None:
        terminalreporter.write_line(timed.summary())
    machine = config.stash.get(MACHINE, None)
    if machine is not None:
        terminalreporter.write_line(machine.summary())


def pytest_collection_modifyitems(config, items):
    items[:] = in_build_order(items)
    if lanes.in_helper():
        items[:] = lanes.in_helper_order(items)
    if not any(item.get_closest_marker("gpu") for item in items):
        return
    if _has_gpu():
        return
    skip = pytest.mark.skip(reason="needs a GPU: TensorFlow sees none on this machine (run `make gpu-check` on one)")
    for item in items:
        if item.get_closest_marker("gpu"):
            item.add_marker(skip)
