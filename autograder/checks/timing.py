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
  distribution-free (order-statistic) confidence interval; trials are added
  while the interval straddles the threshold, and when the time budget runs out
  the answer is "inconclusive", never a silent pass or fail.

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
from dataclasses import asdict, dataclass
from typing import Any, Callable, Sequence

import numpy as np

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


@dataclass
class SpeedResult:
    """What one speed check found.  Times are per call, in seconds: the median
    over trials of each trial's fastest call; ``ratio`` is the median of
    baseline/candidate over paired trials and
    ``ci_low``/``ci_high`` its ``confidence`` interval; each trial timed
    ``calls_per_trial`` calls of each side.  Fields are None when nothing was
    timed (skipped, or a wrong output found before timing)."""

    verdict: str
    baseline_s: float | None
    candidate_s: float | None
    ratio: float | None
    ci_low: float | None
    ci_high: float | None
    min_ratio: float | None
    profile: str
    trials: int
    message: str
    check: str = ""
    label: str = "candidate"
    baseline_label: str = "baseline"
    confidence: float = 0.95
    calls_per_trial: int = 1
    output_mismatch: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


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
    paused so a collection of someone else's garbage is not billed here."""
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
    if min_ratio is None:
        from autograder.checks.thresholds import min_ratio_for

        min_ratio = min_ratio_for(check, profile_name)
        timed = min_ratio is not None
    else:
        timed = True
    if timed and not min_ratio > 0:
        raise ValueError(f"min_ratio must be positive, got {min_ratio!r}")

    def result(verdict: str, message: str, **kw: Any) -> SpeedResult:
        fields: dict[str, Any] = dict(
            baseline_s=None, candidate_s=None, ratio=None, ci_low=None, ci_high=None, trials=0
        )
        fields.update(kw)
        return SpeedResult(
            verdict=verdict, min_ratio=min_ratio, profile=profile_name, message=message,
            check=check, label=label, baseline_label=baseline_label, confidence=confidence, **fields,
        )

    def mismatch_result(problem: str, when: str, trials: int) -> SpeedResult:
        message = (
            f"{label} gives a different result from {baseline_label} ({when}): {problem}. "
            "A speedup only counts when the answer is the same; fix the result first."
        )
        return result("fail", message, trials=trials, output_mismatch=problem)

    # Warm-up: tracing, compilation and first-call costs stay out of the timing,
    # and a wrong answer is reported before any time is spent measuring.
    fastest, slowest = math.inf, 0.0
    for i in range(max(warmup, 1)):
        args = [_fresh_inputs(make_inputs)]
        t_b, (out_b,) = _timed_calls(baseline, args)
        t_c, (out_c,) = _timed_calls(candidate, args)
        problem = compare_outputs(out_b, out_c, rtol=rtol, atol=atol)
        if problem:
            return mismatch_result(problem, f"warm-up call {i + 1}", 0)
        if i > 0 or warmup <= 1:  # the first call traces and compiles
            fastest, slowest = min(fastest, t_b, t_c), max(slowest, t_b, t_c)

    if not timed and not measure_when_untimed:
        for i in range(verify_trials):
            args = _fresh_inputs(make_inputs)
            out_b = to_host(baseline(*args))
            out_c = to_host(candidate(*args))
            problem = compare_outputs(out_b, out_c, rtol=rtol, atol=atol)
            if problem:
                return mismatch_result(problem, f"check {i + 1} of {verify_trials}", 0)
        from autograder.checks.thresholds import untimed_reason

        return result(
            "skipped",
            f"{label}: speed not graded on profile {profile_name} ({untimed_reason(check)}); "
            f"output matches {baseline_label} on {max(warmup, 1) + verify_trials} fresh inputs",
        )

    # Each side's sample is the fastest of `reps` calls: at least min_calls,
    # and enough to span min_sample_s (several scheduler time slices, so some
    # call runs uninterrupted); both sides make the same calls on the same
    # inputs, and the slower side's sample is kept under max_sample_s.
    reps = max(min_calls, int(math.ceil(min_sample_s / max(fastest, 1e-9))))
    reps = max(1, min(reps, int(max_sample_s / max(slowest, 1e-9)), _MAX_CALLS_PER_TRIAL))
    n_min = min_trials_for(confidence)
    base_times: list[float] = []
    cand_times: list[float] = []
    ratios: list[float] = []
    started = _clock()
    deadline = started + budget_s
    # The budget may stop sampling only once an interval exists, unless the
    # functions are so slow that even that would take three budgets.
    hard_stop = started + 3 * budget_s
    verdict = "inconclusive"
    med = lo = hi = math.nan
    while True:
        arg_sets = [_fresh_inputs(make_inputs) for _ in range(reps)]
        if len(ratios) % 2 == 0:
            t_b, outs_b = _timed_calls(baseline, arg_sets)
            t_c, outs_c = _timed_calls(candidate, arg_sets)
        else:
            t_c, outs_c = _timed_calls(candidate, arg_sets)
            t_b, outs_b = _timed_calls(baseline, arg_sets)
        for out_b, out_c in zip(outs_b, outs_c):
            problem = compare_outputs(out_b, out_c, rtol=rtol, atol=atol)
            if problem:
                return mismatch_result(problem, f"timed trial {len(ratios) + 1}", len(ratios))
        base_times.append(t_b)
        cand_times.append(t_c)
        ratios.append(t_b / max(t_c, 1e-12))
        if len(ratios) >= n_min:
            med, lo, hi = median_ci(ratios, confidence)
            if timed and lo >= min_ratio:
                verdict = "pass"
                break
            if timed and hi < min_ratio:
                verdict = "fail"
                break
            if not timed and (hi - lo) <= 0.2 * med:
                break
        now = _clock()
        if (now >= deadline and len(ratios) >= n_min) or now >= hard_stop:
            break
    if len(ratios) < n_min:
        med, lo, hi = median_ci(ratios, confidence)

    b_s = float(np.median(base_times))
    c_s = float(np.median(cand_times))
    n = len(ratios)
    head = f"{label}: {format_seconds(c_s)} vs {format_seconds(b_s)} {baseline_label}"
    pct = f"{confidence:.0%}"
    few = math.isinf(lo)
    if few:
        interval = f"only {n} trials fit (a {pct} interval needs {n_min})"
    else:
        interval = f"{pct} interval {lo:.2f}x-{hi:.2f}x over {n} trials"
    if not timed:
        verdict = "skipped"
        message = f"{head} ({_fmt_ratio(med)}, not graded on profile {profile_name}; {interval})"
    elif verdict == "pass":
        message = f"{head} ({_fmt_ratio(med, min_ratio)}, needed {_fmt_ratio(min_ratio)} on profile {profile_name})"
    elif verdict == "fail":
        message = (
            f"{head} ({_fmt_ratio(med, min_ratio)}, needed {_fmt_ratio(min_ratio)} on profile {profile_name}); "
            f"too slow: the {interval} is all below {_fmt_ratio(min_ratio)}"
        )
    else:
        message = (
            f"inconclusive: {head} ({_fmt_ratio(med, min_ratio)}, needed {_fmt_ratio(min_ratio)} "
            f"on profile {profile_name}); "
            + (f"{interval} in {budget_s:g} s" if few else
               f"the {interval} still straddles the threshold after {budget_s:g} s")
            + ". Re-run on a quieter machine (close other programs) to get a verdict."
        )
    return result(
        verdict, message, baseline_s=b_s, candidate_s=c_s, ratio=med,
        ci_low=None if math.isinf(lo) else lo, ci_high=None if math.isinf(hi) else hi,
        trials=n, calls_per_trial=reps,
    )


def assert_speedup(
    baseline: Callable,
    candidate: Callable,
    make_inputs: Callable[[], tuple],
    **kwargs: Any,
) -> SpeedResult:
    """``measure_speedup`` as a check: prints the message on pass and skip,
    raises ``AssertionError`` on fail and ``SpeedInconclusive`` when undecided."""
    res = measure_speedup(baseline, candidate, make_inputs, **kwargs)
    if res.verdict == "fail":
        raise AssertionError(res.message)
    if res.verdict == "inconclusive":
        raise SpeedInconclusive(res.message)
    print(res.message)
    return res


# Same keywords as measure_speedup, for help() and editors.
assert_speedup.__signature__ = inspect.signature(measure_speedup)  # type: ignore[attr-defined]


# --- speed relative to a hidden reference -----------------------------------------


@dataclass
class RelativeSpeedResult:
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

    verdict: str
    baseline_s: float | None
    reference_s: float | None
    candidate_s: float | None
    speedup: float | None
    reference_speedup: float | None
    needed: float | None
    margin: float | None
    margin_ci_low: float | None
    margin_ci_high: float | None
    reference_ci_low: float | None
    reference_ci_high: float | None
    fraction: float
    floor: float | None
    profile: str
    trials: int
    message: str
    check: str = ""
    label: str = "candidate"
    baseline_label: str = "baseline"
    reference_label: str = "the reference solution"
    confidence: float = 0.95
    calls_per_trial: int = 1
    output_mismatch: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


# The six orders of (baseline, reference, candidate); trial k uses _ORDERS[k % 6]
# so each side goes first, second and third equally often.
_ORDERS = ((0, 1, 2), (1, 2, 0), (2, 0, 1), (0, 2, 1), (2, 1, 0), (1, 0, 2))


def _ci_or_none(x: float) -> float | None:
    return None if math.isinf(x) or math.isnan(x) else x


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
    sides = (baseline, reference, candidate)

    def result(verdict: str, message: str, **kw: Any) -> RelativeSpeedResult:
        fields: dict[str, Any] = dict(
            baseline_s=None, reference_s=None, candidate_s=None, speedup=None, reference_speedup=None,
            needed=None, margin=None, margin_ci_low=None, margin_ci_high=None, reference_ci_low=None,
            reference_ci_high=None, trials=0,
        )
        fields.update(kw)
        return RelativeSpeedResult(
            verdict=verdict, fraction=fraction, floor=floor, profile=profile_name, message=message,
            check=check, label=label, baseline_label=baseline_label, reference_label=reference_label,
            confidence=confidence, **fields,
        )

    def verify(outs: Sequence[Any], when: str, trials: int) -> RelativeSpeedResult | None:
        ref = outs[1]
        problem = compare_outputs(ref, outs[0], rtol=rtol, atol=atol)
        if problem:
            raise RuntimeError(
                f"the test is wrong: {baseline_label} and {reference_label} give different results ({when}): {problem}"
            )
        problem = compare_outputs(ref, outs[2], rtol=rtol, atol=atol)
        if problem:
            message = (
                f"{label} gives a different result from {reference_label} ({when}): {problem}. "
                "A speedup only counts when the answer is the same; fix the result first."
            )
            return result("fail", message, trials=trials, output_mismatch=problem)
        return None

    # Warm-up: tracing, compilation and first-call costs stay out of the timing,
    # and a wrong answer is reported before any time is spent measuring.
    fastest, slowest = math.inf, 0.0
    for i in range(max(warmup, 1)):
        args = [_fresh_inputs(make_inputs)]
        timed = [_timed_calls(fn, args) for fn in sides]
        bad = verify([outs[0] for _, outs in timed], f"warm-up call {i + 1}", 0)
        if bad:
            return bad
        if i > 0 or warmup <= 1:
            fastest = min(fastest, *(t for t, _ in timed))
            slowest = max(slowest, *(t for t, _ in timed))

    if not required:
        for i in range(verify_trials):
            args = _fresh_inputs(make_inputs)
            bad = verify([to_host(fn(*args)) for fn in sides], f"check {i + 1} of {verify_trials}", 0)
            if bad:
                return bad
        return result(
            "skipped",
            f"{label}: speed not graded on profile {profile_name}; output matches {reference_label} "
            f"on {max(warmup, 1) + verify_trials} fresh inputs",
        )

    reps = max(min_calls, int(math.ceil(min_sample_s / max(fastest, 1e-9))))
    reps = max(1, min(reps, int(max_sample_s / max(slowest, 1e-9)), _MAX_CALLS_PER_TRIAL))
    n_min = min_trials_for(confidence)
    times: list[list[float]] = [[], [], []]
    margins: list[float] = []
    ref_speedups: list[float] = []
    started = _clock()
    deadline = started + budget_s
    hard_stop = started + 3 * budget_s
    verdict = "inconclusive"
    m_med = m_lo = m_hi = r_med = r_lo = r_hi = math.nan
    while True:
        trial = len(margins)
        arg_sets = [_fresh_inputs(make_inputs) for _ in range(reps)]
        measured: list[Any] = [None, None, None]
        for side in _ORDERS[trial % len(_ORDERS)]:
            measured[side] = _timed_calls(sides[side], arg_sets)
        for call in range(reps):
            bad = verify([measured[s][1][call] for s in range(3)], f"timed trial {trial + 1}", trial)
            if bad:
                return bad
        t_b, t_r, t_c = (max(measured[s][0], 1e-12) for s in range(3))
        for s, t in enumerate((t_b, t_r, t_c)):
            times[s].append(t)
        ref_speedups.append(t_b / t_r)
        margins.append((t_b / t_c) / (t_b / t_r) ** fraction)
        if len(margins) >= n_min:
            m_med, m_lo, m_hi = median_ci(margins, confidence)
            r_med, r_lo, r_hi = median_ci(ref_speedups, confidence)
            if r_hi < floor:
                verdict = "no-effect"
                break
            if r_lo >= floor and m_lo >= 1.0:
                verdict = "pass"
                break
            if r_lo >= floor and m_hi < 1.0:
                verdict = "fail"
                break
        now = _clock()
        if (now >= deadline and len(margins) >= n_min) or now >= hard_stop:
            break
    if len(margins) < n_min:
        m_med, m_lo, m_hi = median_ci(margins, confidence)
        r_med, r_lo, r_hi = median_ci(ref_speedups, confidence)

    b_s, r_s, c_s = (float(np.median(t)) for t in times)
    speedup = float(np.median([b / c for b, c in zip(times[0], times[2])]))
    needed = r_med ** fraction
    n = len(margins)
    pct = f"{confidence:.0%}"
    head = (
        f"{label}: {format_seconds(c_s)} vs {format_seconds(b_s)} {baseline_label}, "
        f"{_fmt_ratio(speedup, needed)} faster; {reference_label} is {_fmt_ratio(r_med)} faster "
        f"({format_seconds(r_s)}), so {_fmt_ratio(needed, speedup)} was needed "
        f"({fraction:g} of its speedup, counted in factors: {r_med:.2f} ** {fraction:g})"
    )
    if math.isinf(m_lo):
        interval = f"only {n} trials fit (a {pct} interval needs {n_min})"
    else:
        interval = (f"{pct} interval of your speed relative to what was needed: "
                    f"{m_lo:.2f}-{m_hi:.2f} over {n} trials")
    if verdict == "pass":
        message = f"{head}; profile {profile_name}"
        final = "pass"
    elif verdict == "fail":
        message = f"{head}; too slow: the {interval} is all below 1.00 (profile {profile_name})"
        final = "fail"
    elif verdict == "no-effect":
        message = (
            f"inconclusive: {reference_label} is only {_fmt_ratio(r_med)} faster than {baseline_label} on this "
            f"machine ({pct} interval {r_lo:.2f}x-{r_hi:.2f}x), below the floor of {_fmt_ratio(floor)} for "
            f"profile {profile_name}{floor_note}: this machine does not show the speedup the part is about, "
            f"so it cannot grade it. Re-run on a quieter machine (or the intended hardware). [{head}]"
        )
        final = "inconclusive"
    else:
        why = (f"{interval} in {budget_s:g} s" if math.isinf(m_lo) else
               f"the {interval} still straddles 1.00 after {budget_s:g} s")
        if not math.isinf(r_lo) and r_lo < floor <= r_hi:
            why += f"; {reference_label}'s speedup ({r_lo:.2f}x-{r_hi:.2f}x) straddles the floor {_fmt_ratio(floor)}"
        message = (f"inconclusive: {head}; {why} (profile {profile_name}). "
                   "Re-run on a quieter machine (close other programs) to get a verdict.")
        final = "inconclusive"
    return result(
        final, message, baseline_s=b_s, reference_s=r_s, candidate_s=c_s, speedup=speedup,
        reference_speedup=r_med, needed=needed, margin=m_med, margin_ci_low=_ci_or_none(m_lo),
        margin_ci_high=_ci_or_none(m_hi), reference_ci_low=_ci_or_none(r_lo),
        reference_ci_high=_ci_or_none(r_hi), trials=n, calls_per_trial=reps,
    )


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
    res = measure_relative_speedup(baseline, reference, candidate, make_inputs, **kwargs)
    if res.verdict == "fail":
        raise AssertionError(res.message)
    if res.verdict == "inconclusive":
        raise SpeedInconclusive(res.message)
    print(res.message)
    return res


assert_relative_speedup.__signature__ = inspect.signature(measure_relative_speedup)  # type: ignore[attr-defined]
