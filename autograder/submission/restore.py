"""The restore step: a submission turned into what the sandbox's worker runs.

As nbgrader does, every test and locked cell comes back from the source notebook by
``grade_id`` (:func:`autograder.submission.notebook.restore_from_source`), outputs are
stripped, and each code cell becomes one item of the worker's job: a learner's cell, a
locked cell with the names it binds (:func:`bound_names`, checked before every test), or
a test cell, whose source the grader sends only when the worker reaches it.  A test cell
whose hidden block the judge runs is recorded in :attr:`Prepared.judged`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autograder.judge import client as judge_client
from autograder.submission import notebook as nbtools

MAX_NOTEBOOK_BYTES = 200 * 1024 * 1024


@dataclass
class Prepared:
    """A submission turned into what the worker runs, or why it cannot run."""

    parts: list[nbtools.GradedPart]
    cells: list[dict] = field(default_factory=list)
    tests: dict[str, str] = field(default_factory=dict)
    missing_answers: dict[str, str] = field(default_factory=dict)  # test gid -> answer gid
    include_tf: bool = False
    notebook: Any = None
    error: str = ""
    judge_cells: list[str] = field(default_factory=list)  # the source's locked code cells, for the judge
    judged: dict[str, str] = field(default_factory=dict)  # test gid -> the hidden test the judge runs


def hidden_test_lines(source_nb) -> list[str]:
    """Lines between ``### BEGIN HIDDEN TESTS`` and ``### END HIDDEN TESTS`` in the source."""
    return [line.strip() for cell in source_nb.cells if nbtools.is_test_cell(cell)
            for line in judge_client.hidden_block(cell.source).splitlines() if line.strip()]


def _answers_before_tests(source_nb) -> dict[str, list[str]]:
    """For each test grade_id, the answer cells between it and the previous test."""
    result: dict[str, list[str]] = {}
    pending: list[str] = []
    for cell in source_nb.cells:
        gid = nbtools.nbgrader_meta(cell).get("grade_id")
        if nbtools.is_answer_cell(cell) and gid:
            pending.append(gid)
        elif nbtools.is_test_cell(cell) and gid:
            result[gid] = pending
            pending = []
    return result


def prepare(submission: Path, source: Path, source_nb=None) -> Prepared:
    """Read the submission (and the source notebook, unless ``source_nb`` is it, already
    read); never raises for a bad submission."""
    if source_nb is None:
        source_nb = nbtools.load(source)  # the instructor's: a bad one is a usage error
    parts = nbtools.graded_parts(source_nb)
    prepared = Prepared(parts=parts)
    try:
        size = submission.stat().st_size
    except OSError as exc:
        prepared.error = f"the submission cannot be read ({exc.__class__.__name__})"
        return prepared
    if size > MAX_NOTEBOOK_BYTES:
        prepared.error = (f"the notebook file is {size / 2**20:.0f} MB (limit {MAX_NOTEBOOK_BYTES // 2**20} MB); "
                          "clear its outputs (Kernel > Restart & Clear Output), save and resubmit")
        return prepared
    try:
        nb = nbtools.load(submission)
        merged = nbtools.restore_from_source(nb, source_nb)
    except nbtools.NotebookError as exc:
        prepared.error = str(exc).replace(str(submission), submission.name)
        return prepared
    except (RecursionError, MemoryError, ValueError, TypeError, KeyError, AttributeError) as exc:
        prepared.error = f"{submission.name}: not a valid notebook ({exc.__class__.__name__}); save it again from Jupyter"
        return prepared
    present = {nbtools.nbgrader_meta(c).get("grade_id") for c in nb.cells if nbtools.is_answer_cell(c)}
    for test_id, answers in _answers_before_tests(source_nb).items():
        missing = [a for a in answers if a not in present]
        if missing:
            prepared.missing_answers[test_id] = missing[0]
    for number, cell in enumerate(merged.cells, start=1):
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
            meta = nbtools.nbgrader_meta(cell)
            # How feedback names the cell: its place in the notebook, and its grade_id if it has one.
            label = f"cell {number}" + (f" ({meta['grade_id']})" if meta.get("grade_id") else "")
            if nbtools.is_test_cell(cell):
                prepared.tests[meta["grade_id"]] = cell.source
                prepared.cells.append({"kind": "test", "grade_id": meta["grade_id"],
                                       "points": float(meta.get("points", 0)), "label": label})
            elif nbtools.is_locked_cell(cell):
                # The grader records what it binds and checks before every test that it still does.
                prepared.cells.append({"kind": "locked", "source": cell.source, "label": label,
                                       "binds": bound_names(cell.source)})
            else:
                prepared.cells.append({"kind": "code", "source": cell.source, "label": label})
    prepared.include_tf = any("tensorflow" in c.source for c in source_nb.cells if c.cell_type == "code")
    prepared.judge_cells = [c.source for c in source_nb.cells if c.cell_type == "code"
                            and not nbtools.is_answer_cell(c) and not nbtools.is_test_cell(c)]
    for gid, test_source in prepared.tests.items():
        judged = judge_client.judge_source(test_source)
        if judged is not None:
            prepared.judged[gid] = judged
    merged.cells = [c for c in merged.cells if not nbtools.is_test_cell(c)]
    prepared.notebook = merged
    return prepared


# A locked cell's comment line naming state its own functions update: frozen by identity only.
STATE_MARKER = "# autograder: state "


def bound_names(source: str) -> list[str]:
    """The global names a cell binds: at its top level (assignments, defs, imports,
    loops, ``with``), not inside the functions it defines (except ``global``)."""
    import ast

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    found: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(stmt.name)
            continue
        inner = ast.Module(body=[stmt], type_ignores=[])
        scoped = {id(n) for f in ast.walk(inner) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                    ast.ClassDef, ast.Lambda))
                  for n in ast.walk(f) if n is not f}
        for node in ast.walk(inner):
            if id(node) in scoped:
                continue
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                found.add(node.id)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                found.update((a.asname or a.name).split(".")[0] for a in node.names)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                found.add(node.name)
    found.update(n for node in ast.walk(tree) if isinstance(node, ast.Global) for n in node.names)
    state = {n.strip() for line in source.splitlines() if line.strip().startswith(STATE_MARKER)
             for n in line.strip()[len(STATE_MARKER):].split(",")}
    return sorted(f"state:{n}" if n in state else n for n in found)
