"""exercises/ is exactly what nbgrader generates from solutions/."""
from __future__ import annotations

import json

import pytest

from autograder.course.release import generate
from tests.conftest import EXERCISES, ROOT, SOLUTIONS, assignments

pytestmark = pytest.mark.slow


def _files(folder):
    return sorted(p.relative_to(folder) for p in folder.rglob("*") if p.is_file() and ".ipynb_checkpoints" not in p.parts)


def test_committed_exercises_match_what_solutions_generate(tmp_path):
    names = assignments()
    assert names, "no assignments under solutions/"
    generate(names, release_dir=tmp_path)
    for name in names:
        fresh, committed = tmp_path / name, EXERCISES / name
        assert committed.is_dir(), f"exercises/{name} is missing: run `make exercises`"
        assert _files(fresh) == _files(committed), f"exercises/{name} has other files than generated: run `make exercises`"
        for rel in _files(fresh):
            assert (fresh / rel).read_bytes() == (committed / rel).read_bytes(), (
                f"exercises/{name}/{rel} is stale: run `make exercises` and commit the result")


def test_release_strips_solutions_and_hidden_tests():
    for name in assignments():
        text = (EXERCISES / name / f"{name}.ipynb").read_text()
        assert "BEGIN SOLUTION" not in text and "BEGIN HIDDEN TESTS" not in text, name
        assert "raise NotImplementedError()" in text, name


def test_committed_notebooks_have_no_outputs():
    for folder in (SOLUTIONS, EXERCISES):
        for path in folder.rglob("*.ipynb"):
            nb = json.loads(path.read_text())
            for cell in nb["cells"]:
                if cell["cell_type"] == "code":
                    assert not cell.get("outputs") and cell.get("execution_count") is None, (
                        f"{path.relative_to(ROOT)} has outputs: clear them before committing")
