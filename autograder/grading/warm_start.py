"""Warm workers: a zygote that has imported the sandbox worker, ipykernel and (for
TensorFlow assignments) TensorFlow once, and forks a fresh worker per submission.

Without it every submission starts two interpreters -- the worker and the kernel
-- and the kernel's bootstrap imports TensorFlow (several seconds of each
notebook on two cores).  With it (the default):

- the grader asks the zygote of its environment for a worker (:func:`spawn`),
  handing it the worker's three pipes; the zygote forks, the child leads a
  session of its own, keeps only those three descriptors, takes exactly the
  environment and folder a cold worker gets, and runs the same
  ``worker_main``: it reads the job, isolates itself (namespaces, private
  root, cgroups) as before;
- the worker forks its kernel as a :class:`~autograder.grading.sandbox_kernel.KernelSeed`
  right after isolation, so the kernel starts with TensorFlow imported and
  with the same limits, PID namespace and capabilities a cold kernel has.

What is shared is only what the zygote imported before any submission existed:
no submission's data ever reaches the zygote (the job travels on the worker's
own stdin), and each worker and kernel is a copy-on-write fork, gone with its
submission.  A zygote serves one environment (what ``clean_env`` passes, less
the per-submission folders): a grader whose ``TF_ENABLE_ONEDNN_OPTS`` or
visible GPUs change gets a new one.  ``AUTOGRADER_KERNELS=cold`` starts every
worker and kernel as a fresh interpreter (the benchmark's "before").
"""
from __future__ import annotations

import atexit
import json
import os
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

KERNELS_ENV = "AUTOGRADER_KERNELS"
PER_SUBMISSION_ENV = ("HOME", "TMPDIR", "MPLCONFIGDIR", "IPYTHONDIR", "JUPYTER_RUNTIME_DIR", "JUPYTER_PATH",
                      "JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR")
START_TIMEOUT_S = 180.0
MAX_ZYGOTES = 3  # each with TensorFlow holds ~0.5 GB; the oldest goes first


def enabled() -> bool:
    """Warm workers unless ``AUTOGRADER_KERNELS=cold``."""
    return os.environ.get(KERNELS_ENV, "warm").strip().lower() != "cold"


class WarmWorker:
    """A worker the zygote forked, as the grader uses a ``Popen``: ``pid``, ``stdin``,
    ``stdout``, ``poll``, ``wait``.  Its exit is seen through a pidfd (the zygote reaps it)."""

    def __init__(self, pid: int, pidfd: int, stdin, stdout) -> None:
        self.pid, self.pidfd, self.stdin, self.stdout = pid, pidfd, stdin, stdout
        self.returncode: int | None = None

    def poll(self) -> int | None:
        return self._wait(0.0)

    def wait(self, timeout: float | None = None) -> int:
        code = self._wait(timeout)
        if code is None:
            raise subprocess.TimeoutExpired(f"worker {self.pid}", timeout)
        return code

    def _wait(self, timeout: float | None) -> int | None:
        if self.returncode is None:
            poller = select.poll()  # not select(): a busy grader's descriptors may pass FD_SETSIZE
            poller.register(self.pidfd, select.POLLIN)
            if poller.poll(None if timeout is None else int(timeout * 1000)):
                self.returncode = 0  # reaped by the zygote: only "ended" is known
                os.close(self.pidfd)
                for stream in (self.stdin, self.stdout):
                    try:
                        stream.close()
                    except OSError:
                        pass
        return self.returncode


class Zygote:
    """One zygote process and the socket it takes requests on."""

    def __init__(self, with_tf: bool, env: dict[str, str], cwd: Path, prefix: str) -> None:
        """``env`` is a submission's in ``cwd``; the zygote's folders mirror it (see
        :func:`~autograder.grading.warm_zygote.rehome`) in a folder named ``prefix...`` beside
        ``cwd`` (the sandbox names it so that a dead grader's is swept like its sandboxes)."""
        self.folder = Path(tempfile.mkdtemp(prefix=prefix, dir=cwd.parent))
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        zygote_env = dict(env)
        for name in PER_SUBMISSION_ENV:
            value = zygote_env.get(name, "")
            if value == str(cwd) or value.startswith(str(cwd) + "/"):
                zygote_env[name] = str(self.folder) + value[len(str(cwd)):]
                Path(zygote_env[name]).mkdir(parents=True, exist_ok=True)
        self.log_path = self.folder / "zygote.log"
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "autograder.grading.warm_zygote", str(theirs.fileno()),
                 "tf" if with_tf else "plain"],
                pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd="/",
                env=zygote_env, start_new_session=True)
        theirs.close()
        self.sock = ours
        self.lock = threading.Lock()
        self.sock.settimeout(START_TIMEOUT_S)
        try:
            ready = self.sock.recv(64)
        except OSError:
            ready = b""
        if ready != b"ready":
            self.close()
            raise OSError(f"the worker zygote did not start: {self.log_tail()}")
        self.sock.settimeout(30.0)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def spawn(self, cwd: Path, env: dict[str, str], stderr) -> WarmWorker:
        """A new worker in ``cwd`` with exactly ``env``, its stderr on ``stderr``."""
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        try:
            with self.lock:
                socket.send_fds(self.sock, [json.dumps({"cwd": str(cwd), "env": env}).encode()],
                                [in_r, out_w, stderr.fileno()])
                reply, fds, _, _ = socket.recv_fds(self.sock, 4096, 1)
        except OSError:
            for fd in (in_w, out_r):
                os.close(fd)
            raise
        finally:
            os.close(in_r)
            os.close(out_w)
        answer = json.loads(reply or b"{}")
        if not fds or "pid" not in answer:
            for fd in [*fds, in_w, out_r]:
                os.close(fd)
            raise OSError(f"the worker zygote could not fork: {answer.get('error', 'no answer')}")
        return WarmWorker(answer["pid"], fds[0], os.fdopen(in_w, "wb"), os.fdopen(out_r, "rb"))

    def log_tail(self) -> str:
        try:
            return self.log_path.read_bytes()[-1500:].decode("utf-8", "replace")
        except OSError:
            return ""

    def close(self) -> None:
        self.sock.close()  # the zygote ends at end of file; its workers die with it
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


_ZYGOTES: dict[tuple, Zygote] = {}  # oldest first
_LOCK = threading.Lock()


def _key(with_tf: bool, env: dict[str, str]) -> tuple:
    return with_tf, tuple(sorted((k, v) for k, v in env.items() if k not in PER_SUBMISSION_ENV))


def spawn(cwd: Path, env: dict[str, str], stderr, *, with_tf: bool, prefix: str) -> WarmWorker:
    """A worker forked by the zygote for this environment (started on first use; its folder is
    named ``prefix...``).  OSError when no zygote can start or fork (the caller starts a cold
    worker instead)."""
    key = _key(with_tf, env)
    with _LOCK:
        zygote = _ZYGOTES.pop(key, None)
        if zygote is not None and not zygote.alive():
            zygote.close()
            zygote = None
        if zygote is None:
            zygote = Zygote(with_tf, env, cwd, prefix)
        _ZYGOTES[key] = zygote
        evicted = [_ZYGOTES.pop(k) for k in list(_ZYGOTES)[:-MAX_ZYGOTES]]
    for old in evicted:
        old.close()
    try:
        return zygote.spawn(cwd, env, stderr)
    except OSError:
        with _LOCK:
            if _ZYGOTES.get(key) is zygote:
                del _ZYGOTES[key]
        zygote.close()
        raise


@atexit.register
def close_all() -> None:
    """Stop every zygote (at exit, on Ctrl-C)."""
    with _LOCK:
        zygotes = list(_ZYGOTES.values())
        _ZYGOTES.clear()
    for zygote in zygotes:
        zygote.close()
