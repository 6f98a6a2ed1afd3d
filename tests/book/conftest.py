"""The built book, shared by every book test: built once per session (the
execution cache makes a rebuild of unchanged chapters take seconds)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT


@pytest.fixture(scope="session")
def built_book() -> Path:
    jb = Path(sys.executable).parent / "jupyter-book"
    proc = subprocess.run([str(jb), "build", ".", "--builder", "html", "-W", "-n", "--keep-going"],
                          cwd=ROOT, capture_output=True, text=True, timeout=3600)
    assert proc.returncode == 0, f"book build failed:\n{proc.stdout[-6000:]}\n{proc.stderr[-4000:]}"
    return ROOT / "_build" / "html"
