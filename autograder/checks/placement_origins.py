"""Which Python calls produce which op types in the placement log: the probes that
measure it and the table read from them (:func:`origin_of`).

:func:`autograder.checks.placement.measure_probe` runs a probe; placement
re-exports every name here; import them from there.
"""
from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass


# --------------------------------------------------------------------------
# Which Python calls produce which ops (measured, see tests/checks/test_placement.py)


@dataclass(frozen=True)
class OriginProbe:
    """A Python call and the op types it is measured to log.

    ``setup`` runs before the capture, ``code`` inside it; both see ``tf`` and
    ``keras``.  In ``ops`` an entry ``"A|B"`` is met by either op (TF's oneDNN CPU
    build runs ``_MklMatMul`` where a GPU runs ``MatMul``) and ``*`` is a
    wildcard.  ``absent`` lists ops the call no longer logs.
    """

    call: str
    code: str
    ops: tuple[str, ...]
    setup: str = ""
    absent: tuple[str, ...] = ()


_VAR = "v = tf.Variable([1.0, 2.0])"
_DENSE = "layer = keras.layers.Dense(3)\nlayer.build((None, 2))"
_GRADS = (
    _DENSE
    + "\nwith tf.GradientTape() as tape:\n    loss = tf.reduce_sum(layer(tf.ones((1, 2))))"
    + "\ngrads = tape.gradient(loss, layer.trainable_variables)"
)

ORIGIN_PROBES: tuple[OriginProbe, ...] = (
    OriginProbe("tf.Variable(initial_value)", _VAR, ("VarHandleOp", "AssignVariableOp"),
                absent=("VarIsInitializedOp",)),
    OriginProbe("v.assign(value)", "v.assign([3.0, 4.0])", ("AssignVariableOp",), setup=_VAR),
    OriginProbe("v.assign_add(delta)", "v.assign_add([1.0, 1.0])", ("AssignAddVariableOp",), setup=_VAR),
    OriginProbe("v.assign_sub(delta)", "v.assign_sub([1.0, 1.0])", ("AssignSubVariableOp",), setup=_VAR),
    OriginProbe("v.read_value()", "v.read_value()", ("ReadVariableOp", "Identity"), setup=_VAR),
    OriginProbe("v.numpy()", "v.numpy()", ("ReadVariableOp",), setup=_VAR),
    OriginProbe("tf.matmul(x, v) (any op that uses v)", "tf.matmul(tf.ones((1, 2)), tf.reshape(v, (2, 1)))",
                ("ReadVariableOp", "MatMul|_MklMatMul"), setup=_VAR),
    OriginProbe("v.is_initialized()", "v.is_initialized()", ("VarIsInitializedOp",), setup=_VAR),
    OriginProbe("tf.identity(x)", "tf.identity(x)", ("Identity",), setup="x = tf.ones((2,)) * 2.0"),
    OriginProbe("a Python value given to an op, e.g. v.assign_add([1.0, 1.0])", "v.assign_add([1.0, 1.0])",
                ("_EagerConst",), setup=_VAR),
    OriginProbe("tf.constant(value) inside tf.device(...)",
                "with tf.device('/GPU:0'):\n    c = tf.constant([1.0, 2.0])", ("_EagerConst",)),
    OriginProbe("tf.zeros(shape) / zeros initializer", "tf.zeros((2, 2))", ("Fill",)),
    OriginProbe("keras Dense(...).build(input_shape)", _DENSE,
                ("VarHandleOp", "AssignVariableOp", "StatelessRandomUniformV2", "Fill")),
    OriginProbe("layer(x) for a built keras Dense layer", "layer(tf.ones((1, 2)))",
                ("ReadVariableOp", "MatMul|_MklMatMul", "BiasAdd"), setup=_DENSE),
    OriginProbe("tape.gradient(loss, layer.trainable_variables)",
                "with tf.GradientTape() as tape:\n    loss = tf.reduce_sum(layer(tf.ones((1, 2))))\n"
                "tape.gradient(loss, layer.trainable_variables)",
                ("BiasAddGrad", "MatMul|_MklMatMul"), setup=_DENSE),
    OriginProbe("keras SGD optimizer.apply_gradients(...)",
                "opt.apply_gradients(zip(grads, layer.trainable_variables))",
                ("ReadVariableOp", "AssignSubVariableOp", "AssignVariableOp"),
                setup=_GRADS + "\nopt = keras.optimizers.SGD(0.1)"),
    OriginProbe("keras Adam optimizer.apply_gradients(...), first step",
                "opt.apply_gradients(zip(grads, layer.trainable_variables))",
                ("VarHandleOp", "AssignAddVariableOp", "AssignSubVariableOp"),
                setup=_GRADS + "\nopt = keras.optimizers.Adam(0.1)"),
    OriginProbe("calling a tf.function (op name: __inference_<function name>_<n>)",
                "f(tf.constant(1.0))", ("__inference_f_*",),
                setup="@tf.function(autograph=False)\ndef f(x):\n    return x + 1.0"),
)


def _build_origins(probes: Iterable[OriginProbe]) -> dict[str, str]:
    calls: dict[str, list[str]] = {}
    for probe in probes:
        for entry in probe.ops:
            for op in entry.split("|"):
                key = "__inference_*" if op.startswith("__inference_") else op
                calls.setdefault(key, [])
                if probe.call not in calls[key]:
                    calls[key].append(probe.call)
    return {op: "; ".join(found) for op, found in calls.items()}


#: Op type -> the Python calls measured to produce it (from ORIGIN_PROBES).
OP_ORIGINS: dict[str, str] = _build_origins(ORIGIN_PROBES)


def origin_of(op_type: str) -> str | None:
    """The typical Python calls for an op type, or None if none is documented."""
    if op_type in OP_ORIGINS:
        return OP_ORIGINS[op_type]
    for pattern, calls in OP_ORIGINS.items():
        if "*" in pattern and fnmatch.fnmatchcase(op_type, pattern):
            return calls
    return None


def probe_ops_missing(probe: OriginProbe, seen: Iterable[str]) -> list[str]:
    """The entries of ``probe.ops`` that no op in ``seen`` satisfies."""
    seen = set(seen)
    return [
        entry for entry in probe.ops
        if not any(fnmatch.fnmatchcase(op, alt) for alt in entry.split("|") for op in seen)
    ]
