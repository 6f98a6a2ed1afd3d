"""Warm judges (``judge/zygote.py``): a judge forked by the zygote is the judge a fresh
``python -I -m autograder.judge.process`` would be -- the same environment, flags, folder and
descriptors, a session of its own, nothing of the zygote's folder -- and a grader whose judge
zygote cannot start still judges."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from autograder import forking
from autograder.judge import client
from tests.conftest import ROOT, still_running


# A hidden test that prints what the judge process is.
FACTS = '''
import json, os, sys
home = os.environ["HOME"]
remembered = [v for m in list(sys.modules.values()) for v in vars(m).values() if isinstance(v, str)
              and "autograder-judge-zygote" in v]
print(json.dumps({"env": {k: v.replace(home, "<HOME>") for k, v in os.environ.items()},
                  "cwd_in_home": os.getcwd().startswith(home), "isolated": sys.flags.isolated,
                  "own_session": os.getsid(0) == os.getpid(), "fds": sorted(os.listdir("/proc/self/fd")),
                  "zygote_paths": remembered[:3], "numpy": "numpy" in sys.modules}))
'''


def _facts(cells: list[str]) -> tuple[type, dict]:
    judge = client.Judge(cells, [])
    try:
        deadline = time.monotonic() + 180
        assert judge.wait_ready(deadline) == []
        verdict = judge.judge("facts", FACTS, lambda probe: None, deadline)
        assert verdict.status == "passed", verdict.message
        return type(judge.proc), json.loads(verdict.message)
    finally:
        judge.close()


@pytest.mark.parametrize("cells", [["import numpy as np"], ["import tensorflow as tf"]], ids=["plain", "tf"])
def test_a_forked_judge_is_the_judge_a_fresh_interpreter_would_be(cells, monkeypatch):
    monkeypatch.delenv(forking.KERNELS_ENV, raising=False)
    try:
        warm_type, warm = _facts(cells)
        warm_again_type, warm_again = _facts(cells)  # the zygote's second child
    finally:
        client.close_idle()
    monkeypatch.setenv(forking.KERNELS_ENV, "cold")
    cold_type, cold = _facts(cells)
    assert (warm_type, warm_again_type, cold_type) == (forking.ForkedProcess, forking.ForkedProcess, subprocess.Popen)
    assert warm["env"] == cold["env"] == warm_again["env"]
    assert warm["isolated"] == cold["isolated"] == 1 and warm["own_session"] and cold["own_session"]
    assert warm["cwd_in_home"] and cold["cwd_in_home"]
    assert warm["fds"] == cold["fds"], (warm["fds"], cold["fds"])  # 0, 1, 2 and the listing's own
    assert warm["zygote_paths"] == [] and warm_again["zygote_paths"] == []


def test_a_judge_zygote_that_cannot_start_leaves_a_fresh_judge(monkeypatch):
    def refuse(*args, **kwargs):
        raise OSError("no zygote here")

    monkeypatch.delenv(forking.KERNELS_ENV, raising=False)
    monkeypatch.setattr(client, "_start_zygote", refuse)
    kind, facts = _facts(["SCALE = 2.0"])
    assert kind is subprocess.Popen and facts["isolated"] == 1


def test_a_judge_zygote_and_its_judges_end_with_the_grader(tmp_path):
    """A grader killed outright (no atexit) leaves no judge zygote or judge running, and the
    judge's folders it leaves are swept as abandoned once both have ended."""
    script = textwrap.dedent(f'''
        import os, sys, time
        sys.path.insert(0, {str(ROOT)!r})
        from autograder.judge import client
        judge = client.Judge(["SCALE = 2.0"], [])
        judge.wait_ready(time.monotonic() + 120)
        zygote = next(iter(client._ZYGOTES.zygotes.values()))
        print(zygote.proc.pid, judge.proc.pid, judge.folder, flush=True)
        os._exit(0)
    ''')
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                         env={**os.environ, forking.KERNELS_ENV: "warm", "TMPDIR": str(temporary)})
    *pids, folder = out.stdout.split()
    pids, folder = [int(p) for p in pids], Path(folder)
    assert len(pids) == 2 and folder.parent == temporary, out.stderr[-2000:]
    alive = still_running(pids, after_s=20)
    assert not alive, f"still running after their grader died: {alive}"
    assert folder.is_dir(), "nothing could close the judge: its folder is still there to sweep"
    assert client.sweep_abandoned(temporary, min_age_s=0) == [folder]
    assert not folder.exists() and not Path(f"{folder}-tmp").exists() and not Path(f"{folder}.log").exists()
