"""``python -m autograder gradescope ASSIGNMENT --out autograder.zip``: a Gradescope autograder.

The zip holds what Gradescope's "zip file upload" expects at its root:
``setup.sh`` (installs the pinned requirements and this package),
``run_autograder``, plus ``requirements.txt``, ``pyproject.toml``, the
``autograder`` package and ``source/<assignment>/`` (the source notebook with
its hidden tests, and its data files; the zip is only seen by instructors).

``run_autograder`` runs ``python -m autograder.gradescope run``, which grades
``/autograder/submission`` in the same sandbox as the ``grade`` command and
writes ``/autograder/results/results.json``; whatever happens -- no notebook,
a crash in the grader, a missing Python -- the script still leaves a
``results.json`` that says what went wrong.
"""
from __future__ import annotations

import argparse
import io
import json
import sys
import zipfile
from pathlib import Path

from autograder import feedback, sandbox
from autograder import notebook as nbtools
from autograder.errors import UsageError
from autograder.results import Results, TestResult, write_atomic

ROOT = Path(__file__).resolve().parent.parent

SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once while building the autograder image.
set -euo pipefail
cd /autograder/source
apt-get update -qq && apt-get install -y -qq python3 python3-pip python3-venv >/dev/null
python3 -m venv /autograder/venv
/autograder/venv/bin/pip install --quiet --upgrade pip
/autograder/venv/bin/pip install --quiet -r requirements.txt
/autograder/venv/bin/pip install --quiet --no-deps -e .
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for every submission; it must leave results/results.json.
BASE="${{AUTOGRADER_ROOT:-/autograder}}"
RESULTS="$BASE/results/results.json"
mkdir -p "$BASE/results"
cd "$BASE/source" || true
"$BASE/venv/bin/python" -m autograder.gradescope run {assignment} \\
    --submission "$BASE/submission" --results "$RESULTS" --source source
if [ ! -s "$RESULTS" ]; then
  cat > "$RESULTS" <<'JSON'
{{"score": 0, "output": "The autograder itself failed before it could grade this submission; please tell your instructor.", "tests": []}}
JSON
fi
exit 0
"""


def build_zip(assignment: str, out: Path | str, *, source_root: Path | str | None = None) -> Path:
    """Write the Gradescope autograder zip for ``assignment``; return its path."""
    source_root = Path(source_root or ROOT / "solutions")
    folder = source_root / assignment
    notebook = folder / f"{assignment}.ipynb"
    if not notebook.is_file():
        names = ", ".join(sorted(p.name for p in source_root.iterdir() if p.is_dir())) if source_root.is_dir() else ""
        raise UsageError(f"no source notebook {notebook}" + (f"; assignments are: {names}" if names else ""))
    nbtools.load(notebook)  # a broken source notebook is the instructor's error, said now
    out = Path(out)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        def add_text(name: str, text: str, mode: int = 0o644) -> None:
            info = zipfile.ZipInfo(name)
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, text)

        add_text("setup.sh", SETUP_SH, 0o755)
        add_text("run_autograder", RUN_AUTOGRADER.format(assignment=assignment), 0o755)
        for name in ("requirements.txt", "pyproject.toml"):
            if (ROOT / name).is_file():
                add_text(name, (ROOT / name).read_text(encoding="utf-8"))
        for path in sorted((ROOT / "autograder").glob("*.py")):
            add_text(f"autograder/{path.name}", path.read_text(encoding="utf-8"))
        for path in sorted(folder.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and ".ipynb_checkpoints" not in path.parts:
                zf.write(path, f"source/{assignment}/{path.relative_to(folder)}")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_bytes(buffer.getvalue())
    tmp.replace(out)
    return out


def _find_notebook(submission: Path, assignment: str) -> Path | None:
    preferred = sorted(submission.rglob(f"{assignment}.ipynb"))
    if preferred:
        return preferred[0]
    notebooks = [p for p in sorted(submission.rglob("*.ipynb")) if ".ipynb_checkpoints" not in p.parts]
    return notebooks[0] if len(notebooks) == 1 else None


def grade_gradescope(assignment: str, submission: Path, results_path: Path, source_root: Path) -> Results:
    """Grade a Gradescope submission folder into ``results_path``; never raises for the submission."""
    source = source_root / assignment / f"{assignment}.ipynb"
    parts = nbtools.graded_parts(nbtools.load(source))
    notebook = _find_notebook(submission, assignment)
    if notebook is None:
        message = f"no notebook found: upload {assignment}.ipynb"
        results = Results(tests=[TestResult(p.grade_id, 0.0, p.points, message, "visible", "missing") for p in parts],
                          output=message)
    else:
        try:
            data = [p for p in (source_root / assignment).iterdir() if p.suffix != ".ipynb"]
            results = sandbox.run_submission(notebook, source, data_files=data,
                                             hidden_dirs=[source_root.resolve()])
            results = feedback.redact_hidden(results, sandbox.hidden_test_lines(nbtools.load(source)))
        except Exception as exc:  # the grader's own failure still yields a results.json
            message = f"the autograder failed ({exc.__class__.__name__}: {exc}); please tell your instructor"
            results = Results(tests=[TestResult(p.grade_id, 0.0, p.points, message, "visible", "error")
                                     for p in parts], output=message)
    write_atomic(results_path, results.to_json())
    return results


def _build(args: argparse.Namespace) -> int:
    path = build_zip(args.assignment, args.out, source_root=args.source)
    print(f"wrote {path}: upload it as the Gradescope autograder for {args.assignment}")
    return 0


def register(subparsers) -> None:
    parser = subparsers.add_parser("gradescope", help="build a Gradescope autograder zip for an assignment")
    parser.add_argument("assignment", help="assignment name (a folder under solutions/)")
    parser.add_argument("--out", default="autograder.zip", help="zip to write (default %(default)s)")
    parser.add_argument("--source", help="nbgrader source folder (default: solutions/)")
    parser.set_defaults(func=_build)


def main(argv: list[str] | None = None) -> int:
    """``python -m autograder.gradescope run ASSIGNMENT ...``: what ``run_autograder`` calls."""
    parser = argparse.ArgumentParser(prog="python -m autograder.gradescope")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="grade /autograder/submission into results.json")
    run.add_argument("assignment")
    run.add_argument("--submission", type=Path, default=Path("/autograder/submission"))
    run.add_argument("--results", type=Path, default=Path("/autograder/results/results.json"))
    run.add_argument("--source", type=Path, default=Path("source"))
    args = parser.parse_args(argv)
    try:
        grade_gradescope(args.assignment, args.submission, args.results, args.source)
    except Exception as exc:  # even the source failing to load leaves a results.json
        write_atomic(args.results, json.dumps({
            "score": 0, "tests": [],
            "output": f"the autograder failed ({exc.__class__.__name__}: {exc}); please tell your instructor"}))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
