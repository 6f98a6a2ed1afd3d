"""The sandbox worker's isolation: the namespaces and mounts that give it a
private root holding only an allowlist (:func:`isolate_worker`), and the libc
calls they are made of.

The worker (:mod:`autograder.grading.sandbox_worker`) calls it before it starts
the kernel; the kernel launcher (:mod:`autograder.grading.sandbox_kernel`) uses
the same calls for its PID namespace.
"""
from __future__ import annotations

import ctypes
import os
import shutil
import socket
import struct
from pathlib import Path

from autograder.forking import close_fds_except  # noqa: F401  (the sandbox's forks use it from here)
from autograder.grading.limits import Limits


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


NO_ISOLATION_WARNING = (
    "NOT ISOLATED: this machine allows no namespaces, so the kernel could read any file this user can "
    "(course files, other submissions); only a Python audit hook stands guard, and a subprocess or ctypes "
    "walks around it. Grade on a machine with unprivileged user namespaces (or as root)")
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/sys")
CLONE_NEWUSER = 0x10000000
MNT_DETACH = 2
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}


def _enter_user_namespace() -> None:
    """Become root of a new user namespace (mapped to our own uid), so that an
    unprivileged grader can build the same private root as a root one."""
    uid, gid = os.getuid(), os.getgid()
    _check(_libc.unshare(CLONE_NEWUSER), "unshare user")
    Path("/proc/self/setgroups").write_text("deny")
    Path("/proc/self/uid_map").write_text(f"0 {uid} 1")
    Path("/proc/self/gid_map").write_text(f"0 {gid} 1")


def _locked_flags(path: str) -> int:
    """The mount flags a read-only remount must keep (the kernel refuses to drop them)."""
    flags = os.statvfs(path).f_flag
    return (flags & (os.ST_NOSUID | os.ST_NODEV | os.ST_NOEXEC)) | \
        (MS_RDONLY if flags & os.ST_RDONLY else 0)


def _bind(source: str, root: str, *, writable: bool = False) -> None:
    """Make ``source`` appear at the same path under ``root`` (read-only unless ``writable``)."""
    target = root + source
    if os.path.islink(source) and os.path.dirname(source) == "/":  # /bin -> usr/bin on merged-/usr systems
        os.symlink(os.readlink(source), target)
        return
    if os.path.isdir(source):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        Path(target).touch()
    _mount(source, target, None, MS_BIND | MS_REC)
    if not writable:
        _mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | _locked_flags(target))


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
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    root = str(workdir.with_name(workdir.name + ".root"))
    os.makedirs(root, exist_ok=True)
    _mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=16m,mode=755")
    for path in SYSTEM_PATHS:
        if os.path.lexists(path):
            _bind(path, root)
    _bind("/dev", root, writable=True)
    for private in ("/tmp", "/dev/shm"):  # before the allowlist: a course checkout may live under /tmp
        os.makedirs(root + private, exist_ok=True)
        _mount("tmpfs", root + private, "tmpfs", MS_NOSUID | MS_NODEV, "size=256m,mode=1777")
    for path in sorted(set(allow_paths)):
        if os.path.exists(path) and not os.path.exists(root + path):
            _bind(path, root)
    os.makedirs(root + "/proc", exist_ok=True)
    _mount("/proc", root + "/proc", None, MS_BIND | MS_REC)
    os.makedirs(root + str(workdir), exist_ok=True)
    _mount("tmpfs", root + str(workdir), "tmpfs", MS_NOSUID | MS_NODEV, f"size={limits.disk_mb}m,mode=755")
    shutil.copytree(workdir, root + str(workdir), symlinks=True, dirs_exist_ok=True)
    os.makedirs(root + "/.old", exist_ok=True)
    number = SYS_PIVOT_ROOT.get(os.uname().machine)
    if number is None:
        raise OSError(0, f"pivot_root: unknown system call number on {os.uname().machine}")
    _check(_libc.syscall(number, root.encode(), (root + "/.old").encode()), "pivot_root")
    os.chdir("/")
    _check(_libc.umount2(b"/.old", MNT_DETACH), "umount old root")
    os.rmdir("/.old")
    _mount(None, "/", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
    os.chdir(workdir)
    mechanisms.update({"network": "namespace (loopback only)",
                       "filesystem": (f"private root: system folders, Python and the autograder package "
                                      f"read-only; the submission on a private {limits.disk_mb} MB tmpfs"),
                       "hidden": ["everything not on the allowlist"]})
    return mechanisms
