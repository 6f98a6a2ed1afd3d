"""Each exercise's first code cell makes ``import autograder`` work (Colab, a fresh machine).

The cell is written once in ``solutions/`` (grade_id ``install``, locked) and
``python -m autograder release`` fills in ``_config.yml``'s ``repository:``
URL and branch.  Here it runs in a fresh virtual environment that sees the
main environment's packages (TensorFlow ...) through a ``.pth`` file but not
the editable ``autograder``: it installs the package from a local copy
(``AUTOGRADER_INSTALL_SOURCE``), does nothing where ``autograder`` imports,
and with no repository configured prints one line saying what to do.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import nbformat
import pytest

from autograder.course import release
from tests.conftest import EXERCISES, ROOT, SOLUTIONS, assignments, notebook_for


def first_code_cell(path: Path):
    nb = nbformat.read(path, as_version=4)
    return next(c for c in nb.cells if c.cell_type == "code")


def install_source(path: Path = None) -> str:
    return first_code_cell(path or notebook_for(EXERCISES, assignments()[0])).source


def test_every_notebook_starts_with_the_locked_install_cell():
    url, branch = release.repository()
    line = f"COURSE_URL, COURSE_BRANCH = {json.dumps(url)}, {json.dumps(branch)}"
    for name in assignments():
        for folder in (SOLUTIONS, EXERCISES):
            cell = first_code_cell(notebook_for(folder, name))
            meta = cell.metadata.get("nbgrader", {})
            assert meta.get("grade_id") == release.INSTALL_CELL and meta.get("locked") and not meta.get("solution") \
                and not meta.get("grade"), f"{folder.name}/{name}: the first code cell is not the locked install cell"
        released = first_code_cell(notebook_for(EXERCISES, name))
        assert line in released.source, f"exercises/{name}: install cell does not carry _config.yml's repository"
        assert released.metadata.get("editable") is False and released.metadata.get("deletable") is False


def test_repository_setting_is_empty_by_default_and_read_from_config(tmp_path):
    assert release.repository() == ("", "main")
    (tmp_path / "_config.yml").write_text("repository:\n  url: https://github.com/org/course.git/\n  branch: spring\n")
    assert release.repository(tmp_path) == ("https://github.com/org/course", "spring")
    assert release.colab_url("https://github.com/org/course", "spring", "exercises/01_x/01_x.ipynb") == \
        "https://colab.research.google.com/github/org/course/blob/spring/exercises/01_x/01_x.ipynb"
    assert release.colab_url("", "main", "x.ipynb") is None
    assert release.colab_url("https://gitlab.com/org/course", "main", "x.ipynb") is None


def test_release_fills_the_configured_url_into_the_cell(tmp_path):
    notebook = tmp_path / "nb.ipynb"
    shutil.copy(notebook_for(SOLUTIONS, assignments()[0]), notebook)
    assert release.fill_install_cell(notebook, "https://github.com/org/course", "spring")
    source = first_code_cell(notebook).source
    assert 'COURSE_URL, COURSE_BRANCH = "https://github.com/org/course", "spring"  # ' in source


def _run_cell(source: str, monkeypatch) -> list:
    """exec the cell here with ``autograder`` reported missing and pip replaced by a recorder."""
    import importlib.util

    calls = []

    class Stop(Exception):
        pass

    def fake_run(cmd, **kwargs):
        calls.append(cmd)
        raise Stop

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "autograder" else real(name, *a))
    monkeypatch.setattr(subprocess, "run", fake_run)
    monkeypatch.delenv("AUTOGRADER_INSTALL_SOURCE", raising=False)
    with pytest.raises(Stop):
        exec(source, {})
    return calls


def test_a_configured_url_becomes_the_pip_source(tmp_path, monkeypatch):
    notebook = tmp_path / "nb.ipynb"
    shutil.copy(notebook_for(SOLUTIONS, assignments()[0]), notebook)
    release.fill_install_cell(notebook, "https://github.com/org/course", "spring")
    calls = _run_cell(first_code_cell(notebook).source, monkeypatch)
    assert calls == [[sys.executable, "-m", "pip", "install", "-q", "git+https://github.com/org/course@spring"]]


def test_does_nothing_where_autograder_imports():
    env = {**os.environ, "AUTOGRADER_INSTALL_SOURCE": "/nonexistent/would-fail"}
    code = "import subprocess\ndef no(*a, **k): raise SystemExit('pip was called')\nsubprocess.run = no\n" + install_source()
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    elapsed = time.perf_counter() - started
    assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == "", proc.stderr
    assert elapsed < 5, f"the install cell took {elapsed:.1f} s where autograder already imports"


@pytest.fixture
def bare_venv(tmp_path_factory) -> Path:
    """A new venv (one per test) that sees the main venv's site-packages (via .pth) but not the editable autograder."""
    where = tmp_path_factory.mktemp("venv")
    venv = where / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=300)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    # Lines of a .pth only extend sys.path: the main venv's own .pth files (the editable
    # autograder's finder among them) are not processed, so autograder stays missing.
    (Path(purelib) / "main_venv.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    # found, not imported: TensorFlow's import would cost seconds and prove nothing more
    sees = "import importlib.util as u; assert u.find_spec('tensorflow') and u.find_spec('nbformat'); import autograder"
    probe = subprocess.run([str(python), "-c", sees], cwd=where,
                           capture_output=True, text=True, timeout=300, env=_clean_env())
    assert probe.returncode != 0 and "No module named 'autograder'" in probe.stderr, \
        f"the bare venv must see TensorFlow but not autograder:\n{probe.stderr[-2000:]}"
    return python


def _clean_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "AUTOGRADER_INSTALL_SOURCE",
                                                           "AUTOGRADER_PIP_ARGS")}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["PIP_NO_INDEX"] = "1"  # nothing here may come from the network
    return {**env, **extra}


@pytest.mark.slow
def test_installs_autograder_from_the_configured_source(bare_venv, tmp_path):
    source = tmp_path / "course"
    source.mkdir()
    shutil.copy(ROOT / "pyproject.toml", source)
    shutil.copytree(ROOT / "autograder", source / "autograder", ignore=shutil.ignore_patterns("__pycache__"))
    env = _clean_env(AUTOGRADER_INSTALL_SOURCE=str(source), AUTOGRADER_PIP_ARGS="--no-deps --no-build-isolation")
    code = install_source() + "\nimport autograder.checks.hardware\nprint('imported', autograder.__file__)"
    proc = subprocess.run([str(bare_venv), "-c", code], cwd=tmp_path, capture_output=True, text=True, env=env,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"installed from {source}" in proc.stdout and "imported" in proc.stdout
    assert str(Path(bare_venv).parent.parent) in proc.stdout.split("imported", 1)[1], \
        "autograder was not installed into the fresh venv"
    again = subprocess.run([str(bare_venv), "-c", install_source()], cwd=tmp_path, capture_output=True, text=True,
                           env=env, timeout=120)
    assert again.returncode == 0 and again.stdout == "", "the second run must find autograder and do nothing"


@pytest.mark.slow
def test_without_a_repository_it_says_what_to_do_in_one_line(bare_venv, tmp_path):
    assert 'COURSE_URL, COURSE_BRANCH = "", ' in install_source(), "this test is for the default, empty URL"
    proc = subprocess.run([str(bare_venv), "-c", install_source()], cwd=tmp_path, capture_output=True, text=True,
                          env=_clean_env(), timeout=120)
    assert proc.returncode == 1 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "autograder is not installed" in lines[0] and "pip install ." in lines[0] and "clone the course" in lines[0]
