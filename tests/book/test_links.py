"""Every external link in the built book goes to the configured repository or to documentation.

The course's public repository is one setting (``repository: url`` in
``_config.yml``, empty by default).  In the built HTML an external link's host
must be that repository's, or a documentation host on :data:`DOC_HOSTS`;
Colab and Binder links are allowed only when a repository is configured and
only for it; no link names a placeholder repository (``example/``).  When no
repository is configured no page has a repository or launch button.
The HTML check uses the session's ``built_book`` fixture (tests/book/conftest.py); the button
logic (``book/_ext/repository_buttons.py``) is also checked without a build.
"""
from __future__ import annotations

import importlib.util
import re
import urllib.parse
from pathlib import Path

import pytest

from autograder.course.release import repository
from tests.conftest import ROOT

# Documentation hosts a page may link to (a host or any of its subdomains; "host/path" for one
# organisation's repositories).
DOC_HOSTS = (
    "tensorflow.org", "keras.io", "github.com/tensorflow", "github.com/keras-team", "github.com/openxla",
    "openxla.org", "docs.nvidia.com", "developer.nvidia.com", "docs.python.org", "numpy.org",
    "jupyterbook.org", "nbgrader.readthedocs.io", "jupyter.org", "docs.jupyter.org", "sphinx-doc.org",
    "pydata-sphinx-theme.readthedocs.io", "sphinx-book-theme.readthedocs.io", "gradescope.com",
    "help.gradescope.com", "research.google.com", "dask.org", "github.com/blingenf/copydetect",
    "github.com/NVIDIA/nccl-tests",
)
LAUNCH_HOSTS = ("colab.research.google.com", "mybinder.org")
URL_ATTR = re.compile(r"""\b(?:href|src|action)\s*=\s*["']((?:https?:)?//[^"']+)["']""", re.I)


def _host_path(url: str) -> tuple[str, str]:
    parts = urllib.parse.urlsplit("https:" + url if url.startswith("//") else url)
    return (parts.hostname or "").lower(), parts.path


def _on(host: str, path: str, entry: str) -> bool:
    want_host, _, want_path = entry.partition("/")
    if not (host == want_host or host.endswith("." + want_host)):
        return False
    return not want_path or path == f"/{want_path}" or path.startswith(f"/{want_path}/")


def link_problems(html_dir: Path, repo_url: str) -> list[str]:
    """One line per external link in ``html_dir`` that goes anywhere but the repository or the docs."""
    repo_host, repo_path = _host_path(repo_url) if repo_url else ("", "")
    owner_repo = repo_path.strip("/")
    problems = []
    for page in sorted(html_dir.rglob("*.html")):
        for url in sorted(set(URL_ATTR.findall(page.read_text(encoding="utf-8", errors="replace")))):
            host, path = _host_path(url)
            where = f"{page.relative_to(html_dir)}: {url}"
            if "example/" in url:
                problems.append(f"{where} (a placeholder repository)")
            elif host in LAUNCH_HOSTS:
                if not owner_repo or f"/{owner_repo}/" not in path + "/":
                    problems.append(f"{where} (a launch link, but not for the configured repository)")
            elif repo_host and host == repo_host and (path + "/").startswith(f"/{owner_repo}/"):
                continue
            elif not any(_on(host, path, entry) for entry in DOC_HOSTS):
                problems.append(f"{where} (host {host} is neither the repository's nor on DOC_HOSTS)")
    return problems


def _buttons_module():
    spec = importlib.util.spec_from_file_location("repository_buttons", ROOT / "book" / "_ext" / "repository_buttons.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_no_repository_means_no_repository_or_launch_button():
    options = {"repository_url": "", "use_repository_button": True,
               "launch_buttons": {"binderhub_url": "https://mybinder.org", "colab_url": "https://colab.research.google.com"}}
    out = _buttons_module().apply(options)
    assert "repository_url" not in out and not out["use_repository_button"] and not out["use_edit_page_button"]
    assert not any(out["launch_buttons"].get(k) for k in ("binderhub_url", "colab_url", "jupyterhub_url", "thebe"))


def test_a_repository_turns_on_its_button_and_binder_but_never_colab_for_chapters():
    options = {"repository_url": "https://github.com/org/course", "use_repository_button": False,
               "launch_buttons": {"binderhub_url": "https://mybinder.org", "colab_url": "https://colab.research.google.com"}}
    out = _buttons_module().apply(options)
    assert out["use_repository_button"] and out["repository_url"] == "https://github.com/org/course"
    assert out["launch_buttons"]["binderhub_url"] == "https://mybinder.org" and out["launch_buttons"]["colab_url"] == ""


def test_link_check_flags_placeholders_foreign_hosts_and_stray_launch_links(tmp_path):
    (tmp_path / "a.html").write_text(
        '<a href="https://www.tensorflow.org/guide/gpu">ok</a><a href="https://github.com/tensorflow/tensorflow">ok</a>'
        '<a href="https://github.com/example/tf-gpu-course">bad</a><a href="https://evil.test/x">bad</a>'
        '<a href="https://colab.research.google.com/github/org/course/blob/main/exercises/x.ipynb">c</a>'
        '<a href="https://github.com/org/course">repo</a><a href="https://github.com/other/thing">bad</a>')
    assert len(link_problems(tmp_path, "")) == 5  # colab and the repository are not allowed without a URL
    problems = link_problems(tmp_path, "https://github.com/org/course")
    assert len(problems) == 3 and all(("example/" in p or "evil.test" in p or "other/thing" in p) for p in problems)


@pytest.mark.slow
def test_every_external_link_in_the_built_book_is_allowed(built_book):  # noqa: F811
    url, _ = repository()
    problems = link_problems(built_book, url)
    assert not problems, f"{len(problems)} external link(s) not allowed:\n" + "\n".join(problems[:20])
    if not url:
        for page in built_book.rglob("*.html"):
            html = page.read_text(encoding="utf-8", errors="replace")
            assert "repository-button" not in html and "launch-buttons" not in html, \
                f"{page.relative_to(built_book)} shows a repository or launch button with no repository configured"
