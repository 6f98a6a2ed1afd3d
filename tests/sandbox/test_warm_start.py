"""Warm workers (``sandbox/warm_start.py``, ``sandbox/zygote.py``): a kernel forked from the
zygote must be the kernel a fresh interpreter would have been -- same environment, limits,
namespaces and descriptors, none of the zygote's folders, nothing of an earlier submission --
and a grader whose zygote cannot start still grades."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest

from autograder.sandbox import host as sandbox, warm_start
from tests.conftest import ROOT, still_running
from tests.files.hostile.catalogue import TINY, answers


LIMITS = sandbox.Limits(cell_timeout_s=120, notebook_timeout_s=400)


def _cell(source: str, **meta) -> nbformat.NotebookNode:
    made = nbformat.v4.new_code_cell(source)
    made.metadata["nbgrader"] = {"locked": False, "solution": False, "grade": False, "schema_version": 3, **meta}
    return made


def _assignment(folder: Path, answer: str, test: str, *, setup: str = "import tensorflow as tf\n") -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [_cell(setup, grade_id="setup", locked=True),
                _cell(answer, grade_id="answer", solution=True),
                _cell(test, grade_id="test-it", grade=True, locked=True, points=1)]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "probe.ipynb"
    nbformat.write(nb, path)
    return path


def _run(path: Path, source: Path | None = None):
    results = sandbox.run_submission(path, source or path, limits=LIMITS)
    (test,) = results.tests
    return results, test


# What a kernel is, as seen from inside it: the answer cell collects it, the test fails with it.
DESCRIBE = textwrap.dedent('''
    import json as _json, os as _os, resource as _resource, sys as _sys
    _home = _os.environ["HOME"]
    def _norm(value):
        return value.replace(_home, "<home>") if isinstance(value, str) else value
    def _fd_kind(fd):
        try:
            target = _os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return "gone"
        return target.split(":")[0] if ":" in target else _norm(target)
    _status = dict(line.split(":\\t", 1) for line in open("/proc/self/status").read().splitlines() if ":\\t" in line)
    DESCRIPTION = {
        "env": {k: _norm(v) for k, v in _os.environ.items() if k not in ("JPY_PARENT_PID",)},
        "cwd": _norm(_os.getcwd()),
        "path": [_norm(p) for p in _sys.path],
        "argv0": _os.path.basename(_sys.argv[0]),
        "pid": _os.getpid(),
        "uid": (_os.getuid(), _os.geteuid()),
        # RLIMIT_NPROC counts the user's tasks at the worker's start: it differs run to run.
        "limits": {name: _resource.getrlimit(getattr(_resource, name))
                   for name in ("RLIMIT_CORE", "RLIMIT_FSIZE", "RLIMIT_DATA")},
        "caps": {k: _status[k].strip() for k in ("CapEff", "CapBnd", "NoNewPrivs")},
        "fds": sorted(_fd_kind(int(fd)) for fd in _os.listdir("/proc/self/fd")),
        "tmp": _norm(__import__("tempfile").gettempdir()),
    }
''')
# Each item as a short digest (a failure message is cut at 2000 characters); the pid as it is.
FAIL_WITH_DESCRIPTION = ("import hashlib as _h\n"
                         "assert False, 'DESCRIPTION=' + _json.dumps({k: v if k == 'pid' else _h.sha1(_json.dumps("
                         "v, sort_keys=True).encode()).hexdigest()[:12] for k, v in DESCRIPTION.items()})")


def _description(test) -> dict:
    marker = "DESCRIPTION="
    assert marker in test.output, test.output
    return json.loads(test.output[test.output.index(marker) + len(marker):].splitlines()[0])


def test_a_warm_kernel_is_the_kernel_a_cold_start_makes(tmp_path, monkeypatch):
    path = _assignment(tmp_path / "a", DESCRIBE, FAIL_WITH_DESCRIPTION)
    warm_results, warm = _run(path)
    monkeypatch.setenv(warm_start.KERNELS_ENV, "cold")
    cold_results, cold = _run(path)
    assert warm_results.sandbox["kernel"].startswith("forked") and cold_results.sandbox["kernel"] == "a fresh interpreter"
    warm_seen, cold_seen = _description(warm), _description(cold)
    # The kernel the launcher exec'd calls itself ipykernel_launcher; so must the forked one.
    assert warm_seen == cold_seen, {k: (warm_seen[k], cold_seen[k]) for k in warm_seen if warm_seen[k] != cold_seen[k]}
    if warm_results.sandbox.get("processes", "").startswith("own PID namespace"):
        assert warm_seen["pid"] == 1


REMEMBERED = textwrap.dedent('''
    import sys as _sys, types as _types
    def _strings(value, depth=0):
        if isinstance(value, str):
            yield value
        elif depth < 2 and isinstance(value, (list, tuple, set, frozenset)):
            for item in list(value):
                yield from _strings(item, depth + 1)
        elif depth < 2 and isinstance(value, dict):
            for item in list(value.values()):
                yield from _strings(item, depth + 1)
        elif depth < 1 and isinstance(value, _types.FunctionType):
            inner = getattr(value, "__wrapped__", None)
            for cell in (value.__closure__ or ()) + (getattr(inner, "__closure__", None) or ()):
                try:
                    yield from _strings(cell.cell_contents, depth + 1)
                except ValueError:
                    pass
    ZYGOTE_PATHS = sorted({f"{name}: {s[:120]}" for name, module in list(_sys.modules.items())
                           for value in list(getattr(module, "__dict__", {}).values())
                           for s in _strings(value) if "-" + "zygote-" in s})  # not this cell's own text
    import keras, matplotlib, tempfile, os
    HOMES = [keras.src.backend.config._KERAS_DIR, matplotlib.get_configdir(), matplotlib.get_cachedir(),
             tempfile.gettempdir()]
''')


def test_a_warm_kernel_remembers_no_folder_of_the_zygote(tmp_path):
    """TensorFlow's import (Keras, matplotlib, tempfile, the user site) keeps the folders it found;
    in a warm kernel each is the submission's, as in a cold one."""
    path = _assignment(tmp_path / "a", REMEMBERED, textwrap.dedent('''
        assert ZYGOTE_PATHS == [], ZYGOTE_PATHS
        home = os.environ["HOME"]
        assert all(p.startswith(home) for p in HOMES), (home, HOMES)
        assert len(HOMES) == 4 and "autograder-sandbox" in home, HOMES
    '''))
    results, test = _run(path)
    assert results.sandbox["kernel"].startswith("forked")
    assert test.score == 1.0, test.output


def test_nothing_of_one_submission_reaches_the_next(tmp_path):
    """The first submission leaves a mark in every place its process has (modules, the environment,
    builtins, TensorFlow's global seed); its own test sees them, the next submission's sees none."""
    test = textwrap.dedent('''
        import builtins, numpy, os
        from tensorflow.python.framework import random_seed
        found = [name for name, there in [
            ("numpy attribute", hasattr(numpy, "_ag_left_behind")),
            ("tensorflow attribute", hasattr(tf, "_ag_left_behind")),
            ("environment", "AG_LEFT_BEHIND" in os.environ),
            ("builtins", hasattr(builtins, "_ag_left_behind")),
            ("global seed", random_seed.get_seed(None)[0] is not None)] if there]
        assert not found, f"left behind: {found}"
    ''')
    leave = textwrap.dedent('''
        import builtins, numpy, os
        numpy._ag_left_behind = tf._ag_left_behind = builtins._ag_left_behind = True
        os.environ["AG_LEFT_BEHIND"] = "1"
        tf.random.set_seed(1234)
    ''')
    first = _assignment(tmp_path / "first", leave, test)
    second = _assignment(tmp_path / "second", "pass\n", test)
    _, marked = _run(first, first)
    _, clean = _run(second, first)
    assert marked.score == 0.0 and "numpy attribute" in marked.output and "global seed" in marked.output, \
        marked.output
    assert clean.score == 1.0, clean.output


def test_the_tiny_assignment_grades_the_same_warm_and_cold(tmp_path, monkeypatch):
    submission = tmp_path / "tiny.ipynb"
    submission.write_bytes(answers()(None))
    data = [TINY.parent / "data.txt"]
    warm = sandbox.run_submission(submission, TINY, data_files=data, limits=LIMITS)
    monkeypatch.setenv(warm_start.KERNELS_ENV, "cold")
    cold = sandbox.run_submission(submission, TINY, data_files=data, limits=LIMITS)
    assert [(t.name, t.score) for t in warm.tests] == [(t.name, t.score) for t in cold.tests] == \
        [("test-double", 3.0), ("test-word", 2.0)]
    assert warm.sandbox["kernel"] != cold.sandbox["kernel"]


def test_a_grader_whose_zygote_cannot_start_grades_cold(tmp_path, monkeypatch):
    def refuse(*args, **kwargs):
        raise OSError("no zygote today")

    monkeypatch.setattr(warm_start, "spawn", refuse)
    submission = tmp_path / "tiny.ipynb"
    submission.write_bytes(answers()(None))
    results = sandbox.run_submission(submission, TINY, data_files=[TINY.parent / "data.txt"], limits=LIMITS)
    assert results.sandbox["kernel"] == "a fresh interpreter"
    assert [t.score for t in results.tests] == [3.0, 2.0]


def test_a_zygote_ends_with_the_grader_that_started_it(tmp_path):
    """A grader killed outright (no atexit, no cleanup) leaves no zygote or worker running, and the
    next grader's sweep removes the zygote's folder with the dead grader's sandboxes."""
    script = textwrap.dedent(f'''
        import os, sys, tempfile
        from pathlib import Path
        sys.path.insert(0, {str(ROOT)!r})
        from autograder.sandbox import host as sandbox, warm_start
        workdir = Path(tempfile.mkdtemp(prefix=f"{{sandbox.SANDBOX_PREFIX}}{{os.getpid()}}-",
                                        dir=sandbox._sandbox_parent()))
        worker = warm_start.spawn(workdir, sandbox.clean_env(workdir), open(os.devnull, "wb"), with_tf=False,
                                  prefix=sandbox.zygote_prefix())
        zygote = next(iter(warm_start._ZYGOTES.values()))
        print(zygote.proc.pid, worker.pid, zygote.folder, flush=True)
        os._exit(0)
    ''')
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    words = out.stdout.split()
    assert len(words) == 3, out.stderr[-2000:]
    pids, folder = [int(p) for p in words[:2]], Path(words[2])
    alive = still_running(pids, after_s=20)
    assert not alive, f"still running after their grader died: {alive}"
    assert folder.is_dir()  # nobody cleaned up...
    sandbox.sweep_stale()
    assert not folder.exists()  # ...until the next grader's sweep


def test_each_environment_has_its_own_zygote():
    env = {"HOME": "/a", "TMPDIR": "/a/.tmp", "TF_ENABLE_ONEDNN_OPTS": "0"}
    same = {"HOME": "/b", "TMPDIR": "/b/.tmp", "TF_ENABLE_ONEDNN_OPTS": "0"}
    other = {**same, "TF_ENABLE_ONEDNN_OPTS": "1"}
    assert warm_start._key(True, env) == warm_start._key(True, same)
    assert warm_start._key(True, env) != warm_start._key(True, other)
    assert warm_start._key(True, env) != warm_start._key(False, env)


def test_cold_is_chosen_by_the_environment(monkeypatch):
    monkeypatch.delenv(warm_start.KERNELS_ENV, raising=False)
    assert warm_start.enabled()
    monkeypatch.setenv(warm_start.KERNELS_ENV, "cold")
    assert not warm_start.enabled()


@pytest.mark.slow  # starts TensorFlow in a fresh process
def test_the_zygote_forks_before_tensorflow_starts():
    """What the zygote imports must not start TensorFlow's runtime (a GPU's CUDA context cannot
    be shared by forks): it refuses to serve if it has; the check sees a started runtime."""
    script = textwrap.dedent(f'''
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        from autograder.sandbox import zygote as warm_zygote
        warm_zygote._preload(True)
        before = warm_zygote.runtime_started()
        import tensorflow as tf
        tf.constant(1.0) + 1
        print("STARTED", before, warm_zygote.runtime_started())
    ''')
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert "STARTED False True" in out.stdout, out.stderr[-2000:]
