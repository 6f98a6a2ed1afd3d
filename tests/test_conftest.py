"""tests/conftest.py: how the suite is shared between pytest-xdist's workers."""
from __future__ import annotations

import re
import subprocess
import sys

from tests.conftest import ROOT, assignments, batch_workers, xdist_group

CATALOGUE = "tests/grading/test_assignments.py::test_catalogue_case_gets_expected_scores"


def test_book_tests_share_a_group_and_batches_split_by_function_and_assignment():
    assert xdist_group("tests/book/test_book.py::test_every_toc_page_is_built") == "tests/book"
    assert xdist_group("tests/book/test_ops_build.py::test_x[a-b]") == "tests/book"
    assert xdist_group(f"{CATALOGUE}[04_xla-not_compiled]") == f"{CATALOGUE}::04_xla"
    assert xdist_group(f"{CATALOGUE}[04_xla-right_wrapper]") == f"{CATALOGUE}::04_xla"
    solution = "tests/grading/test_assignments.py::test_solution_scores_full_marks"
    assert xdist_group(f"{solution}[01_op_logs]") == xdist_group(f"{solution}[10_scaling_out]") == solution
    assert xdist_group("tests/checks/test_timing.py::test_a[x-y]") == "tests/checks/test_timing.py"
    # A catalogue id is "ASSIGNMENT-CASE": an assignment's name must not hold the separator.
    assert not [name for name in assignments() if "-" in name]


def test_batches_never_ask_for_more_notebooks_than_cores(monkeypatch):
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "1")
    alone = batch_workers()
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", str(alone))
    assert batch_workers() == 1
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", str(alone * 4))
    assert batch_workers() == 1


def test_each_module_runs_whole_on_one_worker():
    """Two workers, three modules: every module's tests report from a single worker (xdist's
    own grouping once failed silently, splitting modules and building the book twice)."""
    modules = ["tests/test_atomic.py", "tests/grading/test_feedback.py", "tests/judge/test_protocol.py"]
    proc = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "-v", "-p", "no:cacheprovider", *modules],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:]
    workers: dict[str, set[str]] = {}
    for worker, module in re.findall(r"\[(gw\d+)\] .*?PASSED (tests/\S+?\.py)::", proc.stdout):
        workers.setdefault(module, set()).add(worker)
    assert set(workers) == set(modules), proc.stdout[-3000:]
    assert all(len(ran_on) == 1 for ran_on in workers.values()), workers
    assert len(set().union(*workers.values())) == 2  # and both workers were used
