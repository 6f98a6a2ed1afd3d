"""Our feedback pages reach students through nbgrader's own exchange.

The end-to-end test builds an nbgrader course in a temporary folder and runs
nbgrader's real commands: the instructor generates and releases the tiny
assignment, the student fetches it, answers it and submits, the instructor
collects; ``python -m autograder grade <course>/submitted`` grades it (writing
the course's ``feedback/`` folder by default), the instructor runs
``nbgrader release_feedback`` and the student ``nbgrader fetch_feedback``.  The
page the student fetches must be ours (score and parts) and must not quote the
hidden tests.  Run as root, the student is another user (``nobody``), as on a
real JupyterHub: the released page must be readable by them.

The other tests cover ``--nbgrader-feedback DIR`` outside a course, the usage
error for ``--nbgrader-feedback`` without DIR outside a course, and the writer's
edge cases.
"""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from autograder.frontends import grade
from tests.conftest import ROOT
from tests.files.hostile.catalogue import TINY_SOURCE, answers
from autograder.submission.folders import Submission

# The tiny course.
COURSE_ID = "tinycourse"
STUDENT = "alice"
HIDDEN = ("zebra-hidden-marker", "okapi-hidden-marker", "double(21)")
WRONG_DOUBLE = "def double(x):\n    return x\n"  # test-double fails (0/3), test-word passes (2/2)
NOBODY = 65534


def _student_uid() -> int | None:
    """Run the student's commands as ``nobody`` when we can (root with setpriv), else as ourselves."""
    if os.geteuid() == 0 and shutil.which("setpriv"):
        return NOBODY
    return None


def _env(home: Path) -> dict[str, str]:
    """A clean environment whose HOME and Jupyter folders (nbgrader's cache) lie in ``home``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "NBGRADER"))}
    env.update(HOME=str(home), JUPYTER_CONFIG_DIR=str(home / ".jupyter"),
               JUPYTER_DATA_DIR=str(home / ".local/share/jupyter"), JUPYTER_RUNTIME_DIR=str(home / ".runtime"),
               PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "/usr/bin:/bin")]))
    env.pop("PYTHONPATH", None)
    return env


def _nbgrader(*args: str, cwd: Path, home: Path, uid: int | None = None) -> str:
    command = [sys.executable, "-m", "nbgrader", *args]
    if uid is not None:
        command = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--", *command]
    proc = subprocess.run(command, cwd=cwd, env=_env(home), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"nbgrader {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout + proc.stderr


def _autograder(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "autograder", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)


@pytest.fixture
def shared_tmp():
    """A temporary folder other users can walk into (pytest's tmp_path sits in a 0700 folder)."""
    folder = Path(tempfile.mkdtemp(prefix="nbgrader-feedback-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.slow  # nbgrader's release, grade and feedback on a course
def test_nbgrader_release_and_fetch_feedback_deliver_our_page(shared_tmp):
    uid = _student_uid()
    course, exchange = shared_tmp / "course", shared_tmp / "exchange"
    instructor, student = shared_tmp / "instructor-home", shared_tmp / "student"
    for folder in (course / "source", exchange, instructor, student):
        folder.mkdir(parents=True)
    exchange.chmod(0o777)  # nbgrader's exchange root must be writable to everyone
    shutil.copytree(TINY_SOURCE / "tiny", course / "source" / "tiny")
    (course / "nbgrader_config.py").write_text(
        "c = get_config()\n"
        f"c.CourseDirectory.course_id = {COURSE_ID!r}\n"
        f"c.CourseDirectory.root = {str(course)!r}\n"
        f"c.CourseDirectory.db_url = {'sqlite:///' + str(course / 'gradebook.db')!r}\n"
        f"c.Exchange.root = {str(exchange)!r}\n"
        "c.CollectApp.check_owner = False  # the student submits under a name, not their login\n")
    (student / "nbgrader_config.py").write_text(
        "c = get_config()\n"
        f"c.CourseDirectory.course_id = {COURSE_ID!r}\n"
        f"c.Exchange.root = {str(exchange)!r}\n")
    if uid is not None:
        os.chown(student, uid, uid)
        os.chown(student / "nbgrader_config.py", uid, uid)

    # The instructor releases the assignment.
    _nbgrader("generate_assignment", "tiny", "--create", cwd=course, home=instructor)
    released = (course / "release" / "tiny" / "tiny.ipynb").read_text()
    assert "hidden-marker" not in released and "YOUR CODE HERE" in released
    _nbgrader("release_assignment", "tiny", cwd=course, home=instructor)

    # The student fetches it, answers it (test-double wrong, test-word right) and submits.
    _nbgrader("fetch_assignment", "tiny", cwd=student, home=student, uid=uid)
    (student / "tiny" / "tiny.ipynb").write_bytes(answers(double=WRONG_DOUBLE)(None))
    _nbgrader("submit", "tiny", "--student", STUDENT, cwd=student, home=student, uid=uid)

    # The instructor collects: submitted/alice/tiny/ with nbgrader's timestamp.txt and secret.
    _nbgrader("collect", "tiny", cwd=course, home=instructor)
    submitted = course / "submitted" / STUDENT / "tiny"
    assert {p.name for p in submitted.iterdir()} >= {"tiny.ipynb", "timestamp.txt", "submission_secret.txt"}

    # Grading an nbgrader course's submitted/ folder into the course fills its feedback/ folder unasked.
    out = course / "graded"
    proc = _autograder("grade", str(course / "submitted"), "--out", str(out),
                       "--source", str(course / "source"), "--workers", "1")
    assert proc.returncode == 0, proc.stderr
    assert f"nbgrader feedback in {course / 'feedback'}" in proc.stdout
    ours = (out / STUDENT / "tiny" / "feedback.html").read_text(encoding="utf-8")
    placed = course / "feedback" / STUDENT / "tiny"
    assert (placed / "tiny.html").read_text(encoding="utf-8") == ours
    for name in ("timestamp.txt", "submission_secret.txt"):
        assert (placed / name).read_bytes() == (submitted / name).read_bytes()

    # nbgrader releases it into the exchange and the student fetches it.
    log = _nbgrader("release_feedback", "tiny", cwd=course, home=instructor)
    assert f"Releasing feedback for student '{STUDENT}'" in log
    in_exchange = list((exchange / COURSE_ID / "feedback").glob("*.html"))
    assert len(in_exchange) == 1 and in_exchange[0].stat().st_mode & 0o004, "students must be able to read it"
    log = _nbgrader("fetch_feedback", "tiny", cwd=student, home=student, uid=uid)
    assert "Fetched feedback" in log, log
    timestamp = (submitted / "timestamp.txt").read_text().strip()
    fetched = student / "tiny" / "feedback" / timestamp / "tiny.html"
    assert fetched.is_file(), sorted(str(p) for p in (student / "tiny").rglob("*"))
    page = fetched.read_text(encoding="utf-8")
    assert page == ours
    assert f"Student: {STUDENT}" in page and "Score: 2 / 5" in page
    assert "<td>test-double</td><td>0 / 3</td>" in page and "double(2) returned 2, expected 4" in page
    assert "<td>test-word</td><td>2 / 2</td>" in page
    for marker in HIDDEN:
        assert marker not in page


def _submission(root: Path, student: str = STUDENT, secret: bool = True) -> Path:
    folder = root / student / "tiny"
    folder.mkdir(parents=True)
    (folder / "tiny.ipynb").write_bytes(answers()(None))
    (folder / "timestamp.txt").write_text("2026-01-02 03:04:05.000000 UTC")
    if secret:
        (folder / "submission_secret.txt").write_text("s3cret-" + student)
    return folder


def test_explicit_feedback_dir_outside_a_course(tmp_path):
    subs, out, feedback = tmp_path / "subs", tmp_path / "out", tmp_path / "nbfeedback"
    folder = _submission(subs)
    proc = _autograder("grade", str(subs), "--out", str(out), "--source", str(TINY_SOURCE), "--workers", "1",
                       "--nbgrader-feedback", str(feedback))
    assert proc.returncode == 0, proc.stderr
    assert f"nbgrader feedback in {feedback}" in proc.stdout
    placed = feedback / STUDENT / "tiny"
    page = (placed / "tiny.html").read_text(encoding="utf-8")
    assert page == (out / STUDENT / "tiny" / "feedback.html").read_text(encoding="utf-8")
    assert "Score: 5 / 5" in page and not any(marker in page for marker in HIDDEN)
    assert stat.S_IMODE((placed / "tiny.html").stat().st_mode) == 0o644
    for name in ("timestamp.txt", "submission_secret.txt"):
        assert (placed / name).read_bytes() == (folder / name).read_bytes()


def test_no_feedback_folder_outside_a_course_unless_asked(tmp_path):
    subs = tmp_path / "submitted"  # named like nbgrader's, but no nbgrader_config.py beside it
    _submission(subs)
    assert grade.nbgrader_feedback_dir(subs) is None
    proc = _autograder("grade", str(subs), "--out", str(tmp_path / "out"), "--source", str(TINY_SOURCE),
                       "--workers", "1")
    assert proc.returncode == 0, proc.stderr
    assert "nbgrader feedback" not in proc.stdout and not (tmp_path / "feedback").exists()


def test_feedback_without_dir_outside_a_course_is_a_usage_error(tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "out"
    _submission(subs)
    proc = _autograder("grade", str(subs), "--out", str(out), "--source", str(TINY_SOURCE), "--nbgrader-feedback")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "--nbgrader-feedback" in lines[0], proc.stderr
    assert not out.exists()


def test_feedback_dir_of_a_course_found_from_a_relative_path(tmp_path, monkeypatch):
    course = tmp_path / "course"
    (course / "submitted").mkdir(parents=True)
    (course / "nbgrader_config.py").write_text("c = get_config()\n")
    assert grade.nbgrader_feedback_dir(course / "submitted") == course / "feedback"
    monkeypatch.chdir(course / "submitted")
    assert grade.nbgrader_feedback_dir(Path(".")) == course / "feedback"
    assert grade.nbgrader_feedback_dir(Path("..")) is None


def test_a_resubmission_without_a_secret_drops_the_old_secret(tmp_path):
    """A stale secret would release the new page under the old submission's hash."""
    feedback = tmp_path / "feedback"
    folder = _submission(tmp_path / "subs")
    sub = Submission(STUDENT, "tiny", folder, folder / "tiny.ipynb")
    grade.write_nbgrader_feedback(feedback, sub, "<p>first</p>")
    assert (feedback / STUDENT / "tiny" / "submission_secret.txt").is_file()
    (folder / "submission_secret.txt").unlink()
    page = grade.write_nbgrader_feedback(feedback, sub, "<p>second</p>")
    assert page == feedback / STUDENT / "tiny" / "tiny.html" and page.read_text() == "<p>second</p>"
    assert not (feedback / STUDENT / "tiny" / "submission_secret.txt").exists()
    assert (feedback / STUDENT / "tiny" / "timestamp.txt").is_file()


def test_a_submission_not_collected_by_nbgrader_gets_the_timestamp_release_feedback_needs(tmp_path):
    from nbgrader.utils import parse_utc

    folder = _submission(tmp_path / "subs")
    (folder / "timestamp.txt").unlink()  # uploaded by hand, not collected: nbgrader's release_feedback needs one
    os.utime(folder / "tiny.ipynb", (1767323045.25, 1767323045.25))
    grade.write_nbgrader_feedback(tmp_path / "feedback", Submission(STUDENT, "tiny", folder,
                                                                          folder / "tiny.ipynb"), "<p>page</p>")
    stamp = (tmp_path / "feedback" / STUDENT / "tiny" / "timestamp.txt").read_text()
    assert stamp == "2026-01-02 03:04:05.250000 UTC"
    assert parse_utc(stamp).isoformat() == "2026-01-02T03:04:05.250000"


def _course(root: Path) -> Path:
    """An nbgrader course folder holding alice's submission and the feedback page already released."""
    course = root / "course"
    course.mkdir()
    (course / "nbgrader_config.py").write_text("c = get_config()\n")
    _submission(course / "submitted")
    released = course / "feedback" / STUDENT / "tiny"
    released.mkdir(parents=True)
    (released / "tiny.html").write_text("<p>the page alice was given</p>")
    return course


def test_a_scratch_run_leaves_the_courses_feedback_alone(tmp_path, monkeypatch, capsys):
    """Only a grade whose --out is inside the course (or --nbgrader-feedback) writes its feedback/;
    --no-nbgrader-feedback keeps it untouched even then."""
    from autograder import cli
    from autograder.results.results import Results, TestResult

    monkeypatch.setattr(grade.sandbox, "run_submission", lambda submission, source, **kw: Results(
        tests=[TestResult("test-double", 3.0, 3.0), TestResult("test-word", 2.0, 2.0)]))
    course = _course(tmp_path)
    page = course / "feedback" / STUDENT / "tiny" / "tiny.html"
    common = ["grade", str(course / "submitted"), "--source", str(TINY_SOURCE), "--workers", "1"]
    assert cli.main([*common, "--out", str(tmp_path / "scratch")]) == 0
    assert page.read_text() == "<p>the page alice was given</p>"
    captured = capsys.readouterr()
    assert "nbgrader feedback in" not in captured.out
    assert f"note: --out is outside the course {course}: its feedback/ was left as it is" in captured.err
    assert cli.main([*common, "--out", str(course / "graded"), "--no-nbgrader-feedback"]) == 0
    assert page.read_text() == "<p>the page alice was given</p>"
    assert cli.main([*common, "--out", str(tmp_path / "scratch"), "--force", "--nbgrader-feedback"]) == 0
    assert "Score: 5 / 5" in page.read_text()
    page.write_text("<p>the page alice was given</p>")
    assert cli.main([*common, "--out", str(course / "graded"), "--force"]) == 0
    assert "Score: 5 / 5" in page.read_text()
    assert f"nbgrader feedback in {course / 'feedback'}" in capsys.readouterr().out
    assert cli.main([*common, "--out", str(course / "x"), "--nbgrader-feedback", "--no-nbgrader-feedback"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "error: --nbgrader-feedback and --no-nbgrader-feedback contradict each other; give one"]
