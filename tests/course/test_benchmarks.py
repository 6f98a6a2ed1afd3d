"""The book's benchmark pairs that chapters 2 and 3 time, run for real in a
fresh process (each needs logical devices set up before TensorFlow starts)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

DEVICE_MATMUL = textwrap.dedent("""
    import json
    import numpy as np
    import tensorflow as tf
    from autograder.checks.hardware import setup_exercise_devices
    from autograder.course.benchmarks import BENCHMARKS
    from autograder.checks.timing import measure_speedup

    setup_exercise_devices()
    bench = BENCHMARKS["device_matmul"]
    on_cpu0, on_device, make_inputs = bench.setup()
    (x,) = make_inputs()
    base, cand = on_cpu0(x), on_device(x)
    speed = measure_speedup(on_cpu0, on_device, make_inputs, check=bench.check, rtol=bench.rtol,
                            atol=bench.atol, budget_s=1)
    print(json.dumps({
        "devices": [base.device, cand.device],
        "max_abs": float(np.max(np.abs(cand.numpy()))),
        "max_diff": float(np.max(np.abs(base.numpy() - cand.numpy()))),
        "verdict": speed.verdict, "message": speed.message,
    }))
""")


def test_device_matmul_runs_on_both_devices_with_bounded_equal_outputs():
    env = {**os.environ, "AUTOGRADER_PROFILE": "cpu", "TF_CPP_MIN_LOG_LEVEL": "3"}
    done = subprocess.run([sys.executable, "-c", DEVICE_MATMUL], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert [d.rsplit("/", 1)[-1] for d in result["devices"]] == ["device:CPU:0", "device:CPU:1"]
    # tanh keeps every value in [-1, 1]: the seed's x = x @ x reached inf and NaN.
    assert 0 < result["max_abs"] <= 1.0
    assert result["max_diff"] < 1e-4
    # cpu has no threshold for this pair: outputs verified, speed reported as skipped with the reason.
    assert result["verdict"] == "skipped"
    assert "same cores" in result["message"]


def test_every_registered_pair_names_an_existing_chapter():
    from autograder.course.benchmarks import BENCHMARKS

    for name, bench in BENCHMARKS.items():
        assert (ROOT / "book" / f"{bench.chapter}.md").exists(), f"{name}: no book/{bench.chapter}.md"
