"""benchmarks/mixed_batch.py's CPU figure: what each way of running the batch cost in CPU time."""
from __future__ import annotations

import resource
import subprocess
import sys

import pytest

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import mixed_batch  # noqa: E402


# Burns CPU in a child it never waits for, and exits once the child has burnt its share while
# the child still runs: only a sample of the tree sees the child's time (most of a grader's CPU
# time is of that kind, in processes its zygotes fork).
_LEAVES_A_BUSY_CHILD = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time\\nt = time.process_time()\\n"
                          "while time.process_time() - t < 0.8: pass\\nprint('burnt', flush=True)\\n"
                          "time.sleep(3)"], stdout=subprocess.PIPE, text=True)
t = time.process_time()
while time.process_time() - t < 0.3:
    pass
assert child.stdout.readline().strip() == "burnt"
time.sleep(0.3)  # a few samples after the child's last work
"""


def _waited_cpu() -> float:
    waited = resource.getrusage(resource.RUSAGE_CHILDREN)
    return waited.ru_utime + waited.ru_stime


def test_the_tree_figure_counts_a_child_its_parent_never_waited_for():
    before = _waited_cpu()
    proc = subprocess.Popen([sys.executable, "-c", _LEAVES_A_BUSY_CHILD])
    cpu = mixed_batch.TreeCpu(proc.pid, interval=0.05)
    proc.wait()
    used = cpu.stop()
    waited = _waited_cpu() - before
    assert used >= 0.3 + 0.8 * 0.9, f"the tree used 0.3 s + 0.8 s of CPU; sampled {used:.2f} s"
    assert waited < 0.3 + 0.8 * 0.5, f"the waited-for total ({waited:.2f} s) would have seen the child too"


# Run in a child Python: in pytest's own process, the tree would hold whatever else the session
# started (a book build, a zygote).  Prints the figure for 0.3 s of work, with a sampler that never rests.
_OWN_WORK = """
import os, sys, threading, time
sys.path.insert(0, sys.argv[1])
import mixed_batch
cpu = mixed_batch.TreeCpu(os.getpid(), interval=0)  # a sampler that never rests: a core's worth


def burn(seconds):
    start = time.thread_time()
    while time.thread_time() - start < seconds:
        pass


worker = threading.Thread(target=burn, args=(0.3,))
worker.start()
worker.join()
time.sleep(0.7)
print(cpu.stop())
"""


def test_in_this_process_the_figure_is_its_own_work_and_not_the_samplers():
    done = subprocess.run([sys.executable, "-c", _OWN_WORK, str(ROOT / "benchmarks")], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    used = float(done.stdout.split()[-1])
    assert 0.27 <= used < 0.3 + 0.15, f"the thread used 0.3 s of CPU; the figure says {used:.2f} s"
