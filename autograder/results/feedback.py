"""Feedback a learner may see: an HTML page per submission, never hidden tests.

Only scores and messages reach the page: no cell source, no traceback.  A
message can still quote code (a learner's function could raise an
``AssertionError`` whose text is the test calling it), so :func:`redact_hidden`
removes any message that contains a line of the source's hidden tests before
``results.json`` or the page is written.
"""
from __future__ import annotations

import html
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
