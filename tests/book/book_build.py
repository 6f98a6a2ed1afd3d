"""The one book build a test session shares, started as soon as the session knows it
needs one, beside the tests that time nothing.

A cold build executes every chapter (minutes of work on two cores) while many tests keep
only one core busy waiting on fresh processes, so `make test` starts the build right
after collection and runs the tests marked ``untimed`` beside it (they time nothing and
grade no speed part). Every other test waits for the build to end before it starts, so
no verdict or ratio a test measures shares the CPU with the build. The tests that read
the built book run last. With ``BOOK_BUILD_IN_BACKGROUND=0`` nothing is started early:
the first test that needs the book builds it in the foreground.
"""
from __future__ import annotations

import os
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import psutil


class BookBuild:
    """``argv`` (the book build) run once: in the background from :meth:`start`, or in the
    foreground when first asked (:meth:`wait`)."""

    def __init__(self, argv: list[str], cwd: Path) -> None:
        self.argv, self.cwd = argv, cwd
        self.proc: subprocess.Popen | None = None
        self.in_background = False
        self.log = Path(tempfile.mkstemp(prefix="book-build-", suffix=".log")[1])
        self.started = self.finished = None  # time.monotonic() of each
        self.waited = 0.0  # how long the first wait() waited

    def start(self) -> bool:
        """Start the build in the background; False (nothing started) with
        ``BOOK_BUILD_IN_BACKGROUND=0``."""
        if self.proc is None and os.environ.get("BOOK_BUILD_IN_BACKGROUND", "1") != "0":
            self._spawn()
            self.in_background = True
        return self.in_background

    @property
    def running(self) -> bool:
        return self.proc is not None and self.finished is None

    def _spawn(self) -> None:
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(self.argv, cwd=self.cwd, stdout=log, stderr=subprocess.STDOUT,
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
            self._spawn()
        code = self.proc.wait(timeout=timeout)
        if not self.waited:
            self.waited = time.monotonic() - asked
        return code, self.log.read_text(errors="replace")

    def stop(self) -> None:
        """End the build if it still runs, with everything it started (its kernels run in
        sessions of their own, so a process group would miss them); remove its log."""
        if self.proc is not None and self.proc.poll() is None:
            try:
                family = [psutil.Process(self.proc.pid), *psutil.Process(self.proc.pid).children(recursive=True)]
            except psutil.NoSuchProcess:
                family = []
            for proc in family:
                try:
                    proc.kill()
                except psutil.NoSuchProcess:
                    pass
            psutil.wait_procs(family, timeout=10)
            self.proc.wait()
        self.log.unlink(missing_ok=True)
