"""``python -m autograder check NOTEBOOK``: a learner's self-check.

Runs the notebook in a fresh kernel, runs its test cells and prints one line
per graded part.  Exit 0 when the notebook was graded, whatever the score.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from autograder import runner
from autograder.results import Results

MARKS = {"passed": "PASS", "failed": "FAIL", "error": "ERR ", "inconclusive": "????", "skipped": "SKIP", "missing": "MISS"}


def format_results(results: Results) -> str:
    """The human-readable report, one line per graded part."""
    width = max([len(t.name) for t in results.tests] + [4])
    lines = [f"{results.notebook}  (profile {results.profile.get('name') if results.profile else '?'})"]
    for test in results.tests:
        message = " ".join(test.output.split())
        if len(message) > 300:
            message = message[:297] + "..."
        lines.append(
            f"  {MARKS.get(test.status, test.status):4}  {test.name:<{width}}  "
            f"{test.score:g}/{test.max_score:g}  {message}"
        )
    if results.output:
        lines.append(f"  note: {results.output}")
    lines.append(f"Score: {results.score:g}/{results.max_score:g}")
    return "\n".join(lines)


def check_notebook(path: str | Path, *, as_json: bool = False, cell_timeout_s: float = runner.DEFAULT_CELL_TIMEOUT_S) -> tuple[Results, str]:
    results = runner.run_notebook(path, cell_timeout_s=cell_timeout_s)
    if not results.tests:
        results.output = (results.output + " " if results.output else "") + \
            "no graded parts found: is this an exercise notebook from exercises/?"
    return results, results.to_json() if as_json else format_results(results)


def _run(args: argparse.Namespace) -> int:
    _, text = check_notebook(args.notebook, as_json=args.json, cell_timeout_s=args.cell_timeout)
    print(text)
    return 0


def register(subparsers) -> None:
    parser = subparsers.add_parser("check", help="run a notebook's tests in a fresh kernel and print its score")
    parser.add_argument("notebook", help="path to the .ipynb notebook")
    parser.add_argument("--json", action="store_true", help="print Gradescope's results.json shape")
    parser.add_argument("--cell-timeout", type=float, default=runner.DEFAULT_CELL_TIMEOUT_S,
                        help="seconds one cell may run (default %(default)s)")
    parser.set_defaults(func=_run)
