"""autograder.checks.hardware: which profile a check is judged against, and the machine's CPU."""
from __future__ import annotations

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
