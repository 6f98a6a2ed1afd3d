"""Each exercise opens with its reading time, the chapter sections it needs and what it builds on.

The time is computed, not guessed: the released notebook's words at the start page's rate
(``book/_helpers/reading_time.py``), so a test fails when an edit makes the stated figure
stale.  Every section a header names must be a heading of the chapter page it links to.
"""
from __future__ import annotations

import importlib.util
import re
import sys

import nbformat
import pytest

from tests.conftest import EXERCISES, ROOT, SOLUTIONS, assignments, notebook_for

TIME = re.compile(r"^\*\*Time:\*\* about (\d+) min to read, at (\d+) words a minute", re.M)
NEEDS = re.compile(r"^- Chapter (\d+) \(\[[^\]]+\]\(\.\./\.\./(book/[\w.]+\.md)\)\): (.+)$", re.M)
SECTION = re.compile(r"\*([^*]+)\*")
BUILDS_ON = re.compile(r"^\*\*Builds on:\*\* \S", re.M)


def _reading_time():
    spec = importlib.util.spec_from_file_location("book_reading_time", ROOT / "book" / "_helpers" / "reading_time.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks the module up there
    spec.loader.exec_module(module)
    return module


reading_time = _reading_time()


def intro(folder, name) -> str:
    cell = nbformat.read(notebook_for(folder, name), as_version=4).cells[0]
    assert cell.cell_type == "markdown", f"{folder.name}/{name}: the first cell is not the introduction"
    return cell.source


@pytest.mark.parametrize("name", assignments())
def test_stated_reading_time_is_the_computed_one(name):
    text = intro(EXERCISES, name)
    found = TIME.search(text)
    assert found, f"exercises/{name}: the first cell does not say '**Time:** about N min to read, at ... words a minute'"
    stated, rate = int(found[1]), int(found[2])
    assert rate == reading_time.WORDS_PER_MINUTE, f"exercises/{name} states {rate} words a minute"
    words = reading_time.exercise_words(notebook_for(EXERCISES, name))[1]
    computed = words / reading_time.WORDS_PER_MINUTE
    assert abs(stated - computed) <= 1, (
        f"exercises/{name} says about {stated} min to read; its {words} words take {computed:.1f} min: "
        f"write {round(computed)} in solutions/{name}'s first cell and run `make exercises`")


@pytest.mark.parametrize("name", assignments())
def test_named_sections_are_headings_of_the_linked_chapter(name):
    text = intro(SOLUTIONS, name)
    needs = NEEDS.findall(text)
    assert needs, f"solutions/{name}: the first cell names no '- Chapter N ([book/...](../../book/...)): *Section*'"
    assert BUILDS_ON.search(text), f"solutions/{name}: the first cell does not say '**Builds on:** ...'"
    for number, page, sections in needs:
        path = ROOT / page
        assert path.is_file(), f"solutions/{name} links {page}, which does not exist"
        assert path.name.startswith(f"{int(number):02d}_"), f"solutions/{name}: chapter {number} is not {page}"
        headings = {h.strip() for h in re.findall(r"^#{2,3} (.+)$", path.read_text(encoding="utf-8"), re.M)}
        titles = SECTION.findall(sections)
        assert titles, f"solutions/{name}: no *section title* named for chapter {number}"
        for title in titles:
            assert title in headings, f"solutions/{name} names *{title}*, which is not a section of {page}"


def test_exercise_1_part_1_points_to_where_optimizer_build_is_taught():
    cells = nbformat.read(notebook_for(SOLUTIONS, "01_op_logs"), as_version=4).cells
    part1 = next(c.source for c in cells if c.metadata.get("nbgrader", {}).get("grade_id") == "part1-text")
    assert "optimizer.build" in part1 and "tf.device" in part1 and "(../../book/02_gpu_placement.md)" in part1
    assert "optimizer.build(" in (ROOT / "book" / "02_gpu_placement.md").read_text(encoding="utf-8")
