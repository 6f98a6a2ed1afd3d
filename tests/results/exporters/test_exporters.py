"""The exporter seam: format selection, write_export, atomic files, grade's hook, the CLI."""
from __future__ import annotations

import csv
import io
import os
import subprocess
import sys

import pytest

from autograder.errors import UsageError
from autograder.results import exporters
from autograder.frontends import grade
from autograder.results.exporters.base import read_roster
from autograder.results.results import Results, TestResult
from tests.conftest import ROOT
from tests.files.hostile.catalogue import TINY_SOURCE
from tests.results.exporters.helpers import graded_folder, write_roster


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "autograder", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)


def test_formats_repeatable_or_comma_separated_once_each():
    assert exporters.parse_formats(["canvas,moodle", "Canvas", " nbgrader "]) == ["canvas", "moodle", "nbgrader"]
    assert exporters.parse_formats(None) == []
    with pytest.raises(UsageError, match="unknown export format 'blackboard'; use one of nbgrader, canvas, moodle"):
        exporters.parse_formats(["canvas,blackboard"])


def test_assignment_ids():
    assert exporters.parse_assignment_ids(["01_op_logs=4757", " ps2 = 12 "]) == {"01_op_logs": "4757", "ps2": "12"}
    for bad in ("01_op_logs", "=12", "ps1=abc"):
        with pytest.raises(UsageError, match="write ASSIGNMENT=ID"):
            exporters.parse_assignment_ids([bad])


def test_write_export_puts_each_format_in_its_own_file(tmp_path):
    out = graded_folder(tmp_path / "out")
    roster = write_roster(tmp_path / "roster.csv", "id,first_name,last_name\nalice,Alice,Liddell\nbob,Bob,Ross\n")
    written = {fmt: exporters.write_export(out, fmt, roster=roster) for fmt in exporters.EXPORTERS}
    assert {fmt: w.path.name for fmt, w in written.items()} == {
        "nbgrader": "grades.csv", "canvas": "grades_canvas.csv", "moodle": "grades_moodle.csv"}
    assert all(w.rows == 4 and w.not_in_roster == ["carol"] for w in written.values())
    assert (out / "grades.csv").read_text().count("\n") == 5, "header + four graded submissions"
    assert "Liddell, Alice" in (out / "grades_canvas.csv").read_text()
    elsewhere = exporters.write_export(out, "moodle", path=tmp_path / "moodle.csv")
    assert elsewhere.path == tmp_path / "moodle.csv" and elsewhere.not_in_roster == []
    with pytest.raises(UsageError, match="unknown export format"):
        exporters.write_export(out, "d2l")


def test_an_interrupted_export_keeps_the_old_file(tmp_path, monkeypatch):
    out = graded_folder(tmp_path / "out")
    exporters.write_export(out, "canvas")
    before = (out / "grades_canvas.csv").read_text()
    (out / "alice" / "ps1" / "results.json").write_text(
        Results(tests=[TestResult("a", 0.0, 2.0), TestResult("b", 0.0, 3.0)]).to_json())

    def power_cut(fd):
        raise OSError("disk gone")

    monkeypatch.setattr(os, "fsync", power_cut)
    with pytest.raises(OSError, match="disk gone"):
        exporters.write_export(out, "canvas")
    assert (out / "grades_canvas.csv").read_text() == before
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]


def test_grade_writes_the_exports_beside_grades_csv(tmp_path, monkeypatch):
    def instant(submission, source, **kwargs):
        return Results(tests=[TestResult("test-double", 3.0, 3.0), TestResult("test-word", 0.0, 2.0)])

    monkeypatch.setattr(grade.sandbox, "run_submission", instant)
    for student in ("alice", "bob"):
        folder = tmp_path / "submitted" / student / "tiny"
        folder.mkdir(parents=True)
        (folder / "tiny.ipynb").write_text("{}")
    roster = read_roster(write_roster(tmp_path / "roster.csv", "id,sis_user_id\nalice,S-1\n"))
    grade.grade(tmp_path / "submitted", tmp_path / "out", source=TINY_SOURCE, progress_stream=io.StringIO(),
                exports=["canvas", "moodle"], roster=roster, assignment_ids={"tiny": "99"})
    canvas = list(csv.reader((tmp_path / "out" / "grades_canvas.csv").open()))
    assert canvas[0][5:] == ["tiny (99)"] and canvas[1][5:] == ["5"]
    assert canvas[2] == ["alice", "", "S-1", "alice", "", "3"] and canvas[3] == ["bob", "", "", "bob", "", "3"]
    moodle = list(csv.DictReader((tmp_path / "out" / "grades_moodle.csv").open()))
    assert [(r["Username"], r["ID number"], r["tiny"]) for r in moodle] == [("alice", "S-1", "3"), ("bob", "", "3")]
    assert (tmp_path / "out" / "grades.csv").is_file()


def test_cli_export_writes_and_names_each_file(tmp_path):
    out = graded_folder(tmp_path / "out")
    roster = write_roster(tmp_path / "roster.csv", "id\nalice\n")
    proc = run_cli("export", str(out), "--format", "canvas,moodle", "--roster", str(roster))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [f"wrote {out / 'grades_canvas.csv'} (canvas, 4 graded submission(s))",
                                        f"wrote {out / 'grades_moodle.csv'} (moodle, 4 graded submission(s))"]
    assert proc.stderr.strip() == ("warning: 2 student(s) not in the roster (bob, carol); "
                                   "their rows use the nbgrader student id")


@pytest.mark.parametrize("extra, needle", [
    (["--format", "blackboard"], "error: unknown export format 'blackboard'"),
    (["--roster", "no-such-roster.csv"], "error: --roster no-such-roster.csv: cannot be read"),
    (["--format", "canvas,moodle", "--out", "x.csv"], "error: --out names one file but 2 formats"),
    (["--assignment-id", "ps1"], "error: --assignment-id 'ps1': write ASSIGNMENT=ID"),
])
def test_cli_export_usage_errors_are_one_line_exit_2(tmp_path, extra, needle):
    out = graded_folder(tmp_path / "out")
    proc = run_cli("export", str(out), *extra)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith(needle) and proc.stderr.strip().count("\n") == 0, proc.stderr


def test_cli_export_of_an_ungraded_folder(tmp_path):
    proc = run_cli("export", str(tmp_path))
    assert proc.returncode == 2 and "no graded submissions" in proc.stderr and "run `grade` first" in proc.stderr


def test_cli_grade_rejects_a_bad_export_before_grading(tmp_path):
    (tmp_path / "submitted" / "alice" / "tiny").mkdir(parents=True)
    proc = run_cli("grade", str(tmp_path / "submitted"), "--out", str(tmp_path / "out"),
                   "--source", str(TINY_SOURCE), "--export", "canvas,sakai")
    assert proc.returncode == 2 and proc.stderr.startswith("error: unknown export format 'sakai'")
    assert not (tmp_path / "out").exists(), "nothing graded"
