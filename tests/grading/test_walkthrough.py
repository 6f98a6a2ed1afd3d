"""The instructors' walkthrough runs as written (book/instructors/grading.md, "A new course, step by step").

Every ``bash`` block of that section runs, in the page's order, in a temporary folder: the
instructor's blocks with the instructor's home, a student's (a block whose first comment names
the student) with ``alice``'s home, as on a JupyterHub (run by one OS user, the test adds nbgrader's
``--student alice`` where nbgrader would take her login: :func:`as_alice`).  The shared exchange
``/srv/nbgrader/exchange`` becomes a temporary folder.  Between the fetch and the submit,
alice answers: her notebook's answer cells get the reference solution's.  At the end the
course holds what the page says it does: graded rows named from the gradebook with the due
date, a ``missing`` row for bob, a Canvas file with the assignment's id, the class report, and
alice's feedback fetched through nbgrader.
"""
from __future__ import annotations

import csv
import getpass
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import nbformat
import pytest

from tests.conftest import ROOT, SOLUTIONS
from tests.grading.test_nbgrader_feedback import _env

PAGE = ROOT / "book" / "instructors" / "grading.md"
SECTION = "(instructors-new-course)="
EXCHANGE = "/srv/nbgrader/exchange"
ASSIGNMENT = "01_op_logs"
STUDENT_BLOCK = re.compile(r"^# (a|the same|the) student\b")


def walkthrough_blocks(text: str) -> list[str]:
    """The ``bash`` blocks of the walkthrough section, in order."""
    start = text.index(SECTION)
    end = text.find("\n## ", text.index("\n## ", start) + 1)
    section = text[start:end if end != -1 else len(text)]
    return re.findall(r"```bash\n(.*?)```", section, re.S)


def test_the_section_has_the_blocks_of_a_term():
    blocks = walkthrough_blocks(PAGE.read_text(encoding="utf-8"))
    commands = " ".join(blocks)
    for step in ("init-course", "db student import", "db assignment add", "generate_assignment", "release_assignment",
                 "fetch_assignment", "submit", "collect", "autograder grade", "--export canvas", "autograder report",
                 "release_feedback", "fetch_feedback"):
        assert step in commands, step
    assert [bool(STUDENT_BLOCK.match(b)) for b in blocks] == [False, True, True, False, True]


def as_alice(script: str) -> str:
    """A student block as alice: nbgrader names a submitter by their login, and the test runs every
    block as one user, so ``submit`` and ``fetch_feedback`` name her (nbgrader's ``--student``)."""
    if getpass.getuser() == "alice":
        return script
    return re.sub(r"(nbgrader (?:submit|fetch_feedback) \S+)", r"\1 --student alice", script)


def _answer(notebook: Path) -> None:
    """Alice's answers: each answer cell of the fetched notebook gets the reference solution's."""
    solution = {c.metadata.get("nbgrader", {}).get("grade_id"): c.source
                for c in nbformat.read(SOLUTIONS / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4).cells}
    nb = nbformat.read(notebook, as_version=4)
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution") and meta.get("grade_id") in solution:
            cell.source = solution[meta["grade_id"]]
    nbformat.write(nb, notebook)


@pytest.mark.slow  # a whole term of nbgrader commands and a graded exercise
def test_every_command_of_the_walkthrough_runs_and_does_what_the_page_says():
    root = Path(tempfile.mkdtemp(prefix="walkthrough-"))
    root.chmod(0o755)
    try:
        instructor, alice, exchange = root / "instructor", root / "alice", root / "exchange"
        instructor.mkdir()
        alice.mkdir()
        for block in walkthrough_blocks(PAGE.read_text(encoding="utf-8")):
            student = bool(STUDENT_BLOCK.match(block))
            home = alice if student else instructor
            env = _env(home)
            script = block.replace(EXCHANGE, str(exchange))
            if student:
                env.update(USER="alice", LOGNAME="alice")
                script = as_alice(script)
            proc = subprocess.run(["bash", "-euo", "pipefail", "-c", script],
                                  cwd=home, env=env, capture_output=True, text=True, timeout=1200)
            assert proc.returncode == 0, f"{block}\nexit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
            if "fetch_assignment" in block:
                _answer(alice / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")

        course = instructor / "tf-gpu-course"
        with open(course / "graded" / "grades.csv", newline="") as f:
            rows = {r["student_id"]: r for r in csv.DictReader(f)}
        assert rows["alice"]["status"] == "graded" and rows["alice"]["score"] == rows["alice"]["max_score"] != "0"
        assert (rows["alice"]["first_name"], rows["alice"]["email"]) == ("Alice", "alice@example.edu")
        assert rows["alice"]["duedate"] == "2026-03-02 17:00:00" and rows["alice"]["timestamp"]
        assert rows["bob"]["status"] == "missing" and rows["bob"]["last_name"] == "Cratchit"
        with open(course / "graded" / "grades_canvas.csv", newline="") as f:
            canvas = list(csv.reader(f))
        assert f"{ASSIGNMENT} (4757)" in canvas[0]
        assert [r for r in canvas if "4001" in r][0][canvas[0].index(f"{ASSIGNMENT} (4757)")] == rows["alice"]["score"]
        assert (course / "graded" / "report.html").is_file()
        fetched = list((alice / ASSIGNMENT / "feedback").glob(f"*/{ASSIGNMENT}.html"))
        assert len(fetched) == 1 and "Score:" in fetched[0].read_text(encoding="utf-8")
    finally:
        shutil.rmtree(root, ignore_errors=True)
