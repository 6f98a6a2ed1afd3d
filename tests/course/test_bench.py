"""``python -m autograder bench``: output as the user sees it, and the JSON file."""
from __future__ import annotations

import json
import time

import numpy as np
import pytest

from autograder.course import benchmarks
from autograder.course.bench import default_output_path, write_json_atomic
from autograder.course.benchmarks import Benchmark
from autograder.cli import main
from autograder.checks.timing import VERDICTS


def _sleepy_pair(base_s: float, cand_s: float):
    def setup():
        def make(seconds):
            def fn(x):
                time.sleep(seconds)
                return x + 1.0

            return fn

        return make(base_s), make(cand_s), lambda: (np.random.default_rng().normal(size=3),)

    return setup


def _broken_setup():
    raise RuntimeError("no such dataset")


@pytest.fixture
def fake_pairs(monkeypatch):
    monkeypatch.setenv("AUTOGRADER_PROFILE", "cpu")  # main() sets it; monkeypatch restores it
    for name, setup in (("sleepy_fast", _sleepy_pair(0.006, 0.002)), ("sleepy_slow", _sleepy_pair(0.003, 0.003)),
                        ("broken", _broken_setup)):
        monkeypatch.setitem(benchmarks.BENCHMARKS, name, Benchmark(
            name=name, chapter="00_test", description=f"{name} pair", check="graph_vs_eager", setup=setup,
            label="fast", baseline_label="slow",
        ))


def test_bench_writes_one_json_with_machine_and_pairs(fake_pairs, tmp_path, capsys):
    out = tmp_path / "results" / "run.json"
    assert main(["--profile", "cpu", "bench", "--only", "sleepy_fast", "--budget", "3", "--out", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("sleepy_fast: fast: ") and lines[0].endswith("needed 2.0x on profile cpu) [pass]")
    assert lines[1] == f"wrote {out}"
    data = json.loads(out.read_text())
    assert data["schema"] == 1 and data["budget_s"] == 3.0
    machine = data["machine"]
    for key in ("cpu", "cpu_cores", "gpu", "compute_capability", "tensorflow", "cuda_version",
                "cudnn_version", "python", "date", "timestamp", "hostname", "profile",
                "load_average_1_5_15min", "load_average_after"):
        assert key in machine
    assert machine["profile"] == "cpu" and machine["cpu_cores"] >= 1
    pair = data["pairs"]["sleepy_fast"]
    assert pair["verdict"] == "pass" and pair["check"] == "graph_vs_eager" and pair["min_ratio"] == 2.0
    assert pair["ci_low"] <= pair["ratio"] <= pair["ci_high"] and pair["trials"] >= 6
    assert 0.005 < pair["baseline_s"] and pair["candidate_s"] < pair["baseline_s"]
    assert [p.name for p in out.parent.iterdir()] == ["run.json"]  # no temp file left behind


def test_a_failing_or_broken_pair_is_recorded_and_exits_1(fake_pairs, tmp_path, capsys):
    out = tmp_path / "run.json"
    assert main(["bench", "--only", "sleepy_slow", "broken", "--budget", "2", "--out", str(out)]) == 1
    printed = capsys.readouterr().out
    assert "broken: RuntimeError: no such dataset [error]" in printed
    pairs = json.loads(out.read_text())["pairs"]
    assert pairs["sleepy_slow"]["verdict"] == "fail"
    assert pairs["broken"] == {
        "chapter": "00_test", "description": "broken pair", "check": "graph_vs_eager", "label": "fast",
        "baseline_label": "slow", "verdict": "error", "message": "RuntimeError: no such dataset",
    }


@pytest.mark.parametrize(
    "argv, error",
    [
        (["bench", "--only", "nope"], "error: no benchmark named 'nope'; known: graph_vs_eager, "),
        (["bench", "--budget", "0"], "error: --budget must be a positive number of seconds, got 0"),
        (["bench", "--out", "."], "error: --out . is a directory; give a file name such as ./results.json"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(argv, error, capsys, monkeypatch):
    monkeypatch.setenv("AUTOGRADER_PROFILE", "cpu")
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(error) and err.count("\n") == 1


def test_default_output_path_names_the_gpu_or_the_host(tmp_path):
    meta = {"gpu": "NVIDIA H100 80GB HBM3", "hostname": "node7", "date": "2026-01-02"}
    assert default_output_path(meta, tmp_path) == tmp_path / "nvidia-h100-80gb-hbm3-2026-01-02.json"
    meta["gpu"] = None
    assert default_output_path(meta, tmp_path) == tmp_path / "node7-2026-01-02.json"


def test_atomic_write_replaces_the_file(tmp_path):
    path = tmp_path / "r.json"
    write_json_atomic(path, {"a": 1})
    write_json_atomic(path, {"a": 2})
    assert json.loads(path.read_text()) == {"a": 2}
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_a_tensorflow_pair_runs_end_to_end(tmp_path, monkeypatch):
    tf = pytest.importorskip("tensorflow")

    def steps(x):
        for _ in range(10):
            x = tf.tanh(x) * 0.9
        return x

    def setup():
        return steps, tf.function(steps), lambda: (tf.random.normal([4, 4]),)

    monkeypatch.setenv("AUTOGRADER_PROFILE", "cpu")
    monkeypatch.setitem(benchmarks.BENCHMARKS, "tiny_graph", Benchmark(
        name="tiny_graph", chapter="00_test", description="10 small ops", check="graph_vs_eager",
        setup=setup, rtol=1e-4, atol=1e-5,
    ))
    out = tmp_path / "real.json"
    main(["bench", "--only", "tiny_graph", "--budget", "2", "--out", str(out)])
    pair = json.loads(out.read_text())["pairs"]["tiny_graph"]
    assert pair["verdict"] in VERDICTS and pair["ratio"] > 0 and pair["trials"] >= 6


@pytest.mark.parametrize("name", sorted(benchmarks.BENCHMARKS))
def test_every_registered_pair_agrees_with_itself(name, monkeypatch):
    """Both sides of each pair (and of its slow mistake) give the same answer on
    fresh inputs, so ``bench`` and the reliability script time like with like."""
    pytest.importorskip("tensorflow")
    from autograder.checks.timing import compare_outputs, to_host

    monkeypatch.setenv("AUTOGRADER_PROFILE", "cpu")
    bench = benchmarks.BENCHMARKS[name]
    for setup in filter(None, (bench.setup, bench.slow_setup)):
        baseline, candidate, make_inputs = setup()
        args = make_inputs()
        assert isinstance(args, tuple)
        problem = compare_outputs(to_host(baseline(*args)), to_host(candidate(*args)), rtol=bench.rtol, atol=bench.atol)
        assert problem is None, f"{name}: {problem}"
