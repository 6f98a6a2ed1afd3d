"""The catalogue of hostile and broken submissions, with their expected grades.

Each case builds one submission of the tiny assignment (``tiny/source/tiny``:
``test-double`` 3 points, ``test-word`` 2 points) and states the per-part
scores and a piece of each part's message that grading must produce.  Cases
that would only score full marks if an attack *worked* are written the other
way round: the answer is correct only when the attack fails (reading hidden
files, the network, the grader's environment), so full marks prove the sandbox held.

``tests/grading/test_hostile.py`` grades them all in one batch, next to correct
submissions whose full marks show that neighbours do not change each other's
scores.
"""
from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import nbformat

HERE = Path(__file__).resolve().parent
TINY_SOURCE = HERE / "tiny" / "source"
TINY = TINY_SOURCE / "tiny" / "tiny.ipynb"
REPO = HERE.parent.parent.parent
SECRET_ENV = "AUTOGRADER_TEST_SECRET"
CORRECT_DOUBLE = "def double(x):\n    return 2 * x\n"
CORRECT_WORD = "SECRET_WORD = DATA.upper()\n"


@dataclass
class Context:
    """What a case may need to know about the grading run (paths, a port on the host)."""

    submissions: Path
    out: Path
    host_port: int


@dataclass
class Case:
    name: str
    build: Callable[[Context], bytes]
    expect: dict[str, float]
    messages: dict[str, str] = field(default_factory=dict)
    note: str = ""  # a piece of Results.output
    # Expected scores where the sandbox runs without namespaces (audit-hook mode), if they differ.
    without_namespaces: dict[str, float] | None = None


def _source() -> nbformat.NotebookNode:
    """The notebook as learners get it: hidden tests removed, as nbgrader's release does."""
    nb = nbformat.read(TINY, as_version=4)
    for cell in nb.cells:
        lines, hidden = [], False
        for line in cell.source.splitlines():
            if line.strip().startswith("### BEGIN HIDDEN TESTS"):
                hidden = True
            elif line.strip().startswith("### END HIDDEN TESTS"):
                hidden = False
            elif not hidden:
                lines.append(line)
        cell.source = "\n".join(lines)
    return nb


def _gid(cell) -> str | None:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def _solved(double: str = CORRECT_DOUBLE, word: str = CORRECT_WORD) -> nbformat.NotebookNode:
    nb = _source()
    for cell in nb.cells:
        if _gid(cell) == "answer-double":
            cell.source = double
        elif _gid(cell) == "answer-word":
            cell.source = word
    return nb


def _bytes(nb) -> bytes:
    return nbformat.writes(nb).encode()


def answers(double: str = CORRECT_DOUBLE, word: str = CORRECT_WORD) -> Callable[[Context], bytes]:
    return lambda ctx: _bytes(_solved(double, word))


def _without_tests(ctx: Context) -> bytes:
    nb = _solved()
    nb.cells = [c for c in nb.cells if not (_gid(c) or "").startswith("test-")]
    return _bytes(nb)


def _edited_tests(ctx: Context) -> bytes:
    nb = _solved(double="def double(x):\n    return x + 1\n")
    for cell in nb.cells:
        if _gid(cell) == "test-double":
            cell.source = "print('looks fine to me')"
    return _bytes(nb)


def _duplicated_tests(ctx: Context) -> bytes:
    nb = _solved(word="SECRET_WORD = 'nope'\n")
    extra = []
    for cell in nb.cells:
        extra.append(cell)
        if _gid(cell) == "test-word":
            fake = copy.deepcopy(cell)
            fake.id = "duplicate-of-test-word"
            fake.source = "SECRET_WORD = DATA.upper()"  # a 'test' that fixes the answer
            extra.insert(len(extra) - 1, fake)
    nb.cells = extra
    return _bytes(nb)


def _wrong_kernel(ctx: Context) -> bytes:
    nb = _solved()
    nb.metadata["kernelspec"] = {"name": "no-such-kernel", "display_name": "Nope", "language": "cobol"}
    return _bytes(nb)


def _empty_notebook(ctx: Context) -> bytes:
    return _bytes(nbformat.v4.new_notebook())


def _huge_outputs(ctx: Context) -> bytes:
    nb = _solved()
    for cell in nb.cells:
        if _gid(cell) == "answer-double":
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="x" * (30 * 2**20))]
    return _bytes(nb)


def _unusual_style(ctx: Context) -> bytes:
    nb = _solved(
        double=("%%time\n"
                "class _Doubler:\n    def __call__(self, x):\n        return x * 2\n"
                "double = _Doubler()\n"
                "def to_host(v):  # same name as a grader helper the tests do not use\n    return v\n"),
        word=("import string as _s\n"
              "SECRET_WORD = ''.join(_s.ascii_uppercase[_s.ascii_lowercase.index(ch)] for ch in DATA)  # ünïcode ok\n"),
    )
    nb.cells.insert(3, nbformat.v4.new_markdown_cell("My notes: I *think* this works."))
    nb.cells.insert(4, nbformat.v4.new_code_cell("scratch = [double(i) for i in range(3)]\nscratch"))
    return _bytes(nb)


def _missing_answer_cell(ctx: Context) -> bytes:
    nb = _solved(double=CORRECT_DOUBLE + CORRECT_WORD)
    nb.cells = [c for c in nb.cells if _gid(c) != "answer-word"]
    return _bytes(nb)


READ_HIDDEN = '''import os, glob
targets = [{tiny!r}, {solutions!r}, {submissions!r}, {out!r}, os.path.expanduser("~root")]
leaked = []
for folder in targets:
    for path in glob.glob(os.path.join(folder, "**", "*.ipynb"), recursive=True)[:50]:
        try:
            text = open(path, encoding="utf-8").read()
        except OSError:
            continue
        if "HIDDEN TESTS" in text or "BEGIN SOLUTION" in text or "quokka" in text.lower():
            leaked.append(path)
marker = "-".join(["hidden", "marker"]).encode()  # spelled so this cell does not contain it
for root, _, files in os.walk(os.getcwd()):  # the sandbox's own folder: no test may be written there
    for name in files:
        try:
            if marker in open(os.path.join(root, name), "rb").read(1 << 20):
                leaked.append(os.path.join(root, name))
        except OSError:
            pass
SECRET_WORD = DATA.upper() if not leaked else "LEAKED " + " ".join(leaked[:3])
'''

NETWORK = '''import socket
reached = []
for host, port in {targets}:
    try:
        socket.create_connection((host, port), timeout=2).close()
        reached.append(host)
    except OSError:
        pass
SECRET_WORD = DATA.upper() if not reached else "REACHED " + ",".join(reached)
'''


# Any tool, not only Python's open(): a subprocess, git, a walk of the whole disk.
READ_COURSE = '''import os, subprocess
found = []
for tool in (["git", "-C", {repo!r}, "show", "HEAD:README.md"], ["ls", {repo!r} + "/solutions", {repo!r} + "/.git"],
             ["cat", {repo!r} + "/tests/conftest.py"]):
    try:
        out = subprocess.run(tool, capture_output=True, text=True, timeout=30)
        if out.returncode == 0 and out.stdout.strip():
            found.append(" ".join(tool[:2]))
    except (OSError, subprocess.SubprocessError):
        pass
for top in ("/", "/tmp", "/home", "/root", "/work", "/srv", "/var"):
    for root, dirs, files in os.walk(top):
        dirs[:] = [d for d in dirs if d not in ("proc", "sys", "dev", "usr", "lib", "site-packages")]
        if "tiny.ipynb" in files and root != os.getcwd() or ".git" in dirs or "solutions" in dirs:
            found.append(root)
            break
SECRET_WORD = DATA.upper() if not found else "FOUND " + " ".join(found[:3])
'''

# Errors silenced every way a notebook can: the tests still fail (the kernel's reply and the
# grader's end-of-cell sentinel decide, not what is displayed).
SILENCED = '''import sys
ip = get_ipython()
ip.showtraceback = lambda *a, **k: None
ip._showtraceback = lambda *a, **k: None
sys.excepthook = lambda *a, **k: None
def double(x):
    raise NotImplementedError()
'''

# A class-level patch of IPython that swallows every exception in a cell.
SWALLOWED_IN_CLASS = '''from IPython.core.interactiveshell import InteractiveShell
_original = InteractiveShell.run_code
async def _run_code(self, code_obj, result=None, *, async_=False):
    try:
        exec(code_obj, self.user_global_ns, self.user_ns)
    except Exception:
        pass
    return False
InteractiveShell.run_code = _run_code
def double(x):
    return 3 * x
'''


def _read_course(ctx: Context) -> bytes:
    return _bytes(_solved(word=READ_COURSE.format(repo=str(REPO))))


def _read_hidden(ctx: Context) -> bytes:
    word = READ_HIDDEN.format(tiny=str(TINY_SOURCE), solutions=str(REPO / "solutions"),
                              submissions=str(ctx.submissions), out=str(ctx.out))
    return _bytes(_solved(word=word))


def _network(ctx: Context) -> bytes:
    return _bytes(_solved(word=NETWORK.format(targets=[("8.8.8.8", 53), ("1.1.1.1", 443), ("example.com", 80)])))


def _host_loopback(ctx: Context) -> bytes:
    return _bytes(_solved(word=NETWORK.format(targets=[("127.0.0.1", ctx.host_port)])))


WRITE_OUTSIDE = '''import os
written = []
for path in [{probe!r}, os.path.join({out!r}, "PWNED"), "/etc/autograder-pwned"]:
    try:
        with open(path, "w") as handle:
            handle.write("pwned")
        written.append(path)
    except OSError:
        pass
SECRET_WORD = DATA.upper() if not written else "WROTE " + ",".join(written)
'''

LEAK_TEST_SOURCE = '''def double(x):
    # Try to smuggle the running test's source out through the failure message.
    parent = get_ipython().kernel.get_parent()
    raise AssertionError(parent["content"]["code"])
'''

PROBE_FILE = REPO / ".hostile-write-probe"


def _write_outside(ctx: Context) -> bytes:
    return _bytes(_solved(word=WRITE_OUTSIDE.format(probe=str(PROBE_FILE), out=str(ctx.out))))


def _raw(data: bytes) -> Callable[[Context], bytes]:
    return lambda ctx: data


FULL = {"test-double": 3.0, "test-word": 2.0}
ZERO = {"test-double": 0.0, "test-word": 0.0}
DOUBLE_ONLY = {"test-double": 3.0, "test-word": 0.0}
WORD_ONLY = {"test-double": 0.0, "test-word": 2.0}

CASES = [
    Case("correct-1", answers(), FULL, {"test-double": "double works"}),
    Case("infinite-loop", answers(double=CORRECT_DOUBLE + "while True:\n    pass\n"), WORD_ONLY,
         {"test-double": "ran longer than"}),
    Case("ignores-interrupt", answers(
        double=CORRECT_DOUBLE + "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass\n"),
        ZERO, {"test-double": "did not stop when interrupted"}, note="later cells did not run"),
    Case("sys-exit", answers(word="import sys\nsys.exit(0)\n" + CORRECT_WORD), DOUBLE_ONLY,
         {"test-word": "sys.exit"}),
    Case("os-exit", answers(double="import os\nos._exit(3)\n"), ZERO,
         {"test-double": "kernel died", "test-word": "later cells did not run"}, note="kernel died"),
    # ctypes is refused by the kernel guard; faulthandler._read_null (a real NULL read) still crashes it.
    Case("segfault", answers(word="import faulthandler\nfaulthandler._read_null()\n"), DOUBLE_ONLY,
         {"test-word": "kernel died"}),
    Case("memory-bomb", answers(double="hog = []\nwhile True:\n    hog.append(bytearray(64 * 2**20))\n"), ZERO,
         {"test-double": "memory"}, note="memory"),
    Case("huge-print", answers(word="for _ in range(50_000):\n    print('y' * 1000)\n" + CORRECT_WORD),
         DOUBLE_ONLY, {"test-word": "printed more than"}),
    Case("fork-bomb", answers(word="import os\nwhile True:\n    os.fork()\n"), DOUBLE_ONLY,
         {"test-word": "processes"}),
    Case("correct-2", answers(), FULL),
    Case("read-hidden-files", _read_hidden, FULL),
    Case("network", _network, FULL),
    # A server on the grading machine's loopback: out of reach in a network
    # namespace; the audit hook alone allows loopback, which notebooks may use.
    Case("host-loopback", _host_loopback, FULL, without_namespaces=DOUBLE_ONLY),
    Case("write-outside", _write_outside, FULL),
    Case("instructor-secret-env", answers(
        word=f"import os\nSECRET_WORD = DATA.upper() if {SECRET_ENV!r} not in os.environ else 'LEAK'\n"), FULL),
    Case("patched-perf-counter", answers(double=CORRECT_DOUBLE + "import time\ntime.perf_counter = lambda: 0.0\n"),
         ZERO, {"test-double": "integrity: time.perf_counter was replaced", "test-word": "integrity"}),
    Case("patched-time-time", answers(word=CORRECT_WORD + "import time\n_real = time.time\ntime.time = lambda: _real() / 2\n"),
         DOUBLE_ONLY, {"test-word": "integrity: time.time was replaced"}),
    Case("patched-grader-function", answers(
        word="import autograder.checks.timing\nautograder.checks.timing.compare_outputs = lambda *a, **k: None\nSECRET_WORD = 'wrong'\n"),
        DOUBLE_ONLY, {"test-word": "autograder.checks.timing.compare_outputs was replaced"}),
    Case("replaced-grader-code", answers(
        word="import autograder.checks.timing as t\nt.compare_outputs.__code__ = (lambda *a, **k: None).__code__\nSECRET_WORD = 'x'\n"),
        DOUBLE_ONLY, {"test-word": "integrity: the kernel guard refused: notebooks may not change __code__ of "
                                   "compare_outputs"}),
    Case("shadowed-grader-name", answers(word="compare_outputs = lambda *a, **k: None\nSECRET_WORD = 'wrong'\n"),
         DOUBLE_ONLY, {"test-word": "the notebook's compare_outputs is not the grader's"}),
    Case("swallowed-failures", answers(
        double="def double(x):\n    return 0\nget_ipython().set_custom_exc((BaseException,), lambda *a, **k: None)\n"),
        ZERO, {"test-double": "integrity: IPython's exception handling was changed"}),
    Case("emptied-test-cells", answers(
        double="def double(x):\n    return 0\nget_ipython().input_transformers_cleanup.append(lambda lines: [])\n"),
        # The transformer empties the grader's own check cell too, so the check fails closed.
        ZERO, {"test-double": "integrity: the grader's integrity check did not answer"}),
    Case("event-callback", answers(
        double="def double(x):\n    return 0\nget_ipython().events.register('pre_run_cell', lambda info: None)\n"),
        ZERO, {"test-double": "integrity: an IPython pre_run_cell callback was registered by the notebook"}),
    Case("leak-hidden-test-source", answers(double=LEAK_TEST_SOURCE), WORD_ONLY,
         {"test-double": "hidden tests and was removed"}),
    Case("deleted-test-cells", _without_tests, FULL, {"test-double": "double works"}),
    Case("edited-test-cells", _edited_tests, WORD_ONLY, {"test-double": "double(2) returned 3"}),
    Case("duplicated-test-cells", _duplicated_tests, DOUBLE_ONLY, {"test-word": "SECRET_WORD is 'nope'"}),
    Case("wrong-kernel-name", _wrong_kernel, FULL),
    Case("malformed-json", _raw(b'{"cells": [ {"cell_type": "code",'), ZERO, {"test-double": "invalid JSON"}),
    Case("not-a-notebook", _raw(bytes(range(256)) * 64), ZERO, {"test-double": "is it a notebook"}),
    Case("json-but-not-notebook", _raw(json.dumps({"hello": "world"}).encode()), ZERO,
         {"test-double": "no 'cells'"}),
    Case("empty-notebook", _empty_notebook, ZERO, {"test-double": "missing from the notebook"}),
    Case("empty-file", _raw(b""), ZERO, {"test-word": "invalid JSON"}),
    Case("huge-embedded-outputs", _huge_outputs, FULL),
    Case("unusual-valid-style", _unusual_style, FULL),
    Case("missing-answer-cell", _missing_answer_cell, DOUBLE_ONLY, {"test-word": "'answer-word' is missing"}),
    Case("read-course-with-any-tool", _read_course, FULL, without_namespaces=DOUBLE_ONLY),
    Case("silenced-tracebacks", answers(double=SILENCED), ZERO, {"test-double": "showtraceback was replaced"}),
    Case("swallowed-in-the-class", answers(double=SWALLOWED_IN_CLASS), ZERO, {"test-double": "integrity"}),
    Case("rebinds-locked-data", answers(word=CORRECT_WORD + "DATA = 'x'\nSECRET_WORD = 'X'\n"), DOUBLE_ONLY,
         {"test-word": "'DATA', bound by the locked cell"}),
    Case("patched-json-report", answers(double="import json\njson.dumps = lambda *a, **k: '[]'\n"
                                               "def double(x):\n    return x\n"), ZERO,
         {"test-double": "replies could not be read"}),
    Case("trace-function-set", answers(double=CORRECT_DOUBLE + "import sys\nsys.settrace(lambda *a: None)\n"
                                                               "sys.settrace(None)\n"), ZERO,
         {"test-double": "trace or profile function was set"}),
    Case("notebook-thread", answers(double=CORRECT_DOUBLE + "import threading, time\n"
                                    "def _patcher():\n    while True:\n        time.sleep(0.05)\n"
                                    "threading.Thread(target=_patcher, daemon=True).start()\n"), ZERO,
         {"test-double": "thread the notebook started"}),
    Case("correct-3", answers(), FULL),
]
