"""The thresholds table: complete, documented, and strict enough to mean something."""
from __future__ import annotations

import inspect
import re

import pytest

from autograder.checks import thresholds
from autograder.course.benchmarks import BENCHMARKS
from autograder.checks.hardware import KNOWN_PROFILES, current_profile
from autograder.checks.thresholds import THRESHOLDS, UnknownCheck, min_ratio_for


@pytest.mark.parametrize("check", sorted(THRESHOLDS))
def test_every_row_covers_every_profile_with_a_real_speedup(check):
    row = THRESHOLDS[check]
    assert set(row) == set(KNOWN_PROFILES), f"{check}: missing {set(KNOWN_PROFILES) - set(row)}"
    for profile, value in row.items():
        # 1.0 or less would let a candidate with no speedup pass.
        assert value is None or (isinstance(value, float) and value > 1.0), (check, profile, value)


def test_every_row_says_where_its_numbers_came_from():
    source = inspect.getsource(thresholds)
    table = source[source.index("THRESHOLDS: dict"):source.index("class UnknownCheck")]
    starts = [(m.start(), m.group(1)) for m in re.finditer(r'^    "(\w+)": \{', table, re.M)]
    assert [name for _, name in starts] == list(THRESHOLDS)
    ends = [s for s, _ in starts[1:]] + [len(table)]
    for (start, name), end in zip(starts, ends):
        block = table[start:end]
        assert "measured" in block.lower(), f"{name}: no comment saying where its numbers came from"
        gpu_values = [THRESHOLDS[name][p] for p in KNOWN_PROFILES if p != "cpu"]
        if any(v is not None for v in gpu_values):
            assert "not measured here" in block.lower(), f"{name}: GPU values need their provenance"


def test_untimed_reasons_belong_to_rows_with_an_untimed_profile():
    for check in thresholds.UNTIMED_REASONS:
        assert None in THRESHOLDS[check].values(), check
    assert thresholds.untimed_reason("graph_vs_eager") == (
        "the thresholds table has no speed requirement for 'graph_vs_eager' here"
    )


def test_every_benchmark_pair_has_a_row():
    assert {b.check for b in BENCHMARKS.values()} <= set(THRESHOLDS)


def test_lookup_and_clear_errors():
    assert min_ratio_for("xla_fused_chain", "cpu") == 2.0
    assert min_ratio_for("mixed_precision_step", "cpu") is None
    with pytest.raises(UnknownCheck) as info:
        min_ratio_for("xla_fast", "cpu")
    assert str(info.value).startswith("no speed threshold for check 'xla_fast'; known checks: ")
    assert str(info.value).endswith("(add a row to autograder/checks/thresholds.py)")
    with pytest.raises(UnknownCheck, match="check 'xla_fused_chain' has no threshold for profile 'tpu'"):
        min_ratio_for("xla_fused_chain", "tpu")


@pytest.mark.parametrize("profile", [p for p in KNOWN_PROFILES if p != "cpu"])
def test_injected_gpu_profile_grades_mixed_precision_on_time(monkeypatch, profile):
    monkeypatch.setenv("AUTOGRADER_PROFILE", profile)
    name = current_profile().name
    assert name == profile
    assert min_ratio_for("mixed_precision_step", name) > 1.0


def test_a_blanked_row_does_not_skip_a_required_relative_check(monkeypatch):
    """THRESHOLDS[row] = None once turned a speed part into "skipped" (full
    marks); the relative check takes "required" from the hidden test and uses
    a floor of 1.0 for a None row, so the verdict is still timed."""
    import time

    import numpy as np

    from autograder.checks.timing import measure_relative_speedup

    def sleeper(seconds):
        def fn(x):
            time.sleep(seconds)
            return x

        return fn

    monkeypatch.setitem(THRESHOLDS, "tfdata_vectorized_map", dict.fromkeys(KNOWN_PROFILES))
    res = measure_relative_speedup(sleeper(0.006), sleeper(0.001), sleeper(0.006), lambda: (np.zeros(2),),
                                   check="tfdata_vectorized_map", fraction=0.5, profile="cpu",
                                   min_calls=1, min_sample_s=0.0)
    assert res.verdict == "fail" and res.floor == 1.0
