"""The session's one book build (tests/book/conftest.py): run to its end in the foreground, its
status and output returned for the failure message, and nothing of it outlives an interrupted
or timed-out build."""
from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.book.conftest import BUILD, reads_the_book, run_build


def _python(code: str) -> list[str]:
    return [sys.executable, "-c", textwrap.dedent(code)]


def test_the_build_is_make_books():
    makefile = (Path(__file__).resolve().parents[2] / "Makefile").read_text()
    recipe = next(line for line in makefile.splitlines() if "book/build_book.py" in line and "$(BIN)" in line)
    assert recipe.split("book/build_book.py", 1)[1].split() == BUILD[2:]


def test_a_build_returns_its_status_and_output(tmp_path):
    assert run_build(_python("print('built')"), tmp_path, tmp_path / "log") == (0, "built\n")


def test_a_failed_build_returns_its_status_and_output(tmp_path):
    code, output = run_build(_python("import sys; print('chapter 3 failed'); sys.exit(3)"), tmp_path, tmp_path / "log")
    assert (code, output) == (3, "chapter 3 failed\n")


def test_a_timed_out_build_ends_with_a_child_in_a_session_of_its_own(tmp_path):
    """A kernel the build starts runs in a new session (jupyter_client starts it so)."""
    pid_file = tmp_path / "child"
    argv = _python(f"""
        import subprocess, time
        child = subprocess.Popen(["sleep", "600"], start_new_session=True)
        open({str(pid_file)!r}, "w").write(str(child.pid))
        time.sleep(600)
    """)
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        run_build(argv, tmp_path, tmp_path / "log", timeout=5)
    assert time.monotonic() - started < 60
    assert pid_file.read_text(), "the build never started its child"
    child = int(pid_file.read_text())
    assert not Path(f"/proc/{child}").exists() or Path(f"/proc/{child}/stat").read_text().split()[2] == "Z"


def test_only_a_session_with_a_reader_of_the_built_book_builds_it():
    reader, other = SimpleNamespace(fixturenames=["built_book"]), SimpleNamespace(fixturenames=["book_build_done"])
    assert reads_the_book([other, reader]) and not reads_the_book([other])
