"""The book builds with every chapter executed, warnings as errors."""
from __future__ import annotations

import re

import pytest
import yaml

from tests.conftest import ROOT

pytestmark = pytest.mark.slow


def toc_files() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]
    for entry in toc.get("chapters", []):
        files.append(entry["file"])
    for part in toc.get("parts", []):
        files.extend(entry["file"] for entry in part.get("chapters", []))
    return files


# `built_book` (the book, built once per session) is in tests/book/conftest.py.


def test_every_toc_page_is_built(built_book):
    for name in toc_files():
        page = built_book / f"{name}.html"
        assert page.exists(), f"{name} was not built"


def test_no_page_shows_an_error_output(built_book):
    for name in toc_files():
        html = (built_book / f"{name}.html").read_text(encoding="utf-8")
        assert "Traceback (most recent call last)" not in html, f"{name} shows a traceback"
        assert not re.search(r'class="[^"]*output (error|traceback)', html), f"{name} shows an error output"


def test_the_hardware_page_shows_every_committed_results_file(built_book):
    """What a reader of the built book sees on "Hardware and results": each committed results
    file by name and machine, and the speedup and roofline plots (tests/course/test_results_page.py
    executes the page on made-up files)."""
    import html as html_lib

    from autograder.course.results_files import RESULTS_DIR, load_all

    page = (built_book / "book" / "hardware.html").read_text(encoding="utf-8")
    text = html_lib.unescape(re.sub(r"<[^>]+>", "", page))
    files = load_all(RESULTS_DIR)
    for f in files:
        assert f.path.name in text and f.hardware in text, (
            f"the built hardware page does not show {f.path.name} ({f.hardware}): if the book came from a "
            "warm execution cache older than the file, `rm -r _build` and build it again")
    assert len(re.findall(r"<img [^>]*src=\"[^\"]*_images/", page)) >= 2, "the speedup and roofline plots are missing"
    if not any(f.on_gpu for f in files):
        assert "No results file from a GPU exists" in text


def test_chapter_files_follow_the_skeleton():
    chapters = [name for name in toc_files() if re.match(r"book/\d\d_", name)]
    assert chapters, "no chapters in _toc.yml"
    for name in chapters:
        path = ROOT / f"{name}.md"
        text = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.S | re.M)
        headings = re.findall(r"^## (.+)$", text, flags=re.M)
        assert len(re.findall(r"^# ", text, flags=re.M)) == 1, f"{name}: one H1"
        for required in ("Overview", "Setup", "Pitfalls", "Exercise", "Next steps"):
            assert required in headings, f"{name}: missing '## {required}'"
