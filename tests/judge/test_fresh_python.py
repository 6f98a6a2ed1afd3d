"""The judge's fresh processes (``judge/fresh_python.py``): a process forked by its zygote is the one
``python -I -m MODULE`` would be (environment, folder, flags, path, arguments, a NumPy seed of its own,
TensorFlow's runtime not started), reuses one zygote, and is killed past its time-out; the judge
installs it, and ``AUTOGRADER_KERNELS=cold`` keeps fresh interpreters."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from autograder import forking
from autograder.checks import clean_subprocess
from autograder.judge import fresh_python
from tests.conftest import ROOT, still_running

FACTS = "tests.files.fresh.facts"


def _run(runner, tmp_path, *args: str, timeout: float = 120):
    env = clean_subprocess.clean_env({"TF_CPP_MIN_LOG_LEVEL": "2", "AG_TEST_MARK": "fresh"})
    if runner is None:
        return clean_subprocess.run_module(FACTS, args, env=env, timeout=timeout, cwd=str(tmp_path))
    return runner(FACTS, list(args), env=env, timeout=timeout, cwd=str(tmp_path))


def test_a_forked_fresh_process_is_the_one_a_new_interpreter_would_be(tmp_path):
    cold = _run(None, tmp_path, "a", "b c")
    warm = _run(fresh_python.run_module, tmp_path, "a", "b c")
    again = _run(fresh_python.run_module, tmp_path, "a", "b c")
    facts = [json.loads(r.stdout) for r in (cold, warm, again)]
    for f in facts[1:]:
        for key in ("argv", "env", "cwd", "isolated", "path", "main", "runtime_started", "own_session", "fds"):
            assert f[key] == facts[0][key], key
    assert facts[0]["argv"] == ["a", "b c"] and facts[0]["env"]["AG_TEST_MARK"] == "fresh"
    assert facts[0]["isolated"] == 1 and facts[0]["runtime_started"] is False
    assert facts[1]["random"] != facts[2]["random"], "each child draws its own NumPy seed"
    assert "hello from the fresh process" in warm.stderr and warm.returncode is None
    assert cold.returncode == 0


def test_the_zygote_is_started_once_and_reused(tmp_path):
    _run(fresh_python.run_module, tmp_path)
    zygotes = list(fresh_python._POOL.zygotes.values())
    _run(fresh_python.run_module, tmp_path)
    assert len(zygotes) == 1 and list(fresh_python._POOL.zygotes.values()) == zygotes and zygotes[0].alive()


def test_past_its_time_out_the_child_is_killed(tmp_path):
    with pytest.raises(subprocess.TimeoutExpired):
        _run(fresh_python.run_module, tmp_path, "--sleep", "60", timeout=3)
    assert not [c for c in fresh_python._POOL.zygotes[next(iter(fresh_python._POOL.zygotes))].children
                if c.running()]


def test_the_judge_installs_it_unless_kernels_are_cold(monkeypatch):
    monkeypatch.setattr(clean_subprocess, "RUNNER", None)
    monkeypatch.setenv(forking.KERNELS_ENV, "cold")
    fresh_python.install()
    assert clean_subprocess.RUNNER is None
    monkeypatch.delenv(forking.KERNELS_ENV)
    fresh_python.install()
    assert clean_subprocess.RUNNER is fresh_python.run_module


def test_where_no_zygote_can_start_a_new_interpreter_runs_it(tmp_path, monkeypatch):
    def refuse(*args, **kwargs):
        raise OSError("no zygote here")

    monkeypatch.setattr(fresh_python, "_POOL", forking.ZygotePool(size=1))
    monkeypatch.setattr(forking, "Zygote", refuse)
    done = _run(fresh_python.run_module, tmp_path, "x")
    assert done.returncode == 0 and json.loads(done.stdout)["argv"] == ["x"]


def test_the_zygote_ends_with_the_judge_that_started_it(tmp_path):
    """A judge that ends outright (no atexit) leaves no fresh-process zygote running."""
    script = textwrap.dedent(f'''
        import os, sys
        sys.path.insert(0, {str(ROOT)!r})
        from autograder.checks import clean_subprocess
        from autograder.judge import fresh_python
        env = clean_subprocess.clean_env()
        fresh_python.run_module("tests.files.fresh.facts", [], env=env, timeout=120, cwd={str(tmp_path)!r})
        zygote = next(iter(fresh_python._POOL.zygotes.values()))
        print(zygote.proc.pid, zygote.folder, flush=True)
        os._exit(0)
    ''')
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=180, cwd=tmp_path,
                         env={**os.environ, forking.KERNELS_ENV: "warm"})
    words = out.stdout.split()
    assert len(words) == 2, out.stderr[-2000:]
    assert not still_running([int(words[0])], after_s=20), "the fresh-process zygote outlived its judge"
    shutil.rmtree(words[1], ignore_errors=True)  # a judge that ends outright leaves it; the test does not
