"""The restore step: what reaches the worker of a submission, and what stops one early."""
from __future__ import annotations

import json
from pathlib import Path

import nbformat

from autograder.submission import restore
from autograder.submission.assignment import load_assignment
from tests.files.hostile.catalogue import TINY, answers

def _write(tmp_path: Path, data: bytes, name: str = "tiny.ipynb") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_prepare_sends_no_test_source_in_the_cells(tmp_path):
    prepared = restore.prepare(_write(tmp_path, answers()(None)), TINY)
    assert [c["kind"] for c in prepared.cells].count("test") == 2
    text = json.dumps(prepared.cells)
    assert "hidden-marker" not in text and "assert double" not in text
    assert "zebra-hidden-marker" in prepared.tests["test-double"]
    hidden_lines = load_assignment(TINY).hidden_lines  # what feedback redacts
    assert any("zebra-hidden-marker" in line for line in hidden_lines)
    assert all("assert double(2)" not in line for line in hidden_lines)  # visible tests are not hidden
    assert not prepared.include_tf
    written = nbformat.writes(prepared.notebook)
    assert "hidden-marker" not in written and "double works" not in written


def test_prepare_reports_bad_files_in_one_line(tmp_path):
    for data, expected in [(b"{oops", "invalid JSON"), (b"\xff\xfe\x00", "cannot be read as text"),
                           (b"[1, 2]", "no 'cells'")]:
        prepared = restore.prepare(_write(tmp_path, data), TINY)
        assert expected in prepared.error and "\n" not in prepared.error
        assert str(tmp_path) not in prepared.error  # the grader's paths stay out of feedback


def test_prepare_refuses_oversized_notebooks(tmp_path, monkeypatch):
    monkeypatch.setattr(restore, "MAX_NOTEBOOK_BYTES", 1000)
    prepared = restore.prepare(_write(tmp_path, answers()(None)), TINY)
    assert "clear its outputs" in prepared.error


def test_prepare_finds_missing_answer_cells(tmp_path):
    nb = nbformat.read(TINY, as_version=4)
    nb.cells = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") != "answer-word"]
    prepared = restore.prepare(_write(tmp_path, nbformat.writes(nb).encode()), TINY)
    assert prepared.missing_answers == {"test-word": "answer-word"}
