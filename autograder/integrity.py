"""Detect a notebook that tampers with the grader inside its own kernel.

Tests run in the learner's kernel, so learner code could replace what they
rely on: the clock (``time.perf_counter``), TensorFlow or NumPy functions a
check calls, the checks themselves (``autograder.placement.capture``), the
names a test cell uses (``capture = lambda ...``), builtins, or IPython's hooks
(a custom exception handler that swallows failures, an input transformer that
empties test cells).

:func:`take_snapshot` runs in a bootstrap cell **before any learner code**: it
imports the checks modules (and TensorFlow when the assignment uses it) and
records the identity of every function and the ``__code__`` of every Python
function.  :func:`Snapshot.problems` compares the kernel against it; the
sandbox calls it right before and right after each test cell, and a test
whose check finds anything changed scores 0 with a message that starts with
"integrity:" and names what changed.  Once the grader's state has been
tampered with, every later test fails the same way.

:func:`install_guards` adds a Python audit hook (which cannot be removed) that
refuses to open the hidden-test and solution folders and to connect to
anything but this machine: a second line of defence behind the sandbox's
mount and network namespaces, and the only one where those are unavailable.

This is detection inside a process the learner controls: it names the ways
of cheating listed above, which are the ones that need no knowledge of the
grader's internals.  It does not claim to stop someone who reverse-engineers
this module in their notebook.
"""
from __future__ import annotations

import builtins
import importlib
import ipaddress
import json
import os
import pkgutil
import re
import sys
import time
import types
from dataclasses import dataclass, field
from typing import Any

CLOCKS = ("perf_counter", "perf_counter_ns", "time", "time_ns", "monotonic", "monotonic_ns",
          "process_time", "sleep")
# Front ends and the sandbox itself never run inside a learner's kernel.
NOT_CHECK_MODULES = frozenset({
    "__main__", "cli", "check", "doctor", "grade", "sandbox", "sandbox_worker", "release", "gradescope",
    "export", "feedback", "placement_cli", "placement_boot", "benchmarks", "bench", "runner", "notebook",
})
# A module importing one of these at its top is only snapshotted for assignments
# that use TensorFlow: the others should not pay seconds for an import they never use.
HEAVY_IMPORT = re.compile(r"^(?:import|from) (?:tensorflow|keras|starlette|uvicorn|httpx)\b", re.MULTILINE)
# Namespaces whose functions checks call; modules (tf.keras ...) are not walked,
# so lazily loaded submodules never count as a change.
TF_NAMESPACES = ("", "config", "config.experimental", "config.threading", "config.optimizer",
                 "random", "debugging", "math", "linalg", "nn", "test", "dtypes", "autograph")
NUMPY_NAMESPACES = ("", "testing", "random", "linalg")
KERNEL_REBINDS = frozenset({"input", "raw_input"})
USER_MODULE_NAMES = {"tf": "tensorflow", "tensorflow": "tensorflow", "np": "numpy", "numpy": "numpy",
                     "time": "time", "autograder": "autograder"}


def check_module_names(*, heavy: bool = True) -> list[str]:
    """``autograder`` modules that tests import inside the kernel (without
    ``heavy``: only those that import no TensorFlow at their top)."""
    import autograder

    names = []
    for info in pkgutil.iter_modules(autograder.__path__):
        if info.name in NOT_CHECK_MODULES or info.name.startswith("_"):
            continue
        if not heavy:
            path = os.path.join(autograder.__path__[0], f"{info.name}.py")
            try:
                with open(path, encoding="utf-8") as handle:
                    if HEAVY_IMPORT.search(handle.read()):
                        continue
            except OSError:
                continue
        names.append(f"autograder.{info.name}")
    return sorted(names)


def _resolve(root: Any, dotted: str) -> Any:
    obj = root
    for part in filter(None, dotted.split(".")):
        obj = vars(obj).get(part) if isinstance(obj, types.ModuleType) else getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _callables(namespace: Any) -> dict[str, Any]:
    """Public callables of a module, read without triggering lazy loaders."""
    try:
        items = dict(vars(namespace))
    except TypeError:
        return {}
    return {k: v for k, v in items.items()
            if not k.startswith("_") and callable(v) and not isinstance(v, types.ModuleType)}


def _defined_in_notebook(func: Any) -> bool:
    """True for a callable written in a notebook cell (or one that hides where it came from)."""
    target = getattr(func, "__func__", func)
    module = getattr(target, "__module__", None)
    return module in (None, "__main__", "builtins") and not isinstance(target, types.BuiltinFunctionType)


def _code_of(obj: Any) -> Any:
    return getattr(obj, "__code__", None)


@dataclass
class Snapshot:
    """What the grader's world looked like before learner code ran."""

    objects: dict[str, tuple[Any, Any, Any]] = field(default_factory=dict)  # label -> (owner, name, obj)
    codes: dict[str, tuple[Any, Any]] = field(default_factory=dict)  # label -> (function, __code__)
    modules: dict[str, Any] = field(default_factory=dict)
    genuine: dict[str, Any] = field(default_factory=dict)  # public check function name -> object
    builtins: dict[str, Any] = field(default_factory=dict)
    hooks: dict[str, Any] = field(default_factory=dict)

    def _record(self, owner: Any, name: str, label: str) -> None:
        obj = vars(owner).get(name) if isinstance(owner, (types.ModuleType, type)) else getattr(owner, name)
        self.objects[label] = (owner, name, obj)
        code = _code_of(obj)
        if code is not None:
            self.codes[label] = (obj, code)

    def problems(self, user_ns: dict | None = None, names: list[str] | None = None) -> list[str]:
        """One line per change since the snapshot (empty: nothing changed).

        ``names`` are the global names the next test cell uses: only those are
        checked in ``user_ns``, so a learner's own helper that happens to share
        a name with a grader function the tests do not use is not flagged."""
        found: list[str] = []
        for label, (owner, name, obj) in self.objects.items():
            now = (vars(owner).get(name) if isinstance(owner, (types.ModuleType, type))
                   else getattr(owner, name, None))
            if now is not obj:
                found.append(f"{label} was replaced")
        for label, (func, code) in self.codes.items():
            if _code_of(func) is not code:
                found.append(f"the code of {label} was replaced")
        for name, module in self.modules.items():
            if sys.modules.get(name) is not module:
                found.append(f"sys.modules[{name!r}] was replaced")
        for name, obj in self.builtins.items():
            # IPython keeps ``_``, ``__``, ... up to date and ipykernel rebinds
            # ``input`` for every request itself.
            if (name.startswith("_") and name not in ("__import__", "__build_class__")) or name in KERNEL_REBINDS:
                continue
            if vars(builtins).get(name) is not obj:
                found.append(f"the builtin {name} was replaced")
        found += self._hook_problems()
        if user_ns is not None:
            found += self._namespace_problems(user_ns, names)
        return found

    def _hook_problems(self) -> list[str]:
        found = []
        if sys.gettrace() is not self.hooks.get("trace"):
            found.append("a trace function was installed (sys.settrace)")
        if sys.getprofile() is not self.hooks.get("profile"):
            found.append("a profile function was installed (sys.setprofile)")
        shell = self.hooks.get("shell")
        if shell is not None:
            if tuple(getattr(shell, "custom_exceptions", ())) != self.hooks["custom_exceptions"]:
                found.append("IPython's exception handling was changed (set_custom_exc)")
            for attr in ("input_transformers_cleanup", "input_transformers_post", "ast_transformers"):
                if [id(t) for t in getattr(shell, attr, [])] != self.hooks[attr]:
                    found.append(f"IPython's {attr} were changed")
            events = getattr(shell, "events", None)
            callbacks = getattr(events, "callbacks", {}) if events is not None else {}
            for event, funcs in callbacks.items():
                known = self.hooks["events"].get(event, [])
                # Libraries register callbacks too (matplotlib's inline backend
                # flushes figures after each cell); only the notebook's own count.
                if any(id(f) not in known and _defined_in_notebook(f) for f in funcs):
                    found.append(f"an IPython {event} callback was registered by the notebook")
            if getattr(shell, "run_cell", None) != self.hooks["run_cell"]:
                found.append("IPython's run_cell was replaced")
        return found

    def _namespace_problems(self, user_ns: dict, names: list[str] | None) -> list[str]:
        found = []
        wanted = None if names is None else set(names)
        for name, value in list(user_ns.items()):
            if name.startswith("_") or (wanted is not None and name not in wanted):
                continue
            genuine = self.genuine.get(name)
            if genuine is not None and value is not genuine and callable(value):
                owner = getattr(genuine, "__module__", "autograder")
                found.append(f"the notebook's {name} is not the grader's {owner}.{name}")
            module_name = USER_MODULE_NAMES.get(name)
            if module_name and module_name in self.modules and isinstance(value, types.ModuleType) \
                    and value is not self.modules[module_name]:
                found.append(f"the notebook's {name} is not the real {module_name} module")
        return found


def take_snapshot(*, include_tf: bool = False, shell: Any = None) -> Snapshot:
    """Import the checks (and TensorFlow when ``include_tf``) and record them."""
    snap = Snapshot()
    for name in CLOCKS:
        snap._record(time, name, f"time.{name}")
    snap.modules["time"] = time
    for name in check_module_names(heavy=include_tf):
        try:
            module = importlib.import_module(name)
        except Exception:  # a module that cannot import here is never used by tests here
            continue
        snap.modules[name] = module
        for attr, obj in _callables(module).items():
            if getattr(obj, "__module__", None) != name:
                continue
            snap._record(module, attr, f"{name}.{attr}")
            snap.genuine.setdefault(attr, obj)
            if isinstance(obj, type):
                for meth, value in vars(obj).items():
                    if isinstance(value, (types.FunctionType, staticmethod, classmethod, property)):
                        snap._record(obj, meth, f"{name}.{attr}.{meth}")
    snap.modules["autograder"] = sys.modules["autograder"]
    import numpy

    snap.modules["numpy"] = numpy
    for ns in NUMPY_NAMESPACES:
        owner = _resolve(numpy, ns)
        for attr in _callables(owner) if owner is not None else ():
            snap._record(owner, attr, ".".join(filter(None, ("numpy", ns, attr))))
    if include_tf:
        import tensorflow as tf

        snap.modules["tensorflow"] = tf
        for ns in TF_NAMESPACES:
            owner = _resolve(tf, ns)
            for attr in _callables(owner) if owner is not None else ():
                snap._record(owner, attr, ".".join(filter(None, ("tf", ns, attr))))
        from tensorflow.python.framework.ops import EagerTensor  # no tensor made: the runtime must not start yet

        for cls in (tf.Tensor, tf.Variable, EagerTensor):
            for meth in ("numpy", "__array__", "__float__", "__bool__", "__eq__", "device"):
                if meth in vars(cls):
                    snap._record(cls, meth, f"{cls.__name__}.{meth}")
    snap.builtins = dict(vars(builtins))
    snap.hooks = {"trace": sys.gettrace(), "profile": sys.getprofile(), "shell": shell}
    if shell is not None:
        snap.hooks["custom_exceptions"] = tuple(getattr(shell, "custom_exceptions", ()))
        for attr in ("input_transformers_cleanup", "input_transformers_post", "ast_transformers"):
            snap.hooks[attr] = [id(t) for t in getattr(shell, attr, [])]
        events = getattr(shell, "events", None)
        callbacks = getattr(events, "callbacks", {}) if events is not None else {}
        snap.hooks["events"] = {k: [id(f) for f in v] for k, v in callbacks.items()}
        snap.hooks["run_cell"] = getattr(shell, "run_cell", None)
    return snap


def _is_local(address: Any) -> bool:
    if isinstance(address, (str, bytes)):  # AF_UNIX path
        return True
    host = address[0] if isinstance(address, tuple) and address else ""
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
CHANGE_EVENTS = ("os.remove", "os.rename", "os.mkdir", "os.rmdir", "os.chmod", "os.chown", "os.truncate",
                 "os.symlink", "os.link", "os.utime", "shutil.rmtree", "shutil.move")


def _prefixes(paths) -> tuple[str, ...]:
    return tuple(os.path.realpath(os.fsdecode(d)).rstrip(os.sep) + os.sep for d in paths if d)


def install_guards(hidden_dirs: list[str], *, allow: list[str] = (), writable: list[str] = (),
                   block_network: bool = True) -> None:
    """From now on in this process refuse to read ``hidden_dirs`` (except what
    lies under ``allow``: the Python installation), to write or change files
    outside ``writable`` (when given) and to reach the network."""
    hidden, allowed = _prefixes(hidden_dirs), _prefixes(allow) or ("\0",)
    may_write = _prefixes([*writable, "/dev"]) if writable else ()

    def real(path: Any) -> str | None:
        if isinstance(path, (str, bytes, os.PathLike)):
            return os.path.realpath(os.fsdecode(path)) + os.sep
        return None  # a file descriptor: it was checked when it was opened

    def hook(event: str, args: tuple) -> None:
        if event in ("open", "os.listdir", "os.scandir"):
            path = real(args[0]) if args else None
            if path is None:
                return
            if hidden and path.startswith(hidden) and not path.startswith(allowed):
                raise PermissionError(f"the grader does not let notebooks read {os.fsdecode(args[0])}")
            if event == "open" and may_write and not path.startswith(may_write):
                mode, flags = (args[1] if len(args) > 1 else None), (args[2] if len(args) > 2 else 0)
                if (isinstance(mode, str) and any(c in mode for c in "wax+")) or (flags or 0) & WRITE_FLAGS:
                    raise PermissionError(f"notebooks may only write in their own folder, not {os.fsdecode(args[0])}")
        elif may_write and event in CHANGE_EVENTS and args:
            for target in args[:2]:
                path = real(target)
                if path is not None and not path.startswith(may_write):
                    raise PermissionError(f"notebooks may only change files in their own folder, not {target}")
        elif block_network and event in ("socket.connect", "socket.sendto") and len(args) >= 2:
            if not _is_local(args[1]):
                raise PermissionError(f"network access is disabled while grading (tried {args[1]!r})")
        elif block_network and event == "socket.getaddrinfo" and args and not _is_local((args[0],)):
            raise PermissionError(f"network access is disabled while grading (tried to look up {args[0]!r})")

    sys.addaudithook(hook)


def bootstrap_source(token: str, *, hidden_dirs: list[str], include_tf: bool, allow: list[str] = (),
                     writable: list[str] = ()) -> str:
    """The first cell a sandboxed kernel runs, before any learner code."""
    return (
        "def _autograder_bootstrap():\n"
        "    import builtins\n"
        "    import json\n"
        "    from autograder import integrity\n"
        f"    integrity.install_guards({list(hidden_dirs)!r}, allow={list(allow)!r}, writable={list(writable)!r})\n"
        f"    snap = integrity.take_snapshot(include_tf={include_tf!r}, shell=get_ipython())\n"
        "    ns = get_ipython().user_ns\n"
        "    def report(names=None):\n"
        "        return json.dumps(snap.problems(ns, names))\n"
        f"    builtins.__dict__['_autograder_{token}'] = report\n"
        "    snap.builtins = dict(vars(builtins))\n"
        "    profile = None\n"
        f"    if {include_tf!r}:\n"
        "        from autograder.hardware import current_profile\n"
        "        try:\n"
        "            profile = current_profile().to_dict()\n"
        "        except Exception as exc:\n"
        "            profile = {'name': 'unknown', 'error': str(exc)}\n"
        f"    print({token!r} + 'ready' + json.dumps(profile), flush=True)\n"
        "_autograder_bootstrap()\n"
        "del _autograder_bootstrap\n"
    )


def verify_source(token: str, names: list[str] | None = None) -> str:
    """A cell that prints the integrity report after ``token`` (no names left behind)."""
    return (f"print({token!r} + __import__('builtins').__dict__['_autograder_{token}']({names!r}), "
            "flush=True)\n")


def global_names(source: str) -> list[str] | None:
    """Every name a cell's code could look up globally (None if it does not compile)."""
    try:
        code = compile(source, "<test>", "exec")
    except (SyntaxError, ValueError):
        return None
    found: set[str] = set()
    stack = [code]
    while stack:
        current = stack.pop()
        found.update(current.co_names)
        stack.extend(c for c in current.co_consts if isinstance(c, types.CodeType))
    return sorted(found)


def parse_report(text: str, token: str) -> list[str]:
    """The problems a verify cell printed; a missing or garbled answer is itself a problem."""
    for line in text.splitlines():
        if line.startswith(token):
            try:
                problems = json.loads(line[len(token):])
            except json.JSONDecodeError:
                break
            if isinstance(problems, list):
                return [str(p) for p in problems]
            break
    return ["the grader's integrity check did not answer (print, builtins or the kernel's output were changed)"]


def message(problems: list[str]) -> str:
    """The one-line feedback for a test that found the grader tampered with."""
    shown = "; ".join(problems[:5]) + (f"; and {len(problems) - 5} more" if len(problems) > 5 else "")
    return (f"integrity: {shown}. The grader's clock, checks and the functions they use must not be "
            "replaced; remove the code that changes them and resubmit")
