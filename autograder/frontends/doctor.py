"""``python -m autograder doctor``: what this machine is and which checks run here."""
from __future__ import annotations

import json
import os
import platform

CHECK_KINDS = (
    # (name, runs on cpu?, what happens on cpu)
    ("placement", True, "graded on /CPU:1 of two logical CPU devices"),
    ("gradients", True, "graded everywhere"),
    ("tracing and XLA compilation", True, "graded everywhere"),
    ("dtypes and mixed-precision policies", True, "graded everywhere"),
    ("speedups real on a CPU (graph, XLA, tf.data)", True, "timed against cpu thresholds"),
    ("GPU-only speedups (mixed precision, GPU vs CPU)", False, "skipped with the reason; outputs still checked"),
    ("custom op on /GPU:0", False, "skipped; the CPU kernel is graded"),
)


def isolation_available() -> str:
    """Whether ``grade`` can give each kernel a private root here (asked of a child process)."""
    import subprocess
    import sys

    from autograder.sandbox.isolation import NO_ISOLATION_WARNING

    probe = ("import ctypes, os\n"
             "libc = ctypes.CDLL(None, use_errno=True)\n"
             "flags = 0x00020000 | 0x40000000 | (0 if os.geteuid() == 0 else 0x10000000)\n"
             "raise SystemExit(0 if libc.unshare(flags) == 0 else 1)\n")
    ok = subprocess.run([sys.executable, "-c", probe], capture_output=True).returncode == 0
    if not ok:
        return NO_ISOLATION_WARNING
    how = "as root" if os.geteuid() == 0 else "through an unprivileged user namespace"
    return f"private root per submission ({how}): only the Python environment, the autograder package and the submission are visible"


def machine_report() -> dict:
    """Facts about this machine and TensorFlow, as a dict."""
    from autograder.checks.hardware import cpu_info, onednn_status, quiet_current_profile

    profile = quiet_current_profile()

    import tensorflow as tf

    info = cpu_info()
    onednn = onednn_status()  # TensorFlow is imported now: its own answer, not a prediction

    build = tf.sysconfig.get_build_info()
    return {
        "tensorflow": tf.__version__,
        "keras": tf.keras.__version__ if hasattr(tf.keras, "__version__") else None,
        "python": platform.python_version(),
        "cpu": info.model,
        "cpu_vendor": info.vendor,
        "cpu_cores": os.cpu_count(),
        # On a CPU, oneDNN decides the kernels (_MklMatMul or MatMul) and the allocator (mklcpu or cpu).
        "onednn": onednn.to_dict(),
        "onednn_summary": onednn.describe(),
        "physical_devices": [f"{d.device_type}:{d.name.rsplit(':', 1)[-1]}" for d in tf.config.list_physical_devices()],
        "gpu": profile.gpu_name,
        "compute_capability": ".".join(map(str, profile.compute_capability)) if profile.compute_capability else None,
        "built_with_cuda": tf.test.is_built_with_cuda(),
        "cuda_version": build.get("cuda_version"),
        "cudnn_version": build.get("cudnn_version"),
        "profile": profile.name,
        "profile_injected": profile.injected,
        "exercise_device": profile.device(),
        "sandbox": isolation_available(),
        "checks": [
            {"check": name, "runs": profile.has_gpu or on_cpu,
             "how": f"graded on {profile.device()}" if profile.has_gpu else how}
            for name, on_cpu, how in CHECK_KINDS
        ],
    }


def format_report(report: dict) -> str:
    lines = [
        f"TensorFlow {report['tensorflow']} (Keras {report['keras']}), Python {report['python']}",
        f"CPU: {report['cpu']} ({report['cpu_vendor']}, {report['cpu_cores']} cores)",
        f"oneDNN: {report['onednn_summary']}",
        f"Devices: {', '.join(report['physical_devices'])}",
        "GPU: " + (f"{report['gpu']} (compute capability {report['compute_capability']})" if report["gpu"]
                   else "none found" + (" (TensorFlow built with CUDA " + str(report["cuda_version"]) + ")" if report["built_with_cuda"] else "")),
        f"Hardware profile: {report['profile']}" + (" (set by --profile/AUTOGRADER_PROFILE)" if report["profile_injected"] else " (detected)"),
        f"Exercises place work on: {report['exercise_device']}",
        f"Grading sandbox: {report['sandbox']}",
        "Checks on this machine:",
    ]
    for item in report["checks"]:
        mark = "runs " if item["runs"] else "skips"
        lines.append(f"  {mark}  {item['check']}: {item['how']}")
    return "\n".join(lines)
