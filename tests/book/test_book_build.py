"""The session's one book build (tests/book/book_build.py): its readers run last; in an
idle cgroup it and everything it starts get only spare CPU, and nothing of it outlives
the session; without one it runs in the foreground."""
from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.book.book_build import CPU_CGROUPS, BookBuild, idle_cgroup, members
from tests.conftest import book_readers_last


def _can_make_cgroups() -> bool:
    group = idle_cgroup()
    if group is None:
        return False
    group.rmdir()
    return True


needs_cgroups = pytest.mark.skipif(not _can_make_cgroups(),
                                   reason=f"cannot make a cgroup under {CPU_CGROUPS} (needs root and cgroup v1's cpu)")


@pytest.fixture
def background_allowed(monkeypatch):
    """These tests are of the background build itself: a run with the switch off still runs them."""
    monkeypatch.setenv("BOOK_BUILD_IN_BACKGROUND", "1")


def _python(code: str) -> list[str]:
    return [sys.executable, "-c", textwrap.dedent(code)]


def test_the_tests_that_read_the_book_run_last_in_their_order():
    items = [SimpleNamespace(name=n, fixturenames=f) for n, f in
             [("a", ["tmp_path"]), ("b", ["built_book"]), ("c", []), ("d", ["book_build_done"]), ("e", ["built_book"])]]
    assert [i.name for i in book_readers_last(items)] == ["a", "c", "b", "d", "e"]


def test_without_a_cgroup_the_build_runs_in_the_foreground_when_asked(tmp_path):
    build = BookBuild(_python("print('built')"), cwd=tmp_path, cgroup_root=tmp_path / "no" / "such")
    try:
        assert build.start() is False and build.proc is None
        assert build.wait() == (0, "built\n")
    finally:
        build.stop()


def test_the_switch_turns_the_background_off(monkeypatch, tmp_path):
    monkeypatch.setenv("BOOK_BUILD_IN_BACKGROUND", "0")
    build = BookBuild(_python("print('built')"), cwd=tmp_path, cgroup_root=tmp_path)
    try:
        assert build.start() is False and build.proc is None and list(tmp_path.iterdir()) == []
        assert build.wait() == (0, "built\n")
    finally:
        build.stop()


def test_a_failed_build_returns_its_status_and_output(tmp_path):
    build = BookBuild(_python("import sys; print('chapter 3 failed'); sys.exit(3)"), cwd=tmp_path,
                      cgroup_root=tmp_path / "none")
    try:
        assert build.wait() == (3, "chapter 3 failed\n")
    finally:
        build.stop()


@needs_cgroups
def test_the_build_and_a_child_in_a_new_session_run_in_the_idle_cgroup_and_stop_with_it(tmp_path, background_allowed):
    build = BookBuild(_python("""
        import subprocess, sys
        child = subprocess.Popen(["sleep", "600"], start_new_session=True)
        print(open("/proc/self/cgroup").read(), open(f"/proc/{child.pid}/cgroup").read(), child.pid)
    """), cwd=tmp_path)
    assert build.start() is True
    group = build.group
    code, output = build.wait()
    assert code == 0, output
    assert output.count(f"cpu:/{group.name}\n") == 2, output
    assert (group / "cpu.idle").read_text().strip() == "1" or (group / "cpu.shares").read_text().strip() == "2"
    sleeper = int(output.split()[-1])
    assert members(group) == [sleeper]
    build.stop()
    assert not group.exists()
    assert not Path(f"/proc/{sleeper}").exists() or "Z" in Path(f"/proc/{sleeper}/stat").read_text().split()[2]


def _spin(start: float, end: float) -> list[str]:
    """A process that keeps a core busy until ``end`` (``time.monotonic``, the same clock in
    every process) and prints the CPU seconds it got between ``start`` and ``end``."""
    return _python(f"""
        import time
        while time.monotonic() < {start}:
            pass
        before = time.process_time()
        while time.monotonic() < {end}:
            pass
        print(time.process_time() - before)
    """)


@needs_cgroups
def test_the_idle_cgroup_gets_little_cpu_beside_busy_processes(tmp_path, background_allowed):
    import subprocess
    import time

    start = time.monotonic() + 1.5  # the idle spinner's interpreter starts with no one in its way
    build = BookBuild(_spin(start, start + 2), cwd=tmp_path)
    try:
        build.start()
        time.sleep(0.5)
        busy = [subprocess.Popen(_spin(start, start + 2), stdout=subprocess.PIPE, text=True, start_new_session=True)
                for _ in range(len(os.sched_getaffinity(0)))]
        foreground = [float(p.communicate(timeout=60)[0]) for p in busy]
        code, output = build.wait()
    finally:
        build.stop()
    assert code == 0
    # Side by side in one window: a spinner with a core of its own gets ~2 s; the idle one a sliver.
    assert float(output) < 0.3 * min(foreground), (output, foreground)


@needs_cgroups
def test_two_groups_of_one_process_do_not_collide():
    """The session's own build holds a group while this module's builds make theirs."""
    first, second = idle_cgroup(), idle_cgroup()
    try:
        assert first is not None and second is not None and first != second
    finally:
        for group in (first, second):
            if group is not None:
                group.rmdir()
