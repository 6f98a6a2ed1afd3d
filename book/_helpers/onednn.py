"""Which oneDNN path this TensorFlow process took, and a program run on each path.

On Linux x86, TensorFlow 2.21 turns its oneDNN CPU kernels on by default only
on CPUs with AVX512_VNNI, AVX512_BF16, AVX_VNNI or AMX (``DefaultOneDnnPolicy``
and ``IsMklEnabled`` in ``tensorflow/core/util/port.cc``; Windows and Arm builds
follow other policies); ``TF_ENABLE_ONEDNN_OPTS=0`` or ``=1``, set
before ``import tensorflow``, overrides that.  The chapters print which path
their build took and run what differs in fresh processes on both, so every
page is true on either kind of CPU.
"""
from __future__ import annotations

import os
import subprocess
import sys

from autograder.checks import hardware  # the grader's doctor reads the same facts

# The /proc/cpuinfo names of the features IsMklEnabled tests (AMX appears as three flags).
DECIDING_FLAGS = hardware.ONEDNN_DEFAULT_FEATURES
SETTINGS = ("0", "1")


def cpu_flags(wanted: tuple[str, ...] = DECIDING_FLAGS) -> list[str]:
    """The flags of ``wanted`` this CPU reports (empty where /proc/cpuinfo is unreadable)."""
    flags = hardware.cpu_info().flags
    return [flag for flag in wanted if flag in flags]


def onednn_enabled() -> bool:
    """Whether this process's TensorFlow runs its oneDNN CPU kernels."""
    import tensorflow  # noqa: F401  (imported, the answer is TensorFlow's own IsMklEnabled)

    return hardware.onednn_status().enabled


def onednn_path() -> str:
    """One line: oneDNN on or off in this process, and what decided it."""
    state = "on" if onednn_enabled() else "off"
    setting = os.environ.get("TF_ENABLE_ONEDNN_OPTS")
    if setting is not None:
        return f"oneDNN {state} (TF_ENABLE_ONEDNN_OPTS={setting} set before the import)"
    flags = cpu_flags()
    reason = f"this CPU has {', '.join(flags)}" if flags else "this CPU has none of " + ", ".join(DECIDING_FLAGS)
    return f"oneDNN {state} by default ({reason})"


def run_with_onednn(program: str, setting: str, *args: str, log_level: str = "3", timeout: int = 300) -> str:
    """Run ``program`` in a fresh Python with ``TF_ENABLE_ONEDNN_OPTS=setting``; its standard output.

    ``log_level`` is its ``TF_CPP_MIN_LOG_LEVEL`` ("0" where the program reads
    placement logs, "3" to keep start-up noise out).  Raises RuntimeError with the end of its standard error when it fails, so a
    page shows why instead of a half-empty table."""
    env = {**os.environ, "TF_ENABLE_ONEDNN_OPTS": setting, "TF_CPP_MIN_LOG_LEVEL": log_level}
    done = subprocess.run([sys.executable, "-c", program, *args], capture_output=True, text=True,
                          env=env, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"TF_ENABLE_ONEDNN_OPTS={setting}: exit {done.returncode}\n{done.stderr[-2000:]}")
    return done.stdout


def cpu_memory_info(device: str = "CPU:0") -> dict[str, int] | None:
    """``get_memory_info`` for a CPU device, or None where its allocator keeps no statistics.

    With oneDNN on, the CPU allocator is oneDNN's ``mklcpu``, which counts bytes;
    with it off it is TensorFlow's ``cpu`` allocator, which counts nothing unless
    statistics were switched on (``tensorflow/core/framework/cpu_allocator_impl.cc``),
    and ``get_memory_info`` raises ValueError."""
    import tensorflow as tf

    try:
        return tf.config.experimental.get_memory_info(device)
    except ValueError:
        return None
