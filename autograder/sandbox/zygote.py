"""The zygote of :mod:`autograder.sandbox.warm_start`: ``python -m
autograder.sandbox.zygote FD tf|plain`` imports what every worker and kernel
would (:func:`_preload`), then forks a sandbox worker for each request on the socket
FD until the grader closes it (or dies).

A request is the worker's folder and environment, with its stdin, stdout and
stderr as descriptors; the answer is the worker's pid and a pidfd.  No
submission's data reaches this process.
"""
from __future__ import annotations

import sys

from autograder.forking import rehome, runtime_started  # noqa: F401  (their names here, for the tests)
from autograder.forking import become_child, run_child, run_zygote


def _preload(with_tf: bool) -> None:
    """What every worker and kernel would import: the worker's libraries, ipykernel, the checks
    the bootstrap snapshots (TensorFlow among them when ``with_tf``)."""
    import importlib

    import IPython  # noqa: F401
    import IPython.extensions.storemagic  # noqa: F401  (a kernel's start imports it, the debugger, sqlite3)
    import ipykernel.debugger  # noqa: F401
    import ipykernel.ipkernel  # noqa: F401
    import ipykernel.kernelapp  # noqa: F401
    import jupyter_client.manager  # noqa: F401
    import nbclient  # noqa: F401
    import numpy  # noqa: F401
    import psutil  # noqa: F401
    import sqlite3  # noqa: F401  (IPython's history)

    from autograder.sandbox import integrity, worker as sandbox_worker  # noqa: F401

    if with_tf:
        import tensorflow  # noqa: F401
    for name in integrity.STDLIB_USED:  # the bootstrap's snapshot imports them (statistics: 0.3 s a kernel)
        importlib.import_module(name)
    for name in integrity.check_module_names(heavy=with_tf):
        try:
            importlib.import_module(name)
        except Exception:  # the bootstrap skips what cannot import here, too
            continue


def _become_worker(request: bytes, fds: list[int]) -> None:
    """In the forked child: the worker's three pipes, folder and environment; run the worker."""
    def body() -> int:
        from autograder.sandbox import kernel as sandbox_kernel

        become_child(request, fds, "ag-worker", sandbox_kernel.PRELOADED_ENV)
        from autograder.sandbox import worker as sandbox_worker

        return sandbox_worker.worker_main(warm=True)

    run_child(body)


def zygote_main(argv: list[str]) -> int:
    """Preload, then fork a worker for each request on the socket ``argv[0]`` until it closes."""
    from autograder.sandbox import kernel as sandbox_kernel

    return run_zygote(argv, "ag-zygote", lambda: _preload(argv[1:2] == ["tf"]), _become_worker,
                      sandbox_kernel.PRELOADED_ENV)


if __name__ == "__main__":
    raise SystemExit(zygote_main(sys.argv[1:]))
