"""Which submission a grading worker takes next, when several grade side by side.

A batch comes in assignment order.  Handed out in that order, two workers grade two copies of
the same assignment at once, so they wait at the same moments too: exercise 5's reads sleep
and exercise 2's timer sleeps by design, and for those seconds both cores idle.  Handed out by
:class:`Turns`, a worker keeps to the assignment it is on while no other worker is on it (its
judge stays warm), and otherwise starts the first assignment nobody is on; only when every
assignment left is taken does it join one (then the workers share the last assignments, so
none waits while another has a queue).  So side by side runs a mix: on 2 cores, 20 notebooks of
10 exercises graded 2.5-7.8% faster than in assignment order, in four pairs measured side by
side with ``benchmarks/mixed_batch.py`` (its results files are in
``book/data/results/grading/``).  :func:`run_in_turns` runs ``fn`` on every item this way in
threads.
"""
from __future__ import annotations

import threading
from collections import Counter, deque
from concurrent.futures import Future
from typing import Callable, Hashable, Sequence, TypeVar

T = TypeVar("T")


class Turns:
    """Items grouped by ``key`` (an assignment), handed out one at a time, thread-safe."""

    def __init__(self, items: Sequence[T], key: Callable[[T], Hashable]) -> None:
        self.items = list(items)
        self._left: dict[Hashable, deque[int]] = {}  # group -> indices of its items still to give, in order
        for i, item in enumerate(items):
            self._left.setdefault(key(item), deque()).append(i)
        self._on: Counter = Counter()  # group -> workers on one of its items now
        self._lock = threading.Lock()
        self._closed = False

    def take(self, last: Hashable | None = None) -> tuple[Hashable, int] | None:
        """``(group, index)`` of the next item for a worker whose last item was of group ``last``
        (None: its first), or None when nothing is left or :meth:`close` was called."""
        with self._lock:
            if last is not None:
                self._on[last] -= 1
            left = [g for g, queue in self._left.items() if queue]
            if self._closed or not left:
                return None
            free = [g for g in left if not self._on[g]]
            if last in free:
                group = last  # nobody else is on it: stay, the judge is warm
            elif free:
                group = free[0]
            elif last in left:
                group = last
            else:  # every group left is taken: join the one with the most left per worker on it
                group = max(left, key=lambda g: len(self._left[g]) / self._on[g])
            self._on[group] += 1
            return group, self._left[group].popleft()

    def close(self) -> None:
        """Hand out nothing more (the run is being stopped)."""
        with self._lock:
            self._closed = True

    def never_given(self) -> list[int]:
        """The indices not handed out (after :meth:`close`, they never will be)."""
        with self._lock:
            return [i for queue in self._left.values() for i in queue]


def run_in_turns(turns: Turns, fn: Callable[[T], object], workers: int,
                 *, name: str = "turns") -> tuple[list[Future], list[threading.Thread]]:
    """Call ``fn(item)`` for every item of ``turns``, ``workers`` threads at a time, each taking
    its next item from ``turns``.  Returns each item's Future, in the items' order (its result or
    exception; cancelled when ``turns`` was closed before it was taken), and the threads, started."""
    futures = [Future() for _ in turns.items]

    def worker() -> None:
        last = None
        while (taken := turns.take(last)) is not None:
            last, index = taken
            future = futures[index]
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn(turns.items[index]))
            except BaseException as exc:  # the caller's wait gets it
                future.set_exception(exc)
        for index in turns.never_given():  # closed: those will never run
            futures[index].cancel()

    threads = [threading.Thread(target=worker, name=f"{name}-{n}", daemon=True) for n in range(max(1, workers))]
    for thread in threads:
        thread.start()
    return futures, threads
