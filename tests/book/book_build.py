"""The one book build a test session shares, started as soon as the session knows it
needs one, on CPU time the other tests leave idle.

A cold build executes every chapter (minutes of work on two cores) while much of the
suite keeps only one core busy, so `make test` starts the build right after collection
in a cgroup of its own marked idle (Linux's ``cpu.idle``, or ``cpu.shares`` 2 on a kernel
without it): its processes, the kernels and their children included (a new session
does not leave a cgroup), run only when no other test wants the core, and so barely
touch the timings the other tests measure. The tests that read the built book run last
and wait for it. Where no such cgroup can be made (not root, no cgroup v1 ``cpu``
controller), or without ``BOOK_BUILD_IN_BACKGROUND=1`` (the default: the timing tests beside it
went inconclusive once), the first test that needs the book
builds it in the foreground, as before.
"""
from __future__ import annotations

import itertools
import os
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

CPU_CGROUPS = Path("/sys/fs/cgroup/cpu")
_GROUPS = itertools.count()


def idle_cgroup(root: Path = CPU_CGROUPS) -> Path | None:
    """A new cgroup under ``root`` whose tasks get only idle CPU time, named after this
    process, or None where this process may not make one."""
    group = root / f"tf-gpu-course-book-{os.getpid()}-{next(_GROUPS)}"
    try:
        group.mkdir()
    except OSError:
        return None
    try:
        if (group / "cpu.idle").exists():
            (group / "cpu.idle").write_text("1")
        else:
            (group / "cpu.shares").write_text("2")
    except OSError:
        group.rmdir()
        return None
    return group


def members(group: Path) -> list[int]:
    """The PIDs in ``group`` now (none once it is gone)."""
    try:
        return [int(pid) for pid in (group / "cgroup.procs").read_text().split()]
    except OSError:
        return []


class BookBuild:
    """``argv`` (the book build) run once: in the background in an idle cgroup when one
    can be made (:meth:`start`), else in the foreground when first asked (:meth:`wait`)."""

    def __init__(self, argv: list[str], cwd: Path, cgroup_root: Path = CPU_CGROUPS) -> None:
        self.argv, self.cwd, self.cgroup_root = argv, cwd, cgroup_root
        self.group: Path | None = None
        self.proc: subprocess.Popen | None = None
        self.log = Path(tempfile.mkstemp(prefix="book-build-", suffix=".log")[1])
        self.started = self.finished = None  # time.monotonic() of each
        self.waited = 0.0  # how long the first wait() waited

    @property
    def in_background(self) -> bool:
        return self.group is not None

    def start(self) -> bool:
        """Start the build in an idle cgroup; False (nothing started) where none can be made
        or ``BOOK_BUILD_IN_BACKGROUND=1`` is not set (off by default: see the README)."""
        if self.proc is None and os.environ.get("BOOK_BUILD_IN_BACKGROUND", "0") == "1":
            self.group = idle_cgroup(self.cgroup_root)
            if self.group is not None:
                # The shell joins the group before it execs the build, so every descendant is born in it.
                self._spawn(["/bin/sh", "-c", 'echo $$ > "$1" && shift && exec "$@"', "sh",
                             str(self.group / "cgroup.procs"), *self.argv])
        return self.in_background

    def _spawn(self, argv: list[str]) -> None:
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(argv, cwd=self.cwd, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        self.started = time.monotonic()
        threading.Thread(target=self._note_the_end, args=(self.proc,), daemon=True).start()

    def _note_the_end(self, proc: subprocess.Popen) -> None:
        proc.wait()
        self.finished = time.monotonic()

    def wait(self, timeout: float = 3600) -> tuple[int, str]:
        """(exit status, the build's output), building in the foreground if nothing was started."""
        asked = time.monotonic()
        if self.proc is None:
            self._spawn(self.argv)
        code = self.proc.wait(timeout=timeout)
        if not self.waited:
            self.waited = time.monotonic() - asked
        return code, self.log.read_text(errors="replace")

    def stop(self) -> None:
        """End the build if it still runs, and whatever it left running in its cgroup; remove both."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        if self.group is not None:
            deadline = time.monotonic() + 10
            while members(self.group) and time.monotonic() < deadline:
                for pid in members(self.group):
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                time.sleep(0.05)
            try:
                self.group.rmdir()
            except OSError:
                pass
        self.log.unlink(missing_ok=True)
