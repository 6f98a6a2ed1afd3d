"""What a speed check reports and how it words it (the records and messages of
:mod:`autograder.checks.timing`).

The result records (``SpeedResult``, ``RelativeSpeedResult``), the timed
trials they are made from, and the one-line messages a learner reads.
``autograder.checks.timing`` re-exports every name here; import them from there.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import TypeVar

import numpy as np

from autograder.checks.timing_stats import _ci_or_none, look_plan

# What a learner reads when the measurement stays undecided: the grade is pending, not a 0, and
# the machine is the grader's business (``grade`` retries such parts; ``--retry-inconclusive``).
UNDECIDED = ("The grader could not decide this part from its measurements, so it is pending, not failed: "
             "it will be measured again before your grade is final.")


# --- what a speed check reports ---------------------------------------------------


@dataclass(kw_only=True)
class _SpeedResultBase:
    """The fields both kinds of speed check report, and ``to_dict``.  Times are
    per call, in seconds: the median over trials of each trial's fastest call;
    each trial timed ``calls_per_trial`` calls of each side; ``output_mismatch``
    says how a wrong output differed.  ``confidence`` is the chance, at least,
    that the verdict is right (over every look the check took); each interval
    reported is at the per-look level ``interval_confidence``, which is higher.
    Measured fields are None when nothing was timed (skipped, or a wrong output
    found before timing)."""

    verdict: str
    profile: str
    message: str
    check: str = ""
    label: str = "candidate"
    baseline_label: str = "baseline"
    baseline_s: float | None = None
    candidate_s: float | None = None
    trials: int = 0
    confidence: float = 0.95
    interval_confidence: float | None = None
    calls_per_trial: int = 1
    output_mismatch: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(kw_only=True)
class SpeedResult(_SpeedResultBase):
    """What one speed check found (``measure_speedup``).  Times are per call, in
    seconds: the median over trials of each trial's fastest call; ``ratio`` is
    the median of baseline/candidate over paired trials and
    ``ci_low``/``ci_high`` its interval (at ``interval_confidence``); ``min_ratio`` the
    speedup needed (None: not graded on ``profile``); each trial timed
    ``calls_per_trial`` calls of each side.  Fields are None when nothing was
    timed (skipped, or a wrong output found before timing)."""

    min_ratio: float | None
    ratio: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None


@dataclass(kw_only=True)
class RelativeSpeedResult(_SpeedResultBase):
    """What one relative speed check found (``measure_relative_speedup``).

    Times are per call, in seconds (median over trials of each trial's fastest
    call).  ``speedup`` and ``reference_speedup`` are the medians of
    baseline/candidate and baseline/reference over the trials; ``needed`` is
    ``reference_speedup ** fraction``.  ``margin`` is the median over trials of
    ``(baseline/candidate) / (baseline/reference) ** fraction`` (at least 1.0
    means fast enough) and ``margin_ci_low``/``margin_ci_high`` its interval;
    ``reference_ci_low``/``reference_ci_high`` the interval of the reference's
    speedup, which must reach ``floor`` for the machine to show the effect at
    all.  Fields are None when nothing was timed."""

    fraction: float
    floor: float | None
    reference_label: str = "the reference solution"
    reference_s: float | None = None
    speedup: float | None = None
    reference_speedup: float | None = None
    needed: float | None = None
    margin: float | None = None
    margin_ci_low: float | None = None
    margin_ci_high: float | None = None
    reference_ci_low: float | None = None
    reference_ci_high: float | None = None


_ResultT = TypeVar("_ResultT", bound=_SpeedResultBase)


@dataclass
class _Trials:
    """The timed trials: per side, each trial's fastest call (seconds); per
    statistic, (median, low, high) over the trials (infinite bounds: too few
    trials for an interval); what ``decide`` said (None: the budget ran out
    first); the trials an interval needs (the first look); the level of the
    intervals."""

    times: list[list[float]]
    stats: list[tuple[float, float, float]]
    decision: str | None
    n_min: int
    interval_confidence: float

    @property
    def n(self) -> int:
        return len(self.times[0])


# --- formatting -------------------------------------------------------------------


def format_seconds(s: float) -> str:
    """'11.2 ms', '840 µs', '1.32 s'."""
    if s >= 1.0:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.1f} ms"
    return f"{s * 1e6:.0f} µs"


def _fmt_ratio(r: float, other: float | None = None) -> str:
    text = f"{r:.1f}"
    if other is not None and text == f"{other:.1f}" and r != other:
        text = f"{r:.2f}"
    return text + "x"


def _too_few_trials(n: int, n_min: int, interval_confidence: float) -> str:
    return f"only {n} trials fit (a {_pct(interval_confidence)} interval needs {n_min})"


def _pct(level: float) -> str:
    """'98.5%' (one decimal, unless it is 0)."""
    text = f"{level:.1%}"
    return text.replace(".0%", "%")


def _level(res: _SpeedResultBase) -> float:
    """The level of ``res``'s intervals: as recorded, else the one a check at its
    ``confidence`` takes them at."""
    return res.interval_confidence or look_plan(res.confidence).interval_confidence


# --- the verdict in words -----------------------------------------------------------


def _speedup_outcome(template: SpeedResult, trials: _Trials, reps: int, budget_s: float) -> SpeedResult:
    med, lo, hi = trials.stats[0]
    graded = template.min_ratio is not None
    res = replace(
        template, verdict=(trials.decision or "inconclusive") if graded else "skipped",
        baseline_s=float(np.median(trials.times[0])), candidate_s=float(np.median(trials.times[1])),
        ratio=med, ci_low=_ci_or_none(lo), ci_high=_ci_or_none(hi), trials=trials.n, calls_per_trial=reps,
        interval_confidence=trials.interval_confidence,
    )
    res.message = _speedup_message(res, trials.n_min, budget_s)
    return res


def _speedup_message(res: SpeedResult, n_min: int, budget_s: float) -> str:
    head = f"{res.label}: {format_seconds(res.candidate_s)} vs {format_seconds(res.baseline_s)} {res.baseline_label}"
    few = res.ci_low is None
    if few:
        interval = _too_few_trials(res.trials, n_min, _level(res))
    else:
        interval = (f"{_pct(_level(res))} interval {res.ci_low:.2f}x-{res.ci_high:.2f}x "
                    f"over {res.trials} trials")
    if res.verdict == "skipped":
        return f"{head} ({_fmt_ratio(res.ratio)}, not graded on profile {res.profile}; {interval})"
    needed = _fmt_ratio(res.min_ratio)
    graded = f"({_fmt_ratio(res.ratio, res.min_ratio)}, needed {needed} on profile {res.profile})"
    if res.verdict == "pass":
        return f"{head} {graded}"
    if res.verdict == "fail":
        return f"{head} {graded}; too slow: the {interval} is all below {needed}"
    why = (f"{interval} in {budget_s:g} s" if few else
           f"the {interval} still straddles the threshold after {budget_s:g} s")
    return f"inconclusive: {head} {graded}; {why}. {UNDECIDED}"


def _relative_outcome(
    template: RelativeSpeedResult, trials: _Trials, reps: int, floor_note: str, budget_s: float
) -> RelativeSpeedResult:
    (m_med, m_lo, m_hi), (r_med, r_lo, r_hi) = trials.stats
    t_b, t_r, t_c = ([max(t, 1e-12) for t in side] for side in trials.times)
    res = replace(
        template, verdict=trials.decision if trials.decision in ("pass", "fail") else "inconclusive",
        baseline_s=float(np.median(t_b)), reference_s=float(np.median(t_r)), candidate_s=float(np.median(t_c)),
        speedup=float(np.median([b / c for b, c in zip(t_b, t_c)])), reference_speedup=r_med,
        needed=r_med ** template.fraction, margin=m_med, margin_ci_low=_ci_or_none(m_lo),
        margin_ci_high=_ci_or_none(m_hi), reference_ci_low=_ci_or_none(r_lo),
        reference_ci_high=_ci_or_none(r_hi), trials=trials.n, calls_per_trial=reps,
        interval_confidence=trials.interval_confidence,
    )
    res.message = _relative_message(res, trials.decision, trials.n_min, floor_note, budget_s)
    return res


def _relative_message(
    res: RelativeSpeedResult, decision: str | None, n_min: int, floor_note: str, budget_s: float
) -> str:
    head = (
        f"{res.label}: {format_seconds(res.candidate_s)} vs {format_seconds(res.baseline_s)} {res.baseline_label}, "
        f"{_fmt_ratio(res.speedup, res.needed)} faster; {res.reference_label} is "
        f"{_fmt_ratio(res.reference_speedup)} faster ({format_seconds(res.reference_s)}), so "
        f"{_fmt_ratio(res.needed, res.speedup)} was needed ({res.fraction:g} of its speedup, counted in "
        f"factors: {res.reference_speedup:.2f} ** {res.fraction:g})"
    )
    pct, few = _pct(_level(res)), res.margin_ci_low is None
    if few:
        interval = _too_few_trials(res.trials, n_min, _level(res))
    else:
        interval = (f"{pct} interval of your speed relative to what was needed: "
                    f"{res.margin_ci_low:.2f}-{res.margin_ci_high:.2f} over {res.trials} trials")
    r_lo, r_hi, floor = res.reference_ci_low, res.reference_ci_high, res.floor
    if decision == "pass":
        return f"{head}; profile {res.profile}"
    if decision == "fail":
        return f"{head}; too slow: the {interval} is all below 1.00 (profile {res.profile})"
    if decision == "no-effect":
        return (
            f"inconclusive: {res.reference_label} is only {_fmt_ratio(res.reference_speedup)} faster than "
            f"{res.baseline_label} on this machine ({pct} interval {r_lo:.2f}x-{r_hi:.2f}x), below the floor of "
            f"{_fmt_ratio(floor)} for profile {res.profile}{floor_note}: this machine does not show the speedup "
            f"the part is about. {UNDECIDED} [{head}]"
        )
    why = (f"{interval} in {budget_s:g} s" if few else
           f"the {interval} still straddles 1.00 after {budget_s:g} s")
    if r_lo is not None and r_lo < floor <= r_hi:
        why += f"; {res.reference_label}'s speedup ({r_lo:.2f}x-{r_hi:.2f}x) straddles the floor {_fmt_ratio(floor)}"
    return f"inconclusive: {head}; {why} (profile {res.profile}). {UNDECIDED}"


# --- a wrong output, and a check not timed ------------------------------------------


class _Mismatch(Exception):
    """The candidate's output differed (``problem``) on the call ``when``,
    after ``trials`` complete timed trials; ends the measurement with "fail"."""

    def __init__(self, problem: str, when: str, trials: int) -> None:
        super().__init__(problem)
        self.problem, self.when, self.trials = problem, when, trials


def _mismatch_result(template: _ResultT, bad: _Mismatch, against: str) -> _ResultT:
    message = (
        f"{template.label} gives a different result from {against} ({bad.when}): {bad.problem}. "
        "A speedup only counts when the answer is the same; fix the result first."
    )
    return replace(template, verdict="fail", message=message, trials=bad.trials, output_mismatch=bad.problem)


def _skipped_result(template: _ResultT, against: str, inputs: int, note: str = "") -> _ResultT:
    message = (f"{template.label}: speed not graded on profile {template.profile}{note}; "
               f"output matches {against} on {inputs} fresh inputs")
    return replace(template, verdict="skipped", message=message)
