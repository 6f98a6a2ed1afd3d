"""Score test cells: a test passes only when it ran to its end.

A test cell passes only when it ran to its end: the kernel's ``execute_reply``
says ``ok`` **and** the grader's end-of-cell sentinel (a random token printed
by a line the grader appends after the test's last line) appeared in the
cell's output.  Nothing a notebook does to error *display* (silenced
tracebacks, ``sys.excepthook``) can turn a failure into a pass, because the
verdict never depends on an error being shown.  Only the exception's message
is reported, never a test cell's source, so hidden tests stay hidden.

The sandbox worker calls :func:`score_test` for every test cell; ``check``,
``grade`` and Gradescope all reach it through :mod:`autograder.frontends.pipeline`.
"""
from __future__ import annotations

import json
import re
import secrets

from autograder.results.results import Results, TestResult

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
MAX_MESSAGE_CHARS = 2000


def new_sentinel() -> str:
    """A fresh token for one test cell; the notebook cannot know it in advance."""
    return "AGEND" + secrets.token_hex(16)


def with_sentinel(source: str, sentinel: str) -> str:
    """``source`` followed by a top-level line that prints ``sentinel`` when reached."""
    return source.rstrip() + f"\nprint({sentinel!r}, flush=True)\n"


def _without_log_lines(text: str) -> str:
    # Once placement logging is on, TensorFlow keeps printing placer lines to
    # fd 1 (it cannot be switched off again); they are noise in feedback.
    from autograder.checks.placement import is_placement_line

    return "".join(line for line in text.splitlines(keepends=True) if not is_placement_line(line))


def after_token(text: str, token: str) -> str | None:
    """The JSON value a grader cell printed right after ``token`` in ``text``, or None.

    TensorFlow's placer writes to fd 1 from its own threads and ipykernel forwards
    those bytes into the same stream in 1000-byte chunks, so half a log line can
    come just before the answer, or a whole one just after it on the same line.
    The token is found anywhere and only the one JSON value after it is taken."""
    at = text.find(token)
    if at < 0:
        return None
    start = at + len(token)
    try:
        _, end = json.JSONDecoder().raw_decode(text, start)
    except ValueError:
        return None
    return text[start:end]


def stdout_of(cell) -> str:
    return "".join(o.get("text", "") for o in cell.get("outputs", [])
                   if o.get("output_type") == "stream" and o.get("name") == "stdout")


def _text_outputs(cell, sentinel: str) -> str:
    parts = []
    for out in cell.get("outputs", []):
        if out.get("output_type") == "stream" and out.get("name") == "stdout":
            parts.append(_without_log_lines(out.get("text", "").replace(sentinel + "\n", "").replace(sentinel, "")))
        elif out.get("output_type") in ("execute_result", "display_data"):
            parts.append(out.get("data", {}).get("text/plain", ""))
    return "".join(parts).strip()


def error_of(cell) -> tuple[str, str] | None:
    """The (exception name, message) a cell's outputs record, ANSI colours removed; None if none shown."""
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


def score_test(cell, *, grade_id: str, points: float, reply: dict | None, sentinel: str,
               visibility: str = "visible") -> TestResult:
    """Score one executed test cell from the kernel's reply and the sentinel.

    ``reply`` is the content of the kernel's ``execute_reply`` (None: no reply
    came).  The error shown in the cell's outputs is used only for its text;
    the reply decides."""
    status = (reply or {}).get("status")
    if status == "error" or (status is None and error_of(cell)):
        ename = (reply or {}).get("ename") or (error_of(cell) or ("Error", ""))[0]
        evalue = _ANSI.sub("", (reply or {}).get("evalue") or (error_of(cell) or ("", ""))[1])
        verdict = "inconclusive" if evalue.startswith("inconclusive") and ename != "NotImplementedError" else "failed"
        return TestResult(grade_id, 0.0, points, _message_for(ename, evalue), visibility, verdict)
    if status != "ok":
        return TestResult(grade_id, 0.0, points, "this test did not run (the notebook stopped before it)",
                          visibility, "error")
    if sentinel not in stdout_of(cell):
        return TestResult(grade_id, 0.0, points,
                          "this test did not run to its end (its last line was never reached, or the notebook "
                          "changed how cells run or print); remove code that alters printing or cell execution",
                          visibility, "failed")
    return TestResult(grade_id, points, points, _text_outputs(cell, sentinel)[:MAX_MESSAGE_CHARS] or "passed",
                      visibility, "passed")
