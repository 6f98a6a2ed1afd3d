"""grades.csv: nbgrader's export columns first, then one column per part."""
from __future__ import annotations

import csv
import io

from autograder.grading import export
from autograder.grading.results import Results, TestResult


def _results(*scores: tuple[str, float, float], output: str = "") -> Results:
    return Results(tests=[TestResult(n, s, m) for n, s, m in scores], output=output)


def test_header_matches_nbgrader_export_exactly(tmp_path, monkeypatch):
    import os
    import sys

    from nbgrader.api import Gradebook
    from nbgrader.plugins.export import CsvExportPlugin

    # nbgrader's Gradebook runs the venv's ``alembic`` to create its database.
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    dest = tmp_path / "nbgrader.csv"
    with Gradebook(f"sqlite:///{tmp_path / 'gradebook.db'}") as gb:
        gb.add_assignment("ps1")
        gb.add_student("alice")
        CsvExportPlugin(to=str(dest)).export(gb)
    nbgrader_header = dest.read_text().splitlines()[0].split(",")
    ours = export.grades_csv([], ["test-a"]).splitlines()[0].split(",")
    assert ours[: len(nbgrader_header)] == nbgrader_header
    assert ours[len(nbgrader_header):] == ["test-a", "status"]


def test_rows_hold_scores_per_part_sorted_by_assignment_and_student():
    rows = [
        export.Row("bob", "ps1", _results(("a", 1, 2), ("b", 0, 3), output="the kernel died in cell 4"), "2026-01-02 10:00:00"),
        export.Row("alice", "ps1", _results(("a", 2, 2), ("b", 3, 3))),
    ]
    table = list(csv.DictReader(io.StringIO(export.grades_csv(rows, ["a", "b", "c"]))))
    assert [r["student_id"] for r in table] == ["alice", "bob"]
    alice, bob = table
    assert (alice["raw_score"], alice["score"], alice["max_score"], alice["a"], alice["b"], alice["c"]) == \
        ("5", "5", "5", "2", "3", "")
    assert alice["status"] == "graded"
    assert bob["timestamp"] == "2026-01-02 10:00:00" and bob["late_submission_penalty"] == "0"
    assert bob["status"] == "the kernel died in cell 4"


def test_commas_and_quotes_in_messages_stay_one_cell():
    rows = [export.Row("o'neil, jr", "ps1", _results(("a", 1, 1), output='he said "stop", twice\nthen more'))]
    table = list(csv.reader(io.StringIO(export.grades_csv(rows, ["a"]))))
    assert len(table) == 2 and len(table[1]) == len(table[0])
    assert table[1][3] == "o'neil, jr"


def test_read_timestamp_from_nbgrader_submission(tmp_path):
    assert export.read_timestamp(tmp_path) == ""
    (tmp_path / "timestamp.txt").write_text("2026-03-04 05:06:07.000000 UTC\n")
    assert export.read_timestamp(tmp_path) == "2026-03-04 05:06:07.000000 UTC"
