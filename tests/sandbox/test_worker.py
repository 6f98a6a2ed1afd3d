"""The sandbox worker's own process watching (its watchdog, autograder/sandbox/watchdog.py): the watchdog's ticks and the freeze between probes.

Both once scanned all of /proc (psutil's ``children(recursive=True)``) on every tick and twice on
every freeze; with the per-submission cgroups they read the cgroup's files instead.  Each test runs
in a child Python, so that freezing "every process under this worker" cannot reach pytest's own
children (a book build, a zygote)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import ROOT


# Counts psutil's tree scans, then runs the scenario given as the script's body.
PRELUDE = """
import json, os, signal, subprocess, sys, time
from pathlib import Path
import psutil
from autograder.sandbox import watchdog, worker as sandbox_worker
from autograder.submission.limits import Limits
scans = []
children = psutil.Process.children
def counted(self, recursive=False):
    scans.append(self.pid)
    return children(self, recursive=recursive)
psutil.Process.children = counted
folder = Path(sys.argv[1])
"""


def _run(body: str, folder) -> dict:
    proc = subprocess.run([sys.executable, "-c", PRELUDE + body, str(folder)], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


WATCH = """
(folder / "pids.events").write_text("max 0\\n")
sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
killed = []
watchdog.Watchdog.kill_kernel_tree = staticmethod(killed.append)
cgroup = str(folder) if sys.argv[2] == "cgroups" else ""
dog = watchdog.Watchdog(lambda: sleeper.pid, Limits(), cgroup, cgroup)
dog.start()
time.sleep(0.5)
quiet = len(scans)
(folder / "pids.events").write_text("max 1\\n")  # a fork the pids cgroup refused
dog.join(5)
sleeper.kill()
print(json.dumps({"scans_while_quiet": quiet, "killed": killed == [sleeper.pid], "reason": dog.reason}))
"""


@pytest.mark.parametrize("cgroups", ["cgroups", "none"])
def test_the_watchdog_walks_the_tree_only_without_cgroups_and_stops_a_refused_fork(tmp_path, cgroups):
    out = _run(WATCH.replace("sys.argv[2]", repr(cgroups)), tmp_path)
    if cgroups == "cgroups":
        assert out["scans_while_quiet"] == 0, "with both cgroups the watchdog needs no scan of /proc"
        assert out["killed"] and "processes" in out["reason"], out
    else:  # no cgroup: no pids.events to read; the scan counts processes and memory every 0.1 s
        assert out["scans_while_quiet"] >= 3, out
        assert not out["killed"], out


FREEZE = """
tree = subprocess.Popen([sys.executable, "-c",
                         "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; "
                         "time.sleep(30)']); time.sleep(30)"])
time.sleep(1.0)  # its child has started
under = psutil.Process().children(recursive=True)
worker = sandbox_worker._Worker.__new__(sandbox_worker._Worker)
worker.client, worker.stopped = None, {}
mode = sys.argv[2]
procs = [os.getpid(), *(p.pid for p in under)]
if mode == "stranger":  # one the scan did not see (as if forked after it) is in the cgroup: look again
    procs.append(os.getppid())
(folder / "cgroup.procs").write_text("".join(f"{p}\\n" for p in procs))
worker.job = {"pids_cgroup": "" if mode == "none" else str(folder)}
del scans[:]
worker.freeze(True)
stopped = sorted(worker.stopped)
time.sleep(0.2)  # a signal is delivered as the process is next scheduled
states = [p.status() for p in under]
scanned = len(scans)
worker.freeze(False)
time.sleep(0.2)
after = [p.status() for p in under]
for p in psutil.Process().children(recursive=True):
    p.kill()
print(json.dumps({"scans": scanned, "stopped": stopped, "under": sorted(p.pid for p in under),
                  "states": states, "after": after}))
"""


@pytest.mark.parametrize("mode,scans", [("cgroup", 1), ("none", 2), ("stranger", 2)])
def test_freeze_stops_the_whole_tree_and_looks_again_in_the_cgroup_or_by_a_second_scan(tmp_path, mode, scans):
    out = _run(FREEZE.replace("sys.argv[2]", repr(mode)), tmp_path)
    assert len(out["under"]) == 2, out  # the child and its grandchild
    assert set(out["under"]) <= set(out["stopped"]) and set(out["states"]) == {"stopped"}, out
    assert out["scans"] == scans, out
    assert "stopped" not in out["after"], out
