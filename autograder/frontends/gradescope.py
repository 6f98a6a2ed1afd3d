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
get the visibility chosen at build time (``--hidden-visibility``).
"""
from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

from autograder.atomic import write_atomic
from autograder.errors import UsageError
from autograder.frontends import pipeline
from autograder.results.results import Results
from autograder.submission.assignment import load_assignment
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
    for test in results.tests:
        if test.name in spec.hidden_parts:
            test.visibility = hidden_visibility
    write_atomic(results_path, results.to_json())
    return results
