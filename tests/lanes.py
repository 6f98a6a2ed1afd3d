"""A second lane for the untimed tests: a helper pytest process beside the session.

While the book builds, the untimed tests share the CPU with it; once it ends, one pytest
process runs the rest of them on one core and the other idles (about 70 s of a fresh clone's
run on 2 cores).  So the session starts a helper ``pytest`` over the same untimed tests, and
the two take *modules* from opposite ends of the list: the session from the front, the helper
from the back, each module claimed by whichever lane reaches it first (a file created with
``O_EXCL`` in a folder both see), so the lanes end together without knowing durations.

The helper writes each of its test reports to a file; when the session reaches a module the
helper claimed, it waits for those reports and reports them as its own (the terminal, JUnit
XML and the exit status see every test once).  A test the helper did not report before it
ended fails, with the helper's log named.  Never in the helper: a test that reads the book,
one that times something, one marked ``book_compiles`` (it must come after the book's
compiles).  ``COURSE_TEST_LANES=1`` turns the helper off.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

HELPER_ENV = "COURSE_TEST_LANE_DIR"  # set in the helper: the folder the lanes share
LANES_ENV = "COURSE_TEST_LANES"  # "1": no helper
REPORTS = "reports.jsonl"
LOG = "helper.log"


def module_of(item) -> str:
    return item.nodeid.split("::", 1)[0]


class Claims:
    """Modules claimed for one lane: each module by whichever lane asks first (a file created with
    ``O_EXCL``), each answer remembered, as a claim never changes hands."""

    def __init__(self, folder: Path, lane: str) -> None:
        self.folder, self.lane, self.known = folder, lane, {}

    def mine(self, module: str) -> bool:
        if module not in self.known:
            self.known[module] = self._claim(module)
        return self.known[module]

    def _claim(self, module: str) -> bool:
        path = self.folder / ("claim-" + module.replace("/", "__"))
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            return path.read_text() == self.lane  # "" while the other lane writes: not this one's
        with os.fdopen(fd, "w") as out:
            out.write(self.lane)
        return True


def in_helper_order(items: list) -> list:
    """The helper's items: its modules from the last to the first, each module's order kept."""
    modules = list(dict.fromkeys(module_of(i) for i in items))
    return [i for m in reversed(modules) for i in items if module_of(i) == m]


class Helper:
    """The session's side: starts the helper over ``items`` and replays what it reports."""

    def __init__(self, config, items: list) -> None:
        self.config = config
        self.ids = {i.nodeid for i in items}
        self.modules = {module_of(i) for i in items}
        self.folder = Path(tempfile.mkdtemp(prefix="test-lanes-"))
        self.claims = Claims(self.folder, "session")
        (self.folder / "ids.txt").write_text("".join(i.nodeid + "\n" for i in items))
        basetemp = config._tmp_path_factory.getbasetemp() / "lane2"
        env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}  # no second JUnit file
        env[HELPER_ENV] = str(self.folder)
        argv = [sys.executable, "-m", "pytest", f"@{self.folder / 'ids.txt'}", "-q", "-p", "no:cacheprovider",
                f"--basetemp={basetemp}"]
        with open(self.folder / LOG, "wb") as log:
            self.proc = subprocess.Popen(argv, cwd=config.rootpath, env=env, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL)
        self._offset, self._done, self._reports = 0, set(), {}
        self.started, self.ended, self.replayed = time.monotonic(), None, set()

    def owns(self, item) -> bool:
        """Whether the helper runs ``item`` (claims its module for the session if no lane has).
        A module's tests that may not share a lane (say, the timed ones of a module with one
        untimed test) are never the helper's."""
        return item.nodeid in self.ids and not self.claims.mine(module_of(item))

    def replay(self, item, nextitem) -> None:
        """Report ``item`` as the helper ran it, once the helper has."""
        while item.nodeid not in self._done and (self._read() or self.proc.poll() is None):
            time.sleep(0.1)
        self._read()
        reports = self._reports.pop(item.nodeid, [])
        if item.nodeid not in self._done:
            reports = [pytest.TestReport(item.nodeid, item.location, {}, "failed",
                                         f"the helper lane ended (exit {self.proc.returncode}) before it reported "
                                         f"this test: see {self.folder / LOG}", "call")]
        self.replayed.add(module_of(item))
        item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        for report in reports:
            item.ihook.pytest_runtest_logreport(report=report)
        item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
        # The fixtures the last test run here set up, but the next one does not need, end now.
        item.session._setupstate.teardown_exact(nextitem)

    def _read(self) -> bool:
        """Take the helper's new report lines; True when there were any."""
        path = self.folder / REPORTS
        if not path.exists():
            return False
        with open(path) as f:
            f.seek(self._offset)
            text = f.read()
        complete = text[: text.rfind("\n") + 1]
        self._offset += len(complete.encode())
        for line in complete.splitlines():
            entry = json.loads(line)
            if "done" in entry:
                self._done.add(entry["done"])
            else:
                report = self.config.hook.pytest_report_from_serializable(config=self.config, data=entry["report"])
                self._reports.setdefault(report.nodeid, []).append(report)
        return bool(complete)

    def wait(self) -> None:
        """Let the helper end (it has nothing left once the session has reached every module)."""
        try:
            self.proc.wait(timeout=600)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.ended is None:
            self.ended = time.monotonic()

    def summary(self) -> str:
        took = f", ended after {self.ended - self.started:.0f} s" if self.ended else ""
        return f"helper lane: ran {len(self.replayed)} of the {len(self.modules)} modules it could share{took}"

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


class InHelper:
    """The helper's side, a plugin of the helper's session: runs a module only when it claims it,
    and writes every report for the session."""

    def __init__(self, config, folder: Path) -> None:
        self.config, self.claims = config, Claims(folder, "helper")
        self.out = open(folder / REPORTS, "a")

    def runs(self, item) -> bool:
        return self.claims.mine(module_of(item))

    def pytest_runtest_logreport(self, report) -> None:
        data = self.config.hook.pytest_report_to_serializable(config=self.config, report=report)
        self._line({"report": data})

    def pytest_runtest_logfinish(self, nodeid: str) -> None:
        self._line({"done": nodeid})

    def _line(self, entry: dict) -> None:
        self.out.write(json.dumps(entry) + "\n")
        self.out.flush()

    def close(self) -> None:
        self.out.close()


def in_helper() -> bool:
    """Whether this process is a session's helper lane."""
    return bool(os.environ.get(HELPER_ENV))


def wanted(config, items: list) -> bool:
    """Whether this session starts a helper lane: on a machine with two cores or more, not
    turned off, and with at least two modules to share."""
    if os.environ.get(LANES_ENV) == "1" or (os.cpu_count() or 1) < 2:
        return False
    return len({module_of(i) for i in items}) >= 2
