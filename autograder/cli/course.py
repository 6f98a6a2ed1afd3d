"""The course's commands: ``bench`` and ``roofline`` (the book's figures), ``release`` (the
exercises from their sources) and ``init-course`` (an nbgrader course folder for a term)."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from autograder.errors import UsageError


def add_bench(sub) -> None:
    parser = sub.add_parser(
        "bench", help="time the book's benchmark pairs and write a results JSON file",
        description="Time every registered benchmark pair (baseline vs faster version) and write "
        "ratios with confidence intervals and machine metadata to one JSON file. "
        "Exit 1 if a pair fails its threshold or errors.")
    parser.add_argument("--out", metavar="FILE",
                        help="where to write the JSON (default: book/data/results/<gpu-or-host>-<date>.json)")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run only these pairs")
    parser.add_argument("--budget", type=float, default=20.0, metavar="S",
                        help="seconds of timed trials per pair before a verdict is 'inconclusive' (default 20)")
    parser.set_defaults(func=_bench)


def _bench(args: argparse.Namespace) -> int:
    from autograder.course.bench import run_benchmarks, select

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


def add_roofline(sub) -> None:
    parser = sub.add_parser(
        "roofline", help="measure this machine's memory bandwidth and matmul throughput",
        description="Probe the memory bandwidth (large elementwise copy and add, GB/s) and the matmul "
        "throughput per dtype (GFLOP/s) that TensorFlow reaches on one device: the limits the "
        "book's speedups are compared with.")
    parser.add_argument("--device", help="device to probe, e.g. /CPU:0 or /GPU:0 (default: /GPU:0 if present)")
    parser.add_argument("--repeats", type=int, default=20, help="timed calls per probe; the fastest counts (default 20)")
    parser.add_argument("--json", action="store_true", help="print the probes as JSON")
    parser.set_defaults(func=_roofline)


def _roofline(args: argparse.Namespace) -> int:
    from autograder.course.roofline import format_peaks, measure_peaks

    if args.repeats < 1:
        raise UsageError(f"--repeats must be at least 1, got {args.repeats}")
    if args.device is not None and not args.device.upper().lstrip("/").startswith(("CPU:", "GPU:")):
        raise UsageError(f"--device must look like /CPU:0 or /GPU:0, got {args.device!r}")
    try:
        peaks = measure_peaks(args.device, repeats=args.repeats)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    print(json.dumps(peaks.to_dict(), indent=2) if args.json else format_peaks(peaks))
    return 0


def add_init_course(sub) -> None:
    parser = sub.add_parser(
        "init-course", help="start an nbgrader course folder: nbgrader_config.py and the assignments' sources",
        description="Write DIR/nbgrader_config.py (course_id, Exchange.root, source/ and release/ folders) and copy "
        "the assignments' sources (solutions, hidden tests, data) into DIR/source/; then run nbgrader in DIR.")
    parser.add_argument("folder", metavar="DIR", help="the new course's folder")
    parser.add_argument("--course-id", required=True, help="nbgrader's course_id (the exchange's folder name)")
    parser.add_argument("--exchange", default="/srv/nbgrader/exchange",
                        help="nbgrader's Exchange.root, shared with the students (default %(default)s)")
    parser.add_argument("--assignment", action="append", metavar="NAME",
                        help="copy only this assignment (repeatable; default: all of solutions/)")
    parser.set_defaults(func=_init_course)


def _init_course(args: argparse.Namespace) -> int:
    from autograder.course.new_course import init_course

    written = init_course(args.folder, course_id=args.course_id, exchange=args.exchange, assignments=args.assignment)
    print(f"wrote {written[0]} and {len(written) - 1} source folder(s) in {Path(args.folder) / 'source'}; "
          f"next: cd {args.folder} && nbgrader generate_assignment NAME")
    return 0


def add_release(sub) -> None:
    parser = sub.add_parser("release", help="generate exercises/ from solutions/ with nbgrader")
    parser.add_argument("assignments", nargs="+", help="assignment names under solutions/")
    parser.add_argument("--into", type=Path, help="release folder (default: exercises/)")
    parser.set_defaults(func=_release)


def _release(args: argparse.Namespace) -> int:
    from autograder.course.release import generate

    generate(args.assignments, release_dir=args.into)
    return 0
