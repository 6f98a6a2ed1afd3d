"""Grading holds with oneDNN on and off: each solution full marks, each released exercise zero.

On a CPU, oneDNN changes the kernels a submission runs (``_MklMatMul`` or
``MatMul``/``_FusedMatMul``) and the allocator (``mklcpu``, with statistics, or
``cpu``, without).  ``test_assignments.py`` grades every notebook with this
machine's setting; this module grades them again with the other one
(``TF_ENABLE_ONEDNN_OPTS``, which the sandbox passes to the kernel), so one
``make test`` proves both settings on any machine, and checks that each
kernel really ran with the setting asked for.  The first test of each kind grades all ten
two at a time, with the other setting set (``other_setting`` is in force while it runs).
"""
from __future__ import annotations

import json

import pytest

from autograder.checks.hardware import ONEDNN_ENV, onednn_status
from autograder.submission import notebook as nbtools
from autograder.frontends import pipeline
from tests.conftest import EXERCISES, SOLUTIONS, assignments, graded_together, notebook_for, undecided_speed
from autograder.submission.assignment import files_beside, load_assignment

pytestmark = pytest.mark.slow

# The setting test_assignments.py grades with (this environment's, predicted without
# importing TensorFlow), and the one this module adds.
THIS_MACHINE = onednn_status().enabled
OTHER = "0" if THIS_MACHINE else "1"


def check_notebook(path, *, source=None, parts=None):
    """Grade as ``python -m autograder check`` does (the pipeline, unisolated), keeping the kernel's profile."""
    assignment = load_assignment(source or path, data_files=files_beside(path))
    return pipeline.grade_notebook(path, assignment, isolate=False, only_parts=parts)


def _graded_with(results) -> bool | None:
    return (results.profile or {}).get("onednn")


@pytest.fixture
def other_setting(monkeypatch):
    monkeypatch.setenv(ONEDNN_ENV, OTHER)
    return OTHER == "1"


@pytest.mark.parametrize("name", assignments())
def test_solution_scores_full_marks_with_the_other_onednn_setting(name, other_setting, request):
    results = graded_together(request, lambda n: check_notebook(notebook_for(SOLUTIONS, n)))
    assert _graded_with(results) is other_setting, f"the kernel ran with oneDNN {_graded_with(results)}"
    undecided = undecided_speed(results, [t.name for t in results.tests])
    failed = {t.name: t.output for t in results.tests if t.score < t.max_score and t.name not in undecided}
    assert not failed, f"{name} with {ONEDNN_ENV}={OTHER}: solution lost points: {json.dumps(failed, indent=1)}"
    assert results.tests and results.max_score > 0


@pytest.mark.parametrize("name", assignments())
def test_released_exercise_scores_zero_with_the_other_onednn_setting(name, other_setting, request):
    path = notebook_for(EXERCISES, name)
    assert path.exists(), f"exercises/{name} is missing: run `make exercises`"
    results = graded_together(request, lambda n: check_notebook(notebook_for(EXERCISES, n),
                                                                source=notebook_for(SOLUTIONS, n)))
    assert _graded_with(results) is other_setting, f"the kernel ran with oneDNN {_graded_with(results)}"
    assert results.output == "", f"the exercise run stopped early: {results.output}"
    assert results.score == 0, f"{name} with {ONEDNN_ENV}={OTHER}: the unanswered exercise scored {results.score}"
    solution_parts = [p.grade_id for p in nbtools.graded_parts(nbtools.load(notebook_for(SOLUTIONS, name)))]
    assert [t.name for t in results.tests] == solution_parts


def test_the_default_runs_grade_with_this_machines_setting(tmp_path, monkeypatch):
    """The other half of the matrix is test_assignments.py's: its kernels get
    this environment's setting, the one predicted here."""
    nb = nbtools.load(notebook_for(SOLUTIONS, assignments()[0]))
    results = check_notebook(notebook_for(SOLUTIONS, assignments()[0]), parts=[
        nbtools.graded_parts(nb)[0].grade_id])
    assert _graded_with(results) is THIS_MACHINE
