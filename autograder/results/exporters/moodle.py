"""A Moodle grade import CSV (*Grades > Import > CSV file*): one row per student.

Moodle's CSV import lets the teacher pick which column identifies the user and map it to
a user field ("Identify user by": *Map from* a column, *Map to* ``userid``, ``username``,
``useridnumber`` or ``useremail``), then map each other column to a grade item or "new
grade item" (MoodleDocs "Grade import", https://docs.moodle.org/405/en/Grade_import; the
four user fields are those of ``gradeimport_csv_load_data::map_user_data_with_value`` in
moodle ``grade/import/csv/classes/load_data.php``, where an empty or ``-`` cell means no grade).

Columns: ``First name``, ``Last name`` (to read the file by), then the three identifiers
to map from: ``Username`` (roster ``sis_login_id``, else nbgrader's student id: map it to
``username``), ``ID number`` (roster ``sis_user_id``: map to ``useridnumber``) and
``Email address`` (roster ``email``: map to ``useremail``), then one column per assignment,
named as in nbgrader, holding the points scored (empty: not graded, left unchanged).
"""
from __future__ import annotations

import csv
import io
from typing import Mapping

from autograder.results.exporters.base import Graded, Roster, number

FILENAME = "grades_moodle.csv"
USER_COLUMNS = ("First name", "Last name", "Username", "ID number", "Email address")
# Which Moodle user field each identifier column maps to in "Identify user by".
MAP_TO = {"Username": "username", "ID number": "useridnumber", "Email address": "useremail"}


def render(graded: Graded, roster: Roster, assignment_ids: Mapping[str, str] | None = None) -> str:
    """The CSV text for ``graded`` (Moodle maps grade items by column, so ids are not used)."""
    assignments = graded.assignments
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([*USER_COLUMNS, *assignments])
    for student in graded.students:
        person = roster.get(student)
        scores = [graded.score(student, a) for a in assignments]
        writer.writerow([person.first_name, person.last_name, person.sis_login_id or student,
                         person.sis_user_id, person.email,
                         *["" if r is None else number(r) for r in scores]])
    return buffer.getvalue()
