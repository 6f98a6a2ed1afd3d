"""Hardware profiles: what machine the checks run on, and which checks apply.

A profile is ``cpu`` (no GPU; logical CPU devices stand in for a second
device) or ``gpu-ccN`` keyed by the GPU's major compute capability
(``gpu-cc7`` Volta/Turing, ``gpu-cc8`` Ampere/Ada, ``gpu-cc9`` Hopper,
``gpu-cc10`` Blackwell).  Detection is automatic; ``AUTOGRADER_PROFILE`` (set
by ``--profile`` on the command line) overrides it, which is also how tests
inject a GPU profile on a CPU-only machine.

A profile also records whether oneDNN is on in this process: on a CPU it
changes the kernels that run (``_MklMatMul`` or ``MatMul``/``_FusedMatMul``)
and the CPU allocator (``mklcpu``, which keeps statistics, or ``cpu``, which
keeps none).  TensorFlow 2.21 turns it on by default on Linux only when the CPU
has one of :data:`ONEDNN_DEFAULT_FEATURES` (``DefaultOneDnnPolicy`` and
``IsMklEnabled`` in ``tensorflow/core/util/port.cc``); ``TF_ENABLE_ONEDNN_OPTS``
set to 0/false or 1/true before TensorFlow starts overrides that default.
"""
from __future__ import annotations

import contextlib
import os
import platform
import sys
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
    onednn: bool | None = None
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
            "onednn": self.onednn,
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
        return Profile(name=forced, injected=True, onednn=onednn_status().enabled)
    name, cc = _detect_gpu()
    onednn = onednn_status().enabled
    if cc is None:
        return Profile(name="cpu", gpu_name=name, onednn=onednn)
    return Profile(name=profile_for_capability(cc[0]), gpu_name=name, compute_capability=tuple(cc),
                   onednn=onednn)


def quiet_current_profile() -> Profile:
    """:func:`current_profile` without TensorFlow's start-up log lines on stderr.

    For command-line tools whose own output a person reads; it only quietens
    TensorFlow if this process has not imported it yet.
    """
    if "tensorflow" not in sys.modules:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        with _stderr_discarded():  # absl prints a banner to fd 2 before any level applies
            import tensorflow  # noqa: F401
    return current_profile()


def start_tensorflow_quietly() -> None:
    """Import TensorFlow and find its devices with their log lines kept off stderr.

    For an exercise's setup cell, before ``import tensorflow``: the import logs
    its oneDNN, CUDA-stub and CPU-feature notes, and finding the devices of a
    machine without a GPU logs ``failed call to cuInit`` as an error, which only
    means that no GPU driver is installed; a Jupyter kernel shows all of it in
    the notebook.  Only file descriptor 2 during this call is silenced, and
    ``TF_CPP_MIN_LOG_LEVEL`` is left as it is, so placement logging (which needs
    level 0 at the import) still works.  Listing devices does not start the
    runtime: logical devices can still be configured afterwards.
    """
    with _stderr_discarded():
        import tensorflow as tf

        tf.config.list_physical_devices("GPU")


@contextlib.contextmanager
def _stderr_discarded():
    """File descriptor 2 points at /dev/null while the block runs (C++ logs bypass ``sys.stderr``)."""
    sys.stderr.flush()
    stderr_fd = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(stderr_fd, 2)
        os.close(stderr_fd)
        os.close(devnull)


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
    return cpu_info().model


ONEDNN_ENV = "TF_ENABLE_ONEDNN_OPTS"
# The /proc/cpuinfo flags for which TensorFlow 2.21 turns oneDNN on by default on
# Linux x86-64 (DefaultOneDnnPolicy, tensorflow/core/util/port.cc).
ONEDNN_DEFAULT_FEATURES = ("avx512_vnni", "avx512_bf16", "avx_vnni", "amx_tile", "amx_int8", "amx_bf16")


@dataclass(frozen=True)
class CpuInfo:
    """The first CPU of /proc/cpuinfo: vendor, model name and feature flags."""

    vendor: str
    model: str
    flags: frozenset[str]


def cpu_info(path: str = "/proc/cpuinfo") -> CpuInfo:
    """Vendor, model and flags of the first CPU in ``path`` (the platform's
    processor name and no flags where there is no such file)."""
    fields: dict[str, str] = {}
    try:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                if not line.strip():
                    break  # the first processor's block is enough: all cores share a model
                key, _, value = line.partition(":")
                fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    return CpuInfo(vendor=fields.get("vendor_id") or platform.machine() or "unknown",
                   model=fields.get("model name") or platform.processor() or "unknown",
                   flags=frozenset(fields.get("flags", "").split()))


def onednn_env_setting(environ: dict[str, str] | None = None) -> bool | None:
    """What ``TF_ENABLE_ONEDNN_OPTS`` forces, as TensorFlow reads it: True for
    1/true, False for 0/false (any case), None when unset or anything else
    (TensorFlow then warns and keeps its default)."""
    value = (os.environ if environ is None else environ).get(ONEDNN_ENV)
    if value is None:
        return None
    return {"1": True, "true": True, "0": False, "false": False}.get(value.lower())


@dataclass(frozen=True)
class OneDnn:
    """Whether oneDNN is on, and why."""

    enabled: bool
    default: bool            # what TensorFlow would choose from the CPU alone
    forced: bool | None      # what TF_ENABLE_ONEDNN_OPTS forces; None: not set (or not 0/1/true/false)
    features: tuple[str, ...]  # the CPU's flags among ONEDNN_DEFAULT_FEATURES
    measured: bool           # asked of TensorFlow in this process, not predicted

    @property
    def decided_by(self) -> str:
        value = os.environ.get(ONEDNN_ENV)
        if self.forced is not None:
            return f"{ONEDNN_ENV}={value}"
        if value is not None:  # TensorFlow warns and keeps its default
            return f"default for this CPU; {ONEDNN_ENV}={value!r} is not 0, 1, true or false and is ignored"
        return "default for this CPU"

    def describe(self) -> str:
        """One line: on/off, what decided it, and the CPU features behind the default."""
        feats = ", ".join(self.features) if self.features else "none of " + ", ".join(ONEDNN_DEFAULT_FEATURES)
        default = f"default {'on' if self.default else 'off'}: CPU has {feats}"
        return f"{'on' if self.enabled else 'off'} ({self.decided_by}; {default})"

    def to_dict(self) -> dict:
        return {"enabled": self.enabled, "default": self.default, "forced": self.forced,
                "decided_by": self.decided_by, "features": list(self.features), "measured": self.measured}


def onednn_default(info: CpuInfo | None = None) -> bool:
    """TensorFlow 2.21's default on this CPU: on (Linux) when it has one of
    :data:`ONEDNN_DEFAULT_FEATURES`."""
    info = info or cpu_info()
    return sys.platform.startswith("linux") and any(f in info.flags for f in ONEDNN_DEFAULT_FEATURES)


def onednn_status() -> OneDnn:
    """oneDNN in this process.  Once TensorFlow is imported the answer is
    TensorFlow's own (``IsMklEnabled``, fixed at its first call); before, it is
    predicted from the CPU's flags and the environment the same way, so asking
    never imports TensorFlow."""
    info = cpu_info()
    default = onednn_default(info)
    forced = onednn_env_setting()
    features = tuple(f for f in ONEDNN_DEFAULT_FEATURES if f in info.flags)
    if "tensorflow" in sys.modules:
        try:
            from tensorflow.python.util import _pywrap_util_port
        except ImportError:  # a build without the port helpers: fall back to the prediction
            pass
        else:
            return OneDnn(bool(_pywrap_util_port.IsMklEnabled()), default, forced, features, measured=True)
    return OneDnn(default if forced is None else forced, default, forced, features, measured=False)
