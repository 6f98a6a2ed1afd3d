"""The roofline: probes of this machine's limits and a candidate's fraction of them."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from autograder.course import roofline
from autograder.course.benchmarks import BENCHMARKS
from autograder.cli import main
from autograder.course.roofline import Peaks, Work, annotate, assess, fraction_of_peak, measure_peaks, roofline_seconds

PEAKS = Peaks(device="/CPU:0", bandwidth_gbs=10.0, copy_gbs=10.0, add_gbs=8.0,
              matmul_gflops={"float32": 100.0, "bfloat16": 400.0})


def test_fraction_of_peak():
    assert fraction_of_peak(25.0, 100.0) == 0.25
    assert fraction_of_peak(0.0, 3.0) == 0.0
    for achieved, peak in ((1.0, 0.0), (1.0, -2.0), (1.0, math.nan), (-1.0, 2.0), (math.inf, 2.0)):
        with pytest.raises(ValueError):
            fraction_of_peak(achieved, peak)


def test_work_needs_something_to_do():
    with pytest.raises(ValueError, match="flops or bytes"):
        Work()
    with pytest.raises(ValueError):
        Work(flops=-1.0, bytes=8.0)


def test_the_slower_limit_sets_the_roofline():
    # 1 GFLOP at 100 GFLOP/s = 10 ms; 10 MB at 10 GB/s = 1 ms: compute-bound.
    assert roofline_seconds(Work(flops=1e9, bytes=1e7), PEAKS) == pytest.approx((0.01, "compute"))
    # 1 MFLOP = 10 us; 100 MB = 10 ms: memory-bound.
    assert roofline_seconds(Work(flops=1e6, bytes=1e8), PEAKS) == pytest.approx((0.01, "memory"))
    # bfloat16 arithmetic is judged against the bfloat16 matmul peak
    assert roofline_seconds(Work(flops=4e9, dtype="bfloat16"), PEAKS) == pytest.approx((0.01, "compute"))
    # a dtype that was not probed falls back to float32's peak
    assert roofline_seconds(Work(flops=1e9, dtype="float16"), PEAKS) == pytest.approx((0.01, "compute"))


def test_assess_reports_achieved_throughput_and_headroom():
    out = assess(Work(flops=1e9, bytes=1e7), 0.04, PEAKS)
    assert out["achieved_gflops"] == pytest.approx(25.0)
    assert out["achieved_gbs"] == pytest.approx(0.25)
    assert out["bound"] == "compute"
    assert out["fraction_of_roofline"] == pytest.approx(0.25)
    assert out["headroom"] == pytest.approx(4.0)
    assert assess(Work(bytes=1e6), 1e-3, PEAKS)["achieved_gflops"] is None
    with pytest.raises(ValueError):
        assess(Work(flops=1.0), 0.0, PEAKS)


def test_annotate_touches_only_pairs_that_state_work():
    pairs = {"a": {"candidate_s": 0.02}, "b": {"candidate_s": 0.01}, "broken": {"verdict": "error"}}
    annotate(pairs, {"a": Work(flops=1e9), "broken": Work(bytes=1.0), "gone": Work(bytes=1.0)}, PEAKS)
    assert pairs["a"]["work"]["flops"] == 1e9
    assert pairs["a"]["roofline"]["fraction_of_roofline"] == pytest.approx(0.5)
    assert "work" not in pairs["b"] and "roofline" not in pairs["b"]
    assert "work" in pairs["broken"] and "roofline" not in pairs["broken"]  # no time, no fraction
    assert "gone" not in pairs


def test_small_probe_measures_positive_limits():
    peaks = measure_peaks("/CPU:0", array_mib=4, matmul_n=128, repeats=1)
    assert peaks.device == "/CPU:0" and peaks.matmul_n == 128 and peaks.array_mib == 4
    assert set(peaks.matmul_gflops) == {"float32", "bfloat16"}
    for value in (peaks.bandwidth_gbs, peaks.copy_gbs, peaks.add_gbs, *peaks.matmul_gflops.values()):
        assert math.isfinite(value) and value > 0
    assert peaks.bandwidth_gbs == max(peaks.copy_gbs, peaks.add_gbs)
    assert Peaks.from_dict(json.loads(json.dumps(peaks.to_dict()))) == peaks


def test_probing_a_missing_gpu_is_refused_not_faked(capsys):
    import tensorflow as tf

    if tf.config.list_physical_devices("GPU"):
        pytest.skip("this machine has a GPU, so probing it is legitimate")
    with pytest.raises(ValueError, match="sees no GPU"):
        measure_peaks("/GPU:0", array_mib=1, matmul_n=16, repeats=1)
    assert main(["roofline", "--device", "/GPU:0"]) == 2
    assert capsys.readouterr().err.strip() == "error: cannot probe /GPU:0: TensorFlow sees no GPU on this machine"


@pytest.mark.parametrize("argv, message", [
    (["roofline", "--repeats", "0"], "error: --repeats must be at least 1, got 0"),
    (["roofline", "--device", "TPU:0"], "error: --device must look like /CPU:0 or /GPU:0, got 'TPU:0'"),
])
def test_roofline_usage_errors_are_one_line(argv, message, capsys):
    assert main(argv) == 2
    assert capsys.readouterr().err.strip() == message


def test_every_stated_work_covers_at_least_its_inputs(monkeypatch):
    """A pair's work is computed from the same sizes as its setup: the
    candidate must at least read the inputs it is given."""
    monkeypatch.setenv("AUTOGRADER_PROFILE", "cpu")
    stated = [b for b in BENCHMARKS.values() if b.work is not None]
    assert {b.name for b in stated} >= {"graph_vs_eager", "xla_fused_chain", "device_matmul", "mixed_precision_step"}
    for bench in stated:
        work = bench.work()
        _, _, make_inputs = bench.setup()
        input_bytes = sum(np.asarray(x).nbytes for x in make_inputs())
        assert work.bytes >= input_bytes, f"{bench.name}: {work.bytes} bytes stated, inputs alone are {input_bytes}"
        assert work.flops > 0 and work.note


def test_bench_records_probes_and_fractions(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("AUTOGRADER_PROFILE", "cpu")
    real = roofline.measure_peaks
    monkeypatch.setattr(roofline, "measure_peaks", lambda: real(array_mib=4, matmul_n=128, repeats=1))
    out = tmp_path / "run.json"
    assert main(["bench", "--only", "graph_vs_eager", "--budget", "3", "--out", str(out)]) in (0, 1)
    data = json.loads(out.read_text())
    assert data["roofline_peaks"]["device"] == "/CPU:0"
    pair = data["pairs"]["graph_vs_eager"]
    assert pair["work"]["flops"] == BENCHMARKS["graph_vs_eager"].work().flops
    fraction = pair["roofline"]["fraction_of_roofline"]
    assert 0 < fraction and pair["roofline"]["headroom"] == pytest.approx(1 / fraction)
    assert pair["roofline"]["achieved_gflops"] == pytest.approx(pair["work"]["flops"] / pair["candidate_s"] / 1e9)
