"""The statistics of a speed check: a distribution-free interval for a median,
and the per-trial ratios and decision rules of :mod:`autograder.checks.timing`.

``autograder.checks.timing`` re-exports every name here; import them from there.
"""
from __future__ import annotations

import math
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
    alpha = 1.0 - confidence
    # cumulative P(B <= j) for B ~ Binomial(n, 1/2)
    cdf, acc = [], 0.0
    for j in range(n + 1):
        acc += math.comb(n, j) / 2.0**n
        cdf.append(acc)
    k = 0  # 1-based order-statistic index; 0 means "no interval yet"
    for cand in range(1, n // 2 + 1):
        if 2 * cdf[cand - 1] <= alpha:  # P(B <= cand-1) = P(B < cand)
            k = cand
    if k == 0:
        return med, -math.inf, math.inf
    return med, float(xs[k - 1]), float(xs[n - k])


def min_trials_for(confidence: float) -> int:
    """Fewest trials for which ``median_ci`` gives a finite interval."""
    n = 1
    while math.isinf(median_ci([0.0] * n, confidence)[1]):
        n += 1
    return n


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
