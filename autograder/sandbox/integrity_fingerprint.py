"""Fingerprints of the grader's data and of a locked cell's names, for
:mod:`autograder.sandbox.integrity`: a value that changes when an object is
rebound inside or mutated, and whether a callable was written in a notebook.

``autograder.sandbox.integrity`` re-exports every name here.
"""
from __future__ import annotations

import types
from typing import Any


def _defined_in_notebook(func: Any) -> bool:
    """True for a callable written in a notebook cell (or one that hides where it came from)."""
    target = getattr(func, "__func__", func)
    module = getattr(target, "__module__", None)
    return module in (None, "__main__", "builtins") and not isinstance(target, types.BuiltinFunctionType)


_LEAF_TYPES = (bool, int, str, bytes, type(None), type(Ellipsis))
_MAX_ITEMS = 5000
_MAX_HASH_BYTES = 64 * 2**20


def _array_digest(arr: Any) -> tuple:
    import hashlib

    data = arr.tobytes() if arr.nbytes <= _MAX_HASH_BYTES else b""
    return ("array", str(arr.dtype), tuple(arr.shape), hashlib.blake2b(data, digest_size=16).hexdigest(),
            id(arr) if not data and arr.nbytes else 0)


def fingerprint(obj: Any, depth: int = 0) -> Any:
    """A value that changes when ``obj`` is rebound inside or mutated: functions by
    their code, defaults and closure, containers and arrays by content, other
    objects by identity (and the notebook-defined callables set on them)."""
    if isinstance(obj, _LEAF_TYPES):
        return (type(obj).__name__, obj)
    if isinstance(obj, (float, complex)):
        return (type(obj).__name__, repr(obj))
    if depth > 6 or isinstance(obj, types.ModuleType):
        return ("id", id(obj))
    if isinstance(obj, types.FunctionType):
        cells = tuple(id(_cell_value(c)) for c in (obj.__closure__ or ()))
        return ("function", id(obj), id(obj.__code__), fingerprint(obj.__defaults__, depth + 1),
                fingerprint(obj.__kwdefaults__, depth + 1), cells, id(obj.__globals__))
    if isinstance(obj, types.MethodType):
        return ("method", fingerprint(obj.__func__, depth + 1), id(obj.__self__))
    if isinstance(obj, type):
        return ("class", id(obj), tuple(sorted((k, id(v)) for k, v in vars(obj).items())))
    python_function = getattr(type(obj), "python_function", None)
    if isinstance(python_function, property):  # tf.function: its Python function and compile setting
        inner = vars(obj).get("_python_function")
        return ("tf.function", id(obj), fingerprint(inner, depth + 1), vars(obj).get("_jit_compile"))
    if isinstance(obj, (list, tuple, set, frozenset, dict)):
        items = list(obj.items()) if isinstance(obj, dict) else list(obj)
        if len(items) > _MAX_ITEMS:
            return ("id", id(obj), len(items))
        parts = [fingerprint(i, depth + 1) for i in items]
        if isinstance(obj, (set, frozenset)):
            parts.sort(key=repr)
        return (type(obj).__name__, id(obj) if isinstance(obj, (list, dict, set)) else 0, tuple(parts))
    kind = type(obj).__name__
    if kind == "ndarray" and hasattr(obj, "tobytes"):
        return _array_digest(obj)
    if kind == "EagerTensor":
        try:
            return _array_digest(obj.numpy())
        except Exception:
            return ("id", id(obj))
    import dataclasses

    if dataclasses.is_dataclass(obj):
        return ("dataclass", id(obj), tuple(fingerprint(getattr(obj, f.name, None), depth + 1)
                                            for f in dataclasses.fields(obj)))
    own = vars(obj) if hasattr(obj, "__dict__") and isinstance(getattr(obj, "__dict__", None), dict) else {}
    patched = tuple(sorted(k for k, v in own.items() if callable(v) and _defined_in_notebook(v)))
    return ("object", id(obj), patched)


def _cell_value(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell
        return None
