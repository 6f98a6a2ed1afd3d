"""Similar submissions: a planted copy among independent answers, the template ignored.

The independent answers are exercise 6's reference solution and the catalogue's
right answers written differently (tests/wrong_answers/ex06.py); the planted
copy is one of them with every variable renamed and its comments rewritten.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest

from autograder.report import report_page, similarity
from autograder.report.class_report import build_report
from autograder.results.results import Results, TestResult
from tests.conftest import EXERCISES, ROOT
from tests.wrong_answers import ex06

ASSIGNMENT = ex06.ASSIGNMENT
SOURCE = ROOT / "solutions"
RENAMES = {"h0": "initial_state", "x_t": "step_input", "values": "seq", "n": "num", "x": "inputs",
           "mean": "mu", "std": "sigma", "eps": "epsilon", "i": "position"}


def _reference() -> dict[str, str]:
    cells = similarity.answer_cells(nbformat.read(SOURCE / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4))
    return {gid: "\n".join(line for line in code.splitlines() if "### " not in line) for gid, code in cells.items()}


def _right(name: str) -> dict[str, str]:
    return next(c for c in ex06.CASES if c.right and c.name == name).replace


def _disguised(cells: dict[str, str]) -> dict[str, str]:
    """``cells`` with every variable renamed and the comments changed: what copying looks like."""
    out = {}
    for gid, code in cells.items():
        for old, new in RENAMES.items():
            code = re.sub(rf"\b{old}\b", new, code)
        code = re.sub(r"#[^\n]*", "# worked this out from the docs", code)
        out[gid] = f"# {gid}: my own solution\n" + code
    return out


ANSWERS = {
    "ana": _reference(),
    "ben": _right("scan_tensor_array_wrapper"),
    "chloe": _right("wrapped_while_loops_python_function"),
    "dan": _right("right_module_level_eps"),
    "eve": {},  # submitted the release unchanged: only template code
    "fay": {},
}
PLANTED = ("ben", "zack")  # zack hands in ben's answers, disguised


def _submit(root: Path, student: str, cells: dict[str, str]) -> None:
    nb = nbformat.read(EXERCISES / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    for cell in nb.cells:
        gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if gid in cells:
            cell.source = cells[gid]
    folder = root / student / ASSIGNMENT
    folder.mkdir(parents=True)
    nbformat.write(nb, folder / f"{ASSIGNMENT}.ipynb")


@pytest.fixture(scope="module")
def submissions(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("submitted")
    for student, cells in ANSWERS.items():
        _submit(root, student, cells)
    _submit(root, PLANTED[1], _disguised(ANSWERS[PLANTED[0]]))
    return root


def test_the_released_cell_is_the_source_with_its_solution_replaced():
    assert similarity.released_cell("def f(x):\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION\n") == \
        "def f(x):\n    # YOUR CODE HERE\n    raise NotImplementedError()\n"
    assert similarity.released_cell("x = 1\n") == similarity.CODE_STUB


def test_the_released_cells_match_nbgraders_release():
    source = nbformat.read(SOURCE / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    release = nbformat.read(EXERCISES / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    ours = {g: similarity.released_cell(c).strip() for g, c in similarity.answer_cells(source).items()}
    assert ours == {g: c.strip() for g, c in similarity.answer_cells(release).items()}


def test_the_planted_copy_is_flagged_and_no_independent_pair(submissions):
    pairs = similarity.find_similar(submissions, SOURCE, [ASSIGNMENT])
    assert [(p.first, p.second) for p in pairs] == [PLANTED]
    assert pairs[0].score >= 0.95
    everything = similarity.find_similar(submissions, SOURCE, [ASSIGNMENT], threshold=1e-9)
    independent = [p.score for p in everything if (p.first, p.second) != PLANTED]
    assert max(independent) < similarity.DEFAULT_THRESHOLD, independent
    assert not [p for p in everything if {p.first, p.second} == {"eve", "fay"}], "two untouched releases matched"


def test_the_page_shows_the_pair_side_by_side(submissions, tmp_path):
    graded = tmp_path / "graded"
    for student in [*ANSWERS, PLANTED[1]]:
        path = graded / student / ASSIGNMENT / "results.json"
        path.parent.mkdir(parents=True)
        path.write_text(Results(tests=[TestResult("test-collatz", 2.0, 2.0)]).to_json())
    report = build_report(graded, source=SOURCE)
    report.similarity = similarity.find_similar(submissions, SOURCE, [ASSIGNMENT])
    report.similarity_threshold = similarity.DEFAULT_THRESHOLD
    page = report_page.render_html(report)
    assert "Similar submissions" in page and "ben and zack" in page
    assert page.count('<tr class="pair">') == len(ANSWERS["ben"])  # one row per answer cell
    assert "<mark>" in page and "step_input" in page and "x_t" in page


def test_the_command_lists_the_pair(submissions, tmp_path):
    from autograder.cli import main

    graded = tmp_path / "graded"
    path = graded / "ben" / ASSIGNMENT / "results.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(Results(tests=[TestResult("test-collatz", 2.0, 2.0)]).to_dict()))
    assert main(["report", str(graded), "--source", str(SOURCE), "--similarity", "--submissions",
                 str(submissions)]) == 0
    assert "ben and zack" in (graded / "report.html").read_text()
    rows = (graded / "report_similarity.csv").read_text().splitlines()
    assert rows[1].startswith(f"{ASSIGNMENT},ben,zack,1.0000,answer-rnn-graph=1.00") and len(rows) == 2
    assert main(["report", str(graded), "--source", str(SOURCE), "--similarity", "--submissions",
                 str(submissions), "--threshold", "1.5"]) == 2
