"""Reading the results files that ``python -m autograder bench`` writes.

The book's "Hardware and results" page shows every file under
``book/data/results/``, grouped by the hardware that produced it.  This module
checks each file against the schema ``bench`` writes (so a hand-edited or
half-written file stops the build with its name, instead of becoming a wrong
plot) and turns files into table rows.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autograder.checks.timing import VERDICTS

# The recorded measurements the book reads (a course checkout's book/data/results).
RESULTS_DIR = Path(__file__).resolve().parents[2] / "book" / "data" / "results"
SCHEMA = 1

MACHINE_KEYS = ("cpu", "cpu_cores", "gpu", "tensorflow", "python", "date", "timestamp", "profile",
                "profile_injected", "load_average_1_5_15min")
PAIR_KEYS = ("chapter", "description", "check", "label", "baseline_label", "verdict", "message")
TIMED_KEYS = ("baseline_s", "candidate_s", "ratio", "ci_low", "ci_high", "trials")


class ResultsFileError(ValueError):
    """A results file does not have the shape ``bench`` writes."""


@dataclass
class ResultsFile:
    path: Path
    data: dict[str, Any]
    hardware: str = field(init=False)

    def __post_init__(self) -> None:
        self.hardware = hardware_label(self.data["machine"])

    @property
    def machine(self) -> dict[str, Any]:
        return self.data["machine"]

    @property
    def on_gpu(self) -> bool:
        return bool(self.machine.get("gpu"))


def onednn_label(machine: dict[str, Any]) -> str:
    """"oneDNN on"/"oneDNN off" and what decided it, as the file recorded it
    ("oneDNN not recorded" for files written before ``bench`` recorded it)."""
    onednn = machine.get("onednn")
    if not isinstance(onednn, dict) or "enabled" not in onednn:
        return "oneDNN not recorded"
    how = "forced" if onednn.get("forced") is not None else "default"
    return f"oneDNN {'on' if onednn['enabled'] else 'off'} ({how})"


def hardware_label(machine: dict[str, Any]) -> str:
    """The GPU's name, or the CPU's model, core count and oneDNN setting when
    there was no GPU (on a CPU, oneDNN on or off runs different kernels: a
    different machine as far as the numbers go)."""
    if machine.get("gpu"):
        cc = machine.get("compute_capability")
        return f"{machine['gpu']}" + (f" (compute capability {cc})" if cc else "")
    onednn = onednn_label(machine).split(" (")[0]
    return f"{machine['cpu']} ({machine['cpu_cores']} cores, no GPU, {onednn})"


def _positive(value: Any) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


def validate(data: Any, name: str = "results file") -> None:
    """Raise :class:`ResultsFileError` naming the first thing wrong with ``data``."""
    if not isinstance(data, dict):
        raise ResultsFileError(f"{name}: not a JSON object")
    if data.get("schema") != SCHEMA:
        raise ResultsFileError(f"{name}: schema {data.get('schema')!r}, this code reads schema {SCHEMA}")
    machine, pairs = data.get("machine"), data.get("pairs")
    if not isinstance(machine, dict):
        raise ResultsFileError(f"{name}: no 'machine' object")
    missing = [k for k in MACHINE_KEYS if k not in machine]
    if missing:
        raise ResultsFileError(f"{name}: machine lacks {', '.join(missing)}")
    if machine["profile_injected"]:
        # A profile forced with --profile times this machine against another
        # machine's thresholds: its numbers must not be shown as that hardware's.
        raise ResultsFileError(f"{name}: recorded with an injected profile ({machine['profile']}); "
                               "record results without --profile")
    if bool(machine["gpu"]) != (machine["profile"] != "cpu"):
        raise ResultsFileError(f"{name}: profile {machine['profile']!r} does not match gpu {machine['gpu']!r}")
    onednn = machine.get("onednn")  # optional: files before it was recorded lack it
    if onednn is not None and not (isinstance(onednn, dict) and isinstance(onednn.get("enabled"), bool)):
        raise ResultsFileError(f"{name}: machine.onednn must be an object with a boolean 'enabled'")
    if not _positive(data.get("budget_s")):
        raise ResultsFileError(f"{name}: budget_s must be a positive number")
    if not isinstance(pairs, dict) or not pairs:
        raise ResultsFileError(f"{name}: no benchmark pairs")
    for pair_name, entry in pairs.items():
        where = f"{name}: pair {pair_name!r}"
        if not isinstance(entry, dict):
            raise ResultsFileError(f"{where}: not an object")
        missing = [k for k in PAIR_KEYS if k not in entry]
        if missing:
            raise ResultsFileError(f"{where} lacks {', '.join(missing)}")
        if entry["verdict"] not in (*VERDICTS, "error"):
            raise ResultsFileError(f"{where}: unknown verdict {entry['verdict']!r}")
        if entry["verdict"] == "error" or entry.get("ratio") is None:
            continue  # an error, or a wrong output found before timing
        missing = [k for k in TIMED_KEYS if k not in entry]
        if missing:
            raise ResultsFileError(f"{where} lacks {', '.join(missing)}")
        if not all(_positive(entry[k]) for k in ("baseline_s", "candidate_s", "ratio", "ci_low", "ci_high")):
            raise ResultsFileError(f"{where}: times, ratio and interval must be positive numbers")
        if not entry["ci_low"] <= entry["ratio"] <= entry["ci_high"]:
            raise ResultsFileError(f"{where}: ratio {entry['ratio']} outside its interval "
                                   f"[{entry['ci_low']}, {entry['ci_high']}]")
    peaks = data.get("roofline_peaks")
    if peaks is not None and "error" not in peaks:
        if not (_positive(peaks.get("bandwidth_gbs")) and peaks.get("matmul_gflops")
                and all(_positive(v) for v in peaks["matmul_gflops"].values())):
            raise ResultsFileError(f"{name}: roofline_peaks needs a positive bandwidth_gbs and matmul_gflops")


def load_all(results_dir: Path = RESULTS_DIR) -> list[ResultsFile]:
    """Every ``*.json`` under ``results_dir``, validated, oldest first.
    A file that does not validate raises with its path."""
    files = []
    for path in sorted(Path(results_dir).glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ResultsFileError(f"{path}: not valid JSON (line {exc.lineno})") from None
        validate(data, str(path))
        files.append(ResultsFile(path, data))
    return sorted(files, key=lambda f: f.machine["timestamp"])


def by_hardware(files: list[ResultsFile]) -> dict[str, list[ResultsFile]]:
    """Files grouped by hardware label: GPUs first (the course's subject), then CPUs."""
    groups: dict[str, list[ResultsFile]] = {}
    for f in sorted(files, key=lambda f: (not f.on_gpu, f.hardware)):
        groups.setdefault(f.hardware, []).append(f)
    return groups


def _fmt_ratio(entry: dict) -> str:
    if entry.get("ratio") is None:
        return "—"
    level = f" ({entry['confidence']:.1%})" if entry.get("confidence") else ""
    return f"{entry['ratio']:.2f}× [{entry['ci_low']:.2f}, {entry['ci_high']:.2f}]{level}"


def _fmt_seconds(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def _fmt_roofline(roof: dict) -> tuple[str, str]:
    """(achieved throughput against the binding limit, fraction of that limit)."""
    if not roof:
        return "—", "—"
    if roof["bound"] == "compute" and roof.get("achieved_gflops") is not None:
        achieved = f"{roof['achieved_gflops']:.3g} GFLOP/s (compute-bound)"
    else:
        achieved = f"{roof['achieved_gbs']:.3g} GB/s (memory-bound)"
    if roof["headroom"] <= 1:
        # The probe underestimated the peak; the page says why.
        return achieved, f"{roof['fraction_of_roofline']:.0%}: at the probed limit"
    return achieved, f"{roof['fraction_of_roofline']:.1%}: could be {roof['headroom']:.3g}× faster"


def pair_rows(f: ResultsFile) -> list[dict[str, str]]:
    """One row per pair of one file: what was compared, the ratio with its
    interval, and (where the pair stated its work) the roofline columns."""
    rows = []
    for name, entry in f.data["pairs"].items():
        achieved, fraction = _fmt_roofline(entry.get("roofline") or {})
        rows.append({
            "pair": name,
            "compared": f"{entry['baseline_label']} → {entry['label']}",
            "speedup [interval] (level)": _fmt_ratio(entry),
            "verdict": entry["verdict"],
            "candidate time": _fmt_seconds(entry.get("candidate_s")),
            "achieved": achieved,
            "of the roofline": fraction,
        })
    return rows


def markdown_table(rows: list[dict[str, str]]) -> str:
    """A Markdown table from rows of equal keys ("|" in a cell is escaped)."""
    if not rows:
        return ""
    keys = list(rows[0])
    esc = lambda s: str(s).replace("|", "\\|")  # noqa: E731
    lines = ["| " + " | ".join(keys) + " |", "| " + " | ".join("---" for _ in keys) + " |"]
    lines += ["| " + " | ".join(esc(r[k]) for k in keys) + " |" for r in rows]
    return "\n".join(lines)
