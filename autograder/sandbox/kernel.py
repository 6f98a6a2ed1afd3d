"""The sandbox's kernel launcher: ``python -m autograder.sandbox.kernel -f CONNECTION``
limits itself (rlimits, capabilities, a PID namespace
when asked) and becomes ipykernel (:func:`kernel_main`).

A warm worker (forked from :mod:`autograder.sandbox.warm_start`'s zygote, with
TensorFlow and ipykernel already imported) does not exec a fresh Python: it
forks a :class:`KernelSeed` while it is still one thread, right after its
isolation, and the seed becomes the same limited kernel in-process when
jupyter_client asks for one (:func:`kernel_manager_class`).

The worker (:mod:`autograder.sandbox.worker`) names this module in the kernel spec it writes
(:data:`KERNEL_MODULE`); a person never starts it.
"""
from __future__ import annotations

import importlib.util
import json
import os
import signal
import sys

from autograder.forking import set_process_name
from autograder.sandbox.host import KERNEL_CONFIG_ENV
from autograder.sandbox.isolation import (
    CLONE_NEWNS, CLONE_NEWPID, MS_NODEV, MS_NOEXEC, MS_NOSUID, MS_PRIVATE, MS_REC, _check, _libc, _mount,
    close_fds_except,
)
from autograder.isolation import drop_capabilities, shim_wait


# --- the kernel launcher ----------------------------------------------------------------

KERNEL_MODULE = "autograder.sandbox.kernel"  # what the kernel spec runs: ``python -m KERNEL_MODULE -f ...``


def _limit(config: dict) -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if config.get("rlimit_fsize"):
        resource.setrlimit(resource.RLIMIT_FSIZE, (config["rlimit_fsize"],) * 2)
    if config.get("rlimit_data"):
        resource.setrlimit(resource.RLIMIT_DATA, (config["rlimit_data"],) * 2)
    if config.get("rlimit_nproc"):  # ignored for root, effective otherwise
        resource.setrlimit(resource.RLIMIT_NPROC, (config["rlimit_nproc"],) * 2)
    if config.get("drop_caps"):
        drop_capabilities()


def _limit_and_exec(config: dict, argv: list[str]) -> None:
    _limit(config)
    os.execv(sys.executable, [sys.executable, "-m", "ipykernel_launcher", *argv])


def _start_limited(config: dict, become) -> int:
    """Limit this process and call ``become()`` (which never returns), in a PID namespace of
    its own when ``config`` asks for one.

    With ``pid_namespace`` this process stays as a small shim: it unshares a
    PID namespace and forks, and the child -- PID 1 there, with its own
    ``/proc`` -- becomes the kernel.  (A process can't do this for itself: after
    ``unshare(CLONE_NEWPID)`` it may not start threads, and the worker needs
    threads.)  The child dies with the shim, and everything in the namespace
    dies with the child.  Returns the child's exit code (the shim's)."""
    _libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG: die with the worker (kept across exec)
    if not config.get("pid_namespace"):
        _limit(config)
        become()
    _check(_libc.unshare(CLONE_NEWPID), "unshare pid")
    child = os.fork()
    if child == 0:
        try:
            _libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
            _check(_libc.unshare(CLONE_NEWNS), "unshare mount")
            _mount(None, "/", None, MS_REC | MS_PRIVATE)
            _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
            _limit(config)
            become()
        finally:
            os._exit(127)
    return shim_wait(child)  # SIGINT reaches the child through the process group; termination is passed on


def kernel_main(argv: list[str]) -> int:
    """``python -m autograder.sandbox.kernel -f CONNECTION``: limit, then become ipykernel
    (see :func:`_start_limited`)."""
    config = json.loads(os.environ.pop(KERNEL_CONFIG_ENV, "{}"))
    return _start_limited(config, lambda: _limit_and_exec(config, argv))


# --- the warm kernel: forked, not exec'd --------------------------------------------------

WARM_KERNEL_NAME = "ag-kernel"


PRELOADED_ENV: dict[str, str] = {}  # what the zygote's imports put in os.environ (TensorFlow sets a few)


def _become_ipykernel(argv: list[str], env: dict, cwd: str, *, close: int = -1) -> None:
    """Turn this (forked, limited) process into ipykernel with ``argv``, as ``python -m
    ipykernel_launcher`` would start: ``env`` and what the imports would have added to it, ``cwd``,
    default signals, no working folder on ``sys.path`` (IPython puts the kernel's own back; the
    zygote took its own off).  ``close``: a descriptor the shim keeps and the kernel must not."""
    try:
        if close >= 0:
            os.close(close)
        set_process_name(WARM_KERNEL_NAME)  # what ps shows (its command line is the zygote's)
        os.environ.clear()
        os.environ.update(env)
        for name, value in PRELOADED_ENV.items():
            os.environ.setdefault(name, value)
        os.chdir(cwd)
        for signum in (signal.SIGTERM, signal.SIGCHLD, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2):
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        sys.path[:] = [p for p in sys.path if p != ""]
        sys.argv = [importlib.util.find_spec("ipykernel_launcher").origin, *argv]  # as ``-m`` sets it
        if "numpy" in sys.modules:  # the zygote's global RandomState would be every kernel's
            sys.modules["numpy"].random.seed()
        from ipykernel import kernelapp

        kernelapp.IPKernelApp.launch_instance(argv=argv)
    finally:
        os._exit(0)


class ForkedKernel:
    """The seed's process as jupyter_client's provisioner sees a kernel it started (``Popen``'s
    ``pid``, ``poll``, ``wait``, ``send_signal``, ``kill``, ``terminate``; no pipes)."""

    stdin = stdout = stderr = None

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                self.returncode = 1
                return self.returncode
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        import subprocess
        import time

        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"kernel {self.pid}", timeout)
            time.sleep(0.02)
        return self.returncode

    def send_signal(self, signum: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, signum)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class KernelSeed:
    """A child forked now, while the worker is one thread and already isolated, that becomes
    the kernel later (:meth:`launch`): the kernel starts with everything the zygote imported
    (TensorFlow, ipykernel, the checks) instead of a fresh interpreter's imports.

    The seed keeps no descriptor of the worker's but its launch pipe (not the grader's event
    stream, not the log), leads a session of its own (as jupyter_client's kernels do) and dies
    with the worker.  The worker makes its secret token only after the seed is forked."""

    def __init__(self, config: dict) -> None:
        launch_r, launch_w = os.pipe()
        ready_r, ready_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.setsid()
                _libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG: die with the worker
                set_process_name("ag-kernel-shim")
                # stdin a pipe nobody writes to (as jupyter_client gives a kernel), stdout and stderr
                # /dev/null; the pipe's other end stays with the shim.
                stdin_r, stdin_w = os.pipe()
                null = os.open(os.devnull, os.O_RDWR)
                close_fds_except({launch_r, ready_w, stdin_r, stdin_w, null})
                for fd, target in ((stdin_r, 0), (null, 1), (null, 2)):
                    os.dup2(fd, target)
                os.close(stdin_r)
                os.close(null)
                os.write(ready_w, b"1")
                os.close(ready_w)
                with os.fdopen(launch_r, "rb") as pipe:
                    request = pipe.read()
                if request:
                    launch = json.loads(request)
                    env = dict(launch["env"])
                    env.pop(KERNEL_CONFIG_ENV, None)
                    shim_keeps = stdin_w if config.get("pid_namespace") else -1
                    os._exit(_start_limited(config, lambda: _become_ipykernel(
                        launch["argv"], env, launch["cwd"], close=shim_keeps)))
            finally:
                os._exit(127)
        os.close(launch_r)
        os.close(ready_w)
        try:
            if os.read(ready_r, 1) != b"1":
                raise OSError("the kernel seed did not start")
        finally:
            os.close(ready_r)
        self.pid, self._launch_w = pid, launch_w

    def launch(self, cmd: list[str], env: dict, cwd: str) -> ForkedKernel:
        """Start the kernel ``cmd`` (the kernel spec's command line) would have started."""
        argv = cmd[cmd.index(KERNEL_MODULE) + 1:] if KERNEL_MODULE in cmd else list(cmd[1:])
        request = json.dumps({"argv": argv, "env": env, "cwd": cwd}).encode()
        with os.fdopen(self._launch_w, "wb") as pipe:
            pipe.write(request)
        self._launch_w = -1
        return ForkedKernel(self.pid)

    def discard(self) -> None:
        """Let an unused seed exit (the worker failed before it needed a kernel)."""
        if self._launch_w >= 0:
            os.close(self._launch_w)
            self._launch_w = -1


def ready_client_class():
    """An ``AsyncKernelClient`` ready as soon as its kernel has answered ``kernel_info`` and IOPub
    has carried a message.  jupyter_client 8's own ``wait_for_ready`` is this loop followed by
    listening to IOPub until it has been quiet for 0.2 s, at every kernel start (a third of a
    warm kernel's start here); nbclient ignores every IOPub message that is not about the cell
    it runs, so nothing needs flushing."""
    import time
    from queue import Empty

    from jupyter_client.asynchronous import AsyncKernelClient
    from jupyter_client.utils import ensure_async

    class ReadyKernelClient(AsyncKernelClient):
        async def wait_for_ready(self, timeout: float | None = None) -> None:
            deadline = time.monotonic() + (float("inf") if timeout is None else timeout)
            while True:
                self.kernel_info()
                try:
                    msg = await ensure_async(self.shell_channel.get_msg(timeout=1))
                except Empty:
                    pass
                else:
                    if msg["msg_type"] == "kernel_info_reply":
                        try:  # IOPub connected: the kernel's status for this request arrives
                            await ensure_async(self.iopub_channel.get_msg(timeout=0.2))
                        except Empty:
                            pass
                        else:
                            self._handle_kernel_info_reply(msg)
                            return
                if not await ensure_async(self.is_alive()):
                    raise RuntimeError("Kernel died before replying to kernel_info")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"Kernel didn't respond in {timeout:g} seconds")

    return ReadyKernelClient


def kernel_manager_class(seed: KernelSeed | None):
    """An ``AsyncKernelManager`` whose clients are :func:`ready_client_class`'s and, with a
    ``seed``, whose kernel is that seed, launched where jupyter_client would start a process
    (ports, connection file and the kernel spec's environment as usual)."""
    from jupyter_client.manager import AsyncKernelManager
    from traitlets import default

    ready = ready_client_class()

    class SandboxKernelManager(AsyncKernelManager):
        @default("client_factory")
        def _ready_client(self):
            return ready

        async def _async_launch_kernel(self, kernel_cmd: list[str], **kw) -> None:
            if seed is None:
                return await super()._async_launch_kernel(kernel_cmd, **kw)
            provisioner = self.provisioner
            cwd = str(kw.get("cwd") or os.getcwd())
            process = seed.launch(kernel_cmd, dict(kw.get("env") or {}), cwd)
            provisioner.process, provisioner.pid, provisioner.pgid = process, process.pid, process.pid
            provisioner.cwd = cwd
            self._reconcile_connection_info(provisioner.connection_info)

    return SandboxKernelManager


if __name__ == "__main__":
    raise SystemExit(kernel_main(sys.argv[1:]))
