"""A Canvas gradebook import CSV: one row per student, one column per assignment.

The layout is the one Canvas documents for *Grades > Import* ("How do I import grades in
the Gradebook?", https://community.canvaslms.com/t5/Instructor-Guide/How-do-I-import-grades-in-the-Gradebook/ta-p/807)
and the one its own gradebook export writes (canvas-lms ``app/models/gradebook_exporter.rb``),
checked here against what its importer parses (canvas-lms ``app/models/gradebook_importer.rb``:
``header?``, ``check_for_non_student_row``, ``process_student``):

- header ``Student, ID, SIS User ID, SIS Login ID, Section``, then one column per
  assignment: ``<name> (<Canvas assignment id>)`` when the id is given
  (``--assignment-id NAME=ID``), else ``<name>``, which Canvas matches to an assignment of
  that title or, failing that, creates as a new assignment;
- a second row whose first cell is ``    Points Possible`` (as Canvas's export writes it;
  the importer looks for "Points Possible" in the first cell) holding each assignment's
  points, which sets them on a new assignment;
- then one row per student.  Canvas finds the student by ``ID`` (the Canvas user id), then
  ``SIS User ID``, then ``SIS Login ID``, then by name; the cells come from the roster
  (``lms_user_id``, ``sis_user_id``, ``sis_login_id``, ``section``, ``last_name, first_name``).
  Without a roster entry, ``Student`` and ``SIS Login ID`` hold nbgrader's student id,
  which is the Canvas login where the JupyterHub signs learners in with their Canvas login.

A blank score (no submission graded for that assignment) leaves Canvas's grade unchanged.
"""
from __future__ import annotations

import csv
import io
from typing import Mapping

from autograder.results.exporters.base import Graded, Roster, number

FILENAME = "grades_canvas.csv"
STUDENT_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
POINTS_POSSIBLE = "    Points Possible"


def assignment_header(name: str, assignment_id: str | None) -> str:
    return f"{name} ({assignment_id})" if assignment_id else name


def render(graded: Graded, roster: Roster, assignment_ids: Mapping[str, str] | None = None) -> str:
    """The CSV text for ``graded``; ``assignment_ids`` maps an assignment name to its Canvas id."""
    ids = assignment_ids or {}
    assignments = graded.assignments
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([*STUDENT_COLUMNS, *[assignment_header(a, ids.get(a)) for a in assignments]])
    writer.writerow([POINTS_POSSIBLE, "", "", "", "", *[number(graded.max_points(a)) for a in assignments]])
    for student in graded.students:
        person = roster.get(student)
        scores = [graded.score(student, a) for a in assignments]
        writer.writerow([person.sortable_name, person.lms_user_id, person.sis_user_id,
                         person.sis_login_id or student, person.section,
                         *["" if r is None else number(r) for r in scores]])
    return buffer.getvalue()
