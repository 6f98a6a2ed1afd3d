"""Where the course's book is published, from the one repository setting in ``_config.yml``.

``.github/workflows/book.yml`` builds the book on every push to main and publishes it to GitHub
Pages, whose address follows from the repository's: ``https://github.com/OWNER/REPO`` is read at
``https://OWNER.github.io/REPO/``.  While ``repository: url`` is empty nothing is published.
"""
from __future__ import annotations

import re
from pathlib import Path

import yaml

_GITHUB = re.compile(r"^https://github\.com/([A-Za-z0-9-]+)/([A-Za-z0-9._-]+?)(?:\.git)?/?$")


def pages_url(repository_url: str | None) -> str | None:
    """The GitHub Pages address of the book built from ``repository_url``, or None (empty, or not
    a GitHub repository: publish it with that forge's own pages and link it by hand)."""
    match = _GITHUB.match((repository_url or "").strip())
    if not match:
        return None
    owner, repo = match.groups()
    if repo.lower() == f"{owner.lower()}.github.io":
        return f"https://{owner.lower()}.github.io/"
    return f"https://{owner.lower()}.github.io/{repo}/"


def published_line(config: Path) -> str:
    """One sentence for the start page: where the published book is, or why there is none."""
    settings = yaml.safe_load(config.read_text(encoding="utf-8")) or {}
    url = str((settings.get("repository") or {}).get("url") or "").strip()
    site = pages_url(url)
    if site:
        return (f"The published book, rebuilt from {url} on every push to main, is at <{site}>; "
                "read it there, or build your own copy as below.")
    if url:
        return (f"The course's repository is {url}; its forge is not GitHub, so publish `_build/html` "
                "with its own pages service.")
    return ("This copy of the course is not published: once `repository: url` in `_config.yml` names its "
            "public GitHub repository, `.github/workflows/book.yml` publishes the book to GitHub Pages on every "
            "push to main and this line links it. Until then, build it yourself as below.")
