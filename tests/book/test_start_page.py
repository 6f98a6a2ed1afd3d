"""The start page (the book's root, ``book/intro.md``) answers where to start, what you need
and how long, read from its MyST source and the helper it runs; no book build needed."""
from __future__ import annotations

import functools
import importlib.util
import re
import sys

import nbformat
import pytest
import yaml

from tests.conftest import ROOT

PAGE = ROOT / "book" / "intro.md"


@functools.cache
def _helper():
    """book/_helpers/reading_time.py (book/ is not a package: the page imports it from there)."""
    spec = importlib.util.spec_from_file_location("book_reading_time", ROOT / "book" / "_helpers" / "reading_time.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up
    spec.loader.exec_module(module)
    return module


def _section(title: str) -> str:
    text = PAGE.read_text(encoding="utf-8")
    assert f"\n## {title}\n" in text, f"the start page has no '## {title}' section"
    return text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def _course_chapters() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    (course,) = [p for p in toc["parts"] if p["caption"] == "The course"]
    return [entry["file"] for entry in course["chapters"]]


def test_the_start_page_is_the_root_and_the_course_part_is_numbered():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    assert toc["root"] == "book/intro"
    captions = [p["caption"] for p in toc["parts"]]
    assert captions == ["The course", "Exercises", "For instructors", "Reference"]
    assert toc["parts"][0].get("numbered") is True
    chapters = _course_chapters()
    assert [c.split("/")[-1][:2] for c in chapters] == [f"{n:02d}" for n in range(1, 11)]


def test_the_way_in_comes_before_the_background():
    text = PAGE.read_text(encoding="utf-8")
    order = [text.index(f"\n## {title}\n") for title in
             ("Where to start", "What you need", "How long it takes", "Where the questions come from")]
    assert order == sorted(order)


def test_it_says_where_to_start_in_three_ways():
    section = _section("Where to start")
    assert "{doc}`01_op_logs`" in section  # the first chapter
    for way in ("Colab", "WSL2", "CPU-only laptop"):
        assert way in section, f"'Where to start' does not name {way}"
    assert "make book" in section and "make test" in section


def test_it_says_what_you_need():
    section = _section("What you need")
    for need in ("Python 3.11", "Linux", "WSL2", "macOS", "Disk", "GPU", "native Windows", "2.10"):
        assert need in section, f"'What you need' does not name {need!r}"
    # the disk figure is printed by a cell from the environment that built the book, not typed
    assert re.search(r"```\{code-cell\}.*?sys\.prefix.*?GiB", PAGE.read_text(encoding="utf-8"), re.S)


def test_it_names_every_chapter_and_computes_its_time():
    section = _section("How long it takes")
    helper = _helper()
    for chapter in _course_chapters():
        assert "{doc}`" + chapter.split("/")[-1] + "`" in section, f"'How long it takes' does not name {chapter}"
    assert f"{helper.WORDS_PER_MINUTE} words a minute" in section  # the rate the prose states is the one used
    assert "reading_order(ROOT)" in section and "table_rows(order)" in section
    order = helper.reading_order(ROOT, cache_dir=ROOT / "no-cache-here")
    rows = helper.table_rows(order)
    assert [c.path.relative_to(ROOT).as_posix() for c, _ in order] == [f"{c}.md" for c in _course_chapters()]
    for (chapter, exercise), row in zip(order, rows):
        assert chapter.words > 500 and re.fullmatch(r"\d+ min|\d+ h \d\d min", row["reading"]), row
        assert exercise is not None and exercise.words > 100, f"{chapter.path.name} has no released exercise"
        assert row["chapter"] == chapter.title and not chapter.title.startswith("book/")
        assert row["its cells ran"] == "not in this build's cache"  # nothing invented without a cache
    assert "only reading time" in helper.summary(order)


def test_run_times_come_from_the_execution_cache(tmp_path):
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    helper = _helper()
    first, second = [ROOT / f"{c}.md" for c in _course_chapters()[:2]]
    cache = get_cache(str(tmp_path / "cache"))
    for path, seconds, code in ((first, 42.0, "1"), (second, 600.0, "2"), (first, 95.0, "3")):
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
        cache.cache_notebook_bundle(CacheBundleIn(nb, str(path.resolve()), data={"execution_seconds": seconds}),
                                    check_validity=False, overwrite=True)
    order = helper.reading_order(ROOT, cache_dir=tmp_path / "cache")
    rows = helper.table_rows(order)
    assert rows[0]["its cells ran"] == "2 min"  # the latest record of a page counts (95 s)
    assert rows[1]["its cells ran"] == "10 min"
    assert rows[2]["its cells ran"] == "not in this build's cache"
    assert "run times for 2 of the 10 chapters" in helper.summary(order)


@pytest.mark.parametrize("value, shown", [(0.2, "1 min"), (12.4, "12 min"), (59.6, "1 h 00 min"), (125, "2 h 05 min")])
def test_minutes_are_rounded_and_never_zero(value, shown):
    assert _helper().minutes(value) == shown


def test_the_readme_links_the_start_page_on_its_first_screen():
    first_screen = "\n".join((ROOT / "README.md").read_text(encoding="utf-8").splitlines()[:25])
    assert "](book/intro.md)" in first_screen
    assert "_build/html/index.html" in first_screen
