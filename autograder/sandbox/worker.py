"""The sandbox's inside: the worker that runs one submission.

``python -m autograder.sandbox.worker worker`` is started by
:func:`autograder.sandbox.host.run_submission` (see there for the whole design).
It reads one job (JSON) on stdin, isolates itself (new mount and network
namespaces, a private tmpfs, hidden folders covered), starts the kernel
(:mod:`autograder.sandbox.kernel`, its client in :mod:`autograder.sandbox.kernel_client`,
its :mod:`autograder.sandbox.watchdog` beside it), runs the bootstrap
cell, the learner's cells and each test cell -- asking the grader for the
test's source only when it gets there -- and writes one JSON event per line
on stdout, in the typed messages of :mod:`autograder.judge.protocol`: ``Test`` at each
test cell (answered ``Source``, run it here, or ``Serve``, answer the judge's
``Probe`` messages until ``End``), ``PartResult`` for an in-kernel test, ``Done``.
"""
from __future__ import annotations

import hashlib
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

from autograder.sandbox import integrity, scoring
from autograder.results.results import TestResult
from autograder.sandbox.host import KERNEL_NAME, Limits, cgroup_pids, clean_env
from autograder.sandbox.isolation import NO_ISOLATION_WARNING, _libc, isolate_worker
from autograder.sandbox.kernel import KernelSeed, kernel_manager_class
from autograder.judge import protocol
from autograder.sandbox.kernel_client import limited_client_class, write_kernel_spec
from autograder.sandbox.watchdog import Watchdog, tasks_of
from autograder.submission import restore

import nbformat  # noqa: E402,I001  (after autograder.sandbox.host, which keeps its import fast)


class _Worker:
    """Runs a job's cells in one sandboxed kernel and streams part results."""

    def __init__(self, job: dict, proto_out, proto_in, *, warm: bool = False) -> None:
        self.job = job
        self.warm = warm  # forked by the zygote: the kernel is a seed forked after isolation
        self.limits = Limits(**job["limits"])
        self.workdir = Path(job["workdir"])
        self.out = proto_out
        self.inp = proto_in
        self.token = ""  # made after the kernel seed is forked (the seed must not hold it)
        self.seed = None
        self.kernel_has_shim = False
        self.nb = nbformat.v4.new_notebook()
        self.client = None
        self.watchdog: Watchdog | None = None
        self.sandbox: dict = {}
        self.profile: dict | None = None
        self.frozen: dict[str, str] = {}  # frozen name -> how it is frozen ("NAME" or "state:NAME")
        self.stopped: dict = {}  # pid -> psutil.Process, what freeze(True) stopped

    def send(self, message) -> None:
        self.out.write(protocol.encode(message))
        self.out.flush()

    def reach_test(self, grade_id: str, pending: str):
        """Tell the grader a test cell is next; it answers Source (run it here) or Serve (the judge asks)."""
        self.send(protocol.Test(grade_id, pending))
        return protocol.decode(self.inp.readline(), protocol.Source, protocol.Serve)

    def serve_probes(self) -> str:
        """Run the judge's probes in the kernel until End; the kernel is stopped (SIGSTOP) between them,
        so nothing of the learner's runs while the judge computes or times its own side.  Returns why
        the kernel died ("" if it did not)."""
        from nbclient.exceptions import DeadKernelError

        dead = ""
        self.freeze(True)
        try:
            while True:
                message = protocol.decode(self.inp.readline(), protocol.Probe, protocol.End)
                if isinstance(message, protocol.End):
                    break
                if dead:
                    result = protocol.ProbeResult(_probe_error("KernelDied", dead), 0.0)
                else:
                    try:
                        result = self.run_probe(message)
                    except DeadKernelError:
                        dead = self.death_reason("a hidden test's call of your code")
                        result = protocol.ProbeResult(_probe_error("KernelDied", dead), 0.0)
                self.send(result)
        finally:
            self.freeze(False)
        return dead

    def run_probe(self, message) -> "protocol.ProbeResult":
        """One probe as one cell, timed here (outside the kernel) from request to reply."""
        token = "AGP" + secrets.token_hex(12)
        request = json.dumps(asdict(message)).encode()
        folder = self.workdir / ".tmp"
        (folder / f"{token}.req").write_bytes(request)  # the kernel is stopped: it reads the file once running
        source = (f"__import__('autograder.checks.probe', fromlist=['serve']).serve({token!r}, "
                  f"{str(folder)!r}, {hashlib.sha256(request).hexdigest()!r})")
        self.freeze(False)
        try:
            start = time.perf_counter()
            cell, index = self.run_cell(source, store_history=False)
            wall = time.perf_counter() - start
        finally:
            self.freeze(True)
        answer = self.take_answer(folder / f"{token}.ans")
        (folder / f"{token}.req").unlink(missing_ok=True)
        if index in self.client.timed_out:
            return protocol.ProbeResult(_probe_error(
                "Timeout", f"your code ran longer than {self.limits.cell_timeout_s:g} s and was stopped"), wall)
        if answer is not None and len(answer) <= self.limits.output_kb * 1024:
            return protocol.ProbeResult(answer, wall)
        if answer is not None:
            return protocol.ProbeResult(_probe_error(
                "Output", f"your code returned more than {self.limits.output_kb} KB of data; return less"), wall)
        if index in self.client.overflowed:
            return protocol.ProbeResult(_probe_error(
                "Output", f"your code printed more than {self.limits.output_kb} KB; print less"), wall)
        return protocol.ProbeResult(_probe_error("NoAnswer", "the call of your code did not return (did it "
                                                 "change how cells run or print?)"), wall)

    def take_answer(self, path: Path) -> str | None:
        """The probe's answer file, removed (None when there is none); read no further than one byte
        past the limit, so a huge file cannot fill this worker's memory."""
        try:
            with open(path, "rb") as f:
                data = f.read(self.limits.output_kb * 1024 + 1)
            path.unlink()
        except OSError:
            return None
        return data.decode("utf-8", "replace")

    def freeze(self, stop: bool) -> None:
        """SIGSTOP the kernel's process group and every process under this worker, or SIGCONT
        them all again.

        Stopping lists the descendants (one scan of /proc) and stops each on its own, then looks
        again (in the pids cgroup's list when there is one, one file, else by another scan) until
        it finds none new: a process forked between a scan and its parent's stop is caught by the
        next, and once all are stopped none can fork. Each is signalled on its own, so one that
        exits meanwhile cannot leave the others running. Continuing needs no scan: nothing under
        a stopped tree was born since, so it continues exactly those stopped (psutil refuses a
        PID that was reused)."""
        import psutil

        signum = signal.SIGSTOP if stop else signal.SIGCONT
        pid = self.kernel_pid()
        try:
            if pid and os.getpgid(pid) != os.getpgid(0):  # never this worker's own group
                os.killpg(os.getpgid(pid), signum)
        except OSError:
            pass
        if not stop:
            for proc in self.stopped.values():
                try:
                    proc.send_signal(signum)
                except psutil.Error:
                    pass
            self.stopped = {}
            return
        scanned = False
        while True:
            if scanned and self._cgroup_holds_only(self.stopped):
                return
            try:
                new = [p for p in psutil.Process().children(recursive=True) if p.pid not in self.stopped]
            except psutil.Error:
                new = []
            scanned = True
            if not new:
                return
            for proc in new:
                try:
                    proc.send_signal(signum)
                except psutil.Error:
                    pass
                self.stopped[proc.pid] = proc

    def _cgroup_holds_only(self, stopped: dict) -> bool:
        """Whether this worker's pids cgroup holds no process but this worker and ``stopped``: one
        file read, where a second scan of /proc costs as much as the first. False without the cgroup."""
        path = self.job.get("pids_cgroup")
        procs = cgroup_pids(path) if path else None
        return procs is not None and procs <= {os.getpid(), *stopped}

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

    def check_integrity(self, names: list[str] | None, *, freeze: list[str] | None = None,
                        label: str = "") -> list[str]:
        """The integrity report (frozen names included); ``freeze`` first records those names."""
        if freeze is not None:
            self.frozen.update({entry.removeprefix("state:"): entry for entry in freeze})
        cell, _ = self.run_cell(integrity.verify_source(self.token, names, freeze=freeze, label=label),
                                timeout=60, store_history=False)
        return integrity.parse_report(scoring.stdout_of(cell), self.token)

    def frozen_rebound(self, test_source: str) -> list[str]:
        """Frozen names a test cell bound again (its own objects are the grader's)."""
        return sorted(self.frozen[n.removeprefix("state:")] for n in restore.bound_names(test_source)
                      if n.removeprefix("state:") in self.frozen)

    def setup(self) -> dict:
        info = {"cgroups": "pids and memory" if self.job.get("cgroups") else "none (psutil watchdog)",
                "network": "audit hook", "filesystem": "audit hook", "hidden": []}
        try:
            for path in self.job.get("cgroups", []):
                (Path(path) / "cgroup.procs").write_text(str(os.getpid()))
        except OSError:
            info["cgroups"] = "none (psutil watchdog)"
            self.job["memory_cgroup"] = self.job["pids_cgroup"] = ""
        # Without a memory cgroup the watchdog kills the kernel at the limit (as the
        # cgroup would); RLIMIT_DATA at twice that is only a backstop.  RLIMIT_NPROC
        # counts all of a user's tasks (root is exempt), so it allows those running now.
        config = {"rlimit_data": 0 if self.job.get("memory_cgroup") else 2 * self.limits.memory_mb * 2**20,
                  "rlimit_fsize": self.limits.disk_mb * 2**20,
                  "rlimit_nproc": self.limits.max_processes + tasks_of(os.getuid()),
                  "drop_caps": os.geteuid() == 0, "pid_namespace": False}
        if self.job.get("isolate"):
            try:
                info.update(isolate_worker(self.workdir, self.job.get("allow_paths", []), self.limits))
                config["drop_caps"] = True
                config["pid_namespace"] = True
                self.kernel_has_shim = True
                info["processes"] = "own PID namespace, no capabilities"
            except OSError as exc:
                info["namespaces"] = f"unavailable ({exc.strerror or exc})"
                info["warning"] = NO_ISOLATION_WARNING
        for sub in ("matplotlib", "ipython", "jupyter-runtime", "jupyter-config", "jupyter-data"):
            (self.workdir / ".tmp" / sub).mkdir(parents=True, exist_ok=True)
        write_kernel_spec(self.workdir, config)
        if self.warm:  # now: isolated, limits known, and still one thread
            self.seed = KernelSeed(config)
        info["kernel"] = "forked with its imports done (warm)" if self.warm else "a fresh interpreter"
        return info

    def run(self) -> None:
        from nbclient.exceptions import CellTimeoutError, DeadKernelError

        self.sandbox = self.setup()
        self.token = "AG" + secrets.token_hex(12)
        client_class = limited_client_class()
        manager = {"kernel_manager_class": kernel_manager_class(self.seed)}
        # History in memory: IPython's history.sqlite would put test cells on the sandbox's disk.
        self.client = client_class(self.nb, timeout=self.limits.cell_timeout_s, kernel_name=KERNEL_NAME,
                                   allow_errors=True, shutdown_kernel="immediate", **manager,
                                   extra_arguments=["--HistoryManager.hist_file=:memory:"],
                                   resources={"metadata": {"path": str(self.workdir)}})
        self.client.output_cap = self.limits.output_kb * 1024
        env = clean_env(self.workdir)
        note = ""
        pending = ""  # a limit an earlier cell hit: the next test reports it
        tampered: list[str] = []
        label = "the first cell"
        self.watchdog = Watchdog(self.kernel_pid, self.limits, self.job.get("memory_cgroup", ""),
                                  self.job.get("pids_cgroup", ""), shim=self.kernel_has_shim)
        try:
            with self.client.setup_kernel(env=env, cwd=str(self.workdir),
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL):
                self.watchdog.start()
                boot, _ = self.run_cell(integrity.bootstrap_source(
                    self.token, hidden_dirs=self.job["hidden_dirs"], include_tf=self.job["include_tf"],
                    allow=self.job.get("keep_paths", []), writable=[str(self.workdir)]),
                    timeout=max(120.0, self.limits.cell_timeout_s), store_history=False)
                ready = scoring.after_token(scoring.stdout_of(boot), self.token + "ready")
                if ready is None:
                    raise RuntimeError("the grader's bootstrap cell failed: " + _error_text(boot))
                self.profile = json.loads(ready)
                for spec in self.job["cells"]:
                    label = spec["label"]
                    if spec["kind"] in ("code", "locked"):
                        pending = self.run_learner_cell(spec["source"], label) or pending
                        if spec["kind"] == "locked" and not tampered:
                            tampered = self.check_integrity([], freeze=spec["binds"], label=label)
                        continue
                    reply = self.reach_test(spec["grade_id"], pending)
                    if isinstance(reply, protocol.Serve):
                        if not tampered:  # the locked cells' names are still theirs (the judge's probes call them)
                            tampered = self.check_integrity([])
                        dead = self.serve_probes()
                        if not tampered and not dead:  # the probes must not have changed the checks or locked names
                            tampered = self.check_integrity([], label=label)
                        self.send(protocol.Checked(list(tampered)))
                        if dead:
                            raise DeadKernelError(dead)
                        pending = ""
                        continue
                    source = reply.source
                    names = integrity.global_names(source)
                    if not tampered:
                        tampered = self.check_integrity(names)
                    sentinel = scoring.new_sentinel()
                    # Not in the kernel's history: a later cell must not find hidden tests in In/_ih.
                    cell, index, stopped = self.run_limited(scoring.with_sentinel(source, sentinel), label,
                                                            store_history=False)
                    if not tampered:
                        # The test's own bindings are the grader's: they stay frozen from here on.
                        tampered = self.check_integrity(names, freeze=self.frozen_rebound(source), label=label)
                    self.send(protocol.PartResult(**asdict(self.score(spec, cell, index, pending or stopped,
                                                                      tampered, sentinel))))
                    pending = ""
        except CellTimeoutError:
            note = (f"{label} ran longer than {self.limits.cell_timeout_s:g} s, did not stop when "
                    "interrupted, and was killed; later cells did not run")
        except DeadKernelError:
            note = self.death_reason(label)
        except (TypeError, KeyError, ValueError) as exc:  # a reply that is not a Jupyter message
            note = (f"grading stopped in {label}: the kernel's replies could not be read ({exc.__class__.__name__}); "
                    "a notebook must not change json, the kernel or its messages")
        finally:
            self.watchdog.stopped.set()
        self.send(protocol.Done(note, self.sandbox, self.profile))

    def death_reason(self, label: str) -> str:
        if self.watchdog is not None and self.watchdog.reason:
            what = self.watchdog.reason
        elif self.watchdog is not None and self.watchdog.memory_limit_hit():
            what = f"the notebook used more than {self.limits.memory_mb} MB of memory and was stopped"
        else:
            what = "the kernel died (a crash, sys.exit/os._exit or running out of memory)"
        return f"{what} in {label}; later cells did not run"

    def run_limited(self, source: str, label: str, *, store_history: bool = True):
        """Run a cell; return it, its index and the message of a time limit it broke."""
        cell, index = self.run_cell(source, store_history=store_history)
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
        reply = self.client.replies.get(index) or {}
        error = (reply["ename"], reply.get("evalue", "")) if reply.get("status") == "error" else scoring.error_of(cell)
        if error and error[0] == "MemoryError":
            return f"{label} ran out of memory (limit {self.limits.memory_mb} MB)"
        if error and error[0] in ("SystemExit",):
            return f"{label} called sys.exit(); remove it, a notebook must run to the end"
        return ""

    def score(self, spec: dict, cell, index: int, pending: str, tampered: list[str], sentinel: str) -> TestResult:
        gid, points = spec["grade_id"], spec["points"]
        if tampered:
            return TestResult(gid, 0.0, points, integrity.message(tampered), "visible", "failed")
        if index in self.client.overflowed:
            return TestResult(gid, 0.0, points, f"this test printed more than {self.limits.output_kb} KB of "
                              "output (does your function print in a loop?); print less", "visible", "failed")
        if pending:  # a limit broken by this part's cells costs the part, whatever the test found
            return TestResult(gid, 0.0, points, pending, "visible", "failed")
        return scoring.score_test(cell, grade_id=gid, points=points, reply=self.client.replies.get(index),
                                 sentinel=sentinel)


def _probe_error(ename: str, message: str) -> str:
    return json.dumps({"error": {"type": ename, "message": message}})


def _error_text(cell) -> str:
    error = scoring.error_of(cell)
    if error:
        return f"{error[0]}: {error[1]}"
    text = "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")
    return text[-500:] or "no output"


def worker_main(*, warm: bool = False) -> int:
    """``python -m autograder.sandbox.worker worker``: one job on stdin, events on stdout
    (``warm``: forked by :mod:`autograder.sandbox.warm_start`'s zygote)."""
    _libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG: die with the grader
    _libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: orphans of the kernel stay our descendants
    proto_out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # nothing printed by libraries can corrupt the event stream
    proto_in = sys.stdin
    job = json.loads(proto_in.readline())
    worker = _Worker(job, proto_out, proto_in, warm=warm)
    try:
        worker.run()
    except Exception as exc:  # report, don't hang the grader
        worker.send(protocol.Done(f"the sandbox failed: {exc.__class__.__name__}: {exc}", worker.sandbox))
        raise
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["worker"]:
        return worker_main()
    print("usage: python -m autograder.sandbox.worker worker; "
          "the grade command starts these", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
