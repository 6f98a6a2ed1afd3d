"""The class report in a real browser: headless Chromium over the DevTools protocol.

The page written for the known batch of ``test_class_report.py`` (and the planted
copy of ``test_similarity.py``) is opened as a file, as an instructor opens it:
it renders, every plot is decoded and laid out at a nonzero size, its tables
are there, the similar pair's cells sit side by side, it loads nothing from
anywhere else (one self-contained file) and no script throws.  A screenshot goes
to ``_build/screenshots/class_report.png`` for review.

Uses tests/book/test_browser.py's Chromium and DevTools client; where no Chromium
exists the module is skipped with that file's reason, never passed.
"""
from __future__ import annotations

import base64
import shutil
import time
from pathlib import Path

import pytest

from autograder.results.results import Results, TestResult
from tests.book.test_browser import SCREENSHOTS, browser  # noqa: F401  (browser: a fixture)
from tests.report.test_class_report import SPEED_SOURCE, TINY_SOURCE, _write_batch
from tests.report.test_similarity import ANSWERS, ASSIGNMENT, PLANTED, SOURCE, _disguised, _submit

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PAGE_REPORT = """(() => {
  const visible = el => { const r = el.getBoundingClientRect(); return {width: r.width, height: r.height}; };
  const cells = Array.from(document.querySelectorAll("tr.pair")).slice(0, 1).map(row =>
      Array.from(row.querySelectorAll("td")).map(td => td.getBoundingClientRect().left));
  return {
    title: document.title,
    h1: (document.querySelector("h1") || {}).textContent || "",
    plots: Array.from(document.querySelectorAll("img.plot")).map(img => ({
        alt: img.alt, natural: img.naturalWidth, ...visible(img)})),
    tables: Array.from(document.querySelectorAll("section")).map(sec => sec.querySelectorAll("table").length),
    sections: Array.from(document.querySelectorAll("section.assignment h2")).map(h => h.textContent),
    pairCells: cells,
    marks: document.querySelectorAll("mark").length,
    resources: performance.getEntriesByType("resource").map(r => r.name),
    text: document.body.innerText,
  };
})()"""


@pytest.fixture(scope="module")
def report_page(tmp_path_factory) -> Path:
    """The report of the known batch, with a similarity section, written by the command."""
    from autograder.cli import main

    tmp = tmp_path_factory.mktemp("report")
    graded, source, submissions = _write_batch(tmp / "graded"), tmp / "source", tmp / "submitted"
    shutil.copytree(TINY_SOURCE / "tiny", source / "tiny")
    shutil.copytree(SPEED_SOURCE / "speed", source / "speed")
    shutil.copytree(SOURCE / ASSIGNMENT, source / ASSIGNMENT)
    for student, cells in {**ANSWERS, PLANTED[1]: _disguised(ANSWERS[PLANTED[0]])}.items():
        _submit(submissions, student, cells)
        path = graded / student / ASSIGNMENT / "results.json"
        path.parent.mkdir(parents=True)
        path.write_text(Results(tests=[TestResult("test-collatz", 2.0, 2.0, "collatz is right")]).to_json())
    assert main(["report", str(graded), "--source", str(source), "--similarity", "--submissions",
                 str(submissions)]) == 0
    return graded / "report.html"


def test_the_report_renders_with_its_plots_and_tables(browser, report_page):  # noqa: F811
    browser.events.clear()
    browser.open(report_page.as_uri())
    seen = browser.evaluate(PAGE_REPORT)
    errors = [e for e in browser.events if e.get("method") == "Runtime.exceptionThrown"]
    assert seen["title"] == "Class report" and seen["h1"] == "Class report"
    assert seen["sections"] == [ASSIGNMENT, "speed", "tiny"]
    # Per assignment a score histogram and a parts chart; one speed part with measured speedups.
    assert len(seen["plots"]) == 3 * 2 + 1, seen["plots"]
    for plot in seen["plots"]:
        assert plot["natural"] > 0 and plot["width"] > 100 and plot["height"] > 50, plot
    # Per assignment: parts, failures (none in 06), speedups (speed only), slowest (none timed in 06),
    # stopped (tiny only), not final (speed only: carol's undecided part); the similarity section: the pairs and
    # the pair's cells.
    assert seen["tables"] == [1, 5, 4, 2], seen["tables"]
    assert "29%" in seen["text"] and "ben and zack" in seen["text"]
    (left, right), = seen["pairCells"]
    assert right > left + 200, f"the pair's cells are not side by side: {seen['pairCells']}"
    assert seen["marks"] > 0
    assert seen["resources"] == [], f"the page loaded other files: {seen['resources'][:5]}"
    assert not errors, errors[:3]
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    time.sleep(0.3)
    size = browser.send("Page.getLayoutMetrics")["cssContentSize"]
    clip = {"x": 0, "y": 0, "width": size["width"], "height": min(size["height"], 6000), "scale": 1}
    shot = browser.send("Page.captureScreenshot", format="png", clip=clip, captureBeyondViewport=True)
    (SCREENSHOTS / "class_report.png").write_bytes(base64.b64decode(shot["data"]))
