"""Capture, parse and check TensorFlow's device-placement log.

This is the one module the book, the exercise tests and ``python -m autograder
placement`` use to see where ops ran.

What TensorFlow 2.21 writes (measured on CPU, Python 3.11; the tests in
``tests/checks/test_placement.py`` re-measure all of it):

* With ``tf.debugging.set_log_device_placement(True)`` every eagerly executed
  op is logged by C++ ``LOG(INFO)`` on **stderr** (fd 2) with an abseil prefix::

      I0000 00:00:1796015065.143083    3358 execute.cc:1775] Executing op VarHandleOp in device /job:localhost/replica:0/task:0/device:CPU:0

  These lines obey ``TF_CPP_MIN_LOG_LEVEL`` as it was when TensorFlow was
  imported: with ``0`` (or unset, on the machine we measured) they appear, with
  ``1``-``3`` they never do, and changing the variable after the import changes
  nothing.  A ``tf.function`` call is one line, ``Executing op __inference_<name>_<n>``.
* Whenever TensorFlow places a graph (a ``tf.function`` on its first call, and
  the one-op function behind each new eager op signature) the placer writes one
  line per node, ``<node name>: (<op type>): <device>``.  It ``printf``s it to
  **stdout** (fd 1) whatever the log level, and also ``LOG(INFO)``s the same
  line on stderr with a ``placer.cc`` prefix when the level is 0.
* ``tf.debugging.set_log_device_placement`` only counts **before TensorFlow's
  runtime starts** (the first op, or listing logical devices): switched on
  later it logs nothing, and once the runtime started with it on, switching
  it off does not stop the logging (TensorFlow issues #53424, #45465; both
  measured on 2.21).  :func:`start_logging` is the call for a setup cell.
* In an IPython/Jupyter kernel TensorFlow installs a log listener
  (``tensorflow/python/ops/logging_ops.py`` calls
  ``TFE_Py_EnableInteractivePythonLogging`` when ``get_ipython`` exists) and
  the eager lines come out **bare on stdout** instead, whatever
  ``TF_CPP_MIN_LOG_LEVEL`` says.  With ipykernel 7.4 the kernel also forwards
  fd 1 and fd 2 to the notebook, so once logging is on every later cell that
  runs TensorFlow prints its placement lines (measured through nbclient)
  unless :func:`start_logging` hides them, which it does by default.
* The 2019 log in the course seed (TF 2.0 era) has the eager lines twice: bare,
  and with a ``2019-05-30 16:20:56.082274: I .../execute.cc:394]`` prefix.

:func:`parse_log` reads all of these; where the same kind of line is present
both with and without a logging prefix it keeps the prefixed copy only, so a
log that went through both stdout and stderr counts every op once.

Python-level redirection (``contextlib.redirect_stdout``) misses the C++
output, which goes straight to the file descriptors; :func:`capture` redirects
fds 1 and 2 (and swaps ``sys.stdout``/``sys.stderr`` onto them, since in a
Jupyter kernel ``sys.stdout`` is not fd 1), so it works in scripts, under
pytest and in kernels alike.

Cross-device copies (measured with two logical CPU devices): **no log line
marks a copy**.  Eagerly, ``with tf.device('/CPU:1'): y = x * 2.0`` with ``x``
on CPU:0 logs only ``Mul`` on CPU:1; the copy is the runtime's and is not an
op.  A Python or NumPy value used under a device scope other than the host's
CPU:0 is first moved there by ``_EagerConst`` on that device.  Reading a
variable always runs ``ReadVariableOp`` on the variable's device, even inside
``tf.device`` of another device.  In a ``tf.function`` the placer lines show
neighbouring nodes on different devices (``ReadVariableOp`` on CPU:0,
``mul`` on CPU:1); the ``_Send``/``_Recv`` pairs that move the tensor are
added after placement and are not logged.  So a copy shows up as a change of
device between an op and the op that consumes its output.
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import re
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autograder.checks import clean_subprocess

# Parsing the log and the table of op origins live in their own modules; every
# name stays importable from here.
from autograder.checks.placement_log import (  # noqa: F401
    _DEVICE_RE, _DEVICE_TEXT, _EAGER_RE, _GRAPH_RE, _PREFIX_RE, PLUMBING_OPS, VARIABLE_OPS, PlacementRecord,
    _parse_line, is_placement_line, normalize_device, parse_log, same_device, short_device,
)
from autograder.checks.placement_origins import (  # noqa: F401
    _DENSE, _GRADS, _VAR, OP_ORIGINS, ORIGIN_PROBES, OriginProbe, _build_origins, origin_of, probe_ops_missing,
)

LOG_LEVEL_ENV = "TF_CPP_MIN_LOG_LEVEL"
#: Set in a child's environment by :func:`capture_command`; ``placement_boot`` reads it.
PLACEMENT_ENV = "AUTOGRADER_LOG_DEVICE_PLACEMENT"
BOOT_MODULE = "autograder.checks.placement_boot"


class PlacementLoggingOff(Exception):
    """TensorFlow was imported with a log level that hides eager placement lines."""


# --------------------------------------------------------------------------
# Measuring which Python calls produce which ops (the probes: placement_origins)


def measure_probe(probe: OriginProbe) -> Capture:
    """Run one probe's code under :func:`capture` (its setup runs outside)."""
    import keras
    import tensorflow as tf

    namespace: dict[str, Any] = {"tf": tf, "keras": keras}
    exec(compile(probe.setup, f"<setup of {probe.call}>", "exec"), namespace)  # noqa: S102 - our own probe code
    code = compile(probe.code, f"<{probe.call}>", "exec")
    return capture(exec, code, namespace)


def measure_origins(probes: Iterable[OriginProbe] = ORIGIN_PROBES) -> dict[str, list[str]]:
    """Probe call -> sorted op types it logged here, measured now."""
    return {probe.call: sorted(measure_probe(probe).ops()) for probe in probes}


# --------------------------------------------------------------------------
# Captures


@dataclass(frozen=True)
class OpSummary:
    """One row of a placement summary."""

    op_type: str
    devices: tuple[str, ...]
    eager_count: int
    graph_count: int
    calls: str | None

    @property
    def count(self) -> int:
        return self.eager_count + self.graph_count

    def to_dict(self) -> dict[str, Any]:
        return {
            "op_type": self.op_type,
            "devices": list(self.devices),
            "count": self.count,
            "eager_count": self.eager_count,
            "graph_count": self.graph_count,
            "calls": self.calls,
        }


@dataclass
class Capture:
    """What a captured run logged.  ``result`` is the function's return value
    (for :func:`capture_command`, the command's exit status)."""

    result: Any = None
    text: str = ""
    records: list[PlacementRecord] = field(default_factory=list)
    stdout: str = ""
    stderr: str = ""

    @classmethod
    def from_text(cls, text: str, result: Any = None) -> Capture:
        return cls(result=result, text=text, records=parse_log(text))

    def _work(self, kind: str | None = None) -> Iterator[PlacementRecord]:
        return (r for r in self.records if r.op_type not in PLUMBING_OPS and kind in (None, r.kind))

    def ops(self, kind: str | None = None) -> set[str]:
        """Op types logged (``kind``: "eager", "graph" or None for both), without function plumbing."""
        return {r.op_type for r in self._work(kind)}

    def devices_for(self, op_type: str) -> list[str]:
        """Sorted short device names (``'CPU:1'``) an op type ran on."""
        return sorted({r.short_device for r in self.records if r.op_type == op_type})

    def by_op(self) -> dict[str, list[str]]:
        """Op type -> sorted short devices, in order of first appearance."""
        return {op: self.devices_for(op) for op in dict.fromkeys(r.op_type for r in self._work())}

    def summary(self) -> list[OpSummary]:
        rows = []
        for op, devices in self.by_op().items():
            kinds = [r.kind for r in self.records if r.op_type == op]
            rows.append(OpSummary(op, tuple(devices), kinds.count("eager"), kinds.count("graph"), origin_of(op)))
        return rows

    def summary_table(self) -> str:
        """A fixed-width table: op type, devices, eager and graph line counts, typical calls."""
        rows = [("op type", "devices", "eager", "graph", "typical Python calls")]
        rows += [
            (s.op_type, ", ".join(s.devices), str(s.eager_count), str(s.graph_count), s.calls or "-")
            for s in self.summary()
        ]
        widths = [max(len(row[i]) for row in rows) for i in range(4)]
        lines = [
            f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]:>{widths[2]}}  {r[3]:>{widths[3]}}  {r[4]}"
            for r in rows
        ]
        return "\n".join(line.rstrip() for line in lines)


# --------------------------------------------------------------------------
# Capturing in this process

_capture_lock = threading.RLock()  # re-entrant: a captured function may capture too
_eager_logging_works: bool | None = None


def _flush_c_stdio() -> None:
    """Flush C stdio buffers: the placer ``printf``s into libc's stdout buffer."""
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError, TypeError):  # no libc symbol table (Windows): nothing to flush
        pass


@contextlib.contextmanager
def _fds_redirected() -> Iterator[dict[str, str]]:
    """Send fds 1 and 2 (and sys.stdout/sys.stderr) to temporary files.

    Yields a dict that holds ``stdout`` and ``stderr`` text once the block ends.
    sys.stdout is swapped too: in Jupyter and under pytest it is not fd 1, and
    without the swap the function's prints would bypass the capture.
    """
    out: dict[str, str] = {}
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    _flush_c_stdio()
    saved_py = sys.stdout, sys.stderr
    with tempfile.TemporaryFile() as out_file, tempfile.TemporaryFile() as err_file:
        saved_fds = os.dup(1), os.dup(2)
        try:
            os.dup2(out_file.fileno(), 1)
            os.dup2(err_file.fileno(), 2)
            sys.stdout = open(1, "w", buffering=1, encoding="utf-8", errors="backslashreplace", closefd=False)
            sys.stderr = open(2, "w", buffering=1, encoding="utf-8", errors="backslashreplace", closefd=False)
            yield out
        finally:
            with contextlib.suppress(Exception):
                sys.stdout.flush()
                sys.stderr.flush()
            _flush_c_stdio()
            sys.stdout, sys.stderr = saved_py
            os.dup2(saved_fds[0], 1)
            os.dup2(saved_fds[1], 2)
            os.close(saved_fds[0])
            os.close(saved_fds[1])
            for name, handle in (("stdout", out_file), ("stderr", err_file)):
                handle.seek(0)
                out[name] = handle.read().decode("utf-8", errors="replace")


def _runtime_started(tf: Any) -> bool:
    """Whether TensorFlow's eager runtime exists yet (private API; False if it moved)."""
    from tensorflow.python.eager import context

    return getattr(context.context(), "_context_handle", None) is not None


class _KernelStreamFilter:
    """Keeps placement lines out of what a Jupyter kernel stream shows.

    ipykernel 7 passes both ``sys.stdout.write`` calls (where TF's IPython
    listener writes the eager lines) and what it reads from fds 1 and 2 (the
    placer's lines, in chunks of up to 1000 bytes) through the stream's
    ``write``.  IPython replaces ``write`` with its own wrapper for each cell
    and puts the old one back after, so the filter is wrapped around the
    current ``write`` now and again before every cell (``pre_run_cell``).
    A partial line at the end of a chunk that held placement lines waits for
    the rest of its line; any other partial line (``print(x, end='')``) goes
    out at once.
    """

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.pending = ""
        self.lock = threading.Lock()
        flush = stream.flush

        def flush_pending() -> None:
            with self.lock:
                pending, self.pending = self.pending, ""
            if pending:
                stream.write(pending)
            flush()

        stream.flush = flush_pending

    def wrap(self, _info: Any = None) -> None:
        """Filter the stream's ``write`` (idempotent; also IPython's ``pre_run_cell`` hook)."""
        current = self.stream.write
        if getattr(current, "_hides_placement", False):
            return
        # IPython's per-cell wrapper keeps the write it replaced in a closure
        # variable and restores it after the cell: filter that one, so output
        # that arrives between cells (fd chunks read late) is filtered too.
        names = getattr(getattr(current, "__code__", None), "co_freevars", ())
        cells = dict(zip(names, getattr(current, "__closure__", None) or ()))
        saved = cells.get("original_write")
        if saved is None:
            self.stream.write = self._filtered(current)
        elif not getattr(saved.cell_contents, "_hides_placement", False):
            saved.cell_contents = self._filtered(saved.cell_contents)

    def _filtered(self, inner: Callable[..., Any]) -> Callable[..., int]:
        def write(text: str, *args: Any, **kwargs: Any) -> int:
            with self.lock:
                lines = (self.pending + text).splitlines(keepends=True)
                self.pending = ""
                kept = [line for line in lines if not is_placement_line(line)]
                if len(kept) < len(lines) and kept and not kept[-1].endswith(("\n", "\r")):
                    self.pending = kept.pop()
            if kept:
                inner("".join(kept), *args, **kwargs)
            return len(text)

        write._hides_placement = True  # type: ignore[attr-defined]
        return write


def _hide_placement_lines_in_kernel() -> None:
    from IPython import get_ipython

    shell = get_ipython()
    for stream in (sys.stdout, sys.stderr):
        if getattr(stream, "_placement_filter", None) is None:
            stream._placement_filter = _KernelStreamFilter(stream)
            stream._placement_filter.wrap()
            if shell is not None:
                shell.events.register("pre_run_cell", stream._placement_filter.wrap)


def _in_jupyter_kernel() -> bool:
    return type(sys.stdout).__module__.startswith("ipykernel")


def start_logging(*, quiet: bool = True) -> None:
    """Turn placement logging on for the rest of this process; call it first.

    Sets ``TF_CPP_MIN_LOG_LEVEL=0`` if TensorFlow is not imported yet (and the
    variable is unset), imports TensorFlow and calls
    ``tf.debugging.set_log_device_placement(True)`` without starting the
    runtime, so devices can still be configured afterwards.  Raises
    :class:`PlacementLoggingOff` when it is already too late: the runtime
    started with logging off.  Logging then stays on until the process ends;
    in a Jupyter kernel ``quiet`` (the default) hides placement lines written
    outside :func:`capture` from the notebook, as switching logging off would
    if TensorFlow could.  Does nothing if logging is already on.
    """
    if "tensorflow" not in sys.modules:
        os.environ.setdefault(LOG_LEVEL_ENV, "0")
    import tensorflow as tf

    if tf.debugging.get_log_device_placement():
        return
    if _runtime_started(tf):
        raise PlacementLoggingOff(_logging_off_message(runtime_started=True))
    tf.debugging.set_log_device_placement(True)
    if quiet and _in_jupyter_kernel():
        _hide_placement_lines_in_kernel()


def _logging_off_message(*, runtime_started: bool) -> str:
    level = os.environ.get(LOG_LEVEL_ENV)
    if runtime_started:
        why = "TensorFlow's runtime started before placement logging was turned on"
    else:
        why = f"TensorFlow was imported with {LOG_LEVEL_ENV}={level!r}" if level else "eager ops log nothing"
    return (
        f"placement logging is off ({why}): restart the kernel and run "
        f"os.environ['{LOG_LEVEL_ENV}'] = '0' before importing TensorFlow, then "
        "autograder.checks.placement.start_logging() before any TensorFlow op"
    )


def _check_eager_logging(tf: Any) -> None:
    """Raise PlacementLoggingOff unless an eager op logs a line (measured once)."""
    global _eager_logging_works
    if _eager_logging_works is None:
        with _fds_redirected() as probe:
            # NoOp: an op no user code runs eagerly, so the probe leaves no
            # placed one-op function behind that would hide a later graph line.
            tf.raw_ops.NoOp()
        # stderr from TF's logger; stdout from the listener TF installs in IPython
        _eager_logging_works = "Executing op" in probe["stdout"] + probe["stderr"]
    if not _eager_logging_works:
        raise PlacementLoggingOff(_logging_off_message(runtime_started=False))


def _echo_other_lines(text: str, stream: Any) -> None:
    other = [line for line in text.splitlines(keepends=True) if not is_placement_line(line)]
    if other:
        stream.write("".join(other))
        stream.flush()


def forget_placements() -> None:
    """Make TensorFlow place every function again at its next call.

    The placer logs a graph's nodes only when the runtime instantiates the
    graph: a ``tf.function``'s first call for an input signature, and the
    one-op function behind each new eager op signature.  The instantiations
    are kept in the eager context's kernel cache; clearing it (measured on
    2.21: ``tests/checks/test_placement.py``) makes the next call instantiate, place
    and log the graph again.  Variables and other resources are not touched.
    """
    from tensorflow.python.eager import context

    context.context().clear_kernel_cache()


def capture(fn: Callable[..., Any], *args: Any, echo: bool = True, fresh: bool = False,
            **kwargs: Any) -> Capture:
    """Run ``fn(*args, **kwargs)`` and return the placement lines it logged.

    Calls :func:`start_logging` first, so logging is on from then on (TF 2.21
    cannot switch it off again, see the module docstring).  fds 1 and 2 are
    redirected to temporary files while ``fn`` runs; afterwards every line
    that is not a placement line is written to the original stdout/stderr
    (unless ``echo`` is false), so nothing ``fn`` printed is lost.  If ``fn``
    raises, its output is echoed and the exception propagates.

    Only work done inside ``fn`` is in the capture.  By default a
    ``tf.function`` that already ran before the capture logs just its
    ``__inference_...`` call, not its nodes; with ``fresh=True`` the capture
    first calls :func:`forget_placements`, so every function ``fn`` runs is
    placed (and logged) again and the capture does not depend on what ran
    before it.  Checks of exercises use ``fresh=True``.  Raises
    :class:`PlacementLoggingOff`, before calling ``fn``, when TensorFlow
    cannot log eager placement in this process.
    """
    start_logging()
    import tensorflow as tf

    with _capture_lock:
        _check_eager_logging(tf)
        if fresh:
            forget_placements()
        streams: dict[str, str] = {}
        try:
            with _fds_redirected() as streams:
                result = fn(*args, **kwargs)
        finally:
            if echo:
                _echo_other_lines(streams.get("stdout", ""), sys.stdout)
                _echo_other_lines(streams.get("stderr", ""), sys.stderr)
    return _capture_from_streams(result, streams["stdout"], streams["stderr"])


def _capture_from_streams(result: Any, stdout: str, stderr: str) -> Capture:
    joiner = "" if not stdout or stdout.endswith("\n") else "\n"
    text = stdout + joiner + stderr
    return Capture(result=result, text=text, records=parse_log(text), stdout=stdout, stderr=stderr)


# --------------------------------------------------------------------------
# Capturing a command

_PYTHON_NAME = re.compile(r"^python(\d+(\.\d+)?)?(\.exe)?$")
_OPTS_WITH_VALUE = {"-W", "-X", "--check-hash-based-pycs"}


def python_command(argv: list[str], python: str | None = None) -> list[str]:
    """``argv`` rewritten to run through ``autograder.checks.placement_boot``.

    Accepts ``script.py [args]`` or ``python [options] (script.py | -c CODE |
    -m MODULE) [args]``; raises ValueError for anything else.  A bare
    ``python``/``python3`` means this interpreter (``sys.executable``, which
    has TensorFlow), not whatever ``python`` is first on PATH; a path is kept.
    The child runs isolated (``python -I``, see :mod:`autograder.checks.clean_subprocess`).
    """
    if not argv:
        raise ValueError("no command given")
    first = argv[0]
    if first.endswith(".py"):
        return clean_subprocess.python_argv(BOOT_MODULE, argv, python=python)
    if not _PYTHON_NAME.match(Path(first).name):
        raise ValueError(
            f"cannot turn on placement logging in {first!r}: give a Python script (script.py) "
            "or a python command (python script.py, python -c CODE, python -m MODULE)"
        )
    options: list[str] = []
    rest = argv[1:]
    while rest and rest[0].startswith("-") and rest[0] not in ("-c", "-m", "-"):
        option = rest.pop(0)
        options.append(option)
        if option in _OPTS_WITH_VALUE and rest:
            options.append(rest.pop(0))
    if not rest:
        raise ValueError("the python command runs nothing: add a script, -c CODE or -m MODULE")
    interpreter = first if os.sep in first or (os.altsep and os.altsep in first) else python
    return clean_subprocess.python_argv(BOOT_MODULE, rest, python=interpreter, options=options)


def capture_command(
    argv: list[str],
    *,
    env: dict[str, str] | None = None,
    timeout: float = 600,
    cwd: str | os.PathLike[str] | None = None,
) -> Capture:
    """Run a Python script or command in a child process and capture its placement log.

    The child gets ``TF_CPP_MIN_LOG_LEVEL=0`` and runs through
    ``python -m autograder.checks.placement_boot``, which turns placement logging on
    before the script starts.  Its environment is
    :func:`autograder.checks.clean_subprocess.clean_env` (none of this process's
    ``PYTHON*`` or ``LD_PRELOAD``) plus ``env``.  ``result`` is the exit status; raises
    ``subprocess.TimeoutExpired`` after ``timeout`` seconds.
    """
    command = python_command(list(argv))
    child_env = clean_subprocess.clean_env({**(env or {}), LOG_LEVEL_ENV: "0", PLACEMENT_ENV: "1"})
    done = subprocess.run(command, capture_output=True, env=child_env, timeout=timeout, cwd=cwd)
    stdout = done.stdout.decode("utf-8", errors="replace")
    stderr = done.stderr.decode("utf-8", errors="replace")
    return _capture_from_streams(done.returncode, stdout, stderr)


# --------------------------------------------------------------------------
# Checks for exercises


def _tensor_label(value: Any) -> str:
    try:
        name = value.name
    except (AttributeError, ValueError):  # eager tensors have no name
        return "the tensor"
    return f"{'variable' if hasattr(value, 'assign') else 'tensor'} {name!r}"


def assert_ops_on_device(
    capture: Capture,
    device: str,
    ops: Iterable[str] | None = VARIABLE_OPS,
    allow: Iterable[str] = PLUMBING_OPS,
) -> None:
    """Fail unless every logged op of the given types ran on ``device``.

    ``ops`` are the op types to check (default: the variable ops; None: every
    op); ``allow`` lists op types that may run anywhere.  Also fails when no op
    of those types was logged at all, so an empty capture cannot pass.
    """
    checked = None if ops is None else frozenset(ops)
    allowed = frozenset(allow)
    noun = "variable ops" if checked is not None and checked <= VARIABLE_OPS else "ops"
    want = normalize_device(device)
    relevant = [
        r for r in capture.records
        if r.op_type not in allowed and (checked is None or r.op_type in checked)
    ]
    if not relevant:
        raise AssertionError(
            f"no {noun} were logged: create and use them inside the function you pass to capture()"
        )
    wrong: dict[str, set[str]] = {}
    for record in relevant:
        if record.device != want:
            wrong.setdefault(record.op_type, set()).add(record.short_device)
    if not wrong:
        return
    where = sorted(set().union(*wrong.values()))
    hint = (
        "create the variables inside tf.device(device)"
        if noun == "variable ops"
        else "run the computation inside tf.device(device)"
    )
    if len(where) == 1:
        listed = ", ".join(wrong)
        raise AssertionError(
            f"{len(wrong)} {noun} ran on {where[0]}, not {short_device(want)}: {listed} — {hint}"
        )
    listed = ", ".join(f"{op} on {'/'.join(sorted(devs))}" for op, devs in wrong.items())
    raise AssertionError(f"{len(wrong)} {noun} ran off {short_device(want)}: {listed} — {hint}")


def assert_tensor_on_device(value: Any, device: str) -> None:
    """Fail unless a tensor or variable lives on ``device`` (by its ``.device``)."""
    actual = getattr(value, "device", None)
    if not actual and hasattr(value, "value"):  # a Keras 3 Variable wraps a tf.Variable
        actual = getattr(value.value, "device", None)
    if not actual:
        raise AssertionError(f"{_tensor_label(value)} has no device: pass an eager tensor or a tf.Variable")
    if not same_device(actual, device):
        raise AssertionError(
            f"{_tensor_label(value)} is on {short_device(actual)}, not {short_device(device)} — "
            f"create it inside tf.device({device!r})"
        )
