"""Reading notebooks and their nbgrader cells.

Graded parts are nbgrader test cells (``grade: true, solution: false``) with
a ``grade_id`` and ``points``; manually graded parts (an answer cell with ``grade: true,
solution: true``, or a ``task`` cell) carry points but no test: :func:`manual_parts`.  When a source notebook is given, test cells are
restored from it by ``grade_id`` as nbgrader does, so deleting, editing or
duplicating a test cell in a submission changes nothing.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import nbformat

from autograder.errors import NotebookError


@dataclass(frozen=True)
class GradedPart:
    grade_id: str
    points: float


def load(path: Path | str) -> nbformat.NotebookNode:
    """Read a notebook, or raise a one-line :class:`NotebookError` that says what is wrong."""
    path = Path(path)
    if not path.exists():
        raise NotebookError(f"{path}: no such file; give the path to a .ipynb notebook")
    if path.is_dir():
        raise NotebookError(f"{path}: is a folder; give the path to a .ipynb notebook inside it")
    try:
        raw = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError) as exc:
        raise NotebookError(f"{path}: cannot be read as text ({exc.__class__.__name__}); is it a notebook?") from None
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise NotebookError(
            f"{path}: not a Jupyter notebook (invalid JSON at line {exc.lineno}); "
            "re-download it or save it again from Jupyter"
        ) from None
    if not isinstance(data, dict) or "cells" not in data:
        raise NotebookError(f"{path}: not a Jupyter notebook (no 'cells'); save it from Jupyter as .ipynb")
    try:
        nb = nbformat.reads(raw, as_version=4)
    except Exception as exc:  # nbformat raises several types for bad structure
        raise NotebookError(f"{path}: not a valid notebook ({exc.__class__.__name__}); save it again from Jupyter") from None
    return nb


def nbgrader_meta(cell) -> dict:
    return dict(cell.get("metadata", {}).get("nbgrader", {}) or {})


def is_test_cell(cell) -> bool:
    meta = nbgrader_meta(cell)
    return cell.get("cell_type") == "code" and bool(meta.get("grade")) and not meta.get("solution")


def is_locked_cell(cell) -> bool:
    """A cell the learner must not change (nbgrader ``locked``), tests excluded."""
    meta = nbgrader_meta(cell)
    return bool(meta.get("locked")) and bool(meta.get("grade_id")) and not is_test_cell(cell) \
        and not meta.get("solution")


def is_answer_cell(cell) -> bool:
    meta = nbgrader_meta(cell)
    return bool(meta.get("solution")) and not meta.get("grade")


def graded_parts(nb) -> list[GradedPart]:
    """The graded parts of a notebook, in order, first occurrence of each grade_id."""
    seen: dict[str, GradedPart] = {}
    for cell in nb.cells:
        if is_test_cell(cell):
            meta = nbgrader_meta(cell)
            gid = meta.get("grade_id")
            if gid and gid not in seen:
                seen[gid] = GradedPart(gid, float(meta.get("points", 0)))
    return list(seen.values())


def is_manual_cell(cell) -> bool:
    """An nbgrader manually graded cell: an answer with points and no test (``grade`` and
    ``solution``), or a task (``task``); nbgrader's formgrader grades it."""
    meta = nbgrader_meta(cell)
    return bool(meta.get("grade_id")) and ((bool(meta.get("grade")) and bool(meta.get("solution")))
                                           or bool(meta.get("task")))


def manual_parts(nb) -> list[GradedPart]:
    """The manually graded parts of a notebook, in order, first occurrence of each grade_id."""
    seen: dict[str, GradedPart] = {}
    for cell in nb.cells:
        if is_manual_cell(cell):
            meta = nbgrader_meta(cell)
            seen.setdefault(meta["grade_id"], GradedPart(meta["grade_id"], float(meta.get("points", 0) or 0)))
    return list(seen.values())


def all_parts(nb) -> list[GradedPart]:
    """Every part with points, tested or manually graded, in the notebook's order."""
    tested = {p.grade_id: p for p in graded_parts(nb)}
    manual = {p.grade_id: p for p in manual_parts(nb) if p.grade_id not in tested}
    order = [nbgrader_meta(c).get("grade_id") for c in nb.cells]
    return [both for gid in dict.fromkeys(order) if (both := tested.get(gid) or manual.get(gid)) is not None]


def restore_from_source(submission, source):
    """Return a copy of ``submission`` whose test and locked cells come from ``source``.

    Every test or locked cell of the source appears exactly once, right after
    the submission cell that precedes it in the source (matched by grade_id);
    submission cells that claim a test or locked grade_id are dropped, and so
    are submission cells that claim to be tests.  Answer cells missing from the
    submission are left missing: the parts that depend on them score 0.
    """
    restored = [c for c in source.cells if is_test_cell(c) or is_locked_cell(c)]
    test_ids = {nbgrader_meta(c).get("grade_id") for c in restored}
    kept = [
        c for c in submission.cells
        if not (is_test_cell(c) or nbgrader_meta(c).get("grade_id") in test_ids)
    ]
    kept_ids = {nbgrader_meta(c).get("grade_id"): i for i, c in enumerate(kept) if nbgrader_meta(c).get("grade_id")}
    # Place each test after the last kept cell that precedes it in the source.
    insert_after: dict[int, list] = {}
    anchor = -1
    for cell in source.cells:
        gid = nbgrader_meta(cell).get("grade_id")
        if is_test_cell(cell) or is_locked_cell(cell):
            insert_after.setdefault(anchor, []).append(cell)
        elif gid in kept_ids:
            anchor = kept_ids[gid]
    merged = list(insert_after.get(-1, []))
    for i, cell in enumerate(kept):
        merged.append(cell)
        merged.extend(insert_after.get(i, []))
    result = nbformat.from_dict(json.loads(nbformat.writes(submission)))
    result.cells = [nbformat.from_dict(json.loads(json.dumps(c))) for c in merged]
    return result
