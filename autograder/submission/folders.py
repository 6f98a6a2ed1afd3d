"""Where submissions are: nbgrader's layout ``<student>/<assignment>/<notebook>.ipynb``.

:func:`find_submissions` lists a class's submission folders, :func:`find_notebook` picks
the notebook submitted in one (or says why there is none to grade).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from autograder.errors import UsageError

@dataclass
class Submission:
    student: str
    assignment: str
    folder: Path
    notebook: Path | None
    problem: str = ""
    skip: str = ""  # why it is not graded (another exercise's notebook): scored 0, status "skipped"


def _student_dirs(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))


def find_submissions(root: Path, assignment: str | None = None,
                     students: list[str] | None = None) -> list[Submission]:
    """Every ``<student>/<assignment>/`` folder under ``root``, sorted, with its notebook
    found by :func:`find_notebook`; only ``assignment``'s and
    ``students``' when given."""
    found = []
    for student_dir in _student_dirs(root):
        if students and student_dir.name not in students:
            continue
        for folder in sorted(p for p in student_dir.iterdir() if p.is_dir() and not p.name.startswith(".")):
            if assignment and folder.name != assignment:
                continue
            notebook, problem = find_notebook(folder, folder.name)
            found.append(Submission(student_dir.name, folder.name, folder, notebook, problem))
    return found


def check_students(root: Path, students: list[str] | None) -> None:
    """A usage error naming a few known ids when a ``--student`` has no folder under ``root``."""
    known = [p.name for p in _student_dirs(root)]
    unknown = [s for s in students or [] if s not in known]
    if unknown:
        shown = ", ".join(known[:5]) + (" ..." if len(known) > 5 else "")
        raise UsageError(f"--student {unknown[0]}: no such student folder in {root}; "
                         f"students there: {shown or 'none'}")


def find_notebook(folder: Path, assignment: str) -> tuple[Path | None, str]:
    """The notebook submitted in ``folder`` (searched recursively) and, when there is
    none to grade, why: ``<assignment>.ipynb`` wins; otherwise the only notebook."""
    named = sorted(p for p in folder.rglob(f"{assignment}.ipynb") if _gradable(p, folder))
    if named:
        return named[0], ""
    notebooks = sorted(p for p in folder.rglob("*.ipynb") if _gradable(p, folder))
    if len(notebooks) == 1:
        return notebooks[0], ""
    if notebooks:
        names = ", ".join(p.relative_to(folder).as_posix() for p in notebooks)
        return None, f"{len(notebooks)} notebooks and none named {assignment}.ipynb: {names}; submit {assignment}.ipynb"
    return None, f"no notebook in the submission; submit {assignment}.ipynb"


def _gradable(path: Path, root: Path) -> bool:
    parts = path.relative_to(root).parts
    return not any(p.startswith(".") or p == "__pycache__" for p in parts)
