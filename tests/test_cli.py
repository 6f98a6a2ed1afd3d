"""The command line as a user sees it: output lines and exit codes."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT, SOLUTIONS


def run_cli(*args, env=None, timeout=600) -> subprocess.CompletedProcess:
    """``python -m autograder ARGS`` from the checkout, as a user runs it."""
    return run_cli_together(list(args), env=env, timeout=timeout)[0]


def run_cli_together(*commands, env=None, timeout=600) -> list[subprocess.CompletedProcess]:
    """``run_cli`` of each of ``commands`` (argument lists), all started at once (two cores: the
    tests that run several time nothing, and each run mostly waits on TensorFlow's import)."""
    full_env = {**os.environ, **(env or {})}
    argvs = [[sys.executable, "-m", "autograder", *args] for args in commands]
    procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                              env=full_env) for argv in argvs]
    try:
        outputs = [proc.communicate(timeout=timeout) for proc in procs]
        return [subprocess.CompletedProcess(argv, proc.returncode, out, err)
                for argv, proc, (out, err) in zip(argvs, procs, outputs)]
    finally:
        for proc in procs:  # a run out of time (TimeoutExpired) is not left behind
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def test_help_lists_commands():
    proc = run_cli("--help")
    assert proc.returncode == 0
    for command in ("doctor", "check", "placement"):
        assert command in proc.stdout


def test_doctor_reports_machine_and_profile():
    proc = run_cli("doctor")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("TensorFlow 2.21.0")
    assert any(line.startswith("Hardware profile: cpu (detected)") for line in lines) or \
        any(line.startswith("Hardware profile: gpu-cc") for line in lines)
    assert "Checks on this machine:" in lines
    assert proc.stderr.strip() == "", "doctor must not leak TensorFlow's log lines"


def test_doctor_with_injected_gpu_profile():
    proc = run_cli("--profile", "gpu-cc9", "doctor", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["profile"] == "gpu-cc9" and report["profile_injected"] is True
    assert report["exercise_device"] == "/GPU:0"
    assert all(item["runs"] for item in report["checks"])


@pytest.mark.slow  # TensorFlow in two fresh processes per setting
@pytest.mark.parametrize("setting", ["0", "1"])
def test_doctor_says_whether_onednn_is_on_and_why(setting):
    """Both settings, in fresh processes, whatever this CPU's default."""
    proc, as_json = run_cli_together(["doctor"], ["doctor", "--json"], env={"TF_ENABLE_ONEDNN_OPTS": setting})
    assert proc.returncode == 0, proc.stderr
    line = next(line for line in proc.stdout.splitlines() if line.startswith("oneDNN: "))
    assert line.startswith(f"oneDNN: {'on' if setting == '1' else 'off'} (TF_ENABLE_ONEDNN_OPTS={setting}; default ")
    report = json.loads(as_json.stdout)
    assert report["onednn"]["enabled"] is (setting == "1") and report["onednn"]["measured"] is True
    assert report["cpu_vendor"] and report["cpu"]
    assert set(report["onednn"]["features"]) <= {"avx512_vnni", "avx512_bf16", "avx_vnni", "amx_tile",
                                                 "amx_int8", "amx_bf16"}


def test_unknown_profile_is_a_one_line_usage_error():
    proc = run_cli("--profile", "tpu", "doctor")
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "unknown profile 'tpu'" in proc.stderr


@pytest.mark.parametrize("make,needle", [
    (lambda tmp: tmp / "missing.ipynb", "no such file"),
    (lambda tmp: (tmp / "bad.ipynb").write_text("{oops") and tmp / "bad.ipynb", "not a Jupyter notebook"),
    (lambda tmp: tmp, "is a folder"),
])
def test_check_bad_input_exits_2_with_one_line(tmp_path, make, needle):
    proc = run_cli("check", str(make(tmp_path)))
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.strip().startswith("error: ") and needle in proc.stderr
    assert proc.stderr.strip().count("\n") == 0, "one line, no traceback"


@pytest.mark.slow
def test_check_prints_one_line_per_part_and_json():
    notebook = SOLUTIONS / "01_op_logs" / "01_op_logs.ipynb"  # no timed part: the two runs may share the CPU
    proc, as_json = run_cli_together(["check", str(notebook)], ["check", "--json", str(notebook)])
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert lines[0] == f"all tests, hidden included (tests from {notebook})", "a source notebook is its own tests"
    assert lines[1].endswith("(profile cpu)") or "(profile gpu-cc" in lines[1]
    parts = [line for line in lines if line.startswith("  PASS") or line.startswith("  FAIL")]
    assert len(parts) == 4 and all(line.startswith("  PASS") for line in parts), proc.stdout
    assert lines[-1] == "all tests, hidden included: 10/10"

    assert as_json.returncode == 0, as_json.stderr
    data = json.loads(as_json.stdout)
    assert data["score"] == data["max_score"] == 10
    assert {t["name"] for t in data["tests"]} == {
        "test-training-step-placement", "test-produced-by", "test-score-names", "test-run-strictly"}
    assert all(set(t) >= {"name", "score", "max_score", "output"} for t in data["tests"])
    assert data["extra_data"]["tests_run"]["hidden_tests"] == "included"
