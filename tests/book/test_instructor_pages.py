"""The instructors' part of the book names only commands and options that exist, and links
its pages to each other."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.conftest import ROOT

PAGES = sorted((ROOT / "book" / "instructors").glob("*.md"))


@pytest.fixture(scope="module")
def helps() -> dict[str, str]:
    found: dict[str, str] = {}

    def help_of(command: str) -> str:
        if command not in found:
            found[command] = subprocess.run([sys.executable, "-m", "autograder", command, "--help"],
                                            capture_output=True, text=True, cwd=ROOT, timeout=120).stdout
        return found[command]

    return help_of


def test_the_part_has_its_four_pages():
    assert {p.stem for p in PAGES} == {"grading", "lms", "cluster", "grade_guarantees"}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.stem)
def test_every_autograder_command_and_option_exists(page, helps):
    text = page.read_text(encoding="utf-8")
    # `python -m autograder CMD ...` in code, and `CMD --option` written inline
    uses = re.findall(r"python -m autograder (\w[\w-]*)([^\n`]*)", text)
    uses += re.findall(r"`(check|grade|export|report|gradescope)((?: --[\w-]+(?:[ =][^\s`]+)?)+)", text)
    for command, rest in uses:
        assert helps(command), f"{page.name}: `python -m autograder {command}` is not a command"
        for option in re.findall(r"(?<![\w-])(--[\w-]+)", rest):
            assert option in helps(command), f"{page.name}: `autograder {command}` has no {option}"


def test_the_pages_link_each_other_and_the_reference():
    grading = (ROOT / "book" / "instructors" / "grading.md").read_text(encoding="utf-8")
    for target in ("{doc}`lms`", "{doc}`cluster`", "{doc}`grade_guarantees`", "{doc}`/book/cli`"):
        assert target in grading, f"grading.md does not link {target}"
