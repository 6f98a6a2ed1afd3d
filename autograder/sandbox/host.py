"""Run one submission in its own sandboxed process tree and grade it.

Three processes, each with one job:

* the **grader** (``run_submission``, in the ``grade`` command) reads the
  submission, restores its test cells from the source notebook by
  ``grade_id`` and strips its outputs (:mod:`autograder.submission.restore`), and starts a worker in a new session in a
  fresh temporary folder that holds only the submission and the assignment's
  data files.  It sends the worker the learner's cells, and each test cell's
  source only when the worker reaches it, over a pipe: hidden tests are never
  written to disk in the sandbox, and none is inside it before the learner's
  cells above it have run.  It enforces the per-notebook wall time and, in a
  ``finally``, kills the whole tree (cgroup, process group and descendants).
* the **worker** (:mod:`autograder.sandbox.worker`, grader code) joins
  the submission's cgroups, and when it runs as root enters new mount and
  network namespaces: the network has only a loopback interface, ``/`` is
  read-only, ``/tmp`` and ``/dev/shm`` are fresh size-limited tmpfs holding
  only this sandbox's folder, and the solution, source, submissions and output
  folders are covered by empty read-only tmpfs.  It starts the kernel, runs a
  bootstrap cell (:mod:`autograder.sandbox.integrity`) before any learner code, then
  the cells in notebook order, checks integrity before and after each test
  cell, and streams one result per graded part back to the grader.  A
  watchdog thread kills the kernel when it starts too many processes or uses
  too much memory.
* the **kernel**, started through ``python -m autograder.sandbox.kernel``: PID 1
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

import json
import os
import queue
import shutil
import signal
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

from autograder.checks import opbuild  # noqa: E402
from autograder.sandbox import integrity  # noqa: E402
from autograder.submission.limits import Limits  # noqa: E402,F401  (sandbox.Limits: where callers find it)
from autograder.results.results import Results, TestResult, zero_results  # noqa: E402
from autograder.judge import client as judge_client  # noqa: E402
from autograder.sandbox import judged_parts, verdict, warm_start  # noqa: E402
from autograder.sandbox.judged_parts import write as _write  # noqa: E402
from autograder.judge import protocol  # noqa: E402
from autograder.submission.restore import Prepared, prepare  # noqa: E402

KERNEL_NAME = "autograder-sandbox"
SANDBOX_PREFIX = "autograder-sandbox-"  # + the grader's pid: a dead grader's leftovers can be found


def zygote_prefix() -> str:
    """How this grader's warm zygote folders are named: like its sandboxes, so that a dead
    grader's are swept with them (:func:`sweep_stale`)."""
    return f"{SANDBOX_PREFIX}{os.getpid()}-zygote-"
CGROUP_PREFIX = "autograder-"
KERNEL_CONFIG_ENV = "AUTOGRADER_SANDBOX_KERNEL"
# Passed through to the kernel from the grader's environment; nothing else is.
# TF_ENABLE_ONEDNN_OPTS: the grader chooses the CPU kernels (oneDNN on or off) a submission runs with.
PASS_ENV = ("AUTOGRADER_PROFILE", "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES",
            "NVIDIA_DRIVER_CAPABILITIES", "LD_LIBRARY_PATH", "TF_FORCE_GPU_ALLOW_GROWTH", "TF_ENABLE_ONEDNN_OPTS",
            opbuild.PCH_ENV)


# --- the grader side ----------------------------------------------------------------


def cgroup_pids(path: Path | str) -> set[int] | None:
    """The processes a cgroup holds (its ``cgroup.procs``), or None when it cannot be read."""
    try:
        return {int(p) for p in (Path(path) / "cgroup.procs").read_text().split()}
    except (OSError, ValueError):
        return None


class _Cgroups:
    """Per-submission pids and memory cgroups (v1 or v2) when this process may create them."""

    ROOT = Path("/sys/fs/cgroup")

    def __init__(self, limits: Limits) -> None:
        self.paths: list[Path] = []
        self.memory: Path | None = None
        self.pids: Path | None = None
        name = f"{CGROUP_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:12]}"
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
            pids |= cgroup_pids(path) or set()
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
    # The same value for every assignment (one zygote serves them all); only exercise 7's
    # sandboxes see a prelude there (op_prelude binds it).
    env.setdefault(opbuild.PCH_ENV, str(opbuild.prelude_root()))
    # The worker and kernel import the very autograder package this grader runs (and may read).
    import autograder

    env["PYTHONPATH"] = str(Path(autograder.__file__).resolve().parent.parent)
    return env


def allowed_paths() -> list[str]:
    """What a sandboxed kernel may read besides the system folders and its own:
    the Python installation and the ``autograder`` package (exercise 7 builds
    with its ``checks.opbuild``; the build cache stays out)."""
    from autograder.isolation import python_paths

    return python_paths()


def _sandbox_parent() -> Path:
    """This user's private folder for sandboxes (``<tmp>/autograder-sandboxes-<uid>``, mode 0700).

    One per user: a folder another user made first (or a link planted in its
    place) is refused with a message, never used."""
    import stat

    from autograder.errors import UsageError

    parent = Path(tempfile.gettempdir()) / f"autograder-sandboxes-{os.getuid()}"
    try:
        parent.mkdir(mode=0o700)
    except FileExistsError:
        pass
    info = os.lstat(parent)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise UsageError(f"{parent} is not a private folder of yours (owner uid {info.st_uid}, mode "
                         f"{stat.filemode(info.st_mode)}); remove it, or set TMPDIR to a folder of your own")
    return parent


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def _owner(name: str, prefix: str) -> int | None:
    head = name[len(prefix):].split("-", 1)[0]
    return int(head) if name.startswith(prefix) and head.isdigit() else None


def sweep_stale() -> int:
    """Remove sandbox folders and cgroups left by a grader that was killed (``kill -9``,
    power loss) before it could clean up; those of graders still running are kept.
    Returns how many were removed."""
    removed = 0
    for path in _sandbox_parent().glob(f"{SANDBOX_PREFIX}*"):
        pid = _owner(path.name, SANDBOX_PREFIX)
        if pid is not None and not _alive(pid):
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
            removed += 1
    for parent in (_Cgroups.ROOT, _Cgroups.ROOT / "pids", _Cgroups.ROOT / "memory"):
        for path in parent.glob(f"{CGROUP_PREFIX}*") if parent.is_dir() else ():
            pid = _owner(path.name, CGROUP_PREFIX)
            if pid is not None and not _alive(pid):
                try:
                    path.rmdir()  # refused while a process is still inside
                    removed += 1
                except OSError:
                    pass
    return removed


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
    judge_client.close_idle()
    warm_start.close_all()


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
    only_parts: list[str] | None = None,
    source_nb=None,
) -> Results:
    """Grade one submission in a sandbox; always returns Results, one per graded part
    (``only_parts``: run and report only those parts' test cells)."""
    submission, source = Path(submission), Path(source)
    started = time.perf_counter()
    prepared = prepare(submission, source, source_nb)
    if only_parts is not None:
        _keep_parts(prepared, set(only_parts))
    if prepared.error:
        results = zero_results(prepared.parts, prepared.error, notebook=submission.name)
        results.profile = profile
    else:
        results = _execute(submission, prepared, limits=limits, data_files=list(data_files or []),
                           hidden_dirs=hidden_dirs or [], isolate=isolate, profile=profile)
    results.execution_time_s = round(time.perf_counter() - started, 3)
    return results


def _keep_parts(prepared: Prepared, keep: set[str]) -> None:
    prepared.parts = [p for p in prepared.parts if p.grade_id in keep]
    prepared.cells = [c for c in prepared.cells if c["kind"] != "test" or c["grade_id"] in keep]


@dataclass
class _Run:
    """What came back from the worker."""

    received: dict[str, TestResult] = field(default_factory=dict)
    note: str = ""
    sandbox: dict = field(default_factory=dict)
    profile: dict | None = None
    judge: Any = None  # the judge process, when some part has a judged hidden test


def op_prelude(prepared: Prepared) -> Path | None:
    """The folder of the precompiled C++ prelude (``checks.opbuild``) for an assignment whose locked
    cells build ops, built by the grader on its first such submission (once a machine), or None:
    the sandbox gets it read-only, its compiles then skip parsing TensorFlow's headers."""
    if not any(c["kind"] == "locked" and "opbuild" in c["source"] for c in prepared.cells):
        return None
    try:
        found = opbuild.prelude_header()
        if found is None:  # its own process: building imports TensorFlow, which this one never does
            subprocess.run([sys.executable, "-m", "autograder.checks.opbuild"], capture_output=True, timeout=600,
                           cwd=Path(__file__).resolve().parents[2])
            found = opbuild.prelude_header()
    except (opbuild.BuildError, OSError, subprocess.SubprocessError):
        return None  # no compiler here: the learner's build says so itself
    return found.parent if found else None


def _job(workdir: Path, prepared: Prepared, limits: Limits, hidden_dirs: list, isolate: bool,
         cgroups: "_Cgroups | None", prelude: Path | None = None) -> dict:
    hidden = [str(Path(h).resolve()) for h in hidden_dirs]
    home = os.path.realpath(os.path.expanduser("~"))
    if home not in ("/", "") and isolate:
        hidden.append(home)  # the grader's keys and credentials
    allowed = allowed_paths() + ([str(prelude.resolve())] if prelude else [])
    return {
        "workdir": str(workdir),
        "cells": prepared.cells,
        "limits": asdict(limits),
        "hidden_dirs": hidden,
        "include_tf": prepared.include_tf,
        "isolate": isolate,
        "keep_paths": allowed,
        "allow_paths": allowed,
        "cgroups": [str(p) for p in (cgroups.paths if cgroups else [])],
        "memory_cgroup": str(cgroups.memory) if cgroups and cgroups.memory else "",
        "pids_cgroup": str(cgroups.pids) if cgroups and cgroups.pids else "",
    }


def _execute(submission: Path, prepared: Prepared, *, limits: Limits, data_files: list[Path],
             hidden_dirs: list, isolate: bool, profile: dict | None) -> Results:
    """Run the prepared cells in a worker process and collect one result per part."""
    workdir = Path(tempfile.mkdtemp(prefix=f"{SANDBOX_PREFIX}{os.getpid()}-", dir=_sandbox_parent()))
    log_path = workdir.with_name(workdir.name + ".log")
    cgroups = _Cgroups(limits) if isolate else None
    proc = None
    run = _Run(profile=profile)
    # The worker's zygote, then the judge: on a first submission their TensorFlow imports run side
    # by side, and the judge's own start overlaps the kernel's and the learner's cells.
    env = clean_env(workdir)
    prelude = op_prelude(prepared)
    warm_start.prestart(workdir, env, with_tf=prepared.include_tf, prefix=zygote_prefix())
    run.judge = judge_client.acquire(prepared.judge_cells, data_files) if prepared.judged else None
    try:
        os.chmod(workdir, 0o755)
        _copy_inputs(workdir, prepared, submission, data_files)
        with open(log_path, "wb") as log:
            proc = _start_worker(workdir, env, log, with_tf=prepared.include_tf)
        with _LIVE_LOCK:
            _LIVE[proc.pid] = (proc, cgroups)
        _converse(proc, _job(workdir, prepared, limits, hidden_dirs, isolate, cgroups, prelude), prepared,
                  limits, run)
    except BrokenPipeError:
        run.note = run.note or "the sandbox stopped unexpectedly; parts that had not finished score 0"
    finally:
        log_tail = _clean_up(proc, cgroups, workdir, log_path)
        if run.judge is not None:
            judge_client.release(run.judge, prepared.judge_cells, data_files)
    results = Results(notebook=submission.name, profile=run.profile, output=run.note,
                      tests=_collect(prepared, run))
    if run.note.startswith(("the sandbox stopped", "the sandbox failed")) and log_tail:
        run.sandbox["worker_log"] = log_tail  # for the instructor; extra_data is not shown to learners
    results.sandbox = run.sandbox
    return results


def _start_worker(workdir: Path, env: dict[str, str], log, *, with_tf: bool):
    """The sandbox worker for one submission (``env``: its ``clean_env``): forked by the warm zygote
    (``warm_start``), or a fresh interpreter when warm workers are off or their zygote cannot start."""
    if warm_start.enabled():
        try:
            return warm_start.spawn(workdir, env, log, with_tf=with_tf, prefix=zygote_prefix())
        except OSError as exc:
            log.write(f"warm worker unavailable, starting a cold one: {exc}\n".encode())
            log.flush()
    return subprocess.Popen([sys.executable, "-m", "autograder.sandbox.worker", "worker"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                            cwd=workdir, env=env, start_new_session=True)


def _converse(proc: subprocess.Popen, job: dict, prepared: Prepared, limits: Limits, run: _Run) -> None:
    """Send the job, answer the worker's requests for test sources, record its results."""
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=_reader, args=(proc.stdout, lines), daemon=True).start()
    proc.stdin.write((json.dumps(job) + "\n").encode())
    proc.stdin.flush()
    deadline = time.monotonic() + limits.notebook_timeout_s
    while True:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            run.note = (f"the notebook ran longer than {limits.notebook_timeout_s:g} s in total and was stopped; "
                        "parts that had not finished score 0")
            return
        if line is None:
            run.note = "the sandbox stopped unexpectedly; parts that had not finished score 0"
            return
        try:
            message = protocol.decode(line, protocol.Test, protocol.PartResult, protocol.Done)
        except protocol.ProtocolError:
            continue  # not a message (a library printing on the worker's stdout before it took it over)
        if isinstance(message, protocol.Test):
            if message.grade_id in prepared.judged:
                _write(proc, protocol.encode(protocol.Serve()))
                result = judged_parts.judge_part(proc, lines, prepared, message, run.judge, deadline)
                _write(proc, protocol.encode(protocol.End()))
                problems = judged_parts.checked_after(lines, deadline)
                if problems:
                    result = verdict.decide(result.name, result.max_score, pending=integrity.message(problems))
                run.received.setdefault(message.grade_id, result)
            else:
                _write(proc, protocol.encode(protocol.Source(prepared.tests.get(message.grade_id, ""))))
        elif isinstance(message, protocol.PartResult):
            run.received.setdefault(message.name, TestResult(**asdict(message)))
        else:
            run.note = message.note
            run.sandbox = message.sandbox
            run.profile = message.profile or run.profile
            return


def _clean_up(proc: subprocess.Popen | None, cgroups: "_Cgroups | None", workdir: Path, log_path: Path) -> str:
    """Stop the worker, remove the sandbox; return the end of the worker's log."""
    if proc is not None:
        kill_tree(proc, cgroups)
        with _LIVE_LOCK:
            _LIVE.pop(proc.pid, None)
    if cgroups is not None:
        cgroups.remove()
    shutil.rmtree(workdir, ignore_errors=True)
    shutil.rmtree(workdir.with_name(workdir.name + ".root"), ignore_errors=True)
    log_tail = ""
    if log_path.exists():
        log_tail = log_path.read_bytes()[-4000:].decode("utf-8", "replace")
        log_path.unlink()
    return log_tail


def _collect(prepared: Prepared, run: _Run) -> list[TestResult]:
    """One result per part: what the worker sent, or 0 with the reason it did not."""
    tests = []
    for part in prepared.parts:
        test = run.received.get(part.grade_id)
        if test is None:
            test = TestResult(part.grade_id, 0.0, part.points,
                              run.note or "this test did not run", "visible", "error")
        answer = prepared.missing_answers.get(part.grade_id)
        if answer is not None:
            test = TestResult(part.grade_id, 0.0, part.points,
                              f"the answer cell {answer!r} is missing from the notebook; copy it back from the "
                              "exercise and put your answer in it", "visible", "missing")
        tests.append(test)
    return tests
