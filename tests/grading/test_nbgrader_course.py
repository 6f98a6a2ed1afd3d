"""Grading inside an nbgrader course: manual parts kept, the gradebook read (issue 54, items 2 and 3).

The course is built in a temporary folder with nbgrader's own commands: the tiny assignment with
a manually graded answer (``grade: true, solution: true``, 2 points, no test) added, a due date
(``nbgrader db assignment add --duedate``), three students with names (``nbgrader db student
add``), an extension granted through nbgrader's ``Gradebook``, and a late-penalty plugin
(``SubMarks``: a point per hour begun) configured in the course's ``nbgrader_config.py``.
``python -m autograder grade <course>/submitted`` (no ``--source``: the course's config names
it) must keep the manual part out of the maximum, mark the score as not final, and fill
nbgrader export's columns from the gradebook; ``nbgrader autograde`` on the same submissions
must agree on the late penalty and leave the manual part to the formgrader.
"""
from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import nbformat
import pytest

from tests.files.hostile.catalogue import CORRECT_DOUBLE, CORRECT_WORD, TINY_SOURCE
from tests.grading.test_nbgrader_feedback import _autograder, _nbgrader

MANUAL_ID, MANUAL_POINTS = "explain-double", 2.0
DUE = "2020-01-01 00:00:00"
SUBMITTED_AT = {"alice": "2020-01-01 02:30:00.000000 UTC",  # 2.5 h late: SubMarks takes 3 points
                "bob": "2020-01-02 12:00:00.000000 UTC"}   # late, but inside a 2-day extension
NAMES = {"alice": ("Alice", "Liddell"), "bob": ("Bob", "Cratchit"), "carol": ("Carol", "Danvers")}
CONFIG = """c = get_config()
import math
from nbgrader.plugins import LateSubmissionPlugin


class SubMarks(LateSubmissionPlugin):
    \"\"\"A point off per hour begun late (nbgrader's documented example).\"\"\"

    def late_submission_penalty(self, student_id, score, total_seconds):
        return float(math.ceil(total_seconds / 3600))


c.CourseDirectory.course_id = "tinycourse"
c.CourseDirectory.root = {root!r}
c.CourseDirectory.db_url = "sqlite:///{root}/gradebook.db"
c.Exchange.root = {exchange!r}
c.AssignLatePenalties.plugin_class = SubMarks
"""


def _with_manual_cell(source: Path) -> None:
    """Add a manually graded markdown answer after test-double, as an instructor would."""
    nb = nbformat.read(source, as_version=4)
    cell = nbformat.v4.new_markdown_cell("Why does `double` work?\n\n### BEGIN SOLUTION\nIt multiplies by two.\n"
                                         "### END SOLUTION")
    cell.metadata["nbgrader"] = {"grade": True, "solution": True, "locked": False, "points": MANUAL_POINTS,
                                 "grade_id": MANUAL_ID, "schema_version": 3, "task": False}
    at = next(i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == "test-double")
    nb.cells.insert(at + 1, cell)
    nbformat.write(nb, source)


def _answered(release: Path) -> nbformat.NotebookNode:
    nb = nbformat.read(release, as_version=4)
    answers = {"answer-double": CORRECT_DOUBLE, "answer-word": CORRECT_WORD, MANUAL_ID: "It multiplies by two."}
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in answers:
            cell.source = answers[gid]
    return nb


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("nbcourse")
    course, home = root / "course", root / "home"
    shutil.copytree(TINY_SOURCE / "tiny", course / "source" / "tiny")
    home.mkdir()
    _with_manual_cell(course / "source" / "tiny" / "tiny.ipynb")
    (course / "nbgrader_config.py").write_text(CONFIG.format(root=str(course), exchange=str(root / "exchange")))
    _nbgrader("db", "assignment", "add", "tiny", f"--duedate={DUE} UTC", cwd=course, home=home)
    for student, (first, last) in NAMES.items():
        _nbgrader("db", "student", "add", student, f"--first-name={first}", f"--last-name={last}",
                  f"--email={student}@example.edu", cwd=course, home=home)
    _nbgrader("generate_assignment", "tiny", "--force", cwd=course, home=home)
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course}/gradebook.db") as gradebook:
        gradebook.add_submission("tiny", "bob")  # what `nbgrader autograde` (or the formgrader) records
        gradebook.grant_extension("tiny", "bob", days=2)
    for student, stamp in SUBMITTED_AT.items():  # what `nbgrader collect` leaves in submitted/
        folder = course / "submitted" / student / "tiny"
        folder.mkdir(parents=True)
        nbformat.write(_answered(course / "release" / "tiny" / "tiny.ipynb"), folder / "tiny.ipynb")
        shutil.copy(course / "release" / "tiny" / "data.txt", folder / "data.txt")
        (folder / "timestamp.txt").write_text(stamp)
    proc = _autograder("grade", str(course / "submitted"), "--out", str(course / "graded"), "--workers", "1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (course / "grade.log").write_text(proc.stdout)
    return course


def _grades(course: Path) -> dict[str, dict[str, str]]:
    with open(course / "graded" / "grades.csv", newline="") as f:
        return {row["student_id"]: row for row in csv.DictReader(f)}


@pytest.mark.slow  # nbgrader's db, generate_assignment and autograde on a course, and our grade
def test_a_manual_part_counts_in_the_maximum_and_waits_for_the_formgrader(course):
    results = json.loads((course / "graded" / "alice" / "tiny" / "results.json").read_text())
    manual = {t["name"]: t for t in results["tests"]}[MANUAL_ID]
    assert [t["name"] for t in results["tests"]] == ["test-double", MANUAL_ID, "test-word"]  # the source's order
    assert manual["status"] == "manual" and manual["score"] == 0 and manual["max_score"] == MANUAL_POINTS
    assert "needs manual grading" in manual["output"]
    assert results["score"] == 5 and results["max_score"] == 7
    row = _grades(course)["alice"]
    assert row["status"] == "manual" and row["max_score"] == "7" and row[MANUAL_ID] == "0"
    assert f"pending manual grading: {MANUAL_ID}" in row["message"] and "not final" in row["message"]
    page = (course / "graded" / "alice" / "tiny" / "feedback.html").read_text()
    assert "Score: 5 / 7" in page and "Not the final grade: 2 point(s) need manual grading" in page
    assert "needs manual grading" in page
    summary = (course / "grade.log").read_text()
    header, tiny = [line.split() for line in summary.splitlines() if line.startswith(("assignment ", "tiny "))]
    assert dict(zip(header, tiny))["manual"] == "2"  # alice and bob wait for the formgrader

    # nbgrader's own flow finishes it: autograde keeps the part (out of 7) for the formgrader.
    _nbgrader("autograde", "tiny", "--force", cwd=course, home=course.parent / "home")
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course}/gradebook.db") as gradebook:
        submission = gradebook.find_submission("tiny", "alice")
        grade = gradebook.find_grade(MANUAL_ID, "tiny", "tiny", "alice")
        assert grade.needs_manual_grade and grade.max_score == MANUAL_POINTS
        assert submission.max_score == 7
        nbgrader_penalty = submission.late_submission_penalty
    assert float(row["late_submission_penalty"]) == nbgrader_penalty == 3.0


@pytest.mark.slow
def test_the_gradebook_fills_names_due_date_extension_and_penalty(course):
    rows = _grades(course)
    assert set(rows) == {"alice", "bob", "carol"}  # carol, in the gradebook, has no submission: a 0 row
    for student, (first, last) in NAMES.items():
        assert (rows[student]["first_name"], rows[student]["last_name"]) == (first, last)
        assert rows[student]["email"] == f"{student}@example.edu"
    alice, bob, carol = rows["alice"], rows["bob"], rows["carol"]
    assert alice["duedate"] == DUE and alice["timestamp"] == SUBMITTED_AT["alice"]
    assert (alice["raw_score"], alice["late_submission_penalty"], alice["score"]) == ("5", "3", "2")
    assert bob["duedate"] == "2020-01-03 00:00:00"  # the due date with bob's extension
    assert (bob["raw_score"], bob["late_submission_penalty"], bob["score"]) == ("5", "0", "5")
    assert carol["status"] == "missing" and carol["score"] == "0" and carol["max_score"] == "7"
    exported = course / "exported.csv"  # `export --submissions` reads the same gradebook
    proc = _autograder("export", str(course / "graded"), "--submissions", str(course / "submitted"),
                       "--out", str(exported))
    assert proc.returncode == 0, proc.stderr
    with open(exported, newline="") as f:
        again = {row["student_id"]: row for row in csv.DictReader(f)}
    assert (again["alice"]["duedate"], again["alice"]["late_submission_penalty"], again["alice"]["last_name"]) == (
        DUE, "3", "Liddell")


def test_the_course_config_gives_the_source_folder_and_defaults(tmp_path):
    from autograder.results import gradebook

    course = tmp_path / "course"
    (course / "submitted").mkdir(parents=True)
    (course / "nbgrader_config.py").write_text("c = get_config()\nc.CourseDirectory.source_directory = 'src'\n")
    assert gradebook.course_of(course / "submitted") == course
    assert gradebook.course_of(tmp_path) is None
    found = gradebook.load_course(course)
    assert found.source == course / "src" and found.db_url == f"sqlite:///{course}/gradebook.db"
    assert not found.has_gradebook() and gradebook.read_roster(found).people == {}
    penalties = gradebook.Penalties(found)  # no gradebook: no due date, no penalty, nothing created
    assert penalties.lateness("alice", "tiny", "2030-01-01 00:00:00 UTC", 5.0) == gradebook.Lateness()
    assert not (course / "gradebook.db").exists()
    (course / "src").mkdir()
    proc = _autograder("grade", str(course / "submitted"), "--out", str(course / "autograded"))
    assert proc.returncode == 2 and "nbgrader's autograded folder" in proc.stderr, proc.stderr
    (course / "nbgrader_config.py").write_text("c = get_config()\nc.CourseDirectory.source_directory = \n")
    proc = _autograder("grade", str(course / "submitted"), "--out", str(tmp_path / "out"))
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and "nbgrader_config.py cannot be read" in lines[0], proc.stderr
