"""What every gradebook exporter reads: the graded rows of a class and an optional roster.

A graded folder (``grade --out OUT``) holds ``OUT/<student>/<assignment>/results.json``;
:func:`read_graded` turns it into a :class:`Graded` table, one :class:`Row` per graded
submission.  nbgrader knows a learner only by the student id (the folder name), while an
LMS matches rows by its own ids, so :func:`read_roster` reads a CSV that maps one to the
other.  Its columns are those of ``nbgrader db student import`` (``id``, ``first_name``,
``last_name``, ``email``, ``lms_user_id``; nbgrader's own roster works as is) plus three
an LMS import may use: ``sis_user_id``, ``sis_login_id`` and ``section``.  Only ``id``
is required; other columns are ignored, as nbgrader ignores them.
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field, fields
from pathlib import Path

from autograder.errors import UsageError
from autograder.results.results import Results, graded_files

ROSTER_KEY = "id"


@dataclass
class Row:
    """One graded submission: who, which assignment, its results, nbgrader's submission time and,
    inside an nbgrader course, its due date and late penalty (:mod:`autograder.results.gradebook`)."""

    student: str
    assignment: str
    results: Results
    timestamp: str = ""
    duedate: str = ""
    penalty: float = 0.0

    @property
    def score(self) -> float:
        """The score after the late penalty (nbgrader export's ``score``)."""
        return round(self.results.score - self.penalty, 6)


@dataclass(frozen=True)
class Person:
    """A roster entry; every field but ``id`` may be empty."""

    id: str
    first_name: str = ""
    last_name: str = ""
    email: str = ""
    lms_user_id: str = ""
    sis_user_id: str = ""
    sis_login_id: str = ""
    section: str = ""

    @property
    def sortable_name(self) -> str:
        """``Last, First`` (the form an LMS export lists), or whichever part is known, or the id."""
        names = [n for n in (self.last_name, self.first_name) if n]
        return ", ".join(names) or self.id


ROSTER_COLUMNS = tuple(f.name for f in fields(Person))


@dataclass
class Roster:
    """Student id → :class:`Person`; a student not listed gets a person with only the id."""

    people: dict[str, Person] = field(default_factory=dict)

    def get(self, student: str) -> Person:
        return self.people.get(student) or Person(student)

    def missing(self, students: list[str]) -> list[str]:
        """The students not in the roster (none when there is no roster at all)."""
        return [s for s in students if self.people and s not in self.people]


def read_roster(path: Path | str | None) -> Roster:
    """The roster CSV at ``path`` (None: an empty roster).  A missing or unreadable file,
    one without an ``id`` column, or an id listed twice is a :class:`UsageError`."""
    if path is None:
        return Roster()
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")  # a spreadsheet's byte-order mark is fine
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"--roster {path}: cannot be read ({exc.__class__.__name__}); give a UTF-8 CSV "
                         f"with an '{ROSTER_KEY}' column (nbgrader's student id)") from None
    reader = csv.DictReader(io.StringIO(text))
    header = [h.strip() for h in reader.fieldnames or []]
    if ROSTER_KEY not in header:
        raise UsageError(f"--roster {path}: no '{ROSTER_KEY}' column; its columns are "
                         f"{', '.join(ROSTER_COLUMNS)} (only '{ROSTER_KEY}' is required)")
    people: dict[str, Person] = {}
    for raw in reader:
        entry = {k.strip(): (v or "").strip() for k, v in raw.items() if k and k.strip() in ROSTER_COLUMNS}
        if not entry.get(ROSTER_KEY):
            continue
        if entry[ROSTER_KEY] in people:
            raise UsageError(f"--roster {path}: student id {entry[ROSTER_KEY]!r} is listed twice; keep one row per student")
        people[entry[ROSTER_KEY]] = Person(**entry)
    return Roster(people)


@dataclass
class Graded:
    """A class's graded submissions and the part columns in the source notebooks' order."""

    rows: list[Row]
    part_columns: list[str] = field(default_factory=list)
    # Folders graded by no assignment (``grade`` found no source for their name): only grades.csv
    # lists them, with status ``skipped``; an LMS gradebook would take each for an assignment.
    skipped: list[Row] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.rows = sorted(self.rows, key=lambda r: (r.assignment, r.student))
        self.skipped = sorted(self.skipped, key=lambda r: (r.assignment, r.student))
        self._by_key = {(r.student, r.assignment): r for r in self.rows}  # a class of 500 × 10: no scans
        if not self.part_columns:  # each results.json lists its parts in the source's order
            for row in self.rows:
                self.part_columns += [t.name for t in row.results.tests if t.name not in self.part_columns]

    @property
    def assignments(self) -> list[str]:
        return sorted({r.assignment for r in self.rows})

    @property
    def students(self) -> list[str]:
        return sorted({r.student for r in self.rows})

    def results(self, student: str, assignment: str) -> Results | None:
        row = self._by_key.get((student, assignment))
        return row.results if row is not None else None

    def score(self, student: str, assignment: str) -> float | None:
        """The submission's score after any late penalty, or None when it was not graded."""
        row = self._by_key.get((student, assignment))
        return row.score if row is not None else None

    def max_points(self, assignment: str) -> float:
        """The assignment's points: every results file of it lists all its parts."""
        return max((r.results.max_score for r in self.rows if r.assignment == assignment), default=0.0)


def number(value: float) -> str:
    """A score as an LMS reads it: ``3``, ``2.5`` (no exponent, no thousands separator)."""
    return f"{value:g}"


def read_timestamp(folder: Path) -> str:
    """nbgrader's submission time (``timestamp.txt``), or empty."""
    try:
        return (folder / "timestamp.txt").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return ""


def read_graded(out_dir: Path | str, submissions: Path | str | None = None) -> Graded:
    """Every ``<student>/<assignment>/results.json`` under ``out_dir``; ``submissions``
    (nbgrader's ``submitted/`` folder) supplies the timestamps.  A folder with no results
    is a :class:`UsageError`: there is nothing to export."""
    out_dir = Path(out_dir)
    if not out_dir.is_dir():
        raise UsageError(f"{out_dir}: no such folder; give the --out folder of a `grade` run")
    rows = []
    for student, assignment, _path, results in graded_files(out_dir):
        if student.startswith(".") or assignment.startswith(".") or results is None:
            continue  # None: a half-written file, which `grade` regrades
        stamp = read_timestamp(Path(submissions) / student / assignment) if submissions else ""
        rows.append(Row(student, assignment, results, stamp))
    if not rows:
        raise UsageError(f"{out_dir}: no graded submissions (<student>/<assignment>/results.json); run `grade` first")
    return Graded(rows)
