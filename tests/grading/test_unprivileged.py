"""Grading as an instructor who is not root: a normal user, a fresh clone in their home.

The test creates a user, clones this repository into its home, builds the
clone's ``.venv`` with ``make venv`` as that user (kept between runs, keyed by
``requirements.txt``), and grades as that user: the reference solution of
exercise 1 must score full marks, and a submission that looks for course files
with every tool it has (git, ls, a walk of the disk) must find none.
"""
from __future__ import annotations

import hashlib
import json
import os
import pwd
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT, SOLUTIONS
from tests.files.hostile.catalogue import READ_COURSE, _bytes, _solved

pytestmark = pytest.mark.slow
USER = "autograder-instructor"


def _as_user(command: str, *, timeout: float, cwd: Path) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(cwd.parent), "LANG": "C.UTF-8",
           **{k: v for k, v in os.environ.items() if k.startswith("PIP_")}}
    runuser = shutil.which("runuser") or "/usr/sbin/runuser"
    return subprocess.run([runuser, "-u", USER, "--", "bash", "-c", command], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def clone():
    if os.geteuid() != 0:
        pytest.skip("creating the test's normal user needs root (CI and these machines run as root)")
    try:
        pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "--create-home", USER], check=True)
    home = Path(pwd.getpwnam(USER).pw_dir)
    course = home / "course"
    stamp = hashlib.sha256((ROOT / "requirements.txt").read_bytes()).hexdigest()[:16]
    venv = home / f"venv-{stamp}"  # survives between runs: only a new requirements.txt rebuilds it
    if course.exists():
        shutil.rmtree(course)
    # Cloned by root (the checkout may sit in a folder the user cannot read), then handed over.
    subprocess.run(["git", "-c", "safe.directory=*", "clone", "-q", str(ROOT), str(course)], check=True)
    subprocess.run(["chown", "-R", f"{USER}:", str(course)], check=True)
    if not (venv / ".installed").exists():
        shutil.rmtree(venv, ignore_errors=True)
        built = _as_user(f"make venv VENV={venv}", timeout=1800, cwd=course)
        assert built.returncode == 0, f"make venv as {USER} failed:\n{built.stdout[-2000:]}\n{built.stderr[-2000:]}"
    else:  # the clone is new: install its package into the kept environment
        installed = _as_user(f"{venv}/bin/python -m pip install --quiet --no-deps -e .", timeout=300, cwd=course)
        assert installed.returncode == 0, installed.stderr[-2000:]
    return course, venv


def test_a_normal_user_grades_a_class_in_a_private_sandbox(clone):
    course, venv = clone
    submitted = course.parent / "submitted"
    shutil.rmtree(submitted, ignore_errors=True)
    solution = submitted / "reference" / "01_op_logs"
    solution.mkdir(parents=True)
    shutil.copy(SOLUTIONS / "01_op_logs" / "01_op_logs.ipynb", solution)
    snoop = submitted / "snoop" / "tiny"
    snoop.mkdir(parents=True)
    (snoop / "tiny.ipynb").write_bytes(_bytes(_solved(word=READ_COURSE.format(repo=str(course)))))
    subprocess.run(["chown", "-R", f"{USER}:", str(submitted)], check=True)
    out = course.parent / "graded"
    shutil.rmtree(out, ignore_errors=True)
    runs = [
        _as_user(f"{venv}/bin/python -m autograder grade {submitted} --out {out} --assignment 01_op_logs",
                 timeout=900, cwd=course),
        _as_user(f"{venv}/bin/python -m autograder grade {submitted} --out {out} --assignment tiny "
                 f"--source {course}/tests/files/hostile/tiny/source", timeout=900, cwd=course),
    ]
    for run in runs:
        assert run.returncode in (0, 1), f"{run.stdout[-2000:]}\n{run.stderr[-2000:]}"
    reference = json.loads((out / "reference" / "01_op_logs" / "results.json").read_text())
    assert reference["score"] == reference["max_score"] == 10, json.dumps(reference, indent=1)
    snooped = json.loads((out / "snoop" / "tiny" / "results.json").read_text())
    assert {t["name"]: t["score"] for t in snooped["tests"]} == {"test-double": 3.0, "test-word": 2.0}, \
        json.dumps(snooped, indent=1)
    sandbox = snooped["extra_data"]["sandbox"]
    assert sandbox.get("user") == "unprivileged user namespace", sandbox
    assert sandbox["hidden"] == ["everything not on the allowlist"], sandbox


def test_a_normal_users_judge_refuses_and_shuts_in_a_planted_savedmodel(clone):
    """As a normal user (an unprivileged user namespace, not root): the planted SavedModels are
    refused before they load, a confined process sees only its allowlist, and behind the op check
    the loader is shut in (tests/test_isolation.py and the planted cases of tests/checks/test_savedmodel.py,
    run by that user in the user's clone)."""
    course, venv = clone
    run = _as_user(f"{venv}/bin/python -m pytest -q -p no:cacheprovider tests/test_isolation.py "
                   "tests/checks/test_savedmodel.py -k 'confined or planted or shut_in'", timeout=900, cwd=course)
    assert run.returncode == 0, f"{run.stdout[-3000:]}\n{run.stderr[-2000:]}"
    assert " passed" in run.stdout and " failed" not in run.stdout, run.stdout[-2000:]
