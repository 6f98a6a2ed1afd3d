"""Run a notebook in a fresh kernel and score its graded parts.

Every cell runs in order in one new kernel (errors do not stop the run, as
in nbgrader).  A test cell that finishes scores its points; one that raises
scores 0 and its message becomes the feedback.  Only the exception's message
is reported, never a test cell's source, so hidden tests stay hidden.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError

from autograder import notebook as nbtools
from autograder.results import Results, TestResult

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
MAX_MESSAGE_CHARS = 2000
DEFAULT_CELL_TIMEOUT_S = 600


def kernel_env(extra: dict | None = None) -> dict:
    """The environment a notebook kernel starts with.

    Placement logging needs ``TF_CPP_MIN_LOG_LEVEL=0`` before TensorFlow is
    imported, so the kernel gets it from the start.
    """
    env = dict(os.environ)
    env["TF_CPP_MIN_LOG_LEVEL"] = "0"
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra or {})
    return env


def _without_log_lines(text: str) -> str:
    # Once placement logging is on, TensorFlow keeps printing placer lines to
    # fd 1 (it cannot be switched off again); they are noise in feedback.
    from autograder.placement import is_placement_line

    return "".join(line for line in text.splitlines(keepends=True) if not is_placement_line(line))


def _text_outputs(cell) -> str:
    parts = []
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream" and out.get("name") == "stdout":
            parts.append(_without_log_lines(out.get("text", "")))
        elif out.get("output_type") in ("execute_result", "display_data"):
            parts.append(out.get("data", {}).get("text/plain", ""))
    return "".join(parts).strip()


def error_of(cell) -> tuple[str, str] | None:
    """The (exception name, message) a cell's outputs record, ANSI colours removed; None if it ran cleanly."""
    for out in cell.get("outputs", []):
        if out.get("output_type") == "error":
            return out.get("ename", "Error"), _ANSI.sub("", out.get("evalue", ""))
    return None


def _message_for(ename: str, evalue: str) -> str:
    if ename == "AssertionError":
        text = evalue or "a check failed (no message)"
    elif ename in ("NameError", "AttributeError"):
        text = f"{ename}: {evalue} — did the answer cell above run without errors?"
    elif ename == "NotImplementedError":
        text = "not answered yet: replace `raise NotImplementedError()` with your code"
    else:
        text = f"{ename}: {evalue}"
    return text[:MAX_MESSAGE_CHARS]


def score_cells(nb, *, visible_ids: set[str] | None = None) -> list[TestResult]:
    """Score an executed notebook's test cells; one result per grade_id."""
    results: dict[str, TestResult] = {}
    for cell in nb.cells:
        if not nbtools.is_test_cell(cell):
            continue
        meta = nbtools.nbgrader_meta(cell)
        gid = meta.get("grade_id", "?")
        points = float(meta.get("points", 0))
        visibility = "visible" if visible_ids is None or gid in visible_ids else "after_published"
        error = error_of(cell)
        ran = cell.get("execution_count") is not None or cell.get("outputs")
        if error:
            ename, evalue = error
            status = "inconclusive" if evalue.startswith("inconclusive") else "failed"
            if ename == "NotImplementedError":
                status = "failed"
            result = TestResult(gid, 0.0, points, _message_for(ename, evalue), visibility, status)
        elif not ran:
            result = TestResult(gid, 0.0, points, "this test did not run (the notebook stopped before it)", visibility, "error")
        else:
            result = TestResult(gid, points, points, _text_outputs(cell)[:MAX_MESSAGE_CHARS] or "passed", visibility, "passed")
        results.setdefault(gid, result)
    return list(results.values())


def execute(nb, *, workdir: Path, cell_timeout_s: float = DEFAULT_CELL_TIMEOUT_S,
            env: dict | None = None, kernel_name: str = "python3") -> str:
    """Execute ``nb`` in place in a fresh kernel; return a note if the run stopped early."""
    client = NotebookClient(
        nb,
        timeout=cell_timeout_s,
        kernel_name=kernel_name,
        allow_errors=True,
        resources={"metadata": {"path": str(workdir)}},
    )
    note = ""
    # The kernel's own fds 1 and 2 would otherwise be the grader's: TensorFlow's
    # C++ log lines would land in `check --json` output.
    with client.setup_kernel(env=kernel_env(env), cwd=str(workdir),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL):
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            try:
                client.execute_cell(cell, index)
            except CellTimeoutError:
                note = f"cell {index + 1} ran longer than {cell_timeout_s:g} s and was stopped; later cells did not run"
                cell.outputs = [nbformat.v4.new_output("error", ename="TimeoutError", evalue=note, traceback=[])]
                break
            except DeadKernelError:
                note = f"the kernel died in cell {index + 1} (crash, os._exit or out of memory); later cells did not run"
                cell.outputs = [nbformat.v4.new_output("error", ename="KernelDied", evalue=note, traceback=[])]
                break
    return note


def run_notebook(path: Path | str, *, source: Path | str | None = None,
                 cell_timeout_s: float = DEFAULT_CELL_TIMEOUT_S, env: dict | None = None,
                 workdir: Path | str | None = None) -> Results:
    """Execute a notebook in a fresh kernel and grade it.

    ``source`` is the nbgrader source (or release) notebook whose test cells
    replace the submission's.  The kernel runs with ``workdir`` (default: the
    notebook's folder) as its working directory.
    """
    path = Path(path)
    nb = nbtools.load(path)
    visible_ids = None
    if source is not None:
        source_nb = nbtools.load(source)
        nb = nbtools.restore_test_cells(nb, source_nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    start = time.perf_counter()
    note = execute(nb, workdir=Path(workdir or path.parent), cell_timeout_s=cell_timeout_s, env=env)
    elapsed = time.perf_counter() - start
    tests = score_cells(nb, visible_ids=visible_ids)
    from autograder.hardware import quiet_current_profile

    try:
        profile = quiet_current_profile().to_dict()
    except Exception as exc:  # a bad AUTOGRADER_PROFILE is reported, not fatal here
        profile = {"name": "unknown", "error": str(exc)}
    return Results(tests=tests, notebook=str(path), profile=profile, output=note,
                   execution_time_s=round(elapsed, 3))


