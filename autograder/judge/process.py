"""The judge process: ``python -I -m autograder.judge.process``, started by the grader.

It runs the assignment's locked cells once (the grader's copy, from the source
notebook), then judges one part per :class:`~autograder.judge.protocol.Part`:
the part's hidden test runs here, in a fresh copy of that namespace, against a
remote :class:`~autograder.checks.probe.Learner` whose requests travel to the
grader (and on to the learner's kernel) over this process's stdin/stdout.
References, hidden inputs, tolerances and timers never leave this process; what
comes back from the kernel is plain data decoded here.  The learner's kernel
cannot reach this process: it is not in the kernel's PID namespace or process
tree, and it shares no file with it.
"""
from __future__ import annotations

import contextlib
import io
import os
import shutil
import sys
import tempfile
import time

from autograder.checks import clean_subprocess, probe
from autograder.judge import fresh_python
from autograder.judge import protocol as p

MAX_MESSAGE_CHARS = 2000


class RemoteLearner(probe.Learner):
    """The learner's kernel, reached through the grader: one Probe out, one ProbeResult back."""

    def __init__(self, out, inp) -> None:
        self.out, self.inp = out, inp

    def _request(self, request: dict) -> tuple[str, float]:
        self.out.write(p.encode(p.Probe(**request)))
        self.out.flush()
        reply = p.decode(self.inp.readline(), p.ProbeResult)
        return reply.response, reply.wall_s


def _message(exc: BaseException) -> tuple[str, str]:
    """(verdict status, message) for what a hidden test raised."""
    from autograder.checks.timing import SpeedInconclusive

    if isinstance(exc, SpeedInconclusive):
        return "inconclusive", str(exc)
    if isinstance(exc, AssertionError):
        return "failed", str(exc) or "a check failed (no message)"
    if isinstance(exc, probe.LearnerError):
        if exc.ename == "NotImplementedError":
            return "failed", "not answered yet: replace `raise NotImplementedError()` with your code"
        if exc.ename in ("NameError", "AttributeError"):
            return "failed", f"{exc} — did the answer cell above run without errors?"
        return "failed", f"your code raised {exc}"
    return "failed", f"{exc.__class__.__name__}: {exc}"


@contextlib.contextmanager
def _fresh_folder():
    """A new working folder for one part, holding links to the judge's data files."""
    home = os.getcwd()
    folder = tempfile.mkdtemp(prefix="part-", dir=home)
    for name in os.listdir(home):
        if not name.startswith("part-"):
            os.symlink(os.path.join(home, name), os.path.join(folder, name))
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(home)
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def seeded_draws(seed: str):
    """Within: every generator a hidden test makes without a seed (``numpy.random.default_rng()``),
    NumPy's and Python's global generators and TensorFlow's global seed are drawn from ``seed``, so
    a regrade of the same submission draws the same hidden inputs.  ``seed`` joins the hidden test
    (which the learner never sees) and the submission's digest: no learner can know the draws."""
    import hashlib
    import itertools
    import random

    import numpy

    counter = itertools.count()
    real = numpy.random.default_rng

    def derived(label: str) -> int:
        return int.from_bytes(hashlib.sha256(f"{seed}\0{label}".encode()).digest()[:8], "big")

    def default_rng(seed_arg=None):
        return real(derived(f"rng{next(counter)}") if seed_arg is None else seed_arg)

    numpy.random.default_rng = default_rng
    numpy.random.seed(derived("numpy") % 2**32)
    random.seed(derived("random"))
    if "tensorflow" in sys.modules:
        sys.modules["tensorflow"].random.set_seed(derived("tensorflow") % 2**31)
    try:
        yield
    finally:
        numpy.random.default_rng = real


def judge_part(source: str, base: dict, grade_id: str, submission: str = "") -> p.Verdict:
    """Run one hidden test in a copy of ``base`` and a fresh working folder, its draws seeded from
    the hidden test and ``submission`` (:func:`seeded_draws`); the verdict and what it printed.
    Nothing of one part (or one submission) is left for the next."""
    import hashlib

    namespace = dict(base)
    printed = io.StringIO()
    if "tensorflow" in sys.modules:  # a learner's graph is checked before the judge imports it
        from autograder.checks import graph_guard

        graph_guard.install()
    seed = hashlib.sha256(f"{grade_id}\0{source}\0{submission}".encode()).hexdigest()
    try:
        with _fresh_folder(), contextlib.redirect_stdout(printed), seeded_draws(seed):
            exec(compile(source, f"<hidden test {grade_id}>", "exec"), namespace)
    except Exception as exc:
        status, message = _message(exc)
        return p.Verdict(status, message[:MAX_MESSAGE_CHARS])
    return p.Verdict("passed", (printed.getvalue().strip() or "passed")[:MAX_MESSAGE_CHARS])


def run_locked_cells(cells: list[str]) -> tuple[dict, list[str]]:
    """The namespace the locked cells leave (each run once, in order) and the errors they raised."""
    namespace: dict = {"__name__": "__main__", "__builtins__": __builtins__}
    errors = []
    for number, cell in enumerate(cells, start=1):
        try:
            exec(compile(cell, f"<locked cell {number}>", "exec"), namespace)
        except Exception as exc:  # a locked cell that needs the learner's names: the tests say what they need
            errors.append(f"locked cell {number}: {exc.__class__.__name__}: {exc}"[:500])
    return namespace, errors


def _die_with_the_grader() -> None:
    import ctypes
    import signal

    try:
        ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG (Linux)
    except (OSError, AttributeError):
        pass  # elsewhere: the closed stdin ends it at its next read


def _use_temporary_folder(folder: str) -> None:
    """Make ``tempfile`` (and the processes this judge starts) use ``folder``: a locked cell's or a
    hidden test's profiles, exports and copies, made for every submission, are removed with the
    judge instead of collecting in the machine's temporary folder."""
    os.makedirs(folder, exist_ok=True)
    os.environ["TMPDIR"] = folder
    tempfile.tempdir = folder  # a forked judge may hold its zygote's answer


def main() -> int:
    _die_with_the_grader()
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # what TensorFlow or a locked cell prints cannot corrupt the protocol
    inp = sys.stdin
    start = p.decode(inp.readline(), p.Start)
    os.chdir(start.cwd)
    _use_temporary_folder(p.temporary_folder(start.cwd))
    probe.JUDGE_LEARNER = RemoteLearner(out, inp)
    fresh_python.install()
    clean_subprocess.CONFINE = True  # what a learner exported runs shut in, never with the judge's rights
    started = time.perf_counter()
    with contextlib.redirect_stdout(sys.stderr):
        base, errors = run_locked_cells(start.cells)
    print(f"judge: locked cells in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    out.write(p.encode(p.Ready(errors)))
    try:
        while True:
            line = inp.readline()
            if not line:
                return 0
            message = p.decode(line, p.Part, p.Stop)
            if isinstance(message, p.Stop):
                return 0
            out.write(p.encode(judge_part(message.source, base, message.grade_id, message.submission)))
    finally:
        fresh_python.close()  # its zygote, and the zygote's folder in the judge's temporary folder


if __name__ == "__main__":
    raise SystemExit(main())
