"""The grader's start-up is reported apart from a submission's execution time (issue 54, item 9)."""
from __future__ import annotations

import threading
import time

from autograder.frontends import pipeline
from autograder.sandbox import startup, warm_start
from autograder.results.results import Results
from tests.files.hostile.catalogue import TINY, answers
from autograder.submission.assignment import load_assignment


def test_charged_time_counts_only_inside_a_count_and_on_its_own_thread():
    with startup.charged():
        time.sleep(0.01)  # outside any count: nothing to add to, nothing raised
    with startup.counting() as seconds:
        with startup.charged():
            time.sleep(0.05)
        other = threading.Thread(target=lambda: startup.charged().__enter__())  # another thread's grade
        other.start()
        other.join()
        time.sleep(0.02)  # the submission's own time: not charged
        assert 0.05 <= seconds() < 0.065


def test_waiting_for_the_worker_zygote_is_startup_not_execution_time(tmp_path, monkeypatch):
    notebook = tmp_path / "tiny.ipynb"
    notebook.write_bytes(answers()(None))
    spawn = warm_start._POOL.spawn

    def slow_spawn(*args, **kwargs):  # a zygote still importing: the wait the first submission pays
        time.sleep(2.0)
        return spawn(*args, **kwargs)

    monkeypatch.setattr(warm_start._POOL, "spawn", slow_spawn)
    started = time.perf_counter()
    results = pipeline.grade_notebook(notebook, load_assignment(TINY), isolate=False)
    total = time.perf_counter() - started
    assert results.score == 5, [t.output for t in results.tests]
    assert results.startup_s >= 2.0
    assert results.execution_time_s <= total - 2.0
    data = results.to_dict()
    assert data["extra_data"]["startup_s"] == results.startup_s and data["execution_time"] == results.execution_time_s
    assert Results.from_dict(data).startup_s == results.startup_s
