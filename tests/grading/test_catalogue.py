"""The mutation catalogue covers every specification clause of every graded part.

Each part's text (the markdown cell before its answer) lists its specification
under a ``**Specification**`` line, one numbered clause per line.  For every
part the catalogue (``tests/wrong_answers``) must hold a wrong answer per clause
that expects the part to score 0, and two right answers written differently
that keep it; each exercise must hold a hostile case of every class aimed at
its own names and checks, and the engine's attacks must be tried on the tiny
assignment and on one real exercise.  The cases themselves run in
``tests/grading/test_assignments.py``.
"""
from __future__ import annotations

import importlib
import pkgutil
import re

import pytest

from autograder.submission import notebook as nbtools
from tests import wrong_answers
from tests.conftest import SOLUTIONS, assignments, notebook_for
from tests.wrong_answers import ENGINE_EXERCISE, ENGINE_HOSTILE_CLASSES, HOSTILE_CLASSES, OBSERVATION_CLASSES

CLAUSE = re.compile(r"^\s*(\d+)\.\s+(\S.*)")
# A clause that only a GPU can break (a speed on GPU profiles) gets its wrong answer
# where a GPU grades; on this CPU-only machine its part is graded on the other clauses.
GPU_ONLY = "On a GPU profile"


def catalogues() -> dict[str, list]:
    found = {}
    for info in pkgutil.iter_modules(wrong_answers.__path__):
        module = importlib.import_module(f"tests.wrong_answers.{info.name}")
        found[module.ASSIGNMENT] = module.CASES
    return found


def specifications(name: str, *, cpu_gradable: bool = False) -> dict[str, list[int]]:
    """For each test grade_id: the clause numbers listed in its part's text (with
    ``cpu_gradable``, only those a CPU-only machine can break)."""
    nb = nbtools.load(notebook_for(SOLUTIONS, name))
    specs: dict[str, list[int]] = {}
    clauses: list[int] = []
    for cell in nb.cells:
        if cell.cell_type == "markdown" and "**Specification**" in cell.source:
            after = cell.source.split("**Specification**", 1)[1]
            clauses = [int(m.group(1)) for line in after.splitlines() if (m := CLAUSE.match(line))
                       and not (cpu_gradable and m.group(2).startswith(GPU_ONLY))]
        elif nbtools.is_test_cell(cell) and clauses:
            specs[nbtools.nbgrader_meta(cell)["grade_id"]] = clauses
            clauses = []
    return specs


@pytest.mark.parametrize("name", assignments())
def test_every_part_states_its_specification(name):
    parts = [p.grade_id for p in nbtools.graded_parts(nbtools.load(notebook_for(SOLUTIONS, name)))]
    specs = specifications(name)
    missing = [p for p in parts if p not in specs]
    assert not missing, f"{name}: parts without a '**Specification**' list of numbered clauses: {missing}"
    for gid, clauses in specs.items():
        assert clauses == list(range(1, len(clauses) + 1)), f"{name} {gid}: clauses must be numbered 1..n"


@pytest.mark.parametrize("name", assignments())
def test_every_clause_has_a_wrong_answer_that_loses_the_part(name):
    cases = catalogues().get(name, [])
    broken = {(gid, n) for c in cases for gid, n in c.breaks.items() if gid in c.loses}
    wanted = {(gid, n) for gid, clauses in specifications(name, cpu_gradable=True).items() for n in clauses}
    assert not wanted - broken, f"{name}: clauses with no wrong answer that scores the part 0: {sorted(wanted - broken)}"
    for case in cases:
        if not case.right:
            for gid in case.breaks:
                assert case.messages.get(gid), f"{name} {case.name}: say which feedback {gid} must show"


@pytest.mark.parametrize("name", assignments())
def test_every_part_has_two_right_answers_written_differently(name):
    nb = nbtools.load(notebook_for(SOLUTIONS, name))
    parts = {p.grade_id: p.points for p in nbtools.graded_parts(nb)}
    answers_of = _answers_of_parts(nb)
    rights = [c for c in catalogues().get(name, []) if c.right]
    for gid in parts:
        count = sum(1 for c in rights if set(c.replace) & set(answers_of[gid]))
        assert count >= 2, f"{name} {gid}: {count} right answers rewrite its answer cells; at least 2 are needed"


@pytest.mark.parametrize("name", assignments())
def test_every_hostile_class_is_tried(name):
    """Every exercise: the attacks on its own names and checks; the engine's exercise: all five."""
    tried = {c.hostile for c in catalogues().get(name, []) if c.hostile}
    wanted = set(HOSTILE_CLASSES) if name == ENGINE_EXERCISE else set(HOSTILE_CLASSES) - set(ENGINE_HOSTILE_CLASSES)
    assert tried >= wanted, f"{name}: no hostile case of {sorted(wanted - tried)}"
    known = set(HOSTILE_CLASSES) | set(OBSERVATION_CLASSES)
    assert tried <= known, f"{name}: unknown hostile classes {sorted(tried - known)}"


def test_every_observation_class_is_attacked_somewhere():
    """Each channel of what the kernel reports (placement, counts, timing, the wire, traces) has an attack
    in the catalogue that must lose the part it aims at or be flagged for review."""
    tried = {c.hostile for cases in catalogues().values() for c in cases if c.attacks}
    assert tried == set(OBSERVATION_CLASSES), f"no attack case of {sorted(set(OBSERVATION_CLASSES) - tried)}"


def test_the_engine_attacks_are_tried_on_the_tiny_assignment():
    """The engine's attacks, run once per exercise before, run on the tiny assignment
    (``tests/grading/test_hostile.py``): silenced error displays score 0 and reading
    the course's files finds nothing (full marks only when the read fails)."""
    from tests.files.hostile.catalogue import CASES

    expect = {c.name: c.expect for c in CASES}
    assert ENGINE_EXERCISE in assignments()
    assert set(expect["silenced-tracebacks"].values()) == {0}
    for name in ("read-hidden-files", "read-course-with-any-tool"):
        assert expect[name] == expect["correct-1"], name


def _answers_of_parts(nb) -> dict[str, list[str]]:
    """For each test grade_id, the answer cells since the previous test (or, for a part
    that tests earlier answers and has none of its own, every answer cell before it)."""
    result, pending, seen = {}, [], []
    for cell in nb.cells:
        gid = nbtools.nbgrader_meta(cell).get("grade_id")
        if nbtools.is_answer_cell(cell) and gid:
            pending.append(gid)
            seen.append(gid)
        elif nbtools.is_test_cell(cell) and gid:
            result[gid] = pending or list(seen)
            pending = []
    return result


def test_the_guarantees_page_states_the_catalogue_as_it_is():
    """The counts the book's "What a grade means" page (book/instructors/grade_guarantees.md)
    gives are the catalogue's own."""
    from tests.conftest import ROOT

    parts = clauses = wrong = breaks = right = hostile = 0
    for name in assignments():
        specs = specifications(name)
        parts += len(specs)
        clauses += sum(len(v) for v in specs.values())
    for cases in catalogues().values():
        for case in cases:
            if case.right:
                right += 1
            else:
                breaks += len(case.breaks)
                hostile += bool(case.hostile)
                wrong += not case.hostile
    page = ROOT / "book" / "instructors" / "grade_guarantees.md"
    text = " ".join(page.read_text(encoding="utf-8").split())
    stated = (f"{parts} parts with {clauses} clauses; {wrong} wrong-answer cases ({breaks} clause breaks, "
              f"counting the hostile cases'), {right} right-answer cases and {hostile} hostile cases")
    assert stated in text, f"{page.relative_to(ROOT)} should say: {stated}"


@pytest.mark.parametrize("name", assignments())
def test_every_case_names_parts_of_its_exercise(name):
    """The parts a case loses, keeps, breaks and reads feedback from are parts of the
    exercise; what it must score on them is derived from their points."""
    parts = {p.grade_id: p.points for p in nbtools.graded_parts(nbtools.load(notebook_for(SOLUTIONS, name)))}
    for case in catalogues().get(name, []):
        named = set(case.loses) | set(case.keeps) | set(case.breaks) | set(case.messages)
        assert named <= set(parts), f"{name} {case.name}: names {sorted(named - set(parts))}, which are not parts"
        graded = case.graded(parts)
        assert all(graded[gid] == parts[gid] for gid in case.keeps), case.name
        assert graded == (parts if case.right else {**{g: 0 for g in case.loses}, **{g: parts[g] for g in case.keeps},
                                                     **{g: None for g in case.attacks}})
