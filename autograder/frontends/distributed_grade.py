"""``grade SUBMISSIONS --out OUT --scheduler ADDRESS``: the batch graded on a Dask cluster.

Each submission is one task on a Dask ``distributed`` cluster; inside the worker
it goes through :func:`autograder.frontends.pipeline.grade_notebook`, the same
sandbox and pipeline as a local ``grade``.  Everything the worker needs travels
as plain data, so workers need only ``pip install`` of this package and no
shared filesystem:

- the assignment: its source notebook's bytes and its data files' bytes, sent
  once per assignment as a task of its own (:func:`_assignment_data`) that every
  grading task depends on; a worker unpacks it into a temporary folder once per
  process;
- the submission: its notebook's name and bytes (the pipeline reads nothing else
  from the submission folder), or the reason there is none.

The worker grades in a temporary folder and returns ``Results.to_dict()``; this
side writes every file through :meth:`autograder.frontends.grade.Batch.record`, the
same code a local ``grade`` writes with, as each task finishes
(``distributed.as_completed``), so ``OUT`` is resumable the same way.  A worker
that dies mid-task loses nothing: no file is written until a task completes, and
the scheduler runs the task again on another worker, up to its
``distributed.scheduler.allowed-failures`` times (default 3); the assignment
task is recomputed from its spec if the worker holding it dies (data sent with
``scatter`` would be lost instead).
"""
from __future__ import annotations

import asyncio
import atexit
import hashlib
import shutil
import sys
import tempfile
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path

from distributed import Client, as_completed
from distributed.comm import connect

from autograder.errors import UsageError
from autograder.frontends import grade as grading, pipeline
from autograder.sandbox import host as sandbox
from autograder.results.exporters.base import Row
from autograder.results.results import Results
from autograder.submission.assignment import Assignment, load_assignment
from autograder.submission.folders import Submission
from autograder.submission.restore import MAX_NOTEBOOK_BYTES

CONNECT_TIMEOUT_S = 10.0


# --- the client side ------------------------------------------------------------------


def grade_on_cluster(scheduler: str, submissions: Path | str, out: Path | str, *,
                     connect_timeout_s: float = CONNECT_TIMEOUT_S, **options) -> list[Row]:
    """:func:`autograder.frontends.grade.grade` with the batch graded on the Dask cluster
    whose scheduler is at ``scheduler`` (``tcp://HOST:8786``); ``options`` are grade's
    (but not ``workers``: the cluster's threads say how many run at once)."""
    client = connect_client(scheduler, connect_timeout_s)
    try:
        stream = options.get("progress_stream") or sys.stderr
        workers = client.scheduler_info().get("workers", {})
        threads = sum(w.get("nthreads", 0) for w in workers.values())
        print(f"grading on {scheduler}: {len(workers)} worker(s), {threads} thread(s)"
              + ("; waiting for workers to join" if not workers else ""), file=stream, flush=True)
        return grading.grade(submissions, out, run=lambda batch: run_on_cluster(client, batch), **options)
    finally:
        client.close()


def connect_client(address: str, timeout_s: float = CONNECT_TIMEOUT_S) -> Client:
    """A client of the scheduler at ``address``, or a one-line :class:`UsageError`.

    The scheduler is reached first with a bare connection: a ``Client`` that fails
    to connect prints a traceback when it is garbage-collected."""
    async def probe() -> None:
        comm = await connect(address, timeout=timeout_s)
        await comm.close()

    try:
        with ThreadPoolExecutor(1) as thread:  # its own event loop, even when called from a notebook's
            thread.submit(asyncio.run, probe()).result()
        return Client(address, timeout=timeout_s, set_as_default=False)
    except (OSError, ValueError, TimeoutError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else exc.__class__.__name__
        raise UsageError(f"--scheduler {address}: cannot reach a Dask scheduler ({reason}); start one "
                         "(`dask scheduler`) and give the address it prints, e.g. tcp://HOST:8786") from None


def run_on_cluster(client: Client, batch: grading.Batch) -> None:
    """Grade ``batch.todo`` on ``client``'s cluster, one task per submission, and record
    each result as it arrives.  A task that fails (its workers kept dying: ``KilledWorker``)
    writes nothing; after the rest are recorded that is a :class:`UsageError` naming them,
    and running the command again grades just those."""
    assignments = {name: client.submit(_assignment_data, assignment_payload(a), pure=False,
                                       key=f"assignment-{name}-{uuid.uuid4().hex[:8]}")
                   for name, a in batch.assignments.items()}
    hidden = [str(p) for p in batch.hidden]
    futures = {}
    for sub in batch.todo:
        payload = submission_payload(sub)
        if payload is None:  # unreadable or over the size limit: the pipeline says so without running it
            batch.record(sub, batch.grade_one(sub))
            continue
        limits = asdict(batch.limits_for(sub.assignment))
        future = client.submit(grade_on_worker, payload, assignments[sub.assignment], limits, batch.isolate,
                               hidden, pure=False, key=f"grade-{sub.student}-{sub.assignment}-{uuid.uuid4().hex[:8]}")
        futures[future] = sub
    failed = []
    try:
        for future in as_completed(futures, loop=client.loop):
            sub = futures[future]
            try:
                data = future.result()
            except Exception as exc:  # the task's own failure, not the submission's: grade it again later
                reason = str(exc).strip().splitlines()[0] if str(exc).strip() else "no message"
                failed.append(f"{sub.student}/{sub.assignment} ({exc.__class__.__name__}: {reason})")
                continue
            batch.record(sub, Results.from_dict(data))
    except BaseException:
        client.cancel(list(futures) + list(assignments.values()))  # Ctrl-C: what did not finish is not a grade
        raise
    if failed:
        raise UsageError(f"{len(failed)} submission(s) not graded on the cluster: {'; '.join(failed)}; "
                         "run the same command again to grade them")


def assignment_payload(assignment: Assignment) -> dict:
    """The assignment as plain data: its source notebook and data files (folders as
    their files), with a digest that names the unpacked copy on a worker."""
    files: dict[str, bytes] = {}
    base = assignment.source.parent
    for data in assignment.data_files:
        inside = sorted(p for p in data.rglob("*") if p.is_file()) if data.is_dir() else [data]
        for path in inside:
            files[path.relative_to(base).as_posix()] = path.read_bytes()
    source = assignment.source.read_bytes()
    digest = hashlib.sha256(source)
    for name, content in sorted(files.items()):
        digest.update(name.encode() + b"\0" + hashlib.sha256(content).digest())
    return {"name": assignment.name, "source": source, "files": files, "digest": digest.hexdigest()}


def submission_payload(sub: Submission) -> dict | None:
    """The submission as plain data, or None when its notebook cannot be sent (unreadable,
    or over the size limit the sandbox refuses anyway)."""
    payload = {"notebook_name": None, "notebook": None, "problem": sub.problem}
    if sub.notebook is None:
        return payload
    try:
        if sub.notebook.stat().st_size > MAX_NOTEBOOK_BYTES:
            return None
        payload.update(notebook_name=sub.notebook.name, notebook=sub.notebook.read_bytes())
    except OSError:
        return None
    return payload


# --- the worker side ------------------------------------------------------------------


def _assignment_data(payload: dict) -> dict:
    """The assignment task: its result is the payload, held by the scheduler as the task's spec."""
    return payload


_UNPACKED: dict[str, Path] = {}
_UNPACK_LOCK = threading.Lock()


def _unpacked(payload: dict) -> Path:
    """The assignment's source notebook, unpacked once per worker process (its folder
    holds the data files beside it, as in the instructor's source folder)."""
    with _UNPACK_LOCK:
        if payload["digest"] not in _UNPACKED:
            if not _UNPACKED:
                sandbox.sweep_stale()  # a worker killed with -9 before this one could not clean up
            root = Path(tempfile.mkdtemp(prefix="autograder-assignment-"))
            atexit.register(shutil.rmtree, root, True)
            folder = root / payload["name"]
            for name, content in payload["files"].items():
                target = folder / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(content)
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{payload['name']}.ipynb").write_bytes(payload["source"])
            _UNPACKED[payload["digest"]] = folder / f"{payload['name']}.ipynb"
        return _UNPACKED[payload["digest"]]


def grade_on_worker(submission: dict, assignment: dict, limits: dict, isolate: bool,
                    hidden: list[str]) -> dict:
    """One task: grade the submission against the assignment through the pipeline, in
    a temporary folder, and return ``Results.to_dict()``.  ``hidden``: the client's
    folders (source, submissions, out), hidden too in case this worker shares its
    filesystem; the unpacked assignment and the submission's folder are hidden as well."""
    source = _unpacked(assignment)
    loaded = load_assignment(source)
    with tempfile.TemporaryDirectory(prefix="autograder-submission-") as tmp:
        notebook = None
        if submission["notebook"] is not None:
            notebook = Path(tmp) / submission["notebook_name"]
            notebook.write_bytes(submission["notebook"])
        results = pipeline.grade_notebook(notebook, loaded, limits=sandbox.Limits(**limits),
                                          hidden_dirs=[*map(Path, hidden), source.parent.parent, Path(tmp)],
                                          isolate=isolate, problem=submission["problem"])
    return results.to_dict()
