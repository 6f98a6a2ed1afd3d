"""Reading notebooks and restoring test cells by grade_id."""
from __future__ import annotations

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from autograder.submission import notebook as nbtools
from autograder.errors import NotebookError


def _cell(source, gid, *, test=False, answer=False, points=1, cell_id=None):
    cell = new_code_cell(source, id=cell_id or gid)
    meta = {"grade_id": gid, "grade": test, "solution": answer, "locked": not answer, "schema_version": 3}
    if test:
        meta["points"] = points
    cell.metadata["nbgrader"] = meta
    return cell


def _source():
    return new_notebook(cells=[
        _cell("x = 1", "answer-x", answer=True),
        _cell("assert x == 1", "test-x", test=True, points=2),
        _cell("y = 2", "answer-y", answer=True),
        _cell("assert y == 2", "test-y", test=True, points=3),
    ])


@pytest.mark.parametrize("content,needle", [
    (None, "no such file"),
    ("{not json", "invalid JSON"),
    ('{"a": 1}', "no 'cells'"),
    ("\udcff", "cannot be read"),
])
def test_load_gives_one_line_errors(tmp_path, content, needle):
    path = tmp_path / "nb.ipynb"
    if content == "\udcff":
        path.write_bytes(b"\xff\xfe\x00bad")
    elif content is not None:
        path.write_text(content)
    with pytest.raises(NotebookError) as info:
        nbtools.load(path)
    assert needle in str(info.value) and "\n" not in str(info.value)


def test_graded_parts_in_order_with_points():
    parts = nbtools.graded_parts(_source())
    assert [(p.grade_id, p.points) for p in parts] == [("test-x", 2.0), ("test-y", 3.0)]


def test_restore_replaces_edited_deleted_and_duplicated_tests():
    source = _source()
    sub = _source()
    sub.cells[1].source = "pass  # edited test"
    del sub.cells[3]                                # deleted test
    sub.cells.append(_cell("pass", "test-x", test=True, points=99, cell_id="copied"))  # duplicated test id
    restored = nbtools.restore_from_source(sub, source)
    tests = [c for c in restored.cells if nbtools.is_test_cell(c)]
    assert [c.source for c in tests] == ["assert x == 1", "assert y == 2"]
    order = [nbtools.nbgrader_meta(c)["grade_id"] for c in restored.cells]
    assert order == ["answer-x", "test-x", "answer-y", "test-y"]


def test_restore_keeps_a_missing_answer_missing():
    sub = _source()
    del sub.cells[2]  # the learner deleted answer-y
    restored = nbtools.restore_from_source(sub, _source())
    order = [nbtools.nbgrader_meta(c)["grade_id"] for c in restored.cells]
    assert order == ["answer-x", "test-x", "test-y"]
    nbformat.validate(restored)
