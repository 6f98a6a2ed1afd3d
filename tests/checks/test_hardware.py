"""autograder.checks.hardware: which profile a check is judged against, and the machine's CPU."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from autograder.checks import hardware


@pytest.mark.parametrize("major,name", [(6, "cpu"), (7, "gpu-cc7"), (8, "gpu-cc8"), (9, "gpu-cc9"),
                                        (10, "gpu-cc10"), (12, "gpu-cc10")])
def test_capability_maps_to_a_profile(major, name):
    assert hardware.profile_for_capability(major) == name


def test_an_injected_profile_wins_and_says_so(monkeypatch):
    monkeypatch.setenv(hardware.PROFILE_ENV, "gpu-cc9")
    profile = hardware.current_profile()
    assert profile.name == "gpu-cc9" and profile.injected and profile.has_gpu
    assert profile.device() == "/GPU:0"
    assert profile.to_dict()["injected"] is True


def test_an_unknown_profile_is_refused(monkeypatch):
    monkeypatch.setenv(hardware.PROFILE_ENV, "gpu-cc99")
    with pytest.raises(hardware.ProfileError, match="use one of cpu"):
        hardware.current_profile()


def test_detected_profile_on_this_machine_matches_tensorflow(monkeypatch):
    """Asked of a child process, so this collection does not import TensorFlow."""
    code = ("import tensorflow as tf\nfrom autograder.checks import hardware\n"
            "p = hardware.current_profile()\n"
            "print(p.name, bool(tf.config.list_physical_devices('GPU')), p.device())")
    env = {k: v for k, v in __import__("os").environ.items() if k != hardware.PROFILE_ENV}
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    name, has_gpu, device = out.stdout.split()[-3:]
    assert (name == "cpu") == (has_gpu == "False")
    assert device == ("/GPU:0" if has_gpu == "True" else "/CPU:1")


def test_cpu_model_reads_a_name():
    model = hardware.cpu_model()
    assert isinstance(model, str) and model.strip()


CPUINFO = """processor\t: 0
vendor_id\t: {vendor}
model name\t: {model}
flags\t\t: fpu sse2 avx avx2 fma {extra}

processor\t: 1
vendor_id\t: SomethingElse
model name\t: not the first
flags\t\t: avx512_vnni
"""


def _cpuinfo(tmp_path, vendor="AuthenticAMD", model="AMD EPYC 7R13 Processor", extra=""):
    path = tmp_path / "cpuinfo"
    path.write_text(CPUINFO.format(vendor=vendor, model=model, extra=extra))
    return hardware.cpu_info(str(path))


def test_cpu_info_reads_the_first_processor(tmp_path):
    info = _cpuinfo(tmp_path, extra="avx512f")
    assert (info.vendor, info.model) == ("AuthenticAMD", "AMD EPYC 7R13 Processor")
    assert "avx2" in info.flags and "avx512f" in info.flags
    assert "avx512_vnni" not in info.flags, "flags of the second processor leaked into the first"


def test_cpu_info_without_proc_cpuinfo_still_names_something(tmp_path):
    info = hardware.cpu_info(str(tmp_path / "absent"))
    assert info.model.strip() and info.vendor.strip() and info.flags == frozenset()


@pytest.mark.parametrize("extra,default", [
    ("", False),                      # AVX2 only: AMD before Zen 4, many Intel CPUs
    ("avx512f avx512bw", False),      # AVX-512 without VNNI (Skylake-SP) is not enough
    ("avx512_vnni", True),            # Cascade Lake and later
    ("avx512_bf16", True),
    ("avx_vnni", True),               # Alder Lake and later client CPUs
    ("amx_tile amx_int8 amx_bf16", True),
])
def test_onednn_default_follows_tensorflows_feature_list(tmp_path, monkeypatch, extra, default):
    monkeypatch.setattr(hardware.sys, "platform", "linux")
    assert hardware.onednn_default(_cpuinfo(tmp_path, extra=extra)) is default


def test_onednn_is_off_by_default_off_linux(tmp_path, monkeypatch):
    monkeypatch.setattr(hardware.sys, "platform", "win32")
    assert hardware.onednn_default(_cpuinfo(tmp_path, extra="avx512_vnni")) is False


@pytest.mark.parametrize("value,forced", [
    ("0", False), ("false", False), ("FALSE", False), ("1", True), ("true", True), ("True", True),
    ("", None), ("yes", None), (None, None),
])
def test_the_environment_variable_is_read_as_tensorflow_reads_it(value, forced):
    env = {} if value is None else {hardware.ONEDNN_ENV: value}
    assert hardware.onednn_env_setting(env) is forced


def test_an_ignored_value_is_named_in_the_description(monkeypatch):
    # The prediction path: once this process imported TensorFlow, its answer is fixed
    # by the setting the suite started with (=0 or =1), whatever the variable says now.
    monkeypatch.delitem(sys.modules, "tensorflow", raising=False)
    monkeypatch.setenv(hardware.ONEDNN_ENV, "yes")
    status = hardware.onednn_status()
    assert status.forced is None and status.enabled is status.default
    assert "'yes' is not 0, 1, true or false" in status.describe()


ONEDNN_PROBE = """
import json, sys
from autograder.checks import hardware
before = hardware.onednn_status()          # predicted: TensorFlow not imported yet
assert "tensorflow" not in sys.modules
import tensorflow as tf
tf.debugging.set_log_device_placement(True)
tf.matmul(tf.ones([8, 8]), tf.ones([8, 8]))
after = hardware.onednn_status()           # TensorFlow's own answer
print(json.dumps({"before": before.to_dict(), "after": after.to_dict(), "summary": after.describe(),
                  "profile": hardware.current_profile().to_dict()}))
"""


@pytest.mark.parametrize("setting", ["0", "1"])
def test_onednn_status_matches_the_kernel_a_fresh_process_runs(setting):
    """Both settings on any machine: the prediction before import, TensorFlow's
    answer after it and the kernel the placement log shows must all agree."""
    env = {k: v for k, v in __import__("os").environ.items() if k != hardware.PROFILE_ENV}
    env.update(TF_CPP_MIN_LOG_LEVEL="0", **{hardware.ONEDNN_ENV: setting})
    out = subprocess.run([sys.executable, "-c", ONEDNN_PROBE], capture_output=True, text=True, env=env,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    report = __import__("json").loads(out.stdout.strip().splitlines()[-1])
    on = setting == "1"
    assert report["before"]["measured"] is False and report["after"]["measured"] is True
    assert report["before"]["enabled"] is on and report["after"]["enabled"] is on
    assert report["after"]["forced"] is on and report["after"]["decided_by"] == f"TF_ENABLE_ONEDNN_OPTS={setting}"
    assert report["profile"]["onednn"] is on
    assert report["summary"].startswith("on (" if on else "off (")
    kernels = {line.split("Executing op ")[1].split()[0] for line in out.stderr.splitlines()
               if "Executing op" in line and "MatMul" in line}
    assert kernels == ({"_MklMatMul"} if on else {"MatMul"}), kernels


def test_the_default_matches_tensorflows_own_answer_here():
    """Unset: the prediction from /proc/cpuinfo is what TensorFlow chose on this CPU."""
    code = ("from autograder.checks import hardware\nimport tensorflow\n"
            "s = hardware.onednn_status()\nprint(s.enabled, s.default, s.forced)")
    env = {k: v for k, v in __import__("os").environ.items() if k != hardware.ONEDNN_ENV}
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    enabled, default, forced = out.stdout.split()[-3:]
    assert forced == "None" and enabled == default, out.stdout


def test_starting_tensorflow_quietly_hides_its_start_up_log_but_not_placement_logging():
    """An exercise's setup cell: level 0 (for placement logging), TensorFlow started through
    ``start_tensorflow_quietly``.  Its import notes and, without a GPU, ``failed call to cuInit``
    never reach stderr; placement logging still works, and stderr works again afterwards."""
    code = ("import os, sys\nos.environ['TF_CPP_MIN_LOG_LEVEL'] = '0'\n"
            "from autograder.checks.hardware import setup_exercise_devices, start_tensorflow_quietly\n"
            "start_tensorflow_quietly()\n"
            "import tensorflow as tf\nfrom autograder.checks.placement import capture, start_logging\n"
            "start_logging()\ndevice = setup_exercise_devices()\n"
            "with tf.device(device):\n    c = capture(lambda: tf.add(tf.ones(2), 1.0), echo=False)\n"
            "print('ops', sorted(c.ops('eager')), 'on', {r.device[-5:] for r in c.records if r.op_type == 'AddV2'})\n"
            "os.write(2, b'stderr still works\\n')\n")
    env = {k: v for k, v in os.environ.items() if k not in (hardware.PROFILE_ENV, "TF_CPP_MIN_LOG_LEVEL")}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stderr == "stderr still works\n", proc.stderr[-3000:]
    assert "AddV2" in proc.stdout and ("PU:1" in proc.stdout or "PU:0" in proc.stdout), proc.stdout
