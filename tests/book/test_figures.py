"""Every chapter shows, not only tells: at least two figures, each with alt text.

A figure is a code cell that draws with matplotlib (``plt.show()``).  Its alt
text is the cell's myst-nb metadata, ``mystnb: {image: {alt: ...}}``, which
myst-nb writes into the rendered ``<img alt=...>`` (the browser test checks
the built pages).  These tests read the chapters' sources, so they run without
building the book.
"""
from __future__ import annotations

from pathlib import Path

import jupytext
import pytest

from tests.conftest import ROOT

BOOK = ROOT / "book"
MIN_FIGURES = 2
MIN_ALT_WORDS = 8  # an alt text says what the figure shows, not just "chart"


def chapter(number: int) -> Path:
    (path,) = sorted(BOOK.glob(f"{number:02d}_*.md"))
    return path


def figure_cells(path: Path) -> list[tuple[int, str, str]]:
    """(cell index, the cell's first source line, its alt text or "") for each cell that draws a figure."""
    notebook = jupytext.read(path)
    found = []
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type == "code" and "plt.show()" in cell.source:
            alt = cell.metadata.get("mystnb", {}).get("image", {}).get("alt", "")
            found.append((index, cell.source.splitlines()[0], str(alt).strip()))
    return found


def problems(path: Path) -> list[str]:
    cells = figure_cells(path)
    found = []
    with_alt = [cell for cell in cells if len(cell[2].split()) >= MIN_ALT_WORDS]
    if len(with_alt) < MIN_FIGURES:
        found.append(f"{path.name}: {len(with_alt)} figure cell(s) with alt text, at least {MIN_FIGURES} wanted")
    for index, first_line, alt in cells:
        if len(alt.split()) < MIN_ALT_WORDS:
            found.append(f"{path.name}: the figure in cell {index} ({first_line!r}) has "
                         f"{'no alt text' if not alt else 'alt text of under ' + str(MIN_ALT_WORDS) + ' words'}: "
                         "add `mystnb: {image: {alt: \"...\"}}` to the cell's metadata saying what it shows")
    return found


@pytest.mark.parametrize("number", [1, 2, 3, 4, 5])
def test_chapters_1_to_5_have_two_figures_with_alt_text(number):
    assert problems(chapter(number)) == []


@pytest.mark.parametrize("number", [6, 7, 8, 9, 10])
def test_chapters_6_to_10_have_two_figures_with_alt_text(number):
    assert problems(chapter(number)) == []


def test_a_figure_without_alt_text_is_named(tmp_path):
    page = tmp_path / "99_page.md"
    page.write_text(
        "---\njupytext:\n  text_representation:\n    extension: .md\n    format_name: myst\n"
        "kernelspec:\n  display_name: Python 3\n  language: python\n  name: python3\n---\n\n# A page\n\n"
        "```{code-cell} ipython3\n---\nmystnb:\n  image:\n    alt: \"A bar chart of two timings, one bar for each "
        "version, taller is slower\"\n---\nplt.bar([0, 1], [1, 2])\nplt.show()\n```\n\n"
        "```{code-cell} ipython3\nfig, ax = plt.subplots()\nplt.show()\n```\n", encoding="utf-8")
    found = problems(page)
    assert len(found) == 2
    assert "1 figure cell(s) with alt text" in found[0]
    assert "cell 2 ('fig, ax = plt.subplots()') has no alt text" in found[1]


def test_the_hardware_primer_draws_what_it_measures_and_cites_what_it_does_not():
    """The Reference part's primer (launch overhead, bandwidth, arithmetic): two measured figures with alt
    text, its comparisons guarded, and the GPU and Windows figures it quotes cited."""
    import yaml

    page = BOOK / "primer.md"
    assert problems(page) == []
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    reference = next(part for part in toc["parts"] if part["caption"] == "Reference")
    assert {"file": "book/primer"} in reference["chapters"]
    text = page.read_text(encoding="utf-8")
    assert text.count("guard(") >= 2, "the primer's sentences about its figures are guarded"
    for cited in ("[^h100]:", "[^win]:", "measure_peaks("):
        assert cited in text
