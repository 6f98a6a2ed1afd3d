"""Planted wrong answers, one module per assignment (``exNN.py``).

Each module defines ``ASSIGNMENT`` (the folder name under ``solutions/``) and
``CASES``: a list of :class:`WrongAnswer`.  A case replaces answer cells of the
reference solution (by ``grade_id``) and states the score every graded part
must get, plus text its feedback must contain.  ``tests/test_assignments.py``
runs them all.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class WrongAnswer:
    name: str
    replace: dict[str, str]          # answer cell grade_id -> new source
    expect: dict[str, float]         # test grade_id -> expected score (every part)
    messages: dict[str, str] = field(default_factory=dict)  # test grade_id -> substring of feedback
