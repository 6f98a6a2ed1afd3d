"""Turns: which submission a grading worker takes next when several grade side by side."""
from __future__ import annotations

import threading

from autograder.frontends.work_queue import Turns, run_in_turns


def _batch(**copies: int) -> list[tuple[str, int]]:
    """(assignment, student) in assignment order, as grade.plan lists a batch."""
    return [(name, n) for name, count in copies.items() for n in range(count)]


def _take(turns: Turns, items, last=None):
    taken = turns.take(last)
    return None if taken is None else items[taken[1]]


def test_side_by_side_workers_start_different_assignments():
    items = _batch(ex1=3, ex2=3, ex3=3)
    turns = Turns(items, key=lambda item: item[0])
    assert _take(turns, items) == ("ex1", 0)
    assert _take(turns, items) == ("ex2", 0)  # ex1 is taken: the second worker starts ex2, not ex1's next copy


def test_a_worker_stays_on_its_assignment_while_nobody_else_is_on_it():
    items = _batch(ex1=3, ex2=3)
    turns = Turns(items, key=lambda item: item[0])
    turns.take()  # worker A: ex1
    turns.take()  # worker B: ex2
    assert _take(turns, items, last="ex2") == ("ex2", 1)  # B again: its judge is warm
    assert _take(turns, items, last="ex1") == ("ex1", 1)


def test_a_finished_worker_starts_the_first_assignment_nobody_is_on():
    items = _batch(ex1=1, ex2=2, ex3=2, ex4=2)
    turns = Turns(items, key=lambda item: item[0])
    turns.take()  # A: ex1 (its only one)
    turns.take()  # B: ex2
    assert _take(turns, items, last="ex1") == ("ex3", 0)  # not ex2, which B is on


def test_when_every_assignment_left_is_taken_a_worker_joins_one():
    items = _batch(ex1=1, ex2=4)
    turns = Turns(items, key=lambda item: item[0])
    turns.take()  # A: ex1
    turns.take()  # B: ex2
    assert _take(turns, items, last="ex1") == ("ex2", 1)  # nothing free: the last copies are shared
    assert [_take(turns, items, last="ex2") for _ in range(2)] == [("ex2", 2), ("ex2", 3)]
    assert turns.take("ex2") is None


def test_one_assignment_is_shared_by_every_worker_in_order():
    items = _batch(ex1=4)
    turns = Turns(items, key=lambda item: item[0])
    assert [_take(turns, items) for _ in range(3)] == [("ex1", 0), ("ex1", 1), ("ex1", 2)]


def test_every_item_runs_once_and_side_by_side_runs_a_mix():
    items = _batch(ex1=4, ex2=2, ex3=2)  # A grades ex1's four while B grades ex2's, then ex3's
    running, pairs, lock = set(), [], threading.Lock()
    barrier = threading.Barrier(2, timeout=10)

    def grade(item):
        with lock:
            running.add(item)
        barrier.wait()  # both workers are grading: note what runs side by side
        with lock:
            pairs.append(frozenset(name for name, _ in running))
        barrier.wait()
        with lock:
            running.discard(item)
        barrier.wait()
        return item

    futures, threads = run_in_turns(Turns(items, key=lambda item: item[0]), grade, workers=2)
    for thread in threads:
        thread.join(30)
    assert [f.result() for f in futures] == items
    assert all(len(pair) == 2 for pair in pairs), f"two copies of one assignment ran side by side: {pairs}"


def test_an_exception_reaches_its_items_future_and_the_rest_still_run():
    items = _batch(ex1=2, ex2=2)

    def grade(item):
        if item == ("ex1", 0):
            raise OSError("disk full")
        return item

    futures, threads = run_in_turns(Turns(items, key=lambda item: item[0]), grade, workers=2)
    for thread in threads:
        thread.join(30)
    assert isinstance(futures[0].exception(), OSError)
    assert [f.result() for f in futures[1:]] == items[1:]


def test_closed_turns_hand_out_nothing_more_and_cancel_the_rest():
    items = _batch(ex1=3, ex2=3)
    turns = Turns(items, key=lambda item: item[0])
    started, release = threading.Event(), threading.Event()

    def grade(item):
        started.set()
        release.wait(10)
        return item

    futures, threads = run_in_turns(turns, grade, workers=1)
    assert started.wait(10)
    turns.close()
    release.set()
    for thread in threads:
        thread.join(30)
    assert futures[0].result() == ("ex1", 0)
    assert all(f.cancelled() for f in futures[1:])
