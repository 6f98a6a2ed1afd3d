"""`pip install .` is enough: the package's pins, and the package installed
non-editably into fresh virtual environments, used from outside the checkout.

The fresh environments get no network: they see the main venv's
site-packages through a ``.pth`` line (a plain path line, so the main venv's
own ``.pth`` files, among them the editable install's finder, are not run)
and pip runs with ``--no-index --no-build-isolation``, so a dependency the
main venv does not satisfy fails the install instead of downloading.  The
checkout is copied first: building a wheel writes ``build/`` and
``*.egg-info`` next to the sources.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest

from autograder.checks import opbuild
from tests.conftest import ROOT
from tests.files.hostile.catalogue import TINY_SOURCE, answers


DIST = "tf-gpu-course-autograder"
WRONG_DOUBLE = "def double(x):\n    return x\n"
# What a build of the package never needs from the checkout.
NOT_COPIED = (".git", ".venv", "_build", ".pytest_cache", "__pycache__", "*.egg-info", "build", "gradebook.db",
              ".ipynb_checkpoints", ".whl", ".gl")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pins(lines) -> dict[str, str]:
    pins = {}
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        match = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*(.*)", line)
        assert match, f"cannot read the requirement {line!r}"
        pins[_norm(match.group(1))] = match.group(3).replace(" ", "")
    return pins


# --- the pins ---------------------------------------------------------------------------


def test_package_dependencies_are_the_requirements_pins():
    declared = _pins(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"])
    required = _pins((ROOT / "requirements.txt").read_text().splitlines())
    assert declared, "pyproject.toml declares no dependencies"
    problems = [f"{name}: pyproject.toml says {spec!r}, requirements.txt "
                + (f"says {required[name]!r}" if name in required else "does not list it")
                for name, spec in sorted(declared.items()) if required.get(name) != spec]
    problems += [f"{name}: pyproject.toml pins it with {spec!r}, not an exact ==version"
                 for name, spec in sorted(declared.items()) if not re.fullmatch(r"==[\w.+!-]+", spec)]
    assert not problems, "dependency pins differ:\n" + "\n".join(problems)


def test_grading_code_reads_nothing_from_the_checkout():
    """What an installed package cannot reach: the exercises build with
    ``autograder.checks.opbuild``, and the sandbox allows no checkout folder."""
    from autograder.sandbox import host as sandbox

    for folder in ("solutions", "exercises"):
        for notebook in sorted((ROOT / folder).glob("*/*.ipynb")):
            for cell in json.loads(notebook.read_text())["cells"]:
                source = "".join(cell["source"])
                if cell["cell_type"] == "code":
                    assert "autograder.__file__" not in source and "book/ops" not in source, \
                        f"{notebook.relative_to(ROOT)}: a code cell reads a path of the checkout"
    assert not [p for p in sandbox.allowed_paths() if p.startswith(str(ROOT / "book"))]


# --- non-editable installs in fresh venvs ---------------------------------------------------


def _env(venv: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP", "PYTHONSAFEPATH")}
    env.update(PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_CACHE_DIR="1",
               PYTHONDONTWRITEBYTECODE="1", TF_CPP_MIN_LOG_LEVEL="3")
    if venv is not None:
        env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        env["VIRTUAL_ENV"] = str(venv)
    return env


def _run(cmd: list, cwd: Path, venv: Path | None = None, timeout: float = 300, ok: bool = True):
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=_env(venv), capture_output=True, text=True,
                          timeout=timeout)
    if ok:
        assert proc.returncode == 0, f"{cmd} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def _fresh_venv(path: Path, cwd: Path) -> Path:
    """A venv at ``path`` that sees the main venv's packages but not its editable autograder."""
    _run([sys.executable, "-m", "venv", "--without-pip", path], cwd)
    python = path / "bin" / "python"
    site = Path(_run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd).stdout.strip())
    main = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    (site / "_main_venv_packages.pth").write_text("\n".join(main) + "\n")
    proc = _run([python, "-c", "import autograder"], cwd, ok=False)
    assert proc.returncode != 0 and "ModuleNotFoundError" in proc.stderr, \
        "autograder imports in the fresh venv before it is installed: the test would prove nothing"
    return python


def _pip_install(python: Path, project: Path, cwd: Path) -> None:
    # Non-editable; no index and no isolation: the pins must already be satisfied.
    _run([python, "-m", "pip", "install", "--quiet", "--no-index", "--no-build-isolation", project], cwd, timeout=600)
    check = _run([python, "-m", "pip", "check"], cwd, ok=False)
    ours = [line for line in check.stdout.splitlines() if _norm(line.split(" ", 1)[0]) == DIST]
    assert not ours, "\n".join(ours)


def _where(python: Path, cwd: Path) -> dict:
    code = ("import json, sysconfig, autograder, importlib.metadata as m; from pathlib import Path; "
            "pkg = Path(autograder.__file__).resolve().parent; d = m.distribution('tf-gpu-course-autograder'); "
            "print(json.dumps({'file': autograder.__file__, 'site': sysconfig.get_paths()['purelib'], "
            "'version': d.version, 'files': sorted(str(f) for f in d.files or []), "
            "'top': sorted(p.name for p in Path(sysconfig.get_paths()['purelib']).iterdir())}))")
    return json.loads(_run([python, "-c", code], cwd).stdout.strip().splitlines()[-1])


def _assert_installed_here(where: dict, project: Path) -> None:
    site = Path(where["site"]).resolve()
    assert Path(where["file"]).resolve().is_relative_to(site), where["file"]
    assert not Path(where["file"]).resolve().is_relative_to(ROOT)
    assert "autograder/checks/opbuild.py" in where["files"]
    # every file of the package, data files too (pyproject's package-data must name their kinds)
    sources = {p.relative_to(project).as_posix() for p in (project / "autograder").rglob("*")
               if p.is_file() and "__pycache__" not in p.parts}
    assert not sources - set(where["files"]), f"not installed: {sorted(sources - set(where['files']))}"
    # setuptools discovery takes the package only: no tests/, book/ or solutions/ beside it
    assert {t for t in where["top"] if not t.startswith(("_main_venv", "__pycache__"))} == \
        {"autograder", f"{DIST.replace('-', '_')}-{where['version']}.dist-info"}, where["top"]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A fresh venv with the checkout installed into it non-editably, and a
    working folder outside the repository."""
    base = tmp_path_factory.mktemp("packaging")
    work = base / "work"
    work.mkdir()
    project = base / "project"
    shutil.copytree(ROOT, project, ignore=shutil.ignore_patterns(*NOT_COPIED))
    python = _fresh_venv(base / "venv", work)
    _pip_install(python, project, work)
    where = _where(python, work)
    return {"python": python, "venv": base / "venv", "work": work, "where": where, "project": project}


@pytest.mark.slow  # installs the package into a fresh venv and grades with it
def test_installed_package_checks_and_grades_outside_the_checkout(installed, tmp_path):
    python, venv, work = installed["python"], installed["venv"], installed["work"]
    _assert_installed_here(installed["where"], installed["project"])
    assert installed["where"]["version"] in _run([python, "-m", "autograder", "--version"], work, venv).stdout

    source = tmp_path / "source"
    shutil.copytree(TINY_SOURCE / "tiny", source / "tiny")
    learner = tmp_path / "learner"
    learner.mkdir()
    (learner / "tiny.ipynb").write_bytes(answers()(None))
    shutil.copy(source / "tiny" / "data.txt", learner / "data.txt")
    checked = _run([python, "-m", "autograder", "check", learner / "tiny.ipynb",
                    "--source", source / "tiny" / "tiny.ipynb"], work, venv, ok=False)
    assert checked.returncode == 0, f"check exited {checked.returncode} for a right answer:\n{checked.stdout}\n{checked.stderr[-3000:]}"
    assert "test-double" in checked.stdout and "test-word" in checked.stdout

    submitted = tmp_path / "subs" / "bob" / "tiny"
    submitted.mkdir(parents=True)
    (submitted / "tiny.ipynb").write_bytes(answers(double=WRONG_DOUBLE)(None))
    _run([python, "-m", "autograder", "grade", tmp_path / "subs", "--source", source, "--out", tmp_path / "out",
          "--workers", "1"], work, venv, timeout=600)
    data = json.loads((tmp_path / "out" / "bob" / "tiny" / "results.json").read_text())
    assert {t["name"]: t["score"] for t in data["tests"]} == {"test-double": 0.0, "test-word": 2.0}, data
    assert "hidden-marker" not in json.dumps(data)


@pytest.mark.slow  # installs the package into a fresh venv and grades with it
def test_gradescope_zip_from_an_installed_package_installs_and_grades(installed, tmp_path):
    python, venv, work = installed["python"], installed["venv"], installed["work"]
    zip_path = tmp_path / "autograder.zip"
    _run([python, "-m", "autograder", "gradescope", "tiny", "--source", TINY_SOURCE, "--out", zip_path], work, venv)

    base = tmp_path / "autograder"  # stands in for Gradescope's /autograder
    with zipfile.ZipFile(zip_path) as zf:
        zf.extractall(base / "source")
    for script in ("setup.sh", "run_autograder"):
        (base / "source" / script).chmod(0o755)
    setup = (base / "source" / "setup.sh").read_text()
    assert re.search(r"pip install (--quiet )?/autograder/source/package$", setup, re.MULTILINE), setup
    assert "--hidden-visibility after_published" in (base / "source" / "run_autograder").read_text()
    assert (base / "source" / "package" / "autograder" / "checks" / "opbuild.py").is_file()

    # What setup.sh does, without the network: a venv at /autograder/venv with the bundled package.
    gs_python = _fresh_venv(base / "venv", work)
    _pip_install(gs_python, base / "source" / "package", work)
    where = _where(gs_python, work)
    _assert_installed_here(where, base / "source" / "package")

    (base / "submission").mkdir()
    (base / "submission" / "tiny.ipynb").write_bytes(answers(double=WRONG_DOUBLE)(None))
    env = {"AUTOGRADER_ROOT": str(base)}
    proc = subprocess.run(["bash", str(base / "source" / "run_autograder")], capture_output=True, text=True,
                          cwd=work, env={**_env(), **env}, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads((base / "results" / "results.json").read_text())
    tests = {t["name"]: t for t in data["tests"]}
    # both tiny parts have hidden tests, which the zip's --hidden-visibility (the default, after_published)
    # hides: each is split into its visible tests (0 points, shown at once) and all its tests (its points)
    assert {n: t["score"] for n, t in tests.items()} == {
        "test-double (visible tests)": 0.0, "test-double (all tests)": 0.0,
        "test-word (visible tests)": 0.0, "test-word (all tests)": 2.0}, data
    assert {n: t.get("visibility") for n, t in tests.items()} == {
        "test-double (visible tests)": "visible", "test-double (all tests)": "after_published",
        "test-word (visible tests)": "visible", "test-word (all tests)": "after_published"}, data
    assert "hidden-marker" not in json.dumps(data)


@pytest.mark.slow
def test_exercise_7_builds_its_op_from_the_installed_package(installed, tmp_path):
    """The exercise compiles the learner's kernel with autograder.checks.opbuild,
    from a copy outside the checkout, caching under XDG_CACHE_HOME (not the package)."""
    python, venv, work = installed["python"], installed["venv"], installed["work"]
    shutil.copytree(ROOT / "solutions" / "07_custom_ops", tmp_path / "07_custom_ops")
    env = {**_env(venv), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           # this machine's precompiled prelude, when tests/checks/test_opbuild.py has built it: the
           # learner's compile then takes seconds instead of half a minute; what it proves is the same
           opbuild.PCH_ENV: str(opbuild.prelude_root())}
    env.pop("COURSE_OPS_BUILD_DIR", None)
    proc = subprocess.run([python, "-m", "autograder", "check", "--part", "test-kernel",
                           tmp_path / "07_custom_ops" / "07_custom_ops.ipynb"],
                          cwd=work, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr[-3000:]}"
    assert "test-kernel" in proc.stdout and "4/4" in proc.stdout
    assert not list((Path(installed["where"]["site"]) / "autograder").rglob("*.so")), "a build landed in the package"
