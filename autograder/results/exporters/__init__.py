"""Gradebook exporters: one seam, one module per format.

An exporter takes a class's graded results (:class:`~autograder.results.exporters.base.Graded`,
read from a graded folder by :func:`~autograder.results.exporters.base.read_graded`) and a
roster, and renders one file, written atomically.  The formats:

- ``nbgrader`` (:mod:`.nbgrader`): ``grades.csv``, nbgrader's export columns, one row per
  student and assignment; ``grade`` always writes it;
- ``canvas`` (:mod:`.canvas`): ``grades_canvas.csv``, Canvas's gradebook import;
- ``moodle`` (:mod:`.moodle`): ``grades_moodle.csv``, Moodle's CSV grade import.

A new LMS is one module with ``FILENAME`` and ``render(graded, roster, assignment_ids)``,
listed in :data:`EXPORTERS`.  ``grade --export``, ``export`` and any other command call
:func:`write_export` or :func:`write`.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping

from autograder.atomic import write_atomic
from autograder.errors import UsageError
from autograder.results.exporters import canvas, moodle, nbgrader
from autograder.results.exporters.base import Graded, Roster, read_graded, read_roster


@dataclass(frozen=True)
class Exporter:
    name: str
    filename: str  # written in the graded folder unless a path is given
    render: Callable[[Graded, Roster, Mapping[str, str] | None], str]


EXPORTERS = {name: Exporter(name, module.FILENAME, module.render)
             for name, module in (("nbgrader", nbgrader), ("canvas", canvas), ("moodle", moodle))}
DEFAULT_FORMAT = "nbgrader"


@dataclass
class Written:
    """What one export wrote, and the students the roster did not list (their rows use the student id)."""

    format: str
    path: Path
    rows: int
    not_in_roster: list[str]


def parse_formats(values: list[str] | None) -> list[str]:
    """``["canvas,moodle", "nbgrader"]`` → the formats, in order, once each; an unknown
    name is a :class:`UsageError` that lists the known ones."""
    names: list[str] = []
    for value in values or []:
        for name in (n.strip().lower() for n in value.split(",")):
            if not name:
                continue
            if name not in EXPORTERS:
                raise UsageError(f"unknown export format {name!r}; use one of {', '.join(EXPORTERS)} "
                                 "(repeat the option or separate them with commas)")
            if name not in names:
                names.append(name)
    return names


def parse_assignment_ids(values: list[str] | None) -> dict[str, str]:
    """``["01_op_logs=4757"]`` → ``{"01_op_logs": "4757"}`` (an LMS's assignment ids)."""
    ids: dict[str, str] = {}
    for value in values or []:
        name, sep, number = value.partition("=")
        if not sep or not name.strip() or not number.strip().isdigit():
            raise UsageError(f"--assignment-id {value!r}: write ASSIGNMENT=ID, e.g. 01_op_logs=4757 "
                             "(the number in the LMS's assignment URL)")
        ids[name.strip()] = number.strip()
    return ids


def write(graded: Graded, fmt: str, path: Path | str, *, roster: Roster | None = None,
          assignment_ids: Mapping[str, str] | None = None) -> Written:
    """Render ``graded`` as ``fmt`` and write it to ``path`` atomically."""
    roster = roster or Roster()
    path = write_atomic(Path(path), EXPORTERS[fmt].render(graded, roster, assignment_ids))
    return Written(fmt, path, len(graded.rows), roster.missing(graded.students))


def write_export(out_dir: Path | str, fmt: str, *, roster: Roster | Path | str | None = None,
                 assignment_ids: Mapping[str, str] | None = None, submissions: Path | str | None = None,
                 path: Path | str | None = None) -> Written:
    """Export the graded folder ``out_dir`` as ``fmt`` (``nbgrader``, ``canvas``, ``moodle``)
    into ``path`` (default: the format's file name in ``out_dir``).  ``roster``: a
    :class:`Roster` or the path of a roster CSV; ``submissions``: nbgrader's ``submitted/``
    folder, for the timestamps of the nbgrader format (an nbgrader course's: also its gradebook's
    names, due dates and late penalties, :mod:`autograder.results.gradebook`)."""
    if fmt not in EXPORTERS:
        parse_formats([fmt])  # raises the usage error that names the formats
    if not isinstance(roster, Roster):
        roster = read_roster(roster)
    from autograder.results import gradebook

    graded = read_graded(out_dir, submissions)
    course = gradebook.find_course(submissions) if submissions else None
    if course is not None:  # an nbgrader course's submitted/: its gradebook dates and names the rows
        gradebook.fill_rows(course, graded.rows)
        if not roster.people:
            roster = gradebook.read_roster(course)
    return write(graded, fmt, Path(path) if path else Path(out_dir) / EXPORTERS[fmt].filename,
                 roster=roster, assignment_ids=assignment_ids)
