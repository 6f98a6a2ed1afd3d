"""Every assignment end to end: the solution scores full marks, the released
exercise scores zero without crashing (each kind graded two at a time, as a class is), and
every case of the mutation
catalogue (``tests/wrong_answers``) gets exactly its expected per-part scores
and feedback when graded the way ``python -m autograder grade`` grades it
(sandboxed, hidden tests sent in cell by cell, feedback redacted)."""
from __future__ import annotations

import functools
import importlib
import json
import pkgutil
from collections import Counter
from pathlib import Path

import nbformat
import pytest

from autograder.frontends import pipeline
from autograder.submission import notebook as nbtools
from autograder.frontends.check import check_notebook as run_notebook
from autograder.submission.assignment import load_assignment
from tests.conftest import (EXERCISES, SOLUTIONS, assignments, graded_as_a_batch, graded_together, notebook_for,
                            undecided_speed)
from tests import wrong_answers

pytestmark = pytest.mark.slow


def _wrong_cases():
    cases = []
    for info in pkgutil.iter_modules(wrong_answers.__path__):
        module = importlib.import_module(f"tests.wrong_answers.{info.name}")
        for case in module.CASES:
            cases.append(pytest.param(module.ASSIGNMENT, case, id=f"{module.ASSIGNMENT}-{case.name}"))
    return cases


def grade_as_instructor(path: Path, source: Path, data_dir: Path | None = None):
    """Grade ``path`` as the grade command does (``pipeline.grade_notebook``): sandboxed, with the
    assignment's data files, hidden lines redacted, the integrity review made."""
    data_dir = data_dir or source.parent
    data = [p for p in data_dir.iterdir() if not p.name.endswith(".ipynb")]
    assignment = load_assignment(source, data_files=data)
    return pipeline.grade_notebook(path, assignment, hidden_dirs=[SOLUTIONS.parent / "solutions", path.parent])


# The catalogue is graded as one batch, two submissions at a time (as `grade --workers 2`
# would, second tries included), the first time one of its cases is asked for.
WORKERS = 2
_BATCHES: dict[str, dict] = {}


@functools.lru_cache(maxsize=None)
def _points(assignment: str) -> dict[str, float]:
    """Each graded part's points in the reference solution."""
    return {p.grade_id: p.points for p in nbtools.graded_parts(nbtools.load(notebook_for(SOLUTIONS, assignment)))}


def _grade_case(assignment: str, case, folder: Path):
    """Grade one case.  A wrong answer is graded against a copy of the source in which
    the tests of the parts it does not target are ``pass``: it only has to lose its
    targets, and the untargeted parts (often timed ones) need not run again."""
    folder.mkdir(parents=True)
    source = notebook_for(SOLUTIONS, assignment)
    nb = nbtools.load(source)
    found = set()
    for cell in nb.cells:
        gid = nbtools.nbgrader_meta(cell).get("grade_id")
        if gid in case.replace:
            cell.source = case.replace[gid]
            found.add(gid)
    assert found == set(case.replace), f"no answer cells named {set(case.replace) - found} in {assignment}"
    path = folder / f"{assignment}.ipynb"
    nbformat.write(nb, path)
    targets = set(case.graded(_points(assignment)))
    graded_source = source
    if targets != set(_points(assignment)):
        trimmed = nbtools.load(source)
        for cell in trimmed.cells:
            if nbtools.is_test_cell(cell) and nbtools.nbgrader_meta(cell)["grade_id"] not in targets:
                cell.source = "pass"
        graded_source = folder / "source" / f"{assignment}.ipynb"
        graded_source.parent.mkdir()
        nbformat.write(trimmed, graded_source)
    return grade_as_instructor(path, graded_source, data_dir=source.parent)


def _catalogue_results(request, assignment: str, root: Path) -> dict:
    """Every selected case's results, graded the first time one is asked for: the cases of all
    assignments in one batch, two at a time, handed out as ``grade`` hands out a class (each worker
    kept to one assignment, its judge warm, while another is free): no worker waits at the end of
    one assignment for the next, and the two side by side are of different assignments."""
    if assignment not in _BATCHES:
        cases = [(item.callspec.params["assignment"], item.callspec.params["case"]) for item in request.session.items
                 if getattr(item, "function", None) is request.node.function and hasattr(item, "callspec")]
        attempts, by_key = Counter(), {(a, c.name): c for a, c in cases}

        def grade_case(key):
            attempts[key] += 1  # a second try grades into a folder of its own
            graded, name = key
            return _grade_case(graded, by_key[key], root / graded / f"{name}-{attempts[key]}")

        futures = graded_as_a_batch(list(by_key), grade_case, WORKERS, key=lambda key: key[0])
        for (graded, name), future in futures.items():
            _BATCHES.setdefault(graded, {})[name] = future  # its own test gets its result or its exception
    return _BATCHES[assignment]


@pytest.fixture(scope="session")
def catalogue_root(tmp_path_factory):
    return tmp_path_factory.mktemp("catalogue")


def _scores(results) -> dict[str, float]:
    return {t.name: t.score for t in results.tests}


def _check_solution(name: str):
    return run_notebook(notebook_for(SOLUTIONS, name)).results


def _check_exercise(name: str):
    return run_notebook(notebook_for(EXERCISES, name), source=notebook_for(SOLUTIONS, name)).results


@pytest.mark.parametrize("name", assignments())
def test_solution_scores_full_marks(name, request):
    results = graded_together(request, _check_solution)
    undecided = undecided_speed(results, [t.name for t in results.tests])
    failed = {t.name: t.output for t in results.tests if t.score < t.max_score and t.name not in undecided}
    assert not failed, f"{name}: solution lost points: {json.dumps(failed, indent=1)}"
    assert 3 <= len(results.tests) <= 6, f"{name}: an exercise has 3 to 6 graded parts, found {len(results.tests)}"
    assert results.max_score > 0


@pytest.mark.parametrize("name", assignments())
def test_released_exercise_scores_zero_without_crashing(name, request):
    path = notebook_for(EXERCISES, name)
    assert path.exists(), f"exercises/{name} is missing: run `make exercises`"
    results = graded_together(request, _check_exercise)
    assert results.output == "", f"the exercise run stopped early: {results.output}"
    assert results.score == 0, f"{name}: the unanswered exercise scored {results.score}: {_scores(results)}"
    solution_parts = [p.grade_id for p in nbtools.graded_parts(nbtools.load(notebook_for(SOLUTIONS, name)))]
    assert [t.name for t in results.tests] == solution_parts


@pytest.mark.parametrize("assignment,case", _wrong_cases())
def test_catalogue_case_gets_expected_scores(assignment, case, request, catalogue_root):
    results = _catalogue_results(request, assignment, catalogue_root)[case.name].result()
    expected = case.graded(_points(assignment))
    details = "\n".join(f"{t.name}: {t.score}: {t.output}" for t in results.tests) + f"\nnote: {results.output}"
    # A part this case must keep (full marks) is excused when load left its speed undecided; one it must lose never.
    undecided = undecided_speed(results, [g for g, score in expected.items() if score])
    attacked = {g for g, score in expected.items() if score is None}
    assert {g: s for g, s in _scores(results).items() if g in expected and g not in undecided | attacked} == \
        {g: s for g, s in expected.items() if g not in undecided | attacked}, details
    for gid in sorted(attacked):  # an attack on what the kernel reports: lost, or flagged for review
        assert _scores(results)[gid] == 0 or results.review, \
            f"{case.name} keeps {gid} and is not flagged for review:\n{details}"
    by_name = results.by_name()
    for gid, text in case.messages.items():
        assert text in by_name[gid].output, f"{gid} feedback lacks {text!r}: {by_name[gid].output}"
