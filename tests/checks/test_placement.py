"""The placement module: parsing every log format, capturing, the op table, the checks.

Parser tests read fixture logs in ``tests/files/logs/`` (TF 2.21's captured
by ``make_logs.py``; 2019's typed from the course seed).  Anything that runs
TensorFlow runs in a fresh interpreter with ``TF_CPP_MIN_LOG_LEVEL`` set before
the import, because this pytest process may already have imported TensorFlow
without it; one scenario process does most of the measuring to keep the run short.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from autograder.checks import clean_subprocess
from autograder.checks.placement import (
    OP_ORIGINS,
    ORIGIN_PROBES,
    VARIABLE_OPS,
    Capture,
    PlacementRecord,
    assert_ops_on_device,
    assert_tensor_on_device,
    normalize_device,
    origin_of,
    parse_log,
    probe_ops_missing,
    python_command,
    short_device,
)


ROOT = Path(__file__).resolve().parents[2]
LOGS = ROOT / "tests" / "files" / "logs"
FULL = "/job:localhost/replica:0/task:0/device:"


def log(name: str) -> str:
    return (LOGS / name).read_text()


def run_python(code: str, *args: str, level: str = "0", timeout: float = 240) -> subprocess.CompletedProcess:
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": level, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=timeout
    )


# ---------------------------------------------------------------- device names


@pytest.mark.parametrize(
    "spelling", ["/CPU:1", "/device:CPU:1", f"{FULL}CPU:1", "cpu:1", "CPU:1", "/cpu:1", "/job:localhost/device:CPU:1"]
)
def test_device_spellings_normalise_to_one_name(spelling):
    assert normalize_device(spelling) == f"{FULL}CPU:1"
    assert short_device(spelling) == "CPU:1"


def test_device_without_index_is_index_zero_and_other_tasks_stay_distinct():
    assert normalize_device("/GPU") == f"{FULL}GPU:0"
    assert normalize_device("/job:worker/replica:0/task:1/device:GPU:0") != normalize_device("/GPU:0")
    assert normalize_device("/CPU:0") != normalize_device("/CPU:1")


@pytest.mark.parametrize("bad", ["", "CPU:x", "/job:localhost/replica:0/task:0/device:", "not a device!"])
def test_bad_device_names_raise_value_error(bad):
    with pytest.raises(ValueError, match="not a device name"):
        normalize_device(bad)


# ---------------------------------------------------------------- parsing

SEED_OPS = ["VarHandleOp", "VarIsInitializedOp", "AssignVariableOp", "ReadVariableOp"]


@pytest.mark.parametrize("name", ["seed_2019_mixed.log", "seed_2019_prefixed.log", "seed_2019_bare.log"])
def test_2019_seed_log_with_and_without_prefix_gives_each_op_once(name):
    records = parse_log(log(name))
    assert [r.op_type for r in records] == SEED_OPS
    assert {(r.kind, r.device, r.short_device, r.node_name) for r in records} == {
        ("eager", f"{FULL}CPU:0", "CPU:0", None)
    }


def test_2019_mixed_log_keeps_the_prefixed_copies():
    records = parse_log(log("seed_2019_mixed.log"))
    assert all(r.line.startswith("2019-05-30 16:20:56.") for r in records)


def test_tf221_stderr_eager_lines_with_abseil_prefix():
    text = log("tf221_stderr.log")
    eager = [r for r in parse_log(text) if r.kind == "eager"]
    assert len(eager) == text.count("] Executing op ")
    assert [r.op_type for r in eager[:5]] == ["_EagerConst", "_EagerConst", "Fill", "VarHandleOp", "AssignVariableOp"]
    assert {r.short_device for r in eager if r.op_type in VARIABLE_OPS} == {"CPU:1"}
    assert any(r.op_type.startswith("__inference_step_") for r in eager)
    assert eager[0].line.startswith("I0000 ") and "execute.cc:" in eager[0].line


def test_tf221_stderr_placer_lines_carry_node_names():
    records = parse_log(log("tf221_stderr.log"))
    graph = {r.node_name: (r.op_type, r.short_device) for r in records if r.kind == "graph"}
    # the tf.function: name_scope + name= show up; the variable read stays on the variable's device
    assert graph["layer1/project"] == ("MatMul", "CPU:0")
    assert graph["layer1/project/ReadVariableOp"] == ("ReadVariableOp", "CPU:1")
    assert graph["act"] == ("Relu", "CPU:0")


def test_tf221_unrelated_lines_are_ignored():
    text = log("tf221_stderr.log")
    placement_lines = [ln for ln in text.splitlines() if "Executing op" in ln or "placer.cc" in ln]
    assert len(parse_log(text)) == len(placement_lines) < len(text.splitlines())


def test_tf221_stdout_bare_graph_lines():
    text = log("tf221_stdout.log")
    records = parse_log(text)
    assert len(records) == text.count("): /job:")
    assert {r.kind for r in records} == {"graph"}
    assert ("VarHandleOp", "CPU:1") in {(r.op_type, r.short_device) for r in records}


def _key(records: list[PlacementRecord]) -> Counter:
    return Counter((r.op_type, r.short_device, r.kind, r.node_name) for r in records)


def test_tf221_combined_streams_count_each_placement_once():
    combined = parse_log(log("tf221_combined.log"))
    assert _key(combined) == _key(parse_log(log("tf221_stderr.log")))
    assert all(not r.line.startswith(("input:", "VarHandleOp:")) for r in combined)


def test_bare_graph_lines_kept_when_only_eager_lines_are_prefixed():
    text = log("tf221_stdout.log") + log("seed_2019_prefixed.log")
    records = parse_log(text)
    assert sum(r.kind == "graph" for r in records) == log("tf221_stdout.log").count("): /job:")
    assert sum(r.kind == "eager" for r in records) == 4


def test_parser_tolerates_crlf_indentation_and_ignores_lookalikes():
    text = (
        "  Executing op MatMul in device /job:localhost/replica:0/task:0/device:GPU:0\r\n"
        "print: I said Executing op Foo in device /job:localhost/replica:0/task:0/device:CPU:0\n"
        "a note: (not a placement): here\n"
        "dense/kernel/Read: (ReadVariableOp): /job:localhost/replica:0/task:0/device:GPU:0\r\n"
    )
    records = parse_log(text)
    assert [(r.op_type, r.short_device, r.kind, r.node_name) for r in records] == [
        ("MatMul", "GPU:0", "eager", None),
        ("ReadVariableOp", "GPU:0", "graph", "dense/kernel/Read"),
    ]
    assert not records[0].line.endswith("\r")


# ---------------------------------------------------------------- Capture helpers


def test_capture_helpers_on_a_saved_log():
    cap = Capture.from_text(log("tf221_stderr.log"))
    assert {"VarHandleOp", "MatMul", "Relu"} <= cap.ops()
    assert "_Arg" not in cap.ops() and "_Retval" not in cap.ops()
    assert "MatMul" not in cap.ops(kind="eager") and "MatMul" in cap.ops(kind="graph")
    assert cap.devices_for("_EagerConst") == ["CPU:0", "CPU:1"]
    assert cap.by_op()["ReadVariableOp"] == ["CPU:1"]
    assert list(cap.by_op())[:3] == ["_EagerConst", "Fill", "VarHandleOp"]


def test_summary_table_rows_name_devices_counts_and_calls():
    table = Capture.from_text(log("seed_2019_mixed.log")).summary_table().splitlines()
    assert table[0].split()[:5] == ["op", "type", "devices", "eager", "graph"]
    row = {line.split()[0]: line.split(None, 4) for line in table[1:]}
    assert row["VarHandleOp"][1:4] == ["CPU:0", "1", "0"]
    assert "tf.Variable(initial_value)" in row["VarHandleOp"][4]
    assert row["VarIsInitializedOp"][4] == "v.is_initialized()"


def test_op_origins_come_from_the_probes_and_cover_tf_function_calls():
    probe_ops = {alt for p in ORIGIN_PROBES for entry in p.ops for alt in entry.split("|")}
    assert {op for op in probe_ops if not op.startswith("__inference_")} <= set(OP_ORIGINS)
    assert "tf.Variable(initial_value)" in OP_ORIGINS["VarHandleOp"]
    assert origin_of("__inference_train_step_1234").startswith("calling a tf.function")
    assert origin_of("NoSuchOp") is None


# ---------------------------------------------------------------- checks


def test_assert_ops_on_device_passes_when_all_variable_ops_are_there():
    assert_ops_on_device(Capture.from_text(log("tf221_stderr.log")), "/CPU:1")
    assert_ops_on_device(Capture.from_text(log("seed_2019_bare.log")), "/job:localhost/replica:0/task:0/device:CPU:0")


def test_assert_ops_on_device_names_misplaced_ops_in_one_line():
    with pytest.raises(AssertionError) as info:
        assert_ops_on_device(Capture.from_text(log("seed_2019_mixed.log")), "/CPU:1")
    message = str(info.value)
    assert message == (
        "4 variable ops ran on CPU:0, not CPU:1: VarHandleOp, VarIsInitializedOp, AssignVariableOp, "
        "ReadVariableOp — create the variables inside tf.device(device)"
    )


def test_assert_ops_on_device_every_op_and_several_wrong_devices():
    cap = Capture.from_text(log("tf221_stderr.log"))
    with pytest.raises(AssertionError) as info:
        assert_ops_on_device(cap, "GPU:0", ops=None)
    message = str(info.value)
    assert "\n" not in message and "ran off GPU:0" in message
    assert "MatMul on CPU:0" in message and "VarHandleOp on CPU:1" in message and "_Arg" not in message
    assert message.endswith("run the computation inside tf.device(device)")
    with pytest.raises(AssertionError, match=r"^1 ops ran on CPU:0, not CPU:1: MatMul"):
        assert_ops_on_device(cap, "/CPU:1", ops={"MatMul"})


def test_assert_ops_on_device_fails_on_an_empty_capture():
    with pytest.raises(AssertionError, match="no variable ops were logged"):
        assert_ops_on_device(Capture.from_text("nothing here\n"), "/CPU:1")


class _FakeVariable:
    name = "dense/kernel:0"
    device = f"{FULL}CPU:0"

    def assign(self, value):  # makes it look like a variable
        raise NotImplementedError


def test_assert_tensor_on_device_compares_any_spelling():
    assert_tensor_on_device(_FakeVariable(), "cpu:0")
    with pytest.raises(AssertionError, match=r"^variable 'dense/kernel:0' is on CPU:0, not CPU:1 — create it inside"):
        assert_tensor_on_device(_FakeVariable(), "/CPU:1")


# ---------------------------------------------------------------- commands


def test_python_command_goes_through_the_bootstrap():
    boot = ["-c", clean_subprocess._BOOT, clean_subprocess.PACKAGE_ROOT, "module", "autograder.checks.placement_boot"]
    assert python_command(["train.py", "--lr", "1"]) == [sys.executable, "-I", *boot, "train.py", "--lr", "1"]
    assert python_command(["python", "-u", "-X", "dev", "-c", "pass"]) == [
        sys.executable, "-I", "-u", "-X", "dev", *boot, "-c", "pass"]
    assert python_command(["/opt/py/bin/python3.11", "-m", "pkg"]) == ["/opt/py/bin/python3.11", "-I", *boot, "-m", "pkg"]
    for bad in ([], ["ls", "-l"], ["python", "-u"]):
        with pytest.raises(ValueError):
            python_command(bad)


# ---------------------------------------------------------------- live TensorFlow (fresh interpreters)

SCENARIO = r'''
import io, json, sys
import tensorflow as tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
from autograder.checks import placement as pl

out = {}

def on_cpu1():
    print("hello from fn")
    with tf.device("/CPU:1"):
        v = tf.Variable([1.0, 2.0], name="v")
        v.assign_add([1.0, 1.0])
        return v, v.read_value()

cap = pl.capture(on_cpu1)
v = cap.result[0]
out["cpu1"] = {"by_op": cap.by_op(), "text_has_print": "hello from fn" in cap.text, "v_device": v.device}
try:
    pl.assert_ops_on_device(cap, "/CPU:1"); out["cpu1"]["assert"] = "ok"
except AssertionError as e:
    out["cpu1"]["assert"] = str(e)
pl.assert_tensor_on_device(v, "/CPU:1")
try:
    pl.assert_tensor_on_device(v, "/CPU:0")
except AssertionError as e:
    out["tensor_msg"] = str(e)

def on_default():
    w = tf.Variable(1.0, name="w")
    return w.numpy()
try:
    pl.assert_ops_on_device(pl.capture(on_default), "/CPU:1")
except AssertionError as e:
    out["default_msg"] = str(e)

sys.stdout.flush()
real_stdout = sys.stdout
sys.stdout = io.StringIO()  # what a Jupyter kernel does: sys.stdout is not fd 1
jcap = pl.capture(lambda: (print("jupyter print"), tf.identity(tf.ones((2,)) * 3.0))[1])
seen_by_notebook = sys.stdout.getvalue()
sys.stdout = real_stdout
out["jupyter"] = {"echoed": seen_by_notebook, "text": "jupyter print" in jcap.text, "ops": sorted(jcap.ops())}
def boom():
    print("before the error")
    raise KeyError("boom")
try:
    pl.capture(boom)
except KeyError:
    out["raised"] = True
print("after the error", flush=True)

with tf.device("/CPU:0"):
    a = tf.random.uniform((2,))
    v0 = tf.Variable([1.0, 2.0])
def copy_eager():
    with tf.device("/CPU:1"):
        return a * 2.0, v0 * 3.0
ecap = pl.capture(copy_eager)
out["eager_copy"] = [(r.op_type, r.short_device) for r in ecap.records if r.kind == "eager"]

@tf.function
def mixed(x):
    with tf.device("/CPU:1"):
        return v0 * x
fcap = pl.capture(mixed, a)
out["graph_copy"] = [(r.node_name, r.op_type, r.short_device) for r in fcap.records if r.kind == "graph"]
out["all_ops"] = sorted(ecap.ops() | fcap.ops())

def soft():
    with tf.device("/GPU:0"):
        return tf.constant([1.0]) + 1.0
scap = pl.capture(soft)
out["soft"] = {"gpus": len(tf.config.list_physical_devices("GPU")), "add": scap.devices_for("AddV2"),
               "result": scap.result.device}

# A placement check must not depend on whether the function already ran (issue 12, item 7).
def make_named():
    @tf.function
    def named(x):
        with tf.device("/CPU:1"):
            return tf.identity(x * 2.0, name="doubled")
    return named

def graph_view(cap):
    return sorted((r.node_name, r.op_type, r.short_device) for r in cap.records
                  if r.kind == "graph" and r.op_type not in pl.PLUMBING_OPS)

def verdict(cap):
    try:
        pl.assert_ops_on_device(cap, "/CPU:1", ops=["Mul"])
        return "ok"
    except AssertionError as e:
        return str(e)

never_called, called_before = make_named(), make_named()
with pl._fds_redirected():  # keeps its placement lines out of the output other tests read
    called_before(a)  # a self-check call before the graded one
views = {}
for label, fn in (("never_called", never_called), ("called_before", called_before)):
    fresh = pl.capture(fn, a, fresh=True)
    views[label] = {"graph": graph_view(fresh), "verdict": verdict(fresh)}
views["stale"] = {"graph": graph_view(pl.capture(called_before, a)), "verdict": None}
views["fresh_again"] = {"graph": graph_view(pl.capture(called_before, a, fresh=True)), "verdict": None}
with pl._fds_redirected():
    v_after = tf.Variable([5.0, 6.0])
pl.forget_placements()
views["variable_kept"] = v_after.numpy().tolist()
out["history"] = views

out["probes"] = {}
for probe in pl.ORIGIN_PROBES:
    seen = pl.measure_probe(probe).ops()
    out["probes"][probe.call] = {"missing": pl.probe_ops_missing(probe, seen),
                                 "unexpected": sorted(set(probe.absent) & seen), "seen": sorted(seen)}

outer = pl.capture(lambda: pl.capture(lambda: tf.ones((2,)) * 5.0))
out["nested"] = [sorted(outer.result.ops()), sorted(outer.ops())]

out["flag_after_captures"] = tf.debugging.get_log_device_placement()
tf.debugging.set_log_device_placement(False)
with pl._fds_redirected() as late:
    tf.ones((5,)) - 1.0
out["logs_after_set_false"] = "Executing op" in late["stderr"]

with open(sys.argv[1], "w") as fh:
    json.dump(out, fh)
'''


@pytest.fixture(scope="module")
def scenario(tmp_path_factory):
    result_file = tmp_path_factory.mktemp("placement") / "scenario.json"
    done = run_python(SCENARIO, str(result_file))
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(result_file.read_text()), done


def test_capture_sees_variable_ops_on_a_logical_device(scenario):
    out, _ = scenario
    by_op = out["cpu1"]["by_op"]
    for op in ("VarHandleOp", "AssignVariableOp", "AssignAddVariableOp", "ReadVariableOp"):
        assert by_op[op] == ["CPU:1"], by_op
    assert out["cpu1"]["assert"] == "ok"
    assert out["cpu1"]["v_device"].endswith("device:CPU:1")
    assert out["tensor_msg"].startswith("variable 'v:0' is on CPU:1, not CPU:0")


def test_capture_check_names_variables_left_on_the_default_device(scenario):
    out, _ = scenario
    assert out["default_msg"] == (
        "3 variable ops ran on CPU:0, not CPU:1: VarHandleOp, AssignVariableOp, ReadVariableOp"
        " — create the variables inside tf.device(device)"
    )


def test_capture_keeps_and_echoes_what_fn_printed(scenario):
    out, done = scenario
    assert out["cpu1"]["text_has_print"]
    stdout = done.stdout.splitlines()
    assert stdout.count("hello from fn") == 1 and "after the error" in stdout and "before the error" in stdout
    # placement lines are not echoed: all CPU:1 work ran inside captures, which swallowed its lines
    assert "device:CPU:1" not in done.stdout and "device:CPU:1" not in done.stderr


def test_capture_works_when_sys_stdout_is_not_fd_1(scenario):
    out, _ = scenario
    assert out["jupyter"]["echoed"] == "jupyter print\n"
    assert out["jupyter"]["text"]
    assert "Identity" in out["jupyter"]["ops"]


def test_capture_propagates_errors_and_leaves_logging_on(scenario):
    out, _ = scenario
    assert out["raised"] is True
    assert out["flag_after_captures"] is True
    # TF 2.21 keeps logging after set_log_device_placement(False) (the module docstring says so)
    assert out["logs_after_set_false"] is True


def test_nested_captures_each_get_their_own_lines(scenario):
    inner, outer = scenario[0]["nested"]
    assert "Mul" in inner and "Mul" not in outer


def test_cross_device_copy_is_not_an_op_in_the_log(scenario):
    out, _ = scenario
    # eager: the read runs on the variable's device, the consumer on CPU:1; no copy op is logged
    assert out["eager_copy"] == [["_EagerConst", "CPU:1"], ["Mul", "CPU:1"], ["ReadVariableOp", "CPU:0"],
                                 ["_EagerConst", "CPU:1"], ["Mul", "CPU:1"]]
    graph = {node: [op, dev] for node, op, dev in out["graph_copy"]}
    assert graph["ReadVariableOp"] == ["ReadVariableOp", "CPU:0"]
    assert graph["mul"] == ["Mul", "CPU:1"]
    assert not [op for op in out["all_ops"] if any(w in op for w in ("Send", "Recv", "Copy"))]


def test_soft_placement_runs_gpu_scoped_work_on_cpu_without_a_gpu(scenario):
    out, _ = scenario
    if out["soft"]["gpus"]:
        pytest.skip("this machine has a GPU; soft placement does not kick in")
    assert out["soft"]["add"] == ["CPU:0"]
    assert out["soft"]["result"].endswith("device:CPU:0")


def test_fresh_capture_gives_the_same_verdict_whether_or_not_the_function_already_ran(scenario):
    views = scenario[0]["history"]
    assert views["never_called"]["graph"], "a first call logs the function's nodes"
    assert ["doubled", "Identity", "CPU:1"] in views["never_called"]["graph"]
    assert views["called_before"] == views["never_called"]
    assert views["never_called"]["verdict"] == "ok"
    # without fresh=True a function that already ran logs only its call, not its nodes
    assert views["stale"]["graph"] == []
    # and a fresh capture can be repeated
    assert views["fresh_again"]["graph"] == views["never_called"]["graph"]
    assert views["variable_kept"] == [5.0, 6.0]


@pytest.mark.parametrize("call", [p.call for p in ORIGIN_PROBES])
def test_op_origins_are_measured(scenario, call):
    measured = scenario[0]["probes"][call]
    assert measured["missing"] == [], f"{call} logged {measured['seen']}"
    assert measured["unexpected"] == [], f"{call} logged {measured['unexpected']}"


def test_variable_creation_no_longer_logs_var_is_initialized(scenario):
    seen = scenario[0]["probes"]["tf.Variable(initial_value)"]["seen"]
    assert "VarIsInitializedOp" not in seen and {"VarHandleOp", "AssignVariableOp"} <= set(seen)


def test_probe_ops_missing_understands_alternatives_and_wildcards():
    probe = ORIGIN_PROBES[-1]
    assert probe_ops_missing(probe, {"__inference_f_42"}) == []
    matmul = next(p for p in ORIGIN_PROBES if "MatMul|_MklMatMul" in p.ops)
    assert probe_ops_missing(matmul, {"_MklMatMul", "ReadVariableOp"}) == []
    assert probe_ops_missing(matmul, {"ReadVariableOp"}) == ["MatMul|_MklMatMul"]


REFUSAL = """
import tensorflow as tf
from autograder.checks import placement as pl
{before}
called = []
try:
    pl.capture(lambda: called.append(tf.ones((2,)) + 1))
except pl.PlacementLoggingOff as e:
    print("OFF", repr(str(e)), called == [])
"""


@pytest.mark.parametrize(
    ("level", "before", "reason"),
    [
        ("2", "", "TensorFlow was imported with TF_CPP_MIN_LOG_LEVEL='2'"),
        ("0", "tf.ones((2,)) * 2.0", "runtime started before placement logging was turned on"),
    ],
)
def test_capture_refuses_when_logging_cannot_work(level, before, reason):
    done = run_python(REFUSAL.format(before=before), level=level)
    line = [ln for ln in done.stdout.splitlines() if ln.startswith("OFF")]
    assert line, done.stderr[-2000:]
    assert reason in line[0] and "restart the kernel" in line[0] and "start_logging()" in line[0]
    assert line[0].endswith("True") and "\\n" not in line[0]


def test_capture_command_runs_a_script_with_logging_on(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(
        """
        import sys
        import tensorflow as tf
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
        with tf.device("/CPU:1"):
            v = tf.Variable([1.0], name="v")
        print("args", sys.argv[1:], __name__)
        sys.exit(3)
        """
    ))
    code = (
        "import sys, json\nfrom autograder.checks.placement import capture_command\n"
        "c = capture_command([sys.argv[1], '--flag', 'x'], env={'TF_CPP_MIN_LOG_LEVEL': '3'})\n"
        "print(json.dumps({'rc': c.result, 'by_op': c.by_op(), 'out': c.stdout}))\n"
    )
    done = run_python(code, str(script), level="3")
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["rc"] == 3
    assert result["by_op"]["VarHandleOp"] == ["CPU:1"]
    assert "args ['--flag', 'x'] __main__" in result["out"]


def test_capture_in_a_real_jupyter_kernel():
    """In IPython TF logs eager ops bare on stdout, and ipykernel 7 forwards fds 1 and 2 to
    the notebook; capture must still see them, and cells outside a capture must show none."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "import os\nos.environ['TF_CPP_MIN_LOG_LEVEL'] = '0'\n"
            "from autograder.checks import placement as pl\npl.start_logging()\nimport tensorflow as tf"
        ),
        nbformat.v4.new_code_cell(
            "def work():\n    print('printed by work')\n    return tf.Variable([1.0, 2.0]).numpy()\n"
            "cap = pl.capture(work)\nprint(sorted(cap.ops(kind='eager')), 'printed by work' in cap.text)"
        ),
        nbformat.v4.new_code_cell(
            "import sys\nprint('partial', end='')\n"
            "@tf.function\ndef f(a):\n    return a * 2.0\n"
            "print(' line', f(tf.Variable([1.0]) + 1.0).numpy())\nprint('to stderr', file=sys.stderr)"
        ),
    ]
    where = {"metadata": {"path": str(ROOT)}}
    nbclient.NotebookClient(nb, timeout=180, kernel_name="python3", resources=where).execute()

    def shown(cell: int, name: str = "stdout") -> str:
        outputs = nb.cells[cell].outputs
        return "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream" and o["name"] == name)

    assert shown(1).splitlines() == [
        "printed by work",
        "['AssignVariableOp', 'Identity', 'ReadVariableOp', 'VarHandleOp', '_EagerConst'] True",
    ]
    assert shown(2) == "partial line [4.]\n"
    assert shown(2, "stderr") == "to stderr\n"
