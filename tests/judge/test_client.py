"""A real judge process driven by the grader's client, its probes answered in this process."""
from __future__ import annotations

import time

import numpy as np
import pytest

from autograder.checks import probe
from autograder.judge import client
from autograder.judge import protocol as p

HIDDEN = '''
### BEGIN HIDDEN TESTS
def __ag_judge(learner):
    import numpy as _np
    _x = _np.random.default_rng().normal(size=4)
    _np.testing.assert_allclose(learner.call("triple", _x), SCALE * _x, err_msg="triple is wrong")
    print("triple is right")
__import__("autograder.checks.probe", fromlist=["judge_here"]).judge_here(__ag_judge, globals())
### END HIDDEN TESTS
'''


def test_judge_source_is_the_hidden_block_of_a_judged_cell_only():
    assert client.judge_source("assert True\n" + HIDDEN).lstrip().startswith("def __ag_judge(learner):")
    assert client.judge_source("assert True\n### BEGIN HIDDEN TESTS\nassert 1\n### END HIDDEN TESTS\n") is None
    assert client.judge_source("assert True\n") is None


def _relay_to(namespace):
    def relay(message: p.Probe) -> p.ProbeResult:
        start = time.perf_counter()
        text = probe.handle(p.encode(message)[:-1].replace('"type": "Probe", ', ""), namespace)
        return p.ProbeResult(text, time.perf_counter() - start)
    return relay


def test_a_part_is_judged_in_the_judge_process(tmp_path):
    data = tmp_path / "numbers.txt"
    data.write_text("3")
    judge = client.Judge(["import numpy as np\nSCALE = float(open('numbers.txt').read())"], [data])
    try:
        deadline = time.monotonic() + 120
        assert judge.wait_ready(deadline) == []
        right = {"np": np}
        exec("def triple(x):\n    return 3 * x", right)
        wrong = {"np": np}
        exec("def triple(x):\n    return x + 3", wrong)
        source = client.judge_source(HIDDEN)
        passed = judge.judge("g", source, _relay_to(right), deadline)
        failed = judge.judge("g", source, _relay_to(wrong), deadline)
    finally:
        judge.close()
    assert (passed.status, passed.message) == ("passed", "triple is right")
    assert failed.status == "failed" and "triple is wrong" in failed.message
    assert not judge.folder.exists()


def test_a_released_judge_is_handed_out_again_for_the_same_assignment_only(tmp_path):
    cells = ["import numpy as np\nSCALE = 3.0"]
    first = client.acquire(cells, [])
    try:
        first.wait_ready(time.monotonic() + 120)
        client.release(first, cells, [])
        assert client.acquire(cells, []) is first
        other = client.acquire(["SCALE = 4.0"], [])
        assert other is not first
        other.close()
        client.release(first, cells, [])
        import os
        saved = os.environ.get("TF_ENABLE_ONEDNN_OPTS")
        os.environ["TF_ENABLE_ONEDNN_OPTS"] = "1" if saved == "0" else "0"
        try:  # a judge started under another oneDNN setting is not handed out
            elsewhere = client.acquire(cells, [])
            assert elsewhere is not first
            elsewhere.close()
        finally:
            if saved is None:
                del os.environ["TF_ENABLE_ONEDNN_OPTS"]
            else:
                os.environ["TF_ENABLE_ONEDNN_OPTS"] = saved
        assert client.acquire(cells, []) is first
        first.in_step = False  # a part that ended without its verdict: never reused
        client.release(first, cells, [])
        assert first.proc.poll() is not None
    finally:
        first.close()
        client.close_idle()


def test_parts_leave_no_files_for_the_next(tmp_path):
    from autograder.judge import process

    base, _ = process.run_locked_cells([])
    assert process.judge_part("open('left.txt', 'w').write('x')", base, "a").status == "passed"
    assert process.judge_part("import os\nassert not os.path.exists('left.txt')", base, "b").status == "passed"


TEMPORARY = '''
### BEGIN HIDDEN TESTS
def __ag_judge(learner):
    import os, tempfile
    made = tempfile.mkdtemp(prefix="judge-made-")
    print(made, os.environ["TMPDIR"])
__import__("autograder.checks.probe", fromlist=["judge_here"]).judge_here(__ag_judge, globals())
### END HIDDEN TESTS
'''


@pytest.mark.parametrize("kernels", ["warm", "cold"])
def test_what_a_hidden_test_makes_in_tempfile_is_removed_with_its_judge(monkeypatch, kernels):
    """A judge outlives a submission: a hidden test's temporary folders (exercise 9 copies every
    trace it reads) go in the judge's own temporary folder, removed when the judge closes, forked
    from the zygote or started fresh."""
    from pathlib import Path

    from autograder import forking

    monkeypatch.setenv(forking.KERNELS_ENV, kernels)
    judge = client.Judge([], [])
    try:
        deadline = time.monotonic() + 180
        assert judge.wait_ready(deadline) == []
        verdict = judge.judge("g", client.judge_source(TEMPORARY), _relay_to({}), deadline)
        own = Path(str(judge.folder) + "-tmp")
        assert verdict.status == "passed", verdict.message
        made, tmpdir = (Path(w) for w in verdict.message.split())
        assert made.parent == own and tmpdir == own and made.is_dir()
    finally:
        judge.close()
    assert not made.exists() and not own.exists(), "the judge's temporary folder outlived it"


FRESH = '''
### BEGIN HIDDEN TESTS
def __ag_judge(learner):
    from autograder.checks import clean_subprocess
    from autograder.judge import fresh_python
    done = clean_subprocess.run_module("tests.files.fresh.facts", [], env=clean_subprocess.clean_env(),
                                       timeout=120, cwd=".")
    assert '"argv": []' in done.stdout, done.stderr[-500:]
    print(*[z.folder for z in fresh_python._POOL.zygotes.values()])
__import__("autograder.checks.probe", fromlist=["judge_here"]).judge_here(__ag_judge, globals())
### END HIDDEN TESTS
'''


def test_a_judge_that_stops_removes_its_fresh_process_zygotes_folder(monkeypatch):
    from pathlib import Path

    from autograder import forking

    monkeypatch.setenv(forking.KERNELS_ENV, "warm")
    judge = client.Judge([], [])
    try:
        deadline = time.monotonic() + 180
        assert judge.wait_ready(deadline) == []
        verdict = judge.judge("g", client.judge_source(FRESH), _relay_to({}), deadline)
    finally:
        judge.close()
    assert verdict.status == "passed", verdict.message
    folders = [Path(f) for f in verdict.message.split()]
    assert len(folders) == 1 and folders[0].name.startswith("ag-fresh-python-")
    assert not folders[0].exists(), "the fresh-process zygote's folder outlived its judge"


def _judge_leftovers(where, name: str, age_s: float):
    """What a judge leaves: its folder, its temporary folder and its log, the log ``age_s`` old."""
    import os

    folder = where / f"{client.JUDGE_PREFIX}{name}"
    (folder / "data").mkdir(parents=True)
    (where / f"{folder.name}-tmp" / "trace").mkdir(parents=True)
    log = where / f"{folder.name}.log"
    log.write_text("judge: locked cells in 1.0 s\n")
    os.utime(log, (time.time() - age_s, time.time() - age_s))
    return folder


def test_the_sweep_removes_abandoned_judges_only(tmp_path):
    """An old, unlocked log marks a judge whose grader was killed: its three leftovers go. A
    locked log (a live grader or judge holds it), a young one (its judge may be taking the lock)
    or another user's keeps everything."""
    import fcntl
    import os

    abandoned = _judge_leftovers(tmp_path, "abandoned", age_s=3600)
    held = _judge_leftovers(tmp_path, "held", age_s=3600)
    young = _judge_leftovers(tmp_path, "young", age_s=5)
    kept = [held, young]
    if os.geteuid() == 0:  # root can make one another user's: never swept, abandoned or not
        others = _judge_leftovers(tmp_path, "another-users", age_s=3600)
        os.chown(f"{others}.log", 54321, -1)
        kept.append(others)
    with open(f"{held}.log", "ab") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        removed = client.sweep_abandoned(tmp_path, min_age_s=600)
    assert removed == [abandoned]
    assert not abandoned.exists() and not (tmp_path / f"{abandoned.name}-tmp").exists()
    assert not (tmp_path / f"{abandoned.name}.log").exists()
    for folder in kept:
        assert (folder / "data").is_dir() and (tmp_path / f"{folder.name}-tmp").is_dir()
        assert (tmp_path / f"{folder.name}.log").is_file()


def test_a_live_judges_folder_is_never_swept(monkeypatch, tmp_path):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    judge = client.Judge([], [])
    try:
        assert judge.folder.parent == tmp_path
        assert client.sweep_abandoned(tmp_path, min_age_s=0) == []
        assert judge.folder.is_dir() and judge.wait_ready(time.monotonic() + 180) == []
    finally:
        judge.close()
