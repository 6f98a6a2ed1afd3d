"""The one grading pipeline: load → restore → execute in a sandbox → score → redact.

``check``, ``grade`` and the Gradescope runner all call :func:`grade_notebook`;
they differ only in where the result goes (the terminal, ``<out>/<student>/
<assignment>/``, Gradescope's ``results.json``).  Each step is a small function:

- :func:`load_assignment` reads the instructor's source notebook (tests, points,
  hidden lines, data files);
- :func:`find_notebook` picks the submitted notebook in a folder;
- :func:`grade_notebook` restores locked and test cells from the source, runs the
  notebook in :func:`autograder.grading.sandbox.run_submission` (which scores each
  test cell by the kernel's reply and its sentinel) and redacts hidden test lines;
- :func:`autograder.grading.results.zero_results` is the one way a whole
  submission scores 0 with a reason.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from autograder.errors import UsageError
from autograder.grading import feedback, review, sandbox, startup
from autograder.grading.limits import Limits, course_limits
from autograder.grading import notebook as nbtools
from autograder.grading.results import NEEDS_MANUAL, Results, TestResult, zero_results

HIDDEN_BEGIN = "### BEGIN HIDDEN TESTS"


@dataclass
class Assignment:
    """What the instructor's source notebook says about one assignment."""

    name: str
    source: Path  # the source notebook: tests, locked cells, points
    parts: list[nbtools.GradedPart] = field(default_factory=list)  # tested and manual, in the source's order
    data_files: list[Path] = field(default_factory=list)
    hidden_lines: list[str] = field(default_factory=list)
    hidden_parts: frozenset[str] = frozenset()  # parts whose test cell holds hidden tests
    limits: Limits = Limits()  # what the course's grading.toml sets for it (see grading/limits.py)
    notebook: object = None  # the source notebook as read once here: the sandbox restores from it
    manual: frozenset[str] = frozenset()  # parts an instructor grades by hand (nbgrader's formgrader)

    @property
    def part_names(self) -> list[str]:
        return [p.grade_id for p in self.parts]


def load_assignment(source: Path | str, *, data_files: list[Path] | None = None) -> Assignment:
    """The assignment whose source notebook is ``source``; its data files are the
    other files in its folder unless ``data_files`` is given.  A missing or broken
    source notebook is the instructor's error: :class:`UsageError`."""
    source = Path(source)
    if not source.is_file():
        raise UsageError(f"no source notebook {source}; the source folder must hold <assignment>/<assignment>.ipynb")
    source_nb = nbtools.load(source)
    if data_files is None:
        data_files = files_beside(source)
    hidden_parts = frozenset(
        nbtools.nbgrader_meta(cell)["grade_id"] for cell in source_nb.cells
        if nbtools.is_test_cell(cell) and HIDDEN_BEGIN in cell.source)
    manual = frozenset(p.grade_id for p in nbtools.manual_parts(source_nb)) - {
        p.grade_id for p in nbtools.graded_parts(source_nb)}
    return Assignment(source.stem, source, nbtools.all_parts(source_nb), list(data_files),
                      sandbox.hidden_test_lines(source_nb), hidden_parts,
                      course_limits(source.resolve().parent.parent, source.stem), source_nb, manual)


def files_beside(notebook: Path) -> list[Path]:
    """The data files in ``notebook``'s folder: everything but notebooks, hidden
    entries and ``__pycache__``."""
    return [p for p in sorted(notebook.parent.iterdir())
            if p.suffix != ".ipynb" and not p.name.startswith(".") and p.name != "__pycache__"]


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


def grade_notebook(notebook: Path | None, assignment: Assignment, *, limits: sandbox.Limits | None = None,
                   hidden_dirs: list[Path] | None = None, isolate: bool = True, problem: str = "",
                   only_parts: list[str] | None = None) -> Results:
    """Grade one submitted notebook against ``assignment``; never raises for the submission.

    ``notebook`` None scores every part 0 with ``problem`` (nothing was submitted);
    ``only_parts`` runs and reports just those parts' tests (``check --part``); ``limits``
    default to the assignment's own (the course's ``grading.toml``)."""
    if notebook is None:
        return zero_results(assignment.parts, problem or "no notebook was submitted", status="missing")
    try:
        with startup.counting() as started:
            results = sandbox.run_submission(notebook, assignment.source, limits=limits or assignment.limits,
                                             data_files=assignment.data_files, hidden_dirs=hidden_dirs,
                                             isolate=isolate, only_parts=only_parts, source_nb=assignment.notebook)
            _apart(results, started())
    except Exception as exc:  # the grader's own failure must not stop a batch or lose a results file
        message = (f"the grader failed on this submission ({exc.__class__.__name__}: {exc}); "
                   "grade it again, and tell the course maintainers if it keeps failing")
        return zero_results(assignment.parts, message, notebook=notebook.name)
    results = feedback.redact_hidden(results, assignment.hidden_lines)
    results = with_manual_parts(results, assignment, only_parts)
    results.review = _review(notebook, assignment, results)
    return results


def _apart(results: Results, startup_s: float) -> None:
    """Report the grader's start-up (:mod:`autograder.grading.startup`) apart from the submission's time."""
    results.startup_s = round(startup_s, 3)
    if results.execution_time_s is not None:
        results.execution_time_s = round(max(0.0, results.execution_time_s - startup_s), 3)


def with_manual_parts(results: Results, assignment: Assignment, only_parts: list[str] | None = None) -> Results:
    """``results`` with a ``manual`` result (0 of its points, "needs manual grading") for each
    manually graded part, every part in the source's order: its points count in ``max_score``
    and the score is not final until an instructor grades it (nbgrader's formgrader)."""
    have = results.by_name()
    tests = []
    for part in assignment.parts:
        if part.grade_id in have:
            tests.append(have.pop(part.grade_id))
        elif part.grade_id in assignment.manual and (only_parts is None or part.grade_id in only_parts):
            tests.append(TestResult(part.grade_id, 0.0, part.points, NEEDS_MANUAL.format(points=part.points),
                                    "visible", "manual"))
    results.tests = tests + list(have.values())
    return results


def _review(notebook: Path, assignment: Assignment, results) -> list[dict]:
    """The integrity review of a graded submission (:mod:`autograder.grading.review`); a notebook
    that cannot be read again is reviewed from its results alone."""
    try:
        submission = nbtools.load(notebook)
    except Exception:  # noqa: BLE001  (unreadable: the grade already says so)
        return review.review(None, assignment.notebook, results)
    return review.review(submission, assignment.notebook, results)


def select_parts(assignment: Assignment, wanted: list[str] | None) -> list[str] | None:
    """``wanted`` checked against the assignment's parts (a usage error names the real ones)."""
    if not wanted:
        return None
    unknown = [w for w in wanted if w not in assignment.part_names]
    if unknown:
        raise UsageError(f"no graded part {unknown[0]!r} in {assignment.name}; "
                         f"its parts are: {', '.join(assignment.part_names)}")
    return list(wanted)
