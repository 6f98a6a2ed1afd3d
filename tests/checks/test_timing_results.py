"""What a speed check reports and how it says it (autograder.checks.timing_results)."""
from __future__ import annotations

from autograder.checks import timing, timing_results
from autograder.checks.timing_results import SpeedResult, _fmt_ratio, _skipped_result, format_seconds


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
