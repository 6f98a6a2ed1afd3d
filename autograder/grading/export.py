"""``grades.csv``: one row per student and assignment.

The first eleven columns are exactly those of ``nbgrader export`` (its CSV
plugin: ``assignment, duedate, timestamp, student_id, last_name, first_name,
email, raw_score, late_submission_penalty, score, max_score``), so scripts and
spreadsheets built for nbgrader's export read ours unchanged.  We have no
gradebook, so names, e-mail and due date stay empty and the penalty is 0;
the timestamp is the one nbgrader's ``submitted/`` folders keep in
``timestamp.txt``.  One column per graded part (its ``grade_id``) follows, in
the source notebook's order, then ``status`` (``graded`` or what stopped the
notebook).
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from autograder.atomic import write_atomic
from autograder.grading.results import Results

NBGRADER_COLUMNS = ("assignment", "duedate", "timestamp", "student_id", "last_name", "first_name",
                    "email", "raw_score", "late_submission_penalty", "score", "max_score")


@dataclass
class Row:
    student: str
    assignment: str
    results: Results
    timestamp: str = ""


def read_timestamp(folder: Path) -> str:
    """nbgrader's submission time (``timestamp.txt``), or empty."""
    try:
        return (folder / "timestamp.txt").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return ""


def _number(value: float) -> str:
    return f"{value:g}"


def grades_csv(rows: list[Row], part_columns: list[str]) -> str:
    """The CSV text for ``rows`` with one column per name in ``part_columns``."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([*NBGRADER_COLUMNS, *part_columns, "status"])
    for row in sorted(rows, key=lambda r: (r.assignment, r.student)):
        scores = {t.name: t.score for t in row.results.tests}
        writer.writerow([
            row.assignment, "", row.timestamp, row.student, "", "", "",
            _number(row.results.score), "0", _number(row.results.score), _number(row.results.max_score),
            *[_number(scores[c]) if c in scores else "" for c in part_columns],
            " ".join(row.results.output.split())[:200] or "graded",
        ])
    return buffer.getvalue()


def write_grades_csv(path: Path, rows: list[Row], part_columns: list[str]) -> None:
    write_atomic(path, grades_csv(rows, part_columns))
