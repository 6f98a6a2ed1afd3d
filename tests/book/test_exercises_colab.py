"""The Exercises page's "Open in Colab" links come from ``_config.yml``'s ``repository:`` setting."""
from __future__ import annotations

import re

import jupytext

from tests.conftest import ROOT, assignments


def page_markdown(root, monkeypatch) -> str:
    """Run the page's code cell with ``root`` as the course checkout; the Markdown it renders."""
    nb = jupytext.read(ROOT / "book" / "exercises.md")
    (source,) = [c.source for c in nb.cells if c.cell_type == "code"]
    source = re.sub(r"^Markdown\(", "RESULT = Markdown(", source, flags=re.M)
    (root / "book").mkdir(exist_ok=True)
    monkeypatch.chdir(root / "book")
    namespace = {}
    exec(compile(source, "exercises.md", "exec"), namespace)
    return namespace["RESULT"].data


def course_copy(tmp_path, config: str):
    for name in ("solutions", "exercises", "_toc.yml"):
        (tmp_path / name).symlink_to(ROOT / name)
    (tmp_path / "_config.yml").write_text(config)
    return tmp_path


def test_no_colab_link_without_a_repository(monkeypatch):
    text = page_markdown(ROOT, monkeypatch)
    assert "colab.research.google.com" not in text
    assert "No public repository is configured" in text


def test_one_colab_link_per_released_exercise(tmp_path, monkeypatch):
    root = course_copy(tmp_path, "repository:\n  url: https://github.com/org/course\n  branch: spring\n")
    text = page_markdown(root, monkeypatch)
    links = re.findall(r"\[Open in Colab\]\((\S+?)\)", text)
    assert links == [f"https://colab.research.google.com/github/org/course/blob/spring/exercises/{n}/{n}.ipynb"
                     for n in assignments()]
    assert "No public repository" not in text


def test_no_colab_link_for_a_repository_colab_cannot_open(tmp_path, monkeypatch):
    root = course_copy(tmp_path, "repository:\n  url: https://gitlab.com/org/course\n  branch: main\n")
    assert "colab.research.google.com" not in page_markdown(root, monkeypatch)
