"""The speed engine's decisions, on functions whose cost we choose.

Sleep-based pairs decide pass/fail/inconclusive: sleeping costs the same on a
busy machine, so these tests don't depend on how loaded the CPU is.  Ratios
are only ever compared side by side inside ``measure_speedup``.
"""
from __future__ import annotations

import re
import time

import numpy as np
import pytest

from autograder.checks import timing
from autograder.checks.timing import (
    SpeedInconclusive,
    assert_speedup,
    clock_is_genuine,
    compare_outputs,
    format_seconds,
    measure_speedup,
    median_ci,
    look_plan,
    min_trials_for,
    replaced_clocks,
    to_host,
)


def sleeper(seconds: float):
    def fn(x):
        time.sleep(seconds)
        return x * 2.0

    return fn


def inputs():
    return (np.random.default_rng().normal(size=4),)


# --- verdicts -----------------------------------------------------------------


def test_three_times_faster_passes_with_the_learners_message(capsys):
    res = assert_speedup(
        sleeper(0.006), sleeper(0.002), inputs,
        check="graph_vs_eager", label="fast step", baseline_label="slow", min_ratio=2.0, profile="cpu",
    )
    assert res.verdict == "pass"
    assert 2.0 <= res.ci_low <= res.ratio <= res.ci_high
    assert res.trials in look_plan(res.confidence).looks and res.trials >= 8
    printed = capsys.readouterr().out.strip()
    assert printed == res.message
    assert re.fullmatch(r"fast step: 2\.\d ms vs 6\.\d ms slow \(\d\.\dx, needed 2\.0x on profile cpu\)", printed)


def test_equal_speed_fails_as_too_slow():
    with pytest.raises(AssertionError) as info:
        assert_speedup(sleeper(0.003), sleeper(0.003), inputs, check="xla_fused_chain",
                       label="XLA step", baseline_label="plain", min_ratio=2.0, profile="cpu")
    assert not isinstance(info.value, SpeedInconclusive)
    msg = str(info.value)
    assert re.match(r"XLA step: 3\.\d ms vs 3\.\d ms plain \((0\.9|1\.0|1\.1)x, needed 2\.0x on profile cpu\); too slow", msg)
    assert re.search(r"too slow: the 98\.5% interval \d\.\d\dx-\d\.\d\dx over \d+ trials is all below 2\.0x$", msg)


def test_ratio_at_the_threshold_with_a_tiny_budget_is_inconclusive():
    rng = np.random.default_rng(0)

    def jittery(x):  # 1-3 ms: median ratio 2.0 against 4 ms, wide spread
        time.sleep(rng.uniform(0.001, 0.003))
        return x * 2.0

    res = measure_speedup(sleeper(0.004), jittery, inputs, check="graph_vs_eager", label="candidate",
                          min_ratio=2.0, profile="cpu", budget_s=0.05, min_sample_s=0.0, min_calls=1)
    assert res.verdict == "inconclusive"
    # the budget stops it at the first look after the budget (at most 3 budgets in all)
    assert res.trials in look_plan(0.95).looks and res.trials <= 27
    assert res.ci_low < 2.0 <= res.ci_high
    with pytest.raises(SpeedInconclusive) as info:
        assert_speedup(sleeper(0.004), jittery, inputs, check="graph_vs_eager",
                       min_ratio=2.0, profile="cpu", budget_s=0.05, min_sample_s=0.0, min_calls=1)
    assert isinstance(info.value, AssertionError)
    msg = str(info.value)
    assert msg.startswith("inconclusive: candidate: ")
    assert "needed 2.0x on profile cpu" in msg and "straddles" in msg
    assert "could not decide this part" in msg and "pending, not failed" in msg
    assert "quieter" not in msg and "close other programs" not in msg  # no advice a learner cannot follow


def busy(units: int):
    """Pure-Python work on one core (no BLAS threads): cost grows with units."""

    def fn(x):
        for _ in range(units):
            sum(i * i for i in range(20_000))
        return x * 2.0

    return fn


def test_too_slow_for_an_interval_is_inconclusive_and_says_so():
    res = measure_speedup(sleeper(0.03), sleeper(0.01), inputs, check="graph_vs_eager", min_ratio=2.0,
                          profile="cpu", budget_s=0.05, min_calls=1, warmup=1)
    assert res.verdict == "inconclusive" and res.ci_low is None and res.trials < 6
    assert re.search(r"; only \d trials fit \(a 98\.5% interval needs 8\) in 0\.05 s\. The grader could not decide", res.message)


def decided(measure):
    """``measure()``'s result, measured once more when it came back inconclusive, as ``grade``
    grades an undecided speed part again: on a loaded machine CPU-bound timings are noisy, so a
    second "inconclusive" is an acceptable answer in these tests; the wrong verdict never is."""
    res = measure()
    return measure() if res.verdict == "inconclusive" else res


def test_compute_bound_pairs_never_fail_a_fast_candidate_or_pass_a_slow_one():
    fast = decided(lambda: measure_speedup(busy(4), busy(1), inputs, check="graph_vs_eager", min_ratio=1.5,
                                           profile="cpu", budget_s=4))
    assert fast.verdict in ("pass", "inconclusive"), fast.message
    assert fast.ratio > 1.5
    slow = decided(lambda: measure_speedup(busy(2), busy(2), inputs, check="graph_vs_eager", min_ratio=1.5,
                                           profile="cpu", budget_s=4))
    assert slow.verdict in ("fail", "inconclusive"), slow.message
    assert slow.ratio < 1.5


# --- correctness of what is timed ----------------------------------------------


def test_wrong_output_fails_at_once_and_names_the_difference():
    def wrong(x):
        return x * 2.0 + np.array([0.0, 0.0, 0.5, 0.0])

    res = measure_speedup(sleeper(0.003), wrong, inputs, check="graph_vs_eager",
                          label="my pipeline", baseline_label="reference", min_ratio=2.0, profile="cpu")
    assert res.verdict == "fail" and res.trials == 0 and res.ratio is None
    assert res.message == (
        f"my pipeline gives a different result from reference (warm-up call 1): {res.output_mismatch}. "
        "A speedup only counts when the answer is the same; fix the result first."
    )
    assert re.match(
        r"output differs by up to 0\.5 at index \(2,\) \(got -?[\d.e+-]+, expected -?[\d.e+-]+; "
        r"1 of 4 values outside rtol=1e-05, atol=1e-06\)",
        res.output_mismatch,
    )
    with pytest.raises(AssertionError, match="gives a different result"):
        assert_speedup(sleeper(0.003), wrong, inputs, check="graph_vs_eager", min_ratio=2.0, profile="cpu")


def test_a_cached_answer_is_caught_by_fresh_inputs():
    cache: list = []

    def cached(x):
        if not cache:
            cache.append(x * 2.0)
        return cache[0]

    res = measure_speedup(sleeper(0.002), cached, inputs, check="graph_vs_eager",
                          min_ratio=2.0, profile="cpu", warmup=1)
    assert res.verdict == "fail"
    assert "different result" in res.message and "output differs" in res.message


def test_memoizing_on_repeated_inputs_gains_nothing():
    memo: dict = {}

    def memoized(x):  # a real cache: right answers, fast on a repeated input
        key = x.tobytes()
        if key not in memo:
            time.sleep(0.003)
            memo[key] = x * 2.0
        return memo[key]

    res = measure_speedup(sleeper(0.003), memoized, inputs, check="graph_vs_eager",
                          min_ratio=2.0, profile="cpu", min_sample_s=0.01)
    assert res.calls_per_trial > 1  # several calls per sample, each on new inputs
    assert res.verdict == "fail", res.message


def test_trials_alternate_which_side_goes_first():
    log: list[str] = []

    def tagged(tag):
        def fn(x):
            log.append(tag)
            time.sleep(0.0025 if tag == "b" else 0.001)
            return x

        return fn

    res = measure_speedup(tagged("b"), tagged("c"), inputs, check="graph_vs_eager",
                          min_ratio=1.5, profile="cpu", warmup=1)
    assert res.verdict == "pass"
    timed = log[2:]  # after the single warm-up pair
    per_trial = 2 * res.calls_per_trial
    firsts = [timed[per_trial * i] for i in range(res.trials)]
    assert firsts[:4] == ["b", "c", "b", "c"]


def test_fast_functions_are_called_several_times_per_trial():
    res = measure_speedup(lambda x: x + 1, lambda x: x + 1, inputs, check="graph_vs_eager",
                          min_ratio=0.5, profile="cpu", budget_s=1, min_sample_s=0.001)
    assert 1 < res.calls_per_trial <= 1000
    assert res.trials >= 6


def test_make_inputs_must_return_a_tuple():
    with pytest.raises(TypeError, match=r"make_inputs\(\) must return a tuple .* wrap a single argument as \(x,\)"):
        measure_speedup(sleeper(0), sleeper(0), lambda: np.ones(3), check="graph_vs_eager",
                        min_ratio=2.0, profile="cpu")


# --- profiles and the thresholds table -----------------------------------------


def test_check_not_timed_on_cpu_is_skipped_but_still_verified(capsys):
    res = assert_speedup(sleeper(0.001), sleeper(0.001), inputs, check="mixed_precision_step",
                         label="mixed step", baseline_label="float32", profile="cpu")
    assert res.verdict == "skipped" and res.min_ratio is None and res.ratio is None
    assert capsys.readouterr().out.strip() == (
        "mixed step: speed not graded on profile cpu (most CPUs have no fast 16-bit matrix units, "
        "so mixed precision is graded on correctness here and on speed on a GPU); output matches "
        "float32 on 5 fresh inputs"
    )
    with pytest.raises(AssertionError, match="different result"):
        assert_speedup(sleeper(0.001), lambda x: x * 3.0, inputs, check="mixed_precision_step", profile="cpu")


def test_injected_gpu_profile_applies_its_threshold(monkeypatch):
    monkeypatch.setenv("AUTOGRADER_PROFILE", "gpu-cc8")
    res = measure_speedup(sleeper(0.004), sleeper(0.002), inputs, check="mixed_precision_step",
                          label="mixed step", baseline_label="float32")
    assert res.profile == "gpu-cc8" and res.min_ratio == 1.2
    assert res.verdict == "pass"
    assert res.message.endswith("needed 1.2x on profile gpu-cc8)")


def test_measure_when_untimed_reports_numbers_without_grading():
    res = measure_speedup(sleeper(0.004), sleeper(0.002), inputs, check="mixed_precision_step",
                          profile="cpu", measure_when_untimed=True, budget_s=2)
    assert res.verdict == "skipped"
    assert 1.5 < res.ratio < 2.5
    assert "not graded on profile cpu" in res.message


def test_unknown_check_is_a_clear_error():
    with pytest.raises(KeyError, match="no speed threshold for check 'nope'; known checks: "):
        measure_speedup(sleeper(0), sleeper(0), inputs, check="nope", profile="cpu")


# --- the clock -------------------------------------------------------------------


def test_a_patched_clock_changes_nothing_and_is_detected(monkeypatch):
    assert clock_is_genuine()
    monkeypatch.setattr(time, "perf_counter", lambda: 0.0)
    monkeypatch.setattr(time, "time", lambda: 0.0)
    assert not clock_is_genuine()
    assert replaced_clocks() == ["time.perf_counter", "time.time"]
    res = measure_speedup(sleeper(0.003), sleeper(0.003), inputs, check="graph_vs_eager",
                          min_ratio=2.0, profile="cpu")
    assert res.verdict == "fail" and res.baseline_s > 0.002
    monkeypatch.undo()
    assert clock_is_genuine()
    assert timing._clock is time.perf_counter
    monkeypatch.setattr(timing, "_clock", lambda: 0.0)
    assert replaced_clocks() == ["autograder.checks.timing._clock"]


# --- helpers ---------------------------------------------------------------------


def test_median_ci_uses_order_statistics():
    assert min_trials_for(0.99) == 8
    assert min_trials_for(0.95) == 6
    med, lo, hi = median_ci(list(range(1, 9)), 0.99)
    assert (med, lo, hi) == (4.5, 1.0, 8.0)
    med, lo, hi = median_ci(list(range(1, 21)), 0.95)
    assert (lo, hi) == (6.0, 15.0)  # P(B<6) = 0.0207 per side for n=20
    assert median_ci([1.0, 2.0], 0.99)[1] == float("-inf")


def test_to_host_forces_nested_tensors_to_numpy():
    tf = pytest.importorskip("tensorflow")
    out = to_host({"a": [tf.ones([2]), (tf.zeros([1]), 3)], "b": tf.Variable(2.0)})
    assert isinstance(out["a"][0], np.ndarray) and isinstance(out["a"][1][0], np.ndarray)
    assert out["a"][1][1] == 3 and float(out["b"]) == 2.0


def test_compare_outputs_messages():
    assert compare_outputs([np.ones(2)], [np.ones(2)], rtol=1e-5, atol=0) is None
    assert compare_outputs(np.array([np.nan]), np.array([np.nan]), rtol=1e-5, atol=0) is None
    assert compare_outputs((1.0, 2.0), (1.0,), rtol=1e-5, atol=0).startswith(
        "the output has a different structure: expected 2 value(s)"
    )
    assert compare_outputs(np.ones((2, 3)), np.ones((3, 2)), rtol=1e-5, atol=0) == (
        "output has shape (3, 2), expected (2, 3)"
    )
    assert compare_outputs({"k": np.array([b"a"])}, {"k": np.array([b"b"])}, rtol=0, atol=0).startswith(
        "output['k'] differs: got"
    )


def test_format_seconds():
    assert format_seconds(0.0112) == "11.2 ms"
    assert format_seconds(0.00084) == "840 µs"
    assert format_seconds(1.317) == "1.32 s"


# --- speed relative to a hidden reference ------------------------------------------

from autograder.checks.timing import assert_relative_speedup, measure_relative_speedup  # noqa: E402


def test_relative_candidate_as_fast_as_the_reference_passes(capsys):
    res = assert_relative_speedup(
        sleeper(0.012), sleeper(0.002), sleeper(0.002), inputs, check="graph_vs_eager", fraction=0.5,
        label="your pipeline", baseline_label="naive", reference_label="the reference", profile="cpu",
        min_sample_s=0.0, min_calls=2,
    )
    assert res.verdict == "pass"
    assert res.floor == 2.0  # the table's row, as a floor on the reference
    assert 4.0 <= res.reference_speedup <= 7.0
    assert res.needed == pytest.approx(res.reference_speedup ** 0.5)
    assert res.margin_ci_low >= 1.0 and res.reference_ci_low >= 2.0
    printed = capsys.readouterr().out.strip()
    assert printed == res.message
    assert printed.startswith("your pipeline: 2.") and "naive" in printed and "the reference is" in printed
    assert "was needed (0.5 of its speedup, counted in factors" in printed


def test_relative_candidate_no_faster_than_the_baseline_fails():
    with pytest.raises(AssertionError) as info:
        assert_relative_speedup(sleeper(0.012), sleeper(0.002), sleeper(0.012), inputs, check="graph_vs_eager",
                                fraction=0.5, label="slow one", profile="cpu", min_sample_s=0.0, min_calls=2)
    assert not isinstance(info.value, SpeedInconclusive)
    assert "too slow: the 98.5% interval of your speed relative to what was needed" in str(info.value)
    assert "is all below 1.00" in str(info.value)


def test_relative_half_way_candidate_fails_a_high_fraction_and_passes_a_low_one():
    # baseline 16 ms, reference 1 ms (16x), candidate 4 ms (4x = 16 ** 0.5)
    kw = dict(check="graph_vs_eager", profile="cpu", min_sample_s=0.0, min_calls=2)
    hi = measure_relative_speedup(sleeper(0.016), sleeper(0.001), sleeper(0.004), inputs, fraction=0.9, **kw)
    assert hi.verdict == "fail", hi.message
    lo = measure_relative_speedup(sleeper(0.016), sleeper(0.001), sleeper(0.004), inputs, fraction=0.2, **kw)
    assert lo.verdict == "pass", lo.message


def test_relative_compute_bound_numpy_never_fails_a_fast_candidate_or_passes_a_slow_one():
    def make():
        return (np.random.default_rng().normal(size=20_000),)

    def python_loop(x):
        total = 0.0
        for v in x.tolist():
            total += v * v
        return total

    def numpy_dot(x):  # not np.dot: a threaded BLAS on a busy machine is slower than a loop
        return float(np.sum(x * x))

    def numpy_sum(x):  # right, written differently
        return float(np.add.reduce(x ** 2))

    def python_sum(x):  # wrong speed, right answer
        return sum(v * v for v in x.tolist())

    kw = dict(check="graph_vs_eager", fraction=0.5, profile="cpu", rtol=1e-9, atol=1e-9)
    right = decided(lambda: measure_relative_speedup(python_loop, numpy_dot, numpy_sum, make, **kw))
    assert right.verdict in ("pass", "inconclusive"), right.message
    wrong = decided(lambda: measure_relative_speedup(python_loop, numpy_dot, python_sum, make, **kw))
    assert wrong.verdict in ("fail", "inconclusive"), wrong.message


def test_relative_wrong_output_fails_at_once_and_names_the_difference():
    def off(x):
        return x * 2.0 + 1.0

    res = measure_relative_speedup(sleeper(0.004), sleeper(0.001), off, inputs, check="graph_vs_eager",
                                   fraction=0.5, label="cand", reference_label="ref", profile="cpu")
    assert res.verdict == "fail" and res.trials == 0
    assert res.message.startswith("cand gives a different result from ref (warm-up call 1): output differs by up to 1")


def test_relative_a_cached_answer_is_caught_in_the_timed_trials():
    calls = {"n": 0}

    def goes_stale(x):
        calls["n"] += 1
        if calls["n"] <= 2:
            return x * 2.0
        return np.zeros_like(x)

    res = measure_relative_speedup(sleeper(0.004), sleeper(0.001), goes_stale, inputs, check="graph_vs_eager",
                                   fraction=0.5, profile="cpu", min_sample_s=0.0, min_calls=1)
    assert res.verdict == "fail" and res.output_mismatch
    assert "timed trial 1" in res.message


def test_relative_baseline_that_disagrees_with_the_reference_is_a_test_error():
    with pytest.raises(RuntimeError, match="the test is wrong"):
        measure_relative_speedup(lambda x: x, sleeper(0.001), sleeper(0.001), inputs, check="graph_vs_eager",
                                 fraction=0.5, profile="cpu")


def test_relative_machine_without_the_effect_is_inconclusive_not_a_pass():
    with pytest.raises(SpeedInconclusive) as info:
        assert_relative_speedup(sleeper(0.003), sleeper(0.003), sleeper(0.003), inputs, check="graph_vs_eager",
                                fraction=0.5, profile="cpu", floor=3.0, min_sample_s=0.0, min_calls=1)
    assert "does not show the speedup the part is about" in str(info.value)


def test_relative_not_required_is_skipped_but_still_verified(capsys):
    res = assert_relative_speedup(sleeper(0.002), sleeper(0.001), sleeper(0.002), inputs, check="xla_fused_chain",
                                  fraction=0.5, required=False, profile="cpu")
    assert res.verdict == "skipped" and res.trials == 0
    assert "speed not graded on profile cpu; output matches the reference solution on 5 fresh inputs" in res.message
    bad = measure_relative_speedup(sleeper(0.002), sleeper(0.001), lambda x: -x, inputs, check="xla_fused_chain",
                                   fraction=0.5, required=False, profile="cpu")
    assert bad.verdict == "fail"


def test_relative_a_none_in_the_table_never_skips_a_required_check(monkeypatch):
    from autograder.checks import thresholds

    assert thresholds.min_ratio_for("mixed_precision_step", "cpu") is None
    res = measure_relative_speedup(sleeper(0.008), sleeper(0.002), sleeper(0.012), inputs,
                                   check="mixed_precision_step", fraction=0.5, profile="cpu",
                                   min_sample_s=0.0, min_calls=1)
    assert res.verdict == "fail" and res.floor == 1.0
    # a learner who blanks a row gets the same: timed, floor 1.0
    monkeypatch.setitem(thresholds.THRESHOLDS, "graph_vs_eager", {**thresholds.THRESHOLDS["graph_vs_eager"], "cpu": None})
    res = measure_relative_speedup(sleeper(0.008), sleeper(0.002), sleeper(0.012), inputs, check="graph_vs_eager",
                                   fraction=0.5, profile="cpu", min_sample_s=0.0, min_calls=1)
    assert res.verdict == "fail" and res.floor == 1.0


def test_relative_trials_rotate_the_order_of_the_three_sides():
    order: list[str] = []

    def tagged(tag, seconds):
        def fn(x):
            time.sleep(seconds)
            order.append(tag)
            return x * 2.0
        return fn

    measure_relative_speedup(tagged("b", 0.004), tagged("r", 0.001), tagged("c", 0.001), inputs,
                             check="graph_vs_eager", fraction=0.5, profile="cpu", warmup=1,
                             min_calls=1, min_sample_s=0.0, max_sample_s=0.001)
    firsts = order[3:][::3]  # after the warm-up, one call per side per trial
    assert len(firsts) >= 6
    assert set(firsts[:6]) == {"b", "r", "c"}
    triples = {tuple(order[3 + 3 * k: 6 + 3 * k]) for k in range(6)}
    assert len(triples) == 6  # all six orders


def test_relative_fraction_must_be_in_range():
    with pytest.raises(ValueError, match="fraction"):
        measure_relative_speedup(sleeper(0.001), sleeper(0.001), sleeper(0.001), inputs, check="graph_vs_eager",
                                 fraction=1.5, profile="cpu")


# --- the shape of results, and what is called when (on a fake clock) -------------------

from autograder.checks.timing import RelativeSpeedResult, SpeedResult  # noqa: E402

SHARED_KEYS = {"verdict", "profile", "message", "check", "label", "baseline_label", "baseline_s", "candidate_s",
               "trials", "confidence", "interval_confidence", "calls_per_trial", "output_mismatch"}


def test_both_results_share_their_common_fields_and_to_dict():
    assert SpeedResult.to_dict is RelativeSpeedResult.to_dict
    speed = SpeedResult(verdict="skipped", profile="cpu", message="m", min_ratio=None)
    assert set(speed.to_dict()) == SHARED_KEYS | {"min_ratio", "ratio", "ci_low", "ci_high"}
    rel = RelativeSpeedResult(verdict="skipped", profile="cpu", message="m", fraction=0.5, floor=2.0)
    assert set(rel.to_dict()) == SHARED_KEYS | {
        "fraction", "floor", "reference_label", "reference_s", "speedup", "reference_speedup", "needed", "margin",
        "margin_ci_low", "margin_ci_high", "reference_ci_low", "reference_ci_high",
    }
    assert rel.reference_label == "the reference solution" and rel.trials == 0 and rel.speedup is None


def fake_clock(monkeypatch):
    """The module's clock replaced by one that only the functions below advance."""
    now = [0.0]
    monkeypatch.setattr(timing, "_clock", lambda: now[0])
    return now


def costing(now, log, tag, seconds):
    def fn(x):
        log.append(tag)
        now[0] += seconds
        return x * 2.0

    return fn


def test_calls_and_their_order_on_a_fake_clock(monkeypatch):
    now, log = fake_clock(monkeypatch), []

    def counted_inputs():
        log.append("in")
        return inputs()

    res = measure_speedup(costing(now, log, "b", 0.004), costing(now, log, "c", 0.001), counted_inputs,
                          check="graph_vs_eager", min_ratio=2.0, profile="cpu")
    # noiseless: the interval is [4, 4] at the first look, after 8 trials
    assert (res.verdict, res.trials) == ("pass", 8)
    assert res.ratio == pytest.approx(4.0) and res.ci_low == pytest.approx(4.0)
    assert res.calls_per_trial == 20  # 0.02 s of the fastest warm-up call (1 ms)
    assert log[:6] == ["in", "b", "c", "in", "b", "c"]  # two warm-up rounds
    reps = res.calls_per_trial
    for k in range(8):  # fresh inputs for every call, then each side's calls; the first side alternates
        trial = log[6 + 3 * reps * k: 6 + 3 * reps * (k + 1)]
        first, second = ("b", "c") if k % 2 == 0 else ("c", "b")
        assert trial == ["in"] * reps + [first] * reps + [second] * reps
    assert len(log) == 6 + 8 * 3 * reps


def test_relative_calls_and_their_order_on_a_fake_clock(monkeypatch):
    now, log = fake_clock(monkeypatch), []
    res = measure_relative_speedup(costing(now, log, "b", 0.008), costing(now, log, "r", 0.002),
                                   costing(now, log, "c", 0.002), inputs, check="graph_vs_eager", fraction=0.5,
                                   profile="cpu", min_calls=1, min_sample_s=0.0)
    assert (res.verdict, res.trials, res.calls_per_trial) == ("pass", 8, 1)
    assert (res.speedup, res.reference_speedup, res.needed, res.margin) == pytest.approx((4.0, 4.0, 2.0, 2.0))
    assert log[:6] == ["b", "r", "c"] * 2
    orders = ["".join(log[6 + 3 * k: 9 + 3 * k]) for k in range(8)]
    assert orders == ["brc", "rcb", "cbr", "bcr", "crb", "rbc", "brc", "rcb"]
    assert res.message == (
        "candidate: 2.0 ms vs 8.0 ms baseline, 4.0x faster; the reference solution is 4.0x faster (2.0 ms), "
        "so 2.0x was needed (0.5 of its speedup, counted in factors: 4.00 ** 0.5); profile cpu"
    )
