"""Inside an nbgrader course: its settings, gradebook and late penalty, read through nbgrader's API.

``grade`` given an nbgrader course's ``submitted/`` folder (beside ``nbgrader_config.py``) reads:

- the course's folders from its ``nbgrader_config.py`` (:class:`nbgrader.coursedir.CourseDirectory`:
  ``root``, ``source_directory``, ``db_url``), so ``--source`` is not needed;
- the students' names and e-mail from the gradebook (:class:`nbgrader.api.Gradebook`), the roster
  when no ``--roster`` is given;
- each assignment's due date and each student's extension from the gradebook, and the lateness of
  each submission from its ``timestamp.txt`` (what ``nbgrader collect`` copies), as nbgrader's
  ``SubmittedAssignment.total_seconds_late`` counts it;
- the late penalty from the plugin the course configures for nbgrader's ``AssignLatePenalties``
  (``c.AssignLatePenalties.plugin_class``; nbgrader's default ``LateSubmissionPlugin`` gives none
  unless ``c.LateSubmissionPlugin.penalty_method = 'zero'``), kept between 0 and the score as
  nbgrader keeps it.

A course without a gradebook file yet has no names, due dates or penalties (nothing is created).
Outside a course, the roster CSV (``--roster``) is read as before.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from importlib.util import find_spec
from pathlib import Path

from autograder.errors import UsageError
from autograder.results.exporters.base import Person, Roster

CONFIG = "nbgrader_config.py"


@dataclass
class Course:
    """An nbgrader course, as its ``nbgrader_config.py`` sets it up."""

    root: Path
    source: Path  # CourseDirectory.source_directory under root
    db_url: str
    config: object  # the traitlets Config read from nbgrader_config.py
    autograded: Path | None = None  # CourseDirectory.autograded_directory: `nbgrader autograde` replaces it

    @property
    def db_path(self) -> Path | None:
        """The gradebook's file for an sqlite url, else None."""
        prefix = "sqlite:///"
        return Path(self.db_url[len(prefix):]) if self.db_url.startswith(prefix) else None

    def has_gradebook(self) -> bool:
        path = self.db_path
        return path is None or path.is_file()


@dataclass(frozen=True)
class Lateness:
    """One submission against its due date: nbgrader export's ``duedate`` and the penalty."""

    duedate: str = ""  # as nbgrader's export writes it (its datetime, UTC), or "" without one
    seconds_late: float = 0.0
    penalty: float = 0.0


def course_of(submissions: Path | str) -> Path | None:
    """The course folder when ``submissions`` is an nbgrader course's ``submitted/`` folder."""
    submitted = Path(submissions).resolve()
    if submitted.name == "submitted" and (submitted.parent / CONFIG).is_file():
        return submitted.parent
    return None


def find_course(submissions: Path | str) -> Course | None:
    """The course whose ``submitted/`` folder ``submissions`` is, read when nbgrader is installed
    (the grader's own install does not need it: without it a course's ``submitted/`` is graded
    as any folder, with ``--source`` and ``--roster`` as given)."""
    root = course_of(submissions) if Path(submissions).is_dir() else None
    return load_course(root) if root is not None and find_spec("nbgrader") else None


def load_course(root: Path | str) -> Course:
    """The course at ``root`` through nbgrader's ``CourseDirectory``; a config that cannot be read
    is a :class:`UsageError`."""
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config.loader import PyFileConfigLoader

    root = Path(root).resolve()
    try:
        config = PyFileConfigLoader(CONFIG, path=str(root)).load_config()
    except Exception as exc:  # noqa: BLE001  (a course's config may raise anything)
        raise UsageError(f"{root / CONFIG} cannot be read ({exc.__class__.__name__}: {exc}); "
                         "fix it (`nbgrader` commands read the same file)") from None
    if "root" not in config.CourseDirectory:
        config.CourseDirectory.root = str(root)  # nbgrader's default is the folder it runs in: the course
    coursedir = CourseDirectory(config=config)
    course_root = Path(coursedir.root)
    db_url = coursedir.db_url
    if db_url.startswith("sqlite:///") and not db_url[len("sqlite:///"):].startswith("/"):
        db_url = f"sqlite:///{course_root / db_url[len('sqlite:///'):]}"  # nbgrader runs in the course: relative to it
    return Course(course_root, course_root / coursedir.source_directory, db_url, config,
                  course_root / coursedir.autograded_directory)


def read_roster(course: Course) -> Roster:
    """The gradebook's students as a roster (names, e-mail, LMS id); empty without a gradebook."""
    if not course.has_gradebook():
        return Roster()
    from nbgrader.api import Gradebook

    with Gradebook(course.db_url) as gradebook:
        return Roster({s.id: Person(s.id, s.first_name or "", s.last_name or "", s.email or "",
                                    s.lms_user_id or "") for s in gradebook.students})


def parse_timestamp(text: str) -> datetime | None:
    """nbgrader's ``timestamp.txt`` as a naive UTC datetime (its ``parse_utc``), or None."""
    from nbgrader.utils import parse_utc

    try:
        return parse_utc(text) if text.strip() else None
    except (ValueError, OverflowError, TypeError):
        return None


def fill_rows(course: Course, rows: list) -> None:
    """Give each gradebook row (:class:`~autograder.results.exporters.base.Row`) its due date and
    late penalty from ``course``."""
    penalties = Penalties(course)
    for row in rows:
        late = penalties.lateness(row.student, row.assignment, row.timestamp, row.results.score)
        row.duedate, row.penalty = late.duedate, late.penalty


class Penalties:
    """Due dates, extensions and the configured late penalty of one course, read once."""

    def __init__(self, course: Course) -> None:
        from nbgrader.preprocessors import AssignLatePenalties

        self.duedates: dict[str, datetime | None] = {}
        self.extensions: dict[tuple[str, str], object] = {}
        if course.has_gradebook():
            from nbgrader.api import Gradebook

            with Gradebook(course.db_url) as gradebook:
                for assignment in gradebook.assignments:
                    self.duedates[assignment.name] = assignment.duedate
                    for sub in assignment.submissions:
                        if sub.extension is not None:
                            self.extensions[(sub.student.id, assignment.name)] = sub.extension
        assigner = AssignLatePenalties(config=course.config)
        assigner.init_plugin()
        self.plugin = assigner.plugin_inst

    def lateness(self, student: str, assignment: str, timestamp: str, score: float) -> Lateness:
        """``student``'s submission of ``assignment`` made at ``timestamp`` (timestamp.txt's text),
        scored ``score``: its due date (the extension added), seconds late and penalty."""
        due = self.duedates.get(assignment)
        if due is None:
            return Lateness()
        extension = self.extensions.get((student, assignment))
        due = due + extension if extension is not None else due
        submitted = parse_timestamp(timestamp)
        late = max(0.0, (submitted - due).total_seconds()) if submitted is not None else 0.0
        penalty = 0.0
        if late > 0:
            penalty = self.plugin.late_submission_penalty(student, score, late) or 0.0
            penalty = min(max(float(penalty), 0.0), score)  # as nbgrader's AssignLatePenalties keeps it
        return Lateness(str(due), late, penalty)
