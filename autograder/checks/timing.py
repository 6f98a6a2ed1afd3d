"""Measuring a speedup so that noise can't fool the verdict.

``measure_speedup`` times a baseline and a candidate side by side and decides
whether the candidate is at least ``min_ratio`` times faster:

* warm-up calls (tracing, XLA compilation, tf.data start-up) are not timed;
* every result is forced to the host (``.numpy()`` on every tensor in the
  output), so asynchronous GPU work is inside the timed region;
* baseline and candidate trials are interleaved, alternating which goes first,
  so a burst of load from another process hits both;
* a trial times each side's fastest of several calls: load from another
  process only ever adds time, so the fastest call is the best estimate of the
  function's own cost;
* every call gets fresh inputs from ``make_inputs()`` and every candidate
  output is checked against the baseline's on the same inputs, so a cached or
  wrong answer can't pass;
* the verdict is taken on the median of the per-trial ratios with a
  distribution-free (order-statistic) confidence interval, looked at after a
  planned number of trials (8, 12, 18, ... up to 140) and at a level that keeps
  the chance of a wrong verdict over all the looks at most 1 - ``confidence``
  (5%: 2.5% a wrong pass, 2.5% a wrong fail; see ``timing_stats``); trials are
  added while the interval straddles the threshold, and when the time budget
  runs out (at the next look) the answer is "inconclusive", never a silent pass
  or fail.

``measure_relative_speedup``/``assert_relative_speedup`` grade a speed part
against a hidden reference solution instead of a fixed number: baseline,
reference and candidate are timed interleaved (the three sides rotate through
all six orders), every output is compared with the reference's, and the
candidate passes when its speedup over the baseline reaches
``reference_speedup ** fraction`` (a fraction of the reference's speedup,
counted in factors), with the same interval and "inconclusive" rules.  The
thresholds table is then a floor the reference must reach on the machine.

The clock is ``time.perf_counter`` as it was when this module was imported:
a learner who later patches ``time.perf_counter`` does not change what is
measured, and ``clock_is_genuine()`` tells the integrity checks whether anyone
tried.
"""
from __future__ import annotations

import gc
import inspect
import math
import time
from functools import partial
from typing import Any, Callable, Sequence

import numpy as np

# The records and messages, and the statistics, live in their own modules; every
# name stays importable from here.
from autograder.checks.timing_results import (  # noqa: F401
    RelativeSpeedResult, SpeedResult, _fmt_ratio, _Mismatch, _mismatch_result, _relative_message, _relative_outcome,
    _ResultT, _skipped_result, _SpeedResultBase, _speedup_message, _speedup_outcome, _too_few_trials, _Trials,
    format_seconds,
)
from autograder.checks.timing_stats import (  # noqa: F401
    HARD_STOP_BUDGETS, LOOKS, MAX_STRETCH, QUIET_SPREAD, LookPlan, _ci_or_none, _pair_ratio, _relative_decision, _relative_trial,
    _speedup_decision, _stats, budget_stretch, crossing_probability, look_plan, median_ci, min_trials_for,
    order_index,
)

# Bound before any learner code runs (the grader imports this module first).
_clock = time.perf_counter
_GENUINE_CLOCKS: dict[str, Callable[[], Any]] = {
    name: getattr(time, name)
    for name in ("perf_counter", "perf_counter_ns", "time", "time_ns", "monotonic", "monotonic_ns")
}

VERDICTS = ("pass", "fail", "inconclusive", "skipped")
# Each call needs its own inputs from make_inputs(); past this many, making
# inputs would cost more than the timing gains.
_MAX_CALLS_PER_TRIAL = 1000


def replaced_clocks() -> list[str]:
    """Names of the clocks that differ from the ones seen at import: ``time``
    functions, and this module's own ``_clock``."""
    names = [f"time.{name}" for name, func in _GENUINE_CLOCKS.items() if getattr(time, name, None) is not func]
    if _clock is not _GENUINE_CLOCKS["perf_counter"]:
        names.append("autograder.checks.timing._clock")
    return names


def clock_is_genuine() -> bool:
    """True while ``time.perf_counter``/``time.time``/``time.monotonic`` (and their
    ``_ns`` forms) are the functions that were there when this module was
    imported, and the clock timing uses is still ``time.perf_counter``."""
    return not replaced_clocks()


class SpeedInconclusive(AssertionError):
    """The confidence interval still straddled the threshold when the budget ran out."""


# --- forcing results to the host and comparing them -------------------------


def to_host(value: Any) -> Any:
    """``value`` with every tensor replaced by a NumPy array (nested lists,
    tuples, namedtuples and dicts are walked).  Calling ``.numpy()`` waits for
    the device, which is what puts asynchronous GPU work inside the timing."""
    if isinstance(value, dict):
        return {k: to_host(v) for k, v in value.items()}
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(to_host(v) for v in value))
    if isinstance(value, (list, tuple)):
        return type(value)(to_host(v) for v in value)
    if isinstance(value, np.ndarray):
        return value
    numpy = getattr(value, "numpy", None)
    if callable(numpy):
        return numpy()
    return value


def _leaves(value: Any, path: str = "output") -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        out: list[tuple[str, Any]] = []
        for k in sorted(value, key=str):
            out += _leaves(value[k], f"{path}[{k!r}]")
        return out
    if isinstance(value, (list, tuple)):
        out = []
        for i, v in enumerate(value):
            out += _leaves(v, f"{path}[{i}]")
        return out
    return [(path, value)]


def compare_outputs(expected: Any, actual: Any, *, rtol: float, atol: float) -> str | None:
    """None if ``actual`` matches ``expected`` (np.allclose per leaf, NaNs equal),
    else one line naming where they differ and by how much."""
    exp_leaves, act_leaves = _leaves(expected), _leaves(actual)
    if [p for p, _ in exp_leaves] != [p for p, _ in act_leaves]:
        return (
            f"the output has a different structure: expected {len(exp_leaves)} value(s) "
            f"{_shape_summary(exp_leaves)}, got {len(act_leaves)} {_shape_summary(act_leaves)}"
        )
    for (path, e), (_, a) in zip(exp_leaves, act_leaves):
        e_arr, a_arr = np.asarray(e), np.asarray(a)
        if e_arr.shape != a_arr.shape:
            return f"{path} has shape {a_arr.shape}, expected {e_arr.shape}"
        numeric = e_arr.dtype.kind in "biufc" and a_arr.dtype.kind in "biufc"
        if not numeric:
            if not np.array_equal(e_arr, a_arr):
                return f"{path} differs: got {_short(a_arr)}, expected {_short(e_arr)}"
            continue
        e64 = e_arr.astype(np.complex128 if e_arr.dtype.kind == "c" else np.float64)
        a64 = a_arr.astype(np.complex128 if a_arr.dtype.kind == "c" else np.float64)
        close = np.isclose(a64, e64, rtol=rtol, atol=atol, equal_nan=True)
        if not close.all():
            diff = np.abs(a64 - e64)
            diff = np.where(np.isnan(diff), np.inf, diff)
            idx = np.unravel_index(int(np.argmax(np.where(close, -1.0, diff))), diff.shape) if diff.ndim else ()
            where = f" at index {tuple(int(i) for i in idx)}" if idx else ""
            return (
                f"{path} differs by up to {float(diff[idx]):.3g}{where} "
                f"(got {_num(a64[idx])}, expected {_num(e64[idx])}; "
                f"{int((~close).sum())} of {close.size} values outside rtol={rtol:g}, atol={atol:g})"
            )
    return None


def _num(x: Any) -> str:
    return f"{complex(x):.6g}" if np.iscomplexobj(x) else f"{float(np.real(x)):.6g}"


def _short(arr: np.ndarray) -> str:
    text = np.array2string(arr, threshold=6)
    return text if len(text) <= 60 else text[:57] + "..."


def _shape_summary(leaves: list[tuple[str, Any]]) -> str:
    return "[" + ", ".join(str(np.shape(v)) for _, v in leaves[:4]) + (", ...]" if len(leaves) > 4 else "]")


# --- the measurement ------------------------------------------------------------


def _resolve_profile(profile: Any) -> str:
    if profile is None:
        from autograder.checks.hardware import current_profile

        return current_profile().name
    return profile if isinstance(profile, str) else profile.name


def _timed_calls(fn: Callable, arg_sets: list[tuple]) -> tuple[float, list[Any]]:
    """The fastest single call of ``fn`` over ``arg_sets`` (one call per set,
    each forced to the host), in seconds, and the host values.

    Another process can only add time to a call (by taking the core away), so
    the fastest of several calls is the best estimate of the function's own
    cost on a busy machine.  Every call gets its own inputs, so a function
    that remembers its last answer gains nothing.  The garbage collector is
    paused so a collection of someone else's garbage is not billed here.

    A side that times itself from outside -- the judge's handle on a learner's
    function (:class:`autograder.checks.probe.LearnerFunction`) -- has
    ``timed_calls``: its calls run in the learner's kernel, one request each,
    timed by the sandbox worker from request to reply, less the round trip."""
    if callable(getattr(fn, "timed_calls", None)):
        return fn.timed_calls(arg_sets)
    outs: list[Any] = []
    best = math.inf
    gc_was_on = gc.isenabled()
    gc.disable()
    try:
        for args in arg_sets:
            start = _clock()
            out = to_host(fn(*args))
            best = min(best, _clock() - start)
            outs.append(out)
    finally:
        if gc_was_on:
            gc.enable()
    return best, outs


def _fresh_inputs(make_inputs: Callable[[], Any]) -> tuple:
    args = make_inputs()
    if not isinstance(args, tuple):
        raise TypeError(
            f"make_inputs() must return a tuple of arguments, got {type(args).__name__}; "
            "wrap a single argument as (x,)"
        )
    return args


# --- the steps both measurements share ----------------------------------------------

# Trial k times the sides in the order _PAIR_ORDERS[k % 2] (measure_speedup) or
# _ORDERS[k % 6] (measure_relative_speedup), so each side goes first (second,
# third) equally often.  Side 0 is the baseline; the candidate is the last.
_PAIR_ORDERS = ((0, 1), (1, 0))
_ORDERS = ((0, 1, 2), (1, 2, 0), (2, 0, 1), (0, 2, 1), (2, 1, 0), (1, 0, 2))

# compare(outs, when): one call's outputs, one per side, to the problem with
# the candidate's (None: it matches); it raises when the test itself is wrong.
_Compare = Callable[[Sequence[Any], str], "str | None"]


def _require_same(compare: _Compare, outs: Sequence[Any], when: str, trials: int) -> None:
    problem = compare(outs, when)
    if problem:
        raise _Mismatch(problem, when, trials)


def _warm_up(sides: Sequence[Callable], make_inputs: Callable, warmup: int, compare: _Compare) -> tuple[float, float]:
    """``max(warmup, 1)`` untimed rounds, each side called once on the same
    fresh inputs, outputs compared: tracing, compilation and first-call costs
    stay out of the timing, and a wrong answer is reported before any time is
    spent measuring.  Returns the fastest and slowest call seen, leaving out
    the first round (it traces and compiles) unless it is the only one."""
    fastest, slowest = math.inf, 0.0
    for i in range(max(warmup, 1)):
        args = [_fresh_inputs(make_inputs)]
        timed = [_timed_calls(fn, args) for fn in sides]
        _require_same(compare, [outs[0] for _, outs in timed], f"warm-up call {i + 1}", 0)
        if i > 0 or warmup <= 1:
            fastest = min(fastest, *(t for t, _ in timed))
            slowest = max(slowest, *(t for t, _ in timed))
    return fastest, slowest


def _verify_untimed(sides: Sequence[Callable], make_inputs: Callable, verify_trials: int, compare: _Compare) -> None:
    """Outputs compared on ``verify_trials`` more fresh inputs, nothing timed
    (a check not graded on speed is still graded on its answer)."""
    for i in range(verify_trials):
        args = _fresh_inputs(make_inputs)
        _require_same(compare, [to_host(fn(*args)) for fn in sides], f"check {i + 1} of {verify_trials}", 0)


def _calls_per_trial(fastest: float, slowest: float, min_calls: int, min_sample_s: float, max_sample_s: float) -> int:
    """Each side's sample is the fastest of this many calls: at least
    ``min_calls``, and enough to span ``min_sample_s`` (several scheduler time
    slices, so some call runs uninterrupted); all sides make the same calls on
    the same inputs, and the slowest side's sample is kept under
    ``max_sample_s``."""
    reps = max(min_calls, int(math.ceil(min_sample_s / max(fastest, 1e-9))))
    return max(1, min(reps, int(max_sample_s / max(slowest, 1e-9)), _MAX_CALLS_PER_TRIAL))


def _timed_trial(
    sides: Sequence[Callable], order: Sequence[int], arg_sets: list[tuple]
) -> list[tuple[float, list[Any]]]:
    """Each side's ``_timed_calls`` on ``arg_sets``, taken in ``order``, listed by side."""
    measured: list[Any] = [None] * len(sides)
    for side in order:
        measured[side] = _timed_calls(sides[side], arg_sets)
    return measured


def _run_trials(
    sides: Sequence[Callable],
    orders: Sequence[Sequence[int]],
    make_inputs: Callable,
    reps: int,
    compare: _Compare,
    per_trial: Callable[..., tuple[float, ...]],
    decide: Callable[..., "str | None"],
    *,
    budget_s: float,
    confidence: float,
) -> _Trials:
    """Timed trials until ``decide`` gives a verdict or the budget runs out.

    Trial k times every side on the same ``reps`` fresh inputs, in the order
    ``orders[k % len(orders)]``, and compares every call's outputs.
    ``per_trial(*times)`` turns the trial's times (one per side) into one value
    per statistic.  At each look of ``look_plan(confidence)`` (a planned number
    of trials), ``decide(*stats)`` gets each statistic's (median, low, high), the
    interval at the plan's per-look level, and returns a verdict, or None to keep
    sampling: over all the looks a verdict is wrong at most 1 - ``confidence`` of
    the time (see :mod:`autograder.checks.timing_stats`).  The budget grows with
    the spread of the first statistic's per-trial values (``budget_stretch``: a busy
    machine gets more looks, up to two budgets: past the plain budget, only while the
    next look fits in the grown one).  When the plain budget runs out between two
    looks, sampling goes on to the next one, unless the functions are so slow that
    this would take past three budgets; after the last look there is no verdict."""
    plan = look_plan(confidence)
    times: list[list[float]] = [[] for _ in sides]
    rows: list[tuple[float, ...]] = []
    decision = None
    started = _clock()
    hard_stop = started + HARD_STOP_BUDGETS * budget_s
    while True:
        trial = len(rows)
        arg_sets = [_fresh_inputs(make_inputs) for _ in range(reps)]
        measured = _timed_trial(sides, orders[trial % len(orders)], arg_sets)
        for outs in zip(*(outs for _, outs in measured)):
            _require_same(compare, outs, f"timed trial {trial + 1}", trial)
        for side, (t, _) in enumerate(measured):
            times[side].append(t)
        rows.append(per_trial(*(t for t, _ in measured)))
        at_look = len(rows) in plan.looks
        if at_look:
            decision = decide(*_stats(rows, plan.interval_confidence))
            if decision or len(rows) == plan.looks[-1]:
                break
        now = _clock()
        if now >= hard_stop or (at_look and now >= started + budget_s and not _room_for_next_look(
                plan, len(rows), now - started, budget_s * budget_stretch([r[0] for r in rows]))):
            break
    return _Trials(times, _stats(rows, plan.interval_confidence), decision, plan.first, plan.interval_confidence)


def _room_for_next_look(plan: LookPlan, trials: int, elapsed: float, stretched_s: float) -> bool:
    """Whether the next look, at the pace so far, is reached within ``stretched_s`` (the budget
    grown with the noise): sampling past the budget only ever ends at a look."""
    later = [n for n in plan.looks if n > trials]
    return bool(later) and elapsed * later[0] / max(trials, 1) <= stretched_s


def _enforce(res: _ResultT) -> _ResultT:
    """A result as a check: prints the message on pass and skip, raises
    ``AssertionError`` on fail and ``SpeedInconclusive`` when undecided."""
    if res.verdict == "fail":
        raise AssertionError(res.message)
    if res.verdict == "inconclusive":
        raise SpeedInconclusive(res.message)
    print(res.message)
    return res


# --- speed against a fixed threshold --------------------------------------------------


def _threshold(check: str, profile_name: str, min_ratio: float | None) -> float | None:
    """``min_ratio``, or when None the thresholds table's (None: not timed on this profile)."""
    if min_ratio is None:
        from autograder.checks.thresholds import min_ratio_for

        min_ratio = min_ratio_for(check, profile_name)
    if min_ratio is not None and not min_ratio > 0:
        raise ValueError(f"min_ratio must be positive, got {min_ratio!r}")
    return min_ratio


def _untimed_note(check: str) -> str:
    from autograder.checks.thresholds import untimed_reason

    return f" ({untimed_reason(check)})"


def measure_speedup(
    baseline: Callable,
    candidate: Callable,
    make_inputs: Callable[[], tuple],
    *,
    check: str,
    label: str = "candidate",
    baseline_label: str = "baseline",
    min_ratio: float | None = None,
    profile: Any = None,
    rtol: float = 1e-5,
    atol: float = 1e-6,
    budget_s: float = 20.0,
    confidence: float = 0.95,
    warmup: int = 2,
    min_calls: int = 3,
    min_sample_s: float = 0.02,
    max_sample_s: float = 0.25,
    verify_trials: int = 3,
    measure_when_untimed: bool = False,
) -> SpeedResult:
    """Time ``candidate`` against ``baseline`` and decide whether it is at least
    ``min_ratio`` times faster (``None``: look ``check`` up in
    ``autograder.checks.thresholds`` for ``profile``, default the current one).

    Each function is called as ``fn(*make_inputs())``.  ``warmup`` untimed calls
    of each come first.  In each trial each side makes at least ``min_calls``
    calls (more when that takes less than ``min_sample_s``; fewer when the
    slower side would take more than ``max_sample_s``), each on fresh inputs,
    the same ones for both sides, and the fastest call is its time for that
    trial; the trial's ratio is baseline time / candidate time.  ``budget_s`` bounds the
    timed trials (not the warm-up).  When the table says the check is not timed
    on this profile the outputs are still compared on ``verify_trials`` fresh
    inputs and the verdict is "skipped" (with ``measure_when_untimed=True`` the
    pair is also timed, for reports, but still not graded)."""
    profile_name = _resolve_profile(profile)
    min_ratio = _threshold(check, profile_name, min_ratio)
    sides = (baseline, candidate)

    def compare(outs: Sequence[Any], when: str) -> str | None:
        return compare_outputs(outs[0], outs[1], rtol=rtol, atol=atol)

    template = SpeedResult(
        verdict="", message="", min_ratio=min_ratio, profile=profile_name, check=check, label=label,
        baseline_label=baseline_label, confidence=confidence,
    )
    try:
        fastest, slowest = _warm_up(sides, make_inputs, warmup, compare)
        if min_ratio is None and not measure_when_untimed:
            _verify_untimed(sides, make_inputs, verify_trials, compare)
            return _skipped_result(template, baseline_label, max(warmup, 1) + verify_trials, _untimed_note(check))
        reps = _calls_per_trial(fastest, slowest, min_calls, min_sample_s, max_sample_s)
        trials = _run_trials(sides, _PAIR_ORDERS, make_inputs, reps, compare, _pair_ratio,
                             partial(_speedup_decision, min_ratio), budget_s=budget_s, confidence=confidence)
    except _Mismatch as bad:
        return _mismatch_result(template, bad, baseline_label)
    return _speedup_outcome(template, trials, reps, budget_s)


def assert_speedup(
    baseline: Callable,
    candidate: Callable,
    make_inputs: Callable[[], tuple],
    **kwargs: Any,
) -> SpeedResult:
    """``measure_speedup`` as a check: prints the message on pass and skip,
    raises ``AssertionError`` on fail and ``SpeedInconclusive`` when undecided."""
    return _enforce(measure_speedup(baseline, candidate, make_inputs, **kwargs))


# Same keywords as measure_speedup, for help() and editors.
assert_speedup.__signature__ = inspect.signature(measure_speedup)  # type: ignore[attr-defined]


# --- speed relative to a hidden reference -----------------------------------------


def _floor(fraction: float, check: str, profile: Any, floor: float | None) -> tuple[str, float, str]:
    """Checks ``fraction``; (profile name, floor, a note when the table had none)."""
    if not 0.0 < fraction <= 1.0:
        raise ValueError(f"fraction must be in (0, 1], got {fraction!r}")
    profile_name = _resolve_profile(profile)
    floor_note = ""
    if floor is None:
        from autograder.checks.thresholds import min_ratio_for

        floor = min_ratio_for(check, profile_name)
        if floor is None:
            floor = 1.0
            floor_note = " (no floor in the thresholds table for this profile; 1.0 used)"
    if not floor >= 1.0:
        raise ValueError(f"floor must be at least 1.0, got {floor!r}")
    return profile_name, floor, floor_note


def _against_reference(rtol: float, atol: float, baseline_label: str, reference_label: str) -> _Compare:
    """Outputs of (baseline, reference, candidate) compared with the reference's:
    a baseline that differs is an error in the test (``RuntimeError``)."""

    def compare(outs: Sequence[Any], when: str) -> str | None:
        problem = compare_outputs(outs[1], outs[0], rtol=rtol, atol=atol)
        if problem:
            raise RuntimeError(
                f"the test is wrong: {baseline_label} and {reference_label} give different results ({when}): {problem}"
            )
        return compare_outputs(outs[1], outs[2], rtol=rtol, atol=atol)

    return compare


def measure_relative_speedup(
    baseline: Callable,
    reference: Callable,
    candidate: Callable,
    make_inputs: Callable[[], tuple],
    *,
    check: str,
    fraction: float,
    required: bool = True,
    floor: float | None = None,
    label: str = "candidate",
    baseline_label: str = "baseline",
    reference_label: str = "the reference solution",
    profile: Any = None,
    rtol: float = 1e-5,
    atol: float = 1e-6,
    budget_s: float = 20.0,
    confidence: float = 0.95,
    warmup: int = 2,
    min_calls: int = 3,
    min_sample_s: float = 0.02,
    max_sample_s: float = 0.25,
    verify_trials: int = 3,
) -> RelativeSpeedResult:
    """Time ``baseline``, ``reference`` (the hidden reference solution) and
    ``candidate`` interleaved, and decide whether the candidate reaches
    ``fraction`` of the reference's speedup over the baseline.

    "Fraction of the speedup" is counted in factors (a log scale): if the
    reference is ``R`` times faster than the baseline, the candidate must be at
    least ``R ** fraction`` times faster (``fraction=0.5`` of a 9x speedup is 3x;
    of a 1.2x speedup, 1.1x).  So a candidate no faster than the baseline never
    passes where the reference has a speedup, whatever the machine, and the
    requirement scales with what this machine shows: the same grade on 2 cores,
    16 cores or a GPU.  Per trial the margin is
    ``(baseline/candidate) / (baseline/reference) ** fraction``; the verdict is
    taken on its median with a distribution-free interval, as in
    ``measure_speedup``: "pass" when the interval is all at or above 1 and the
    reference's own speedup is at least ``floor``; "fail" when the interval is
    all below 1 and the reference's speedup is at least ``floor``;
    "inconclusive" when the budget runs out first, or when the reference itself
    does not reach ``floor`` on this machine (the machine does not show the
    effect the part is about, which is never the learner's fault nor a pass).

    ``floor`` defaults to the thresholds table's row ``check`` for ``profile``
    (a floor and a sanity check on the reference, not the learner's target).
    ``required`` says whether the part asks for speed on this machine, decided
    by the caller (the hidden test), never by the table: when False the outputs
    are verified on fresh inputs and the verdict is "skipped"; when True a
    ``None`` in the table does not skip anything (the floor is then 1.0).

    Every call gets fresh inputs from ``make_inputs()``, the same for the three
    sides; every output of the baseline and the candidate is compared with the
    reference's (``rtol``/``atol``).  A candidate that differs fails at once;
    a baseline that differs is an error in the test (``RuntimeError``)."""
    profile_name, floor, floor_note = _floor(fraction, check, profile, floor)
    sides = (baseline, reference, candidate)
    compare = _against_reference(rtol, atol, baseline_label, reference_label)
    template = RelativeSpeedResult(
        verdict="", message="", fraction=fraction, floor=floor, profile=profile_name, check=check, label=label,
        baseline_label=baseline_label, reference_label=reference_label, confidence=confidence,
    )
    try:
        fastest, slowest = _warm_up(sides, make_inputs, warmup, compare)
        if not required:
            _verify_untimed(sides, make_inputs, verify_trials, compare)
            return _skipped_result(template, reference_label, max(warmup, 1) + verify_trials)
        reps = _calls_per_trial(fastest, slowest, min_calls, min_sample_s, max_sample_s)
        trials = _run_trials(sides, _ORDERS, make_inputs, reps, compare, partial(_relative_trial, fraction),
                             partial(_relative_decision, floor), budget_s=budget_s, confidence=confidence)
    except _Mismatch as bad:
        return _mismatch_result(template, bad, reference_label)
    return _relative_outcome(template, trials, reps, floor_note, budget_s)


def assert_relative_speedup(
    baseline: Callable,
    reference: Callable,
    candidate: Callable,
    make_inputs: Callable[[], tuple],
    **kwargs: Any,
) -> RelativeSpeedResult:
    """``measure_relative_speedup`` as a check: prints the message on pass and
    skip, raises ``AssertionError`` on fail and ``SpeedInconclusive`` when
    undecided (or when the machine does not show the reference's speedup)."""
    return _enforce(measure_relative_speedup(baseline, reference, candidate, make_inputs, **kwargs))


assert_relative_speedup.__signature__ = inspect.signature(measure_relative_speedup)  # type: ignore[attr-defined]
