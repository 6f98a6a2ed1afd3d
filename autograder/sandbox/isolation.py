"""The sandbox worker's isolation: the namespaces and mounts that give it a
private root holding only an allowlist (:func:`isolate_worker`), and the libc
calls they are made of.

The worker (:mod:`autograder.sandbox.worker`) calls it before it starts
the kernel; the kernel launcher (:mod:`autograder.sandbox.kernel`) uses
the same calls for its PID namespace.
"""
from __future__ import annotations

import os
from pathlib import Path

from autograder.forking import close_fds_except  # noqa: F401  (the sandbox's forks use it from here)
from autograder.submission.limits import Limits
from autograder.isolation import (  # noqa: F401  (the sandbox's modules take these from here)
    CLONE_NEWNET, CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWUSER, MNT_DETACH, MS_BIND, MS_NODEV, MS_NOEXEC, MS_NOSUID,
    MS_PRIVATE, MS_RDONLY, MS_REC, MS_REMOUNT, SYS_PIVOT_ROOT, SYSTEM_PATHS, libc as _libc,
)
from autograder.isolation import bind as _bind  # noqa: F401
from autograder.isolation import build_root
from autograder.isolation import check as _check
from autograder.isolation import enter_user_namespace as _enter_user_namespace
from autograder.isolation import locked_flags as _locked_flags
from autograder.isolation import loopback_up as _loopback_up
from autograder.isolation import mount as _mount

NO_ISOLATION_WARNING = (
    "NOT ISOLATED: this machine allows no namespaces, so the kernel could read any file this user can "
    "(course files, other submissions); only a Python audit hook stands guard, and a subprocess or ctypes "
    "walks around it. Grade on a machine with unprivileged user namespaces (or as root)")


def isolate_worker(workdir: Path, allow_paths: list[str], limits: Limits) -> dict:
    """Move this process into a private root that holds only an allowlist.

    New mount and network namespaces (and a user namespace first when not
    root); the network has only loopback.  The new root is a small tmpfs
    holding read-only binds of ``SYSTEM_PATHS``, ``/dev`` and ``allow_paths``
    (the Python installation, the ``autograder`` package and the files the
    exercises build with), a private copy of ``workdir`` on a tmpfs of
    ``limits.disk_mb``, and fresh ``/tmp`` and ``/dev/shm``.  Nothing else of
    the machine exists there: not the course repository, its ``.git``,
    ``solutions/`` or ``tests/``, nor any other submission, whatever tool
    looks.  Raises OSError when namespaces are unavailable."""
    mechanisms = {}
    if os.geteuid() != 0:
        _enter_user_namespace()
        mechanisms["user"] = "unprivileged user namespace"
    _check(_libc.unshare(CLONE_NEWNS | CLONE_NEWNET), "unshare")
    _loopback_up()
    root = str(workdir.with_name(workdir.name + ".root"))
    os.makedirs(root, exist_ok=True)
    build_root(root, readonly=allow_paths, copies={str(workdir): limits.disk_mb})
    os.chdir(workdir)
    mechanisms.update({"network": "namespace (loopback only)",
                       "filesystem": (f"private root: system folders, Python and the autograder package "
                                      f"read-only; the submission on a private {limits.disk_mb} MB tmpfs"),
                       "hidden": ["everything not on the allowlist"]})
    return mechanisms
