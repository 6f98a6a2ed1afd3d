"""Plain data: what dumps writes, loads reads back exactly; nothing else gets through."""
from __future__ import annotations

import json

import numpy as np
import pytest

from autograder.checks import plain


@pytest.mark.parametrize("value", [
    None, True, 0, -3, 2**70, 1.5, float("inf"), "text", b"\x00\xff", [1, [2, "x"]], (1, (2.0,)),
    {"a": [1, 2], "b": {"c": None}},
])
def test_python_values_round_trip_with_their_exact_types(value):
    back = plain.loads(plain.dumps(value))
    assert back == value and type(back) is type(value)


def test_nan_survives():
    assert np.isnan(plain.loads(plain.dumps(float("nan"))))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool", "float16", "uint8", "complex64"])
def test_arrays_round_trip_read_only(dtype):
    arr = (np.arange(12).reshape(3, 4) % 2).astype(dtype)
    back = plain.loads(plain.dumps(arr))
    assert back.dtype == arr.dtype and back.shape == (3, 4) and np.array_equal(back, arr)
    assert not back.flags.writeable


def test_tensors_arrive_as_arrays_and_dtypes_as_names():
    import tensorflow as tf

    value = {"t": tf.constant([[1.0, 2.0]], tf.bfloat16), "d": tf.float16, "s": tf.TensorShape([None, 3])}
    back = plain.loads(plain.dumps(value))
    assert type(back["t"]) is np.ndarray and back["t"].dtype.name == "bfloat16"
    assert back["t"].astype(np.float32).tolist() == [[1.0, 2.0]]
    assert back["d"] == "float16" and back["s"] == (None, 3)
    rebuilt = plain.loads(plain.dumps(value), tensors=True)
    assert isinstance(rebuilt["t"], tf.Tensor) and rebuilt["d"] is tf.float16


def test_the_learners_side_imports_tensorflow_only_when_a_tensor_arrives():
    """A NumPy-only kernel decodes the judge's plain inputs without paying TensorFlow's import
    (seconds); a tensor node still comes back as a tf.Tensor."""
    import subprocess
    import sys

    program = """
import json, sys, numpy as np
from autograder.checks import plain
back = plain.loads(plain.dumps([1.5, np.arange(3.0), {"k": (2, b"x")}]), tensors=True)
print("tensorflow" in sys.modules, type(back[1]).__name__)
tensor = json.dumps({"tensor": json.loads(plain.dumps(np.arange(2.0)))["array"]})  # how a tf.Tensor travels
back = plain.loads(tensor, tensors=True)
print("tensorflow" in sys.modules, type(back).__name__)
"""
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120,
                         check=True).stdout.split("\n")
    assert out[0] == "False ndarray" and out[1] == "True EagerTensor", out


class _AlwaysEqual(str):
    def __eq__(self, other):
        return True

    __hash__ = str.__hash__


class _Model:
    pass


@pytest.mark.parametrize("value", [_AlwaysEqual("x"), _Model(), {1: "int key"}, np.array(["a"], dtype=object),
                                   lambda: 1])
def test_what_is_not_plain_is_refused(value):
    with pytest.raises(plain.NotPlain):
        plain.dumps(value)


@pytest.mark.parametrize("text", [
    "not json", json.dumps({"object": {"__class__": "os.system"}}),
    json.dumps({"array": {"dtype": "object", "shape": [1], "data": ""}}),
    json.dumps({"array": {"dtype": "float32", "shape": [4], "data": "AAAA"}}),  # 3 bytes for 4 floats
    json.dumps({"tuple": [1], "dict": {}}), json.dumps({"int": "12a"}), 5,
])
def test_loads_accepts_only_what_dumps_writes(text):
    with pytest.raises(plain.BadData):
        plain.loads(text)
