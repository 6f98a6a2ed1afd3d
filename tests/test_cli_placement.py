"""``python -m autograder placement`` as a user sees it: stdout lines and exit codes."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "tests" / "files" / "logs"


def autograder(*args: str, cwd: Path = ROOT, timeout: float = 240) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)
    return subprocess.run(
        [sys.executable, "-m", "autograder", "placement", *args],
        capture_output=True, text=True, cwd=cwd, env=env, timeout=timeout,
    )


def rows(stdout: str) -> dict[str, list[str]]:
    """Table rows by op type: [devices, eager, graph, calls]."""
    lines = stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("op type"))
    table = {}
    for line in lines[header + 1:]:
        op, rest = line.split(None, 1)
        devices, _, tail = rest.partition("  ")  # devices never hold two spaces
        table[op] = [devices.strip(), *tail.split(None, 2)]
    return table


def test_parse_the_2019_seed_log():
    done = autograder("--parse", str(LOGS / "seed_2019_mixed.log"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0].endswith("seed_2019_mixed.log: 4 op types from 4 eager and 0 graph placement lines")
    table = rows(done.stdout)
    assert list(table) == ["VarHandleOp", "VarIsInitializedOp", "AssignVariableOp", "ReadVariableOp"]
    assert table["VarIsInitializedOp"] == ["CPU:0", "1", "0", "v.is_initialized()"]
    assert table["VarHandleOp"][3].startswith("tf.Variable(initial_value);")
    assert "v.numpy()" in table["ReadVariableOp"][3]


def in_process(capsys, *args: str) -> tuple[int, str, str]:
    """The same entry point as ``python -m autograder``, without paying its start-up again."""
    from autograder.cli import main

    code = main(["placement", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_parse_a_tf221_log_with_both_streams(capsys):
    code, out, err = in_process(capsys, "--parse", str(LOGS / "tf221_combined.log"))
    assert code == 0, err
    table = rows(out)
    assert table["VarHandleOp"][:3] == ["CPU:1", "1", "1"]
    assert table["_EagerConst"][0] == "CPU:0, CPU:1"
    assert table["MatMul"][:3] == ["CPU:0", "0", "1"]
    assert table["__inference_step_19"][3].startswith("calling a tf.function")
    assert table["Relu"][3] == "-"
    assert "_Arg" not in table and "_Retval" not in table


def test_parse_json_is_machine_readable():
    done = autograder("--json", "--parse", str(LOGS / "tf221_stdout.log"))
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["returncode"] is None and report["lines"] == 40
    ops = {row["op_type"]: row for row in report["ops"]}
    assert ops["ReadVariableOp"] == {
        "op_type": "ReadVariableOp", "devices": ["CPU:1"], "count": 1, "eager_count": 0, "graph_count": 1,
        "calls": ops["ReadVariableOp"]["calls"],
    }
    assert "v.read_value()" in ops["ReadVariableOp"]["calls"]


USAGE_ERRORS = [
    (["--parse", "no/such/run.log"], "error: no such log file: no/such/run.log"),
    ([], "error: nothing to do: give a script"),
    (["--parse", "tests"], "error: tests is not a file"),
    (["--parse", "x.log", "--", "python", "x.py"], "error: give either --parse FILE or a command"),
    (["--", "ls", "-l"], "error: cannot turn on placement logging in 'ls'"),
    (["missing_script.py"], "error: no such script: missing_script.py"),
]


@pytest.mark.parametrize(("args", "message"), USAGE_ERRORS[:2])
def test_usage_errors_exit_2_with_one_line(args, message):
    done = autograder(*args)
    assert done.returncode == 2
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1 and done.stderr.startswith(message), done.stderr


@pytest.mark.parametrize(("args", "message"), USAGE_ERRORS[2:])
def test_more_usage_errors_through_cli_main(args, message, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    code, out, err = in_process(capsys, *args)
    assert code == 2
    assert out == "" and len(err.splitlines()) == 1 and err.startswith(message), err


def test_a_log_without_placement_lines_exits_1(tmp_path, capsys):
    empty = tmp_path / "quiet.log"
    empty.write_text("just a training run\nloss 0.3\n")
    code, out, err = in_process(capsys, "--parse", str(empty))
    assert code == 1 and out == ""
    assert err.strip() == (
        f"no placement lines found in {empty}: save the log with both streams: python script.py > run.log 2>&1"
    )


SCRIPT = """
import sys
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
with tf.device("/CPU:1"):
    w = tf.Variable(tf.ones((2, 2)), name="w")
print("trained", sys.argv[1:])
sys.exit(int(sys.argv[1]))
"""


def test_run_a_failing_script(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(SCRIPT))
    done = autograder("--", "python", str(script), "4")
    assert done.returncode == 1
    assert done.stdout.splitlines()[0].startswith(f"python {script} 4: ")
    table = rows(done.stdout)
    assert table["VarHandleOp"][:3] == ["CPU:1", "1", "1"]
    assert table["AssignVariableOp"][0] == "CPU:1"
    assert "trained" not in done.stdout  # the script's own output is not mixed into the table
    assert done.stderr.startswith("the command exited with status 4")


def test_a_command_that_runs_too_long_exits_1(capsys):
    code, out, err = in_process(capsys, "--timeout", "0.5", "--", "python", "-c", "import time; time.sleep(30)")
    assert code == 1 and out == ""
    assert err == "error: the command ran longer than 0.5 s; raise --timeout or run less\n"
