"""Run one submission in its own sandboxed process tree and grade it.

Three processes, each with one job:

* the **grader** (``run_submission``, in the ``grade`` command) reads the
  submission, restores its test cells from the source notebook by
  ``grade_id``, strips its outputs, and starts a worker in a new session in a
  fresh temporary folder that holds only the submission and the assignment's
  data files.  It sends the worker the learner's cells, and each test cell's
  source only when the worker reaches it, over a pipe: hidden tests are never
  written to disk in the sandbox, and none is inside it before the learner's
  cells above it have run.  It enforces the per-notebook wall time and, in a
  ``finally``, kills the whole tree (cgroup, process group and descendants).
* the **worker** (``python -m autograder.sandbox worker``, grader code) joins
  the submission's cgroups, and when it runs as root enters new mount and
  network namespaces: the network has only a loopback interface, ``/`` is
  read-only, ``/tmp`` and ``/dev/shm`` are fresh size-limited tmpfs holding
  only this sandbox's folder, and the solution, source, submissions and output
  folders are covered by empty read-only tmpfs.  It starts the kernel, runs a
  bootstrap cell (:mod:`autograder.integrity`) before any learner code, then
  the cells in notebook order, checks integrity before and after each test
  cell, and streams one result per graded part back to the grader.  A
  watchdog thread kills the kernel when it starts too many processes or uses
  too much memory.
* the **kernel**, started through ``python -m autograder.sandbox kernel``: PID 1
  of a new PID namespace with its own ``/proc`` (so it cannot see or signal
  other submissions), resource limits, and, as root, no capabilities left, so
  it cannot undo any of the above.  Its stdout/stderr go to /dev/null.

Every limit that stops something becomes a message on the part it affects
(the test cell after the offending cell) and that part scores 0; a kernel that
dies or a notebook out of time scores the parts that did not run 0.  Where
namespaces or cgroups are unavailable (not root, a locked-down container),
the audit-hook guards, resource limits and the psutil watchdog still apply,
and ``Results.sandbox`` records which mechanisms were in force.
"""
from __future__ import annotations

import ctypes
import json
import os
import queue
import secrets
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

# jsonschema (under nbformat) builds an IRI grammar at import time when
# rfc3987_syntax is installed: seconds per worker process on a busy machine,
# for a string format notebooks never use.  Without it jsonschema skips that format.
sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]

import nbformat  # noqa: E402

from autograder import integrity  # noqa: E402
from autograder import notebook as nbtools  # noqa: E402
from autograder.results import Results, TestResult  # noqa: E402

MAX_NOTEBOOK_BYTES = 200 * 1024 * 1024
KERNEL_NAME = "autograder-sandbox"
KERNEL_CONFIG_ENV = "AUTOGRADER_SANDBOX_KERNEL"
# Passed through to the kernel from the grader's environment; nothing else is.
PASS_ENV = ("AUTOGRADER_PROFILE", "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES",
            "NVIDIA_DRIVER_CAPABILITIES", "LD_LIBRARY_PATH", "TF_FORCE_GPU_ALLOW_GROWTH")


@dataclass(frozen=True)
class Limits:
    """What one submission may use.  Defaults fit a TensorFlow exercise on a GPU."""

    cell_timeout_s: float = 300.0
    notebook_timeout_s: float = 1800.0
    memory_mb: int = 4096
    output_kb: int = 1024  # text and data one cell may show
    max_processes: int = 1024  # tasks (threads count: TensorFlow starts many)
    disk_mb: int = 1024  # the sandbox's /tmp


# --- the grader side ----------------------------------------------------------------


@dataclass
class Prepared:
    """A submission turned into what the worker runs, or why it cannot run."""

    parts: list[nbtools.GradedPart]
    cells: list[dict] = field(default_factory=list)
    tests: dict[str, str] = field(default_factory=dict)
    hidden_lines: list[str] = field(default_factory=list)
    missing_answers: dict[str, str] = field(default_factory=dict)  # test gid -> answer gid
    include_tf: bool = False
    notebook: Any = None
    error: str = ""


def hidden_test_lines(source_nb) -> list[str]:
    """Lines between ``### BEGIN HIDDEN TESTS`` and ``### END HIDDEN TESTS`` in the source."""
    lines: list[str] = []
    for cell in source_nb.cells:
        if not nbtools.is_test_cell(cell):
            continue
        inside = False
        for line in cell.source.splitlines():
            marker = line.strip()
            if marker.startswith("### BEGIN HIDDEN TESTS"):
                inside = True
            elif marker.startswith("### END HIDDEN TESTS"):
                inside = False
            elif inside and marker:
                lines.append(marker)
    return lines


def _answers_before_tests(source_nb) -> dict[str, list[str]]:
    """For each test grade_id, the answer cells between it and the previous test."""
    result: dict[str, list[str]] = {}
    pending: list[str] = []
    for cell in source_nb.cells:
        gid = nbtools.nbgrader_meta(cell).get("grade_id")
        if nbtools.is_answer_cell(cell) and gid:
            pending.append(gid)
        elif nbtools.is_test_cell(cell) and gid:
            result[gid] = pending
            pending = []
    return result


def prepare(submission: Path, source: Path) -> Prepared:
    """Read the submission and the source notebook; never raises for a bad submission."""
    source_nb = nbtools.load(source)  # the instructor's: a bad one is a usage error
    parts = nbtools.graded_parts(source_nb)
    prepared = Prepared(parts=parts, hidden_lines=hidden_test_lines(source_nb))
    try:
        size = submission.stat().st_size
    except OSError as exc:
        prepared.error = f"the submission cannot be read ({exc.__class__.__name__})"
        return prepared
    if size > MAX_NOTEBOOK_BYTES:
        prepared.error = (f"the notebook file is {size / 2**20:.0f} MB (limit {MAX_NOTEBOOK_BYTES // 2**20} MB); "
                          "clear its outputs (Kernel > Restart & Clear Output), save and resubmit")
        return prepared
    try:
        nb = nbtools.load(submission)
        merged = nbtools.restore_test_cells(nb, source_nb)
    except nbtools.NotebookError as exc:
        prepared.error = str(exc).replace(str(submission), submission.name)
        return prepared
    except (RecursionError, MemoryError, ValueError, TypeError, KeyError, AttributeError) as exc:
        prepared.error = f"{submission.name}: not a valid notebook ({exc.__class__.__name__}); save it again from Jupyter"
        return prepared
    present = {nbtools.nbgrader_meta(c).get("grade_id") for c in nb.cells if nbtools.is_answer_cell(c)}
    for test_id, answers in _answers_before_tests(source_nb).items():
        missing = [a for a in answers if a not in present]
        if missing:
            prepared.missing_answers[test_id] = missing[0]
    for number, cell in enumerate(merged.cells, start=1):
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
            meta = nbtools.nbgrader_meta(cell)
            # How feedback names the cell: its place in the notebook, and its grade_id if it has one.
            label = f"cell {number}" + (f" ({meta['grade_id']})" if meta.get("grade_id") else "")
            if nbtools.is_test_cell(cell):
                prepared.tests[meta["grade_id"]] = cell.source
                prepared.cells.append({"kind": "test", "grade_id": meta["grade_id"],
                                       "points": float(meta.get("points", 0)), "label": label})
            else:
                prepared.cells.append({"kind": "code", "source": cell.source, "label": label})
    prepared.include_tf = any("tensorflow" in c.source for c in source_nb.cells if c.cell_type == "code")
    merged.cells = [c for c in merged.cells if not nbtools.is_test_cell(c)]
    prepared.notebook = merged
    return prepared


def _zero_results(parts: list[nbtools.GradedPart], message: str, status: str = "error") -> list[TestResult]:
    return [TestResult(p.grade_id, 0.0, p.points, message, "visible", status) for p in parts]


class _Cgroups:
    """Per-submission pids and memory cgroups (v1 or v2) when this process may create them."""

    ROOT = Path("/sys/fs/cgroup")

    def __init__(self, limits: Limits) -> None:
        self.paths: list[Path] = []
        self.memory: Path | None = None
        self.pids: Path | None = None
        name = f"autograder-{uuid.uuid4().hex[:12]}"
        memory_bytes = limits.memory_mb * 2**20
        try:
            if (self.ROOT / "cgroup.controllers").exists():  # v2
                path = self.ROOT / name
                path.mkdir()
                self.paths.append(path)
                (path / "pids.max").write_text(str(limits.max_processes))
                (path / "memory.max").write_text(str(memory_bytes))
                self._try_write(path / "memory.swap.max", "0")
                self.memory = self.pids = path
            else:
                pids = self.ROOT / "pids" / name
                pids.mkdir()
                self.paths.append(pids)
                (pids / "pids.max").write_text(str(limits.max_processes))
                self.pids = pids
                memory = self.ROOT / "memory" / name
                memory.mkdir()
                self.paths.append(memory)
                (memory / "memory.limit_in_bytes").write_text(str(memory_bytes))
                self._try_write(memory / "memory.memsw.limit_in_bytes", str(memory_bytes))
                self.memory = memory
        except OSError:
            self.remove()

    @staticmethod
    def _try_write(path: Path, text: str) -> None:
        try:
            path.write_text(text)
        except OSError:
            pass

    def procs(self) -> list[int]:
        pids: set[int] = set()
        for path in self.paths:
            try:
                pids.update(int(p) for p in (path / "cgroup.procs").read_text().split())
            except (OSError, ValueError):
                pass
        return sorted(pids)

    def kill_all(self) -> None:
        for _ in range(50):
            procs = self.procs()
            if not procs:
                return
            for pid in procs:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.02)

    def remove(self) -> None:
        for path in reversed(self.paths):
            for _ in range(100):
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.05)
        self.paths = []
        self.memory = self.pids = None


def kill_tree(proc: subprocess.Popen, cgroups: _Cgroups | None = None) -> None:
    """Kill ``proc`` and everything it started, however it tried to detach."""
    import psutil

    victims = []
    try:
        parent = psutil.Process(proc.pid)
        victims = parent.children(recursive=True) + [parent]
    except psutil.Error:
        pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    for victim in victims:
        try:
            victim.kill()
        except psutil.Error:
            pass
    if cgroups is not None:
        cgroups.kill_all()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


def clean_env(workdir: Path) -> dict[str, str]:
    """The whole environment of the worker and the kernel: nothing of the grader's but ``PASS_ENV``."""
    venv_bin = str(Path(sys.executable).parent)
    env = {
        "PATH": os.pathsep.join([venv_bin, "/usr/local/bin", "/usr/bin", "/bin"]),
        "HOME": str(workdir),
        "TMPDIR": str(workdir / ".tmp"),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "TF_CPP_MIN_LOG_LEVEL": "0",
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": str(workdir / ".tmp" / "matplotlib"),
        "IPYTHONDIR": str(workdir / ".tmp" / "ipython"),
        "JUPYTER_RUNTIME_DIR": str(workdir / ".tmp" / "jupyter-runtime"),
        "JUPYTER_PATH": str(workdir / ".tmp" / "jupyter"),
        "JUPYTER_CONFIG_DIR": str(workdir / ".tmp" / "jupyter-config"),
        "JUPYTER_DATA_DIR": str(workdir / ".tmp" / "jupyter-data"),
        "JUPYTER_PLATFORM_DIRS": "1",
    }
    for name in PASS_ENV:
        if name in os.environ:
            env[name] = os.environ[name]
    return env


def _sandbox_parent() -> Path:
    return Path(tempfile.gettempdir())


def _copy_inputs(workdir: Path, prepared: Prepared, submission: Path, data_files: list[Path]) -> None:
    (workdir / ".tmp").mkdir(parents=True)
    for data in data_files:
        target = workdir / data.name
        if data.is_dir():
            shutil.copytree(data, target)
        else:
            shutil.copy2(data, target)
    if prepared.notebook is not None:
        # The learner's own cells (outputs stripped); test cells are never written here.
        (workdir / submission.name).write_text(nbformat.writes(prepared.notebook), encoding="utf-8")


_LIVE: dict[int, tuple[subprocess.Popen, "_Cgroups | None"]] = {}
_LIVE_LOCK = threading.Lock()


def stop_all() -> None:
    """Kill every sandbox this process is running (Ctrl-C in the grade command)."""
    with _LIVE_LOCK:
        running = list(_LIVE.values())
    for proc, cgroups in running:
        kill_tree(proc, cgroups)


def _reader(stream, out: queue.Queue) -> None:
    for line in iter(stream.readline, b""):
        out.put(line)
    out.put(None)


def run_submission(
    submission: Path | str,
    source: Path | str,
    *,
    limits: Limits = Limits(),
    data_files: list[Path] | None = None,
    hidden_dirs: list[Path | str] | None = None,
    isolate: bool = True,
    profile: dict | None = None,
) -> Results:
    """Grade one submission in a sandbox; always returns Results, one per graded part."""
    submission, source = Path(submission), Path(source)
    started = time.perf_counter()
    prepared = prepare(submission, source)
    results = Results(notebook=submission.name, profile=profile)
    if prepared.error:
        results.tests = _zero_results(prepared.parts, prepared.error)
        results.output = prepared.error
        results.execution_time_s = round(time.perf_counter() - started, 3)
        return results
    workdir = Path(tempfile.mkdtemp(prefix="autograder-sandbox-", dir=_sandbox_parent()))
    log_path = workdir.with_name(workdir.name + ".log")
    cgroups = _Cgroups(limits) if isolate else None
    proc = None
    received: dict[str, TestResult] = {}
    note = ""
    sandbox_info: dict = {}
    try:
        os.chmod(workdir, 0o755)
        _copy_inputs(workdir, prepared, submission, list(data_files or []))
        hidden = [str(Path(h).resolve()) for h in (hidden_dirs or [])]
        home = os.path.realpath(os.path.expanduser("~"))
        if home not in ("/", "") and isolate:
            hidden.append(home)  # the grader's keys and credentials
        job = {
            "workdir": str(workdir),
            "notebook": submission.name,
            "cells": prepared.cells,
            "limits": asdict(limits),
            "hidden_dirs": hidden,
            "include_tf": prepared.include_tf,
            "isolate": isolate,
            "keep_paths": sorted({os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix,
                                                                 sys.base_exec_prefix)}),
            "cgroups": [str(p) for p in (cgroups.paths if cgroups else [])],
            "memory_cgroup": str(cgroups.memory) if cgroups and cgroups.memory else "",
            "pids_cgroup": str(cgroups.pids) if cgroups and cgroups.pids else "",
        }
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "autograder.sandbox", "worker"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                cwd=workdir, env=clean_env(workdir), start_new_session=True,
            )
        with _LIVE_LOCK:
            _LIVE[proc.pid] = (proc, cgroups)
        lines: queue.Queue = queue.Queue()
        threading.Thread(target=_reader, args=(proc.stdout, lines), daemon=True).start()
        proc.stdin.write((json.dumps(job) + "\n").encode())
        proc.stdin.flush()
        deadline = time.monotonic() + limits.notebook_timeout_s
        finished = False
        while not finished:
            try:
                line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                note = (f"the notebook ran longer than {limits.notebook_timeout_s:g} s in total and was stopped; "
                        "parts that had not finished score 0")
                break
            if line is None:
                note = "the sandbox stopped unexpectedly; parts that had not finished score 0"
                break
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            if "need" in event:
                reply = {"source": prepared.tests.get(event["need"], "")}
                proc.stdin.write((json.dumps(reply) + "\n").encode())
                proc.stdin.flush()
            elif "part" in event:
                test = TestResult(**event["part"])
                received.setdefault(test.name, test)
            elif "done" in event:
                note = event["done"].get("note", "")
                sandbox_info = event["done"].get("sandbox", {})
                results.profile = event["done"].get("profile") or profile
                finished = True
    except BrokenPipeError:
        note = note or "the sandbox stopped unexpectedly; parts that had not finished score 0"
    finally:
        if proc is not None:
            kill_tree(proc, cgroups)
            with _LIVE_LOCK:
                _LIVE.pop(proc.pid, None)
        if cgroups is not None:
            cgroups.remove()
        shutil.rmtree(workdir, ignore_errors=True)
        log_tail = ""
        if log_path.exists():
            log_tail = log_path.read_bytes()[-4000:].decode("utf-8", "replace")
            log_path.unlink()
    tests = []
    for part in prepared.parts:
        test = received.get(part.grade_id)
        if test is None:
            test = TestResult(part.grade_id, 0.0, part.points,
                              note or "this test did not run", "visible", "error")
        answer = prepared.missing_answers.get(part.grade_id)
        if answer is not None:
            test = TestResult(part.grade_id, 0.0, part.points,
                              f"the answer cell {answer!r} is missing from the notebook; copy it back from the "
                              "exercise and put your answer in it", "visible", "missing")
        tests.append(test)
    results.tests = tests
    results.output = note
    if note.startswith("the sandbox stopped") and log_tail:
        results.output += "\n" + log_tail
    results.sandbox = sandbox_info
    results.execution_time_s = round(time.perf_counter() - started, 3)
    return results


# --- the worker ---------------------------------------------------------------------

_libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNS, CLONE_NEWNET, CLONE_NEWPID = 0x00020000, 0x40000000, 0x20000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    enc = lambda s: s.encode() if s is not None else None  # noqa: E731
    _check(_libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)), f"mount {target}")


def _loopback_up() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        request = struct.pack("16sH14s", b"lo", 0, b"")
        flags = struct.unpack("16sH14s", __import__("fcntl").ioctl(sock, 0x8913, request))[1]
        __import__("fcntl").ioctl(sock, 0x8914, struct.pack("16sH14s", b"lo", flags | 1, b""))
    finally:
        sock.close()


def isolate_worker(workdir: Path, hidden_dirs: list[str], limits: Limits, *, keep_paths: list[str]) -> dict:
    """Enter new mount and network namespaces and hide everything but ``workdir``.

    ``workdir``'s parent (the grader's temporary folder, where other
    submissions' sandboxes live) becomes a fresh tmpfs of ``limits.disk_mb``
    holding a copy of ``workdir`` only, so whatever the notebook writes is
    bounded and private.  ``hidden_dirs`` are covered by empty read-only tmpfs;
    ``keep_paths`` under a hidden folder (the Python installation under the
    grader's home) are bound back read-only.  Returns which mechanisms are in
    force; raises OSError when namespaces are unavailable."""
    _check(_libc.unshare(CLONE_NEWNS | CLONE_NEWNET), "unshare")
    _loopback_up()
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    original = os.open(workdir, os.O_PATH | os.O_DIRECTORY)
    _mount("tmpfs", str(workdir.parent), "tmpfs", MS_NOSUID | MS_NODEV, f"size={limits.disk_mb}m,mode=1777")
    _mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "size=64m,mode=1777")
    shutil.copytree(f"/proc/self/fd/{original}", workdir, symlinks=True)
    os.close(original)
    masked = []
    for hidden in hidden_dirs:
        if not os.path.isdir(hidden) or str(workdir).startswith(hidden.rstrip("/") + "/"):
            continue
        inside = [k for k in keep_paths if k.startswith(hidden.rstrip("/") + "/") and os.path.isdir(k)]
        fds = {k: os.open(k, os.O_PATH | os.O_DIRECTORY) for k in inside}
        _mount("tmpfs", hidden, "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,mode=755")
        for keep, fd in fds.items():
            os.makedirs(keep, exist_ok=True)
            _mount(f"/proc/self/fd/{fd}", keep, None, MS_BIND | MS_REC)
            os.close(fd)
        _mount(None, hidden, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
        masked.append(hidden)
    _mount(None, "/", None, MS_REMOUNT | MS_BIND | MS_RDONLY)
    return {"network": "namespace (loopback only)",
            "filesystem": f"read-only root, private {limits.disk_mb} MB tmpfs for the sandbox folder",
            "hidden": masked}


def _kernel_spec(workdir: Path, config: dict) -> None:
    spec_dir = workdir / ".tmp" / "jupyter" / "kernels" / KERNEL_NAME
    spec_dir.mkdir(parents=True, exist_ok=True)
    spec = {
        "argv": [sys.executable, "-m", "autograder.sandbox", "kernel", "-f", "{connection_file}"],
        "display_name": "Python 3 (autograder sandbox)",
        "language": "python",
        "env": {KERNEL_CONFIG_ENV: json.dumps(config)},
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec))


class _Watchdog(threading.Thread):
    """Kills the kernel when its process tree breaks the process or memory limit."""

    def __init__(self, get_pid, limits: Limits, memory_cgroup: str, pids_cgroup: str) -> None:
        super().__init__(daemon=True)
        self.get_pid = get_pid
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
        import psutil

        while not self.stopped.wait(0.1):
            pid = self.get_pid()
            if not pid:
                continue
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
                for proc in tree:
                    try:
                        rss += proc.memory_info().rss
                    except psutil.Error:
                        pass
                if rss > self.limits.memory_mb * 2**20:
                    self.reason = f"the notebook used more than {self.limits.memory_mb} MB of memory and was stopped"
            if self.reason:
                for proc in reversed(tree):
                    try:
                        proc.kill()
                    except psutil.Error:
                        pass
                return


def _output_size(msg: dict) -> int:
    content = msg.get("content", {})
    if msg.get("msg_type") == "stream":
        return len(content.get("text", ""))
    data = content.get("data") or {}
    return sum(len(v) if isinstance(v, str) else len(json.dumps(v)) for v in data.values())


def _make_client_class():
    import asyncio

    from jupyter_core.utils import ensure_async, run_sync
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError

    class LimitedClient(NotebookClient):
        """nbclient that caps a cell's output and interrupts a cell out of time.

        Output beyond ``output_cap`` bytes is dropped (and the cell noted in
        ``overflowed``).  A cell over its time is interrupted and its reply
        awaited as usual, so the kernel's message streams stay in step and
        later cells run normally (the cell is noted in ``timed_out``); only a
        kernel that ignores the interrupt for ``interrupt_grace_s`` raises
        ``CellTimeoutError``."""

        output_cap = 1 << 20
        interrupt_grace_s = 10.0

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.output_used: dict[int, int] = {}
            self.overflowed: set[int] = set()
            self.timed_out: set[int] = set()
            self._current = -1
            self._interrupted_at: float | None = None

        async def async_execute_cell(self, cell, cell_index, execution_count=None, store_history=True):
            self._current, self._interrupted_at = cell_index, None
            return await super().async_execute_cell(cell, cell_index, execution_count, store_history)

        execute_cell = run_sync(async_execute_cell)

        async def _async_handle_timeout(self, timeout, cell=None):
            now = time.monotonic()
            if self._interrupted_at is None:
                self._interrupted_at = now
                self.timed_out.add(self._current)
                await ensure_async(self.km.interrupt_kernel())
            elif now - self._interrupted_at > self.interrupt_grace_s:
                raise CellTimeoutError.error_from_timeout_and_cell("Cell execution timed out", timeout, cell)
            await asyncio.sleep(0.1)
            return None

        def output(self, outs, msg, display_id, cell_index):
            if msg.get("msg_type") != "error":
                used = self.output_used.get(cell_index, 0) + _output_size(msg)
                self.output_used[cell_index] = used
                if used > self.output_cap:
                    self.overflowed.add(cell_index)
                    return None
            return super().output(outs, msg, display_id, cell_index)

    return LimitedClient


class _Worker:
    """Runs a job's cells in one sandboxed kernel and streams part results."""

    def __init__(self, job: dict, proto_out, proto_in) -> None:
        self.job = job
        self.limits = Limits(**job["limits"])
        self.workdir = Path(job["workdir"])
        self.out = proto_out
        self.inp = proto_in
        self.token = "AG" + secrets.token_hex(12)
        self.nb = nbformat.v4.new_notebook()
        self.client = None
        self.watchdog: _Watchdog | None = None
        self.sandbox: dict = {}
        self.profile: dict | None = None

    def send(self, event: dict) -> None:
        self.out.write(json.dumps(event) + "\n")
        self.out.flush()

    def test_source(self, grade_id: str) -> str:
        self.send({"need": grade_id})
        reply = json.loads(self.inp.readline() or "{}")
        return reply.get("source", "")

    def kernel_pid(self) -> int | None:
        km = getattr(self.client, "km", None)
        provisioner = getattr(km, "provisioner", None)
        return getattr(provisioner, "pid", None) or getattr(getattr(provisioner, "process", None), "pid", None)

    def run_cell(self, source: str, *, timeout: float | None = None, store_history: bool = True):
        cell = nbformat.v4.new_code_cell(source)
        self.nb.cells.append(cell)
        index = len(self.nb.cells) - 1
        old = self.client.timeout
        if timeout is not None:
            self.client.timeout = timeout
        try:
            self.client.execute_cell(cell, index, store_history=store_history)
        finally:
            self.client.timeout = old
        return cell, index

    def check_integrity(self, names: list[str] | None) -> list[str]:
        cell, _ = self.run_cell(integrity.verify_source(self.token, names), timeout=60, store_history=False)
        return integrity.parse_report(_stdout_of(cell), self.token)

    def setup(self) -> dict:
        config = {"rlimit_data": 0 if self.job.get("memory_cgroup") else self.limits.memory_mb * 2**20,
                  "rlimit_fsize": self.limits.disk_mb * 2**20, "rlimit_nproc": self.limits.max_processes,
                  "drop_caps": os.geteuid() == 0, "pid_namespace": False}
        info = {"cgroups": "pids and memory" if self.job.get("cgroups") else "none (psutil watchdog)",
                "network": "audit hook", "filesystem": "audit hook", "hidden": []}
        for path in self.job.get("cgroups", []):
            try:
                (Path(path) / "cgroup.procs").write_text(str(os.getpid()))
            except OSError:
                info["cgroups"] = "none (psutil watchdog)"
        if self.job.get("isolate") and os.geteuid() == 0:
            try:
                info.update(isolate_worker(self.workdir, self.job["hidden_dirs"], self.limits,
                                           keep_paths=self.job.get("keep_paths", [])))
                config["pid_namespace"] = True
                info["processes"] = "own PID namespace, no capabilities"
            except OSError as exc:
                info["namespaces"] = f"unavailable ({exc.strerror or exc})"
        for sub in ("matplotlib", "ipython", "jupyter-runtime", "jupyter-config", "jupyter-data"):
            (self.workdir / ".tmp" / sub).mkdir(parents=True, exist_ok=True)
        _kernel_spec(self.workdir, config)
        return info

    def run(self) -> None:
        from nbclient.exceptions import CellTimeoutError, DeadKernelError

        self.sandbox = self.setup()
        client_class = _make_client_class()
        # History in memory: IPython's history.sqlite would put test cells on the sandbox's disk.
        self.client = client_class(self.nb, timeout=self.limits.cell_timeout_s, kernel_name=KERNEL_NAME,
                                   allow_errors=True, shutdown_kernel="immediate",
                                   extra_arguments=["--HistoryManager.hist_file=:memory:"],
                                   resources={"metadata": {"path": str(self.workdir)}})
        self.client.output_cap = self.limits.output_kb * 1024
        env = clean_env(self.workdir)
        note = ""
        pending = ""  # a limit an earlier cell hit: the next test reports it
        tampered: list[str] = []
        label = "the first cell"
        self.watchdog = _Watchdog(self.kernel_pid, self.limits, self.job.get("memory_cgroup", ""),
                                  self.job.get("pids_cgroup", ""))
        try:
            with self.client.setup_kernel(env=env, cwd=str(self.workdir),
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL):
                self.watchdog.start()
                boot, _ = self.run_cell(integrity.bootstrap_source(
                    self.token, hidden_dirs=self.job["hidden_dirs"], include_tf=self.job["include_tf"],
                    allow=self.job.get("keep_paths", [])),
                    timeout=max(120.0, self.limits.cell_timeout_s), store_history=False)
                ready = [line for line in _stdout_of(boot).splitlines() if line.startswith(self.token + "ready")]
                if not ready:
                    raise RuntimeError("the grader's bootstrap cell failed: " + _error_text(boot))
                self.profile = json.loads(ready[0][len(self.token + "ready"):] or "null")
                for spec in self.job["cells"]:
                    label = spec["label"]
                    if spec["kind"] == "code":
                        pending = self.run_learner_cell(spec["source"], label) or pending
                        continue
                    source = self.test_source(spec["grade_id"])
                    names = integrity.global_names(source)
                    if not tampered:
                        tampered = self.check_integrity(names)
                    cell, index, stopped = self.run_limited(source, label)
                    if not tampered:
                        tampered = self.check_integrity(names)
                    self.send({"part": asdict(self.score(spec, cell, index, pending or stopped, tampered))})
                    pending = ""
        except CellTimeoutError:
            note = (f"{label} ran longer than {self.limits.cell_timeout_s:g} s, did not stop when "
                    "interrupted, and was killed; later cells did not run")
        except DeadKernelError:
            note = self.death_reason(label)
        finally:
            self.watchdog.stopped.set()
        self.send({"done": {"note": note, "sandbox": self.sandbox, "profile": self.profile}})

    def death_reason(self, label: str) -> str:
        if self.watchdog is not None and self.watchdog.reason:
            what = self.watchdog.reason
        elif self.watchdog is not None and self.watchdog.memory_limit_hit():
            what = f"the notebook used more than {self.limits.memory_mb} MB of memory and was stopped"
        else:
            what = "the kernel died (a crash, sys.exit/os._exit or running out of memory)"
        return f"{what} in {label}; later cells did not run"

    def run_limited(self, source: str, label: str):
        """Run a cell; return it, its index and the message of a time limit it broke."""
        cell, index = self.run_cell(source)
        if index in self.client.timed_out:
            return cell, index, (f"{label} ran longer than {self.limits.cell_timeout_s:g} s and was "
                                 "stopped (an infinite loop?); make it finish faster")
        return cell, index, ""

    def run_learner_cell(self, source: str, label: str) -> str:
        """Run one learner cell; return a limit message for the next test, if one was hit."""
        cell, index, stopped = self.run_limited(source, label)
        if stopped:
            return stopped
        if index in self.client.overflowed:
            return (f"{label} printed more than {self.limits.output_kb} KB of output; "
                    "print less (a summary, not every value)")
        error = _error_of(cell)
        if error and error[0] == "MemoryError":
            return f"{label} ran out of memory (limit {self.limits.memory_mb} MB)"
        if error and error[0] in ("SystemExit",):
            return f"{label} called sys.exit(); remove it, a notebook must run to the end"
        return ""

    def score(self, spec: dict, cell, index: int, pending: str, tampered: list[str]) -> TestResult:
        from autograder import runner

        gid, points = spec["grade_id"], spec["points"]
        if tampered:
            return TestResult(gid, 0.0, points, integrity.message(tampered), "visible", "failed")
        if index in self.client.overflowed:
            return TestResult(gid, 0.0, points, f"this test printed more than {self.limits.output_kb} KB of "
                              "output (does your function print in a loop?); print less", "visible", "failed")
        cell.metadata["nbgrader"] = {"grade": True, "solution": False, "grade_id": gid, "points": points}
        if pending:  # a limit broken by this part's cells costs the part, whatever the test found
            return TestResult(gid, 0.0, points, pending, "visible", "failed")
        return runner.score_cells(nbformat.v4.new_notebook(cells=[cell]))[0]


def _stdout_of(cell) -> str:
    return "".join(o.get("text", "") for o in cell.get("outputs", [])
                   if o.get("output_type") == "stream" and o.get("name") == "stdout")


def _error_of(cell) -> tuple[str, str] | None:
    for out in cell.get("outputs", []):
        if out.get("output_type") == "error":
            return out.get("ename", "Error"), out.get("evalue", "")
    return None


def _error_text(cell) -> str:
    error = _error_of(cell)
    if error:
        return f"{error[0]}: {error[1]}"
    text = "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")
    return text[-500:] or "no output"


def worker_main() -> int:
    """``python -m autograder.sandbox worker``: one job on stdin, events on stdout."""
    _libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG: die with the grader
    proto_out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # nothing printed by libraries can corrupt the event stream
    proto_in = sys.stdin
    job = json.loads(proto_in.readline())
    worker = _Worker(job, proto_out, proto_in)
    try:
        worker.run()
    except Exception as exc:  # report, don't hang the grader
        worker.send({"done": {"note": f"the sandbox failed: {exc.__class__.__name__}: {exc}",
                              "sandbox": worker.sandbox}})
        raise
    return 0


# --- the kernel launcher ----------------------------------------------------------------

PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP = 38, 24


def _drop_capabilities() -> None:
    for cap in range(64):
        if _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            break
    header = struct.pack("II", 0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = ctypes.create_string_buffer(24)  # two zeroed cap_user_data_t
    _check(_libc.capset(ctypes.c_char_p(header), data), "capset")
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


def _limit_and_exec(config: dict, argv: list[str]) -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if config.get("rlimit_fsize"):
        resource.setrlimit(resource.RLIMIT_FSIZE, (config["rlimit_fsize"],) * 2)
    if config.get("rlimit_data"):
        resource.setrlimit(resource.RLIMIT_DATA, (config["rlimit_data"],) * 2)
    if config.get("rlimit_nproc"):  # ignored for root, effective otherwise
        resource.setrlimit(resource.RLIMIT_NPROC, (config["rlimit_nproc"],) * 2)
    if config.get("drop_caps"):
        _drop_capabilities()
    os.execv(sys.executable, [sys.executable, "-m", "ipykernel_launcher", *argv])


def kernel_main(argv: list[str]) -> int:
    """``python -m autograder.sandbox kernel -f CONNECTION``: limit, then become ipykernel.

    With ``pid_namespace`` this process stays as a small shim: it unshares a
    PID namespace and forks, and the child -- PID 1 there, with its own
    ``/proc`` -- becomes the kernel.  (A process can't do this for itself: after
    ``unshare(CLONE_NEWPID)`` it may not start threads, and the worker needs
    threads.)  The child dies with the shim, and everything in the namespace
    dies with the child."""
    config = json.loads(os.environ.pop(KERNEL_CONFIG_ENV, "{}"))
    _libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG: die with the worker (kept across exec)
    if not config.get("pid_namespace"):
        _limit_and_exec(config, argv)
    _check(_libc.unshare(CLONE_NEWPID), "unshare pid")
    child = os.fork()
    if child == 0:
        try:
            _libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
            _check(_libc.unshare(CLONE_NEWNS), "unshare mount")
            _mount(None, "/", None, MS_REC | MS_PRIVATE)
            _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
            _limit_and_exec(config, argv)
        finally:
            os._exit(127)
    # SIGINT (an interrupt) reaches the child through the process group; the
    # shim passes on termination and reports the child's exit.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda signum, frame: os.kill(child, signal.SIGKILL))
    while True:
        try:
            _, status = os.waitpid(child, 0)
            break
        except InterruptedError:
            continue
    return os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["worker"]:
        return worker_main()
    if argv[:1] == ["kernel"]:
        return kernel_main(argv[1:])
    print("usage: python -m autograder.sandbox (worker | kernel -f CONNECTION_FILE); "
          "the grade command starts these", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
