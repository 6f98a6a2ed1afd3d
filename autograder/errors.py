"""Errors a person reads: each is one line that says what to do next."""
from __future__ import annotations


class UsageError(Exception):
    """Bad input on the command line (missing file, not a notebook, ...): exit 2."""


class NotebookError(UsageError):
    """A file that cannot be read as a Jupyter notebook."""
