"""Plain data: the only values that cross between the learner's kernel and the judge.

A value is *plain* when it is built from ``None``, ``bool``, ``int``, ``float``,
``str``, ``bytes``, lists, tuples, dicts with ``str`` keys, NumPy arrays and
scalars of a numeric or boolean dtype (``bfloat16`` included), TensorFlow
tensors (sent as their values) and TensorFlow dtypes and shapes.  :func:`dumps`
turns one into a JSON string; :func:`loads` turns such a string back, accepting
**only** what :func:`dumps` writes: exact built-in types (a ``str`` subclass
with an ``__eq__`` that always answers ``True`` cannot come out), arrays
rebuilt from their bytes with a dtype from :data:`DTYPES`, nothing called,
nothing imported on the data's say-so.

The judge decodes everything the learner's kernel sends with :func:`loads`, so
no object of the learner's is ever compared, called or trusted by the judge.
"""
from __future__ import annotations

import base64
import json
import math
from typing import Any

import numpy as np

#: The dtypes an array may have on the wire (by NumPy name).
DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64", "complex64", "complex128", "bfloat16")
MAX_DEPTH = 32
MAX_ITEMS = 1_000_000


class NotPlain(TypeError):
    """A value that is not plain data (say, a ``tf.data.Dataset`` or a model)."""


def _np_dtype(name: str) -> np.dtype:
    if name not in DTYPES:
        raise NotPlain(f"an array of dtype {name!r} is not plain data (allowed: {', '.join(DTYPES)})")
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def _encode(value: Any, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise NotPlain("data nested more than 32 levels deep is not plain data")
    kind = type(value)
    if value is None or kind in (bool, str):
        return value
    if kind is int:
        return value if abs(value) < 2**63 else {"int": str(value)}
    if kind is float:
        return value if math.isfinite(value) else {"float": repr(value)}
    if kind is bytes:
        return {"bytes": base64.b64encode(value).decode()}
    if kind in (list, tuple):
        items = [_encode(v, depth + 1) for v in value]
        return items if kind is list else {"tuple": items}
    if kind is dict:
        if not all(type(k) is str for k in value):
            raise NotPlain("a dict is plain data only when its keys are str")
        return {"dict": {k: _encode(v, depth + 1) for k, v in value.items()}}
    return _encode_tensor_like(value)


def _encode_tensor_like(value: Any) -> Any:
    module = type(value).__module__ or ""
    if module.startswith(("tensorflow", "keras")):
        import tensorflow as tf

        if isinstance(value, tf.DType):
            return {"dtype": value.name}
        if isinstance(value, tf.TensorShape):
            return {"shape": None if value.rank is None else [d for d in value.as_list()]}
        if isinstance(value, (tf.Tensor, tf.Variable)) and not isinstance(value, tf.RaggedTensor):
            if value.dtype == tf.string:
                return _encode(value.numpy().tolist(), 1)
            return {"tensor": _array_fields(np.asarray(value.numpy()))}
    if isinstance(value, np.ndarray) or isinstance(value, np.generic):
        arr = np.asarray(value)
        return {"array" if isinstance(value, np.ndarray) else "scalar": _array_fields(arr)}
    if isinstance(value, np.dtype):
        return {"npdtype": _np_dtype(value.name).name}
    raise NotPlain(f"a {type(value).__module__}.{type(value).__qualname__} is not plain data: return arrays, "
                   "numbers, strings, lists, tuples or dicts")


def _array_fields(arr: np.ndarray) -> dict:
    dtype = _np_dtype(arr.dtype.name)
    if arr.size > MAX_ITEMS:
        raise NotPlain(f"an array of {arr.size} items is larger than the {MAX_ITEMS} plain data allows")
    data = np.ascontiguousarray(arr, dtype=dtype).tobytes()
    return {"dtype": dtype.name, "shape": list(arr.shape), "data": base64.b64encode(data).decode()}


def dumps(value: Any) -> str:
    """``value`` as a JSON string; :class:`NotPlain` if it is not plain data."""
    return json.dumps(_encode(value, 0), allow_nan=False, separators=(",", ":"))


class BadData(ValueError):
    """A string that :func:`dumps` did not write."""


def _need(ok: bool, what: str) -> None:
    if not ok:
        raise BadData(what)


def _array(fields: Any) -> np.ndarray:
    _need(type(fields) is dict and set(fields) == {"dtype", "shape", "data"}, "an array needs dtype, shape, data")
    _need(type(fields["dtype"]) is str and fields["dtype"] in DTYPES, f"array dtype {fields['dtype']!r}")
    shape = fields["shape"]
    _need(type(shape) is list and all(type(d) is int and d >= 0 for d in shape), "array shape")
    _need(type(fields["data"]) is str, "array data")
    dtype = _np_dtype(fields["dtype"])
    raw = base64.b64decode(fields["data"], validate=True)
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    _need(count <= MAX_ITEMS and len(raw) == count * dtype.itemsize, "array data does not match its shape")
    arr = np.frombuffer(raw, dtype=dtype).reshape(shape).copy()
    arr.setflags(write=False)
    return arr


def _decode(node: Any, depth: int, tensors: Any) -> Any:
    _need(depth <= MAX_DEPTH, "nested too deep")
    kind = type(node)
    if node is None or kind in (bool, int, float, str):
        return node
    if kind is list:
        return [_decode(v, depth + 1, tensors) for v in node]
    _need(kind is dict and len(node) == 1, f"unexpected {kind.__name__} in plain data")
    (tag, body), = node.items()
    if tag == "tuple":
        _need(type(body) is list, "tuple body")
        return tuple(_decode(v, depth + 1, tensors) for v in body)
    if tag == "dict":
        _need(type(body) is dict, "dict body")
        return {str(k): _decode(v, depth + 1, tensors) for k, v in body.items()}
    if tag == "int":
        _need(type(body) is str and body.lstrip("-").isdigit(), "big int")
        return int(body)
    if tag == "float":
        _need(body in ("nan", "inf", "-inf"), "special float")
        return float(body)
    if tag == "bytes":
        _need(type(body) is str, "bytes body")
        return base64.b64decode(body, validate=True)
    if tag == "array":
        return _array(body)
    if tag == "scalar":
        return _array(body)[()]
    if tag == "tensor":
        arr = _array(body)
        return tensors(arr) if tensors is not None else arr
    if tag == "npdtype":
        return _np_dtype(body)
    if tag in ("dtype", "shape"):
        return _tf_meta(tag, body, tensors)
    raise BadData(f"unknown tag {tag!r} in plain data")


def _tf_meta(tag: str, body: Any, tensors: Any) -> Any:
    if tag == "dtype":
        _need(type(body) is str and (body in DTYPES or body in ("string", "resource", "variant")), "dtype name")
        if tensors is None:
            return body
        import tensorflow as tf

        return tf.dtypes.as_dtype(body)
    _need(body is None or (type(body) is list and all(d is None or type(d) is int for d in body)), "shape")
    if tensors is None:
        return None if body is None else tuple(body)
    import tensorflow as tf

    return tf.TensorShape(body)


def _tf_constant(value: np.ndarray) -> Any:
    """A tensor node rebuilt as a ``tf.constant``: TensorFlow is imported only when one arrives
    (a NumPy-only kernel never pays its import for plain inputs)."""
    import tensorflow as tf

    return tf.constant(value)


def loads(text: Any, *, tensors: bool = False) -> Any:
    """The value :func:`dumps` wrote as ``text``; :class:`BadData` for anything else.

    Tensors come back as read-only NumPy arrays, TensorFlow dtypes as their
    names and shapes as tuples -- unless ``tensors`` is true (the learner's side
    decoding the judge's inputs), when they are rebuilt as TensorFlow objects."""
    _need(type(text) is str, "plain data arrives as a str")
    try:
        node = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise BadData(f"not JSON ({exc.__class__.__name__})") from None
    try:
        return _decode(node, 0, _tf_constant if tensors else None)
    except (ValueError, TypeError, RecursionError) as exc:
        if isinstance(exc, BadData):
            raise
        raise BadData(f"{exc.__class__.__name__}: {exc}") from None
