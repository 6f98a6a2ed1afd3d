"""`check`, `grade` and Gradescope are one grading path: same scores, statuses and
messages part by part; `check` gates (exit 0 only with full marks) and re-checks one part."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tests.files.hostile.catalogue import TINY, TINY_SOURCE, answers


WRONG_DOUBLE = "def double(x):\n    return x + 1\n"


def run_cli(*args, cwd=ROOT, timeout=600):
    return subprocess.run([sys.executable, "-m", "autograder", *args], capture_output=True, text=True,
                          cwd=cwd, env={**os.environ}, timeout=timeout)


def submission(folder, **answer_kwargs):
    folder.mkdir(parents=True, exist_ok=True)
    notebook = folder / "tiny.ipynb"
    notebook.write_bytes(answers(**answer_kwargs)(None))
    shutil.copy(TINY.parent / "data.txt", folder / "data.txt")
    return notebook


def by_part(data: dict) -> dict:
    return {t["name"]: (t["score"], t["max_score"], t.get("status"), t["output"]) for t in data["tests"]}


@pytest.mark.slow
def test_check_grade_and_gradescope_agree_part_by_part(tmp_path):
    notebook = submission(tmp_path / "mine", double=WRONG_DOUBLE)

    checked = run_cli("check", str(notebook), "--source", str(TINY), "--json")
    assert checked.returncode == 1, "a part short of full marks: check exits 1\n" + checked.stderr
    from_check = by_part(json.loads(checked.stdout))

    submitted = tmp_path / "submitted" / "alice" / "tiny"
    submission(submitted, double=WRONG_DOUBLE)
    graded = run_cli("grade", str(tmp_path / "submitted"), "--out", str(tmp_path / "graded"),
                     "--source", str(TINY_SOURCE), "--workers", "1")
    assert graded.returncode == 0, graded.stderr
    from_grade = by_part(json.loads((tmp_path / "graded" / "alice" / "tiny" / "results.json").read_text()))

    gs_submission = tmp_path / "gradescope" / "submission"
    submission(gs_submission, double=WRONG_DOUBLE)
    results = tmp_path / "gradescope" / "results.json"
    ran = run_cli("gradescope-run", "tiny", "--submission", str(gs_submission), "--results", str(results),
                  "--source", str(TINY_SOURCE), "--hidden-visibility", "visible")
    assert ran.returncode == 0, ran.stderr
    from_gradescope = by_part(json.loads(results.read_text()))

    assert from_check == from_grade == from_gradescope
    assert from_check["test-double"][0] == 0 and from_check["test-word"][0] == from_check["test-word"][1]
    assert "hidden-marker" not in json.dumps(from_check), "hidden test lines never reach the learner"


@pytest.mark.slow
def test_check_exits_0_only_with_full_marks_and_rechecks_one_part(tmp_path):
    notebook = submission(tmp_path / "mine")
    full = run_cli("check", str(notebook), "--source", str(TINY))
    assert full.returncode == 0, full.stdout + full.stderr
    assert full.stdout.strip().splitlines()[-1] == "all tests, hidden included: 5/5"

    wrong = submission(tmp_path / "wrong", double=WRONG_DOUBLE)
    one = run_cli("check", str(wrong), "--source", str(TINY), "--part", "test-word", "--json")
    assert one.returncode == 0, "the one part asked for has full marks\n" + one.stdout + one.stderr
    assert [t["name"] for t in json.loads(one.stdout)["tests"]] == ["test-word"]
    other = run_cli("check", str(wrong), "--source", str(TINY), "--part", "test-double")
    assert other.returncode == 1 and "test-double" in other.stdout and "test-word" not in other.stdout


def test_check_usage_errors_exit_2_with_one_line(tmp_path):
    notebook = submission(tmp_path / "mine")
    proc = run_cli("check", str(notebook), "--source", str(TINY), "--part", "test-nope")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("error: no graded part 'test-nope' in tiny; its parts are: test-double, test-word")
    assert proc.stderr.strip().count("\n") == 0


def test_version_and_help_with_examples():
    import autograder

    version = run_cli("--version")
    assert version.returncode == 0 and version.stdout.strip() == f"python -m autograder {autograder.__version__}"
    helped = run_cli("check", "--help")
    assert helped.returncode == 0
    assert "examples:" in helped.stdout and "--part" in helped.stdout and "exit status: 0" in helped.stdout
