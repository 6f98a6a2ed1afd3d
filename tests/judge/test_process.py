"""The judge process's steps: locked cells once, each part in a fresh copy, verdicts from what it raised."""
from __future__ import annotations

from autograder.checks import probe
from autograder.judge import process


def test_locked_cells_run_in_order_and_errors_are_reported():
    namespace, errors = process.run_locked_cells(["x = 2", "y = x * 3", "z = learner_answer()"])
    assert namespace["y"] == 6 and len(errors) == 1 and "NameError" in errors[0]


def test_each_part_gets_a_fresh_copy_of_the_locked_namespace():
    base, _ = process.run_locked_cells(["limit = 3"])
    assert process.judge_part("limit = 99\nleft_behind = 1", base, "a").status == "passed"
    later = process.judge_part("assert limit == 3 and 'left_behind' not in globals()", base, "b")
    assert later.status == "passed", later.message


def test_what_a_hidden_test_raises_decides_the_verdict():
    from autograder.checks.timing import SpeedInconclusive

    base = {"probe": probe, "SpeedInconclusive": SpeedInconclusive}
    assert process.judge_part("print('fine')", base, "g").message == "fine"
    failed = process.judge_part("assert 1 == 2, 'wrong value'", base, "g")
    assert (failed.status, failed.message) == ("failed", "wrong value")
    raised = process.judge_part("raise probe.LearnerError('NotImplementedError', '')", base, "g")
    assert raised.status == "failed" and "not answered yet" in raised.message
    assert process.judge_part("raise SpeedInconclusive('inconclusive: noisy')", base, "g").status == "inconclusive"
    assert process.judge_part("1 / 0", base, "g").message.startswith("ZeroDivisionError")


DRAWS = """
import random
import numpy as np
rng = np.random.default_rng()
print([int(rng.integers(0, 10**9)), int(np.random.default_rng().integers(0, 10**9)),
       int(np.random.randint(0, 10**9)), random.randrange(10**9), int(np.random.default_rng(7).integers(0, 10**9))])
"""


def test_a_hidden_tests_draws_are_the_same_at_every_regrade_of_a_submission():
    import numpy as np

    first = process.judge_part(DRAWS, {}, "test-x", submission="a1").message
    assert process.judge_part(DRAWS, {}, "test-x", submission="a1").message == first
    values = eval(first)  # noqa: S307  (the list printed above)
    assert len(set(values[:4])) == 4, "each unseeded generator draws its own stream"
    assert values[4] == int(np.random.default_rng(7).integers(0, 10**9)), "a seed the test gives is kept"
    others = [eval(process.judge_part(DRAWS, {}, gid, submission=s).message)
              for gid, s in (("test-x", "a2"), ("test-y", "a1"))]
    assert all(o[:4] != values[:4] for o in others), "another submission or another part draws otherwise"
    assert np.random.default_rng is not None and np.random.default_rng.__module__.startswith("numpy"), \
        "the judge's own default_rng is restored after the part"
