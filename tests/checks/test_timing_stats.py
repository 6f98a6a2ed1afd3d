"""The statistics behind a speed verdict (autograder.checks.timing_stats)."""
from __future__ import annotations

import math

from autograder.checks import timing, timing_stats
from autograder.checks.timing_stats import _relative_decision, _speedup_decision, median_ci, min_trials_for


def test_median_ci_needs_enough_values_for_an_interval():
    med, lo, hi = median_ci([], 0.95)
    assert math.isnan(med) and lo == -math.inf and hi == math.inf
    assert median_ci([3.0, 1.0, 2.0], 0.95) == (2.0, -math.inf, math.inf)
    # six values: P(B < 1) = 1/64, so [x_(1), x_(6)] covers the median with 1 - 2/64 >= 0.95
    assert median_ci([6.0, 1.0, 5.0, 2.0, 4.0, 3.0], 0.95) == (3.5, 1.0, 6.0)
    assert min_trials_for(0.95) == 6
    assert min_trials_for(0.99) > 6


def test_the_decisions_wait_until_the_interval_is_on_one_side():
    assert _speedup_decision(2.0, (3.0, 2.5, 3.5)) == "pass"
    assert _speedup_decision(2.0, (1.5, 1.0, 1.9)) == "fail"
    assert _speedup_decision(2.0, (2.1, 1.5, 2.5)) is None
    assert _speedup_decision(None, (2.0, 1.9, 2.1)) == "skipped"
    assert _relative_decision(1.5, (1.2, 1.1, 1.3), (1.2, 1.1, 1.4)) == "no-effect"
    assert _relative_decision(1.5, (1.2, 1.1, 1.3), (2.0, 1.8, 2.2)) == "pass"
    assert _relative_decision(1.5, (0.8, 0.7, 0.9), (2.0, 1.8, 2.2)) == "fail"
    assert _relative_decision(1.5, (1.0, 0.9, 1.1), (2.0, 1.8, 2.2)) is None


def test_timing_still_offers_every_name():
    for name in ("median_ci", "min_trials_for", "_stats", "_ci_or_none", "_speedup_decision", "_relative_decision"):
        assert getattr(timing, name) is getattr(timing_stats, name)
