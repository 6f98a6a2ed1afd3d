"""The mutation catalogue, one module per assignment (``exNN.py``).

Each module defines ``ASSIGNMENT`` (the folder name under ``solutions/``) and
``CASES``, a list of :class:`Case`.  A case replaces answer cells of the reference
solution (by ``grade_id``) and says which parts it must lose; every expected score
is derived from that and the part's points in the solution, never typed.

- A *wrong answer* names the parts it must lose (``loses``: each scores 0) and, in
  ``breaks``, the specification clause it violates for each of them (``{test
  grade_id: clause number}``, the numbers of the part's "Specification" list in its
  text).  Mutations of independent parts may share one case to save a run.  Parts
  named in ``keeps`` are graded as well and must keep full marks: a failure
  elsewhere must not cost them points.  Only the lost and kept parts are graded.
- A *right answer* (``loses`` empty, not hostile) is a correct answer written
  differently from the reference; every part is graded and must score full marks.
- ``hostile`` cases try to get marks without the work (the five classes of
  issue 12: silenced errors, rebinding locked names, patching the grader,
  duck-typed stand-ins, reading course files).  The three that aim at an
  exercise's own names and checks are tried on every exercise; the two that aim
  at the engine (``ENGINE_HOSTILE_CLASSES``: the kernel's error display, the
  sandbox's files) are the same on every exercise, so they run on the tiny
  assignment (``tests/files/hostile``) and on one real exercise
  (``ENGINE_EXERCISE``), and elsewhere only inside cases that break a clause too.

``tests/grading/test_assignments.py`` runs every case through the grade path (the
sandbox), and ``tests/grading/test_catalogue.py`` checks the catalogue's coverage.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Case:
    """One submission: the reference solution with the answer cells ``replace`` names rewritten."""

    name: str
    replace: dict[str, str]          # answer cell grade_id -> new source
    loses: tuple[str, ...] = ()      # test grade_ids that must score 0; none: a right answer
    messages: dict[str, str] = field(default_factory=dict)  # test grade_id -> substring of feedback
    breaks: dict[str, int] = field(default_factory=dict)    # test grade_id -> spec clause number broken
    hostile: str = ""                # which attack class, for hostile cases (see HOSTILE_CLASSES)
    # parts it must NOT lose, graded too (part independence: a failing earlier part leaves them whole)
    keeps: tuple[str, ...] = ()
    # parts an attack on what the kernel reports (OBSERVATION_CLASSES) aims at: each must score 0, or the
    # submission must be flagged for review (extra_data.review); both is best
    attacks: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not set(self.breaks) <= set(self.loses):
            raise ValueError(f"{self.name}: a broken clause must lose its part: {sorted(set(self.breaks) - set(self.loses))}")
        if set(self.keeps) & set(self.loses):
            raise ValueError(f"{self.name}: keeps and loses {sorted(set(self.keeps) & set(self.loses))}")
        if self.right and self.keeps:
            raise ValueError(f"{self.name}: a right answer keeps every part; 'keeps' is for wrong answers")
        if self.attacks and self.hostile not in OBSERVATION_CLASSES:
            raise ValueError(f"{self.name}: 'attacks' is for the attacks on what the kernel reports {OBSERVATION_CLASSES}")
        if set(self.attacks) & (set(self.loses) | set(self.keeps)):
            raise ValueError(f"{self.name}: a part is attacked and also lost or kept")

    @property
    def right(self) -> bool:
        """A right answer: it loses nothing and attacks nothing."""
        return not self.loses and not self.hostile

    def graded(self, points: dict[str, float]) -> dict[str, float]:
        """The parts this case is graded on, with the score each must get, from the
        solution's ``points`` per part: every part at full marks for a right answer;
        for a wrong one, 0 for each part it loses and full marks for each it keeps; None for a
        part it attacks (0, or the submission flagged for review)."""
        if self.right:
            return dict(points)
        unknown = (set(self.loses) | set(self.keeps) | set(self.attacks)) - set(points)
        if unknown:
            raise ValueError(f"{self.name}: no parts named {sorted(unknown)}")
        return {**{gid: 0 for gid in self.loses}, **{gid: points[gid] for gid in self.keeps},
                **{gid: None for gid in self.attacks}}


HOSTILE_CLASSES = ("silenced-errors", "rebinds-locked-name", "patches-grader", "duck-typed", "reads-course-files")
# Attacks on what the kernel reports, by the channel they shape (issue: grades that hold against a reader of
# the grader); each case names the parts it `attacks`: lost, or flagged for review.
OBSERVATION_CLASSES = ("forges-placement", "forges-counts", "shapes-timing", "shapes-the-wire", "forges-trace")
# Attacks on the engine rather than on an exercise: tried on the tiny assignment and on this exercise.
ENGINE_HOSTILE_CLASSES = ("silenced-errors", "reads-course-files")
ENGINE_EXERCISE = "06_autograph"

# Prepended to an answer cell: hides every error display a notebook controls.
# The grader must still score the parts whose tests raise as 0.
SILENCE_ERRORS = '''
import sys as _sys
_ip = get_ipython()
_ip.showtraceback = lambda *a, **k: None
_ip._showtraceback = lambda *a, **k: None
_ip.showsyntaxerror = lambda *a, **k: None
_sys.excepthook = lambda *a, **k: None
'''


def steal_solution(assignment: str, answer_id: str) -> str:
    """An answer cell that looks for the reference solution anywhere it might be
    readable (the course checkout, its ``.git``, a walk of the disk) and runs the
    answer cell ``answer_id`` from it; it raises when it finds nothing.

    In a sandbox that shows no course file it finds nothing, so the parts that
    depend on ``answer_id`` must score 0."""
    from tests.conftest import ROOT

    return f'''
import json, os, subprocess
_wanted = {answer_id!r}
_found = None
def _answer_from(text):
    for cell in json.loads(text)["cells"]:
        if cell.get("metadata", {{}}).get("nbgrader", {{}}).get("grade_id") == _wanted:
            return "".join(cell["source"])
_candidates = [{str(ROOT)!r} + "/solutions/{assignment}/{assignment}.ipynb"]
_skip = {{"proc", "sys", "dev", "usr", "lib", "lib64", "bin", "sbin", "site-packages", ".venv", "node_modules"}}
_seen = 0
for _root, _dirs, _files in os.walk("/"):  # a walk of the disk, bounded (system folders skipped)
    _dirs[:] = [d for d in _dirs if d not in _skip]
    _seen += 1
    if _root.endswith("/solutions/{assignment}") and "{assignment}.ipynb" in _files:
        _candidates.append(_root + "/{assignment}.ipynb")
    if _seen > 50000:
        break
for _path in _candidates:
    try:
        with open(_path) as _f:
            _found = _answer_from(_f.read())
            break
    except OSError:
        pass
if _found is None:
    try:
        _text = subprocess.run(["git", "-C", {str(ROOT)!r}, "show", "HEAD:solutions/{assignment}/{assignment}.ipynb"],
                               capture_output=True, text=True, timeout=20).stdout
        _found = _answer_from(_text) if _text else None
    except Exception:
        pass
if _found is None:
    raise RuntimeError("no course file found")
exec(_found)
'''


def released(assignment: str, gid: str) -> str:
    """The unanswered answer cell ``gid`` of ``assignment``'s release (what a learner starts from)."""
    from tests.conftest import EXERCISES

    nb = json.loads((EXERCISES / assignment / f"{assignment}.ipynb").read_text())
    for cell in nb["cells"]:
        if cell["metadata"].get("nbgrader", {}).get("grade_id") == gid:
            return "".join(cell["source"])
    raise KeyError(gid)


def edited(assignment: str, gid: str, old: str, new: str) -> str:
    """The reference solution's answer cell ``gid`` with ``old`` (which must occur exactly once) replaced
    by ``new``: a case that differs from the reference by one checked edit, instead of a copied
    near-duplicate that silently drifts from it."""
    from autograder.submission import notebook as nbtools
    from tests.conftest import SOLUTIONS, notebook_for

    cells = [c for c in nbtools.load(notebook_for(SOLUTIONS, assignment)).cells
             if nbtools.nbgrader_meta(c).get("grade_id") == gid]
    if len(cells) != 1:
        raise ValueError(f"{assignment} has {len(cells)} cells named {gid!r}")
    source = cells[0].source
    if source.count(old) != 1:
        raise ValueError(f"{assignment} {gid}: {old!r} occurs {source.count(old)} times in the reference, not once")
    return source.replace(old, new)
