"""Similar submissions: answer cells compared across a class with copydetect.

``report --similarity`` reads each submission's answer cells (nbgrader
``solution: true`` cells, by ``grade_id``) and compares every pair of
submissions of one assignment with `copydetect <https://github.com/blingenf/copydetect>`_
(MOSS's winnowing algorithm: the code is tokenized by Pygments, every name becomes
``V``/``F``/``O``, comments and whitespace are dropped, and the k-gram hashes that
survive winnowing are the fingerprints).  Renaming variables or rewriting comments
therefore changes nothing.  The released template of each cell (the source with
its solution regions replaced by nbgrader's code stub) is copydetect's
boilerplate: fingerprints it contains never count.

A pair's score is the larger of the two shares of fingerprinted tokens that the
other submission also has (copydetect's two similarities), over all answer cells
put together; pairs at or above the threshold are listed with their cells side by
side, copied stretches marked.
"""
from __future__ import annotations

import csv
import io
import itertools
import re
from dataclasses import dataclass, field
from pathlib import Path

from autograder.errors import UsageError
from autograder.submission import notebook as nbtools
from autograder.submission.assignment import load_assignment
from autograder.submission.folders import find_submissions

DEFAULT_THRESHOLD = 0.8
# nbgrader's default code stub, as nbgrader_config.py sets it (ClearSolutions.code_stub).
CODE_STUB = "# YOUR CODE HERE\nraise NotImplementedError()"
_HIDDEN = re.compile(r"^[ \t]*### BEGIN HIDDEN TESTS.*?^[ \t]*### END HIDDEN TESTS[^\n]*(?:\n|$)", re.M | re.S)
_SOLUTION = re.compile(r"^([ \t]*)### BEGIN SOLUTION[^\n]*\n.*?^[ \t]*### END SOLUTION[^\n]*(?:\n|$)", re.M | re.S)


@dataclass
class CellPair:
    grade_id: str
    first: str
    second: str
    score: float
    first_spans: list[tuple[int, int]] = field(default_factory=list)
    second_spans: list[tuple[int, int]] = field(default_factory=list)


@dataclass
class Pair:
    assignment: str
    first: str
    second: str
    score: float
    cells: list[CellPair] = field(default_factory=list)


def released_cell(source: str) -> str:
    """An answer cell as nbgrader releases it: each solution region becomes the code
    stub (indented like the region); a cell without one is the stub alone."""
    if "### BEGIN SOLUTION" not in source:
        return CODE_STUB
    return _SOLUTION.sub(lambda m: "".join(m[1] + line + "\n" for line in CODE_STUB.splitlines()), source)


def answer_cells(nb) -> dict[str, str]:
    """The answer cells of a notebook by ``grade_id`` (the first of each id)."""
    cells: dict[str, str] = {}
    for cell in nb.cells:
        gid = nbtools.nbgrader_meta(cell).get("grade_id")
        if cell.get("cell_type") == "code" and nbtools.is_answer_cell(cell) and gid and gid not in cells:
            cells[gid] = cell.source
    return cells


def class_answers(submissions: Path, assignment: str) -> dict[str, dict[str, str]]:
    """Each student's answer cells of ``assignment`` (unreadable notebooks are left out)."""
    found = {}
    for sub in find_submissions(submissions, assignment):
        if sub.notebook is None:
            continue
        try:
            found[sub.student] = answer_cells(nbtools.load(sub.notebook))
        except UsageError:
            continue
    return found


def _fingerprint(code: str, boilerplate, *, window: bool = True):
    from copydetect import CodeFingerprint, defaults

    win = defaults.GUARANTEE_THRESHOLD - defaults.NOISE_THRESHOLD + 1 if window else 1
    return CodeFingerprint("answer.py", defaults.NOISE_THRESHOLD, win, boilerplate, language="python",
                           fp=io.StringIO(code))


def _boilerplate(code: str):
    import numpy as np

    return np.array(sorted(_fingerprint(code, None, window=False).hashes), dtype=np.int64)


def _compare(a, b) -> tuple[float, list[tuple[int, int]], list[tuple[int, int]]]:
    from copydetect import compare_files

    _, (sim_a, sim_b), (slices_a, slices_b) = compare_files(a, b)
    return float(max(sim_a, sim_b)), _spans(slices_a), _spans(slices_b)


def _spans(slices) -> list[tuple[int, int]]:
    """copydetect's 2xN array of copied (start, end) offsets; an empty 1-D array when none."""
    if getattr(slices, "ndim", 0) != 2:
        return []
    return [(int(start), int(end)) for start, end in zip(*slices)]


def released_code(source_nb) -> str:
    """Every line of code a learner is given: the code cells of the release (hidden
    tests removed) with each answer cell as released."""
    chunks = []
    for cell in source_nb.cells:
        if cell.get("cell_type") != "code":
            continue
        chunks.append(released_cell(cell.source) if nbtools.is_answer_cell(cell) else _HIDDEN.sub("", cell.source))
    return "\n\n".join(chunks)


def similar_pairs(assignment: str, answers: dict[str, dict[str, str]], template: dict[str, str],
                  threshold: float = DEFAULT_THRESHOLD, given: str = "") -> list[Pair]:
    """Every pair of students whose answers score at least ``threshold``, highest first.
    ``template``: the released answer cells by grade_id; ``given``: the rest of the
    released code (:func:`released_code`).  Fingerprints found in either never count."""
    order = list(template) + sorted({g for cells in answers.values() for g in cells} - set(template))
    boilerplate = _boilerplate("\n\n".join([given, *(template.get(g, "") for g in order)]))
    cell_prints: dict[tuple[str, str], object] = {}  # fingerprinted once, only for students in a pair

    def cell_print(student: str, gid: str):
        if (student, gid) not in cell_prints:
            cell_prints[student, gid] = _fingerprint(answers[student].get(gid, ""), boilerplate)
        return cell_prints[student, gid]

    documents = {s: _fingerprint("\n\n".join(cells.get(g, template.get(g, "")) for g in order), boilerplate)
                 for s, cells in answers.items()}
    pairs = []
    for first, second in itertools.combinations(sorted(answers), 2):
        score, _, _ = _compare(documents[first], documents[second])
        if score < threshold:
            continue
        cells = []
        for gid in order:
            a, b = answers[first].get(gid, ""), answers[second].get(gid, "")
            cell_score, spans_a, spans_b = _compare(cell_print(first, gid), cell_print(second, gid))
            cells.append(CellPair(gid, a, b, cell_score, spans_a, spans_b))
        pairs.append(Pair(assignment, first, second, score, cells))
    return sorted(pairs, key=lambda p: (-p.score, p.first, p.second))


def find_similar(submissions: Path | str, source_root: Path | str, assignments: list[str],
                 threshold: float = DEFAULT_THRESHOLD) -> list[Pair]:
    """Similar pairs of every assignment in ``assignments``, from the notebooks under
    ``submissions`` (``<student>/<assignment>/``) and each assignment's source notebook."""
    submissions, source_root = Path(submissions), Path(source_root)
    if not submissions.is_dir():
        raise UsageError(f"--submissions {submissions}: no such folder; give the folder `grade` read "
                         "(<student>/<assignment>/<notebook>.ipynb)")
    if not 0 < threshold <= 1:
        raise UsageError(f"--threshold must be in (0, 1], got {threshold:g}")
    pairs = []
    for name in assignments:
        source = source_root / name / f"{name}.ipynb"
        spec = load_assignment(source, data_files=[])  # a usage error names a missing source
        source_nb = nbtools.load(spec.source)
        template = {g: released_cell(code) for g, code in answer_cells(source_nb).items()}
        pairs += similar_pairs(name, class_answers(submissions, name), template, threshold,
                               released_code(source_nb))
    return pairs


def pairs_csv(pairs: list[Pair]) -> str:
    """One row per listed pair: the score and each answer cell's own score."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["assignment", "student_a", "student_b", "similarity", "cells"])
    for pair in pairs:
        writer.writerow([pair.assignment, pair.first, pair.second, f"{pair.score:.4f}",
                         " ".join(f"{c.grade_id}={c.score:.2f}" for c in pair.cells)])
    return buffer.getvalue()
