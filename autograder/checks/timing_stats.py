"""The statistics of a speed check: a distribution-free interval for a median,
the looks a sequential check may decide at, and the per-trial ratios and
decision rules of :mod:`autograder.checks.timing`.

``autograder.checks.timing`` re-exports every name here; import them from there.

**The error rates.** A check decides only at planned looks (after 8, 12, 18, 27,
41, 62, 93 and 140 trials: :func:`look_plan`), and at each look it uses the same
order-statistic interval for the median, at a level chosen so that over *all*
the looks together the chance of a wrong "pass" is at most (1 - confidence) / 2,
and the same for a wrong "fail": with the default confidence 0.95, a verdict is
wrong at most 5% of the time (2.5% each way), and that worst case is an answer
exactly at the threshold.  The chance is computed exactly, not bounded: after n
trials the number of per-trial values below the true median is a simple random
walk (each trial falls below with probability 1/2, whatever the distribution of
the timings), so the chance that some look's interval lies wholly on one side of
the true median is a sum over that walk's paths (:func:`crossing_probability`).
It assumes only that trials are independent and their values have no ties.
Looking after every trial at 95% instead (what this module did before) lets
that chance grow to 7.7% each way over 40 trials and 14% over 200.

**A budget that grows with the noise.**  The bound holds over all the planned looks
together, so *when* a check stops looking can depend on anything, the data
included, without raising it: stopping early or late only gives up verdicts the
bound already counts.  A busy machine (other processes on the cores) spreads the
per-trial values, and a right answer then needs more looks before its interval
clears the threshold; :func:`budget_stretch` lets the time budget grow with that
spread, up to :data:`MAX_STRETCH` times, within the three budgets a check could
already take (:data:`HARD_STOP_BUDGETS`), so a noisy answer is decided instead of left "inconclusive".
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np


# --- statistics -----------------------------------------------------------------


def median_ci(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float, float]:
    """(median, low, high): the sample median and a distribution-free interval
    for the true median from order statistics.  The number of values below the
    true median is Binomial(n, 1/2), so [x_(k), x_(n-k+1)] covers it with
    probability 1 - 2 P(B < k); k is the largest index that keeps this at or
    above ``confidence``.  With too few values for that, the interval is the
    whole real line (the caller keeps sampling)."""
    xs = sorted(values)
    n = len(xs)
    if n == 0:
        return math.nan, -math.inf, math.inf
    med = float(np.median(xs))
    k = order_index(n, 1.0 - confidence)
    if k == 0:
        return med, -math.inf, math.inf
    return med, float(xs[k - 1]), float(xs[n - k])


@functools.lru_cache(maxsize=4096)
def order_index(n: int, alpha: float) -> int:
    """The 1-based index k of ``median_ci``'s interval [x_(k), x_(n-k+1)] over n
    values at two-sided level 1 - ``alpha``: the largest k with
    2 P(B < k) <= alpha for B ~ Binomial(n, 1/2); 0 when there is none."""
    cdf, acc = [], 0.0  # cumulative P(B <= j)
    for j in range(n + 1):
        acc += math.comb(n, j) / 2.0**n
        cdf.append(acc)
    k = 0
    for cand in range(1, n // 2 + 1):
        if 2 * cdf[cand - 1] <= alpha:  # P(B <= cand-1) = P(B < cand)
            k = cand
    return k


def min_trials_for(confidence: float) -> int:
    """Fewest trials for which ``median_ci`` gives a finite interval."""
    n = 1
    while math.isinf(median_ci([0.0] * n, confidence)[1]):
        n += 1
    return n


# --- sequential looks -----------------------------------------------------------

QUIET_SPREAD = 0.10  # interquartile range of log per-trial values on an idle machine (about +-5%)
MAX_STRETCH = 2.0  # a budget grows at most this much, leaving time to reach the next look
HARD_STOP_BUDGETS = 3.0  # no check runs past this many budgets, whatever its looks


def budget_stretch(values: Sequence[float]) -> float:
    """How many budgets a check may take, from the spread of its per-trial values: 1 while
    their interquartile range (in log terms, so any scale) is at most :data:`QUIET_SPREAD`,
    growing in proportion to it up to :data:`MAX_STRETCH`.  Only the time changes, never the
    looks or their intervals, so the error rates stay those of :func:`look_plan`."""
    logs = np.log([max(v, 1e-12) for v in values if math.isfinite(v)])
    if len(logs) < 4:
        return 1.0
    q1, q3 = np.percentile(logs, [25, 75])
    return float(min(MAX_STRETCH, max(1.0, (q3 - q1) / QUIET_SPREAD)))


LOOKS = (8, 12, 18, 27, 41, 62, 93, 140)  # trial counts a check may decide at, each about 1.5x the last


def crossing_probability(looks: Sequence[int], alpha: float) -> float:
    """The chance, for independent trials, that at some look n of ``looks`` the
    interval ``median_ci`` gives at level 1 - ``alpha`` lies wholly above the true
    median (the same as wholly below, by symmetry): fewer than ``order_index(n,
    alpha)`` of the first n values fell below it.  Exact, over the random walk of
    that count (each value falls below with probability 1/2)."""
    walk, n, crossed = np.array([1.0]), 0, 0.0  # walk[j]: P(j values below so far, no crossing yet)
    for look in looks:
        while n < look:
            walk = np.concatenate([walk * 0.5, [0.0]]) + np.concatenate([[0.0], walk * 0.5])
            n += 1
        k = order_index(n, alpha)
        crossed += float(walk[:k].sum())
        walk[:k] = 0.0
    return crossed


@dataclass(frozen=True)
class LookPlan:
    """When a check may decide (``looks``: trial counts) and the level of the
    interval it decides on at each look (``interval_confidence``), so that the
    chance of a wrong verdict over all the looks is at most 1 - ``confidence``
    (``error_each_way``, computed exactly, is the chance of a wrong pass, and of a
    wrong fail, for an answer exactly at the threshold)."""

    confidence: float
    looks: tuple[int, ...]
    interval_confidence: float
    error_each_way: float

    @property
    def first(self) -> int:
        return self.looks[0]


@functools.lru_cache(maxsize=16)
def look_plan(confidence: float = 0.95, looks: tuple[int, ...] = LOOKS) -> LookPlan:
    """The widest per-look level whose crossing probability over ``looks`` is at
    most (1 - ``confidence``) / 2 (bisection over the level)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    target, low, high = (1.0 - confidence) / 2, 0.0, 1.0 - confidence
    for _ in range(50):
        mid = (low + high) / 2
        low, high = (mid, high) if crossing_probability(looks, mid) <= target else (low, mid)
    if order_index(looks[0], low) == 0:
        raise ValueError(f"the first look ({looks[0]} trials) is too early for confidence {confidence}")
    return LookPlan(confidence, tuple(looks), 1.0 - low, crossing_probability(looks, low))


def _stats(rows: list[tuple[float, ...]], confidence: float) -> list[tuple[float, float, float]]:
    """``median_ci`` of each column of ``rows`` (one row per trial)."""
    return [median_ci(column, confidence) for column in zip(*rows)]


def _ci_or_none(x: float) -> float | None:
    return None if math.isinf(x) or math.isnan(x) else x


def _pair_ratio(t_b: float, t_c: float) -> tuple[float]:
    return (t_b / max(t_c, 1e-12),)


def _speedup_decision(min_ratio: float | None, ratio: tuple[float, float, float]) -> str | None:
    """"pass"/"fail" once the interval is all on one side of ``min_ratio``;
    not graded (``min_ratio`` None): "skipped" (stop sampling) once the
    interval is narrower than 20% of the median, for reports."""
    med, lo, hi = ratio
    if min_ratio is not None and lo >= min_ratio:
        return "pass"
    if min_ratio is not None and hi < min_ratio:
        return "fail"
    if min_ratio is None and (hi - lo) <= 0.2 * med:
        return "skipped"
    return None


def _relative_trial(fraction: float, t_b: float, t_r: float, t_c: float) -> tuple[float, float]:
    """(margin, reference's speedup) of one trial."""
    t_b, t_r, t_c = (max(t, 1e-12) for t in (t_b, t_r, t_c))
    return (t_b / t_c) / (t_b / t_r) ** fraction, t_b / t_r


def _relative_decision(
    floor: float, margin: tuple[float, float, float], reference: tuple[float, float, float]
) -> str | None:
    """"no-effect" when the reference's speedup is surely below ``floor``; once
    it is surely at or above it, pass/fail when the margin's interval clears 1."""
    _, m_lo, m_hi = margin
    _, r_lo, r_hi = reference
    if r_hi < floor:
        return "no-effect"
    if r_lo >= floor and m_lo >= 1.0:
        return "pass"
    if r_lo >= floor and m_hi < 1.0:
        return "fail"
    return None
