"""``python -m autograder bench``: time every registered benchmark pair and write
one JSON file of ratios with their intervals and the machine they came from.

The book's plots read these files (``book/data/results/*.json``), so every
figure in the book is a measurement with its hardware attached.  Pairs come
from ``autograder.benchmarks.BENCHMARKS``; each is timed with
``autograder.timing.measure_speedup``.  Checks not graded on this profile are
still timed and recorded (verdict "skipped"), because the book wants the
number either way.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import socket
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Sequence

from autograder.errors import UsageError

ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = ROOT / "book" / "data" / "results"
SCHEMA = 1


def machine_metadata() -> dict[str, Any]:
    """Hardware and software facts for the results file (``doctor``'s report,
    without its list of checks, plus host name and time)."""
    from autograder.doctor import machine_report

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
    """Write ``data`` so that a reader never sees half a file: a temporary file
    in the same directory, then ``os.replace``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2, sort_keys=False)
            handle.write("\n")
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def select(names: Sequence[str] | None) -> list[str]:
    """The registered pairs to run, in registry order; unknown names are a usage error."""
    from autograder.benchmarks import BENCHMARKS

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
    from autograder.benchmarks import BENCHMARKS
    from autograder.timing import measure_speedup

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
                ratio=res.ratio, ci_low=res.ci_low, ci_high=res.ci_high, confidence=res.confidence,
                trials=res.trials, calls_per_trial=res.calls_per_trial, min_ratio=res.min_ratio,
                message=res.message,
            )
        pairs[name] = entry
        report(f"{name}: {entry['message']} [{entry['verdict']}]")
    from autograder.roofline import bench_section

    peaks = bench_section(chosen, pairs)  # this machine's limits, for pairs that state their work
    meta["load_average_after"] = _load_average()
    data = {"schema": SCHEMA, "machine": meta, "budget_s": budget_s, "pairs": pairs}
    if peaks is not None:
        data["roofline_peaks"] = peaks
    path = out or default_output_path(meta)
    write_json_atomic(path, data)
    return path, data


def _run(args: argparse.Namespace) -> int:
    if args.budget <= 0:
        raise UsageError(f"--budget must be a positive number of seconds, got {args.budget:g}")
    select(args.only)  # report unknown names before TensorFlow starts
    out = Path(args.out) if args.out else None
    if out is not None and out.is_dir():
        raise UsageError(f"--out {args.out} is a directory; give a file name such as {args.out}/results.json")
    path, data = run_benchmarks(args.only, budget_s=args.budget, out=out)
    print(f"wrote {path}")
    verdicts = [p["verdict"] for p in data["pairs"].values()]
    if "inconclusive" in verdicts:
        print("some pairs were inconclusive: re-run on a quieter machine or with a larger --budget", file=sys.stderr)
    return 1 if {"fail", "error"} & set(verdicts) else 0


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "bench",
        help="time the book's benchmark pairs and write a results JSON file",
        description="Time every registered benchmark pair (baseline vs faster version) and write "
        "ratios with confidence intervals and machine metadata to one JSON file. "
        "Exit 1 if a pair fails its threshold or errors.",
    )
    parser.add_argument("--out", metavar="FILE",
                        help="where to write the JSON (default: book/data/results/<gpu-or-host>-<date>.json)")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run only these pairs")
    parser.add_argument("--budget", type=float, default=20.0, metavar="S",
                        help="seconds of timed trials per pair before a verdict is 'inconclusive' (default 20)")
    parser.set_defaults(func=_run)
