"""The built book, shared by every book test: built once per session, in the foreground, by the
first test that needs it, the way `make book` builds it (book/build_book.py: stale pages
executed two at a time, then jupyter-book). After a `make book` of the same tree the build
reuses its work: the execution cache holds every page, so nothing runs again and jupyter-book
renders only the pages whose source changed."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from tests.conftest import ROOT

BUILD = [sys.executable, str(ROOT / "book" / "build_book.py"), "build", ".", "--builder", "html", "-W", "-n",
         "--keep-going"]
BUILD_TIMEOUT_S = 3600
LOG_TAIL = 10000  # characters of the build's output a failure shows


def load_book_script(name: str):
    """``book/<name>.py`` as a module (book/ is not a package), registered in sys.modules
    (dataclasses look their module up there)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "book" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def run_build(argv: list[str], cwd: Path, log: Path, timeout: float = BUILD_TIMEOUT_S) -> tuple[int, str]:
    """(exit status, output) of ``argv`` run to its end with its output in ``log``. If it is
    interrupted or outlives ``timeout``, it is ended with everything it started (a build's
    kernels run in sessions of their own, so a process group would miss them) and the
    exception goes on."""
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        code = proc.wait(timeout=timeout)
    except BaseException:
        end_with_children(proc)
        raise
    return code, log.read_text(errors="replace")


def end_with_children(proc: subprocess.Popen) -> None:
    try:
        family = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        family = []
    for member in family:
        try:
            member.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(family, timeout=10)
    proc.wait()


def reads_the_book(items) -> bool:
    """Whether a test among ``items`` needs the built book."""
    return any("built_book" in getattr(item, "fixturenames", ()) for item in items)


@pytest.fixture(scope="session")
def book_build(tmp_path_factory) -> tuple[int, str]:
    """The session's one book build: (exit status, its output)."""
    return run_build(BUILD, ROOT, tmp_path_factory.mktemp("book-build") / "build.log")


@pytest.fixture(scope="session")
def built_book(book_build) -> Path:
    """``_build/html``, built by this session; a failed build fails each test that needs it, with
    the end of the build's output (book/build_book.py names each failing chapter and cell there)."""
    code, output = book_build
    assert code == 0, f"book build failed:\n{output[-LOG_TAIL:]}"
    return ROOT / "_build" / "html"


@pytest.fixture(scope="session")
def book_build_done(request) -> None:
    """For tests that read the execution cache when a build left one: when this session builds
    the book, they read it after that build (whose failure is built_book's to report)."""
    if reads_the_book(request.session.items):
        request.getfixturevalue("book_build")
