"""The session's one book build (tests/book/book_build.py): the untimed tests run beside it,
every other test waits for it to end, its readers run last, and nothing of it outlives
the session; with the switch off it runs in the foreground."""
from __future__ import annotations

import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests import conftest
from tests.book.book_build import BookBuild
from tests.conftest import BOOK_BUILD, in_build_order

pytestmark = pytest.mark.untimed


@pytest.fixture
def background_allowed(monkeypatch):
    """These tests are of the background build itself: a run with the switch off still runs them."""
    monkeypatch.delenv("BOOK_BUILD_IN_BACKGROUND", raising=False)


def _python(code: str) -> list[str]:
    return [sys.executable, "-c", textwrap.dedent(code)]


def _item(name: str, fixtures=(), untimed: bool = False, config=None, book_compiles: bool = False):
    markers = {"untimed": untimed, "book_compiles": book_compiles}
    return SimpleNamespace(name=name, fixturenames=list(fixtures), config=config,
                           get_closest_marker=lambda wanted: object() if markers.get(wanted) else None)


def test_untimed_tests_come_first_then_the_rest_then_the_readers_each_in_their_order():
    items = [_item("a", ["tmp_path"]), _item("b", ["built_book"]), _item("c", untimed=True),
             _item("d", ["book_build_done"]), _item("e"), _item("f", untimed=True), _item("g", ["built_book"])]
    assert [i.name for i in in_build_order(items)] == ["c", "f", "a", "e", "b", "d", "g"]


def test_untimed_tests_that_share_the_books_compiles_come_last_of_the_untimed():
    items = [_item("ops1", untimed=True, book_compiles=True), _item("a", untimed=True), _item("t"),
             _item("ops2", untimed=True, book_compiles=True), _item("b", untimed=True), _item("r", ["built_book"])]
    assert [i.name for i in in_build_order(items)] == ["a", "b", "ops1", "ops2", "t", "r"]


def test_a_timed_test_waits_for_a_running_build_and_an_untimed_one_does_not(tmp_path, background_allowed):
    build = BookBuild(_python("import time; time.sleep(1.5); print('built')"), cwd=tmp_path)
    config = SimpleNamespace(stash={BOOK_BUILD: build})
    try:
        assert build.start() is True
        conftest.pytest_runtest_setup(_item("untimed", untimed=True, config=config))
        assert build.running, "an untimed test must not wait for the build"
        conftest.pytest_runtest_setup(_item("timed", config=config))
        assert build.proc.poll() == 0 and build.waited > 0.5
    finally:
        build.stop()


def test_the_background_build_returns_its_output_when_waited_for(tmp_path, background_allowed):
    build = BookBuild(_python("print('built')"), cwd=tmp_path)
    try:
        assert build.start() is True and build.in_background
        assert build.wait() == (0, "built\n")
        deadline = time.monotonic() + 10
        while build.running and time.monotonic() < deadline:
            time.sleep(0.05)
        assert build.finished is not None
    finally:
        build.stop()


def test_the_switch_builds_in_the_foreground_when_asked(monkeypatch, tmp_path):
    monkeypatch.setenv("BOOK_BUILD_IN_BACKGROUND", "0")
    build = BookBuild(_python("print('built')"), cwd=tmp_path)
    try:
        assert build.start() is False and build.proc is None and not build.running
        assert build.wait() == (0, "built\n")
    finally:
        build.stop()


def test_a_failed_build_returns_its_status_and_output(tmp_path, background_allowed):
    build = BookBuild(_python("import sys; print('chapter 3 failed'); sys.exit(3)"), cwd=tmp_path)
    try:
        build.start()
        assert build.wait() == (3, "chapter 3 failed\n")
    finally:
        build.stop()


def test_stop_ends_the_build_and_a_child_in_a_session_of_its_own(tmp_path, background_allowed):
    """A kernel the build starts runs in a new session (jupyter_client starts it so)."""
    pid_file = tmp_path / "child"
    build = BookBuild(_python(f"""
        import subprocess, time
        child = subprocess.Popen(["sleep", "600"], start_new_session=True)
        open({str(pid_file)!r}, "w").write(str(child.pid))
        time.sleep(600)
    """), cwd=tmp_path)
    build.start()
    deadline = time.monotonic() + 60
    while not pid_file.exists() or not pid_file.read_text():
        assert time.monotonic() < deadline, "the build never started its child"
        time.sleep(0.05)
    child = int(pid_file.read_text())
    build.stop()
    assert build.proc.poll() is not None
    assert not Path(f"/proc/{child}").exists() or Path(f"/proc/{child}/stat").read_text().split()[2] == "Z"
    assert not build.log.exists()


def test_no_untimed_module_calls_a_speed_check():
    """``untimed`` is a promise the scheduling relies on: a module that measures a speedup may not make it."""
    tests = Path(conftest.__file__).parent
    offenders = [str(path.relative_to(tests)) for path in sorted(tests.rglob("test_*.py"))
                 if "pytest.mark.untimed" in (text := path.read_text())
                 and any(f"{name}(" in text for name in ("measure_speedup", "assert_speedup",
                                                         "measure_relative_speedup", "assert_relative_speedup"))]
    assert offenders == [], f"marked untimed but measuring speed: {offenders}"
