"""Build the small assignments the hostile catalogue grades.

``python tests/files/hostile/make_tiny.py`` rewrites ``tiny/source/tiny/tiny.ipynb``
(no TensorFlow: two graded parts, an answer cell each, visible and hidden
tests) and ``speed/source/speed/speed.ipynb`` (one TensorFlow speed part).
"""
from __future__ import annotations

from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent


def _meta(grade_id: str, *, solution: bool = False, grade: bool = False, points: float | None = None,
          locked: bool = True) -> dict:
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3,
            "solution": solution, "task": False}
    if points is not None:
        meta["points"] = points
    return {"nbgrader": meta}


def build() -> nbformat.NotebookNode:
    cells = [
        nbformat.v4.new_markdown_cell("# Tiny\nTwo parts: `double(x)` and `SECRET_WORD`.",
                                      metadata=_meta("intro")),
        nbformat.v4.new_code_cell("import time\nfrom autograder.checks.timing import compare_outputs\nDATA = open('data.txt').read().strip()",
                                  metadata=_meta("setup")),
        nbformat.v4.new_code_cell(
            "def double(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION",
            metadata=_meta("answer-double", solution=True, locked=False)),
        nbformat.v4.new_code_cell(
            "assert double(2) == 4, f'double(2) returned {double(2)!r}, expected 4'\n"
            "print('double works')\n"
            "### BEGIN HIDDEN TESTS\n"
            "assert double(21) == 42, 'hidden: double(21) must be 42 (zebra-hidden-marker)'\n"
            "### END HIDDEN TESTS",
            metadata=_meta("test-double", grade=True, points=3)),
        nbformat.v4.new_code_cell(
            "SECRET_WORD = None\n### BEGIN SOLUTION\nSECRET_WORD = DATA.upper()\n### END SOLUTION",
            metadata=_meta("answer-word", solution=True, locked=False)),
        nbformat.v4.new_code_cell(
            "problem = compare_outputs(DATA.upper(), SECRET_WORD, rtol=0, atol=0)\n"
            "assert problem is None, f'SECRET_WORD is {SECRET_WORD!r}: {problem}; use the data file'\n"
            "### BEGIN HIDDEN TESTS\n"
            "assert isinstance(SECRET_WORD, str), 'hidden: SECRET_WORD must be a str (okapi-hidden-marker)'\n"
            "### END HIDDEN TESTS",
            metadata=_meta("test-word", grade=True, points=2)),
    ]
    nb = nbformat.v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def build_speed() -> nbformat.NotebookNode:
    """A one-part TensorFlow speed assignment: beat an eager loop with a tf.function."""
    cells = [
        nbformat.v4.new_code_cell(
            "import tensorflow as tf\nfrom autograder.checks.timing import assert_speedup\n\n"
            "def slow_total(x):\n    total = tf.constant(0.0)\n    for i in range(100):\n"
            "        total += tf.reduce_sum(x * float(i))\n    return total",
            metadata=_meta("setup")),
        nbformat.v4.new_code_cell(
            "### BEGIN SOLUTION\n@tf.function\ndef fast_total(x):\n    return slow_total(x)\n### END SOLUTION",
            metadata=_meta("answer-fast", solution=True, locked=False)),
        nbformat.v4.new_code_cell(
            "assert_speedup(slow_total, fast_total, lambda: (tf.random.normal((64,)),), check='hostile-speed',\n"
            "               label='fast_total', baseline_label='slow_total', min_ratio=1.5, budget_s=15, rtol=1e-4, atol=1e-3)",
            metadata=_meta("test-fast", grade=True, points=1)),
    ]
    return nbformat.v4.new_notebook(cells=cells)


if __name__ == "__main__":
    target = HERE / "tiny" / "source" / "tiny"
    target.mkdir(parents=True, exist_ok=True)
    nbformat.write(build(), target / "tiny.ipynb")
    (target / "data.txt").write_text("quokka\n")
    speed = HERE / "speed" / "source" / "speed"
    speed.mkdir(parents=True, exist_ok=True)
    nbformat.write(build_speed(), speed / "speed.ipynb")
