"""Private roots: the namespaces and mounts that shut a process in with an allowlist of folders.

Two kinds of process are shut in this way.  The sandbox worker
(:mod:`autograder.sandbox.isolation` builds its root from these calls) runs a learner's
notebook.  A **confined** check process runs what a learner *made* on the grader's side: the judge
loads and calls a learner's exported SavedModel in a fresh process, and the ops of that SavedModel
run there.  :func:`confine` gives such a process no network, a root that holds only the system
folders, the Python installation and this package (read-only), the folders a check names
(read-only) and one folder it may write; its own PID namespace and ``/proc`` (no other process of
the machine is visible, so no ``/proc/PID/root`` leads back to the grader's files); no
capabilities; limits on file size, memory and core dumps.  The course's solutions, hidden tests,
``.git``, other submissions and every grade are simply not there.

``python -m autograder.isolation SPEC MODULE ARGS...`` (started by
:func:`autograder.checks.clean_subprocess.run_module` when asked to confine) enters the private
root described by ``SPEC`` (JSON), then runs ``MODULE`` as ``python -m`` would.  It imports
nothing heavy first: a user namespace can only be entered by a process with one thread.
"""
from __future__ import annotations

import ctypes
import json
import os
import shutil
import signal
import socket
import struct
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNS, CLONE_NEWNET, CLONE_NEWPID, CLONE_NEWUSER = 0x00020000, 0x40000000, 0x20000000, 0x10000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MNT_DETACH = 2
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP = 1, 38, 24
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/sys")


def check(result: int, what: str) -> None:
    """Raise ``OSError`` (with errno's text) when a libc call returned non-zero."""
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    enc = lambda s: s.encode() if s is not None else None  # noqa: E731
    check(libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)), f"mount {target}")


def loopback_up() -> None:
    """Bring up ``lo`` in this (new) network namespace."""
    import fcntl

    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        request = struct.pack("16sH14s", b"lo", 0, b"")
        flags = struct.unpack("16sH14s", fcntl.ioctl(sock, 0x8913, request))[1]
        fcntl.ioctl(sock, 0x8914, struct.pack("16sH14s", b"lo", flags | 1, b""))
    finally:
        sock.close()


def enter_user_namespace() -> None:
    """Become root of a new user namespace (mapped to our own uid), so that an
    unprivileged grader can build the same private root as a root one."""
    uid, gid = os.getuid(), os.getgid()
    check(libc.unshare(CLONE_NEWUSER), "unshare user")
    Path("/proc/self/setgroups").write_text("deny")
    Path("/proc/self/uid_map").write_text(f"0 {uid} 1")
    Path("/proc/self/gid_map").write_text(f"0 {gid} 1")


def locked_flags(path: str) -> int:
    """The mount flags a read-only remount must keep (the kernel refuses to drop them)."""
    flags = os.statvfs(path).f_flag
    return (flags & (os.ST_NOSUID | os.ST_NODEV | os.ST_NOEXEC)) | \
        (MS_RDONLY if flags & os.ST_RDONLY else 0)


def bind(source: str, root: str, *, writable: bool = False) -> None:
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
    mount(source, target, None, MS_BIND | MS_REC)
    if not writable:
        mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | locked_flags(target))


def drop_capabilities() -> None:
    """Give up every capability, for good (bounding set, effective/permitted/inheritable, no new
    privileges on exec)."""
    for cap in range(64):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            break
    header = struct.pack("II", 0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = ctypes.create_string_buffer(24)  # two zeroed cap_user_data_t
    check(libc.capset(ctypes.c_char_p(header), data), "capset")
    check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


def python_paths() -> list[str]:
    """What a process shut in a private root needs to run Python with this package: the Python
    installation, its site-packages and the ``autograder`` package folder itself (not the
    checkout around it)."""
    paths = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)}
    paths.update(os.path.realpath(p) for p in sys.path if p and os.path.isdir(p) and "site-packages" in p)
    paths.add(str(Path(__file__).resolve().parent))
    return sorted(paths)


def build_root(root: str, *, readonly: list[str], writable: list[str] = (), copies: dict[str, int] | None = None,
               tmp_mb: int = 256) -> None:
    """Fill ``root`` (an empty folder) as a private root and make it this process's ``/``: a
    tmpfs holding read-only binds of :data:`SYSTEM_PATHS` and ``readonly``, writable binds of
    ``writable`` and ``/dev``, for each folder of ``copies`` a private copy on a tmpfs of that
    many MB, fresh ``/tmp`` and ``/dev/shm``, and the machine's ``/proc`` (for a PID namespace's
    fresh one to cover).  Call it in new user (when not root), mount and network namespaces."""
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=16m,mode=755")
    for path in SYSTEM_PATHS:
        if os.path.lexists(path):
            bind(path, root)
    bind("/dev", root, writable=True)
    for private in ("/tmp", "/dev/shm"):  # before the allowlist: a course checkout may live under /tmp
        os.makedirs(root + private, exist_ok=True)
        mount("tmpfs", root + private, "tmpfs", MS_NOSUID | MS_NODEV, f"size={tmp_mb}m,mode=1777")
    for path in sorted(set(readonly)):
        if os.path.exists(path) and not os.path.exists(root + path):
            bind(path, root)
    for path in sorted(set(writable)):
        bind(path, root, writable=True)
    os.makedirs(root + "/proc", exist_ok=True)
    mount("/proc", root + "/proc", None, MS_BIND | MS_REC)
    for path, size_mb in (copies or {}).items():
        os.makedirs(root + path, exist_ok=True)
        mount("tmpfs", root + path, "tmpfs", MS_NOSUID | MS_NODEV, f"size={size_mb}m,mode=755")
        shutil.copytree(path, root + path, symlinks=True, dirs_exist_ok=True)
    os.makedirs(root + "/.old", exist_ok=True)
    number = SYS_PIVOT_ROOT.get(os.uname().machine)
    if number is None:
        raise OSError(0, f"pivot_root: unknown system call number on {os.uname().machine}")
    check(libc.syscall(number, root.encode(), (root + "/.old").encode()), "pivot_root")
    os.chdir("/")
    check(libc.umount2(b"/.old", MNT_DETACH), "umount old root")
    os.rmdir("/.old")
    mount(None, "/", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


def shim_wait(child: int) -> int:
    """In a shim that forked ``child`` into a PID namespace of its own: leave SIGINT to the child (it
    reaches it through the process group), pass termination on, and return the child's exit status."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda signum, frame: os.kill(child, signal.SIGKILL))
    while True:
        try:
            _, status = os.waitpid(child, 0)
            break
        except InterruptedError:
            continue
    return os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1


@dataclass
class Confinement:
    """Where a confined check process may go: ``root``, an empty folder of the grader's to build
    its private root on (removed by whoever made it, after); ``writable``, the one folder it
    writes; ``readonly``, what else it reads besides the system folders and Python."""

    root: str
    writable: str
    readonly: list[str] = field(default_factory=list)
    file_mb: int = 256
    data_mb: int = 8192

    def to_json(self) -> str:
        return json.dumps(asdict(self))


def confine(spec: Confinement) -> None:
    """Shut this process in the private root ``spec`` describes, in a PID namespace of its own.

    Returns in a child (PID 1 of the new namespace, with a fresh ``/proc``, no capabilities, the
    limits set) that dies with this process; this process waits for it and exits with its status,
    so the caller's code after this call runs only in the child.  Raises ``OSError`` when the
    machine allows no namespaces; nothing has been changed then unless the error came late (the
    caller must then not go on)."""
    import resource

    if os.geteuid() != 0:
        enter_user_namespace()
    check(libc.unshare(CLONE_NEWNS | CLONE_NEWNET), "unshare mount, network")
    os.makedirs(spec.root, exist_ok=True)
    build_root(spec.root, readonly=python_paths() + list(spec.readonly), writable=[spec.writable])
    os.chdir("/")
    check(libc.unshare(CLONE_NEWPID), "unshare pid")
    child = os.fork()
    if child:
        os._exit(shim_wait(child))
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    check(libc.unshare(CLONE_NEWNS), "unshare mount")
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (spec.file_mb * 2**20,) * 2)
    resource.setrlimit(resource.RLIMIT_DATA, (spec.data_mb * 2**20,) * 2)
    drop_capabilities()


def main(argv: list[str]) -> None:
    """``python -m autograder.isolation SPEC MODULE ARGS...``: confine, then run ``MODULE``."""
    import runpy

    if len(argv) < 2:
        sys.exit("usage: python -m autograder.isolation SPEC MODULE [ARGS...] (started by the grader's checks)")
    spec = Confinement(**json.loads(argv[0]))
    try:
        confine(spec)
    except OSError as exc:
        sys.stderr.write(f"confined: the grader could not shut this check in a private root: {exc}\n")
        sys.exit(3)
    sys.argv = [argv[1], *argv[2:]]
    runpy.run_module(argv[1], run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
