"""Read a TensorFlow profiler trace back into an op-level table, without TensorBoard.

``tf.profiler.experimental.start(logdir)``/``stop()`` (or the ``Profile``
context manager) write one run per session to
``logdir/plugins/profile/<run>/<host>.xplane.pb``: an ``XSpace`` protobuf
with one *plane* per device (``/host:CPU``, ``/device:GPU:0``, ...), one
*line* per thread or stream and one *event* per traced region.  This module
parses that file with the protobuf classes that ship with TensorFlow and
turns the op events into a table of count, total and self time per op.

Which events are ops (checked against TF 2.21's traces):

* ops run inside a graph (``tf.function``) are events named
  ``node_name:OpType`` on the host's executor threads (``OpType`` is the
  kernel that ran, e.g. ``_MklMatMul`` where oneDNN rewrote a ``MatMul``);
* ops run eagerly appear on the Python thread as ``EagerLocalExecute: OpType``
  (dispatch included: that is what an eager op costs);
* kernels on a GPU are events on the ``/device:GPU:N`` plane carrying a
  ``tf_op`` stat ``node_name:OpType`` naming the op that launched them.

Calls of whole functions (``EagerLocalExecute: __inference_...``) are left
out: their ops are already counted one by one, and counting both would count
the time twice.  *Self* time is an event's duration minus that of the op
events nested inside it on the same line, so the column sums to the time the
ops really took.
"""
from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

_GRAPH_OP = re.compile(r"^(?P<name>[^:\s][^:]*):(?P<type>[A-Za-z_][A-Za-z0-9_]*)$")
_EAGER_PREFIX = "EagerLocalExecute: "
_FUNCTION_PREFIXES = ("__inference", "__forward", "__backward")


class TraceNotFound(FileNotFoundError):
    """No ``.xplane.pb`` file where a trace was expected."""


@dataclass(frozen=True)
class OpEvent:
    """One execution of one op, as the profiler recorded it (times in picoseconds)."""

    name: str          # node name in the graph; the op type for eager ops
    type: str          # the kernel that ran, e.g. "_MklMatMul", "Relu"
    start_ps: int
    duration_ps: int
    self_ps: int
    plane: str         # "/host:CPU", "/device:GPU:0", ...
    line: str          # thread or stream name
    eager: bool


@dataclass(frozen=True)
class OpStats:
    """Aggregated time of one op name or one op type over a whole trace."""

    op: str            # the op name or op type the row is keyed by
    type: str          # op type (for a row keyed by type, the same as ``op``)
    count: int
    total_us: float
    self_us: float
    eager: bool        # True if every execution was eager

    @property
    def avg_us(self) -> float:
        return self.total_us / self.count if self.count else 0.0


def find_xplane(logdir: str | Path) -> Path:
    """The newest ``.xplane.pb`` under ``logdir/plugins/profile/<run>/``.

    Runs are folders named by their start time, so the newest sorts last;
    ties are broken by modification time."""
    root = Path(logdir)
    files = list(root.glob("plugins/profile/*/*.xplane.pb"))
    if not files:
        where = root / "plugins" / "profile"
        raise TraceNotFound(
            f"no profiler trace under {where}: run your code between "
            "tf.profiler.experimental.start(logdir) and stop() (or inside "
            "tf.profiler.experimental.Profile(logdir)) with that logdir first"
        )
    return max(files, key=lambda p: (p.parent.name, p.stat().st_mtime))


def load_xspace(path: str | Path) -> Any:
    """Parse an ``.xplane.pb`` file (or the newest one under a logdir) into an ``XSpace``."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    path = Path(path)
    if path.is_dir():
        path = find_xplane(path)
    space = xplane_pb2.XSpace()
    try:
        space.ParseFromString(path.read_bytes())
    except Exception as error:  # protobuf's DecodeError has no stable import path
        raise ValueError(f"{path} is not a profiler trace (XSpace protobuf): {error}") from None
    return space


def _stat_value(plane: Any, stat: Any) -> Any:
    kind = stat.WhichOneof("value")
    if kind == "ref_value":
        return plane.stat_metadata[stat.ref_value].name
    return getattr(stat, kind) if kind else None


def _classify(plane: Any, event: Any) -> tuple[str, str, bool] | None:
    """(name, type, eager) if ``event`` is an op execution, else None."""
    meta = plane.event_metadata[event.metadata_id]
    for stat in list(event.stats) + list(meta.stats):
        if plane.stat_metadata[stat.metadata_id].name == "tf_op":
            match = _GRAPH_OP.match(str(_stat_value(plane, stat)))
            if match:
                return match["name"], match["type"], False
    if meta.name.startswith(_EAGER_PREFIX):
        op_type = meta.name[len(_EAGER_PREFIX):].strip()
        if not op_type or op_type.startswith(_FUNCTION_PREFIXES):
            return None
        return op_type, op_type, True
    match = _GRAPH_OP.match(meta.name)
    if match and not plane.name.startswith("/device:"):
        return match["name"], match["type"], False
    return None


def op_events(source: Any) -> list[OpEvent]:
    """Every op execution in a trace: ``source`` is an ``XSpace``, an
    ``.xplane.pb`` path or a logdir."""
    space = source if hasattr(source, "planes") else load_xspace(source)
    events: list[OpEvent] = []
    for plane in space.planes:
        for line in plane.lines:
            found = []
            for event in line.events:
                kind = _classify(plane, event)
                if kind is not None:
                    start = line.timestamp_ns * 1000 + event.offset_ps
                    found.append((start, event.duration_ps, kind))
            # Children start no earlier and end no later than their parent;
            # sorting by (start, longest first) puts each parent before them.
            found.sort(key=lambda item: (item[0], -item[1]))
            child_ps = [0] * len(found)
            stack: list[int] = []
            for i, (start, duration, _) in enumerate(found):
                while stack and found[stack[-1]][0] + found[stack[-1]][1] <= start:
                    stack.pop()
                if stack and start + duration <= found[stack[-1]][0] + found[stack[-1]][1]:
                    child_ps[stack[-1]] += duration
                stack.append(i)
            for (start, duration, (name, op_type, eager)), children in zip(found, child_ps):
                events.append(OpEvent(
                    name=name, type=op_type, start_ps=start, duration_ps=duration,
                    self_ps=max(duration - children, 0), plane=plane.name,
                    line=line.display_name or line.name, eager=eager,
                ))
    return events


def op_table(source: Any, *, by: str = "type", plane: str | None = None) -> list[OpStats]:
    """Count, total and self time per op type (``by="type"``) or per node
    name (``by="name"``), slowest self time first.  ``source`` is an
    ``XSpace``, an ``.xplane.pb`` path, a logdir or a list of ``OpEvent``.

    ``plane`` keeps only events of planes whose name starts with it: on a GPU
    an op appears twice, as its launch on ``/host:CPU`` and as its kernels on
    ``/device:GPU:N``; ``plane="/device:GPU"`` counts the kernels only."""
    if by not in ("type", "name"):
        raise ValueError(f"by must be 'type' or 'name', got {by!r}")
    events = source if isinstance(source, list) else op_events(source)
    if plane is not None:
        events = [e for e in events if e.plane.startswith(plane)]
    groups: dict[str, list[OpEvent]] = defaultdict(list)
    for event in events:
        groups[event.type if by == "type" else event.name].append(event)
    rows = []
    for key, group in groups.items():
        types = sorted({e.type for e in group})
        rows.append(OpStats(
            op=key, type="/".join(types), count=len(group),
            total_us=sum(e.duration_ps for e in group) / 1e6,
            self_us=sum(e.self_ps for e in group) / 1e6,
            eager=all(e.eager for e in group),
        ))
    rows.sort(key=lambda r: (-r.self_us, r.op))
    return rows


def slowest_op(source: Any, *, by: str = "type", plane: str | None = None) -> OpStats:
    """The row of ``op_table`` with the most self time."""
    rows = op_table(source, by=by, plane=plane)
    if not rows:
        raise ValueError("the trace holds no op events: did any TensorFlow op run while profiling?")
    return rows[0]


def _shorten(name: str, width: int) -> str:
    # Keep the end of a long node name: the op's own name is the specific part.
    return name if len(name) <= width else "…" + name[-(width - 1):]


def format_table(rows: Iterable[OpStats], *, top: int = 10, max_width: int = 48) -> str:
    """A plain-text table of the first ``top`` rows with each op's share of self
    time; op names longer than ``max_width`` keep their last characters."""
    rows = list(rows)
    total = sum(r.self_us for r in rows) or 1.0
    width = min(max([len("op")] + [len(r.op) for r in rows[:top]]), max_width)
    lines = [f"{'op':{width}}  {'count':>6}  {'total µs':>10}  {'self µs':>10}  {'self %':>6}"]
    for r in rows[:top]:
        mode = "  (eager)" if r.eager else ""
        lines.append(f"{_shorten(r.op, width):{width}}  {r.count:6d}  {r.total_us:10.1f}  {r.self_us:10.1f}  "
                     f"{100 * r.self_us / total:5.1f}%{mode}")
    if len(rows) > top:
        rest = sum(r.self_us for r in rows[top:])
        lines.append(f"{f'({len(rows) - top} more)':{width}}  {'':6}  {'':10}  {rest:10.1f}  "
                     f"{100 * rest / total:5.1f}%")
    return "\n".join(lines)


def profile_calls(fn: Callable[..., Any], *args: Any, logdir: str | Path, steps: int = 5,
                  warmup: int = 1, **kwargs: Any) -> Path:
    """Call ``fn(*args, **kwargs)`` ``warmup`` times untraced (tracing and first-call
    costs stay out), then ``steps`` times under the profiler; return the trace file.

    Each result is forced to the host, so asynchronous device work finishes
    inside the profiled region."""
    import tensorflow as tf

    from autograder.checks.timing import to_host

    if steps < 1:
        raise ValueError(f"steps must be at least 1, got {steps}")
    for _ in range(warmup):
        to_host(fn(*args, **kwargs))
    before = set(Path(logdir).glob("plugins/profile/*/*.xplane.pb"))
    with tf.profiler.experimental.Profile(str(logdir)):
        for _ in range(steps):
            to_host(fn(*args, **kwargs))
    new = set(Path(logdir).glob("plugins/profile/*/*.xplane.pb")) - before
    return max(new, key=lambda p: p.stat().st_mtime) if new else find_xplane(logdir)


def assert_profiler_stopped() -> None:
    """Raise ``AssertionError`` if a profiler session is still running (one a
    learner's function started and never stopped); stop it first, so that
    later checks can profile.  Probes by starting a session of its own."""
    import tempfile

    import tensorflow as tf

    with tempfile.TemporaryDirectory(prefix="profiler-probe-") as probe:  # the probe's trace, removed after
        try:
            tf.profiler.experimental.start(probe)
        except Exception as error:
            try:
                tf.profiler.experimental.stop()
            except Exception:
                pass
            raise AssertionError(
                f"the profiler is still running after profile_steps returned ({type(error).__name__}); "
                "call tf.profiler.experimental.stop() (a `with Profile(...)` block does it for you), "
                "also when the step raises (try/finally)") from None
        tf.profiler.experimental.stop()
