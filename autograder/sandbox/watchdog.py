"""The worker's watchdog: a thread that kills the kernel's tree when it breaks the process or
memory limit (read from the submission's cgroups, or, without them, from a walk of its tree)."""
from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

from autograder.submission.limits import Limits

def tasks_of(uid: int) -> int:
    """Threads of every process ``uid`` runs (what RLIMIT_NPROC counts)."""
    import psutil

    total = 0
    for proc in psutil.process_iter(["uids", "num_threads"]):
        try:
            if proc.info["uids"] and proc.info["uids"].real == uid:
                total += proc.info["num_threads"] or 1
        except psutil.Error:
            continue
    return total


class Watchdog(threading.Thread):
    """Kills the kernel when its process tree breaks the process or memory limit."""

    def __init__(self, get_pid, limits: Limits, memory_cgroup: str, pids_cgroup: str, *,
                 shim: bool = False) -> None:
        super().__init__(daemon=True)
        self.get_pid = get_pid
        # The kernel's PID-namespace shim is the grader's: its memory is not the notebook's (a warm
        # shim is a fork of the worker, its resident pages all shared with it).
        self.shim = shim
        self.limits = limits
        self.memory_cgroup = Path(memory_cgroup) if memory_cgroup else None
        self.pids_cgroup = Path(pids_cgroup) if pids_cgroup else None
        self.reason = ""
        self.stopped = threading.Event()
        self.baseline_fork_failures = self._fork_failures()

    def _fork_failures(self) -> int:
        if self.pids_cgroup is None:
            return 0
        try:
            for line in (self.pids_cgroup / "pids.events").read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "max":
                    return int(value)
        except (OSError, ValueError):
            pass
        return 0

    def memory_limit_hit(self) -> bool:
        if self.memory_cgroup is None:
            return False
        for name in ("memory.events", "memory.failcnt"):
            try:
                text = (self.memory_cgroup / name).read_text()
            except OSError:
                continue
            if name == "memory.failcnt":
                return int(text.strip() or 0) > 0
            for line in text.splitlines():
                key, _, value = line.partition(" ")
                if key in ("max", "oom_kill") and int(value) > 0:
                    return True
        return False

    def run(self) -> None:
        """Every 0.1 s, read the pids cgroup's refused forks; without both cgroups (which cap the
        tree's tasks and memory themselves), also walk the kernel's tree, a scan of all of /proc,
        to count its processes and their memory."""
        import psutil

        walk = self.pids_cgroup is None or self.memory_cgroup is None
        while not self.stopped.wait(0.1):
            pid = self.get_pid()
            if not pid:
                continue
            tree = []
            if walk:
                try:
                    kernel = psutil.Process(pid)
                    tree = [kernel] + kernel.children(recursive=True)
                except psutil.Error:
                    continue
            if self._fork_failures() > self.baseline_fork_failures or len(tree) > self.limits.max_processes:
                self.reason = (f"the notebook started more than {self.limits.max_processes} processes "
                               "(a fork bomb?) and was stopped")
            elif self.memory_cgroup is None:
                rss = 0
                for proc in tree[1:] if self.shim else tree:
                    try:
                        rss += proc.memory_info().rss
                    except psutil.Error:
                        pass
                if rss > self.limits.memory_mb * 2**20:
                    self.reason = f"the notebook used more than {self.limits.memory_mb} MB of memory and was stopped"
            if self.reason:
                self.kill_kernel_tree(pid)
                return

    @staticmethod
    def kill_kernel_tree(pid: int) -> None:
        """Kill the kernel and everything under it, including children born while killing.

        The kernel leads its own process group (jupyter_client starts it in a new
        session), so one ``killpg`` reaches a fork bomb's copies at once; the
        worker is a child subreaper, so anything that escaped the group is still
        among its descendants for the sweep that follows."""
        import psutil

        try:
            os.killpg(os.getpgid(pid), signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        me = psutil.Process()
        for _ in range(100):
            victims = [p for p in me.children(recursive=True) if p.pid != os.getpid()]
            if not victims:
                return
            for victim in victims:
                try:
                    victim.kill()
                except psutil.Error:
                    pass
            psutil.wait_procs(victims, timeout=0.05)
