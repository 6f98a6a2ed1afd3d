"""The kernel guard (autograder.checks.kernel_guard) in a graded kernel: one attack per refused event class.

Each case is a submission of the tiny assignment whose answer is right only if
its introspection works (it reads the grader's frames, walks ``gc``, reads
memory with ``ctypes``, patches what is not its own...).  Graded as one batch
with the ``grade`` command's function, every attacked part scores 0 with an
"integrity:" message; the correct submissions beside them keep full marks.
"""
from __future__ import annotations

import os

import pytest

from autograder.frontends import grade
from tests.files.hostile.catalogue import CORRECT_DOUBLE, CORRECT_WORD, TINY_SOURCE, answers
from tests.grading.test_hostile import LIMITS

FULL = {"test-double": 3.0, "test-word": 2.0}
ZERO = {"test-double": 0.0, "test-word": 0.0}
DOUBLE_ONLY = {"test-double": 3.0, "test-word": 0.0}


# Each answer is right only when its introspection works (with the test's frame
# in hand a real attack reads the expected values; these only need the frame).
USE_FRAME = "    return 2 * x if frame.f_code.co_filename else x\n"


def _reads_caller(how: str) -> str:
    """``double`` that is right only when ``how`` gets the calling test's frame."""
    return f"import sys, inspect\ndef double(x):\n    frame = {how}\n" + USE_FRAME


TB_FRAME = """import sys
def _caller():
    try:
        raise ValueError
    except ValueError as exc:
        return exc.__traceback__.tb_frame.f_back.f_back
def double(x):
    frame = _caller()
""" + USE_FRAME
GI_FRAME = """def double(x):
    def gen():
        yield me.gi_frame.f_back.f_back
    me = gen()
    frame = next(me)
""" + USE_FRAME
# Only with the grader's Snapshot in hand would this answer be right.
GC_SNAPSHOT = """import gc
_found = [o for o in gc.get_objects() if type(o).__name__ == 'Snapshot']
def double(x):
    return 2 * x if _found else x
"""
GC_REFERRERS = "import gc\n_holders = gc.get_referrers(DATA)\nSECRET_WORD = DATA.upper() if _holders else 'x'\n"
CTYPES_READ = """import ctypes, sys
_probe = ctypes.string_at(id(sys), 8)
def double(x):
    return 2 * x if _probe else x
"""
# A hook of its own would see each test cell's source in the "compile" event.
AUDIT_SPY = """import sys
_seen = []
sys.addaudithook(lambda event, args: _seen.append(str(args[0])) if event == 'compile' else None)
def double(x):
    return x * 2 if any('double(21)' in s for s in _seen) else x
"""
PROFILE_SPY = CORRECT_DOUBLE + "import sys\nsys.setprofile(lambda frame, event, arg: None)\n"
DEFAULTS_PATCH = ("import autograder.checks.timing as t\n"
                  "t.compare_outputs.__kwdefaults__ = {k: 1e9 for k in (t.compare_outputs.__kwdefaults__ or {})}\n"
                  "SECRET_WORD = DATA.upper()\n")
MODULE_CLASS_SWAP = """import types, autograder.checks.timing as t
class _Lying(types.ModuleType):
    def __getattribute__(self, name):
        if name == 'compare_outputs':
            return lambda *a, **k: None
        return super().__getattribute__(name)
t.__class__ = _Lying
SECRET_WORD = DATA.upper() if type(t) is _Lying else 'wrong'
"""
INSTANCE_CLASS_SWAP = """import json
class _AlwaysEqual(json.JSONDecoder):
    def __eq__(self, other):
        return True
def double(x):
    value = json.JSONDecoder()
    value.__class__ = _AlwaysEqual
    return value
"""
FORGED_FILENAME = """import sys, autograder.checks.timing as t
exec(compile("def _frame():\\n    return sys._getframe(2)\\n", t.__file__, "exec"))
def double(x):
    frame = _frame()
""" + USE_FRAME

CASES = {
    "sys-getframe": (answers(double=_reads_caller("sys._getframe(1)")), ZERO),
    "inspect-currentframe": (answers(double=_reads_caller("inspect.currentframe().f_back")), ZERO),
    "current-frames": (answers(double=_reads_caller("sys._current_frames()[__import__('threading').get_ident()]"
                                                    ".f_back")), ZERO),
    "traceback-frame": (answers(double=TB_FRAME), ZERO),
    "generator-frame": (answers(double=GI_FRAME), ZERO),
    "gc-objects": (answers(double=GC_SNAPSHOT), ZERO),
    "gc-referrers": (answers(word=GC_REFERRERS), DOUBLE_ONLY),
    "ctypes-memory": (answers(double=CTYPES_READ), ZERO),
    "audit-hook-spy": (answers(double=AUDIT_SPY), ZERO),
    "profile-function": (answers(double=PROFILE_SPY), ZERO),
    "check-defaults": (answers(word=DEFAULTS_PATCH), DOUBLE_ONLY),
    "module-class-swap": (answers(word=MODULE_CLASS_SWAP), DOUBLE_ONLY),
    "instance-class-swap": (answers(double=INSTANCE_CLASS_SWAP), ZERO),
    "forged-filename": (answers(double=FORGED_FILENAME), ZERO),
    "correct-a": (answers(), FULL),
    "correct-with-harmless-introspection": (answers(
        double="import collections, logging, typing\nP = collections.namedtuple('P', 'a')\n"
               "class Q(typing.NamedTuple):\n    a: int\nlogging.getLogger('n').info('x')\n" + CORRECT_DOUBLE), FULL),
}


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    root = tmp_path_factory.mktemp("audit")
    submissions, out = root / "submitted", root / "graded"
    for name, (build, _) in CASES.items():
        folder = submissions / name / "tiny"
        folder.mkdir(parents=True)
        (folder / "tiny.ipynb").write_bytes(build(None))
    rows = grade.grade(submissions, out, workers=2, source=TINY_SOURCE, limits=LIMITS,
                       progress_stream=open(os.devnull, "w"))
    return {row.student: row.results for row in rows}


@pytest.mark.parametrize("name", sorted(CASES))
def test_attack_scores_zero_on_the_part_it_attacks(batch, name):
    got = batch[name]
    expect = CASES[name][1]
    details = "\n".join(f"{t.name}: {t.score}: {t.output}" for t in got.tests) + f"\nnote: {got.output}"
    assert {t.name: t.score for t in got.tests} == expect, details
    for test in got.tests:
        if test.score == 0:
            assert "integrity: " in test.output, details
            assert "notebooks may not" in test.output, details
