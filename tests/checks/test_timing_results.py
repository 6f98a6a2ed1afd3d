"""What a speed check reports and how it says it (autograder.checks.timing_results)."""
from __future__ import annotations

from autograder.checks import timing, timing_results
from autograder.checks.timing_results import SpeedResult, _fmt_ratio, _skipped_result, _speedup_message, format_seconds


def test_format_seconds_picks_the_unit():
    assert format_seconds(1.3219) == "1.32 s"
    assert format_seconds(0.0112) == "11.2 ms"
    assert format_seconds(0.00084) == "840 µs"


def test_a_ratio_gets_a_digit_more_when_it_would_read_like_the_other():
    assert _fmt_ratio(1.04) == "1.0x"
    assert _fmt_ratio(1.04, 1.0) == "1.04x"
    assert _fmt_ratio(2.0, 2.0) == "2.0x"


def test_a_skipped_result_says_what_was_still_checked():
    template = SpeedResult(verdict="", message="", min_ratio=None, profile="cpu", check="c", label="fast")
    res = _skipped_result(template, "baseline", 5, " (not timed here)")
    assert res.verdict == "skipped"
    assert res.message == "fast: speed not graded on profile cpu (not timed here); output matches baseline on 5 fresh inputs"
    assert res.to_dict()["verdict"] == "skipped" and template.verdict == ""


def test_timing_still_offers_every_name():
    for name in ("SpeedResult", "RelativeSpeedResult", "format_seconds", "_speedup_message", "_relative_message",
                 "_Mismatch", "_Trials"):
        assert getattr(timing, name) is getattr(timing_results, name)


def test_a_result_made_by_hand_words_its_interval_at_the_checks_level():
    """A result built without ``interval_confidence`` (a report's test data, an old record) is
    worded at the level a check with its ``confidence`` takes its intervals at."""
    from autograder.checks.timing_stats import look_plan

    res = SpeedResult(verdict="fail", profile="cpu", message="", min_ratio=2.0, label="fast", baseline_s=2e-3,
                      candidate_s=1.9e-3, ratio=1.05, ci_low=1.0, ci_high=1.1, trials=12)
    level = f"{look_plan(0.95).interval_confidence:.1%}"
    assert f"too slow: the {level} interval 1.00x-1.10x over 12 trials is all below 2.0x" in _speedup_message(res, 8, 20.0)
