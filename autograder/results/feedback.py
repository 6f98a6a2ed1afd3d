"""Feedback a learner may see: an HTML page per submission, never hidden tests.

Only scores and messages reach the page: no cell source, no traceback.  A
message can still quote code (a learner's function could raise an
``AssertionError`` whose text is the test calling it), so :func:`redact_hidden`
removes any message that contains a line of the source's hidden tests before
``results.json`` or the page is written.
"""
from __future__ import annotations

import html
import os
import re
import sys
import sysconfig
from dataclasses import replace

from autograder.results.results import Results

MIN_HIDDEN_LINE = 12  # shorter lines ("assert x", "pass") are not worth hiding and would over-match
REDACTED = "[this message quoted the hidden tests and was removed; ask your instructor]"


def redact_hidden(results: Results, hidden_lines: list[str]) -> Results:
    """``results`` with every message that quotes a hidden-test line replaced."""
    lines = [line for line in (ln.strip() for ln in hidden_lines) if len(line) >= MIN_HIDDEN_LINE]

    def clean(text: str) -> str:
        flat = " ".join(text.split())
        for line in lines:
            if line in text or " ".join(line.split()) in flat:
                return REDACTED
        return text

    tests = [replace(t, output=clean(t.output)) for t in results.tests]
    return replace(results, tests=tests, output=clean(results.output))


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_FRAME = re.compile(r'^\s*File "([^"]+)", line \d+(, in .*)?$')


def _graders_places() -> tuple[str, ...]:
    """Where the grader's own code lives: this package and the Python installation (TensorFlow, Keras)."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    places = {here, sys.prefix, sys.base_prefix, sys.exec_prefix, sysconfig.get_paths()["stdlib"]}
    return tuple(os.path.realpath(p).rstrip(os.sep) + os.sep for p in places if p)


def clean_message(text: str, places: tuple[str, ...] | None = None) -> str:
    """A message as a learner should read it: no terminal colour codes, no stack frame of the grader's
    own code or of the installation (the grader's install paths and TensorFlow's "defined at" stacks
    through the sandbox's processes say nothing a learner can act on), the rest kept in order.  The
    learner's own frames (a notebook cell's) stay."""
    places = places or _graders_places()
    lines, dropping = [], False
    for line in _ANSI.sub("", text).splitlines():
        frame = _FRAME.match(line)
        if frame:
            dropping = frame.group(1).startswith("<frozen") or \
                os.path.realpath(frame.group(1)).startswith(places)
            if dropping:
                continue
        elif dropping and (not line.strip() or line.startswith((" ", "\t"))):
            continue  # the dropped frame's source line and the blank line after it
        else:
            dropping = False
        lines.append(line)
    cleaned = "\n".join(lines)
    for place in places:  # a path of the grader's left in prose
        cleaned = cleaned.replace(place, "")
    return re.sub(r"\n{3,}", "\n\n", cleaned).strip() if text.strip() else text


def clean_messages(results: Results) -> Results:
    """``results`` with every message passed through :func:`clean_message`."""
    places = _graders_places()
    tests = [replace(t, output=clean_message(t.output, places)) for t in results.tests]
    return replace(results, tests=tests, output=clean_message(results.output, places))


_STATUS = {"passed": "passed", "failed": "failed", "error": "did not run", "missing": "missing",
           "inconclusive": "pending: the grader could not decide", "skipped": "skipped",
           "manual": "needs manual grading"}

_STYLE = """
body{font-family:system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem;color:#222}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.4rem .6rem;border-bottom:1px solid #ddd;vertical-align:top}
td.msg{white-space:pre-wrap;font-family:ui-monospace,monospace;font-size:.9rem}
.passed{color:#1a7f37}.failed,.error,.missing{color:#b42318}.inconclusive,.skipped,.manual{color:#9a6700}
"""


def not_final(results: Results) -> str:
    """Why ``results``' score is not final yet (a part waits for an instructor or a regrade), or ""."""
    manual = [t for t in results.tests if t.status == "manual"]
    undecided = [t.name for t in results.tests if t.status == "inconclusive"]
    why = []
    if manual:
        why.append(f"{sum(t.max_score for t in manual):g} point(s) need manual grading "
                   f"({', '.join(t.name for t in manual)})")
    if undecided:
        why.append(f"the grader could not decide {', '.join(undecided)} and will grade it again")
    return f"Not the final grade: {'; '.join(why)}." if why else ""


def render_html(results: Results, *, student: str, assignment: str) -> str:
    """A self-contained HTML page: total, then one row per part (points, status, message)."""
    esc = html.escape
    rows = []
    for test in results.tests:
        status = _STATUS.get(test.status, test.status)
        rows.append(
            f"<tr><td>{esc(test.name)}</td><td>{test.score:g} / {test.max_score:g}</td>"
            f'<td class="{esc(test.status)}">{esc(status)}</td><td class="msg">{esc(test.output)}</td></tr>'
        )
    note = f"<p><strong>Note:</strong> {esc(results.output)}</p>" if results.output else ""
    note = (f'<p class="pending">{esc(not_final(results))}</p>' if not_final(results) else "") + note
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{esc(assignment)}: {esc(student)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{esc(assignment)}</h1><p>Student: {esc(student)}</p>"
        f"<p><strong>Score: {results.score:g} / {results.max_score:g}</strong></p>{note}"
        "<table><thead><tr><th>Part</th><th>Points</th><th>Status</th><th>Message</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table></body></html>\n"
    )
