"""Detect a notebook that tampers with the grader inside its own kernel.

Tests run in the learner's kernel, so learner code could replace what they
rely on: the clock (``time.perf_counter``), TensorFlow or NumPy functions a
check calls, the checks themselves (``autograder.checks.placement.capture``), the
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
import functools
import importlib
import os
import pkgutil
import re
import sys
import time
import types
from dataclasses import dataclass, field
from typing import Any

# Fingerprints, the audit hook and the kernel cells live in their own modules;
# every name stays importable from here.
from autograder.sandbox.integrity_cells import (  # noqa: F401
    bootstrap_source, global_names, message, parse_report, verify_source,
)
from autograder.sandbox.integrity_fingerprint import (  # noqa: F401
    _LEAF_TYPES, _MAX_HASH_BYTES, _MAX_ITEMS, _array_digest, _cell_value, _defined_in_notebook, fingerprint,
)
from autograder.sandbox.integrity_guards import (  # noqa: F401
    CHANGE_EVENTS, WRITE_FLAGS, _is_local, _prefixes, install_guards,
)

CLOCKS = ("perf_counter", "perf_counter_ns", "time", "time_ns", "monotonic", "monotonic_ns",
          "process_time", "sleep")
# A module importing one of these at its top is only snapshotted for assignments
# that use TensorFlow: the others should not pay seconds for an import they never use.
HEAVY_IMPORT = re.compile(r"^(?:import|from) (?:tensorflow|keras|starlette|uvicorn|httpx)\b", re.MULTILINE)
# Namespaces whose functions checks call; modules (tf.keras ...) are not walked,
# so lazily loaded submodules never count as a change.
TF_NAMESPACES = ("", "config", "config.experimental", "config.threading", "config.optimizer",
                 "random", "debugging", "math", "linalg", "nn", "test", "dtypes", "autograph")
NUMPY_NAMESPACES = ("", "testing", "random", "linalg")
# Module data a check sets once, lazily, on first use (a probe's answer): not a change.
LAZY_STATE = {"autograder.checks.placement": ("_eager_logging_works",),
              "autograder.checks.probe": ("_STAGED", "JUDGE_LEARNER")}  # the probes' own working state
# Standard modules the integrity report and the checks compute with (a patched
# json.dumps could make the report say "nothing changed").
STDLIB_USED = ("json", "hashlib", "dataclasses", "types", "ast", "math", "statistics", "inspect", "re",
               "threading", "copy", "functools")
KERNEL_REBINDS = frozenset({"input", "raw_input"})
USER_MODULE_NAMES = {"tf": "tensorflow", "tensorflow": "tensorflow", "np": "numpy", "numpy": "numpy",
                     "time": "time", "autograder": "autograder"}


def check_module_names(*, heavy: bool = True) -> list[str]:
    """The modules of ``autograder.checks`` (what tests import inside the kernel);
    without ``heavy``: only those that import no TensorFlow at their top.

    Derived from the package layout: a new check module is protected by being there."""
    from autograder import checks

    names = []
    for info in pkgutil.iter_modules(checks.__path__):
        if info.name.startswith("_"):
            continue
        if not heavy:
            path = os.path.join(checks.__path__[0], f"{info.name}.py")
            try:
                with open(path, encoding="utf-8") as handle:
                    if HEAVY_IMPORT.search(handle.read()):
                        continue
            except OSError:
                continue
        names.append(f"{checks.__name__}.{info.name}")
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


def _notebook_made(value: Any) -> bool:
    """A class attribute written by the notebook (a function, or one wrapped as a method or property)."""
    if isinstance(value, (staticmethod, classmethod)):
        value = value.__func__
    elif isinstance(value, property):
        value = value.fget
    # C-level slots and descriptors (EagerTensor's methods) have no __module__: they are not notebook code.
    if not isinstance(value, (types.FunctionType, types.MethodType, functools.partial)):
        return False
    return _defined_in_notebook(value)


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
    data: dict[str, tuple[Any, Any]] = field(default_factory=dict)  # label -> (object, fingerprint)
    frozen: dict[str, tuple[str, Any, Any]] = field(default_factory=dict)  # name -> (cell label, object, fingerprint)
    frozen_classes: dict[str, tuple[type, dict]] = field(default_factory=dict)  # class label -> (class, vars)

    def freeze(self, user_ns: dict, names: list[str], label: str) -> None:
        """Record what ``names`` refer to now: a locked cell (``label``) just bound them.

        A name written ``"state:NAME"`` is state the exercise's own functions
        update (a call counter): only its identity is frozen, not its content."""
        for entry in names:
            state = entry.startswith("state:")
            name = entry[len("state:"):] if state else entry
            if name not in user_ns:
                self.frozen.pop(name, None)
                continue
            obj = user_ns[name]
            self.frozen[name] = (label, obj, None if state else fingerprint(obj))
            for cls in type(obj).__mro__:
                if (getattr(cls, "__module__", "") or "").startswith(("tensorflow", "keras")):
                    key = f"{cls.__module__}.{cls.__qualname__}"
                    self.frozen_classes.setdefault(key, (cls, dict(vars(cls))))

    def _frozen_problems(self, user_ns: dict) -> list[str]:
        found = []
        for name, (label, obj, print_) in self.frozen.items():
            if name not in user_ns or user_ns[name] is not obj:
                found.append(f"{name!r}, bound by the locked {label}, was rebound")
            elif print_ is not None and fingerprint(obj) != print_:
                found.append(f"{name!r}, bound by the locked {label}, was changed")
        for key, (cls, attrs) in self.frozen_classes.items():
            # TensorFlow itself swaps some methods lazily (operator overloads); only what the
            # notebook wrote counts.
            changed = [v for k, v in vars(cls).items() if attrs.get(k) is not v and _notebook_made(v)]
            if changed:
                found.append(f"the class {key} was patched")
        return found

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
        for label, (obj, print_) in self.data.items():
            if fingerprint(obj) != print_:
                found.append(f"{label} was changed")
        found += self._hook_problems()
        if user_ns is not None:
            found += self._namespace_problems(user_ns, names)
            found += self._frozen_problems(user_ns)
        return found

    def _hook_problems(self) -> list[str]:
        found = []
        if sys.gettrace() is not self.hooks.get("trace"):
            found.append("a trace function was installed (sys.settrace)")
        found += [f"the kernel guard refused: {why}" for why in self.hooks.get("refused", list)()]
        if self.hooks.get("traces_set", lambda: 0)():
            found.append("a trace or profile function was set (sys.settrace/sys.setprofile), which can skip "
                         "a test's lines")
        import threading

        for thread in threading.enumerate():
            target = getattr(thread, "_target", None) or getattr(type(thread), "run", None)
            if thread.is_alive() and target is not None and _defined_in_notebook(target) \
                    and thread is not threading.main_thread():
                found.append(f"a thread the notebook started ({thread.name}) is running during the tests")
        if sys.getprofile() is not self.hooks.get("profile"):
            found.append("a profile function was installed (sys.setprofile)")
        shell = self.hooks.get("shell")
        if shell is not None and (getattr(shell, "user_ns", None) is not self.hooks["user_ns"]
                                  or getattr(shell, "user_global_ns", None) is not self.hooks["user_global_ns"]):
            found.append("IPython's namespace was replaced")
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
            for name in sorted({k for k, v in vars(shell).items() if callable(v)} - self.hooks.get("instance", set())):
                found.append(f"IPython's {name} was replaced on the shell")
            kernel = getattr(shell, "kernel", None)
            if kernel is not None and any(_defined_in_notebook(v) for v in vars(kernel).values() if callable(v)):
                found.append("the kernel's request handling was replaced")
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


def _record_methods(snap: Snapshot, cls: type, label: str) -> None:
    """The methods, static and class methods and properties ``cls`` itself defines,
    each by identity and code under ``<label>.<name>``."""
    for meth, value in vars(cls).items():
        if isinstance(value, (types.FunctionType, staticmethod, classmethod, property)):
            snap._record(cls, meth, f"{label}.{meth}")


def _record_module(snap: Snapshot, module: types.ModuleType, name: str) -> None:
    """Every attribute of a grader module, private ones included: functions and
    classes by identity and code (a class's methods too), data by fingerprint."""
    for attr, obj in list(vars(module).items()):
        if (attr.startswith("__") and attr.endswith("__")) or attr in LAZY_STATE.get(name, ()):
            continue
        snap._record(module, attr, f"{name}.{attr}")
        if isinstance(obj, type) and getattr(obj, "__module__", None) == name:
            _record_methods(snap, obj, f"{name}.{attr}")
        elif not callable(obj) and not isinstance(obj, types.ModuleType):
            snap.data[f"{name}.{attr}"] = (obj, fingerprint(obj))


_TF_CHAIN = re.compile(r"\btf\.([A-Za-z_][\w]*(?:\.[A-Za-z_][\w]*)*)")


def tf_attributes_used(module_names: list[str]) -> set[str]:
    """Dotted ``tf.`` attribute chains the grader's modules call (read from their source)."""
    chains: set[str] = set()
    for name in module_names:
        module = sys.modules.get(name)
        path = getattr(module, "__file__", None)
        if not path:
            continue
        try:
            with open(path, encoding="utf-8") as handle:
                chains.update(_TF_CHAIN.findall(handle.read()))
        except OSError:
            continue
    return chains


def _record_tf_chain(snap: Snapshot, tf: Any, chain: str) -> None:
    owner, label = tf, "tf"
    for part in chain.split("."):
        try:
            obj = vars(owner).get(part) if isinstance(owner, types.ModuleType) else getattr(owner, part, None)
        except Exception:
            return
        if obj is None or (not isinstance(owner, types.ModuleType) and not isinstance(owner, type)):
            return
        label = f"{label}.{part}"
        if label not in snap.objects and not isinstance(obj, types.ModuleType):  # modules load lazily
            snap._record(owner, part, label)
        if isinstance(obj, type):
            _record_methods(snap, obj, label)
        owner = obj


def _shell_classes(shell: Any) -> list[type]:
    """IPython's shell and kernel classes, whose methods decide how a cell runs and fails."""
    classes = list(type(shell).__mro__)
    kernel = getattr(shell, "kernel", None)
    if kernel is not None:
        classes += list(type(kernel).__mro__)
    return [c for c in classes if (getattr(c, "__module__", "") or "").startswith(("IPython", "ipykernel"))]


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
        _record_module(snap, module, name)
        for attr, obj in _callables(module).items():
            if getattr(obj, "__module__", None) != name:
                continue
            snap.genuine.setdefault(attr, obj)  # its class methods: recorded by _record_module
    snap.modules["autograder"] = sys.modules["autograder"]
    import numpy

    snap.modules["numpy"] = numpy
    for name in STDLIB_USED:
        module = importlib.import_module(name)
        snap.modules[name] = module
        for attr in _callables(module):
            snap._record(module, attr, f"{name}.{attr}")
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
        for chain in sorted(tf_attributes_used([m for m in snap.modules if m.startswith("autograder.")])):
            _record_tf_chain(snap, tf, chain)
        from tensorflow.python.eager.polymorphic_function.polymorphic_function import Function
        from tensorflow.python.framework.ops import EagerTensor  # no tensor made: the runtime must not start yet

        for cls in (Function, tf.types.experimental.ConcreteFunction, tf.GradientTape):
            _record_methods(snap, cls, cls.__name__)

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
        snap.hooks["user_ns"] = getattr(shell, "user_ns", None)
        snap.hooks["user_global_ns"] = getattr(shell, "user_global_ns", None)
        for cls in _shell_classes(shell):
            _record_methods(snap, cls, f"{cls.__module__}.{cls.__qualname__}")
        snap.hooks["instance"] = {k for k, v in vars(shell).items() if callable(v)}
    return snap


