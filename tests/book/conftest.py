"""The built book, shared by every book test: built once per session the way `make book`
builds it (book/build_book.py: stale pages executed two at a time, then jupyter-book; the
execution cache makes a rebuild of unchanged chapters take seconds); with
BOOK_BUILD_IN_BACKGROUND=1, on idle CPU from the start of the session (tests/book/book_build.py)."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from tests.conftest import BOOK_BUILD, ROOT


def load_book_script(name: str):
    """``book/<name>.py`` as a module (book/ is not a package), registered in sys.modules
    (dataclasses look their module up there)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "book" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def built_book(request) -> Path:
    """``_build/html``, from the session's one build (tests.book.book_build): this waits for it."""
    code, output = request.config.stash[BOOK_BUILD].wait()
    assert code == 0, f"book build failed:\n{output[-10000:]}"
    return ROOT / "_build" / "html"


@pytest.fixture(scope="session")
def book_build_done(request) -> None:
    """For tests that read the execution cache when a build left one: waits for this
    session's build, if it has one (its failure is test_book's to report)."""
    build = request.config.stash.get(BOOK_BUILD, None)
    if build is not None:
        build.wait()
