"""Run a multi-worker TensorFlow program as local processes, and always stop them.

``MultiWorkerMirroredStrategy`` needs one process per worker, each told the
whole cluster and its own place in it through the ``TF_CONFIG`` environment
variable.  On one machine that means: pick free ports on 127.0.0.1, start
one Python process per worker with its own ``TF_CONFIG``, wait for all of
them with a deadline, and kill every one of them if any fails or the
deadline passes (a worker whose peer died waits for it forever, so one
crash would otherwise hang the caller).

A worker reports its result with :func:`report` (JSON, written to a file the
launcher chose), so results never depend on parsing TensorFlow's log output.
Workers only ever listen on 127.0.0.1.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from autograder.checks import clean_subprocess

RESULT_ENV = "AUTOGRADER_WORKER_RESULT"
HOST = "127.0.0.1"
_TAIL_CHARS = 1500


class WorkerError(RuntimeError):
    """A worker exited with an error or the cluster ran past its deadline."""


@dataclass
class WorkerResult:
    """What one worker process did."""

    index: int
    returncode: int | None
    result: Any              # what the worker passed to report(), or None
    stdout: str
    stderr: str


def free_ports(n: int, host: str = HOST) -> list[int]:
    """``n`` distinct TCP ports that were free on ``host`` a moment ago.

    All sockets are held open until every port is chosen, so the same port
    can't be handed out twice; another program may still take one before a
    worker binds it (the launcher then reports the worker's error)."""
    sockets = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((host, 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def cluster_spec(ports: Sequence[int], host: str = HOST) -> dict:
    """The ``cluster`` part of ``TF_CONFIG`` for workers on ``host``."""
    return {"worker": [f"{host}:{port}" for port in ports]}


def tf_config(cluster: dict, index: int, task_type: str = "worker") -> str:
    """The ``TF_CONFIG`` value for task ``index`` of ``cluster``."""
    if not 0 <= index < len(cluster.get(task_type, [])):
        raise ValueError(f"task index {index} is outside the cluster's {task_type} list {cluster.get(task_type)}")
    return json.dumps({"cluster": cluster, "task": {"type": task_type, "index": index}})


def report(result: Any) -> None:
    """Called inside a worker: hand ``result`` (JSON-serialisable) back to the launcher.

    Outside a launched worker (no ``AUTOGRADER_WORKER_RESULT``) it prints the
    JSON instead, so a worker script also runs on its own."""
    text = json.dumps(result)
    path = os.environ.get(RESULT_ENV)
    if path:
        Path(path).write_text(text)
    else:
        print(text)


def _tail(text: str) -> str:
    return text if len(text) <= _TAIL_CHARS else "..." + text[-_TAIL_CHARS:]


@dataclass
class LocalCluster:
    """Worker processes started by :func:`start_workers`.  Use it as a context
    manager (``with start_workers(...) as cluster:``) so they are stopped
    whatever happens."""

    procs: list[subprocess.Popen]
    workdir: Path
    cluster: dict
    _tmp: Any = field(repr=False, default=None)

    def _read(self, i: int, name: str) -> str:
        path = self.workdir / f"worker{i}.{name}"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        """Kill every worker still running (and anything it started), then clean up."""
        for proc in self.procs:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)  # each worker leads its own group
                except ProcessLookupError:
                    pass
        for proc in self.procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass

    def wait(self, timeout_s: float = 120.0) -> list[WorkerResult]:
        """Wait for every worker; stop them all and raise ``WorkerError`` as soon
        as one fails or when ``timeout_s`` has passed."""
        deadline = time.monotonic() + timeout_s
        while True:
            codes = [p.poll() for p in self.procs]
            failed = [i for i, c in enumerate(codes) if c not in (None, 0)]
            if failed:
                self.stop()
                i = failed[0]
                raise WorkerError(
                    f"worker {i} exited with code {codes[i]} (the others were stopped); "
                    f"its stderr ends with:\n{_tail(self._read(i, 'stderr'))}"
                )
            if all(c == 0 for c in codes):
                break
            if time.monotonic() > deadline:
                running = [i for i, c in enumerate(codes) if c is None]
                self.stop()
                raise WorkerError(
                    f"workers {running} were still running after {timeout_s:g} s and were killed; "
                    "a worker waits for all its peers, so check that every one of them started "
                    f"(worker {running[0]}'s stderr ends with:\n{_tail(self._read(running[0], 'stderr'))})"
                )
            time.sleep(0.05)
        results = []
        for i, proc in enumerate(self.procs):
            path = self.workdir / f"worker{i}.json"
            value = json.loads(path.read_text()) if path.exists() else None
            results.append(WorkerResult(i, proc.returncode, value, self._read(i, "stdout"), self._read(i, "stderr")))
        return results

    def __enter__(self) -> "LocalCluster":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()
        if self._tmp is not None:
            self._tmp.cleanup()


def start_workers(
    script: str | Path,
    n_workers: int = 2,
    *,
    args: Sequence[str] = (),
    env: dict[str, str] | None = None,
    workdir: str | Path | None = None,
) -> LocalCluster:
    """Start ``n_workers`` processes running the Python file ``script``, each
    with a ``TF_CONFIG`` naming all of them (ports on 127.0.0.1) and its index.

    Each starts clean: :func:`autograder.checks.clean_subprocess.clean_env`
    (``PYTHONPATH``, ``LD_PRELOAD`` and the like are not passed on) plus
    ``env``, in an isolated interpreter (``python -I``; the script's folder is
    first on ``sys.path``, as for ``python script.py``).  Output goes to
    ``worker<i>.stdout``/``.stderr`` in ``workdir`` (a temporary folder by
    default, removed when the ``with`` block ends)."""
    script = Path(script)
    if not script.is_file():
        raise FileNotFoundError(f"worker script {script} does not exist")
    if n_workers < 1:
        raise ValueError(f"n_workers must be at least 1, got {n_workers}")
    tmp = None
    if workdir is None:
        tmp = tempfile.TemporaryDirectory(prefix="workers-")
        workdir = tmp.name
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    cluster = cluster_spec(free_ports(n_workers))
    procs = []
    try:
        for i in range(n_workers):
            # A clean environment and an isolated interpreter (-u: unbuffered, so a
            # killed worker's last lines are in its files).
            worker_env = clean_subprocess.clean_env({**(env or {}), "TF_CONFIG": tf_config(cluster, i),
                                                     RESULT_ENV: str(workdir / f"worker{i}.json")})
            with open(workdir / f"worker{i}.stdout", "w") as out, open(workdir / f"worker{i}.stderr", "w") as err:
                procs.append(subprocess.Popen(
                    clean_subprocess.python_argv(str(script.resolve()), args, kind="path", options=["-u"]),
                    env=worker_env, stdout=out, stderr=err,
                    stdin=subprocess.DEVNULL, start_new_session=True,
                ))
    except BaseException:
        LocalCluster(procs, workdir, cluster, tmp).__exit__(None, None, None)
        raise
    return LocalCluster(procs, workdir, cluster, tmp)


def run_workers(
    script: str | Path,
    n_workers: int = 2,
    *,
    timeout_s: float = 120.0,
    args: Sequence[str] = (),
    env: dict[str, str] | None = None,
) -> list[WorkerResult]:
    """Start the workers, wait for all of them (at most ``timeout_s``), stop
    any left over and return one :class:`WorkerResult` per worker."""
    with start_workers(script, n_workers, args=args, env=env) as cluster:
        return cluster.wait(timeout_s)


# --- where the work of a tf.distribute computation ran ---------------------------------


def replica_spy(inner: Any, strategy: Any, seen: list) -> Any:
    """A Keras model that computes ``inner`` and appends to ``seen``, each time
    its Python code runs (an eager call, or a trace inside ``tf.function``),
    the replica of ``strategy`` that ran it: its ``replica_id_in_sync_group``,
    or ``None`` when it ran outside ``strategy.run`` of that very strategy
    (no strategy, another strategy, or the cross-replica context).  Its
    variables are ``inner``'s.  :func:`assert_ran_on_every_replica` reads
    ``seen``."""
    import tensorflow as tf

    class ReplicaSpy(tf.keras.Model):
        def __init__(self) -> None:
            super().__init__()
            self.inner = inner

        def call(self, x):
            context = tf.distribute.get_replica_context()
            under_given = (tf.distribute.has_strategy() and tf.distribute.get_strategy() is strategy
                           and context is not None)
            seen.append(tf.get_static_value(context.replica_id_in_sync_group) if under_given else None)
            return self.inner(x)

    return ReplicaSpy()


def assert_ran_on_every_replica(seen: Sequence[Any], strategy: Any, what: str) -> None:
    """Fail unless every call recorded by :func:`replica_spy` ran inside
    ``strategy.run`` and every replica of ``strategy`` ran the model."""
    outside = sum(1 for r in seen if r is None)
    if outside:
        raise AssertionError(
            f"{what} called the model {outside} times outside strategy.run of the strategy passed in; "
            "compute it with strategy.run(...) on the `strategy` argument, so that every replica does its share")
    replicas = sorted({int(r) for r in seen})
    if replicas != list(range(strategy.num_replicas_in_sync)):
        raise AssertionError(
            f"{what} ran the model on replicas {replicas or 'none'}, of {strategy.num_replicas_in_sync}: "
            "run it with strategy.run on the distributed dataset")
