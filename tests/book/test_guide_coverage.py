"""book/data/guide_coverage.yml: every guide section is either covered by a chapter
section that exists (a ## or ### heading, outside code fences, in a page of
_toc.yml) or left out with a stated reason. No book build needed."""
from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import yaml

from tests.conftest import ROOT

DATA = ROOT / "book" / "data" / "guide_coverage.yml"
MIN_SECTIONS = 2  # SavedModel warmup, the shortest guide, has two
GUIDES_EXPECTED = {
    "guide/gpu", "guide/mixed_precision", "guide/data_performance", "guide/function",
    "guide/create_op", "xla", "guide/profiler", "guide/distributed_training",
    "guide/saved_model", "serving/api_rest", "serving/serving_config",
    "serving/saved_model_warmup",
}


def guides() -> list[dict]:
    return yaml.safe_load(DATA.read_text())["guides"]


def toc_files() -> set[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = {toc["root"]}
    for entry in toc.get("chapters", []):
        files.add(entry["file"])
    for part in toc.get("parts", []):
        files.update(entry["file"] for entry in part.get("chapters", []))
    return {f.removesuffix(".md") for f in files}


@cache
def headings(path: Path) -> frozenset[str]:
    """The text of every ## and ### heading in a MyST page, code fences skipped
    (a '## ' line inside a ``` or ~~~ block is a comment, not a heading)."""
    found, fence = set(), None
    for line in path.read_text().splitlines():
        marker = re.match(r"^\s*(`{3,}|~{3,})", line)
        if marker:
            token = marker.group(1)
            if fence is None:
                fence = token
            elif token[0] == fence[0] and len(token) >= len(fence) and not line.strip()[len(token):].strip():
                fence = None
            continue
        if fence is None:
            match = re.match(r"^(##|###)\s+(.+?)\s*#*\s*$", line)
            if match:
                found.add(match.group(2))
    return frozenset(found)


def sections():
    for guide in guides():
        for section in guide["sections"]:
            yield guide["guide"], section


def test_the_file_lists_the_guides_the_course_follows():
    names = [g["guide"] for g in guides()]
    assert len(names) == len(set(names)), "a guide is listed twice"
    assert GUIDES_EXPECTED <= set(names), f"missing: {sorted(GUIDES_EXPECTED - set(names))}"
    for guide in guides():
        assert guide["url"].startswith("https://www.tensorflow.org/"), guide["guide"]
        assert guide.get("title"), f"{guide['guide']}: no title"


def test_every_guide_has_enough_sections_and_no_duplicates():
    for guide in guides():
        titles = [s["section"] for s in guide["sections"]]
        assert len(titles) >= MIN_SECTIONS, f"{guide['guide']}: only {len(titles)} sections"
        assert len(titles) == len(set(titles)), f"{guide['guide']}: a section is listed twice"


def test_every_section_is_covered_or_has_a_reason():
    for name, section in sections():
        keys = {"covered", "not_covered"} & set(section)
        assert section.get("section"), f"{name}: a section without a heading"
        assert len(keys) == 1, f"{name} / {section.get('section')}: needs exactly one of covered, not_covered"
        assert set(section) == {"section"} | keys, f"{name} / {section['section']}: unknown keys"
        value = section[keys.pop()]
        assert isinstance(value, str) and value.strip(), f"{name} / {section['section']}: empty"


def test_every_covered_target_is_a_heading_of_a_page_in_the_book():
    in_book = toc_files()
    broken = []
    for name, section in sections():
        target = section.get("covered")
        if target is None:
            continue
        path, sep, heading = target.partition("#")
        if not sep or not path.endswith(".md") or not heading:
            broken.append(f"{name} / {section['section']}: {target!r} is not 'book/NN_name.md#Heading'")
        elif path.removesuffix(".md") not in in_book:
            broken.append(f"{name} / {section['section']}: {path} is not in _toc.yml")
        elif heading not in headings(ROOT / path):
            broken.append(f"{name} / {section['section']}: no '## {heading}' or '### {heading}' in {path}")
    assert not broken, "\n".join(broken)


def test_a_renamed_chapter_heading_is_caught(tmp_path):
    """The heading check reads the file as it is: the same target fails once its heading changes."""
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n## Kept heading\n\n```python\n## Fenced heading\n```\n")
    assert "Kept heading" in headings(page)
    assert "Fenced heading" not in headings(page)
    renamed = tmp_path / "renamed.md"
    renamed.write_text(page.read_text().replace("## Kept heading", "## New name"))
    assert "Kept heading" not in headings(renamed)



def test_the_header_says_where_each_checked_guide_was_read_from():
    """Every guide whose headings were checked against a stored source is named in
    the header's source list, with a repository path or URL, so no entry rests on
    memory."""
    header = "\n".join(line for line in DATA.read_text().splitlines() if line.startswith("#"))
    assert "from memory" not in header.lower()
    for name in ("data_performance", "data", "function", "create_op",
                 "distributed_training", "saved_model"):
        match = re.search(rf"^#\s+guide/{name}\s+(.+)$", header, flags=re.M)
        assert match, f"guide/{name}: no source line in the header"
        assert "tensorflow/docs" in match.group(1) or "site/en/guide" in match.group(1), \
            f"guide/{name}: its source line names no repository path"
