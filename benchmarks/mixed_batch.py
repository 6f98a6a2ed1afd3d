"""A mixed batch graded the way an instructor grades it, against plain execution (a benchmark).

    .venv/bin/python benchmarks/mixed_batch.py [--copies 1] [--workers 2] [--rounds 1]
        [--tree PATH] [--kernels warm|cold] [--json FILE]

The batch is every assignment under ``solutions/``, ``--copies`` reference submissions of
each (``<student>/<assignment>/<assignment>.ipynb``).  Two ways, run in turns (``--rounds``
times each, alternating, so load from elsewhere hits both):

* ``grade``: ``python -m autograder grade SUBMISSIONS --workers N`` as an instructor runs it
  (sandbox, judge, hidden tests, feedback, grades.csv);
* ``nbclient``: the same source notebooks (same answers, every test, hidden ones included)
  executed by nbclient, ``N`` at a time, nothing else.

It prints and records notebooks a minute for each and their ratio (grade / nbclient), with
the machine.  ``--tree`` grades with the ``autograder`` package and ``solutions/`` of another
checkout (say, an older commit in a ``git worktree``); given twice, a before/after pair is
measured in one run, every way taking every place in the order in turn.  ``--kernels`` (repeatable;
default ``warm``) grades each tree with warm workers (forked by the zygote, the default) and/or
cold ones (``AUTOGRADER_KERNELS=cold``: a fresh worker and kernel interpreter per submission, the
grader before warm workers), side by side.

The figures go, with the machine, the commit graded with, the date and the load average
before and after, to ``--json`` (default ``book/data/results/grading/mixed-batch-<host>-<date>T<hhmm>.json``: two runs a day keep both);
the book's "Hardware and results" page shows every file there.
"""
from __future__ import annotations

import argparse
import datetime
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

GRADING_RESULTS = ROOT / "book" / "data" / "results" / "grading"


def make_batch(source_root: Path, copies: int, folder: Path) -> list[Path]:
    notebooks = []
    for assignment in sorted(p.name for p in source_root.iterdir() if (p / f"{p.name}.ipynb").is_file()):
        for copy in range(copies):
            target = folder / f"student{copy:03d}" / assignment
            shutil.copytree(source_root / assignment, target)
            notebooks.append(target / f"{assignment}.ipynb")
    return notebooks


def time_grade(submissions: Path, source_root: Path, workers: int, tree: Path, out: Path,
               kernels: str = "warm") -> float:
    env = {**os.environ, "PYTHONPATH": str(tree), "AUTOGRADER_KERNELS": kernels}
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
    parser.add_argument("--tree", type=Path, action="append",
                        help="a checkout whose autograder grades its own solutions/ (repeat it for a "
                             "before/after pair in one run; default: this checkout)")
    parser.add_argument("--kernels", action="append", choices=("warm", "cold"),
                        help="warm (forked workers, the default) or cold (a fresh interpreter each); repeat "
                             "it to measure both side by side")
    parser.add_argument("--source-root", type=Path, default=ROOT / "solutions",
                        help="the notebooks nbclient executes (default: %(default)s)")
    parser.add_argument("--json", type=Path, help="where to write the figures (default: %(default)s)",
                        default=GRADING_RESULTS / f"mixed-batch-{platform.node()}-"
                                                  f"{datetime.datetime.now():%Y-%m-%dT%H%M}.json")
    args = parser.parse_args(argv)
    trees = [t.resolve() for t in (args.tree or [ROOT])]
    kernels = args.kernels or ["warm"]
    graders = [(i, k) for i in range(len(trees)) for k in kernels]
    load_before, started = _load_average(), datetime.datetime.now(datetime.timezone.utc)
    with tempfile.TemporaryDirectory(prefix="mixed-batch-") as tmp:
        plain = make_batch(args.source_root.resolve(), args.copies, Path(tmp) / "plain")
        batches = [Path(tmp) / f"submitted{i}" for i in range(len(trees))]
        for tree, folder in zip(trees, batches):
            make_batch(tree / "solutions", args.copies, folder)
        ways = ["nbclient"] + [f"grade {i} {k}" for i, k in graders]
        times: dict[str, list[float]] = {way: [] for way in ways}
        for round_ in range(args.rounds):
            shift = round_ % len(ways)  # each way takes each place in turn, so load from elsewhere hits all
            for way in ways[shift:] + ways[:shift]:
                if way == "nbclient":
                    seconds = time_nbclient(plain, args.workers)
                else:
                    i, kind = int(way.split()[1]), way.split()[2]
                    seconds = time_grade(batches[i], trees[i] / "solutions", args.workers, trees[i],
                                         Path(tmp) / f"out{i}-{kind}-{round_}", kind)
                times[way].append(seconds)
                print(f"round {round_ + 1}: {way:13s} {len(plain)} notebooks in {seconds:6.1f} s "
                      f"({60 * len(plain) / seconds:.1f} a minute)", flush=True)
    best = {way: min(values) for way, values in times.items()}
    per_minute = {way: round(60 * len(plain) / s, 2) for way, s in best.items()}
    cpu = hardware.cpu_info()
    figures = {
        "recorded": started.isoformat(timespec="seconds"),
        "machine": {"cpu": f"{cpu.model} ({cpu.vendor})", "cores": os.cpu_count(),
                    "python": platform.python_version(), "onednn": hardware.onednn_status().enabled},
        "load_average_before": load_before, "load_average_after": _load_average(),
        "notebooks": len(plain), "workers": args.workers, "rounds": args.rounds,
        "nbclient": {"seconds": times["nbclient"], "per_minute": per_minute["nbclient"]},
        "graders": [{"commit": _commit(trees[i]), "tree": str(trees[i]), "kernels": k,
                     "seconds": times[f"grade {i} {k}"], "per_minute": per_minute[f"grade {i} {k}"],
                     "over_nbclient": round(best[f"grade {i} {k}"] / best["nbclient"], 3)}
                    for i, k in graders],
    }
    print(json.dumps({"notebooks": len(plain), "nbclient_per_minute": per_minute["nbclient"],
                      "graders": [{k: g[k] for k in ("commit", "kernels", "per_minute", "over_nbclient")}
                                  for g in figures["graders"]]}))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(figures, indent=1, default=str) + "\n")
    print(f"wrote {args.json}")
    return 0


def _load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _commit(tree: Path) -> str:
    """The commit ``tree`` is checked out at ("unknown" for an extracted tree, say from ``git archive``)."""
    found = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return found.stdout.strip() if found.returncode == 0 and (tree / ".git").exists() else "unknown"


if __name__ == "__main__":
    raise SystemExit(main())
