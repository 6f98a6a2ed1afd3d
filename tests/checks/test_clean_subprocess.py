"""autograder.checks.clean_subprocess: a check's fresh process runs nothing a notebook planted."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from autograder.checks import clean_subprocess as cs


# Each planted file writes its marker when (and only when) Python runs it.
PLANT = "open({marker!r}, 'w').write('ran')\n"


@pytest.fixture
def planted(tmp_path, monkeypatch):
    """A learner's folder with sitecustomize.py, usercustomize.py, a startup file
    and a module shadowing ``json``, all named by this process's environment."""
    folder = tmp_path / "learner"
    folder.mkdir()
    markers = {name: tmp_path / f"{name}.ran" for name in ("sitecustomize", "usercustomize", "startup", "json")}
    for name in ("sitecustomize", "usercustomize", "json"):
        (folder / f"{name}.py").write_text(PLANT.format(marker=str(markers[name])))
    (folder / "startup.py").write_text(PLANT.format(marker=str(markers["startup"])))
    monkeypatch.setenv("PYTHONPATH", str(folder))
    monkeypatch.setenv("PYTHONSTARTUP", str(folder / "startup.py"))
    monkeypatch.setenv("PYTHONUSERBASE", str(folder))
    monkeypatch.setenv("PYTHONINSPECT", "1")
    monkeypatch.setenv("LD_PRELOAD", str(folder / "libnothing.so"))
    monkeypatch.chdir(folder)  # the learner's folder is also the working folder
    return folder, markers


def _child_report(tmp_path: Path, **run) -> dict:
    """Run a tiny program the clean way; it reports its environment and sys.path."""
    script = tmp_path / "report.py"
    script.write_text("import json, os, sys\n"
                      "print(json.dumps({'env': dict(os.environ), 'path': sys.path, 'flags': sys.flags.isolated,"
                      " 'argv': sys.argv, 'json': json.__file__}))\n")
    done = subprocess.run(cs.python_argv(str(script), ["a", "b"], kind="path"), env=cs.clean_env(),
                          capture_output=True, text=True, timeout=60, **run)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_planted_files_do_not_run_in_the_child(planted, tmp_path):
    folder, markers = planted
    report = _child_report(tmp_path)
    assert [name for name, marker in markers.items() if marker.exists()] == []
    assert report["flags"] == 1
    assert str(folder) not in report["path"] and "" not in report["path"]
    assert report["argv"] == [str(tmp_path / "report.py"), "a", "b"]
    assert Path(report["json"]).parent.name == "json"  # the standard library's, not the planted one


def test_the_same_plant_runs_in_an_ordinary_child(planted, tmp_path):
    """The attack is real: without the helper, Python runs the planted sitecustomize."""
    folder, markers = planted
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    subprocess.run([sys.executable, "-c", "pass"], env=env, timeout=60, check=True)
    assert markers["sitecustomize"].exists()


def test_environment_keeps_only_the_allowlist(planted, tmp_path, monkeypatch):
    monkeypatch.setenv("TF_ENABLE_ONEDNN_OPTS", "0")
    monkeypatch.setenv("SOMETHING_ELSE", "x")
    env = _child_report(tmp_path)["env"]
    assert not [k for k in env if k.startswith(("PYTHON", "LD_PRELOAD")) or k == "SOMETHING_ELSE"]
    assert env["TF_ENABLE_ONEDNN_OPTS"] == "0"
    assert set(env) - {"LC_CTYPE"} <= set(cs.KEEP_ENV)  # Python may set LC_CTYPE itself (PEP 538)


def test_loader_path_and_interpreter_are_the_ones_at_import(monkeypatch):
    monkeypatch.setenv("LD_LIBRARY_PATH", "/learner/lib")
    monkeypatch.setenv("PATH", "/learner/bin")
    monkeypatch.setattr(sys, "executable", "/learner/python")
    env = cs.clean_env()
    assert env.get("LD_LIBRARY_PATH") != "/learner/lib" and env["PATH"] != "/learner/bin"
    assert cs.python_argv("m")[0] != "/learner/python"


def test_extra_names_that_steer_python_are_refused():
    assert cs.clean_env({"TF_CONFIG": "{}"})["TF_CONFIG"] == "{}"
    for name in ("PYTHONPATH", "PYTHONSTARTUP", "LD_PRELOAD", "DYLD_INSERT_LIBRARIES"):
        with pytest.raises(ValueError, match=f"{name} cannot be set"):
            cs.clean_env({name: "/tmp/x"})


def test_a_module_runs_as_main_from_this_package(planted, tmp_path):
    """``kind="module"`` finds this autograder package even with cwd elsewhere and isolated mode."""
    done = subprocess.run(cs.python_argv("autograder.checks.placement_boot", []), env=cs.clean_env(),
                          capture_output=True, text=True, timeout=60, cwd=cs.NEUTRAL_CWD)
    assert done.returncode == 2 and "usage: python -m autograder.checks.placement_boot" in done.stderr
    with pytest.raises(ValueError, match="kind must be"):
        cs.python_argv("x", kind="file")


@pytest.mark.slow  # TensorFlow in the fresh processes
def test_the_checks_children_start_clean(planted, tmp_path):
    """The fresh-process SavedModel check and placement capture still work with
    a planted sitecustomize on PYTHONPATH and in the working folder, and it does not run."""
    tf = pytest.importorskip("tensorflow")
    from autograder.checks import placement, savedmodel

    folder, markers = planted
    (folder / "sitecustomize.py").write_text(
        PLANT.format(marker=str(markers["sitecustomize"])) + "import os\nos.environ['CUDA_VISIBLE_DEVICES'] = '9'\n")
    module = tf.Module()
    module.f = tf.function(lambda x: {"y": 2 * x}, input_signature=[tf.TensorSpec([None], tf.float32, name="x")])
    tf.saved_model.save(module, str(tmp_path / "sm"), signatures={"serving_default": module.f})
    run = savedmodel.call_signature(tmp_path / "sm", "serving_default", [{"x": np.array([1.0, 2.0], np.float32)}])
    assert run.outputs[0]["y"].tolist() == [2.0, 4.0]
    (folder / "train.py").write_text("import tensorflow as tf\nprint(tf.add(1, 2).numpy())\n")
    capture = placement.capture_command(["python", "train.py"], timeout=240)
    assert capture.result == 0 and "AddV2" in capture.text, capture.text[-2000:]
    assert [name for name, marker in markers.items() if marker.exists()] == []
