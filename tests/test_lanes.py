"""The helper lane (tests/lanes.py), in sessions of their own: every test is reported once, by
the lane that ran it, failures included; a helper that dies fails its tests instead of losing
them; a timed test starts only once the helper has ended; the summary says what the whole machine did."""
from __future__ import annotations

import re
import time

import pytest

from tests.conftest import ROOT

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.untimed

CONFTEST = "from tests.conftest import *  # noqa: F401,F403  (the course's hooks, lanes included)\n"
INI = """[pytest]
markers =
    untimed: times nothing
    book_compiles: after the book's compiles
"""
# Each test writes which process ran it; the modules sleep a little, so both lanes get work.
MODULE = '''import os, time, pytest
pytestmark = pytest.mark.untimed

@pytest.fixture(scope="session")
def slow_to_end():
    yield
    time.sleep(1.5)  # the helper's last teardown: a timed test must not start before it ends
    with open(os.environ["LANE_LOG"], "a") as log:
        log.write("ended " + str(os.getpid()) + "\\n")

def test_{name}_a(slow_to_end):
    time.sleep(1.0)
    with open(os.environ["LANE_LOG"], "a") as log:
        log.write("{name}_a " + str(os.getpid()) + "\\n")

def test_{name}_b():
    with open(os.environ["LANE_LOG"], "a") as log:
        log.write("{name}_b " + str(os.getpid()) + "\\n")
    {body}
'''
# A module with one untimed test (the helper's, as it starts from the back) and one timed test,
# which only the session may run.
MIXED = '''import os, pytest

def _log(name):
    with open(os.environ["LANE_LOG"], "a") as log:
        log.write(name + " " + str(os.getpid()) + "\\n")

@pytest.mark.untimed
def test_m5_untimed():
    _log("m5_u")

def test_m5_timed():
    _log("m5_t")
'''
TIMED = '''import os

def test_timed_runs_after_every_untimed_test():
    log = dict(line.split() for line in open(os.environ["LANE_LOG"]) if not line.startswith("ended"))
    assert {n + s for n in ("m1", "m2", "m3", "m4") for s in ("_a", "_b")} <= set(log), log
    if log["m4_a"] != str(os.getpid()):  # the helper ran m4: it has ended, its teardown too
        assert "ended " + log["m4_a"] in open(os.environ["LANE_LOG"]).read()
'''


@pytest.fixture
def session(pytester, monkeypatch, tmp_path):
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.setenv("LANE_LOG", str(tmp_path / "lanes.log"))
    monkeypatch.delenv("COURSE_TEST_LANES", raising=False)
    monkeypatch.delenv("COURSE_TEST_LANE_DIR", raising=False)  # when this test runs in a helper lane
    pytester.makeconftest(CONFTEST)
    pytester.makeini(INI)

    def run(bodies: dict[str, str]):
        for name in ("m1", "m2", "m3", "m4"):
            pytester.makepyfile(**{f"test_{name}": MODULE.format(name=name, body=bodies.get(name, "pass"))})
        pytester.makepyfile(test_timed=TIMED, test_m5=MIXED)
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rA")
        log = [line.split() for line in (tmp_path / "lanes.log").read_text().splitlines()
               if not line.startswith("ended")]
        ran_by = {name: int(pid) for name, pid in log}
        assert len(ran_by) == len(log), f"a test ran twice: {log}"
        return result, ran_by

    return run


def test_two_lanes_share_the_untimed_modules_and_report_each_test_once(session, tmp_path):
    result, ran_by = session({})
    result.assert_outcomes(passed=11)
    assert "ended" in (tmp_path / "lanes.log").read_text()
    assert len(set(ran_by.values())) == 2, f"one process ran every test: {ran_by}"
    assert ran_by["m1_a"] != ran_by["m5_u"], "the session starts at the front, the helper at the back"
    assert ran_by["m5_t"] == ran_by["m1_a"], "a timed test of a module the helper took runs in the session"
    assert all(ran_by[f"m{i}_a"] == ran_by[f"m{i}_b"] for i in range(1, 5)), "a module runs in one lane"
    assert result.stdout.str().count("PASSED test_m4.py::test_m4_b") == 1
    assert "helper lane: ran" in result.stdout.str()
    # the two timed tests (m5_timed and the timed module), counted by the session: the helper runs none
    assert re.search(r"^timed tests: 2, from \d+ s after the session began, for \d+ s$", result.stdout.str(),
                     re.MULTILINE), result.stdout.str()


def test_a_failure_in_the_helper_fails_the_session(session):
    result, ran_by = session({"m4": "assert False, 'broken in the helper'"})
    result.assert_outcomes(passed=10, failed=1)
    assert "broken in the helper" in result.stdout.str()
    assert ran_by["m4_b"] != ran_by["m1_a"], "m4 ran in the helper"


def test_a_helper_that_dies_fails_the_tests_it_did_not_report(session):
    result, ran_by = session({"m4": "os._exit(3)"})
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) >= 1 and result.ret != 0
    assert "the helper lane ended (exit 3) before it reported this test" in result.stdout.str()


def test_with_lanes_off_one_process_runs_everything(session, monkeypatch):
    monkeypatch.setenv("COURSE_TEST_LANES", "1")
    result, ran_by = session({})
    result.assert_outcomes(passed=11)
    assert len(set(ran_by.values())) == 1
    assert "timed tests: 2, from " in result.stdout.str()
    # and what the whole machine did meanwhile
    assert re.search(r"^machine CPU: \d+ core-s busy, \d+ idle, \d+ taken by the hypervisor, in \d+ s on \d+ cores$",
                     result.stdout.str(), re.MULTILINE), result.stdout.str()


def test_machine_cpu_counts_every_state_of_the_snapshots():
    """Busy is user, nice, system and the interrupts (guest time is inside user already); waiting
    on disk is idle; steal is the hypervisor's."""
    from collections import namedtuple

    from tests.conftest import MachineCPU

    Times = namedtuple("Times", "user nice system idle iowait irq softirq steal guest guest_nice")
    snapshots = iter([Times(10, 1, 5, 100, 2, 0, 1, 3, 4, 0), Times(110, 3, 25, 160, 6, 1, 2, 10, 50, 0)])
    clock = iter([1000.0, 1090.0])
    machine = MachineCPU(read=lambda: next(snapshots), clock=lambda: next(clock))
    assert machine.spent() == {"busy": 100 + 2 + 20 + 1 + 1, "idle": 60 + 4, "steal": 7, "wall": 90.0}


def test_machine_cpu_reads_the_whole_machine_not_this_process():
    """Over a second and a half of this process spinning, the machine's busy, idle and stolen core-seconds add
    up to its cores times the wall time (one process's CPU times would hold no idle)."""
    from tests.conftest import MachineCPU

    machine = MachineCPU()
    spin_until = time.process_time() + 1.5
    while time.process_time() < spin_until:
        pass
    spent = machine.spent()
    assert spent["busy"] >= 1.2, spent
    total = spent["busy"] + spent["idle"] + spent["steal"]
    assert 0.8 * machine.cores * spent["wall"] <= total <= 1.2 * machine.cores * spent["wall"], (machine.cores, spent)
