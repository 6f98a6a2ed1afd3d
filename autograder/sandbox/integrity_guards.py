"""The audit hook the grader's first kernel cell installs (:func:`install_guards`):
no reading the hidden-test and solution folders, no writing outside the
learner's folder, no network.  A second line of defence behind the sandbox's
mount and network namespaces, and the only one where those are unavailable.

``autograder.sandbox.integrity`` re-exports every name here.
"""
from __future__ import annotations

import ipaddress
import os
import sys
from typing import Any, Callable


def _is_local(address: Any) -> bool:
    if isinstance(address, (str, bytes)):  # AF_UNIX path
        return True
    host = address[0] if isinstance(address, tuple) and address else ""
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
CHANGE_EVENTS = ("os.remove", "os.rename", "os.mkdir", "os.rmdir", "os.chmod", "os.chown", "os.truncate",
                 "os.symlink", "os.link", "os.utime", "shutil.rmtree", "shutil.move")


def _prefixes(paths) -> tuple[str, ...]:
    return tuple(os.path.realpath(os.fsdecode(d)).rstrip(os.sep) + os.sep for d in paths if d)


def install_guards(hidden_dirs: list[str], *, allow: list[str] = (), writable: list[str] = (),
                   block_network: bool = True) -> Callable[[], int]:
    """From now on in this process refuse to read ``hidden_dirs`` (except what
    lies under ``allow``: the Python installation), to write or change files
    outside ``writable`` (when given) and to reach the network.  Returns a
    function that says how many trace or profile functions were set since."""
    traces_set = [0]
    hidden, allowed = _prefixes(hidden_dirs), _prefixes(allow) or ("\0",)
    may_write = _prefixes([*writable, "/dev"]) if writable else ()

    def real(path: Any) -> str | None:
        if isinstance(path, (str, bytes, os.PathLike)):
            return os.path.realpath(os.fsdecode(path)) + os.sep
        return None  # a file descriptor: it was checked when it was opened

    def hook(event: str, args: tuple) -> None:
        if event in ("sys.settrace", "sys.setprofile"):  # the events carry no arguments
            traces_set[0] += 1
            return
        if event in ("open", "os.listdir", "os.scandir"):
            path = real(args[0]) if args else None
            if path is None:
                return
            if hidden and path.startswith(hidden) and not path.startswith(allowed):
                raise PermissionError(f"the grader does not let notebooks read {os.fsdecode(args[0])}")
            if event == "open" and may_write and not path.startswith(may_write):
                mode, flags = (args[1] if len(args) > 1 else None), (args[2] if len(args) > 2 else 0)
                if (isinstance(mode, str) and any(c in mode for c in "wax+")) or (flags or 0) & WRITE_FLAGS:
                    raise PermissionError(f"notebooks may only write in their own folder, not {os.fsdecode(args[0])}")
        elif may_write and event in CHANGE_EVENTS and args:
            for target in args[:2]:
                path = real(target)
                if path is not None and not path.startswith(may_write):
                    raise PermissionError(f"notebooks may only change files in their own folder, not {target}")
        elif block_network and event in ("socket.connect", "socket.sendto") and len(args) >= 2:
            if not _is_local(args[1]):
                raise PermissionError(f"network access is disabled while grading (tried {args[1]!r})")
        elif block_network and event == "socket.getaddrinfo" and args and not _is_local((args[0],)):
            raise PermissionError(f"network access is disabled while grading (tried to look up {args[0]!r})")

    sys.addaudithook(hook)
    return lambda: traces_set[0]
