"""``grades.csv`` in nbgrader's export shape: one row per student and assignment.

The first eleven columns are exactly those of ``nbgrader export`` (its CSV plugin,
``nbgrader/plugins/export.py``: ``assignment, duedate, timestamp, student_id, last_name,
first_name, email, raw_score, late_submission_penalty, score, max_score``), so scripts and
spreadsheets built for nbgrader's export read ours unchanged.  Names and e-mail come from
the roster when one is given (else empty); there is no gradebook, so the due date stays
empty and the penalty is 0; the timestamp is the one nbgrader's ``submitted/`` folders
keep in ``timestamp.txt``.  One column per graded part (its ``grade_id``) follows, in the
source notebook's order, then ``status`` (``graded`` or what stopped the notebook).
"""
from __future__ import annotations

import csv
import io
from typing import Mapping

from autograder.grading.exporters.base import Graded, Roster, number

FILENAME = "grades.csv"
NBGRADER_COLUMNS = ("assignment", "duedate", "timestamp", "student_id", "last_name", "first_name",
                    "email", "raw_score", "late_submission_penalty", "score", "max_score")


def render(graded: Graded, roster: Roster, assignment_ids: Mapping[str, str] | None = None) -> str:
    """The CSV text (``assignment_ids`` is for the LMS formats; nbgrader has its own names)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([*NBGRADER_COLUMNS, *graded.part_columns, "status"])
    for row in graded.rows:
        person = roster.get(row.student)
        scores = {t.name: t.score for t in row.results.tests}
        writer.writerow([
            row.assignment, "", row.timestamp, row.student, person.last_name, person.first_name, person.email,
            number(row.results.score), "0", number(row.results.score), number(row.results.max_score),
            *[number(scores[c]) if c in scores else "" for c in graded.part_columns],
            " ".join(row.results.output.split())[:200] or "graded",
        ])
    return buffer.getvalue()
