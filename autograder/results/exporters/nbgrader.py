"""``grades.csv`` in nbgrader's export shape: one row per student and assignment.

The first eleven columns are exactly those of ``nbgrader export`` (its CSV plugin,
``nbgrader/plugins/export.py``: ``assignment, duedate, timestamp, student_id, last_name,
first_name, email, raw_score, late_submission_penalty, score, max_score``), so scripts and
spreadsheets built for nbgrader's export read ours unchanged.  Names and e-mail come from
the roster when one is given, else, inside an nbgrader course, from its gradebook; so do the
due date (with the student's extension) and the late penalty of the course's configured
``LateSubmissionPlugin`` (:mod:`autograder.results.gradebook`; outside a course the due date
stays empty and the penalty is 0; ``score`` is ``raw_score`` less the penalty); the timestamp
is the one nbgrader's ``submitted/`` folders keep in ``timestamp.txt``.  One column per graded part (its ``grade_id``) follows, in the
source notebook's order, then ``status``, one keyword
(:func:`~autograder.results.results.submission_status`: ``graded``, ``pending``, ``error``,
``missing``, ``skipped``), and ``message``, why when it is not ``graded`` (what stopped the
notebook, which exercise's notebook was submitted).  Rows are sorted by assignment, then
student; folders that name no assignment (``Graded.skipped``) sort in among them.
"""
from __future__ import annotations

import csv
import io
from typing import Mapping

from autograder.results.exporters.base import Graded, Roster, number
from autograder.results.results import submission_status

FILENAME = "grades.csv"
MESSAGE_CHARS = 1000  # a spreadsheet cell stays readable; feedback.html has the whole message
NBGRADER_COLUMNS = ("assignment", "duedate", "timestamp", "student_id", "last_name", "first_name",
                    "email", "raw_score", "late_submission_penalty", "score", "max_score")


def render(graded: Graded, roster: Roster, assignment_ids: Mapping[str, str] | None = None) -> str:
    """The CSV text (``assignment_ids`` is for the LMS formats; nbgrader has its own names)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([*NBGRADER_COLUMNS, *graded.part_columns, "status", "message"])
    for row in sorted([*graded.rows, *graded.skipped], key=lambda r: (r.assignment, r.student)):
        person = roster.get(row.student)
        scores = {t.name: t.score for t in row.results.tests}
        writer.writerow([
            row.assignment, row.duedate, row.timestamp, row.student, person.last_name, person.first_name,
            person.email, number(row.results.score), number(row.penalty), number(row.score),
            number(row.results.max_score),
            *[number(scores[c]) if c in scores else "" for c in graded.part_columns],
            submission_status(row.results), message(row.results),
        ])
    return buffer.getvalue()


def message(results) -> str:
    """The ``message`` cell: the submission's note on one line, or the parts left undecided."""
    note = " ".join(results.output.split())
    if note:
        return note[:MESSAGE_CHARS]
    undecided = [t.name for t in results.tests if t.status == "inconclusive"]
    manual = [t for t in results.tests if t.status == "manual"]
    said = []
    if undecided:
        said.append(f"pending: speed undecided in {', '.join(undecided)}; "
                    "`grade --retry-inconclusive` grades it again")
    if manual:
        said.append(f"pending manual grading: {', '.join(t.name for t in manual)} "
                    f"({sum(t.max_score for t in manual):g} point(s)); the score is not final")
    return "; ".join(said)
