"""The exercises page lists every assignment with its parts, points and check command."""
from __future__ import annotations

import jupytext
import nbclient
import pytest

from autograder.submission.notebook import graded_parts, load
from tests.conftest import ROOT, SOLUTIONS, assignments, notebook_for

pytestmark = pytest.mark.slow


def test_the_page_lists_every_assignment_from_its_notebook():
    nb = jupytext.read(ROOT / "book" / "exercises.md")
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(ROOT / "book")}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"], "the exercises page failed"
    text = "\n".join(o.get("data", {}).get("text/markdown", "") for o in outputs)
    total = 0.0
    for name in assignments():
        parts = graded_parts(load(notebook_for(SOLUTIONS, name)))
        points = sum(p.points for p in parts)
        total += points
        assert f"{len(parts)} parts, {points:g} points" in text, f"{name}: parts or points missing"
        assert f"python -m autograder check exercises/{name}/{name}.ipynb" in text, f"{name}: no check command"
        for part in parts:
            assert f"| `{part.grade_id}` |" in text and f"| {part.points:g} |" in text
    assert text.startswith(f"{len(assignments())} assignments, ") and f"{total:g} points in all" in text
