"""What sandboxed grading costs, measured (a benchmark, not a test).

    .venv/bin/python benchmarks/grading_overhead.py [--assignment 01_op_logs] [--source-root solutions]
        [--repeats 3] [--batch 4] [--json results.json]

On one submission (the assignment's reference solution):

* ``plain``: nbclient executes the notebook in a fresh kernel, nothing else;
* ``nbconvert``: ``jupyter nbconvert --execute --to notebook`` (adds its start-up);
* ``sandbox``: :func:`autograder.sandbox.host.run_submission` (worker, namespaces,
  cgroups, integrity checks, test cells sent one by one);
* ``nbgrader``: ``nbgrader autograde`` in a throw-away course folder
  (generate_assignment runs first and is not timed).

The three in-process ways are interleaved, ``--repeats`` times, and medians
are reported, so a burst of load from another process hits all of them.
Then a batch of ``--batch`` copies is graded with the ``grade`` function with
1 and with 2 workers: submissions per minute and the speed-up of 2 workers.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import nbformat  # noqa: E402
from nbclient import NotebookClient  # noqa: E402

from autograder.frontends import grade  # noqa: E402
from autograder.sandbox import host as sandbox  # noqa: E402


def _bin(name: str) -> str:
    return str(Path(sys.executable).parent / name)


def time_plain(notebook: Path) -> float:
    nb = nbformat.read(notebook, as_version=4)
    start = time.perf_counter()
    NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(notebook.parent)}}).execute()
    return time.perf_counter() - start


def time_nbconvert(notebook: Path, workdir: Path) -> float:
    start = time.perf_counter()
    subprocess.run([_bin("jupyter"), "nbconvert", "--execute", "--to", "notebook", "--allow-errors",
                    "--output-dir", str(workdir), "--ExecutePreprocessor.timeout=600", str(notebook)],
                   check=True, capture_output=True)
    return time.perf_counter() - start


def time_sandbox(notebook: Path, source: Path) -> tuple[float, float]:
    data = [p for p in source.parent.iterdir() if p.suffix != ".ipynb"]
    start = time.perf_counter()
    results = sandbox.run_submission(notebook, source, data_files=data, hidden_dirs=[source.parent.parent])
    return time.perf_counter() - start, results.score / results.max_score


def nbgrader_course(assignment: str, notebook: Path, root: Path) -> None:
    (root / "source" / assignment).mkdir(parents=True)
    shutil.copytree(notebook.parent, root / "source" / assignment, dirs_exist_ok=True)
    (root / "nbgrader_config.py").write_text(
        "c = get_config()\n"
        f"c.CourseDirectory.root = {str(root)!r}\n"
        f"c.CourseDirectory.db_url = 'sqlite:///{root}/gradebook.db'\n"
    )
    env = {**os.environ, "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")}
    subprocess.run([_bin("nbgrader"), "generate_assignment", assignment, "--force"], cwd=root, env=env,
                   check=True, capture_output=True)
    submitted = root / "submitted" / "student1" / assignment
    submitted.mkdir(parents=True)
    shutil.copy(notebook, submitted / notebook.name)


def time_nbgrader(assignment: str, root: Path) -> float:
    env = {**os.environ, "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")}
    start = time.perf_counter()
    proc = subprocess.run([_bin("nbgrader"), "autograde", assignment, "--student", "student1", "--force",
                           "--ExecutePreprocessor.timeout=600"], cwd=root, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"nbgrader autograde failed:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return elapsed


def batch_throughput(notebook: Path, source_root: Path, copies: int, workers: int, tmp: Path) -> float:
    subs = tmp / f"batch-{workers}" / "submitted"
    for i in range(copies):
        folder = subs / f"student{i:03d}" / notebook.parent.name
        folder.mkdir(parents=True)
        shutil.copy(notebook, folder / notebook.name)
    start = time.perf_counter()
    rows = grade.grade(subs, tmp / f"batch-{workers}" / "out", workers=workers, source=source_root,
                       progress_stream=io.StringIO())
    elapsed = time.perf_counter() - start
    if len(rows) != copies or any(r.results.score != r.results.max_score for r in rows):
        raise SystemExit("the batch did not grade every copy of the solution to full marks")
    return copies / elapsed * 60


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--assignment", default="01_op_logs")
    parser.add_argument("--source-root", type=Path, default=ROOT / "solutions",
                        help="nbgrader source folder holding the assignment (default: solutions/); "
                             "tests/files/hostile/tiny/source with --assignment tiny measures the fixed cost")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch", type=int, default=4, help="submissions in the throughput batch")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    source = args.source_root.resolve() / args.assignment / f"{args.assignment}.ipynb"
    if not source.is_file():
        parser.error(f"no {source}")
    times: dict[str, list[float]] = {"plain": [], "nbconvert": [], "sandbox": [], "nbgrader": []}
    with tempfile.TemporaryDirectory(prefix="grading-overhead-") as tmp_name:
        tmp = Path(tmp_name)
        work = tmp / "submission" / args.assignment
        shutil.copytree(source.parent, work)
        submission = work / source.name
        nbgrader_course(args.assignment, source, tmp / "course")
        for i in range(args.repeats):
            order = [("plain", lambda: time_plain(submission)),
                     ("sandbox", lambda: time_sandbox(submission, source)[0]),
                     ("nbconvert", lambda: time_nbconvert(submission, tmp / "nbconvert-out")),
                     ("nbgrader", lambda: time_nbgrader(args.assignment, tmp / "course"))]
            if i % 2:
                order.reverse()
            for name, run in order:
                times[name].append(run())
                print(f"  repeat {i + 1}: {name:9} {times[name][-1]:6.1f} s", file=sys.stderr)
        _, fraction = time_sandbox(submission, source)
        if fraction != 1:
            raise SystemExit(f"the sandbox scored the reference solution {fraction:.0%}: the timings would not "
                             "measure a real grading; run `python -m autograder grade` on it to see why")
        throughput = {w: batch_throughput(submission, source.parent.parent, args.batch, w, tmp) for w in (1, 2)}
    med = {k: statistics.median(v) for k, v in times.items()}
    figures = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "load_average_at_end": os.getloadavg(),
        "assignment": args.assignment,
        "sandbox_score_fraction": fraction,
        "median_seconds": med,
        "all_seconds": times,
        "overhead_vs_plain": med["sandbox"] / med["plain"],
        "overhead_vs_nbconvert": med["sandbox"] / med["nbconvert"],
        "sandbox_vs_nbgrader": med["sandbox"] / med["nbgrader"],
        "batch_submissions_per_minute": throughput,
        "speedup_2_workers": throughput[2] / throughput[1],
    }
    print(f"{args.assignment} on {figures['machine']} (medians of {args.repeats}):")
    for name in ("plain", "nbconvert", "sandbox", "nbgrader"):
        print(f"  {name:9} {med[name]:6.1f} s")
    print(f"  sandbox / plain nbclient   {figures['overhead_vs_plain']:.2f}x")
    print(f"  sandbox / nbconvert        {figures['overhead_vs_nbconvert']:.2f}x")
    print(f"  sandbox / nbgrader         {figures['sandbox_vs_nbgrader']:.2f}x")
    print(f"  batch of {args.batch}: {throughput[1]:.2f}/min with 1 worker, {throughput[2]:.2f}/min with 2 "
          f"({figures['speedup_2_workers']:.2f}x)")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
