"""The sandbox's kernel launcher: ``python -m autograder.grading.sandbox_worker
kernel -f CONNECTION`` limits itself (rlimits, capabilities, a PID namespace
when asked) and becomes ipykernel (:func:`kernel_main`).

:mod:`autograder.grading.sandbox_worker` stays the entry point and dispatches
here.
"""
from __future__ import annotations

import ctypes
import json
import os
import signal
import struct
import sys

from autograder.grading.sandbox import KERNEL_CONFIG_ENV
from autograder.grading.sandbox_isolation import (
    CLONE_NEWNS, CLONE_NEWPID, MS_NODEV, MS_NOEXEC, MS_NOSUID, MS_PRIVATE, MS_REC, _check, _libc, _mount,
)


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
    """``python -m autograder.grading.sandbox_worker kernel -f CONNECTION``: limit, then become ipykernel.

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
