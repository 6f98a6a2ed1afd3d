"""Reading profiler traces: a hand-built XSpace pins down the rules (which
events are ops, self time, eager vs graph), a real trace written by
TensorFlow checks them against what TensorFlow and xprof record."""
from __future__ import annotations

import json

import pytest

from autograder.checks import profiler_trace as pt
from autograder.cli import main as cli_main


def _space():
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    space = xplane_pb2.XSpace()
    host = space.planes.add(id=1, name="/host:CPU")
    names = ["outer:While", "inner/mm:_MklMatMul", "act:Relu", "ExecutorState::Process",
             "EagerLocalExecute: Sort", "EagerLocalExecute: __inference_step_7", "TFE_Py_Execute"]
    for i, name in enumerate(names, start=1):
        host.event_metadata[i].id = i
        host.event_metadata[i].name = name
    compute = host.lines.add(id=1, name="tf_Compute/1", timestamp_ns=1000)
    # (metadata id, offset ps, duration ps): a While containing a MatMul and a
    # Relu, plus a scheduler event that is not an op.
    for mid, offset, duration in [(4, 0, 200_000_000), (1, 0, 100_000_000), (2, 10_000_000, 40_000_000),
                                  (3, 60_000_000, 10_000_000), (2, 150_000_000, 30_000_000)]:
        compute.events.add(metadata_id=mid, offset_ps=offset, duration_ps=duration)
    python = host.lines.add(id=2, name="python", timestamp_ns=1000)
    for mid, offset, duration in [(7, 0, 90_000_000), (6, 0, 80_000_000), (5, 100_000_000, 5_000_000)]:
        python.events.add(metadata_id=mid, offset_ps=offset, duration_ps=duration)
    gpu = space.planes.add(id=2, name="/device:GPU:0")
    gpu.event_metadata[1].id = 1
    gpu.event_metadata[1].name = "volta_sgemm_128x64_nn"
    gpu.stat_metadata[1].id = 1
    gpu.stat_metadata[1].name = "tf_op"
    stream = gpu.lines.add(id=1, name="Stream #14(Compute)", timestamp_ns=2000)
    kernel = stream.events.add(metadata_id=1, offset_ps=0, duration_ps=7_000_000)
    kernel.stats.add(metadata_id=1, str_value="dense/MatMul:MatMul")
    gpu.lines.add(id=2, name="empty", timestamp_ns=2000).events.add(metadata_id=1, duration_ps=1)
    return space


def test_events_are_classified_as_graph_eager_and_device_ops():
    events = pt.op_events(_space())
    kinds = sorted((e.plane, e.name, e.type, e.eager) for e in events)
    assert kinds == [
        ("/device:GPU:0", "dense/MatMul", "MatMul", False),
        ("/host:CPU", "Sort", "Sort", True),
        ("/host:CPU", "act", "Relu", False),
        ("/host:CPU", "inner/mm", "_MklMatMul", False),
        ("/host:CPU", "inner/mm", "_MklMatMul", False),
        ("/host:CPU", "outer", "While", False),
    ]


def test_self_time_subtracts_nested_ops_only():
    rows = {r.op: r for r in pt.op_table(_space())}
    assert rows["While"].total_us == pytest.approx(100.0)
    assert rows["While"].self_us == pytest.approx(100.0 - 40.0 - 10.0)
    assert rows["_MklMatMul"].count == 2
    assert rows["_MklMatMul"].total_us == pytest.approx(70.0)
    assert rows["_MklMatMul"].self_us == pytest.approx(70.0)
    assert rows["Sort"].eager and not rows["While"].eager
    assert "__inference_step_7" not in rows, "a function call must not be counted on top of its ops"


def test_table_is_sorted_by_self_time_and_keyed_by_name_or_type():
    by_type = pt.op_table(_space())
    assert [r.self_us for r in by_type] == sorted((r.self_us for r in by_type), reverse=True)
    assert pt.slowest_op(_space()).op == "_MklMatMul"
    by_name = {r.op: r for r in pt.op_table(_space(), by="name")}
    assert by_name["inner/mm"].type == "_MklMatMul"
    assert by_name["dense/MatMul"].total_us == pytest.approx(7.0)
    assert [r.op for r in pt.op_table(_space(), plane="/device:GPU")] == ["MatMul"]
    assert "MatMul" not in {r.op for r in pt.op_table(_space(), plane="/host")}
    with pytest.raises(ValueError, match="'type' or 'name'"):
        pt.op_table(_space(), by="kernel")


def test_format_table_shows_shares_and_folds_the_rest():
    text = pt.format_table(pt.op_table(_space()), top=2)
    lines = text.splitlines()
    assert lines[0].split()[:2] == ["op", "count"]
    assert lines[1].startswith("_MklMatMul")
    assert "(3 more)" in lines[-1]
    assert "(eager)" in pt.format_table(pt.op_table(_space()), top=10)
    by_name = pt.format_table(pt.op_table(_space(), by="name"), max_width=6)
    assert "…er/mm" in by_name and all(len(line.split()[0]) <= 6 for line in by_name.splitlines()[1:-1])


def test_missing_and_corrupt_traces_give_clear_errors(tmp_path):
    with pytest.raises(pt.TraceNotFound, match="tf.profiler.experimental.start"):
        pt.find_xplane(tmp_path)
    run = tmp_path / "plugins" / "profile" / "2020_01_01_00_00_00"
    run.mkdir(parents=True)
    (run / "host.xplane.pb").write_bytes(b"\xff\xff not a protobuf")
    with pytest.raises(ValueError, match="not a profiler trace"):
        pt.load_xspace(tmp_path)
    assert pt.find_xplane(tmp_path) == run / "host.xplane.pb"


def test_slowest_op_of_an_empty_trace_says_so():
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    with pytest.raises(ValueError, match="no op events"):
        pt.slowest_op(xplane_pb2.XSpace())


def test_real_trace_counts_every_step_and_finds_the_dominant_op(tmp_path):
    tf = pytest.importorskip("tensorflow")
    # The matmul is ~50x the other ops' work, so a context switch during a
    # small op on a busy machine can't make that op look slower.
    x = tf.random.normal((1024, 1024))
    small = tf.random.normal((64, 64))

    @tf.function
    def step(x, small):
        y = tf.matmul(x, x)
        return y[0, 0] + tf.reduce_sum(tf.nn.relu(small))

    path = pt.profile_calls(step, x, small, logdir=tmp_path, steps=4)
    assert path == pt.find_xplane(tmp_path)
    rows = {r.op: r for r in pt.op_table(path, by="name")}
    assert {"MatMul", "Relu", "Sum"} <= set(rows)
    assert all(rows[name].count == 4 for name in ("MatMul", "Relu", "Sum"))
    assert pt.slowest_op(path, by="name").op == "MatMul"

    # xprof (TensorBoard's profile plugin) reads the same file; its per-op
    # totals must be ours.  It reports oneDNN matmuls with a doubled count, so
    # only the times are compared.
    raw = pytest.importorskip("xprof.convert.raw_to_tool_data")
    data, _ = raw.xspace_to_tool_data([str(path)], "framework_op_stats", {"use_saved_result": False})
    table = json.loads(data)[0]
    cols = [c["id"] for c in table["cols"]]
    theirs = {}
    for row in table["rows"]:
        values = dict(zip(cols, (c.get("v") for c in row["c"])))
        theirs[values["operation"]] = values
    for name in ("MatMul", "Relu", "Sum"):
        assert rows[name].total_us == pytest.approx(theirs[name]["total_time"], rel=1e-3)
        assert rows[name].self_us == pytest.approx(theirs[name]["total_self_time"], rel=1e-3)


def test_eager_ops_are_read_from_the_python_thread(tmp_path):
    tf = pytest.importorskip("tensorflow")
    x = tf.random.normal((64, 64))
    path = pt.profile_calls(lambda v: tf.sort(tf.reshape(v @ v, [-1])), x, logdir=tmp_path, steps=3)
    rows = {r.op: r for r in pt.op_table(path)}
    assert rows["MatMul"].eager and rows["MatMul"].count == 3
    with pytest.raises(ValueError, match="at least 1"):
        pt.profile_calls(lambda: None, logdir=tmp_path, steps=0)


def test_command_line_prints_the_table_and_refuses_bad_input(tmp_path, capsys):
    run = tmp_path / "plugins" / "profile" / "2020_01_01_00_00_00"
    run.mkdir(parents=True)
    (run / "host.xplane.pb").write_bytes(_space().SerializeToString())
    assert cli_main(["trace", str(tmp_path), "--top", "2"]) == 0
    out = capsys.readouterr().out
    assert "host.xplane.pb  (6 op executions)" in out and "_MklMatMul" in out and "(3 more)" in out
    assert cli_main(["trace", str(run / "host.xplane.pb"), "--by", "name", "--plane", "/device:GPU"]) == 0
    assert "dense/MatMul" in capsys.readouterr().out
    assert cli_main(["trace", str(tmp_path / "nowhere")]) == 2
    assert capsys.readouterr().err.startswith("error: ")
    assert cli_main(["trace", str(tmp_path / "plugins")]) == 2
    assert "no profiler trace" in capsys.readouterr().err


@pytest.mark.slow  # starts the TensorFlow profiler
def test_assert_profiler_stopped_stops_a_running_profiler_and_says_so(tmp_path, monkeypatch):
    import tempfile

    tf = pytest.importorskip("tensorflow")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    pt.assert_profiler_stopped()                       # nothing running: passes
    tf.profiler.experimental.start(str(tmp_path / "learner"))
    with pytest.raises(AssertionError, match="still running"):
        pt.assert_profiler_stopped()
    pt.assert_profiler_stopped()                       # it stopped the one left running
    assert list((tmp_path / "tmp").iterdir()) == [], "the probe's own trace folders are removed"
