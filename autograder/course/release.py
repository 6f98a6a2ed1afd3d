"""Generate the learners' ``exercises/`` from ``solutions/`` with nbgrader.

``python -m autograder release NAME ...`` (what ``make exercises`` runs)
calls ``nbgrader generate_assignment`` with this repository's
``nbgrader_config.py``, with a throw-away gradebook so nothing is left behind.
``--into DIR`` writes the release elsewhere (the staleness test uses it).
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the course checkout


def generate(assignments: list[str], *, release_dir: Path | None = None, root: Path = ROOT) -> None:
    """Run nbgrader's generate_assignment for each assignment into ``release_dir``."""
    release_dir = Path(release_dir or root / "exercises").resolve()
    with tempfile.TemporaryDirectory(prefix="nbgrader-db-") as tmp:
        for name in assignments:
            if not (root / "solutions" / name).is_dir():
                raise SystemExit(f"error: no solutions/{name}/ folder; assignments are: "
                                 + ", ".join(sorted(p.name for p in (root / 'solutions').iterdir() if p.is_dir())))
            cmd = [
                sys.executable, "-m", "nbgrader", "generate_assignment", name, "--force",
                f"--CourseDirectory.release_directory={release_dir}",
                f"--CourseDirectory.db_url=sqlite:///{tmp}/gradebook.db",
                "--log-level=WARN",
            ]
            # nbgrader runs `alembic` from PATH: put this interpreter's bin folder first.
            env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")}
            proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, env=env)
            if proc.returncode != 0:
                raise SystemExit(f"error: nbgrader generate_assignment {name} failed:\n{proc.stdout}{proc.stderr}")
