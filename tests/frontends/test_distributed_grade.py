"""grade --scheduler: a real Dask scheduler and worker processes on this machine
(``python -m distributed.cli.dask_scheduler`` / ``dask_worker``, bound to 127.0.0.1),
results identical to a local ``grade`` of the same batch, a worker killed mid-task,
a task that fails (nothing written, named, graded on the next run), an unreachable
scheduler, and the cluster recipes of book/instructors/cluster.md.

Compared field by field: every results.json, except ``execution_time`` and ``startup_s``
(seconds measured in the run), and every feedback page and grades.csv byte for byte."""
from __future__ import annotations

import ast
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest

from tests.conftest import ROOT, SOLUTIONS, is_sandbox_kernel
from tests.files.hostile.catalogue import TINY_SOURCE, answers

# Nothing here grades a timed part (the tiny assignment, exercise 1).
EXERCISE = "01_op_logs"  # a real exercise: TensorFlow, placement logs, no timed part (its messages are exact)
WRONG_DOUBLE = "def double(x):\n    return x\n"
RELEASED = "# YOUR CODE HERE\nraise NotImplementedError()\n"
SLEEPY_DOUBLE = "import time\ntime.sleep(12)\ndef double(x):\n    return 2 * x\n"


def _cli(*args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "autograder", *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout)


def _wait_for(what: str, ready, timeout: float = 90.0, every: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = ready()
        if value:
            return value
        time.sleep(every)
    pytest.fail(f"timed out after {timeout:.0f}s waiting for {what}")


@contextmanager
def dask_cluster(tmp: Path, workers: int = 2):
    """A scheduler and ``workers`` one-thread worker processes (no nanny: a killed
    worker stays dead) on 127.0.0.1; yields (address, client, worker Popen list)."""
    from distributed import Client

    env = {**os.environ, "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "2"}
    tmp.mkdir()
    scheduler_file = tmp / "scheduler.json"
    logs = [open(tmp / "scheduler.log", "wb")]
    procs = [subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                               "--port", "0", "--no-dashboard", "--scheduler-file", scheduler_file],
                              cwd=tmp, env=env, stdout=subprocess.DEVNULL, stderr=logs[0])]
    client = None
    try:
        _wait_for("the scheduler file", scheduler_file.exists)
        address = json.loads(scheduler_file.read_text())["address"]
        for n in range(workers):
            (tmp / f"w{n}").mkdir()
            logs.append(open(tmp / f"w{n}.log", "wb"))
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "distributed.cli.dask_worker", address, "--nthreads", "1", "--no-nanny",
                 "--no-dashboard", "--host", "127.0.0.1", "--name", f"w{n}", "--local-directory", tmp / f"w{n}"],
                cwd=tmp / f"w{n}", env=env, stdout=subprocess.DEVNULL, stderr=logs[-1]))
        client = Client(address, timeout=30, set_as_default=False)
        client.wait_for_workers(workers, timeout=120)
        yield address, client, procs[1:]
    finally:
        if client is not None:
            client.close()
        # The workers first, while their scheduler still answers: a worker stopped after it
        # could hang in its close (distributed 2026.8: 30-60 s in 4 of 6 teardowns timed, measured).
        for group in (procs[1:], procs[:1]):
            for proc in group:
                if proc.poll() is None:
                    proc.terminate()
            for proc in group:
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=30)
        for log in logs:
            log.close()


def _submit(root: Path, student: str, assignment: str, data: bytes | None) -> None:
    folder = root / student / assignment
    folder.mkdir(parents=True)
    if data is not None:
        (folder / f"{assignment}.ipynb").write_bytes(data)


def _source(tmp: Path) -> Path:
    source = tmp / "source"
    shutil.copytree(TINY_SOURCE / "tiny", source / "tiny")
    shutil.copytree(SOLUTIONS / EXERCISE, source / EXERCISE)
    return source


def _comparable(out: Path) -> dict[str, dict]:
    """Every results.json under ``out``, less the seconds it took."""
    found = {}
    for path in sorted(out.rglob("results.json")):
        data = json.loads(path.read_text())
        data.pop("execution_time")
        data["extra_data"].pop("startup_s", None)  # seconds too: the grader's start-up, reported apart
        found[path.relative_to(out).as_posix()] = data
    return found


def _pages(out: Path) -> dict[str, str]:
    return {p.relative_to(out).as_posix(): p.read_text() for p in sorted(out.rglob("*.html"))}


@pytest.mark.slow
def test_a_cluster_grades_a_mixed_batch_exactly_as_a_local_grade(tmp_path):
    subs, source = tmp_path / "submitted", _source(tmp_path)
    _submit(subs, "alice", "tiny", answers()(None))
    _submit(subs, "bob", "tiny", answers(double=WRONG_DOUBLE)(None))
    _submit(subs, "carol", "tiny", answers(double=RELEASED, word=RELEASED)(None))
    _submit(subs, "dave", "tiny", None)  # nothing submitted
    _submit(subs, "erin", EXERCISE, (SOLUTIONS / EXERCISE / f"{EXERCISE}.ipynb").read_bytes())

    started = time.perf_counter()
    local = _cli("grade", subs, "--out", tmp_path / "local", "--source", source, "--workers", "2")
    local_s = time.perf_counter() - started
    assert local.returncode == 0, local.stderr

    with dask_cluster(tmp_path / "cluster") as (address, client, _):
        started = time.perf_counter()
        remote = _cli("grade", subs, "--out", tmp_path / "remote", "--source", source, "--scheduler", address)
        remote_s = time.perf_counter() - started
        assert remote.returncode == 0, remote.stderr
        # a second run finds everything graded and sends nothing
        again = _cli("grade", subs, "--out", tmp_path / "remote", "--source", source, "--scheduler", address)
        assert again.returncode == 0 and "5 already graded" in again.stderr, again.stderr
    print(f"\nlocal grade --workers 2: {local_s:.1f}s; grade --scheduler (2 one-thread workers): {remote_s:.1f}s "
          f"(5 submissions, {os.cpu_count()} CPU cores)")

    assert f"grading on {address}: 2 worker(s), 2 thread(s)" in remote.stderr
    assert "5/5" in remote.stderr and "grades.csv: 5 submission(s)" in remote.stdout
    expected, got = _comparable(tmp_path / "local"), _comparable(tmp_path / "remote")
    assert len(expected) == 5 and got == expected
    assert _pages(tmp_path / "remote") == _pages(tmp_path / "local")
    assert (tmp_path / "remote" / "grades.csv").read_text() == (tmp_path / "local" / "grades.csv").read_text()
    # and the grades are the right ones, not just equal
    scores = {k.split("/")[0]: (v["score"], v["max_score"]) for k, v in got.items()}
    assert scores == {"alice": (5, 5), "bob": (2, 5), "carol": (0, 5), "dave": (0, 5), "erin": (10, 10)}
    assert "no notebook in the submission" in got["dave/tiny/results.json"]["output"]
    assert "hidden-marker" not in json.dumps(got)


def _kernels_under(pid: int) -> list[psutil.Process]:
    try:
        tree = psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []
    found = []
    for proc in tree:
        try:
            if is_sandbox_kernel(proc):
                found.append(proc)
        except psutil.Error:
            continue
    return found


@pytest.mark.slow
def test_a_worker_killed_mid_task_loses_nothing(tmp_path):
    subs, source = tmp_path / "submitted", _source(tmp_path)
    _submit(subs, "sleepy", "tiny", answers(double=SLEEPY_DOUBLE)(None))
    _submit(subs, "alice", "tiny", answers()(None))
    _submit(subs, "bob", "tiny", answers(double=WRONG_DOUBLE)(None))
    out = tmp_path / "out"
    with dask_cluster(tmp_path / "cluster") as (address, client, workers):
        pids = client.run(os.getpid)  # worker address -> its process id
        assert sorted(pids.values()) == sorted(p.pid for p in workers)
        grader = subprocess.Popen([sys.executable, "-m", "autograder", "grade", subs, "--out", out,
                                   "--source", source, "--scheduler", address],
                                  cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            def sleepy_running():
                for worker, keys in client.processing().items():
                    if any("grade-sleepy-" in str(k) for k in keys) and _kernels_under(pids[worker]):
                        return worker
                return None

            holder = _wait_for("the sleepy submission's kernel on a worker", sleepy_running, timeout=120)
            kernels = _kernels_under(pids[holder])
            assert not (out / "sleepy" / "tiny" / "results.json").exists()
            os.kill(pids[holder], signal.SIGKILL)  # mid-task: its answer cell is sleeping
            stdout, stderr = grader.communicate(timeout=300)
        finally:
            if grader.poll() is None:
                grader.kill()
                grader.wait(timeout=30)
        assert grader.returncode == 0, stderr
        survivors = list(client.scheduler_info()["workers"])
        assert holder not in survivors and len(survivors) == 1  # graded again by the other worker
    # the dead worker's sandbox went with it (its stdin closed), not left sleeping
    gone, alive = psutil.wait_procs(kernels, timeout=60)
    assert not alive, [p.cmdline() for p in alive]
    results = {p.parent.parent.name: json.loads(p.read_text()) for p in out.rglob("results.json")}
    assert {s: r["score"] for s, r in results.items()} == {"sleepy": 5, "alice": 5, "bob": 2}
    assert "grades.csv: 3 submission(s)" in stdout and "3/3" in stderr


def test_an_unreachable_scheduler_is_a_one_line_usage_error(tmp_path):
    subs = tmp_path / "submitted"
    _submit(subs, "alice", "tiny", answers()(None))
    started = time.monotonic()
    proc = _cli("grade", subs, "--out", tmp_path / "out", "--source", TINY_SOURCE, "--scheduler", "tcp://127.0.0.1:9",
                timeout=120)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --scheduler tcp://127.0.0.1:9: cannot reach"), proc.stderr
    assert time.monotonic() - started < 60
    assert not (tmp_path / "out").exists()  # nothing written
    bad = _cli("grade", subs, "--out", tmp_path / "out", "--source", TINY_SOURCE, "--scheduler", "no-port-here")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1, bad.stderr
    both = _cli("grade", subs, "--out", tmp_path / "out", "--scheduler", "tcp://127.0.0.1:9", "--workers", "2")
    assert both.returncode == 2 and "--workers" in both.stderr


def test_a_task_that_fails_writes_nothing_is_named_and_is_graded_on_the_next_run(tmp_path, monkeypatch):
    """A task's own failure (KilledWorker after too many dead workers, a worker's full
    disk) is not a grade: the rest are written, the one-line error names it, a re-run
    grades only it.  In-process workers here: the failure is injected into the task."""
    from distributed import LocalCluster

    from autograder.errors import UsageError
    from autograder.frontends import distributed_grade

    subs = tmp_path / "submitted"
    _submit(subs, "bob", "tiny", b"{}")  # a notebook (not a valid one: no sandbox needed to grade it)
    _submit(subs, "dave", "tiny", None)
    real = distributed_grade.grade_on_worker

    def broken_for_notebooks(submission, *args):
        if submission["notebook"] is not None:
            raise RuntimeError("No space left on device\n(second line)")
        return real(submission, *args)

    out, stream = tmp_path / "out", io.StringIO()
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, protocol="tcp", host="127.0.0.1",
                      dashboard_address=None) as cluster:
        monkeypatch.setattr(distributed_grade, "grade_on_worker", broken_for_notebooks)
        with pytest.raises(UsageError) as failed:
            distributed_grade.grade_on_cluster(cluster.scheduler_address, subs, out, source=TINY_SOURCE,
                                               progress_stream=stream)
        assert str(failed.value).startswith("1 submission(s) not graded on the cluster: "
                                            "bob/tiny (RuntimeError: No space left on device)")
        assert "\n" not in str(failed.value)
        assert not (out / "bob").exists() and (out / "dave" / "tiny" / "results.json").is_file()
        assert (out / "grades.csv").read_text().count("\n") == 2  # header + dave
        monkeypatch.setattr(distributed_grade, "grade_on_worker", real)
        stream = io.StringIO()
        rows = distributed_grade.grade_on_cluster(cluster.scheduler_address, subs, out, source=TINY_SOURCE,
                                                  progress_stream=stream)
    assert "1/1 (1 already graded" in stream.getvalue()
    bob = {r.student: r.results for r in rows}["bob"]
    assert bob.score == 0 and "not a Jupyter notebook" in bob.output, bob.output


# --- the book's cluster recipes -------------------------------------------------------------

# The constructor arguments each recipe may use, as documented by dask-jobqueue
# (dask_jobqueue/core.py job_parameters and cluster_parameters, slurm.py SLURMJob)
# and dask-kubernetes (dask_kubernetes/operator/kubecluster/kubecluster.py).
KNOWN = {
    "SLURMCluster": {"queue", "account", "walltime", "job_cpu", "job_mem", "job_extra_directives", "cores", "memory",
                     "processes", "nanny", "interface", "death_timeout", "local_directory", "worker_extra_args",
                     "job_script_prologue", "job_directives_skip", "log_directory", "shebang", "python", "job_name",
                     "config_name", "name", "n_workers", "silence_logs", "asynchronous", "security",
                     "scheduler_options", "scheduler_cls", "shared_temp_directory"},
    "KubeCluster": {"name", "namespace", "image", "n_workers", "resources", "env", "worker_command",
                    "port_forward_cluster_ip", "create_mode", "shutdown_on_close", "idle_timeout", "resource_timeout",
                    "scheduler_service_type", "custom_cluster_spec", "scheduler_forward_port", "jupyter"},
    "add_worker_group": {"name", "n_workers", "image", "resources", "worker_command", "env", "custom_spec"},
    "scale": {"n", "jobs", "memory", "cores", "worker_group"},
}


CLUSTER_PAGE = ROOT / "book" / "instructors" / "cluster.md"


def _recipes() -> dict[str, str]:
    blocks = re.findall(r"```python\n(.*?)```", CLUSTER_PAGE.read_text(encoding="utf-8"), re.DOTALL)
    return {("slurm" if "SLURMCluster" in b else "kubernetes"): b for b in blocks}


def test_the_cluster_recipes_parse_and_use_only_documented_arguments():
    recipes = _recipes()
    assert set(recipes) == {"slurm", "kubernetes"}
    page = " ".join(CLUSTER_PAGE.read_text(encoding="utf-8").split())
    assert "were not run here" in page  # on paper until someone runs them on a cluster
    for name, code in recipes.items():
        tree = ast.parse(code, filename=f"{CLUSTER_PAGE.name} {name} recipe")
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
        named = {}
        for call in calls:
            func = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
            if func in KNOWN:
                named.setdefault(func, set()).update(k.arg for k in call.keywords)
        assert ("SLURMCluster" if name == "slurm" else "KubeCluster") in named, name
        for func, used in named.items():
            assert used <= KNOWN[func], f"{name}: {func} has no argument(s) {sorted(used - KNOWN[func])}"
        # each recipe hands the scheduler's address to the grade command
        assert "cluster.scheduler_address" in code and '"--scheduler"' in code, name
    assert "jobs=" in recipes["slurm"] and "--gres=gpu" in recipes["slurm"]
