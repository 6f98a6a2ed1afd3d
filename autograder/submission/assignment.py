"""The assignment: what the instructor's source notebook says, read once.

:func:`load_assignment` reads the source notebook (its tests, points, hidden lines, data
files and the course's limits for it) into one :class:`Assignment`; every front end grades
against it and the sandbox restores each submission from its notebook.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from autograder.errors import UsageError
from autograder.judge.client import HIDDEN_BEGIN  # the one spelling of the marker
from autograder.submission import notebook as nbtools
from autograder.submission.limits import Limits, course_limits
from autograder.submission.restore import hidden_test_lines


@dataclass
class Assignment:
    """What the instructor's source notebook says about one assignment."""

    name: str
    source: Path  # the source notebook: tests, locked cells, points
    parts: list[nbtools.GradedPart] = field(default_factory=list)  # tested and manual, in the source's order
    data_files: list[Path] = field(default_factory=list)
    hidden_lines: list[str] = field(default_factory=list)
    hidden_parts: frozenset[str] = frozenset()  # parts whose test cell holds hidden tests
    limits: Limits = Limits()  # what the course's grading.toml sets for it (see submission/limits.py)
    notebook: object = None  # the source notebook as read once here: the sandbox restores from it
    manual: frozenset[str] = frozenset()  # parts an instructor grades by hand (nbgrader's formgrader)

    @property
    def part_names(self) -> list[str]:
        return [p.grade_id for p in self.parts]


def load_assignment(source: Path | str, *, data_files: list[Path] | None = None) -> Assignment:
    """The assignment whose source notebook is ``source``; its data files are the
    other files in its folder unless ``data_files`` is given.  A missing or broken
    source notebook is the instructor's error: :class:`UsageError`."""
    source = Path(source)
    if not source.is_file():
        raise UsageError(f"no source notebook {source}; the source folder must hold <assignment>/<assignment>.ipynb")
    source_nb = nbtools.load(source)
    if data_files is None:
        data_files = files_beside(source)
    hidden_parts = frozenset(
        nbtools.nbgrader_meta(cell)["grade_id"] for cell in source_nb.cells
        if nbtools.is_test_cell(cell) and HIDDEN_BEGIN in cell.source)
    manual = frozenset(p.grade_id for p in nbtools.manual_parts(source_nb)) - {
        p.grade_id for p in nbtools.graded_parts(source_nb)}
    return Assignment(source.stem, source, nbtools.all_parts(source_nb), list(data_files),
                      hidden_test_lines(source_nb), hidden_parts,
                      course_limits(source.resolve().parent.parent, source.stem), source_nb, manual)


def files_beside(notebook: Path) -> list[Path]:
    """The data files in ``notebook``'s folder: everything but notebooks, hidden
    entries and ``__pycache__``."""
    return [p for p in sorted(notebook.parent.iterdir())
            if p.suffix != ".ipynb" and not p.name.startswith(".") and p.name != "__pycache__"]


def select_parts(assignment: Assignment, wanted: list[str] | None) -> list[str] | None:
    """``wanted`` checked against the assignment's parts (a usage error names the real ones)."""
    if not wanted:
        return None
    unknown = [w for w in wanted if w not in assignment.part_names]
    if unknown:
        raise UsageError(f"no graded part {unknown[0]!r} in {assignment.name}; "
                         f"its parts are: {', '.join(assignment.part_names)}")
    return list(wanted)
