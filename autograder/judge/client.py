"""The grader's side of the judge: start one, hand it parts, relay its requests.

:class:`Judge` starts ``autograder.judge.process`` as a clean fresh process
(``python -I``, an allowlisted environment, a private working folder holding a
copy of the assignment's data files), outside the sandbox the learner's kernel
runs in.  :meth:`Judge.judge` sends it one part's hidden test and relays every
:class:`~autograder.judge.protocol.Probe` it asks to the sandbox worker, which
runs it in the learner's kernel.

Judges are kept warm: :func:`acquire` hands out an idle judge already started for the
same locked cells and data files (one assignment), or starts one; :func:`release` takes
it back when its submission is done and it is still in step.  A judge holds nothing of a
submission between parts (each part runs in a fresh copy of the locked namespace and a
fresh working folder, and what reached it from the kernel was plain data), so the next
submission of the same assignment skips TensorFlow's import and the locked cells.
"""
from __future__ import annotations

import atexit
import fcntl
import os
import queue
import re
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable

from autograder import forking
from autograder.checks import clean_subprocess
from autograder.judge import protocol as p

HIDDEN_BEGIN, HIDDEN_END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
_JUDGE_DEF = re.compile(r"^def __ag_judge\(", re.MULTILINE)
START_TIMEOUT_S = 300.0


def hidden_block(test_source: str) -> str:
    """The lines between the hidden-test markers of a test cell ("" if none)."""
    lines, inside = [], False
    for line in test_source.splitlines():
        marker = line.strip()
        if marker.startswith(HIDDEN_BEGIN):
            inside = True
        elif marker.startswith(HIDDEN_END):
            inside = False
        elif inside:
            lines.append(line)
    return "\n".join(lines) + "\n" if lines else ""


def judge_source(test_source: str) -> str | None:
    """The hidden test the judge runs for this cell, or None when the cell has no ``__ag_judge``."""
    block = hidden_block(test_source)
    return block if _JUDGE_DEF.search(block) else None


class JudgeFailed(RuntimeError):
    """The judge process stopped or broke the protocol (the grader's failure, not the learner's)."""


def _reader(stream, out: queue.Queue) -> None:
    try:
        for line in iter(stream.readline, b""):
            out.put(line.decode("utf-8", "replace"))
    except (OSError, ValueError):  # closed under it: the judge has ended
        pass
    out.put(None)


class Judge:
    """One judge process for one submission's parts (see the module docstring)."""

    def __init__(self, cells: list[str], data_files: list[Path]) -> None:
        _sweep_once()
        self.folder = Path(tempfile.mkdtemp(prefix=JUDGE_PREFIX))
        for path in data_files:
            target = self.folder / Path(path).name
            if Path(path).is_dir():
                shutil.copytree(path, target, dirs_exist_ok=True)
            elif Path(path).is_file():
                shutil.copy2(path, target)
        self.log = open(_log_of(self.folder), "wb")
        try:  # held while this grader or its judge (which writes to the same open log) lives: see sweep_abandoned
            fcntl.flock(self.log.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # a file system without locks: the sweep cannot lock it either, and leaves it
            pass
        self.proc = _start_process(self.folder, self.log, with_tf=any("tensorflow" in cell for cell in cells))
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=_reader, args=(self.proc.stdout, self.lines), daemon=True).start()
        self._send(p.Start(list(cells), str(self.folder)))
        self.locked_errors: list[str] | None = None
        self.in_step = True  # False once a part ended without its Verdict: not handed out again

    def _send(self, message) -> None:
        try:
            self.proc.stdin.write(p.encode(message).encode())
            self.proc.stdin.flush()
        except (OSError, ValueError):  # ValueError: a forked judge's pipes are closed once it has ended
            raise JudgeFailed("the judge process stopped") from None

    def _next(self, deadline: float, *expected: type):
        try:
            line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise TimeoutError from None
        if line is None:
            raise JudgeFailed(f"the judge process stopped (exit {self.proc.poll()}): {self.log_tail()}")
        try:
            return p.decode(line, *expected)
        except p.ProtocolError as exc:
            raise JudgeFailed(f"the judge broke the protocol: {exc}") from None

    def wait_ready(self, deadline: float) -> list[str]:
        if self.locked_errors is None:
            self.locked_errors = self._next(min(deadline, time.monotonic() + START_TIMEOUT_S), p.Ready).errors
        return self.locked_errors

    def judge(self, grade_id: str, source: str, relay: Callable[[p.Probe], p.ProbeResult],
              deadline: float, submission: str = "") -> p.Verdict:
        """Judge one part; ``relay`` runs a probe in the learner's kernel.  TimeoutError past ``deadline``.
        ``submission`` (a digest of the submission's code) seeds the hidden test's draws."""
        self.wait_ready(deadline)
        self.in_step = False
        self._send(p.Part(grade_id, source, submission))
        while True:
            message = self._next(deadline, p.Probe, p.Verdict)
            if isinstance(message, p.Verdict):
                self.in_step = True
                return message
            self._send(relay(message))

    def log_tail(self) -> str:
        self.log.flush()
        try:
            return _log_of(self.folder).read_bytes()[-1500:].decode("utf-8", "replace")
        except OSError:
            return ""

    def close(self) -> None:
        try:
            self._send(p.Stop())
        except JudgeFailed:
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        _remove(self.folder)


def _log_of(folder: Path) -> Path:
    """A judge's log: ``<its folder>.log``, beside the folder."""
    return folder.with_name(folder.name + ".log")


def _remove(folder: Path) -> None:
    """Everything a judge leaves: its folder, its temporary folder and its log."""
    shutil.rmtree(folder, ignore_errors=True)
    shutil.rmtree(p.temporary_folder(str(folder)), ignore_errors=True)
    try:
        _log_of(folder).unlink(missing_ok=True)
    except OSError:
        pass


JUDGE_PREFIX = "autograder-judge-"
ABANDONED_AFTER_S = 600.0  # a log younger than this is left alone (its judge may be taking its lock)


def sweep_abandoned(where: Path | str | None = None, min_age_s: float = ABANDONED_AFTER_S) -> list[Path]:
    """Remove the folders of judges whose grader was killed outright (no ``close``): each judge's
    folder, its temporary folder (a batch's traces and exports) and its log.  A judge's log is
    locked while its grader or the judge itself lives, so an unlocked log older than
    ``min_age_s`` marks an abandoned judge; a live one, of this grader or another, is never
    touched, nor another user's.  Returns the folders removed."""
    removed = []
    for log in Path(where or tempfile.gettempdir()).glob(f"{JUDGE_PREFIX}*.log"):
        folder = log.with_suffix("")
        try:
            made = log.stat()
            if made.st_uid != os.geteuid() or made.st_mtime > time.time() - min_age_s or not folder.is_dir():
                continue  # another user's, or young enough that its judge may be taking the lock
            fd = os.open(log, os.O_RDONLY)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held: its grader or judge is alive
            continue
        finally:
            os.close(fd)
        _remove(folder)
        removed.append(folder)
    return removed


_SWEPT = threading.Event()


def _sweep_once() -> None:
    """:func:`sweep_abandoned`, at this grader's first judge."""
    if not _SWEPT.is_set():
        _SWEPT.set()
        sweep_abandoned()


def _start_process(folder: Path, log, *, with_tf: bool):
    """A judge process in ``folder``: forked by the judge zygote of this environment (TensorFlow
    already imported when ``with_tf``), or a fresh interpreter when warm starts are off or the
    zygote cannot start or fork."""
    env = clean_subprocess.clean_env({"HOME": str(folder), "MPLBACKEND": "Agg"})
    if forking.warm_enabled():
        try:
            return _ZYGOTES.spawn((with_tf, forking.env_key(env)), lambda: _start_zygote(env, folder, with_tf),
                                  folder, env, log)
        except OSError as exc:
            log.write(f"warm judge unavailable, starting a fresh one: {exc}\n".encode())
            log.flush()
    return subprocess.Popen(clean_subprocess.python_argv("autograder.judge.process"), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=log, cwd=folder, start_new_session=True, env=env)


def _start_zygote(env: dict[str, str], folder: Path, with_tf: bool) -> forking.Zygote:
    return forking.Zygote(
        lambda fd: clean_subprocess.python_argv("autograder.judge.zygote", [fd, "tf" if with_tf else "plain"]),
        env, folder, f"autograder-judge-zygote-{os.getpid()}-", what="judge zygote")


_ZYGOTES = forking.ZygotePool(2)  # a TensorFlow one and a plain one, usually


# --- warm judges ------------------------------------------------------------------------

MAX_IDLE = 4  # idle judges kept in all (each holds a TensorFlow: ~0.5 GB); the oldest goes first
_IDLE: list[tuple[tuple, Judge]] = []  # oldest first
_IDLE_LOCK = threading.Lock()


def _key(cells: list[str], data_files: list[Path]) -> tuple:
    """What makes two judges interchangeable: the locked cells, the data files and the environment a
    new judge would get now (TF_ENABLE_ONEDNN_OPTS, the visible GPUs...): a judge started under another
    setting is never handed out."""
    env = tuple(sorted(clean_subprocess.clean_env().items()))
    return tuple(cells), tuple(sorted(str(Path(p).resolve()) for p in data_files)), env


def acquire(cells: list[str], data_files: list[Path]) -> Judge:
    """An idle judge for these locked cells and data files, or a new one."""
    key, found = _key(cells, data_files), None
    with _IDLE_LOCK:
        for i in range(len(_IDLE) - 1, -1, -1):
            if _IDLE[i][0] == key:
                found = _IDLE.pop(i)[1]
                break
    if found is not None and found.proc.poll() is None:
        return found
    if found is not None:
        found.close()
    return Judge(cells, data_files)


def release(judge: Judge, cells: list[str], data_files: list[Path]) -> None:
    """Keep ``judge`` for the next submission of the same assignment, or close it."""
    if not (judge.in_step and judge.proc.poll() is None and judge.locked_errors is not None):
        judge.close()
        return
    with _IDLE_LOCK:
        _IDLE.append((_key(cells, data_files), judge))
        evicted = [j for _, j in _IDLE[:-MAX_IDLE]] if len(_IDLE) > MAX_IDLE else []
        del _IDLE[:len(evicted)]
    for old in evicted:
        old.close()


@atexit.register
def close_idle() -> None:
    """Close every idle judge (at exit, or when a grading run is done)."""
    with _IDLE_LOCK:
        judges = [j for _, j in _IDLE]
        _IDLE.clear()
    for judge in judges:
        judge.close()
    _ZYGOTES.close_all()
