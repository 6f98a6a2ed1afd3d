"""``python -m autograder bench``: time every registered benchmark pair and write
one JSON file of ratios with their intervals and the machine they came from.

The book's plots read these files (``book/data/results/*.json``), so every
figure in the book is a measurement with its hardware attached.  Pairs come
from ``autograder.course.benchmarks.BENCHMARKS``; each is timed with
``autograder.checks.timing.measure_speedup``.  Checks not graded on this profile are
still timed and recorded (verdict "skipped"), because the book wants the
number either way.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import platform
import re
import socket
import sys
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from autograder.atomic import write_atomic
from autograder.course.results_files import RESULTS_DIR, SCHEMA
from autograder.errors import UsageError



def machine_metadata() -> dict[str, Any]:
    """Hardware and software facts for the results file (``doctor``'s report,
    without its list of checks, plus host name and time)."""
    from autograder.frontends.doctor import machine_report

    report = {k: v for k, v in machine_report().items() if k != "checks"}
    now = dt.datetime.now(dt.timezone.utc)
    report.update(
        hostname=socket.gethostname(),
        date=now.date().isoformat(),
        timestamp=now.isoformat(timespec="seconds"),
        platform=platform.platform(),
        # Other work on the machine changes CPU ratios; record how busy it was.
        load_average_1_5_15min=_load_average(),
    )
    return report


def _load_average() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:  # not available on this platform
        return None


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "machine"


def default_output_path(meta: dict[str, Any], results_dir: Path = RESULTS_DIR) -> Path:
    """``<gpu or hostname>-<date>.json`` under ``results_dir``."""
    who = meta.get("gpu") or meta.get("hostname") or "machine"
    return results_dir / f"{_slug(str(who))}-{meta['date']}.json"


def write_json_atomic(path: Path, data: Any) -> None:
    """``data`` as indented JSON, written atomically."""
    write_atomic(path, json.dumps(data, indent=2, sort_keys=False) + "\n")


def select(names: Sequence[str] | None) -> list[str]:
    """The registered pairs to run, in registry order; unknown names are a usage error."""
    from autograder.course.benchmarks import BENCHMARKS

    if not names:
        return list(BENCHMARKS)
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        raise UsageError(
            f"no benchmark named {', '.join(map(repr, unknown))}; known: {', '.join(BENCHMARKS)}"
        )
    return [n for n in BENCHMARKS if n in names]


def run_benchmarks(
    names: Sequence[str] | None = None,
    *,
    budget_s: float = 20.0,
    out: Path | None = None,
    report: Callable[[str], None] = print,
) -> tuple[Path, dict[str, Any]]:
    """Time the selected pairs, write the results file, return (path, data)."""
    from autograder.course.benchmarks import BENCHMARKS
    from autograder.checks.timing import measure_speedup

    chosen = select(names)
    meta = machine_metadata()
    pairs: dict[str, Any] = {}
    for name in chosen:
        bench = BENCHMARKS[name]
        entry: dict[str, Any] = {
            "chapter": bench.chapter, "description": bench.description, "check": bench.check,
            "label": bench.label, "baseline_label": bench.baseline_label,
        }
        try:
            baseline, candidate, make_inputs = bench.setup()
            res = measure_speedup(
                baseline, candidate, make_inputs, check=bench.check, label=bench.label,
                baseline_label=bench.baseline_label, rtol=bench.rtol, atol=bench.atol,
                budget_s=budget_s, measure_when_untimed=True,
            )
        except Exception as exc:  # one broken pair must not lose the others' numbers
            entry.update(verdict="error", message=f"{type(exc).__name__}: {exc}")
        else:
            entry.update(
                verdict=res.verdict, baseline_s=res.baseline_s, candidate_s=res.candidate_s,
                ratio=res.ratio, ci_low=res.ci_low, ci_high=res.ci_high, confidence=res.interval_confidence,
                verdict_confidence=res.confidence,
                trials=res.trials, calls_per_trial=res.calls_per_trial, min_ratio=res.min_ratio,
                message=res.message,
            )
        pairs[name] = entry
        report(f"{name}: {entry['message']} [{entry['verdict']}]")

    peaks = bench_section(chosen, pairs)  # this machine's limits, for pairs that state their work
    meta["load_average_after"] = _load_average()
    data = {"schema": SCHEMA, "machine": meta, "budget_s": budget_s, "pairs": pairs}
    if peaks is not None:
        data["roofline_peaks"] = peaks
    path = out or default_output_path(meta)
    write_json_atomic(path, data)
    return path, data


def bench_section(chosen: Iterable[str], pairs: dict[str, dict]) -> dict | None:
    """What ``bench`` adds to a results file: the probes, run only when a
    chosen pair states its work, and each such pair annotated.  None when no
    pair does (nothing to compare against)."""
    from autograder.course.benchmarks import BENCHMARKS
    from autograder.course.roofline import annotate, measure_peaks

    works = {name: BENCHMARKS[name].work() for name in chosen if BENCHMARKS[name].work is not None}
    if not works:
        return None
    try:
        peaks = measure_peaks()
    except Exception as exc:  # a failed probe must not lose the pairs' numbers
        return {"error": f"{type(exc).__name__}: {exc}"}
    annotate(pairs, works, peaks)
    return peaks.to_dict()
