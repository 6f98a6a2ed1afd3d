"""README.md is a page for users: short, no lab log, its figures those of the results files,
its links and commands real."""
from __future__ import annotations

import json
import re
import subprocess
import sys

from tests.conftest import ROOT

README = ROOT / "README.md"
RESULTS = ROOT / "book" / "data" / "results"
MAX_LINES = 220


def _text() -> str:
    return README.read_text(encoding="utf-8")


def test_the_readme_is_short():
    lines = _text().splitlines()
    assert len(lines) <= MAX_LINES, f"README.md has {len(lines)} lines; at most {MAX_LINES}: move detail into the book"


def test_the_readme_narrates_no_sessions():
    text = _text()
    stops = [line for line in text.splitlines() if re.search(r"\bstops?\s+\d+", line, re.I)]
    assert not stops, f"README.md has log lines: {stops[:3]}"
    # A commit hash: 7 to 40 hex digits with at least one digit and one letter.
    hashes = [h for h in re.findall(r"(?<![\w/.-])[0-9a-f]{7,40}(?![\w/.-])", text)
              if re.search(r"\d", h) and re.search(r"[a-f]", h)]
    assert not hashes, f"README.md names commits: {hashes[:5]}"
    dates = re.findall(r"\b20\d\d-\d\d-\d\d\b", text)
    assert not dates, f"README.md dates measurements: {dates[:5]} (figures live in book/data/results/)"


def test_every_relative_link_in_the_readme_exists():
    links = re.findall(r"\]\(([^)#]+)\)", _text())
    local = [link for link in links if not re.match(r"\w+://", link)]
    assert local, "README.md links no page of the book"
    missing = [link for link in local if not (ROOT / link).exists()]
    assert not missing, f"README.md links files that do not exist: {missing}"


def test_every_make_target_and_autograder_command_in_the_readme_exists():
    text = _text()
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    targets = set(re.findall(r"`make ([\w-]+)`", text))
    assert targets >= {"test", "test-fast", "exercises", "ops", "bench", "gpu-check", "book"}
    for target in targets:
        assert re.search(rf"^{re.escape(target)}:", makefile, re.M), f"the Makefile has no target {target}"
    helps = {}
    for command, rest in re.findall(r"python -m autograder (\w[\w-]*)([^\n`]*)", text):
        if command not in helps:
            helps[command] = subprocess.run([sys.executable, "-m", "autograder", command, "--help"],
                                            capture_output=True, text=True, cwd=ROOT, timeout=120).stdout
        assert helps[command], f"`python -m autograder {command}` is not a command"
        for option in re.findall(r"(--[\w-]+)", rest):
            assert option in helps[command], f"`autograder {command}` has no {option}"


def _newest(folder: str) -> dict:
    files = sorted((RESULTS / folder).glob("*.json"))
    assert files, f"no results file in book/data/results/{folder}/"
    return max((json.loads(p.read_text(encoding="utf-8")) for p in files), key=lambda d: d["recorded"])


def _row(label: str) -> str:
    rows = [line for line in _text().splitlines() if line.startswith(f"| {label}")]
    assert len(rows) == 1, f"README.md's figures table has no row '{label}'"
    return rows[0]


def test_the_readme_figures_are_the_newest_results_files():
    build = _newest("build")
    books = {run["TF_ENABLE_ONEDNN_OPTS"]: run["seconds"] for run in build["cold_book"]}
    row = _row("cold `make book`")
    assert f"{books[None]:.0f} s with oneDNN on" in row and f"{books['0']:.0f} s with it off" in row, row
    ci = build["ci"]
    row = _row("CI: `.ci/run`")
    low, high = min(r["seconds"] for r in ci), max(r["seconds"] for r in ci)
    assert f"{low:.0f} s to {high:.0f} s" in row and f"{min(r['passed'] for r in ci)} tests passed" in row, row
    grading = _newest("grading")
    grader = [g for g in grading["graders"] if g.get("kernels") == "warm"][-1]  # the newest commit's, warm workers
    row = _row("grading throughput")
    assert f"{grader['per_minute']} notebooks a minute" in row, row
    assert f"{grader['over_nbclient']:.2f} of plain nbclient's time" in row, row
