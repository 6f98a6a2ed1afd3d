"""Reading TensorFlow's device-placement log: device names in any spelling, and
the log lines parsed into :class:`PlacementRecord` s.

:mod:`autograder.checks.placement` describes what TensorFlow writes and
re-exports every name here; import them from there.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any


#: Ops that create, read, write or check a resource variable.
VARIABLE_OPS = frozenset(
    {
        "VarHandleOp",
        "VarIsInitializedOp",
        "AssignVariableOp",
        "AssignAddVariableOp",
        "AssignSubVariableOp",
        "ReadVariableOp",
        "ResourceGather",
        "ResourceScatterAdd",
        "ResourceScatterUpdate",
        "DestroyResourceOp",
    }
)
#: Nodes that move arguments and results in and out of a function graph; the
#: placer logs them for every function, they are not work the user asked for.
PLUMBING_OPS = frozenset({"_Arg", "_Retval", "_DeviceArg", "_DeviceRetval", "NoOp"})


# --------------------------------------------------------------------------
# Device names


_DEVICE_RE = re.compile(
    r"""^/?(?:job:(?P<job>[^/]+))?
        (?:/?replica:(?P<replica>\d+))?
        (?:/?task:(?P<task>\d+))?
        (?:/?(?:physical_)?device:)?
        /?(?P<type>[A-Za-z][A-Za-z_]*)
        (?::(?P<index>\d+))?$""",
    re.X,
)


def normalize_device(device: Any) -> str:
    """The full device string for any spelling of a device.

    ``"/CPU:1"``, ``"cpu:1"``, ``"/device:CPU:1"`` and
    ``"/job:localhost/replica:0/task:0/device:CPU:1"`` all give the last form.
    A missing index means 0.
    """
    text = str(device).strip()
    match = _DEVICE_RE.match(text)
    if not text or not match:
        raise ValueError(f"not a device name: {text!r} (expected something like '/CPU:1' or '/GPU:0')")
    return "/job:{}/replica:{}/task:{}/device:{}:{}".format(
        match["job"] or "localhost",
        match["replica"] or 0,
        match["task"] or 0,
        match["type"].upper(),
        match["index"] or 0,
    )


def short_device(device: Any) -> str:
    """``'CPU:1'`` for any spelling of the first CPU:1 device."""
    return normalize_device(device).rsplit("/device:", 1)[1]


def same_device(a: Any, b: Any) -> bool:
    return normalize_device(a) == normalize_device(b)


# --------------------------------------------------------------------------
# Parsing


@dataclass(frozen=True)
class PlacementRecord:
    """One op placement read from a log line."""

    op_type: str
    device: str
    short_device: str
    node_name: str | None
    kind: str  # "eager" (an executed op) or "graph" (a node the placer placed)
    line: str


# A logging prefix in either format TensorFlow has used:
#   2019-05-30 16:20:56.082274: I tensorflow/core/common_runtime/eager/execute.cc:394]
#   I0000 00:00:1796015065.143083    3358 execute.cc:1775]
_PREFIX_RE = re.compile(
    r"""^\s*(?:
        \d{4}-\d\d-\d\d[ T][\d:.]+:?\s+[IWEF]\s+\S+:\d+\]\s*
      | [IWEF]\d{4}\s+[\d:.]+\s+\d+\s+\S+:\d+\]\s*
    )""",
    re.X,
)
_DEVICE_TEXT = r"/job:[^/\s]+/replica:\d+/task:\d+/device:[A-Za-z_]+:\d+"
_EAGER_RE = re.compile(rf"^Executing op (?P<op>\S+) in device (?P<device>{_DEVICE_TEXT})\s*$")
_GRAPH_RE = re.compile(rf"^(?P<node>[^\s:]+): \((?P<op>[A-Za-z0-9_.>]+)\): (?P<device>{_DEVICE_TEXT})\s*$")


def _parse_line(line: str) -> tuple[PlacementRecord, bool] | None:
    """The record a line holds and whether it carried a logging prefix."""
    prefix = _PREFIX_RE.match(line)
    body = (line[prefix.end():] if prefix else line).strip()
    match = _EAGER_RE.match(body)
    kind = "eager"
    if match is None:
        match = _GRAPH_RE.match(body)
        kind = "graph"
    if match is None:
        return None
    device = normalize_device(match["device"])
    record = PlacementRecord(
        op_type=match["op"],
        device=device,
        short_device=device.rsplit("/device:", 1)[1],
        node_name=match["node"] if kind == "graph" else None,
        kind=kind,
        line=line.rstrip("\r\n"),
    )
    return record, prefix is not None


def is_placement_line(line: str) -> bool:
    return _parse_line(line) is not None


def parse_log(text: str) -> list[PlacementRecord]:
    """Every placement record in ``text``, in order; other lines are ignored.

    TensorFlow writes the same placement both bare and through its logger in
    two cases (2019's eager lines, 2.21's placer lines on stdout and stderr);
    when a kind of line appears both ways, only the prefixed copies count.
    """
    parsed = [p for p in map(_parse_line, text.splitlines()) if p is not None]
    kinds_prefixed = {record.kind for record, prefixed in parsed if prefixed}
    return [record for record, prefixed in parsed if prefixed or record.kind not in kinds_prefixed]
