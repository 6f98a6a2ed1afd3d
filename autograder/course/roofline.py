"""How close is a fast version to this machine's limit?  A simple roofline.

A speedup says the candidate beats the baseline; it does not say whether the
candidate is any good.  The roofline answers "how much faster could it still
get?": one call of the candidate must do ``flops`` of arithmetic and move at
least ``bytes`` to and from memory, so it cannot take less than
``max(flops / peak_flops, bytes / peak_bandwidth)``.  The peaks come from two
probes run with TensorFlow on the same device (a bandwidth probe of large
elementwise ops, and a square matmul per dtype), so the limit is what
TensorFlow itself can reach on this machine, not a figure from a data sheet.

``python -m autograder bench`` runs the probes once and records, for each pair
that states its work (``Benchmark.work``), the candidate's achieved GFLOP/s and
GB/s and its fraction of that limit.  ``python -m autograder roofline`` prints
the probes alone.
"""
from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from autograder.errors import UsageError

# Matmul dtypes probed everywhere; float16 is added on a GPU, where it is the
# mixed-precision dtype (on a CPU float16 matmuls are emulated, so its "peak"
# would teach nothing).
MATMUL_DTYPES = ("float32", "bfloat16")


@dataclass(frozen=True)
class Work:
    """What one call of a benchmark's candidate must do, at the least."""

    flops: float = 0.0  # floating-point operations (a multiply-add counts 2)
    bytes: float = 0.0  # bytes that must cross between memory and the chip
    dtype: str = "float32"  # dtype of the arithmetic: which matmul peak applies
    note: str = ""  # how the numbers were counted, for the reader

    def __post_init__(self) -> None:
        if self.flops < 0 or self.bytes < 0 or (self.flops == 0 and self.bytes == 0):
            raise ValueError(f"Work needs flops or bytes > 0, got flops={self.flops}, bytes={self.bytes}")


@dataclass
class Peaks:
    """The probes' results on one device: best observed GB/s and GFLOP/s."""

    device: str
    bandwidth_gbs: float  # the better of the copy and add probes
    copy_gbs: float
    add_gbs: float
    matmul_gflops: dict[str, float] = field(default_factory=dict)  # dtype -> GFLOP/s
    array_mib: float = 0.0
    matmul_n: int = 0
    seconds: float = 0.0  # how long probing took

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "Peaks":
        return cls(**data)


def fraction_of_peak(achieved: float, peak: float) -> float:
    """``achieved / peak`` (1.0 means at the peak).  Both must be positive:
    a zero or negative peak means the probe did not run, and a fraction of it
    would be meaningless."""
    if not (isinstance(peak, (int, float)) and math.isfinite(peak) and peak > 0):
        raise ValueError(f"peak must be a positive number, got {peak!r}")
    if not (isinstance(achieved, (int, float)) and math.isfinite(achieved) and achieved >= 0):
        raise ValueError(f"achieved must be a non-negative number, got {achieved!r}")
    return achieved / peak


def roofline_seconds(work: Work, peaks: Peaks) -> tuple[float, str]:
    """The least time one call can take on the probed device, and which limit
    sets it ("compute" or "memory")."""
    compute_peak = peaks.matmul_gflops.get(work.dtype) or peaks.matmul_gflops.get("float32")
    t_compute = work.flops / (compute_peak * 1e9) if work.flops and compute_peak else 0.0
    t_memory = work.bytes / (peaks.bandwidth_gbs * 1e9) if work.bytes else 0.0
    return (t_compute, "compute") if t_compute >= t_memory else (t_memory, "memory")


def assess(work: Work, seconds: float, peaks: Peaks) -> dict[str, Any]:
    """Achieved throughput of one call that took ``seconds``, and its fraction
    of the roofline (``headroom`` = how many times faster it could still get)."""
    if not (seconds > 0 and math.isfinite(seconds)):
        raise ValueError(f"seconds must be positive, got {seconds!r}")
    t_min, bound = roofline_seconds(work, peaks)
    fraction = fraction_of_peak(t_min, seconds)
    return {
        "achieved_gflops": work.flops / seconds / 1e9 if work.flops else None,
        "achieved_gbs": work.bytes / seconds / 1e9 if work.bytes else None,
        "bound": bound,
        "roofline_s": t_min,
        "fraction_of_roofline": fraction,
        "headroom": 1.0 / fraction if fraction > 0 else math.inf,
    }


# --- probes ----------------------------------------------------------------------


def _best_seconds(call: Callable[[], Any], repeats: int) -> float:
    """Fastest of ``repeats`` timed calls after one untimed warm-up (tracing):
    load from other processes only ever adds time, so the minimum is the
    device's own speed."""
    call()
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return best


def _last_level_cache_mib() -> float:
    """The CPU's largest cache in MiB from sysfs (0 when unknown)."""
    sizes = []
    for path in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        text = path.read_text().strip().upper()
        scale = {"K": 1 / 1024, "M": 1.0, "G": 1024.0}.get(text[-1:], None)
        try:
            sizes.append(float(text[:-1]) * scale if scale else float(text) / 2**20)
        except ValueError:
            continue
    return max(sizes, default=0.0)


def measure_peaks(device: str | None = None, *, array_mib: float | None = None,
                  matmul_n: int | None = None, repeats: int = 20,
                  dtypes: Iterable[str] | None = None) -> Peaks:
    """Run the probes on ``device`` (default: /GPU:0 when TensorFlow sees a
    GPU, else /CPU:0).  Arrays default to twice the CPU's last-level cache
    (64 to 512 MiB) so the copy comes from memory, not cache, and to 512 MiB on
    a GPU; matmuls to n=1024 on a CPU and 8192 on a GPU.  CPU calls are kept
    short on purpose: on a shared machine a long call is always interrupted by
    other processes, while the fastest of many short calls is not."""
    import tensorflow as tf

    have_gpu = bool(tf.config.list_physical_devices("GPU"))
    on_gpu = have_gpu if device is None else "GPU" in device.upper()
    if on_gpu and not have_gpu:
        # tf.device would quietly fall back to the CPU and the numbers would lie.
        raise ValueError(f"cannot probe {device}: TensorFlow sees no GPU on this machine")
    device = device or ("/GPU:0" if on_gpu else "/CPU:0")
    array_mib = array_mib or (512.0 if on_gpu else min(512.0, max(64.0, 2 * _last_level_cache_mib())))
    matmul_n = matmul_n or (8192 if on_gpu else 1024)
    dtypes = tuple(dtypes) if dtypes is not None else MATMUL_DTYPES + (("float16",) if on_gpu else ())
    if array_mib <= 0 or matmul_n <= 0 or repeats < 1:
        raise ValueError("array_mib, matmul_n and repeats must be positive")
    started = time.perf_counter()
    n = max(1, int(array_mib * 2**20 / 4))
    # Several passes per call, so the sync at the end costs little.  The
    # passes are a tf.range loop (a while loop in the graph): written as a
    # Python loop, Grappler would fold eight multiplies by constants into one
    # and turn eight adds into one AddN, and the bytes counted would be wrong.
    steps = 8 if on_gpu else 2

    with tf.device(device):
        a = tf.random.uniform([n])
        b = tf.random.uniform([n])

        @tf.function
        def scale(x):  # reads n floats, writes n: STREAM's "copy" with a multiply
            for _ in tf.range(steps):
                x = x * 0.999
            return x[:1]

        @tf.function
        def add(x, y):  # reads 2n, writes n: STREAM's "add"
            for _ in tf.range(steps):
                x = x + y
            return x[:1]

        t_copy = _best_seconds(lambda: scale(a).numpy(), repeats)
        t_add = _best_seconds(lambda: add(a, b).numpy(), repeats)
        del a, b

        flops: dict[str, float] = {}
        for name in dtypes:
            dtype = tf.as_dtype(name)
            x = tf.cast(tf.random.uniform([matmul_n, matmul_n], -1, 1), dtype)
            y = tf.cast(tf.random.uniform([matmul_n, matmul_n], -1, 1), dtype)

            # On Ampere and later GPUs TensorFlow runs float32 matmuls as TF32 by
            # default; the probe measures what TensorFlow does, as the pairs do.
            @tf.function
            def matmul(p, q):
                # The sum forces every element and returns 4 bytes, not n*n.
                return tf.reduce_sum(tf.cast(tf.matmul(p, q), tf.float32))

            t_mm = _best_seconds(lambda: matmul(x, y).numpy(), repeats)
            flops[name] = 2.0 * matmul_n**3 / t_mm / 1e9
    copy_gbs = steps * 2 * n * 4 / t_copy / 1e9
    add_gbs = steps * 3 * n * 4 / t_add / 1e9
    return Peaks(device=device, bandwidth_gbs=max(copy_gbs, add_gbs), copy_gbs=copy_gbs, add_gbs=add_gbs,
                 matmul_gflops=flops, array_mib=float(array_mib), matmul_n=matmul_n,
                 seconds=time.perf_counter() - started)


def annotate(pairs: dict[str, dict], works: dict[str, Work], peaks: Peaks) -> None:
    """Add ``work`` and ``roofline`` (``assess`` of the candidate's time) to
    each results entry in ``pairs`` whose benchmark stated its work."""
    for name, work in works.items():
        entry = pairs.get(name)
        if entry is None:
            continue
        entry["work"] = asdict(work)
        seconds = entry.get("candidate_s")
        if seconds:
            entry["roofline"] = assess(work, seconds, peaks)


def format_peaks(peaks: Peaks) -> str:
    lines = [
        f"device: {peaks.device}",
        f"memory bandwidth: {peaks.bandwidth_gbs:.1f} GB/s (copy {peaks.copy_gbs:.1f}, add {peaks.add_gbs:.1f}; "
        f"{peaks.array_mib:g} MiB arrays)",
    ]
    for dtype, gflops in peaks.matmul_gflops.items():
        lines.append(f"matmul {dtype}: {gflops:.1f} GFLOP/s (n={peaks.matmul_n})")
    return "\n".join(lines)
