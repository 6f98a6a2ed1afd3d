"""The Canvas gradebook CSV, read back with the rules of Canvas's own importer.

``canvas_import`` follows canvas-lms ``app/models/gradebook_importer.rb``: the header's first
columns must match /Student/, /ID/, then /SIS User ID/ and /SIS Login ID/, and the last
student column /Section/; a row whose first cell matches /Points Possible/ sets the
assignments' points; an assignment header ``Title (123)`` names assignment 123
(``Assignment.title_and_id``), any other header an assignment found by title or created.
"""
from __future__ import annotations

import csv
import io
import re

from autograder.results.exporters import canvas
from autograder.results.exporters.base import Graded, Person, Roster, read_graded
from tests.results.exporters.helpers import graded_folder

TITLE_AND_ID = re.compile(r"\A(.*)\s\((\d+)\)\Z")


def canvas_import(text: str) -> dict:
    rows = list(csv.reader(io.StringIO(text)))
    header = rows[0]
    assert re.search("Student", header[0]) and re.search("ID", header[1])
    assert re.search(r"SIS\s+User\s+ID", header[2]) and re.search(r"SIS\s+Login\s+ID", header[3])
    assert re.search("Section", header[4]), "the last student column is Section"
    assignments = [(m.group(1), m.group(2)) if (m := TITLE_AND_ID.match(h)) else (h, None) for h in header[5:]]
    points, students = None, {}
    for row in rows[1:]:
        assert len(row) == len(header)
        if re.search("Points Possible", row[0]):
            points = row[5:]
            continue
        students[row[0], row[1], row[2], row[3], row[4]] = row[5:]
    return {"assignments": assignments, "points": points, "students": students}


def test_layout_is_what_canvas_imports(tmp_path):
    text = canvas.render(read_graded(graded_folder(tmp_path / "out")), Roster(), {"ps1": "4757"})
    assert text.splitlines()[0] == "Student,ID,SIS User ID,SIS Login ID,Section,ps1 (4757),ps2"
    assert text.splitlines()[1] == "    Points Possible,,,,,5,5", "second row, as Canvas's own export writes it"
    parsed = canvas_import(text)
    assert parsed["assignments"] == [("ps1", "4757"), ("ps2", None)]
    assert parsed["points"] == ["5", "5"]
    # Without a roster the nbgrader id is the student's name and SIS login; a blank leaves Canvas's grade as is.
    assert parsed["students"] == {
        ("alice", "", "", "alice", ""): ["5", "1.5"],
        ("bob", "", "", "bob", ""): ["3", ""],
        ("carol", "", "", "carol", ""): ["", "5"],
    }


def test_roster_fills_the_columns_canvas_matches_students_by(tmp_path):
    roster = Roster({"alice": Person("alice", "Alice", "Liddell", "a@example.edu", lms_user_id="4711",
                                     sis_user_id="S-1", sis_login_id="aliddell", section="Lab 2"),
                     "bob": Person("bob", last_name="O'Neil, Jr")})
    parsed = canvas_import(canvas.render(read_graded(graded_folder(tmp_path / "out")), roster))
    assert ("Liddell, Alice", "4711", "S-1", "aliddell", "Lab 2") in parsed["students"]
    assert ("O'Neil, Jr", "", "", "bob", "") in parsed["students"], "a comma in a name stays one cell"


def test_a_header_without_an_id_is_the_assignment_name():
    assert canvas.assignment_header("01_op_logs", None) == "01_op_logs"
    assert TITLE_AND_ID.match(canvas.assignment_header("01 op logs", "12")).groups() == ("01 op logs", "12")


def test_empty_class_still_has_both_header_rows():
    text = canvas.render(Graded([]), Roster())
    assert text.splitlines() == ["Student,ID,SIS User ID,SIS Login ID,Section", "    Points Possible,,,,"]
