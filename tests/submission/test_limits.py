"""A course's grading.toml sets limits per course and per assignment; bad values are one-line errors."""
from __future__ import annotations

import pytest

from autograder.errors import UsageError
from autograder.submission.limits import COURSE_FILE, Limits, course_limits, with_overrides
from autograder.submission.assignment import load_assignment


def test_defaults_without_a_course_file(tmp_path):
    assert course_limits(tmp_path, "01_op_logs") == Limits()


def test_course_then_assignment_then_command_line(tmp_path):
    (tmp_path / COURSE_FILE).write_text('[limits]\ncell_timeout_s = 120\nmemory_mb = 2048\n\n'
                                        '[limits."07_custom_ops"]\ncell_timeout_s = 600\n')
    assert course_limits(tmp_path, "01_op_logs") == Limits(cell_timeout_s=120.0, memory_mb=2048)
    own = course_limits(tmp_path, "07_custom_ops")
    assert (own.cell_timeout_s, own.memory_mb) == (600.0, 2048)
    assert with_overrides(own, {"cell_timeout_s": 30, "memory_mb": None}).cell_timeout_s == 30.0


@pytest.mark.parametrize("text, words", [
    ("[limits]\ncell_timout_s = 5\n", "'cell_timout_s' is not a limit"),
    ("[limits]\nmemory_mb = 1.5\n", "positive whole number"),
    ("[limits]\ncell_timeout_s = -1\n", "positive number"),
    ("[limits]\nmemory_mb = true\n", "positive whole number"),
    ("[limits\n", "not valid TOML"),
])
def test_bad_course_files_say_what_to_fix(tmp_path, text, words):
    (tmp_path / COURSE_FILE).write_text(text)
    with pytest.raises(UsageError) as info:
        course_limits(tmp_path, "01_op_logs")
    assert words in str(info.value) and "\n" not in str(info.value)


def test_the_pipeline_gives_an_assignment_its_course_limits(tmp_path):
    import shutil

    from tests.conftest import SOLUTIONS

    shutil.copytree(SOLUTIONS / "06_autograph", tmp_path / "06_autograph")
    (tmp_path / COURSE_FILE).write_text('[limits."06_autograph"]\nnotebook_timeout_s = 900\n')
    assert load_assignment(tmp_path / "06_autograph" / "06_autograph.ipynb").limits.notebook_timeout_s == 900
