"""Words chosen from the numbers a page measured, so its prose cannot contradict them.

The book is built on machines whose figures differ (oneDNN on or off, two cores
or sixteen, a busy or an idle host).  A sentence such as "float16 is slower" or
"the start-up is not cheap" is true on one build and false on the next, so the
chapters never type such a word about a figure they measure: a cell calls one of
these functions with the figure and prints the sentence they return, or calls
:func:`guard` so the build fails when the words it sits next to turn false.

Each function states its tolerance: inside it the words say "about the same"
(or "flat", "nothing measurable"), never a direction the noise could reverse.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

SAME_SPEED = 0.05   # a speedup within 5% of 1 is "about as fast"
FLAT = 0.25         # a series whose largest value is within 25% of its smallest "stays flat"


def _number(value: float, what: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a number, not {value!r}") from None
    if math.isnan(number):
        raise ValueError(f"{what} is NaN: measure it again before describing it")
    return number


def speed_word(speedup: float, *, tolerance: float = SAME_SPEED, faster: str = "faster",
               slower: str = "slower", same: str = "about as fast",
               interval: tuple[float | None, float | None] | None = None) -> str:
    """``faster``, ``slower`` or ``same`` for a speedup (baseline time / candidate time).

    Above ``1 + tolerance`` is faster, below ``1 / (1 + tolerance)`` slower, and
    anything between is ``same``, so noise around 1 never reads as a direction.
    Given the measurement's confidence ``interval`` (low, high), a speedup whose
    interval contains 1 is ``same`` too: the measurement could not tell."""
    ratio = _number(speedup, "speedup")
    if ratio <= 0:
        raise ValueError(f"speedup must be positive (baseline time / candidate time), not {ratio}")
    if tolerance < 0:
        raise ValueError(f"tolerance must be 0 or more, not {tolerance}")
    if interval is not None and None not in interval and interval[0] <= 1 <= interval[1]:
        return same
    if ratio > 1 + tolerance:
        return faster
    if ratio < 1 / (1 + tolerance):
        return slower
    return same


def speed_phrase(speedup: float, baseline: str, *, tolerance: float = SAME_SPEED,
                 interval: tuple[float | None, float | None] | None = None) -> str:
    """"faster than X", "slower than X" or "about as fast as X" for a speedup over ``baseline``
    (the tolerance and interval of :func:`speed_word`)."""
    word = speed_word(speedup, tolerance=tolerance, interval=interval)
    return f"{word} as {baseline}" if word == "about as fast" else f"{word} than {baseline}"


def cost_words(cost: float, *, noise: float, unit: str = "ms", digits: int = 0) -> str:
    """A one-off cost (a compile, a start-up) in words, against the noise of its measurement.

    Costs above ``noise`` read "costs 120 ms"; anything within ``noise`` of zero
    (including a negative difference) reads "costs nothing measurable here
    (-15 ms, inside the +-40 ms noise)"; a cost below ``-noise`` reads as a saving."""
    value = _number(cost, "cost")
    margin = abs(_number(noise, "noise"))
    shown = f"{value:.{digits}f} {unit}"
    if value > margin:
        return f"costs {shown}"
    if value < -margin:
        return f"saves {-value:.{digits}f} {unit} (a negative cost: the other side did more work)"
    return f"costs nothing measurable here ({shown}, inside the \u00b1{margin:.{digits}f} {unit} noise)"


def trend_word(values: Sequence[float], *, tolerance: float = FLAT) -> str:
    """``stays flat``, ``grows``, ``shrinks`` or ``varies`` for a measured series.

    Flat when the largest value is within ``tolerance`` of the smallest; grows
    (shrinks) when each value is at least the one before (at most) and the series
    is not flat; varies otherwise: up and down by more than ``tolerance``."""
    numbers = [_number(v, "each value") for v in values]
    if len(numbers) < 2:
        raise ValueError(f"a trend needs at least two values, got {len(numbers)}")
    low, high = min(numbers), max(numbers)
    if low > 0 and high <= low * (1 + tolerance):
        return "stays flat"
    if low <= 0 and high - low <= tolerance * max(abs(low), abs(high), 1e-12):
        return "stays flat"
    pairs = list(zip(numbers, numbers[1:]))
    if all(b >= a for a, b in pairs):
        return "grows"
    if all(b <= a for a, b in pairs):
        return "shrinks"
    return "varies"


def growth_words(first: float, last: float, *, tolerance: float = FLAT) -> str:
    """"grows" or "does not grow", with the factor: how a measured time moved from the
    smallest case to the largest ("grows (15.5x)", "does not grow (0.89x)").

    Grows when ``last`` is more than ``1 + tolerance`` times ``first``."""
    start, end = _number(first, "first"), _number(last, "last")
    if start <= 0:
        raise ValueError(f"first must be positive to compare growth against it, not {start}")
    factor = end / start
    return f"{'grows' if factor > 1 + tolerance else 'does not grow'} ({factor:.2f}x)"


def guard(holds: bool, sentence: str) -> str:
    """``sentence`` when ``holds``; otherwise an AssertionError that fails the build.

    For a sentence in the page's prose that the numbers must bear out: the cell
    under (or above) it calls ``guard(<the condition>, "<the sentence>")`` and
    prints what it returns, so a build where it is false stops at that cell."""
    if not holds:
        raise AssertionError(f"the page says {sentence!r}, and this build's numbers say otherwise: "
                             "rewrite the sentence or choose its words with book/_helpers/words.py")
    return sentence
