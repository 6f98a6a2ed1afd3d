"""The workshop page follows the exercises in the book and names only commands and options that exist."""
from __future__ import annotations

import re
import subprocess
import sys

from tests.book.test_book import toc_files
from tests.conftest import ROOT

PAGE = ROOT / "book" / "workshop.md"


def test_workshop_page_follows_the_exercises_page():
    files = toc_files()
    assert files.index("book/workshop") == files.index("book/exercises") + 1


def test_every_autograder_command_and_option_on_the_page_exists():
    text = PAGE.read_text(encoding="utf-8")
    commands = re.findall(r"python -m autograder (\w[\w-]*)((?: [^\n`&|]*)?)", text)
    assert {c for c, _ in commands} >= {"check", "grade", "gradescope", "doctor"}
    helps = {}
    for command, rest in commands:
        if command not in helps:
            helps[command] = subprocess.run([sys.executable, "-m", "autograder", command, "--help"],
                                            capture_output=True, text=True, cwd=ROOT, timeout=120).stdout
        for option in re.findall(r"(--[\w-]+)", rest):
            assert option in helps[command], f"`autograder {command}` has no {option}"
    assert "after_published" in helps["gradescope"]
