"""Local worker processes: TF_CONFIG per worker, results handed back, and no
worker left running after a failure or a timeout."""
from __future__ import annotations

import json
import os
import socket
import textwrap
import time

import pytest

from autograder.checks import distributed as dist


def _script(tmp_path, body: str):
    path = tmp_path / "worker.py"
    path.write_text(textwrap.dedent(body))
    return path


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A killed child not yet reaped is a zombie: dead for our purposes.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_free_ports_are_distinct_and_bindable():
    ports = dist.free_ports(3)
    assert len(set(ports)) == 3
    for port in ports:
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))


def test_tf_config_names_the_cluster_and_the_task():
    cluster = dist.cluster_spec([2222, 2223])
    assert cluster == {"worker": ["127.0.0.1:2222", "127.0.0.1:2223"]}
    config = json.loads(dist.tf_config(cluster, 1))
    assert config == {"cluster": cluster, "task": {"type": "worker", "index": 1}}
    with pytest.raises(ValueError, match="outside"):
        dist.tf_config(cluster, 2)


def test_each_worker_gets_its_own_tf_config_and_reports_back(tmp_path):
    script = _script(tmp_path, """
        import json, os, sys
        from autograder.checks.distributed import report
        config = json.loads(os.environ["TF_CONFIG"])
        report({"index": config["task"]["index"], "workers": config["cluster"]["worker"], "argv": sys.argv[1:]})
        print("hello from", config["task"]["index"])
    """)
    results = dist.run_workers(script, 2, args=["--steps", "3"], timeout_s=60)
    assert [r.result["index"] for r in results] == [0, 1]
    assert results[0].result["workers"] == results[1].result["workers"]
    assert all(w.startswith("127.0.0.1:") for w in results[0].result["workers"])
    assert results[1].result["argv"] == ["--steps", "3"]
    assert "hello from 1" in results[1].stdout


def test_a_failing_worker_stops_the_others_and_names_itself(tmp_path):
    script = _script(tmp_path, """
        import json, os, sys, time
        index = json.loads(os.environ["TF_CONFIG"])["task"]["index"]
        print(os.getpid(), flush=True)
        if index == 1:
            sys.exit("worker one cannot go on")
        time.sleep(600)
    """)
    workdir = tmp_path / "run"
    with dist.start_workers(script, 2, workdir=workdir) as cluster:
        with pytest.raises(dist.WorkerError, match=r"(?s)worker 1 exited with code 1.*worker one cannot go on"):
            cluster.wait(timeout_s=60)
        pids = [p.pid for p in cluster.procs]
    assert not any(_alive(pid) for pid in pids)


def test_a_hung_cluster_is_killed_at_the_deadline(tmp_path):
    script = _script(tmp_path, """
        import sys, time
        print("waiting for a peer that never comes", file=sys.stderr, flush=True)
        time.sleep(600)
    """)
    started = time.monotonic()
    with dist.start_workers(script, 2) as cluster:
        with pytest.raises(dist.WorkerError, match=r"(?s)still running after 2 s.*never comes"):
            cluster.wait(timeout_s=2)
        pids = [p.pid for p in cluster.procs]
    assert time.monotonic() - started < 30
    assert not any(_alive(pid) for pid in pids)


def test_report_prints_outside_a_launched_worker(capsys, monkeypatch):
    monkeypatch.delenv(dist.RESULT_ENV, raising=False)
    dist.report({"a": 1})
    assert json.loads(capsys.readouterr().out) == {"a": 1}


def test_bad_arguments_are_refused(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        dist.start_workers(tmp_path / "missing.py")
    with pytest.raises(ValueError, match="at least 1"):
        dist.start_workers(_script(tmp_path, "pass"), 0)


@pytest.mark.slow
def test_multi_worker_mirrored_strategy_keeps_workers_in_sync(tmp_path):
    script = _script(tmp_path, """
        import tensorflow as tf
        from autograder.checks.distributed import report
        strategy = tf.distribute.MultiWorkerMirroredStrategy()
        with strategy.scope():
            w = tf.Variable([1.0, 2.0])
        task = strategy.cluster_resolver.task_id

        @tf.function
        def step():
            def replica():
                # each worker contributes a different gradient; the all-reduce sums them
                g = tf.cast(tf.stack([task + 1, 10 * (task + 1)]), tf.float32)
                ctx = tf.distribute.get_replica_context()
                return ctx.all_reduce("SUM", g)
            return strategy.run(replica)

        total = step()
        w.assign_sub(0.1 * strategy.experimental_local_results(total)[0])
        report({"replicas": strategy.num_replicas_in_sync, "w": w.numpy().tolist()})
    """)
    results = dist.run_workers(script, 2, timeout_s=120, env={"TF_CPP_MIN_LOG_LEVEL": "2"})
    assert [r.result["replicas"] for r in results] == [2, 2]
    for r in results:
        assert r.result["w"] == pytest.approx([1.0 - 0.1 * 3, 2.0 - 0.1 * 30])


REPLICA_SPY_SCRIPT = textwrap.dedent('''
    import numpy as np
    import tensorflow as tf
    from autograder.checks.distributed import assert_ran_on_every_replica, replica_spy

    tf.config.set_logical_device_configuration(
        tf.config.list_physical_devices("CPU")[0],
        [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()])
    given = tf.distribute.MirroredStrategy(["/CPU:0", "/CPU:1"])
    other = tf.distribute.MirroredStrategy(["/CPU:0", "/CPU:1"])
    seen = []
    with given.scope():
        model = replica_spy(tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(1)]), given, seen)
    assert len(model.trainable_variables) == 2
    data = tf.data.Dataset.from_tensor_slices(np.ones((5, 3), np.float32)).batch(5)

    def messages(strategy, compiled):
        seen.clear()
        step = lambda b: strategy.run(lambda x: model(x), args=(b,))
        step = tf.function(step) if compiled else step
        for batch in strategy.experimental_distribute_dataset(data):
            step(batch)
        try:
            assert_ran_on_every_replica(seen, given, "f")
            return "ok"
        except AssertionError as error:
            return str(error)

    print("given-graph", messages(given, True))
    print("given-eager", messages(given, False))
    print("other", messages(other, True))
    seen.clear()
    model(np.ones((2, 3), np.float32))
    try:
        assert_ran_on_every_replica(seen, given, "f")
    except AssertionError as error:
        print("none", error)
''')


@pytest.mark.slow  # starts TensorFlow with two logical devices in a fresh process
def test_replica_spy_tells_which_replicas_of_which_strategy_ran(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "spy.py"
    script.write_text(REPLICA_SPY_SCRIPT)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    lines = dict(line.split(" ", 1) for line in proc.stdout.splitlines() if " " in line)
    assert lines.get("given-graph") == "ok", proc.stdout + proc.stderr[-2000:]
    assert lines.get("given-eager") == "ok"
    assert "2 times outside strategy.run" in lines.get("other", "")
    assert "1 times outside strategy.run" in lines.get("none", "")
