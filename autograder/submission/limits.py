"""What one submission may use: the defaults, a course's own ``grading.toml``, the command line.

An instructor sets limits for the whole course, and per assignment, in
``grading.toml`` at the top of the source folder (beside ``01_op_logs/`` ...)::

    [limits]                      # every assignment
    cell_timeout_s = 300
    memory_mb = 4096

    [limits."07_custom_ops"]      # this one only (on top of the above)
    cell_timeout_s = 600

``grade``, ``check --source`` and the Gradescope runner read it through
:func:`course_limits`; a command-line flag (``--cell-timeout``...) overrides it.  A
key that is not a limit, or a value that is not a positive number, is a one-line
usage error naming the file.
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Mapping

from autograder.errors import UsageError

COURSE_FILE = "grading.toml"


@dataclass(frozen=True)
class Limits:
    """What one submission may use.  Defaults fit a TensorFlow exercise on a GPU."""

    cell_timeout_s: float = 300.0
    notebook_timeout_s: float = 1800.0
    memory_mb: int = 4096
    output_kb: int = 1024  # text and data one cell may show
    max_processes: int = 4096  # tasks: threads count, and TensorFlow starts many per process
    disk_mb: int = 1024  # the sandbox's /tmp


NAMES = tuple(f.name for f in fields(Limits))


def _checked(values: Mapping[str, Any], where: str) -> dict[str, Any]:
    out = {}
    for name, value in values.items():
        if name not in NAMES:
            raise UsageError(f"{where}: {name!r} is not a limit (limits: {', '.join(NAMES)})")
        integral = isinstance(Limits.__dataclass_fields__[name].default, int)
        if type(value) is bool or not isinstance(value, (int, float)) or not value > 0 or \
                (integral and value != int(value)):
            kind = "a positive whole number" if integral else "a positive number"
            raise UsageError(f"{where}: {name} = {value!r} must be {kind}")
        out[name] = int(value) if integral else float(value)
    return out


def course_limits(source_root: Path | str, assignment: str | None = None) -> Limits:
    """The limits ``grading.toml`` in ``source_root`` sets for ``assignment`` (defaults without one)."""
    path = Path(source_root) / COURSE_FILE
    if not path.is_file():
        return Limits()
    try:
        table = tomllib.loads(path.read_text(encoding="utf-8")).get("limits", {})
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: not valid TOML ({exc}); fix the file or remove it") from None
    if not isinstance(table, dict):
        raise UsageError(f"{path}: [limits] must be a table of limits")
    shared = {k: v for k, v in table.items() if not isinstance(v, dict)}
    limits = replace(Limits(), **_checked(shared, str(path)))
    own = table.get(assignment) if assignment else None
    if isinstance(own, dict):
        limits = replace(limits, **_checked(own, f"{path} [limits.{assignment}]"))
    return limits


def with_overrides(limits: Limits, overrides: Mapping[str, Any] | None) -> Limits:
    """``limits`` with the command line's values (None: not given) on top."""
    given = {k: v for k, v in (overrides or {}).items() if v is not None}
    return replace(limits, **_checked(given, "the command line")) if given else limits
