"""The built book, shared by every book test: built once per session the way `make book`
builds it (book/build_book.py: stale pages executed two at a time, then jupyter-book; the
execution cache makes a rebuild of unchanged chapters take seconds)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT


@pytest.fixture(scope="session")
def built_book() -> Path:
    proc = subprocess.run([sys.executable, str(ROOT / "book" / "build_book.py"), "build", ".", "--builder", "html",
                           "-W", "-n", "--keep-going"],
                          cwd=ROOT, capture_output=True, text=True, timeout=3600)
    assert proc.returncode == 0, f"book build failed:\n{proc.stdout[-6000:]}\n{proc.stderr[-4000:]}"
    return ROOT / "_build" / "html"
