"""Dtype checks for mixed precision: a layer's policy, an output's dtype, a
variable's dtype.  Each raises ``AssertionError`` with one line saying what
was found, what was expected and how to get it."""
from __future__ import annotations

from typing import Any

_POLICY_HINT = (
    "set keras.mixed_precision.set_global_policy({want!r}) before building the model, "
    "or pass dtype={want!r} to the layer"
)


def _dtype_name(dtype: Any) -> str:
    """'float16' for tf.float16, np.float16, 'float16' (Keras 3 uses strings)."""
    import tensorflow as tf

    try:
        return tf.as_dtype(dtype).name
    except TypeError:
        return str(dtype)


def _label(obj: Any, what: str | None) -> str:
    if what:
        return what
    name = getattr(obj, "name", None)
    kind = type(obj).__name__
    return f"{kind} {name!r}" if name else kind


def assert_policy(model_or_layer: Any, policy: str, *, what: str | None = None) -> None:
    """Fail unless ``model_or_layer.dtype_policy`` is ``policy`` (e.g.
    ``"mixed_float16"``)."""
    label = _label(model_or_layer, what)
    current = getattr(model_or_layer, "dtype_policy", None)
    if current is None:
        raise AssertionError(f"{label} has no dtype policy: pass a Keras layer or model")
    if current.name != policy:
        raise AssertionError(
            f"{label} uses dtype policy {current.name!r} (compute {current.compute_dtype}, variables "
            f"{current.variable_dtype}); expected {policy!r}: " + _POLICY_HINT.format(want=policy) + "."
        )


def assert_output_dtype(tensor: Any, dtype: Any, *, what: str = "output") -> None:
    """Fail unless ``tensor`` (a tensor, array or Keras tensor) has ``dtype``."""
    got = getattr(tensor, "dtype", None)
    if got is None:
        raise AssertionError(f"{what} is a {type(tensor).__name__}, not a tensor; return the tensor itself")
    got_name, want_name = _dtype_name(got), _dtype_name(dtype)
    if got_name == want_name:
        return
    hint = ""
    if want_name == "float32" and got_name in ("float16", "bfloat16"):
        hint = (
            " Under mixed precision keep the last layer in float32 (dtype='float32', or a final "
            "keras.layers.Activation('linear', dtype='float32')) so the softmax and the loss are "
            "computed in float32."
        )
    raise AssertionError(f"{what} has dtype {got_name}; expected {want_name}.{hint}")


def assert_variable_dtype(variable_or_layer: Any, dtype: Any, *, what: str | None = None) -> None:
    """Fail unless the variable, or every weight of the layer/model, has
    ``dtype`` (under a mixed policy variables stay float32)."""
    weights = getattr(variable_or_layer, "weights", None)
    variables = list(weights) if weights is not None and not hasattr(variable_or_layer, "assign") else [variable_or_layer]
    if not variables:
        raise AssertionError(f"{_label(variable_or_layer, what)} has no variables yet: build it (call it once) first")
    want_name = _dtype_name(dtype)
    for v in variables:
        got_name = _dtype_name(v.dtype)
        if got_name != want_name:
            vname = getattr(v, "path", None) or getattr(v, "name", "variable")
            owner = f"{what}: " if what else ""
            hint = (
                " A mixed policy keeps variables in float32 and computes in 16 bits; "
                f"dtype={got_name!r} makes the variables {got_name} too."
                if want_name == "float32" and got_name in ("float16", "bfloat16")
                else ""
            )
            raise AssertionError(f"{owner}variable {vname!r} has dtype {got_name}; expected {want_name}.{hint}")


_MATMUL_OPS = ("MatMul", "BatchMatMul", "BatchMatMulV2", "BatchMatMulV3", "_FusedMatMul", "Einsum")


def matmul_dtypes(fn: Any, *args: Any) -> list[str]:
    """The dtypes of the matrix multiplications that ``fn(*args)`` runs, read
    from the graph TensorFlow traces for that call (functions it calls
    included), in graph order: what executes, not what a layer says about
    itself."""
    import tensorflow as tf

    concrete = tf.function(lambda *a: fn(*a)).get_concrete_function(*args)
    graph_def = concrete.graph.as_graph_def()
    nodes = list(graph_def.node)
    for function in graph_def.library.function:
        nodes += list(function.node_def)
    return _matmul_dtypes_of(nodes)


def _matmul_dtypes_of(nodes: Any) -> list[str]:
    import tensorflow as tf

    return [tf.as_dtype(node.attr["T"].type).name for node in nodes
            if node.op in _MATMUL_OPS and "T" in node.attr]


def _count_in(found: list[str], want: str) -> tuple[int, str]:
    """How many of the matmul dtypes ``found`` are ``want``, and all of them for a message."""
    return sum(1 for d in found if d == want), ", ".join(found) if found else "none"


def _policy_hint_for(compute_dtype: str) -> str:
    """How to get a policy that computes in ``compute_dtype`` (16-bit types: the mixed policy)."""
    policy = f"mixed_{compute_dtype}" if compute_dtype in ("float16", "bfloat16") else compute_dtype
    return _POLICY_HINT.format(want=policy) + "."


def assert_compute_dtype(model: Any, x: Any, dtype: Any, *, at_least: int = 1, what: str | None = None) -> None:
    """Fail unless calling ``model(x)`` runs at least ``at_least`` matrix
    multiplications in ``dtype`` (judged from the traced graph of the call, so
    a layer that only claims a policy does not pass)."""
    want = _dtype_name(dtype)
    count, seen = _count_in(matmul_dtypes(model, x), want)
    if count < at_least:
        raise AssertionError(
            f"{_label(model, what)} runs {count} matrix multiplication(s) in {want} when called, expected at least "
            f"{at_least} (the matmuls it runs are in: {seen}). Its layers must compute under the policy, not only "
            "name it: " + _policy_hint_for(want)
        )


def step_matmul_dtypes(calls: Any) -> list[str]:
    """The dtypes of the matrix multiplications in what the recorded
    ``tf.function`` calls ran (``autograder.checks.tracing.record_fit`` or
    ``record_calls``): their concrete functions and every function those
    call, e.g. the train step ``model.fit`` executed."""
    from autograder.checks.tracing import function_defs_run

    nodes = [node for fdef in function_defs_run(calls) for node in fdef.node_def]
    return _matmul_dtypes_of(nodes)


def assert_step_compute_dtype(calls: Any, dtype: Any, *, at_least: int = 1, what: str = "the train step") -> None:
    """Fail unless the recorded calls (the train step ``model.fit`` ran, from
    ``record_fit`` or ``assert_fit_compiled``) ran at least ``at_least``
    matrix multiplications in ``dtype``: forward and backward passes in the
    policy's compute dtype, judged from the graphs that executed."""
    want = _dtype_name(dtype)
    count, seen = _count_in(step_matmul_dtypes(calls), want)
    if count < at_least:
        raise AssertionError(
            f"{what} ran {count} matrix multiplication(s) in {want}, expected at least {at_least} "
            f"(the matmuls it ran are in: {seen}). Build the model's layers under the policy so that "
            "training computes in it: " + _policy_hint_for(want)
        )
