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
the machine, and the CPU time each way used (:class:`TreeCpu`: the grader's whole process tree,
zygotes, workers, kernels and judges; nbclient's kernels and its own threads), with its ratio
in the rounds that used least.  On a shared machine, CPU time moves less with other load than
wall time does.  ``--tree`` grades with the ``autograder`` package and ``solutions/`` of another
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
import threading
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


class TreeCpu:
    """CPU seconds (user and system) used by a process and everything under it, sampled every
    ``interval`` seconds while it runs.  Sampled, not read from the waited-for children's total
    (``RUSAGE_CHILDREN``): the grader's workers and kernels are forked by zygotes, and that total
    saw 9.6 of the 55.9 CPU-seconds a ``grade`` of ten notebooks used here.  A process that lives
    less than one interval is missed, and each loses at most its last interval."""

    def __init__(self, pid: int, interval: float = 0.1):
        import psutil

        self.root, self.interval = psutil.Process(pid), interval
        self.used: dict[tuple[int, float], float] = {}
        self.own_start = self._cpu(self.root) if pid == os.getpid() else 0.0
        self._sampler_cpu = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tree-cpu", daemon=True)
        self._thread.start()

    @staticmethod
    def _cpu(proc) -> float:
        times = proc.cpu_times()
        return times.user + times.system

    def _sample(self) -> None:
        import psutil

        try:
            procs = self.root.children(recursive=True)
        except psutil.Error:
            procs = []
        if self.root.pid != os.getpid():  # another process: its own time is sampled like its children's
            procs.append(self.root)
        for proc in procs:
            try:
                self.used[(proc.pid, proc.create_time())] = self._cpu(proc)
            except psutil.Error:
                pass

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()
        self._sample()
        self._sampler_cpu = time.thread_time()

    def stop(self) -> float:
        """The CPU seconds used since the start: every process sampled under the root, and the
        root's own (sampled too, unless the root is this process: then its time since the start,
        less this sampler's)."""
        self._stop.set()
        self._thread.join()
        own = self._cpu(self.root) - self.own_start - self._sampler_cpu if self.root.pid == os.getpid() else 0.0
        return own + sum(self.used.values())


def time_grade(submissions: Path, source_root: Path, workers: int, tree: Path, out: Path,
               kernels: str = "warm") -> tuple[float, float]:
    """Wall seconds and CPU seconds of one ``grade`` of ``submissions``."""
    env = {**os.environ, "PYTHONPATH": str(tree), "AUTOGRADER_KERNELS": kernels}
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "autograder", "grade", str(submissions), "--out", str(out),
                             "--source", str(source_root), "--workers", str(workers), "--force"],
                            env=env, cwd=tree, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    cpu = TreeCpu(proc.pid)
    code = proc.wait()
    seconds = time.perf_counter() - start
    used = cpu.stop()
    if code:
        raise subprocess.CalledProcessError(code, proc.args)
    return seconds, used


def _execute(notebook: Path) -> None:
    nb = nbformat.read(notebook, as_version=4)
    NotebookClient(nb, timeout=1800, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(notebook.parent)}}).execute()


def time_nbclient(notebooks: list[Path], workers: int) -> tuple[float, float]:
    """Wall seconds and CPU seconds of executing ``notebooks``, ``workers`` at a time."""
    start, cpu = time.perf_counter(), TreeCpu(os.getpid())
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(_execute, notebooks))
    return time.perf_counter() - start, cpu.stop()


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
        cpu_times: dict[str, list[float]] = {way: [] for way in ways}
        for round_ in range(args.rounds):
            shift = round_ % len(ways)  # each way takes each place in turn, so load from elsewhere hits all
            for way in ways[shift:] + ways[:shift]:
                if way == "nbclient":
                    seconds, cpu_used = time_nbclient(plain, args.workers)
                else:
                    i, kind = int(way.split()[1]), way.split()[2]
                    seconds, cpu_used = time_grade(batches[i], trees[i] / "solutions", args.workers, trees[i],
                                                   Path(tmp) / f"out{i}-{kind}-{round_}", kind)
                times[way].append(seconds)
                cpu_times[way].append(round(cpu_used, 1))
                print(f"round {round_ + 1}: {way:13s} {len(plain)} notebooks in {seconds:6.1f} s "
                      f"({60 * len(plain) / seconds:.1f} a minute), {cpu_used:6.1f} CPU-s", flush=True)
    best = {way: min(values) for way, values in times.items()}
    least_cpu = {way: min(values) for way, values in cpu_times.items()}
    per_minute = {way: round(60 * len(plain) / s, 2) for way, s in best.items()}
    cpu = hardware.cpu_info()
    figures = {
        "recorded": started.isoformat(timespec="seconds"),
        "machine": {"cpu": f"{cpu.model} ({cpu.vendor})", "cores": os.cpu_count(),
                    "python": platform.python_version(), "onednn": hardware.onednn_status().enabled},
        "load_average_before": load_before, "load_average_after": _load_average(),
        "notebooks": len(plain), "workers": args.workers, "rounds": args.rounds,
        "nbclient": {"seconds": times["nbclient"], "per_minute": per_minute["nbclient"],
                     "cpu_seconds": cpu_times["nbclient"]},
        "graders": [{"commit": _commit(trees[i]), "tree": str(trees[i]), "kernels": k,
                     "seconds": times[f"grade {i} {k}"], "per_minute": per_minute[f"grade {i} {k}"],
                     "over_nbclient": round(best[f"grade {i} {k}"] / best["nbclient"], 3),
                     "cpu_seconds": cpu_times[f"grade {i} {k}"],
                     "cpu_over_nbclient": round(least_cpu[f"grade {i} {k}"] / least_cpu["nbclient"], 3)}
                    for i, k in graders],
    }
    print(json.dumps({"notebooks": len(plain), "nbclient_per_minute": per_minute["nbclient"],
                      "graders": [{k: g[k] for k in ("commit", "kernels", "per_minute", "over_nbclient",
                                                     "cpu_over_nbclient")}
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
