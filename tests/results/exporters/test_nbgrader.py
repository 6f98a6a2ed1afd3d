"""grades.csv: nbgrader's export columns first, then one column per part."""
from __future__ import annotations

import csv
import io

from autograder.results.exporters import nbgrader
from autograder.results.exporters.base import Graded, Person, Roster, Row
from tests.results.exporters.helpers import results


def _csv(rows, columns, roster=Roster()) -> str:
    return nbgrader.render(Graded(rows, columns), roster)


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
    ours = _csv([], ["test-a"]).splitlines()[0].split(",")
    assert ours[: len(nbgrader_header)] == nbgrader_header
    assert ours[len(nbgrader_header):] == ["test-a", "status", "message"]


def test_rows_hold_scores_per_part_sorted_by_assignment_and_student():
    rows = [
        Row("bob", "ps1", results([("a", 1, 2), ("b", 0, 3)], output="the kernel died in cell 4"), "2026-01-02 10:00:00"),
        Row("alice", "ps1", results([("a", 2, 2), ("b", 3, 3)])),
    ]
    table = list(csv.DictReader(io.StringIO(_csv(rows, ["a", "b", "c"]))))
    assert [r["student_id"] for r in table] == ["alice", "bob"]
    alice, bob = table
    assert (alice["raw_score"], alice["score"], alice["max_score"], alice["a"], alice["b"], alice["c"]) == \
        ("5", "5", "5", "2", "3", "")
    assert alice["status"] == "graded" and alice["message"] == "" and alice["first_name"] == alice["email"] == ""
    assert bob["timestamp"] == "2026-01-02 10:00:00" and bob["late_submission_penalty"] == "0"
    assert (bob["status"], bob["message"]) == ("error", "the kernel died in cell 4")


def test_status_is_a_keyword_and_the_message_has_its_own_column():
    from autograder.results.results import Results, TestResult

    undecided = Results(tests=[TestResult("a", 0, 2, "could not decide", status="inconclusive"),
                               TestResult("b", 3, 3)])
    nothing = Results(tests=[TestResult("a", 0, 2, "no notebook", status="missing"),
                             TestResult("b", 0, 3, "no notebook", status="missing")], output="no notebook")
    other = Results(tests=[TestResult("a", 0, 2, "x", status="skipped"), TestResult("b", 0, 3, "x", status="skipped")],
                    output="this is exercise ps2's notebook, not ps1's")
    rows = [Row("ann", "ps1", undecided), Row("ben", "ps1", nothing), Row("cal", "ps1", other)]
    unknown = Row("dan", "1_ps", Results(output="no assignment is named 1_ps"))
    table = list(csv.DictReader(io.StringIO(nbgrader.render(Graded(rows, ["a", "b"], skipped=[unknown]), Roster()))))
    assert [(r["assignment"], r["student_id"], r["status"]) for r in table] == [
        ("1_ps", "dan", "skipped"), ("ps1", "ann", "pending"), ("ps1", "ben", "missing"), ("ps1", "cal", "skipped")]
    assert table[0]["message"] == "no assignment is named 1_ps" and table[0]["max_score"] == "0"
    assert table[1]["message"] == "pending: speed undecided in a; `grade --retry-inconclusive` grades it again"
    assert table[3]["message"] == "this is exercise ps2's notebook, not ps1's"


def test_names_and_email_come_from_the_roster():
    roster = Roster({"alice": Person("alice", "Alice", "Liddell", "alice@example.edu")})
    table = list(csv.DictReader(io.StringIO(_csv([Row("alice", "ps1", results([("a", 2, 2)]))], ["a"], roster))))
    assert (table[0]["first_name"], table[0]["last_name"], table[0]["email"]) == ("Alice", "Liddell", "alice@example.edu")


def test_commas_and_quotes_in_messages_stay_one_cell():
    rows = [Row("o'neil, jr", "ps1", results([("a", 1, 1)], output='he said "stop", twice\nthen more'))]
    table = list(csv.reader(io.StringIO(_csv(rows, ["a"]))))
    assert len(table) == 2 and len(table[1]) == len(table[0])
    assert table[1][3] == "o'neil, jr"
