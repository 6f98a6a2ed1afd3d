"""The zygote of :mod:`autograder.grading.warm_start`: ``python -m
autograder.grading.warm_zygote FD tf|plain`` imports what every worker and kernel
would (:func:`_preload`), then forks a sandbox worker for each request on the socket
FD until the grader closes it (or dies).

A request is the worker's folder and environment, with its stdin, stdout and
stderr as descriptors; the answer is the worker's pid and a pidfd.  No
submission's data reaches this process.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import sys
import types

from autograder.grading.sandbox_isolation import close_fds_except
from autograder.grading.sandbox_kernel import set_process_name


def _preload(with_tf: bool) -> None:
    """What every worker and kernel would import: the worker's libraries, ipykernel, the checks
    the bootstrap snapshots (TensorFlow among them when ``with_tf``)."""
    import importlib

    import IPython  # noqa: F401
    import ipykernel.ipkernel  # noqa: F401
    import ipykernel.kernelapp  # noqa: F401
    import jupyter_client.manager  # noqa: F401
    import nbclient  # noqa: F401
    import numpy  # noqa: F401
    import psutil  # noqa: F401

    from autograder.grading import integrity, sandbox_worker  # noqa: F401

    if with_tf:
        import tensorflow  # noqa: F401
    for name in integrity.check_module_names(heavy=with_tf):
        try:
            importlib.import_module(name)
        except Exception:  # the bootstrap skips what cannot import here, too
            continue


def runtime_started() -> bool:
    """Whether TensorFlow's runtime (its eager context: devices, thread pools, a GPU's CUDA
    context) has started in this process.  A zygote must fork before it does: each kernel
    starts its own, as a fresh interpreter's would."""
    if "tensorflow" not in sys.modules:
        return False
    from tensorflow.python.eager import context

    made = getattr(context, "_context", None)  # looked at, not made: context.context() would make one
    return made is not None and getattr(made, "_context_handle", None) is not None


def _rehomed(value, old: str, new: str):
    """``value`` with a leading ``old`` replaced by ``new`` (strings only), else ``value``."""
    if isinstance(value, str) and (value == old or value.startswith(old + "/")):
        return new + value[len(old):]
    return value


def _closure_cells(function: types.FunctionType) -> list:
    """The closure cells of ``function`` and of what it wraps (a cache's wrapper keeps the value)."""
    cells = list(function.__closure__ or ())
    inner = getattr(function, "__wrapped__", None)
    if isinstance(inner, types.FunctionType):
        cells += inner.__closure__ or ()
    return cells


def rehome(old: str, new: str) -> int:
    """Point what the imports remembered of the zygote's folder at this submission's.

    Importing TensorFlow reads ``HOME``, ``TMPDIR`` and ``MPLCONFIGDIR`` and keeps what it
    found: ``tempfile.tempdir``, Keras's and matplotlib's folders (some in closures), the user
    site.  The zygote's folders mirror a submission's (``HOME=F``, ``TMPDIR=F/.tmp``...), so
    each such path becomes the submission's by its prefix: module globals that are strings,
    strings in a module's lists, tuples and dicts, and strings in module functions' closures.
    Returns how many were changed (``tests/grading/test_warm_start.py`` scans a warm kernel
    for any left)."""
    changed = 0
    for module in list(sys.modules.values()):
        try:
            names = vars(module)
        except TypeError:
            continue
        for name, value in list(names.items()):
            if isinstance(value, str):
                if (moved := _rehomed(value, old, new)) is not value:
                    names[name] = moved
                    changed += 1
            elif isinstance(value, list):
                for i, item in enumerate(value):
                    if (moved := _rehomed(item, old, new)) is not item:
                        value[i] = moved
                        changed += 1
            elif type(value) is tuple and any(_rehomed(v, old, new) is not v for v in value):
                names[name] = tuple(_rehomed(v, old, new) for v in value)
                changed += 1
            elif isinstance(value, dict):
                for key, item in list(value.items()):
                    if (moved := _rehomed(item, old, new)) is not item:
                        dict.__setitem__(value, key, moved)  # as stored: no validating __setitem__
                        changed += 1
            elif isinstance(value, types.FunctionType):
                for cell in _closure_cells(value):
                    try:
                        item = cell.cell_contents
                    except ValueError:  # an empty cell
                        continue
                    if (moved := _rehomed(item, old, new)) is not item:
                        cell.cell_contents = moved
                        changed += 1
    return changed


def _become_worker(request: bytes, fds: list[int]) -> None:
    """In the forked child: take the three pipes as 0, 1, 2, nothing else, the job's folder
    and environment; run the worker; never return."""
    code = 1
    try:
        os.setsid()
        set_process_name("ag-worker")
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for target, fd in zip((0, 1, 2), fds):
            os.dup2(fd, target)
        close_fds_except({0, 1, 2})
        launch = json.loads(request)
        zygote_home = os.environ.get("HOME", "")
        os.environ.clear()
        os.environ.update(launch["env"])
        from autograder.grading.sandbox_kernel import PRELOADED_ENV

        for name, value in PRELOADED_ENV.items():
            os.environ.setdefault(name, value)
        os.chdir(launch["cwd"])
        if zygote_home and launch["env"].get("HOME"):
            rehome(zygote_home, launch["env"]["HOME"])
        sys.stdin = open(0, "r", closefd=False)
        sys.stdout = open(1, "w", buffering=1, closefd=False)
        sys.stderr = open(2, "w", buffering=1, closefd=False)
        from autograder.grading import sandbox_worker

        code = sandbox_worker.worker_main(warm=True)
    except BaseException:  # noqa: B036  (a worker must end here, whatever happened)
        import traceback

        traceback.print_exc()
    finally:
        try:
            sys.stderr.flush()
        finally:
            os._exit(code)


def zygote_main(argv: list[str]) -> int:
    """Preload, then fork a worker for each request on the socket ``argv[0]`` until it closes."""
    sock = socket.socket(fileno=int(argv[0]))
    if sys.path and sys.path[0] in ("", os.getcwd()):
        del sys.path[0]  # the zygote's own folder (/), as ipykernel_launcher drops the kernel's
    set_process_name("ag-zygote")
    before = dict(os.environ)
    _preload(argv[1:2] == ["tf"])
    from autograder.grading import sandbox_kernel

    sandbox_kernel.PRELOADED_ENV.update({k: v for k, v in os.environ.items() if before.get(k) != v})
    if runtime_started():
        print("the zygote's imports started TensorFlow's runtime; a fork would share it (a GPU's "
              "context cannot be): refusing to serve", file=sys.stderr, flush=True)
        return 1
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # workers are reaped as they end
    sock.send(b"ready")
    while True:
        try:
            request, fds, _, _ = socket.recv_fds(sock, 1 << 22, 3)
        except OSError:
            return 0
        if not request:
            return 0
        try:
            pid = os.fork()
        except OSError as exc:
            for fd in fds:
                os.close(fd)
            sock.send(json.dumps({"error": str(exc)}).encode())
            continue
        if pid == 0:
            sock.detach()
            _become_worker(request, fds)
        for fd in fds:
            os.close(fd)
        try:
            pidfd = os.pidfd_open(pid)
        except OSError as exc:
            sock.send(json.dumps({"error": f"pidfd_open: {exc}"}).encode())
            continue
        socket.send_fds(sock, [json.dumps({"pid": pid}).encode()], [pidfd])
        os.close(pidfd)
    return 0


if __name__ == "__main__":
    raise SystemExit(zygote_main(sys.argv[1:]))
