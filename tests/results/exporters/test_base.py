"""exporters.base: reading a graded folder and a roster."""
from __future__ import annotations

import pytest

from autograder.errors import UsageError
from autograder.results.exporters import base
from tests.results.exporters.helpers import graded_folder, write_roster


def test_read_graded_finds_every_results_file_with_timestamps(tmp_path):
    out = graded_folder(tmp_path / "out")
    (out / "dave" / "ps1").mkdir(parents=True)
    (out / "dave" / "ps1" / "results.json").write_text('{"score": 1, "tes')  # half-written: regraded later
    submitted = tmp_path / "submitted" / "bob" / "ps1"
    submitted.mkdir(parents=True)
    (submitted / "timestamp.txt").write_text("2026-03-04 05:06:07.000000 UTC\n")

    graded = base.read_graded(out, tmp_path / "submitted")
    assert [(r.assignment, r.student) for r in graded.rows] == [
        ("ps1", "alice"), ("ps1", "bob"), ("ps2", "alice"), ("ps2", "carol")]
    assert graded.assignments == ["ps1", "ps2"] and graded.students == ["alice", "bob", "carol"]
    assert graded.part_columns == ["a", "b", "c", "d"]
    assert graded.max_points("ps1") == 5 and graded.max_points("ps2") == 5
    assert graded.results("carol", "ps1") is None and graded.results("alice", "ps2").score == 1.5
    assert {r.student: r.timestamp for r in graded.rows if r.assignment == "ps1"} == {
        "alice": "", "bob": "2026-03-04 05:06:07.000000 UTC"}


def test_read_graded_usage_errors(tmp_path):
    with pytest.raises(UsageError, match="no such folder"):
        base.read_graded(tmp_path / "nope")
    with pytest.raises(UsageError, match="no graded submissions.*run `grade` first"):
        base.read_graded(tmp_path)


def test_roster_reads_nbgrader_student_import_columns(tmp_path):
    path = write_roster(tmp_path / "roster.csv",
                        "\ufeffid,first_name,last_name,email,lms_user_id,sis_user_id,section,notes\n"
                        "alice,Alice,Liddell,alice@example.edu,4711,S-1,Lab 2,ignored\n"
                        "bob,,,,,,,\n")
    roster = base.read_roster(path)
    alice = roster.get("alice")
    assert (alice.sortable_name, alice.email, alice.lms_user_id, alice.sis_user_id, alice.section) == \
        ("Liddell, Alice", "alice@example.edu", "4711", "S-1", "Lab 2")
    assert roster.get("bob").sortable_name == "bob"
    assert roster.get("zed") == base.Person("zed")
    assert roster.missing(["alice", "bob", "zed"]) == ["zed"]
    assert base.Roster().missing(["alice"]) == [], "no roster: nobody is missing from it"


@pytest.mark.parametrize("text, needle", [
    (None, "cannot be read"),
    ("student,email\nalice,a@x\n", "no 'id' column"),
    ("id\nalice\nalice\n", "listed twice"),
    (b"\xff\xfeid\n", "cannot be read"),
])
def test_roster_usage_errors_are_one_line(tmp_path, text, needle):
    path = tmp_path / "roster.csv"
    if isinstance(text, bytes):
        path.write_bytes(text)
    elif text is not None:
        path.write_text(text)
    with pytest.raises(UsageError, match=needle) as caught:
        base.read_roster(path)
    assert "\n" not in str(caught.value)
