"""The typed messages between the grader, the judge process and the sandbox worker.

Each message is one JSON line ``{"type": NAME, ...fields}``.  :func:`decode`
accepts a line only when its type is one the reader expects and every field has
exactly the declared type (no extra fields, none missing): a worker or judge
that sends anything else is reported, never trusted.

Who sends what::

    grader -> judge : Start, Part, ProbeResult, Stop
    judge  -> grader: Ready, Probe, Verdict
    worker -> grader: Test, ProbeResult, Checked (after End), PartResult (an in-kernel test's result), Done
    grader -> worker: the job (first line, JSON), Source, Serve, Probe, End
"""
from __future__ import annotations

import json
import typing
from dataclasses import asdict, dataclass, fields

PROBE_OPS = ("call", "run", "stage", "staged")
VERDICTS = ("passed", "failed", "inconclusive", "error")


class ProtocolError(ValueError):
    """A line that is not the message its reader expects."""


@dataclass(frozen=True)
class Start:
    """The assignment's locked cells, run once in the judge before any part; its working folder."""
    cells: list
    cwd: str


def temporary_folder(cwd: str) -> str:
    """The judge's temporary folder: ``<its working folder>-tmp``, made by the judge at start and
    removed by the grader with the working folder (what ``tempfile`` makes in the judge then
    ends with the judge, not in the machine's temporary folder)."""
    return cwd.rstrip("/") + "-tmp"


@dataclass(frozen=True)
class Ready:
    """The judge ran the locked cells (``errors``: the ones that raised, by label and message)."""
    errors: list


@dataclass(frozen=True)
class Part:
    """Judge this part: ``source`` is its hidden test (a ``__ag_judge`` function); ``submission``
    names the submission's code (a digest), from which the judge seeds its hidden draws."""
    grade_id: str
    source: str
    submission: str = ""


@dataclass(frozen=True)
class Probe:
    """One request for the learner's kernel (see :mod:`autograder.checks.probe`)."""
    op: str
    code: str
    args: str
    key: str = ""
    index: int = 0


@dataclass(frozen=True)
class ProbeResult:
    """The kernel's response text (decoded by the judge) and the wall time the worker measured."""
    response: str
    wall_s: float


@dataclass(frozen=True)
class Verdict:
    """The judge's finding for a part: a status from :data:`VERDICTS` and what to tell the learner."""
    status: str
    message: str


@dataclass(frozen=True)
class Stop:
    """No more parts: the judge exits."""


@dataclass(frozen=True)
class Test:
    """The worker reached a part's test cell; ``pending``: a limit an earlier cell broke ("" if none)."""
    grade_id: str
    pending: str


@dataclass(frozen=True)
class Source:
    """A test cell to run inside the kernel (a part without a judge: nbgrader's in-kernel guarantee)."""
    source: str


@dataclass(frozen=True)
class Serve:
    """Answer Probe messages for this part until End."""


@dataclass(frozen=True)
class End:
    """The judge is done with this part: run the next cells."""


@dataclass(frozen=True)
class Checked:
    """After a judged part: what the integrity check found changed in the kernel ([] if nothing)."""
    problems: list


@dataclass(frozen=True)
class PartResult:
    """An in-kernel test's result, scored by the worker (``autograder.results.results.TestResult``'s fields)."""
    name: str
    score: float
    max_score: float
    output: str
    visibility: str
    status: str


@dataclass(frozen=True)
class Done:
    """The worker finished: why it stopped early ("" if it did not), its sandbox note, the hardware profile."""
    note: str
    sandbox: dict
    profile: typing.Optional[dict] = None


_TYPES = {cls.__name__: cls for cls in (Start, Ready, Part, Probe, ProbeResult, Verdict, Stop, Test, Source,
                                        Serve, End, Checked, PartResult, Done)}
_HINTS: dict[type, dict] = {}


def encode(message) -> str:
    """``message`` as one JSON line (with its newline)."""
    return json.dumps({"type": type(message).__name__, **asdict(message)}) + "\n"


def _field_ok(value, hint) -> bool:
    if hint is str:
        return type(value) is str
    if hint is int:
        return type(value) is int
    if hint is float:
        return type(value) in (float, int)
    if hint is list:
        return type(value) is list and all(type(v) is str for v in value)
    if hint is dict:
        return type(value) is dict
    if hint == typing.Optional[dict]:
        return value is None or type(value) is dict
    return False


def decode(line, *expected: type):
    """The message ``line`` holds, if it is one of ``expected``; :class:`ProtocolError` otherwise."""
    try:
        data = json.loads(line)
    except (ValueError, TypeError):
        raise ProtocolError("not a JSON line") from None
    if type(data) is not dict or type(data.get("type")) is not str:
        raise ProtocolError("a message is an object with a type")
    cls = _TYPES.get(data.pop("type"))
    if cls is None or cls not in expected:
        raise ProtocolError(f"unexpected message (expected {', '.join(c.__name__ for c in expected)})")
    hints = _HINTS.setdefault(cls, typing.get_type_hints(cls))
    names = {f.name for f in fields(cls)}
    required = {f.name for f in fields(cls) if f.default is f.default_factory is __import__("dataclasses").MISSING}
    if not set(data) <= names or not required <= set(data):
        raise ProtocolError(f"{cls.__name__} has fields {sorted(names)}")
    for name, value in data.items():
        if not _field_ok(value, hints[name]):
            raise ProtocolError(f"{cls.__name__}.{name} has the wrong type")
    message = cls(**data)
    if cls is Probe and message.op not in PROBE_OPS:
        raise ProtocolError(f"unknown probe op {message.op!r}")
    if cls is Verdict and message.status not in VERDICTS:
        raise ProtocolError(f"unknown verdict {message.status!r}")
    if cls is ProbeResult:
        message = ProbeResult(message.response, float(message.wall_s))
    if cls is PartResult:
        message = PartResult(message.name, float(message.score), float(message.max_score), message.output,
                             message.visibility, message.status)
    return message
