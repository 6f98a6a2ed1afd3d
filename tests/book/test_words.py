"""The words the chapters print about their own figures are chosen from those figures.

``book/_helpers/words.py`` turns a measured ratio, cost or series into words
("faster", "costs nothing measurable", "does not grow") with a stated
tolerance, and ``guard`` fails a page's build when a sentence it states is
false on the machine building it.  These tests pin the helper's choices at
and around each tolerance, and check that each page whose prose once typed
such a word about a measured figure now prints it from the helper or guards
it (the sentences issue 55 listed, and the ones found like them).
"""
from __future__ import annotations

import importlib.util
import math
import re

import pytest

from tests.book.test_book_claims import BOOK, code_cells, prose

_spec = importlib.util.spec_from_file_location("book_words", BOOK / "_helpers" / "words.py")
words = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(words)


# --- the helper ------------------------------------------------------------------------

@pytest.mark.parametrize("speedup, expected", [
    (1.53, "faster"), (1.051, "faster"), (1.05, "about as fast"), (1.0, "about as fast"),
    (0.96, "about as fast"), (1 / 1.05, "about as fast"), (0.95, "slower"), (0.85, "slower"),
])
def test_speed_word_reads_a_speedup_with_a_five_percent_band(speedup, expected):
    assert words.speed_word(speedup) == expected


def test_speed_phrase_says_than_or_as():
    assert words.speed_phrase(1.13, "float32") == "faster than float32"
    assert words.speed_phrase(0.8, "float32") == "slower than float32"
    assert words.speed_phrase(0.99, "float32") == "about as fast as float32"


def test_an_interval_that_contains_1_is_about_the_same_whatever_the_median():
    # chapter 7's op against XLA: median 0.93x, 98.5% interval 0.91x-1.12x
    assert words.speed_phrase(0.93, "it") == "slower than it"
    assert words.speed_phrase(0.93, "it", interval=(0.91, 1.12)) == "about as fast as it"
    assert words.speed_phrase(2.1, "it", interval=(1.9, 2.3)) == "faster than it"
    assert words.speed_phrase(0.93, "it", interval=(None, None)) == "slower than it"


def test_a_wider_tolerance_turns_a_direction_into_about_the_same():
    assert words.speed_word(1.08) == "faster"
    assert words.speed_word(1.08, tolerance=0.1) == "about as fast"


@pytest.mark.parametrize("bad", [0, -1.2, float("nan"), "fast", None])
def test_speed_word_refuses_what_is_not_a_speedup(bad):
    with pytest.raises(ValueError, match="speedup"):
        words.speed_word(bad)


def test_a_negative_start_up_cost_is_never_called_a_cost():
    # chapter 4 once printed a start-up cost of -15 ms under "it is not cheap"
    assert words.cost_words(-15, noise=40) == "costs nothing measurable here (-15 ms, inside the \u00b140 ms noise)"
    assert words.cost_words(-60, noise=40).startswith("saves 60 ms")
    assert words.cost_words(120, noise=40) == "costs 120 ms"
    assert words.cost_words(40, noise=40).startswith("costs nothing measurable")


@pytest.mark.parametrize("values, expected", [
    ([250.9, 443.2, 122.9], "varies"),   # chapter 6's While trace times, once called "flat"
    ([83.4, 90.0, 74.1], "stays flat"),
    ([83.4, 93.6, 74.1], "varies"),         # 26% apart: outside the band
    ([135, 543, 2096], "grows"),
    ([100, 60, 30], "shrinks"),
    ([0.0, 0.0, 0.0], "stays flat"),
])
def test_trend_word(values, expected):
    assert words.trend_word(values) == expected


def test_a_trend_needs_two_numbers():
    with pytest.raises(ValueError, match="at least two"):
        words.trend_word([1.0])


@pytest.mark.parametrize("first, last, expected", [
    (135.0, 2096.0, "grows (15.53x)"), (83.4, 74.1, "does not grow (0.89x)"),
    (250.9, 122.9, "does not grow (0.49x)"), (100.0, 125.0, "does not grow (1.25x)"),
    (100.0, 126.0, "grows (1.26x)"),
])
def test_growth_words(first, last, expected):
    assert words.growth_words(first, last) == expected


def test_guard_returns_a_true_sentence_and_fails_the_build_on_a_false_one():
    assert words.guard(2 > 1, "two is more") == "two is more"
    with pytest.raises(AssertionError, match="the page says 'stays flat'"):
        words.guard(max([250.9, 443.2, 122.9]) < 1.25 * min([250.9, 443.2, 122.9]), "stays flat")


def test_the_tolerances_are_stated_numbers():
    assert words.SAME_SPEED == pytest.approx(0.05) and words.FLAT == pytest.approx(0.25)
    assert not math.isnan(words.SAME_SPEED)


# --- the pages use it ------------------------------------------------------------------

def _page(name: str) -> str:
    return (BOOK / name).read_text(encoding="utf-8")


def _code(name: str) -> str:
    return "\n".join(code_cells(_page(name)))


# page -> helper functions its cells must call (the figure-bound sentences they now print or guard)
USES = {
    "01_op_logs.md": ["guard("],
    "02_gpu_placement.md": ["speed_phrase("],
    "03_mixed_precision.md": ["speed_phrase("],
    "04_xla.md": ["cost_words(", "speed_phrase("],
    "05_tf_data.md": ["guard(", "speed_phrase("],
    "06_autograph.md": ["growth_words(", "guard("],
    "07_custom_ops.md": ["speed_phrase("],
    "08_deployment.md": ["guard(", "speed_phrase("],
    "09_profiling.md": ["guard("],
}


@pytest.mark.parametrize("page", sorted(USES))
def test_each_changed_page_imports_the_helper_and_calls_it(page):
    code = _code(page)
    assert re.search(r"^from _helpers\.words import ", code, re.M), f"{page} does not import book/_helpers/words.py"
    for call in USES[page]:
        assert call in code, f"{page}: no {call}...) in its cells"


# Sentences that once stood in prose under a figure that contradicted them; none may come back.
GONE = {
    "01_op_logs.md": ["no longer appears", "only shows up when you ask for it", "not at construction"],
    "03_mixed_precision.md": ["show what that costs", "would see a slowdown"],
    "04_xla.md": ["it is not cheap"],
    "05_tf_data.md": ["so much faster"],
    "06_autograph.md": ["stays flat", "the `<` and `+` had also been lost"],
    "09_profiling.md": ["made no measurable difference", "the count stays flat"],
    "hardware.md": ["not predicted:"],
    "exercises.md": ["run too"],
}


@pytest.mark.parametrize("page", sorted(GONE))
def test_the_contradicted_sentences_are_gone(page):
    text = re.sub(r"\s+", " ", _page(page))
    back = [s for s in GONE[page] if s in text]
    assert not back, f"{page} says again {back}: print the words from the figure or guard them"


def test_chapter_1_states_the_four_var_is_initialized_cases_from_one_guarded_cell():
    code = _code("01_op_logs.md")
    for case in ["tf.Variable(...), eager", "tf.function's 1st call", "model.fit, Adam", "model.fit, SGD"]:
        assert case in code
    assert "guard(one_per_traced_variable" in code and "keras.Input((3,))" in code
    assert "_evaluate_var_is_initialized" in prose(_page("01_op_logs.md"))


def test_no_changed_page_types_a_flat_cheap_or_negligible_verdict_in_prose():
    """Those verdicts about a measured figure are printed by the page's cells, never typed."""
    flagged = []
    for page in USES:
        text = _page(page)
        for match in re.finditer(r"\b(stays flat|not cheap|negligible|what that costs)\b", prose(text)):
            flagged.append(f"{page}: {match.group(0)!r}")
    assert not flagged, flagged


def test_the_onednn_default_is_stated_as_the_linux_x86_policy():
    for page in ["01_op_logs.md", "03_mixed_precision.md", "09_profiling.md", "hardware.md"]:
        text = re.sub(r"\s+", " ", prose(_page(page)))
        for match in re.finditer(r"AVX512_VNNI, AVX512_BF16, AVX_VNNI or AMX", text):
            window = text[max(0, match.start() - 200):match.end() + 200]
            assert "Linux x86" in window and "Windows and Arm" in window, f"{page}: {window}"


def test_the_exercises_page_says_check_runs_the_visible_tests_only_in_checks_own_words():
    from autograder.frontends.check import HIDDEN_LATER

    text = re.sub(r"\s+", " ", prose(_page("exercises.md")))
    assert "visible tests only" in text
    assert f"visible tests: N/M; {HIDDEN_LATER}" in text, "quote check's last line as check prints it"


def test_the_hardware_page_does_not_print_a_bare_true_under_onednn_off():
    code = _code("hardware.md")
    assert "{status.measured}" not in code
    assert "asked of TensorFlow in this process" in code and "predicted from the CPU's flags" in code
