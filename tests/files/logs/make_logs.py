"""Regenerate the TensorFlow 2.21 fixture logs in this folder from a real run.

    .venv/bin/python tests/files/logs/make_logs.py

Runs ``SCENARIO`` in a fresh interpreter with ``TF_CPP_MIN_LOG_LEVEL=0`` and
saves what TensorFlow wrote, unedited: ``tf221_stdout.log`` (fd 1: the
placer's bare graph lines), ``tf221_stderr.log`` (fd 2: abseil-prefixed eager
and placer lines among TensorFlow's other messages) and ``tf221_combined.log``
(a second run with fd 2 sent to fd 1's file, as ``cmd > log 2>&1`` saves it).
The ``seed_2019_*.log`` files are typed from the course seed
``000_6427bcfb5408f369.txt`` and are not regenerated.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

SCENARIO = r'''
import tensorflow as tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
tf.debugging.set_log_device_placement(True)

with tf.device("/CPU:1"):
    w = tf.Variable(tf.ones((2, 2)), name="weights")
w.assign_add(tf.ones((2, 2)))
print("weights on", w.device, flush=True)

@tf.function
def step(x):
    with tf.name_scope("layer1"):
        y = tf.matmul(x, w, name="project")
    with tf.device("/CPU:0"):
        z = tf.nn.relu(y, name="act")
    return z

print("step sum", float(tf.reduce_sum(step(tf.ones((2, 2))))), flush=True)
'''


def run(stdout, stderr) -> None:
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "0"}
    subprocess.run([sys.executable, "-c", SCENARIO], stdout=stdout, stderr=stderr, env=env, check=True)


def main() -> None:
    with open(HERE / "tf221_stdout.log", "wb") as out, open(HERE / "tf221_stderr.log", "wb") as err:
        run(out, err)
    with open(HERE / "tf221_combined.log", "wb") as both:
        run(both, subprocess.STDOUT)


if __name__ == "__main__":
    main()
