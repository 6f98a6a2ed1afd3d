"""The Moodle grade import CSV, read back as Moodle's CSV import maps it.

``moodle_import`` follows moodle ``grade/import/csv/classes/load_data.php``: one column is
mapped to a user field (``username``, ``useridnumber``, ``useremail``; ``userid`` is Moodle's
internal id, which nbgrader never has), each other mapped column to a grade item, and an
empty or ``-`` cell is no grade.
"""
from __future__ import annotations

import csv
import io

from autograder.results.exporters import moodle
from autograder.results.exporters.base import Person, Roster, read_graded
from tests.results.exporters.helpers import graded_folder


def moodle_import(text: str, map_from: str) -> dict:
    table = list(csv.DictReader(io.StringIO(text)))
    items = [h for h in table[0] if h not in moodle.USER_COLUMNS] if table else []
    grades = {}
    for row in table:
        if not row[map_from]:
            continue  # Moodle skips a row whose user field is blank
        grades[row[map_from]] = {i: None if row[i] in ("", "-") else float(row[i]) for i in items}
    return grades


def test_layout_is_identifier_columns_then_one_column_per_grade_item(tmp_path):
    text = moodle.render(read_graded(graded_folder(tmp_path / "out")), Roster())
    header = text.splitlines()[0].split(",")
    assert header == ["First name", "Last name", "Username", "ID number", "Email address", "ps1", "ps2"]
    assert set(moodle.MAP_TO.values()) <= {"userid", "username", "useridnumber", "useremail"}
    assert all(column in header for column in moodle.MAP_TO)
    assert moodle_import(text, "Username") == {
        "alice": {"ps1": 5.0, "ps2": 1.5}, "bob": {"ps1": 3.0, "ps2": None}, "carol": {"ps1": None, "ps2": 5.0}}


def test_roster_gives_each_identifier_moodle_can_map_from(tmp_path):
    roster = Roster({"alice": Person("alice", "Alice", "Liddell", "alice@example.edu", sis_user_id="S-1",
                                     sis_login_id="aliddell")})
    text = moodle.render(read_graded(graded_folder(tmp_path / "out")), roster)
    assert moodle_import(text, "Email address") == {"alice@example.edu": {"ps1": 5.0, "ps2": 1.5}}
    assert moodle_import(text, "ID number") == {"S-1": {"ps1": 5.0, "ps2": 1.5}}
    assert sorted(moodle_import(text, "Username")) == ["aliddell", "bob", "carol"]
    assert text.splitlines()[1].startswith("Alice,Liddell,aliddell,S-1,alice@example.edu,")
