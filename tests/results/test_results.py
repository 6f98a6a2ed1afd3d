"""results.read_results and results.graded_files: the one reader of a graded folder."""
from __future__ import annotations

from autograder.results.results import Results, TestResult, graded_files, read_results


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_a_results_file_round_trips(tmp_path):
    res = Results(tests=[TestResult("test-a", 1.0, 2.0, "half")], notebook="a.ipynb")
    _write(tmp_path / "results.json", res.to_json())
    back = read_results(tmp_path / "results.json")
    assert back is not None and back.tests[0].name == "test-a" and back.score == 1.0


def test_missing_half_written_or_not_a_results_file_is_none(tmp_path):
    assert read_results(tmp_path / "absent.json") is None
    _write(tmp_path / "half.json", '{"tests": [')
    _write(tmp_path / "list.json", "[1, 2]")            # JSON, but not an object
    _write(tmp_path / "bad.json", '{"tests": [{"nom": 1}]}')
    assert [read_results(tmp_path / n) for n in ("half.json", "list.json", "bad.json")] == [None, None, None]


def test_graded_files_lists_every_submission_in_path_order_with_its_results(tmp_path):
    good = Results(tests=[TestResult("t", 1.0, 1.0)]).to_json()
    _write(tmp_path / "bob" / "02_x" / "results.json", good)
    _write(tmp_path / "amy" / "01_x" / "results.json", good)
    _write(tmp_path / "amy" / "02_x" / "results.json", "{")
    _write(tmp_path / "amy" / "notes.txt", "not graded")
    rows = graded_files(tmp_path)
    assert [(s, a, r is not None) for s, a, _p, r in rows] == [
        ("amy", "01_x", True), ("amy", "02_x", False), ("bob", "02_x", True)]
