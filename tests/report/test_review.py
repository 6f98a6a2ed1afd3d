"""autograder.report.review: what the integrity review flags, and that honest code is never flagged."""
from __future__ import annotations

import copy
import re

import pytest

from autograder.submission import notebook as nbtools
from autograder.report import review
from autograder.results.results import Results, TestResult
from tests.conftest import ROOT, SOLUTIONS, assignments, notebook_for
from tests.grading.test_catalogue import catalogues


def reasons(source: str, protected: set[str] = frozenset()) -> list[str]:
    return [f.reason for f in review.read_cells([("test-x", "answer-x", source)], protected)]


@pytest.mark.parametrize("source, word", [
    ("import gc\nobjs = gc.get_objects()", "gc.get_objects"),
    ("import gc as g\ng.disable()", "gc.disable"),
    ("import ctypes", "ctypes"),
    ("import sys\nf = sys._getframe(1)", "sys._getframe"),
    ("from sys import _getframe\n_getframe()", "sys._getframe"),
    ("import inspect\ninspect.currentframe()", "inspect"),
    ("def f(e):\n    return e.__traceback__.tb_frame.f_back", "tb_frame"),
    ("def f(g):\n    return g.__closure__[0].cell_contents", "__closure__"),
    ("import sys\nsys.settrace(None)", "tracing hook"),
    ("import tensorflow as tf\ntf.function = lambda f, **k: f", "changes tf.function"),
    ("import json\njson.JSONEncoder.default = lambda self, o: 1", "changes json.JSONEncoder.default"),
    ("import numpy as np\nsetattr(np.testing, 'assert_allclose', print)", "setattr"),
    ("import sys\nsys.modules['autograder'] = None", "changes sys.modules"),
    ("import sys\nsys.stdout = open('x', 'w')", "changes sys.stdout"),
    ("import builtins", "builtins"),
    ("x = __builtins__", "__builtins__"),
    ("get_ipython().events.register('pre_run_cell', print)", "get_ipython"),
    ("from IPython.core.interactiveshell import InteractiveShell", "IPython"),
    ("import os\nos.dup2(1, 2)", "os.dup2"),
    ("import os\nos.fork()", "os.fork"),
    ("import subprocess\nsubprocess.run(['ls'])", "subprocess"),
    ("import signal\nsignal.alarm(1)", "signal"),
    ("import threading\nthreading.Thread(target=print).start()", "threading.Thread"),
    ("import socket", "socket"),
    ("code = 'pri' + 'nt(1)'\nexec(code)", "computed string"),
    ("import importlib\nm = importlib.import_module('autograder.' + 'judge')", "computed string"),
    ("import autograder.checks.thresholds as t\nt.THRESHOLDS.clear()", "thresholds"),
    ("from autograder.checks import probe\nprobe._STAGED.clear()", "judge's requests"),
    ("!cat /etc/passwd", "shell command"),
    ("%%bash\nls /", "shell"),
    ("open('/tmp/autograder-sandboxes-0/x.req').read()", "grader's files"),
    ("make_model = lambda **k: None", "rebinds make_model"),
    ("import sys\nLINE = 'Executing op {} in device /job:localhost/replica:0/task:0/device:GPU:0'\n"
     "print(LINE.format('MatMul'), file=sys.stderr)", "placement log"),
    ("class T:\n    @property\n    def device(self):\n        return '/GPU:0'", "answers a device"),
    ("from tensorflow.tsl.profiler.protobuf import xplane_pb2", "trace protos"),
    ("import os\nos.listdir('/proc/self/fd')", "grader's files"),
])
def test_each_kind_of_reach_is_flagged(source, word):
    found = reasons(source, protected={"make_model"})
    assert any(word in r for r in found), found


@pytest.mark.parametrize("source", [
    "import traceback\ntry:\n    1 / 0\nexcept ZeroDivisionError:\n    print(traceback.format_exc())",
    "import concurrent.futures\nwith concurrent.futures.ThreadPoolExecutor(4) as pool:\n    list(pool.map(abs, [1]))",
    "import threading\nlock = threading.Lock()\nprint(threading.get_ident())",
    "import os\nos.environ['TF_CPP_MIN_LOG_LEVEL'] = '2'",
    "from IPython.display import display\ndisplay(1)",
    "import gc\ngc.collect()",
    "import time\nstart = time.perf_counter()",
    "class M:\n    pass\nm = M()\nm.model = 1\nm.weights = [1]",
    "def f(model):\n    model.trainable = False\n    return model",
    "%timeit sum(range(10))\nx = 1",
    "%%time\nx = sum(range(10))",
    "from autograder.checks.placement import capture\nimport autograder.checks.timing",
    "def broken(:\n    pass",  # does not parse: does not run either
    "SAMPLE = 'Executing op MatMul in device /job:localhost/replica:0/task:0/device:CPU:0'\nparse(SAMPLE)",
])
def test_honest_code_is_not_flagged(source):
    assert reasons(source, protected={"make_model"}) == []


def _with_case(source_nb, case):
    nb = copy.deepcopy(source_nb)
    for cell in nb.cells:
        if nbtools.nbgrader_meta(cell).get("grade_id") in case.replace:
            cell.source = case.replace[nbtools.nbgrader_meta(cell)["grade_id"]]
    return nb


@pytest.mark.parametrize("name", assignments())
def test_no_reference_right_or_realistic_wrong_answer_is_flagged(name):
    source = nbtools.load(notebook_for(SOLUTIONS, name))
    assert review.review(source, source, Results()) == []
    for case in catalogues().get(name, []):
        if not case.hostile:
            found = review.review(_with_case(source, case), source, Results())
            assert found == [], f"{case.name} is flagged: {found}"


@pytest.mark.parametrize("name", assignments())
def test_hostile_cases_that_reach_past_their_answers_are_flagged(name):
    """Every hostile case is flagged, except the duck-typed stand-ins: they reach nothing, and
    lose their parts (the judge decodes exact types: tests/grading/test_assignments.py)."""
    source = nbtools.load(notebook_for(SOLUTIONS, name))
    for case in catalogues().get(name, []):
        if case.hostile and case.hostile != "duck-typed":
            found = review.review(_with_case(source, case), source, Results())
            assert found, f"{case.name} ({case.hostile}) is not flagged"
            assert all(f["part"] in {p.grade_id for p in nbtools.graded_parts(source)} | {""} for f in found)


def test_findings_name_the_part_cell_and_line():
    source = nbtools.load(notebook_for(SOLUTIONS, "06_autograph"))
    nb = copy.deepcopy(source)
    answer = next(c for c in nb.cells if nbtools.is_answer_cell(c))
    answer.source += "\nimport gc\n_ = gc.get_referrers(answer)\n"
    nb.cells.append(nbtools.nbformat.v4.new_code_cell("import ctypes"))
    found = review.review(nb, source, Results())
    gid = nbtools.nbgrader_meta(answer)["grade_id"]
    first_test = next(nbtools.nbgrader_meta(c)["grade_id"] for c in source.cells[source.cells.index(
        next(c for c in source.cells if nbtools.nbgrader_meta(c).get("grade_id") == gid)):] if nbtools.is_test_cell(c))
    assert {"part": first_test, "cell": gid, "line": answer.source.count("\n") + 1 - 1,
            "reason": "reaches the interpreter's objects or its collector (gc.get_referrers)"} in found, found
    assert any(f["part"] == "" and f["cell"] == f"cell {len(nb.cells)}" and "ctypes" in f["reason"] for f in found)


def test_a_part_failed_on_integrity_is_flagged_with_the_graders_message():
    results = Results([TestResult("test-a", 0.0, 2.0, "integrity: notebooks may not call gc.get_objects", "visible",
                                  "failed"), TestResult("test-b", 0.0, 2.0, "wrong value", "visible", "failed")])
    assert review.from_results(results) == [review.Finding("test-a", "", 0, "integrity: notebooks may not call "
                                                           "gc.get_objects")]


def test_the_review_travels_in_results_json_and_check_never_shows_it():
    results = Results([TestResult("t", 1.0, 1.0)], review=[{"part": "t", "cell": "a", "line": 2, "reason": "x"}])
    again = Results.from_dict(results.to_dict())
    assert again.review == results.review and results.to_dict()["extra_data"]["review"] == results.review
    assert "review" not in Results([TestResult("t", 1.0, 1.0)]).to_dict()["extra_data"]
    check_source = (ROOT / "autograder" / "frontends" / "check.py").read_text()
    assert "results.review = None" in check_source


# The book's own cells that a learner's answer would not hold: each page's set-up cell, the cells
# that start a fresh interpreter to show a claim (subprocess), and chapter 9's leak hunt, which
# walks the interpreter's objects with gc (in a graded notebook the kernel guard refuses that walk,
# so the review flags it too; no exercise part asks for a leak hunt).
BOOK_INFRASTRUCTURE = re.compile(r"subprocess|gc\.get_objects|os\.dup2")


def test_the_code_the_book_teaches_is_not_flagged():
    cells = []
    for page in sorted((ROOT / "book").glob("*.md")):
        text = page.read_text(encoding="utf-8")
        blocks = re.findall(r"```\{code-cell\}[^\n]*\n(.*?)\n```", text, re.S)
        for number, block in enumerate(blocks[1:], start=2):
            code = "\n".join(line for line in block.splitlines() if not line.startswith(":"))
            if not BOOK_INFRASTRUCTURE.search(code):
                cells.append(("", f"{page.name} cell {number}", code))
    assert len(cells) > 100
    assert review.read_cells(cells) == []
