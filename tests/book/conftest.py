"""The built book, shared by every book test: built once per session the way `make book`
builds it (book/build_book.py: stale pages executed two at a time, then jupyter-book; the
execution cache makes a rebuild of unchanged chapters take seconds)."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT


def load_book_script(name: str):
    """``book/<name>.py`` as a module (book/ is not a package), registered in sys.modules
    (dataclasses look their module up there)."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "book" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def built_book() -> Path:
    proc = subprocess.run([sys.executable, str(ROOT / "book" / "build_book.py"), "build", ".", "--builder", "html",
                           "-W", "-n", "--keep-going"],
                          cwd=ROOT, capture_output=True, text=True, timeout=3600)
    assert proc.returncode == 0, f"book build failed:\n{proc.stdout[-6000:]}\n{proc.stderr[-4000:]}"
    return ROOT / "_build" / "html"
