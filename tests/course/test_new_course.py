"""``init-course`` writes a course nbgrader reads: its config and the assignments' sources."""
from __future__ import annotations

import pytest

from autograder import cli
from autograder.course.new_course import init_course
from autograder.errors import UsageError
from autograder.results import gradebook
from tests.conftest import SOLUTIONS


def test_the_course_is_nbgraders_and_the_graders(tmp_path, capsys):
    folder = tmp_path / "course"
    assert cli.main(["init-course", str(folder), "--course-id", "tf-gpu", "--exchange", str(tmp_path / "x"),
                     "--assignment", "04_xla"]) == 0
    assert "next: cd" in capsys.readouterr().out
    assert sorted(p.name for p in (folder / "source").iterdir()) == ["04_xla"]
    assert (folder / "source" / "04_xla" / "04_xla.ipynb").read_bytes() == (SOLUTIONS / "04_xla" / "04_xla.ipynb").read_bytes()
    course = gradebook.load_course(folder)  # nbgrader's CourseDirectory reads the written config
    assert course.source == folder / "source" and course.config.CourseDirectory.course_id == "tf-gpu"
    assert course.config.Exchange.root == str(tmp_path / "x")
    assert course.db_url == f"sqlite:///{folder}/gradebook.db"


@pytest.mark.parametrize("kwargs, words", [
    ({"course_id": "tf gpu"}, "use letters, digits"),
    ({"course_id": "tf", "assignments": ["99_none"]}, "no assignment '99_none'"),
])
def test_bad_input_is_a_usage_error_and_writes_nothing(tmp_path, kwargs, words):
    with pytest.raises(UsageError, match=words):
        init_course(tmp_path / "course", **kwargs)
    assert not (tmp_path / "course").exists()


def test_an_existing_course_is_left_alone(tmp_path):
    (tmp_path / "nbgrader_config.py").write_text("c = get_config()\n")
    with pytest.raises(UsageError, match="exists already"):
        init_course(tmp_path, course_id="tf")
    assert (tmp_path / "nbgrader_config.py").read_text() == "c = get_config()\n"
