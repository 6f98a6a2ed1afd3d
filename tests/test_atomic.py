"""autograder.atomic: all or nothing, with the umask's mode unless told otherwise."""
from __future__ import annotations

import os
import stat

import pytest

from autograder.atomic import write_atomic


@pytest.fixture
def umask():
    """Set the process's umask for one test, and put the old one back."""
    old = os.umask(0o022)
    yield os.umask
    os.umask(old)


def test_writes_text_and_bytes(tmp_path, umask):
    umask(0o022)
    path = write_atomic(tmp_path / "a" / "results.json", "{}")
    assert path.read_text() == "{}" and stat.S_IMODE(path.stat().st_mode) == 0o644
    write_atomic(path, b"\x00\x01")
    assert path.read_bytes() == b"\x00\x01"


@pytest.mark.parametrize("mask, expected", [(0o022, 0o644), (0o027, 0o640), (0o077, 0o600), (0o002, 0o664)])
def test_the_file_gets_the_umasks_mode(tmp_path, umask, mask, expected):
    """Results, grades.csv and the Gradescope zip must be readable by a course group when the
    umask says so (it was 0600 whatever the umask), and private when the umask says that."""
    umask(mask)
    path = write_atomic(tmp_path / "grades.csv", "a,b\n")
    assert stat.S_IMODE(path.stat().st_mode) == expected
    write_atomic(path, "a,b\n1,2\n")  # replacing keeps to the umask too
    assert stat.S_IMODE(path.stat().st_mode) == expected


def test_mode_is_the_files_mode(tmp_path, umask):
    umask(0o077)
    path = write_atomic(tmp_path / "page.html", "<p>", mode=0o644)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    path = write_atomic(tmp_path / "grades.csv", "old")
    with pytest.raises(TypeError):
        write_atomic(path, 42)  # not text or bytes
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["grades.csv"]
