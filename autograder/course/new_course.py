"""``python -m autograder init-course DIR``: start an nbgrader course from this repository.

This repository's own ``nbgrader_config.py`` makes the checkout a course for building the
exercises (``solutions/`` as source, ``exercises/`` as release, a throw-away exchange); a
course that learners submit to needs its own folder.  :func:`init_course` writes one:
``DIR/nbgrader_config.py`` from :data:`TEMPLATE` (``course_id``, ``Exchange.root``, nbgrader's
usual ``source/`` and ``release/`` folders, the repository's release settings), and copies
the chosen assignments' sources (reference solutions, hidden tests, data files) and the
course's ``grading.toml`` into ``DIR/source/``.  From there nbgrader's own commands run in
``DIR`` (``nbgrader generate_assignment``, ``release_assignment``, ``collect``) and
``python -m autograder grade DIR/submitted --out DIR/graded`` reads the same config
(:mod:`autograder.results.gradebook`).
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path

from autograder.errors import UsageError

SOLUTIONS = Path(__file__).resolve().parents[2] / "solutions"  # the checkout's nbgrader source folder
COURSE_ID = re.compile(r"^[A-Za-z0-9_.-]+$")
TEMPLATE = '''"""nbgrader configuration of the course {course_id!r} (written by `python -m autograder init-course`).

Run nbgrader's commands and `python -m autograder grade submitted/ --out graded/` in this folder
(not autograded/: `nbgrader autograde` replaces that folder).
"""
c = get_config()  # noqa: F821 (provided by nbgrader)

c.CourseDirectory.course_id = {course_id!r}
c.CourseDirectory.source_directory = "source"  # reference solutions and hidden tests: never give it out
c.CourseDirectory.release_directory = "release"
c.Exchange.root = {exchange!r}  # shared by instructors and students (nbgrader's exchange)

# As the repository releases its exercises: no outputs, the same stub in every answer cell.
c.ClearOutput.enabled = True
c.ClearSolutions.code_stub = {{"python": "# YOUR CODE HERE\\nraise NotImplementedError()"}}
c.ExecutePreprocessor.timeout = 600  # when nbgrader itself autogrades: the exercises run TensorFlow

# A late penalty (grades.csv's late_submission_penalty; nbgrader's default gives none):
# c.LateSubmissionPlugin.penalty_method = "zero"  # a late submission scores 0
# or your own plugin: c.AssignLatePenalties.plugin_class = "mymodule.SubMarks"
'''


def init_course(folder: Path | str, *, course_id: str, exchange: str = "/srv/nbgrader/exchange",
                assignments: list[str] | None = None, solutions: Path = SOLUTIONS) -> list[Path]:
    """Write ``folder/nbgrader_config.py`` and copy ``assignments`` (default: all) from
    ``solutions`` into ``folder/source/``; return what was written.  A folder that already
    holds a course, an unknown assignment or a bad course id is a :class:`UsageError`."""
    folder = Path(folder)
    if not COURSE_ID.match(course_id):
        raise UsageError(f"--course-id {course_id!r}: use letters, digits, '.', '_' or '-' (nbgrader's exchange "
                         "names a folder after it)")
    config = folder / "nbgrader_config.py"
    if config.exists():
        raise UsageError(f"{config} exists already; choose a new folder (nothing was changed)")
    known = sorted(p.name for p in solutions.iterdir() if (p / f"{p.name}.ipynb").is_file()) \
        if solutions.is_dir() else []
    chosen = assignments or known
    unknown = [a for a in chosen if a not in known]
    if unknown or not chosen:
        raise UsageError(f"no assignment {unknown[0]!r} in {solutions}" if unknown else
                         f"no assignments in {solutions}; run init-course from a checkout of the course")
    folder.mkdir(parents=True, exist_ok=True)
    config.write_text(TEMPLATE.format(course_id=course_id, exchange=str(exchange)), encoding="utf-8")
    written = [config]
    for name in chosen:
        target = folder / "source" / name
        shutil.copytree(solutions / name, target, ignore=shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints"))
        written.append(target)
    if (solutions / "grading.toml").is_file():
        written.append(Path(shutil.copy2(solutions / "grading.toml", folder / "source" / "grading.toml")))
    return written
