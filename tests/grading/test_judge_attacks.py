"""The attack catalogue, one entry per channel, against judged parts (issue 21).

Every attack here worked, in a few lines of an answer cell, when hidden tests ran in the
learner's kernel.  Each is paired with a *wrong* answer and must score zero on every part
it attacks; the control right answer, graded the same way, takes full marks (so a zero is
the attack failing, not the assignment being unpassable).  The assignment is a tiny judged
one built here: a value part (``test-values``: hidden random inputs, the judge's own
reference) and a speed part (``test-speed``: the judge's slow baseline against the
learner's function, timed from outside the kernel).
"""
from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from autograder.sandbox import host as sandbox
from tests.conftest import graded_as_a_batch, undecided_speed

pytestmark = pytest.mark.slow

SETUP = '''import numpy as np
SCALE = 2.0

def slow_pair_energy(x):
    total = 0.0
    values = x.tolist()
    for a in values:
        for b in values:
            total += (a - b) * (a - b)
    return np.float64(total)
'''
VALUES_TEST = '''assert np.allclose(scaled_sum(1, 2), 6)
### BEGIN HIDDEN TESTS
def __ag_judge(learner):
    import numpy as _np
    _rng = _np.random.default_rng()
    for _n in (3, 17):
        _a, _b = _rng.normal(size=_n), _rng.normal(size=_n)
        _out = learner.call("scaled_sum", _a, _b)
        assert type(_out) is _np.ndarray and _out.shape == (_n,), "scaled_sum must return an array of a's shape"
        _np.testing.assert_allclose(_out, SCALE * (_a + _b), rtol=1e-9, err_msg="scaled_sum is wrong")
    print("scaled_sum is right on hidden inputs")
__import__("autograder.checks.probe", fromlist=["judge_here"]).judge_here(__ag_judge, globals())
### END HIDDEN TESTS
'''
SPEED_TEST = '''x = np.arange(10.0)
assert np.isclose(fast_pair_energy(x), slow_pair_energy(x))
### BEGIN HIDDEN TESTS
def __ag_judge(learner):
    import numpy as _np
    from autograder.checks.timing import assert_speedup as _speedup
    _rng = _np.random.default_rng()
    # ~250,000 Python steps a call for the baseline: tens of ms, far above a request's round trip
    _speedup(slow_pair_energy, learner.function("fast_pair_energy"), lambda: (_rng.normal(size=500),),
             check="tiny_pair_energy", min_ratio=4.0, label="fast_pair_energy", baseline_label="slow_pair_energy",
             rtol=1e-7, atol=1e-7, budget_s=8)
__import__("autograder.checks.probe", fromlist=["judge_here"]).judge_here(__ag_judge, globals())
### END HIDDEN TESTS
'''
RIGHT_VALUES = "def scaled_sum(a, b):\n    return SCALE * (np.asarray(a) + np.asarray(b))\n"
RIGHT_SPEED = "def fast_pair_energy(x):\n    return np.float64(((x[:, None] - x[None, :]) ** 2).sum())\n"
WRONG_VALUES = "def scaled_sum(a, b):\n    return np.asarray(a) + np.asarray(b)\n"
WRONG_SPEED = "def fast_pair_energy(x):\n    return slow_pair_energy(x)\n"

# Each attack: (channel, code prepended to the answer cells of a wrong answer).
ATTACKS = {
    "transform-hooks": '''
_ip = get_ipython()
_ip.input_transformers_cleanup.append(lambda lines: ["pass\\n"] if any("autograder" in l for l in lines) else lines)
from IPython.core.inputtransformer2 import TransformerManager as _TM
_orig = _TM.transform_cell
_TM.transform_cell = lambda self, cell: "pass\\n" if "__ag_judge" in cell or "autograder" in cell else _orig(self, cell)
''',
    "compile-hooks": '''
import ast as _ast
from IPython.core.compilerop import CachingCompiler as _CC
_orig_parse = _CC.ast_parse
def _wrapped(self, source, filename="<unknown>", symbol="exec"):
    tree = _orig_parse(self, source, filename, symbol)
    tree.body = [_ast.Try(body=[s], handlers=[_ast.ExceptHandler(body=[_ast.Pass()])], orelse=[], finalbody=[])
                 for s in tree.body]
    return _ast.fix_missing_locations(tree)
_CC.ast_parse = _wrapped
''',
    "reply-forging": '''
import jupyter_client.session as _js
_send = _js.Session.send
def _forge(self, stream, msg_or_type, content=None, *a, **k):
    if isinstance(content, dict) and content.get("status") == "error":
        content = {"status": "ok", "execution_count": content.get("execution_count"), "user_expressions": {},
                   "payload": []}
    return _send(self, stream, msg_or_type, content, *a, **k)
_js.Session.send = _forge
''',
    "stdout": '''
import sys as _sys, json as _json, re as _re
class _Rewriter:
    def __init__(self, inner): self.inner = inner
    def write(self, text):
        text = _re.sub(r'(AG[PE][0-9a-f]+).*', lambda m: m.group(1) + _json.dumps({"ok": "null"}), text)
        return self.inner.write(text)
    def __getattr__(self, name): return getattr(self.inner, name)
_sys.stdout = _Rewriter(_sys.stdout)
''',
    "builtins-gc-snapshot": '''
import builtins as _b, json as _json
import autograder.checks.probe as _probe
_probe.handle = lambda text, ns: _json.dumps({"ok": "null"})
_b.__ag_report = lambda *a, **k: None
try:
    import gc as _gc
    _gc.get_objects()
except Exception:
    pass
''',
    "lying-types": '''
import numpy as _np
class _Yes(str):
    def __eq__(self, other): return True
    __hash__ = str.__hash__
class _Arr(_np.ndarray):
    def __eq__(self, other): return _np.ones(_np.shape(other), bool)
_np.testing.assert_allclose = lambda *a, **k: None
_np.allclose = lambda *a, **k: True
_np.isclose = lambda a, b, *r, **k: _np.ones(_np.shape(a), bool)
''',
    "frame-and-parent-reads": '''
import sys as _sys
def _peek():
    found = []
    try:
        found.append(str(get_ipython().kernel.get_parent()))
    except Exception:
        pass
    try:
        frame = _sys._getframe(1)
        while frame is not None:
            found.append(str(frame.f_locals))
            frame = frame.f_back
    except Exception:
        pass
    return " ".join(found)
''',
    "timer-tricks": '''
import time as _time, gc as _gcm
_pc, _mono = _time.perf_counter, _time.monotonic
_time.perf_counter = lambda: _pc() / 100.0
_time.monotonic = lambda: _mono() / 100.0
_time.perf_counter_ns = lambda: int(_pc() * 1e7)
''',
    "baseline-slowing": '''
import os as _os, signal as _signal, threading as _threading
def _burn():
    while True:
        sum(i * i for i in range(10000))
for _ in range(2):
    _threading.Thread(target=_burn, daemon=True).start()
if _os.fork() == 0:
    _os.setsid()
    _burn()
try:
    _signal.signal(_signal.SIGALRM, lambda *a: sum(range(20000)))
    _signal.setitimer(_signal.ITIMER_REAL, 0.05, 0.05)
except Exception:
    pass
''',
    "environment-inheritance": '''
import os as _os
open("sitecustomize.py", "w").write("import numpy\\nnumpy.testing.assert_allclose = lambda *a, **k: None\\n")
open("usercustomize.py", "w").write("import numpy\\nnumpy.testing.assert_allclose = lambda *a, **k: None\\n")
_os.environ["PYTHONPATH"] = _os.getcwd()
_os.environ["PYTHONSTARTUP"] = _os.path.join(_os.getcwd(), "sitecustomize.py")
''',
    "pre-run-cell-forging": '''
import functools as _ft, json as _json, re as _re
def _forge(info):
    token = _re.search(r"'(AGP[0-9a-f]+)'", info.raw_cell or "")
    if token:
        print(token.group(1) + _json.dumps({"ok": _json.dumps({"array": {"dtype": "float64", "shape": [3],
              "data": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"[:32]}})}), flush=True)
get_ipython().events.register("pre_run_cell", _ft.partial(_forge))
''',
}


# A right answer that writes placer lines to fd 1 on every call, as TensorFlow's C++ placer
# does once placement logging is on.  ipykernel forwards fd 1 into the same stream as the
# grader's answers from its own thread, in chunks that can end mid-line, and later than the
# write: noise is not a wrong answer.
NOISY_VALUES = '''import os as _os
def scaled_sum(a, b):
    _os.write(1, b"Executing op AddV2 in device /job:localhost/replica:0/task:0/device:CPU:0\\n" * 7)
    return SCALE * (np.asarray(a) + np.asarray(b))
'''
NOISY_SPEED = '''import os as _os
def fast_pair_energy(x):
    _os.write(1, b"Executing op Sum in device /job:localhost/replica:0/task:0/device:CPU:0\\n" * 7)
    return np.float64(((x[:, None] - x[None, :]) ** 2).sum())
'''


# A cell that hangs (reply-forging breaks the kernel's replies) costs the cell limit; every honest cell
# here, the judged speed part included, ends in a few seconds.  Reply-forging hangs two cells, so it is
# graded under a 10 s limit (its cells that do not hang end in under a second): a hang scores zero
# whatever the limit, and 2 x 30 s held a worker for a minute.
LIMITS = sandbox.Limits(cell_timeout_s=30, notebook_timeout_s=400)
HANGING = {"reply-forging": sandbox.Limits(cell_timeout_s=10, notebook_timeout_s=400)}
SLOWEST = ("baseline-slowing", "reply-forging")


def _notebook(values: str, speed: str) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}

    def cell(source, **meta):
        made = nbformat.v4.new_code_cell(source)
        made.metadata["nbgrader"] = {"locked": False, "solution": False, "grade": False, **meta}
        return made

    nb.cells = [cell(SETUP, grade_id="setup", locked=True),
                cell(values, grade_id="answer-values", solution=True),
                cell(VALUES_TEST, grade_id="test-values", grade=True, locked=True, points=2),
                cell(speed, grade_id="answer-speed", solution=True),
                cell(SPEED_TEST, grade_id="test-speed", grade=True, locked=True, points=2)]
    return nb


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Every attack (with a wrong answer), the wrong answer alone and the right one, graded as a batch."""
    root = tmp_path_factory.mktemp("judge_attacks")
    source = root / "source" / "tiny.ipynb"
    source.parent.mkdir()
    nbformat.write(_notebook(RIGHT_VALUES, RIGHT_SPEED), source)
    submissions = {"right": (RIGHT_VALUES, RIGHT_SPEED), "wrong": (WRONG_VALUES, WRONG_SPEED),
                   "right-amid-placer-noise": (NOISY_VALUES, NOISY_SPEED)}
    for channel, attack in ATTACKS.items():
        submissions[channel] = (attack + WRONG_VALUES, attack + WRONG_SPEED)
    paths = {}
    for name, (values, speed) in submissions.items():
        path = root / name / "tiny.ipynb"
        path.parent.mkdir()
        nbformat.write(_notebook(values, speed), path)
        paths[name] = path

    def grade(name):
        return sandbox.run_submission(paths[name], source, hidden_dirs=[source.parent],
                                      limits=HANGING.get(name, LIMITS))

    # As `grade --workers 2` grades: two at a time, then an inconclusive speed part once more, alone.
    # The two slowest first (graded one at a time here: 37 s, and two cells out of time at 10 s each; every
    # other one 0.5-12 s), so the two workers end together instead of one waiting on the last hang.
    order = sorted(paths, key=lambda name: name not in SLOWEST)
    futures = graded_as_a_batch(order, grade, workers=2)
    return {name: future.result() for name, future in futures.items()}


FULL_MARKS = {"test-values": 2.0, "test-speed": 2.0}
ZERO = {"test-values": 0.0, "test-speed": 0.0}


def _scores(results, excused=()) -> dict[str, float]:
    return {t.name: t.score for t in results.tests if t.name not in excused}


def _details(results) -> dict[str, tuple[float, str]]:
    return {t.name: (t.score, t.output) for t in results.tests}


def _takes_full_marks(results) -> None:
    """A right answer: full marks on every part, its speed part excused only when load left it
    undecided after its second try (tests.conftest.undecided_speed)."""
    undecided = undecided_speed(results, FULL_MARKS)
    assert _scores(results, undecided) == {k: v for k, v in FULL_MARKS.items() if k not in undecided}, \
        _details(results)


def test_the_right_answer_takes_full_marks(graded):
    _takes_full_marks(graded["right"])


def test_placer_lines_on_fd_1_around_the_answers_do_not_cost_marks(graded):
    got = graded["right-amid-placer-noise"]
    _takes_full_marks(got)
    assert all("Executing op" not in t.output for t in got.tests), _details(got)


def test_the_wrong_answer_alone_scores_zero(graded):
    assert _scores(graded["wrong"]) == ZERO, _details(graded["wrong"])


@pytest.mark.parametrize("channel", sorted(ATTACKS))
def test_each_attack_scores_zero_on_the_parts_it_attacks(graded, channel):
    assert _scores(graded[channel]) == ZERO, _details(graded[channel])
