"""The class report as one self-contained HTML page, plots embedded as PNG.

:func:`render_html` turns a :class:`autograder.report.class_report.ClassReport`
into a page with no external file: per assignment the score histogram, the parts'
statuses and pass rates, the grouped failures, the speed parts' measured speedups
against the reference solution's, the slowest and stopped submissions, and, when
asked for, the similar pairs with their answer cells side by side.  Plots are
drawn with matplotlib's object API (no pyplot state, no display needed) and
embedded as base64 ``data:`` URIs, so the page opens anywhere.  :func:`write_report`
writes the page and the three CSV files.
"""
from __future__ import annotations

import base64
import html
import io
import statistics
from pathlib import Path

from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from autograder.atomic import write_atomic
from autograder.errors import UsageError
from autograder.report.class_report import (PENDING, STATUSES, AssignmentReport, ClassReport, Speed, failures_csv,
                                             parts_csv, review_csv, speeds_csv)
from autograder.report.similarity import pairs_csv

COLOURS = {"passed": "#1a7f37", "failed": "#b42318", "inconclusive": "#9a6700", "manual": "#0969da",
           "error": "#6e3fb2",
           "missing": "#8c959f", "skipped": "#d0a215"}
STYLE = """
body{font-family:system-ui,sans-serif;max-width:70rem;margin:2rem auto;padding:0 1rem;color:#222}
table{border-collapse:collapse;width:100%;margin:.5rem 0 1.5rem}
th,td{text-align:left;padding:.3rem .5rem;border-bottom:1px solid #ddd;vertical-align:top}
td.num{text-align:right;font-variant-numeric:tabular-nums}td:first-child{white-space:nowrap}
td.msg,pre{white-space:pre-wrap;font-family:ui-monospace,monospace;font-size:.85rem}
img.plot{display:block;max-width:100%;height:auto;margin:.5rem 0}
.pair td{width:50%}mark{background:#ffe08a}.note{color:#555}
"""
esc = html.escape
SHOWN_PAIRS = 50  # pairs shown side by side; the table and report_similarity.csv list every one


def _png(fig: Figure) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _img(fig: Figure, alt: str) -> str:
    return f'<img class="plot" alt="{esc(alt, quote=True)}" src="data:image/png;base64,{_png(fig)}">'


def score_plot(report: AssignmentReport) -> str:
    """Histogram of the total scores."""
    fig = Figure(figsize=(6.4, 2.6))
    ax = fig.subplots()
    top = max(report.max_score, max(report.totals, default=0.0))
    bins = [b - 0.5 for b in range(int(top) + 2)] if top <= 40 else 20
    ax.hist(report.totals, bins=bins, color="#3b6ea5", edgecolor="white")
    ax.set_xlabel(f"total score (of {report.max_score:g})")
    ax.set_ylabel("submissions")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(f"{report.name}: {len(report.totals)} submissions")
    return _img(fig, f"{report.name}: histogram of total scores")


def parts_plot(report: AssignmentReport) -> str:
    """One horizontal bar per part, stacked by status, labelled with the pass rate."""
    parts = list(report.parts.values())
    fig = Figure(figsize=(6.4, 0.9 + 0.45 * len(parts)))
    ax = fig.subplots()
    names = [p.part for p in parts]
    left = [0] * len(parts)
    for status in STATUSES:
        counts = [p.statuses.get(status, 0) for p in parts]
        if any(counts):
            ax.barh(names, counts, left=left, color=COLOURS[status], label=status)
            left = [a + b for a, b in zip(left, counts)]
    for y, part in enumerate(parts):
        ax.text(left[y], y, f" {part.pass_rate:.0%} pass", va="center", fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("submissions")
    ax.set_xlim(0, max(left, default=1) * 1.2 or 1)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    return _img(fig, f"{report.name}: status of every part")


def speed_plot(part: str, speeds: list[Speed]) -> str:
    """Histogram of the learners' speedups, with the reference's and the needed speedup marked."""
    fig = Figure(figsize=(6.4, 2.6))
    ax = fig.subplots()
    ax.hist([s.speedup for s in speeds], bins=min(20, max(5, len(speeds))), color="#3b6ea5",
            edgecolor="white", label="submissions")
    references = [s.reference for s in speeds if s.reference is not None]
    needed = [s.needed for s in speeds if s.needed is not None]
    if references:
        ax.axvline(statistics.median(references), color="#1a7f37", linestyle="--",
                   label=f"reference solution (median {statistics.median(references):.2f}x)")
    if needed:
        ax.axvline(statistics.median(needed), color="#b42318", linestyle=":",
                   label=f"needed (median {statistics.median(needed):.2f}x)")
    ax.set_xlabel("measured speedup over the baseline (x)")
    ax.set_ylabel("submissions")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(part)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    return _img(fig, f"{part}: measured speedups")


def _table(header: list[str], rows: list[list[str]], numeric: set[int] = frozenset()) -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f'<td class="num">{c}</td>' if i in numeric else f"<td>{c}</td>"
                                    for i, c in enumerate(row)) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _parts_section(report: AssignmentReport) -> str:
    rows = [[esc(p.part) + (" (has hidden tests)" if p.hidden else ""), f"{p.max_score:g}", str(p.count),
             *[str(p.statuses.get(s, 0)) for s in STATUSES], f"{p.pass_rate:.0%}",
             f"{statistics.fmean(p.scores):.2f}"] for p in report.parts.values()]
    return _table(["part", "points", "submissions", *STATUSES, "pass rate", "mean"], rows,
                  set(range(1, 3 + len(STATUSES) + 2)))


def _failures_section(report: AssignmentReport) -> str:
    if not report.failures:
        return "<p>No failures.</p>"
    rows = [[esc(f.part), esc(f.status), str(f.count), esc(f.clause) or '<span class="note">not identified</span>',
             f'<span class="msg">{esc(f.example)}</span>'] for f in report.failures]
    return ('<p class="note">Same part, status and clause, and the same message once numbers are replaced: '
            "one row, with one example.</p>"
            + _table(["part", "status", "count", "clause", "message (example)"], rows, {2}))


def _speed_section(report: AssignmentReport) -> str:
    by_part: dict[str, list[Speed]] = {}
    for speed in report.speeds:
        by_part.setdefault(speed.part, []).append(speed)
    chunks = []
    for part, speeds in by_part.items():
        rows = [[esc(s.student), f"{s.speedup:.2f}x", f"{s.needed:.2f}x" if s.needed is not None else "",
                 f"{s.reference:.2f}x" if s.reference is not None else "", esc(s.status)]
                for s in sorted(speeds, key=lambda s: s.speedup)]
        chunks.append(f"<h4>{esc(part)}</h4>" + speed_plot(part, speeds)
                      + _table(["student", "speedup", "needed", "reference solution", "status"], rows, {1, 2, 3}))
    return "".join(chunks) or "<p>No speed part measured a speedup.</p>"


def _time_section(report: AssignmentReport) -> str:
    slow = (_table(["student", "seconds"], [[esc(s), f"{t:.1f}"] for s, t in report.slowest], {1})
            if report.slowest else "<p>No execution times recorded.</p>")
    stopped = (_table(["student", "time-out", "seconds", "why it stopped"],
                      [[esc(s.student), "yes" if s.timed_out else "no",
                        f"{s.execution_time_s:.1f}" if s.execution_time_s is not None else "",
                        f'<span class="msg">{esc(s.reason)}</span>'] for s in report.stopped], {2})
               if report.stopped else "<p>None.</p>")
    timed_out = sum(s.timed_out for s in report.stopped)
    pending = (_table(["student", "part", "waits for"], [[esc(s), esc(p), esc(PENDING[status])]
                                                          for s, p, status in sorted(report.pending)], set())
               if report.pending else "<p>None.</p>")
    return (f"<h3>Slowest submissions</h3>{slow}<h3>Stopped early ({len(report.stopped)}, "
            f"{timed_out} by a time limit)</h3>{stopped}<h3>Not final ({len(report.pending)} parts)</h3>{pending}")


def _review_section(report: AssignmentReport) -> str:
    """The integrity review's findings, by part: what to read in which submission, and why."""
    if not report.review:
        return "<p>Nothing flagged.</p>"
    students = len({f["student"] for f in report.review})
    rows = [[esc(f["part"] or "(whole notebook)"), esc(f["student"]), esc(f["cell"]), str(f["line"] or ""),
             f'<span class="msg">{esc(f["reason"])}</span>'] for f in report.review]
    return (f"<p>{students} submission{'s' if students != 1 else ''}: lines an instructor should read "
            "(what they import, patch or reach, or a part the integrity checks failed). A flag is not a "
            "grade: the parts scored what their checks found.</p>"
            + _table(["part", "student", "cell", "line", "why"], rows, {3}))


def _assignment_section(report: AssignmentReport) -> str:
    mean = statistics.fmean(report.totals) if report.totals else 0.0
    return (f'<section class="assignment" id="{esc(report.name, quote=True)}"><h2>{esc(report.name)}</h2>'
            f"<p>{len(report.totals)} submissions, mean {mean:.2f} of {report.max_score:g}.</p>"
            f"{score_plot(report)}<h3>Parts</h3>{parts_plot(report)}{_parts_section(report)}"
            f"<h3>Failures, grouped</h3>{_failures_section(report)}"
            f"<h3>Flagged for review ({len(report.review)})</h3>{_review_section(report)}"
            f"<h3>Speed parts</h3>{_speed_section(report)}{_time_section(report)}</section>")


def _highlighted(text: str, spans: list[tuple[int, int]]) -> str:
    out, at = [], 0
    for start, end in sorted(spans):
        start = max(start, at)
        if end > start:
            out += [esc(text[at:start]), f"<mark>{esc(text[start:end])}</mark>"]
            at = end
    return "".join(out) + esc(text[at:])


def _similarity_section(report: ClassReport) -> str:
    if report.similarity_threshold is None:
        return ""
    intro = (f'<section id="similarity"><h2>Similar submissions</h2><p>Answer cells compared with copydetect '
             f"(winnowed fingerprints of the tokens; names and comments do not count; the released template "
             f"is ignored). Pairs at or above {report.similarity_threshold:.0%}: {len(report.similarity)}.</p>")
    if not report.similarity:
        return intro + "<p>No pair reaches the threshold.</p></section>"
    chunks = [intro, _table(["assignment", "student", "student", "similarity"],
                            [[esc(p.assignment), esc(p.first), esc(p.second), f"{p.score:.0%}"]
                             for p in report.similarity], {3})]
    shown = report.similarity[:SHOWN_PAIRS]
    if len(shown) < len(report.similarity):
        chunks.append(f'<p class="note">The {len(shown)} highest pairs are shown side by side; '
                      "report_similarity.csv lists them all.</p>")
    for pair in shown:
        rows = "".join(
            f'<tr><th colspan="2">{esc(cell.grade_id)}: {cell.score:.0%}</th></tr><tr class="pair">'
            f"<td><pre>{_highlighted(cell.first, cell.first_spans)}</pre></td>"
            f"<td><pre>{_highlighted(cell.second, cell.second_spans)}</pre></td></tr>" for cell in pair.cells)
        chunks.append(f"<details open><summary>{esc(pair.assignment)}: {esc(pair.first)} and {esc(pair.second)} "
                      f"({pair.score:.0%})</summary><table><thead><tr><th>{esc(pair.first)}</th>"
                      f"<th>{esc(pair.second)}</th></tr></thead><tbody>{rows}</tbody></table></details>")
    return "".join(chunks) + "</section>"


def render_html(report: ClassReport) -> str:
    """The whole page."""
    mode = ("Instructor view: failing hidden clauses are named by their line in the source."
            if report.instructor else "Hidden tests are not shown (run with --instructor to see their lines).")
    unreadable = (f"<p>{len(report.unreadable)} results.json file(s) could not be read and are not counted.</p>"
                  if report.unreadable else "")
    index = "".join(f'<li><a href="#{esc(n, quote=True)}">{esc(n)}</a></li>' for n in report.assignments)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Class report</title>"
            f"<style>{STYLE}</style></head><body><h1>Class report</h1>"
            f'<p class="note">{esc(str(report.out))}. {mode}</p>{unreadable}<ul>{index}</ul>'
            + "".join(_assignment_section(a) for a in report.assignments.values())
            + _similarity_section(report) + "</body></html>\n")


REPORT_FILES = ("report.html", "report_parts.csv", "report_failures.csv", "report_speedups.csv",
                "report_review.csv")
SIMILARITY_FILE = "report_similarity.csv"  # with --similarity


def write_report(report: ClassReport, dest: Path | str | None = None) -> list[Path]:
    """Write the page and the CSV files into ``dest`` (default: the graded folder); the
    similar pairs' CSV only when similarity was computed."""
    dest = Path(dest) if dest is not None else report.out
    if dest.exists() and not dest.is_dir():
        raise UsageError(f"--out {dest} is a file; give a folder for the report")
    texts = [render_html(report), parts_csv(report), failures_csv(report), speeds_csv(report), review_csv(report)]
    names = list(REPORT_FILES)
    if report.similarity_threshold is not None:
        names.append(SIMILARITY_FILE)
        texts.append(pairs_csv(report.similarity))
    return [write_atomic(dest / name, text) for name, text in zip(names, texts)]
