"""Generate the learners' ``exercises/`` from ``solutions/`` with nbgrader.

``python -m autograder release NAME ...`` (what ``make exercises`` runs)
calls ``nbgrader generate_assignment`` with this repository's
``nbgrader_config.py``, with a throw-away gradebook so nothing is left behind.
``--into DIR`` writes the release elsewhere (the staleness test uses it).

The course's public repository is one setting, Jupyter Book's own
``repository: url / branch`` in ``_config.yml`` (empty by default).  Each
exercise's first code cell (grade_id ``install``) installs this package when
``import autograder`` fails (Colab, a fresh machine); in ``solutions/`` it
says ``COURSE_URL, COURSE_BRANCH = "", "main"`` and the release fills in the
configured values (nbgrader runs on a copy, so the locked cell's checksum is
the released text's).  The book's Exercises page builds its "Open in Colab"
links from the same setting (:func:`colab_url`).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

from autograder.errors import UsageError

ROOT = Path(__file__).resolve().parents[2]  # the course checkout
INSTALL_CELL = "install"  # grade_id of the locked first code cell
REPOSITORY_LINE = re.compile(r'^(?P<indent>[ \t]*)COURSE_URL, COURSE_BRANCH = .*$', re.M)


def repository(root: Path = ROOT) -> tuple[str, str]:
    """``(url, branch)`` from ``_config.yml``'s ``repository:`` (url ``""`` when none is configured)."""
    import yaml

    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8")) or {}
    repo = config.get("repository") or {}
    url = str(repo.get("url") or "").strip().rstrip("/")
    if url.endswith(".git"):
        url = url[:-4]
    return url, str(repo.get("branch") or "main").strip()


def colab_url(url: str, branch: str, notebook: str) -> str | None:
    """Colab's link to ``notebook`` (a path in the repository) on GitHub; None unless ``url`` is a GitHub repository."""
    match = re.fullmatch(r"https://github\.com/([\w.-]+)/([\w.-]+)", url)
    if not match:
        return None
    return f"https://colab.research.google.com/github/{match[1]}/{match[2]}/blob/{branch}/{notebook}"


def fill_install_cell(notebook: Path, url: str, branch: str) -> bool:
    """Write ``url``/``branch`` into the notebook's install cell; False when it has none."""
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") != INSTALL_CELL:
            continue
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        line = f"COURSE_URL, COURSE_BRANCH = {json.dumps(url)}, {json.dumps(branch)}"
        filled, count = REPOSITORY_LINE.subn(lambda m: m["indent"] + line + _comment(m[0]), source)
        if count != 1:
            raise UsageError(f"{notebook}: the {INSTALL_CELL!r} cell has no `COURSE_URL, COURSE_BRANCH = ...` line")
        cell["source"] = filled.splitlines(keepends=True)
        notebook.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        return True
    return False


def _comment(line: str) -> str:
    return "  #" + line.split("  #", 1)[1] if "  #" in line else ""


def _staged_course(root: Path, assignments: list[str], stage: Path) -> None:
    """A copy of the course's nbgrader sources with the repository setting filled into each install cell."""
    url, branch = repository(root)
    shutil.copy2(root / "nbgrader_config.py", stage / "nbgrader_config.py")
    for name in assignments:
        if not (root / "solutions" / name).is_dir():
            raise UsageError(f"no solutions/{name}/ folder; assignments are: "
                             + ", ".join(sorted(p.name for p in (root / 'solutions').iterdir() if p.is_dir())))
        target = stage / "solutions" / name
        shutil.copytree(root / "solutions" / name, target, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
        for notebook in target.glob("*.ipynb"):
            fill_install_cell(notebook, url, branch)


def generate(assignments: list[str], *, release_dir: Path | None = None, root: Path = ROOT) -> None:
    """Run nbgrader's generate_assignment for each assignment into ``release_dir``: its own API,
    in this process (one import of nbgrader, about 2.7 s, instead of a process per assignment),
    with the course's ``nbgrader_config.py``, as ``nbgrader generate_assignment NAME --force``."""
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config.loader import PyFileConfigLoader

    release_dir = Path(release_dir or root / "exercises").resolve()
    with tempfile.TemporaryDirectory(prefix="nbgrader-db-") as tmp:
        stage = Path(tmp) / "course"
        stage.mkdir()
        _staged_course(root, assignments, stage)
        config = PyFileConfigLoader("nbgrader_config.py", path=str(stage)).load_config()
        config.CourseDirectory.root = str(stage)
        config.CourseDirectory.release_directory = str(release_dir)
        config.CourseDirectory.db_url = f"sqlite:///{tmp}/gradebook.db"
        api = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)
        # nbgrader runs `alembic` from PATH: put this interpreter's bin folder first while it does.
        path = os.environ.get("PATH", "")
        os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + path
        try:
            for name in assignments:
                result = api.generate_assignment(name, force=True)
                if not result["success"]:
                    raise SystemExit(f"error: nbgrader generate_assignment {name} failed:\n"
                                     f"{result.get('log', '')}{result.get('error', '')}")
        finally:
            os.environ["PATH"] = path