"""Fresh Python processes that inherit nothing a notebook could plant.

Several checks start a second Python process: the fresh-process SavedModel
check (:mod:`autograder.checks.savedmodel`), placement capture through
:mod:`autograder.checks.placement_boot`, the model server
(:mod:`autograder.checks.serving`) and multi-worker clusters
(:mod:`autograder.checks.distributed`).  They are started from inside the
learner's kernel, so everything that process can steer is the learner's: its
environment (``PYTHONPATH`` with a ``sitecustomize.py`` that Python imports
before any of the check's code, ``PYTHONSTARTUP``, ``PYTHONHOME``,
``PYTHONUSERBASE``, ``LD_PRELOAD``...), its working folder (on ``sys.path``
for ``-c`` and ``-m``) and ``sys.executable``.

So every such child starts through this module:

* :func:`clean_env` is the child's **whole** environment: the names in
  :data:`KEEP_ENV` and nothing else, plus what the check adds; an addition
  that would steer the interpreter or the loader (``PYTHON*``, ``LD_*``) is
  refused.  The loader's search path and ``PATH`` are taken as they were when
  this module was first imported (in a sandboxed kernel: before any learner
  cell ran), and so is the interpreter (``sys.executable``).
* :func:`python_argv` runs Python in isolated mode (``-I``: every ``PYTHON*``
  variable, the user site folder and the script's or working folder on
  ``sys.path`` are ignored), then puts this very ``autograder`` package first on
  ``sys.path`` and runs the module or file the check names, as ``-m``/a script
  would.
* :data:`NEUTRAL_CWD` (``/``) is a working folder no learner can write to, for
  children that need no folder of their own.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

if TYPE_CHECKING:  # imported only where a check asks to confine: it loads libc through ctypes
    from autograder.isolation import Confinement

#: What a fresh process keeps of its parent's environment.  The TF_ and CUDA
#: names keep a child computing as its parent does (log level, oneDNN on/off,
#: the devices it may use); ``AUTOGRADER_PROFILE`` names the hardware profile.
KEEP_ENV = ("PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "TF_CPP_MIN_LOG_LEVEL", "TF_ENABLE_ONEDNN_OPTS",
            "TF_FORCE_GPU_ALLOW_GROWTH", "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES",
            "NVIDIA_DRIVER_CAPABILITIES", "LD_LIBRARY_PATH", "AUTOGRADER_PROFILE")
#: Kept as they were at import: they choose which programs and libraries load.
_LOADER_ENV = ("PATH", "LD_LIBRARY_PATH")
_REFUSED_EXTRA = re.compile(r"^(PYTHON|LD_|DYLD_)")
NEUTRAL_CWD = os.path.abspath(os.sep)
# Taken once, at first import: a later ``sys.executable = ...`` or
# ``os.environ["LD_LIBRARY_PATH"] = ...`` in a notebook does not reach a child.
PYTHON = sys.executable
_LOADER_AT_IMPORT = {name: os.environ[name] for name in _LOADER_ENV if name in os.environ}
# The folder that holds this autograder package (a checkout or site-packages).
PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])

# Run by ``python -I -c``: argv is [root, "module" | "path", target, *args].
_BOOT = (
    "import os, runpy, sys\n"
    "root, kind, target = sys.argv[1:4]\n"
    "del sys.argv[1:4]\n"
    "sys.path.insert(0, root)\n"
    "if kind == 'module':\n"
    "    runpy.run_module(target, run_name='__main__', alter_sys=True)\n"
    "else:\n"
    "    sys.argv[0] = target\n"
    "    sys.path.insert(0, os.path.dirname(os.path.abspath(target)))\n"
    "    runpy.run_path(target, run_name='__main__')\n"
)


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The whole environment of a fresh process: :data:`KEEP_ENV` from this
    one, then ``extra``.  Raises ``ValueError`` for an ``extra`` name that
    steers Python or the loader (``PYTHONPATH``, ``LD_PRELOAD``...)."""
    env = {name: os.environ[name] for name in KEEP_ENV if name in os.environ and name not in _LOADER_ENV}
    env.update(_LOADER_AT_IMPORT)
    for name, value in (extra or {}).items():
        if _REFUSED_EXTRA.match(name):
            raise ValueError(f"a check's fresh process starts with a clean environment: {name} cannot be set "
                             "for it (leave it out)")
        env[str(name)] = str(value)
    return env


def python_argv(target: str, args: Sequence[str] = (), *, kind: str = "module",
                python: str | None = None, options: Sequence[str] = ()) -> list[str]:
    """The command that runs ``target`` -- a module name (``kind="module"``,
    like ``python -m``) or a Python file (``kind="path"``, like ``python
    file.py``, its folder first on ``sys.path``) -- with ``args``, in an
    isolated interpreter that imports this ``autograder`` package.

    ``python`` is the interpreter (default: the one this module was imported
    in); ``options`` go to it before the isolated-mode flag's program."""
    if kind not in ("module", "path"):
        raise ValueError(f"kind must be 'module' or 'path', not {kind!r}")
    return [python or PYTHON, "-I", *options, "-c", _BOOT, PACKAGE_ROOT, kind, target, *map(str, args)]


@dataclass
class Finished:
    """What :func:`run_module` returns: the process's output, and its exit status where it is
    known (a process forked by a zygote is reaped by the zygote: None)."""

    returncode: int | None
    stdout: str
    stderr: str


#: How :func:`run_module` starts its process: None for a new interpreter.  The judge, whose checks
#: start one fresh process per submission for the same module, installs forks of a zygote that
#: imported TensorFlow once (:mod:`autograder.judge.fresh_python`); a learner's kernel never does.
RUNNER: Callable[..., Finished] | None = None

#: Whether :func:`run_module` shuts a process that asks for it in a private root
#: (:func:`autograder.isolation.confine`).  The judge turns it on as it starts: what it loads from a
#: learner (an exported SavedModel) then never runs with the grader's rights.  In a learner's kernel
#: it stays off: that process is already the sandbox, and has only the learner's rights.
CONFINE = False


def run_module(module: str, args: Sequence[str], *, env: Mapping[str, str], timeout: float,
               cwd: str = NEUTRAL_CWD, confine: "Confinement | None" = None) -> Finished:
    """``python -I -m module args`` as :func:`python_argv` starts it, with exactly ``env``, in
    ``cwd``, in a session of its own; its output.  ``subprocess.TimeoutExpired`` (the process
    killed) past ``timeout``.  Started by :data:`RUNNER` when one is installed.

    With ``confine`` (and :data:`CONFINE` on) the process first shuts itself in the private root
    it describes (``python -m autograder.isolation``), where ``cwd`` must exist; it exits with
    status 3 and says why on stderr when the machine allows no namespaces."""
    if confine is not None and CONFINE:
        module, args = "autograder.isolation", [confine.to_json(), module, *args]
    if RUNNER is not None:
        return RUNNER(module, list(map(str, args)), env=dict(env), timeout=timeout, cwd=cwd)
    return run_new_interpreter(module, args, env=env, timeout=timeout, cwd=cwd)


def run_new_interpreter(module: str, args: Sequence[str], *, env: Mapping[str, str], timeout: float,
                        cwd: str = NEUTRAL_CWD) -> Finished:
    """:func:`run_module` in a new interpreter, whatever :data:`RUNNER` is."""
    proc = subprocess.run(python_argv(module, args), capture_output=True, text=True, env=dict(env),
                          timeout=timeout, cwd=cwd, start_new_session=True)
    return Finished(proc.returncode, proc.stdout, proc.stderr)
