"""Hardware profiles: what machine the checks run on, and which checks apply.

A profile is ``cpu`` (no GPU; logical CPU devices stand in for a second
device) or ``gpu-ccN`` keyed by the GPU's major compute capability
(``gpu-cc7`` Volta/Turing, ``gpu-cc8`` Ampere/Ada, ``gpu-cc9`` Hopper,
``gpu-cc10`` Blackwell).  Detection is automatic; ``AUTOGRADER_PROFILE`` (set
by ``--profile`` on the command line) overrides it, which is also how tests
inject a GPU profile on a CPU-only machine.
"""
from __future__ import annotations

import os
import platform
from dataclasses import dataclass, field

PROFILE_ENV = "AUTOGRADER_PROFILE"
KNOWN_PROFILES = ("cpu", "gpu-cc7", "gpu-cc8", "gpu-cc9", "gpu-cc10")


@dataclass(frozen=True)
class Profile:
    """The hardware a check is judged against."""

    name: str
    gpu_name: str | None = None
    compute_capability: tuple[int, int] | None = None
    injected: bool = False
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def has_gpu(self) -> bool:
        return self.name != "cpu"

    def device(self) -> str:
        """The device an exercise should place work on under this profile."""
        return "/GPU:0" if self.has_gpu else "/CPU:1"

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "gpu_name": self.gpu_name,
            "compute_capability": list(self.compute_capability) if self.compute_capability else None,
            "injected": self.injected,
        }


class ProfileError(ValueError):
    """An unknown profile name was asked for."""


def profile_for_capability(major: int) -> str:
    """Map a compute capability's major number to a profile name."""
    if major < 7:
        return "cpu"  # pre-Volta GPUs have no Tensor Cores; grade them as cpu
    return f"gpu-cc{min(major, 10)}"


def _detect_gpu() -> tuple[str | None, tuple[int, int] | None]:
    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    if not gpus:
        return None, None
    details = tf.config.experimental.get_device_details(gpus[0])
    return details.get("device_name"), details.get("compute_capability")


def current_profile() -> Profile:
    """The profile checks use now: ``AUTOGRADER_PROFILE`` if set, else detected."""
    forced = os.environ.get(PROFILE_ENV, "").strip()
    if forced:
        if forced not in KNOWN_PROFILES:
            raise ProfileError(
                f"unknown hardware profile {forced!r}; use one of {', '.join(KNOWN_PROFILES)}"
            )
        return Profile(name=forced, injected=True)
    name, cc = _detect_gpu()
    if cc is None:
        return Profile(name="cpu", gpu_name=name)
    return Profile(name=profile_for_capability(cc[0]), gpu_name=name, compute_capability=tuple(cc))


def quiet_current_profile() -> Profile:
    """:func:`current_profile` without TensorFlow's start-up log lines on stderr.

    For command-line tools whose own output a person reads; it only quietens
    TensorFlow if this process has not imported it yet.
    """
    import sys

    if "tensorflow" not in sys.modules:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        stderr_fd = os.dup(2)
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, 2)  # absl prints a banner to fd 2 before any level applies
            import tensorflow  # noqa: F401
        finally:
            os.dup2(stderr_fd, 2)
            os.close(stderr_fd)
            os.close(devnull)
    return current_profile()


def setup_exercise_devices(logical_cpus: int = 2) -> str:
    """Prepare devices for an exercise and return the device to place work on.

    With a GPU this changes nothing and returns ``/GPU:0``.  Without one it
    splits the CPU into ``logical_cpus`` logical devices so ``/CPU:1`` exists
    as a second device.  Call it before any TensorFlow op runs: TensorFlow
    refuses to change devices once its runtime has started.
    """
    import tensorflow as tf

    profile = current_profile()
    if tf.config.list_physical_devices("GPU"):
        return "/GPU:0"
    cpu = tf.config.list_physical_devices("CPU")[0]
    current = tf.config.get_logical_device_configuration(cpu)
    if current is None or len(current) < logical_cpus:
        try:
            tf.config.set_logical_device_configuration(
                cpu, [tf.config.LogicalDeviceConfiguration()] * logical_cpus
            )
        except RuntimeError:
            raise RuntimeError(
                "TensorFlow's runtime has already started, so /CPU:1 cannot be created: "
                "restart the kernel and run the setup cell first"
            ) from None
    return "/CPU:1" if not profile.has_gpu else profile.device()


def cpu_model() -> str:
    """The CPU's model name (from /proc/cpuinfo where there is one)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"
