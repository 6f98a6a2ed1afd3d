"""Gradescope: the autograder zip, and the runner it calls for each submission.

The zip holds what Gradescope's "zip file upload" expects at its root:
``setup.sh`` (finds or installs Python 3.11 and installs this package with only
what grading needs: ``pip install`` of the bundled package, whose dependencies
are the grading pins), ``run_autograder``, the ``autograder`` package with its
``pyproject.toml``, and ``source/<assignment>/`` (the source notebook with its
hidden tests and data files; only instructors see the zip).

``run_autograder`` calls ``python -m autograder gradescope-run``, which grades
``/autograder/submission`` through the same pipeline as ``check`` and ``grade``
(:mod:`autograder.frontends.pipeline`) and writes ``/autograder/results/results.json``;
whatever happens (no notebook, a crash in the grader, no Python) it still leaves a
``results.json`` that says what went wrong.  Parts whose test cell holds hidden tests
are split in two unless they are to be visible anyway (:func:`split_parts`):
``<part> (visible tests)``, always visible and worth no points, says at once whether the tests
the learner could see pass; ``<part> (all tests)`` holds the points and follows the visibility
chosen at build time (``--hidden-visibility``).  The
top-level ``output`` sums up the score, whether it is final, and which parts need a regrade (a
speed part the grader could not decide) or manual grading (:func:`summary`).
"""
from __future__ import annotations

import copy
import io
import json
import re
import tempfile
import zipfile
from dataclasses import replace
from pathlib import Path

from autograder.atomic import write_atomic
from autograder.errors import UsageError
from autograder.frontends import pipeline
from autograder.results.results import Results, TestResult, is_final
from autograder.submission.assignment import Assignment, load_assignment
from autograder.submission.folders import find_notebook

PACKAGE = Path(__file__).resolve().parents[1]  # the installed autograder package
# What Gradescope accepts for a test's "visibility".
VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")

SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once while building the autograder image.
set -euo pipefail
cd /autograder/source
PY=""
for candidate in python3.13 python3.12 python3.11; do
  if command -v "$candidate" >/dev/null 2>&1; then PY="$candidate"; break; fi
done
if [ -z "$PY" ]; then
  apt-get update -qq
  apt-get install -y -qq software-properties-common >/dev/null
  apt-get install -y -qq python3.11 python3.11-venv >/dev/null 2>&1 || {
    add-apt-repository -y ppa:deadsnakes/ppa >/dev/null
    apt-get update -qq
    apt-get install -y -qq python3.11 python3.11-venv >/dev/null
  }
  PY=python3.11
fi
# Exercise 7 builds a C++ op: a compiler is part of grading.
command -v g++ >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq g++ >/dev/null; }
"$PY" -m venv /autograder/venv
/autograder/venv/bin/python -m pip install --quiet --upgrade pip
# Only what grading needs: the package's own dependencies (the grading pins), not the book's toolchain.
/autograder/venv/bin/python -m pip install --quiet /autograder/source/package
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for every submission; it must leave results/results.json.
BASE="${{AUTOGRADER_ROOT:-/autograder}}"
RESULTS="$BASE/results/results.json"
mkdir -p "$BASE/results"
cd "$BASE/source" || true
"$BASE/venv/bin/python" -m autograder gradescope-run {assignment} \\
    --submission "$BASE/submission" --results "$RESULTS" --source "$BASE/source/source" \\
    --hidden-visibility {visibility}
if [ ! -s "$RESULTS" ]; then
  cat > "$RESULTS" <<'JSON'
{{"score": 0, "output": "The autograder itself failed before it could grade this submission; please tell your instructor.", "tests": []}}
JSON
fi
exit 0
"""


def _check_visibility(value: str) -> str:
    if value not in VISIBILITIES:
        raise UsageError(f"--hidden-visibility must be one of {', '.join(VISIBILITIES)}, not {value!r}")
    return value


def build_zip(assignment: str, out: Path | str, *, source_root: Path | str | None = None,
              hidden_visibility: str = "after_published") -> Path:
    """Write the Gradescope autograder zip for ``assignment``; return its path."""
    _check_visibility(hidden_visibility)
    source_root = Path(source_root or "solutions")
    folder = source_root / assignment
    if not (folder / f"{assignment}.ipynb").is_file():
        names = ", ".join(sorted(p.name for p in source_root.iterdir() if p.is_dir())) if source_root.is_dir() else ""
        raise UsageError(f"no source notebook {folder / f'{assignment}.ipynb'}"
                         + (f"; assignments are: {names}" if names else "; give --source"))
    load_assignment(folder / f"{assignment}.ipynb")  # a broken source is the instructor's error, said now
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        def add_text(name: str, text: str | bytes, mode: int = 0o644) -> None:
            info = zipfile.ZipInfo(name)
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, text)

        add_text("setup.sh", SETUP_SH, 0o755)
        add_text("run_autograder", RUN_AUTOGRADER.format(assignment=assignment, visibility=hidden_visibility), 0o755)
        for name, data in package_files():
            add_text(f"package/{name}", data)
        for path in sorted(folder.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and ".ipynb_checkpoints" not in path.parts:
                zf.write(path, f"source/{assignment}/{path.relative_to(folder)}")
    return write_atomic(Path(out), buffer.getvalue())


def package_files() -> list[tuple[str, bytes]]:
    """The installed ``autograder`` package (code and package data) and a ``pyproject.toml``
    that installs it with its grading dependencies: what ``pip install`` needs."""
    from importlib import metadata

    files = [(f"autograder/{p.relative_to(PACKAGE).as_posix()}", p.read_bytes())
             for p in sorted(PACKAGE.rglob("*")) if p.is_file() and "__pycache__" not in p.parts]
    dist = metadata.distribution("tf-gpu-course-autograder")
    requires = [r for r in (dist.requires or []) if "extra ==" not in r]
    pyproject = (
        "[build-system]\nrequires = [\"setuptools>=61\"]\nbuild-backend = \"setuptools.build_meta\"\n\n"
        f"[project]\nname = \"tf-gpu-course-autograder\"\nversion = \"{dist.version}\"\n"
        "requires-python = \">=3.11\"\n"
        f"dependencies = {json.dumps(requires)}\n\n"
        "[tool.setuptools.packages.find]\ninclude = [\"autograder*\"]\n\n"
        "[tool.setuptools.package-data]\n\"*\" = [\"*\"]\n"
    )
    return files + [("pyproject.toml", pyproject.encode())]


def grade_gradescope(assignment: str, submission: Path, results_path: Path, source_root: Path, *,
                     hidden_visibility: str = "after_published") -> Results:
    """Grade a Gradescope submission folder into ``results_path``; never raises for the submission."""
    _check_visibility(hidden_visibility)
    try:
        spec = load_assignment(Path(source_root) / assignment / f"{assignment}.ipynb")
    except Exception as exc:  # even the source failing to load leaves a results.json
        write_atomic(results_path, json.dumps({
            "score": 0, "tests": [],
            "output": f"the autograder failed ({exc.__class__.__name__}: {exc}); please tell your instructor"}))
        raise
    notebook, _ = find_notebook(Path(submission), assignment)
    results = pipeline.grade_notebook(notebook, spec, hidden_dirs=[Path(source_root).resolve()],
                                      problem=f"no notebook found: upload {assignment}.ipynb")
    if hidden_visibility != "visible":  # else every part shows at once, as it is
        visible = _visible_verdicts(notebook, spec, results) if notebook is not None else {}
        results.tests = split_parts(results.tests, spec.hidden_parts, visible, hidden_visibility)
    results.output = "\n".join(line for line in (summary(results), results.output) if line)
    write_atomic(results_path, results.to_json())
    return results


VISIBLE, ALL = "{name} (visible tests)", "{name} (all tests)"
_HIDDEN_BLOCK = re.compile(r"^[ \t]*### BEGIN HIDDEN TESTS.*?^[ \t]*### END HIDDEN TESTS[^\n]*\n?", re.M | re.S)


def split_parts(tests: list[TestResult], hidden_parts: frozenset[str], visible: dict[str, TestResult],
                hidden_visibility: str) -> list[TestResult]:
    """Each part with hidden tests as two Gradescope tests: its visible tests' verdict (0 points,
    always visible; ``visible`` holds it for the parts that did not pass: a part that passed
    passed them too) and the part itself, points and all, at ``hidden_visibility``."""
    split = []
    for test in tests:
        if test.name not in hidden_parts:
            split.append(test)
            continue
        seen = visible.get(test.name)
        if test.status == "passed" or seen is None:
            seen_status = "passed" if test.status == "passed" else test.status
            seen_output = "the visible tests pass" if test.status == "passed" else test.output
        else:
            seen_status, seen_output = seen.status, seen.output if seen.status != "passed" else "the visible tests pass"
        split.append(TestResult(VISIBLE.format(name=test.name), 0.0, 0.0, seen_output, "visible", seen_status))
        split.append(replace(test, name=ALL.format(name=test.name), visibility=hidden_visibility))
    return split


def _visible_verdicts(notebook: Path, spec: Assignment, results: Results) -> dict[str, TestResult]:
    """The visible tests' verdict of each part with hidden tests that did not pass: those parts
    graded again with the hidden tests taken out of the source (what the learner's release holds)."""
    again = [t.name for t in results.tests if t.name in spec.hidden_parts and t.status != "passed"]
    if not again:
        return {}
    source_nb = copy.deepcopy(spec.notebook)
    for cell in source_nb.cells:
        if cell.cell_type == "code":
            cell.source = _HIDDEN_BLOCK.sub("", cell.source)
    with tempfile.TemporaryDirectory(prefix="autograder-visible-") as folder:
        path = Path(folder) / spec.name / f"{spec.name}.ipynb"
        path.parent.mkdir()
        path.write_text(json.dumps(source_nb), encoding="utf-8")
        visible_spec = load_assignment(path, data_files=spec.data_files)
        checked = pipeline.grade_notebook(notebook, visible_spec, limits=spec.limits, only_parts=again,
                                          hidden_dirs=[spec.source.parent.parent.resolve()])
    return {t.name: t for t in checked.tests if t.name in again}


def summary(results: Results) -> str:
    """Gradescope's top-level output: the score, whether it is final, and what is still to come."""
    pending = [t.name for t in results.tests if t.status == "inconclusive"]
    manual = [t.name for t in results.tests if t.status == "manual"]
    lines = [f"Score: {results.score:g} / {results.max_score:g}"
             + ("" if is_final(results) else " (not final)")]
    if pending:
        lines.append(f"Needs a regrade: the grader could not decide {', '.join(pending)} (a speed part), so it is "
                     "pending, not failed; your instructor will regrade this submission.")
    if manual:
        lines.append(f"Needs manual grading: {', '.join(manual)}; your instructor grades it by hand.")
    if any(t.visibility != "visible" for t in results.tests):
        lines.append("Parts marked (all tests) include hidden tests: their scores show when your instructor "
                     "releases them; the (visible tests) lines show now whether the tests you could see pass.")
    return "\n".join(lines)
