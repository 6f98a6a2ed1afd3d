"""A mixed batch graded the way an instructor grades it, against plain execution (a benchmark).

    .venv/bin/python benchmarks/mixed_batch.py [--copies 1] [--workers 2] [--rounds 1]
        [--tree PATH] [--json book/data/results/mixed_batch.json]

The batch is every assignment under ``solutions/``, ``--copies`` reference submissions of
each (``<student>/<assignment>/<assignment>.ipynb``).  Two ways, run in turns (``--rounds``
times each, alternating, so load from elsewhere hits both):

* ``grade``: ``python -m autograder grade SUBMISSIONS --workers N`` as an instructor runs it
  (sandbox, judge, hidden tests, feedback, grades.csv);
* ``nbclient``: the same source notebooks (same answers, every test, hidden ones included)
  executed by nbclient, ``N`` at a time, nothing else.

It prints and records notebooks a minute for each and their ratio (grade / nbclient), with
the machine.  ``--tree`` grades with the ``autograder`` package of another checkout (say,
an older commit in a ``git worktree``), so a before/after pair is measured in one run.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import nbformat  # noqa: E402
from nbclient import NotebookClient  # noqa: E402

from autograder.checks import hardware  # noqa: E402


def make_batch(source_root: Path, copies: int, folder: Path) -> list[Path]:
    notebooks = []
    for assignment in sorted(p.name for p in source_root.iterdir() if (p / f"{p.name}.ipynb").is_file()):
        for copy in range(copies):
            target = folder / f"student{copy:03d}" / assignment
            shutil.copytree(source_root / assignment, target)
            notebooks.append(target / f"{assignment}.ipynb")
    return notebooks


def time_grade(submissions: Path, source_root: Path, workers: int, tree: Path, out: Path) -> float:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "autograder", "grade", str(submissions), "--out", str(out),
                    "--source", str(source_root), "--workers", str(workers), "--force"],
                   check=True, env=env, cwd=tree, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def _execute(notebook: Path) -> None:
    nb = nbformat.read(notebook, as_version=4)
    NotebookClient(nb, timeout=1800, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(notebook.parent)}}).execute()


def time_nbclient(notebooks: list[Path], workers: int) -> float:
    start = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(_execute, notebooks))
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--tree", type=Path, default=ROOT, help="checkout whose autograder grades")
    parser.add_argument("--source-root", type=Path, default=ROOT / "solutions")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="mixed-batch-") as tmp:
        submissions = Path(tmp) / "submitted"
        notebooks = make_batch(args.source_root.resolve(), args.copies, submissions)
        times: dict[str, list[float]] = {"grade": [], "nbclient": []}
        for round_ in range(args.rounds):
            order = ("grade", "nbclient") if round_ % 2 == 0 else ("nbclient", "grade")
            for way in order:
                if way == "grade":
                    seconds = time_grade(submissions, args.source_root.resolve(), args.workers,
                                         args.tree.resolve(), Path(tmp) / f"out{round_}")
                else:
                    seconds = time_nbclient(notebooks, args.workers)
                times[way].append(seconds)
                print(f"round {round_ + 1}: {way:8s} {len(notebooks)} notebooks in {seconds:6.1f} s "
                      f"({60 * len(notebooks) / seconds:.1f} a minute)", flush=True)
    best = {way: min(values) for way, values in times.items()}
    cpu = hardware.cpu_info()
    figures = {
        "notebooks": len(notebooks), "workers": args.workers, "tree": str(args.tree.resolve()),
        "seconds": times, "per_minute": {w: round(60 * len(notebooks) / s, 2) for w, s in best.items()},
        "grade_over_nbclient": round(best["grade"] / best["nbclient"], 3),
        "machine": {"cpu": f"{cpu.model} ({cpu.vendor})", "cores": os.cpu_count(),
                    "python": platform.python_version(), "onednn": hardware.onednn_status().enabled},
    }
    print(json.dumps({k: figures[k] for k in ("notebooks", "per_minute", "grade_over_nbclient")}))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(figures, indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
