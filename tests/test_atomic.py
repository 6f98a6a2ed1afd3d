"""autograder.atomic: all or nothing, private unless told otherwise."""
from __future__ import annotations

import stat

import pytest

from autograder.atomic import write_atomic


def test_writes_text_and_bytes_private_by_default(tmp_path):
    path = write_atomic(tmp_path / "a" / "results.json", "{}")
    assert path.read_text() == "{}" and stat.S_IMODE(path.stat().st_mode) == 0o600
    write_atomic(path, b"\x00\x01")
    assert path.read_bytes() == b"\x00\x01"


def test_mode_is_the_files_mode(tmp_path):
    path = write_atomic(tmp_path / "page.html", "<p>", mode=0o644)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    path = write_atomic(tmp_path / "grades.csv", "old")
    with pytest.raises(TypeError):
        write_atomic(path, 42)  # not text or bytes
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["grades.csv"]
