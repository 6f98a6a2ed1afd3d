"""The statistics behind a speed verdict (autograder.checks.timing_stats)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from autograder.checks import timing, timing_stats
from autograder.checks.timing_stats import (
    LOOKS, _relative_decision, _speedup_decision, crossing_probability, look_plan, median_ci, min_trials_for,
    order_index,
)


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
    for name in ("median_ci", "min_trials_for", "_stats", "_ci_or_none", "_speedup_decision", "_relative_decision",
                 "look_plan", "crossing_probability", "order_index", "LOOKS"):
        assert getattr(timing, name) is getattr(timing_stats, name)


def test_the_look_plan_keeps_each_wrong_verdict_under_its_share_and_no_wider_level_would():
    plan = look_plan(0.95)
    assert plan.looks == LOOKS and plan.first == 8
    assert plan.error_each_way <= 0.025
    assert plan.error_each_way == pytest.approx(crossing_probability(LOOKS, 1 - plan.interval_confidence))
    # calibrated, not merely safe: the next wider interval at some look breaks the 2.5%
    alpha = 1 - plan.interval_confidence
    wider = min(2 * sum(math.comb(n, j) for j in range(order_index(n, alpha) + 1)) / 2.0 ** n for n in LOOKS)
    assert wider > alpha and crossing_probability(LOOKS, wider) > 0.025


def test_crossing_probability_matches_a_simulation():
    """Uniform values have median 0.5: how often some look's interval lies wholly above it."""
    rng = np.random.default_rng(7)
    alpha = 1 - look_plan(0.95).interval_confidence
    runs = rng.uniform(size=(20000, LOOKS[-1]))
    crossed = np.zeros(len(runs), bool)
    for n in LOOKS:
        k = order_index(n, alpha)
        crossed |= np.sort(runs[:, :n], axis=1)[:, k - 1] > 0.5
    exact = crossing_probability(LOOKS, alpha)
    assert abs(crossed.mean() - exact) < 4 * math.sqrt(exact * (1 - exact) / len(runs))


def test_looking_after_every_trial_at_95_percent_would_not_keep_its_promise():
    """What timing_stats' docstring says of the rule it replaced (looks after every trial, from 6)."""
    assert round(crossing_probability(range(6, 41), 0.05), 3) == 0.077
    assert round(crossing_probability(range(6, 201), 0.05), 2) == 0.14
    assert crossing_probability([40], 0.05) <= 0.025  # one look alone keeps it


def test_a_plan_needs_a_first_look_with_an_interval():
    with pytest.raises(ValueError, match="too early"):
        look_plan(0.999, (4, 8, 16))
    with pytest.raises(ValueError, match="between 0 and 1"):
        look_plan(1.0)


def test_the_budget_grows_with_the_spread_of_the_trials_up_to_its_cap():
    from autograder.checks.timing import MAX_STRETCH, QUIET_SPREAD, budget_stretch

    assert budget_stretch([2.0, 2.02, 1.98, 2.01, 1.99, 2.0, 2.03, 1.97]) == 1.0  # an idle machine: the plain budget
    assert budget_stretch([2.0, 3.0, 1.0]) == 1.0  # too few trials to tell
    spread = [2.0 * f for f in (0.85, 0.9, 0.95, 1.0, 1.0, 1.05, 1.1, 1.15)]  # a busy machine's trials
    assert 1.0 < budget_stretch(spread) < MAX_STRETCH
    assert budget_stretch([1.0, 4.0, 0.5, 3.0, 1.5, 6.0, 0.2, 2.0]) == MAX_STRETCH
    assert QUIET_SPREAD > 0


def test_past_the_budget_sampling_goes_on_only_to_a_look_that_fits():
    """More trials under load never add a look or change a level: the wrong-pass bound is the plan's."""
    from autograder.checks.timing import _room_for_next_look

    plan = look_plan(0.95)
    assert plan.looks[:2] == (8, 12) and plan.error_each_way <= 0.025
    assert _room_for_next_look(plan, 8, elapsed=10.0, stretched_s=15.0)  # look 12 due at 15 s
    assert not _room_for_next_look(plan, 8, elapsed=10.0, stretched_s=14.9)
    assert not _room_for_next_look(plan, plan.looks[-1], elapsed=1.0, stretched_s=1e9)  # no look after the last
