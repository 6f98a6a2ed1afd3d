"""Gradient checks: a learner's gradient against finite differences or against
a reference implementation, with tolerances that depend on the dtype.

Two ways to write the functions being compared, chosen with ``returns=``:

* ``returns="loss"`` (default): ``fn(*inputs)`` returns the loss (a scalar, or
  any tensor: a non-scalar output is reduced as ``sum(w * out)`` with random
  weights ``w``, the same for both functions, so every element is checked).
  The checker records it on a ``GradientTape`` and differentiates with respect
  to the floating-point inputs (when no ``variables`` are given) and/or the
  ``variables``.  Use it for layers, activations and custom gradients.
* ``returns="loss_and_grads"``: ``fn(*inputs)`` returns ``(loss, grads)``, the
  gradients the learner computed (a list in the order of ``variables``).  Use it
  for training-step code: loss scaling, gradient clipping, loops.

Tolerances: ``|got - expected| <= atol * scale + rtol * |expected|`` elementwise,
with ``scale = max(1, max |expected|)`` so that a large gradient is judged
relative to its size.  ``tolerance_for(dtype)`` gives (rtol, atol); the
numeric (finite-difference) tolerances are looser because the difference
quotient itself carries error (about 1e-4 relative in float32 with the default
step, a few percent in float16 and bfloat16, measured on the build machine).
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

# (rtol, atol): analytic gradient vs analytic gradient of the same dtype.
_ANALYTIC = {
    "float64": (1e-7, 1e-9),
    "float32": (1e-4, 1e-5),
    "float16": (2e-2, 5e-3),
    "bfloat16": (5e-2, 2e-2),
}
# (rtol, atol): analytic vs central differences.  Measured worst errors
# (relative to scale) on sin, tanh^3, softplus, matmul, logsumexp: float64
# 8e-7, float32 1.2e-4, float16 2.8e-2 (step 1/64), bfloat16 4.4e-2 (step 1/16).
_NUMERIC = {
    "float64": (1e-5, 1e-5),
    "float32": (1e-3, 2e-3),
    "float16": (5e-2, 1e-1),
    "bfloat16": (1e-1, 1.5e-1),
}
# Finite-difference step: exactly representable, and large enough that the
# difference is not lost to rounding in 16-bit types.
_DELTA = {"float64": 1 / 1024, "float32": 1 / 1024, "float16": 1 / 64, "bfloat16": 1 / 16}
# Mixed-precision gradients (16-bit compute, float32 variables) vs a float32 run.
_MIXED = {"float16": (5e-2, 2e-2), "bfloat16": (1e-1, 5e-2)}
_PRECISION_ORDER = ("bfloat16", "float16", "float32", "float64")


def _dtype_name(dtype: Any) -> str:
    import tensorflow as tf

    return tf.as_dtype(dtype).name


def tolerance_for(dtype: Any, *, numeric: bool = False) -> tuple[float, float]:
    """(rtol, atol) for comparing gradients of ``dtype``; ``numeric=True`` for
    analytic vs finite differences.  ``atol`` is scaled by max(1, max|expected|)."""
    name = _dtype_name(dtype)
    table = _NUMERIC if numeric else _ANALYTIC
    if name not in table:
        raise ValueError(f"no gradient tolerance for dtype {name}; use one of {', '.join(table)}")
    return table[name]


def _least_precise(names: Sequence[str]) -> str:
    known = [n for n in names if n in _PRECISION_ORDER]
    return min(known, key=_PRECISION_ORDER.index) if known else "float32"


def _compare(
    got: np.ndarray, expected: np.ndarray, rtol: float, atol: float
) -> tuple[bool, float, float, tuple[int, ...]]:
    """(ok, max abs error, max rel error, index of the worst element)."""
    got64, exp64 = np.asarray(got, np.float64), np.asarray(expected, np.float64)
    scale = max(1.0, float(np.max(np.abs(exp64)))) if exp64.size and np.isfinite(exp64).all() else 1.0
    err = np.abs(got64 - exp64)
    err = np.where(np.isnan(err), np.inf, err)
    bound = atol * scale + rtol * np.abs(exp64)
    if not err.size:
        return True, 0.0, 0.0, ()
    excess = err - bound
    idx = tuple(int(i) for i in np.unravel_index(int(np.argmax(excess)), err.shape))
    rel = err / np.maximum(np.abs(exp64), 1e-30)
    return bool((excess <= 0).all()), float(err.max()), float(rel[idx]), idx


def _where(idx: tuple[int, ...]) -> str:
    return f" at index {idx}" if idx else ""


# --- analytic vs finite differences ---------------------------------------------


def assert_gradient_numeric(
    fn: Callable[..., Any],
    inputs: Sequence[Any],
    *,
    rtol: float | None = None,
    atol: float | None = None,
    delta: float | None = None,
    name: str = "gradient",
) -> None:
    """Compare ``fn``'s gradient (its registered or ``tf.custom_gradient`` one)
    with central finite differences, via ``tf.test.compute_gradient``.

    ``fn`` takes the tensors in ``inputs`` as positional arguments and returns
    a tensor of any shape; the whole Jacobian is compared.  Tolerance and
    step default by the least precise input dtype (``tolerance_for(...,
    numeric=True)``).  Keep inputs small: each element costs two calls."""
    import tensorflow as tf

    xs = [tf.convert_to_tensor(x) for x in inputs]
    kind = _least_precise([x.dtype.name for x in xs if x.dtype.is_floating])
    d_rtol, d_atol = _NUMERIC[kind]
    rtol = d_rtol if rtol is None else rtol
    atol = d_atol if atol is None else atol
    step = _DELTA[kind] if delta is None else delta
    theoretical, numerical = tf.test.compute_gradient(fn, xs, delta=step)
    for i, (t, n) in enumerate(zip(theoretical, numerical)):
        if not xs[i].dtype.is_floating:
            continue
        ok, abs_err, rel_err, idx = _compare(t, n, rtol, atol)
        if not ok:
            where = ""
            if idx:
                out_i = np.unravel_index(idx[0], _out_shape(fn, xs)) if len(idx) == 2 else ()
                in_i = np.unravel_index(idx[1], xs[i].shape.as_list() or [1]) if len(idx) == 2 else ()
                where = (
                    f" (worst: d output{tuple(int(v) for v in out_i)} / d input{tuple(int(v) for v in in_i)}: "
                    f"analytic {float(t[idx]):.6g}, numeric {float(n[idx]):.6g})"
                )
            raise AssertionError(
                f"{name} for input {i} ({xs[i].dtype.name}{xs[i].shape.as_list()}) disagrees with finite "
                f"differences: max abs error {abs_err:.3g}, max rel error {rel_err:.3g}{where}; "
                f"tolerance rtol={rtol:g}, atol={atol:g} (x max(1, max|gradient|)) for {kind}. "
                "Check the gradient function's formula."
            )


def _out_shape(fn: Callable[..., Any], xs: Sequence[Any]) -> list[int]:
    """Shape of ``fn(*xs)`` as a list (a scalar counts as one element)."""
    return list(np.shape(np.asarray(fn(*xs)))) or [1]


# --- learner vs reference ------------------------------------------------------------


def _as_tensor_inputs(args: tuple, dtype: Any) -> list[Any]:
    import tensorflow as tf

    out = []
    for a in args:
        if isinstance(a, (tf.Tensor, np.ndarray, float)) or (hasattr(a, "dtype") and hasattr(a, "shape")):
            t = tf.convert_to_tensor(a)
            if dtype is not None and t.dtype.is_floating:
                t = tf.cast(t, dtype)
            out.append(t)
        else:
            out.append(a)
    return out


def _var_name(v: Any, i: int) -> str:
    """Keras 3 variables have a ``path`` ('dense/kernel'); tf.Variables a ``name`` ('w:0')."""
    name = str(getattr(v, "path", None) or getattr(v, "name", None) or f"variable {i}")
    return name[:-2] if name.endswith(":0") else name


def _reduce_loss(out: Any, weights: dict[str, Any]) -> Any:
    """A scalar loss from ``out``: itself, or sum(w * out) with random ``w``
    cached in ``weights`` so both functions get the same ``w``."""
    import tensorflow as tf

    out = tf.convert_to_tensor(out)
    if out.shape.rank == 0:
        return out
    key = str(out.shape.as_list())
    if key not in weights:
        weights[key] = tf.random.normal(tf.shape(out), dtype=tf.float32)
    return tf.reduce_sum(tf.cast(weights[key], out.dtype) * out)


def _grads_of_loss(fn: Callable, args: list, targets: list, weights: dict) -> tuple[Any, list]:
    import tensorflow as tf

    with tf.GradientTape() as tape:  # variables are watched when read
        for t in targets:
            if isinstance(t, tf.Tensor):
                tape.watch(t)
        out = fn(*args)
        loss = _reduce_loss(out, weights)
    return loss, tape.gradient(loss, targets)


def _dense(g: Any) -> Any:
    import tensorflow as tf

    if g is None:
        return None
    if isinstance(g, tf.IndexedSlices):
        g = tf.convert_to_tensor(g)
    return np.asarray(g.numpy() if hasattr(g, "numpy") else g)


def _none_message(name: str, what: str) -> str:
    return (
        f"{name} for {what} is None but the reference's is not: the loss does not depend on it "
        "through differentiable TensorFlow ops. Look for tf.stop_gradient, a cast to an integer, "
        ".numpy() or Python math inside the function, or a loop variable replaced by a Python value."
    )


def _check_lists(
    got: Sequence[Any], expected: Sequence[Any], names: Sequence[str], *, rtol: float, atol: float,
    dtype_name: str, name: str, trial: str, hint: str = "",
) -> None:
    if len(got) != len(expected):
        raise AssertionError(
            f"{name}: got {len(got)} gradients, the reference has {len(expected)} ({trial}); "
            "return one gradient per variable, in the same order."
        )
    for g, e, what in zip(got, expected, names):
        g, e = _dense(g), _dense(e)
        if g is None and e is None:
            continue
        if g is None:
            if not np.any(e):
                continue
            raise AssertionError(_none_message(name, what))
        if e is None:
            e = np.zeros_like(g)
        if g.shape != e.shape:
            raise AssertionError(f"{name} for {what} has shape {list(g.shape)}, the reference's {list(e.shape)} ({trial}).")
        if not np.isfinite(g).all() and np.isfinite(e).all():
            raise AssertionError(
                f"{name} for {what} has {int((~np.isfinite(g)).sum())} inf/NaN values where the reference's "
                f"are finite ({trial}).{hint}"
            )
        ok, abs_err, rel_err, idx = _compare(g, e, rtol, atol)
        if not ok:
            raise AssertionError(
                f"{name} for {what} differs from the reference: max abs error {abs_err:.3g}, "
                f"max rel error {rel_err:.3g}{_where(idx)} (got {float(g[idx]):.6g}, expected {float(e[idx]):.6g}); "
                f"tolerance rtol={rtol:g}, atol={atol:g} (x max(1, max|gradient|)) for {dtype_name} ({trial}).{hint}"
            )


def assert_gradients_match(
    fn: Callable[..., Any],
    reference_fn: Callable[..., Any],
    make_inputs: Callable[[], tuple],
    *,
    variables: Sequence[Any] | None = None,
    reference_variables: Sequence[Any] | None = None,
    dtype: Any = None,
    trials: int = 3,
    name: str = "gradient",
    returns: str = "loss",
    rtol: float | None = None,
    atol: float | None = None,
) -> None:
    """Check ``fn``'s gradients against ``reference_fn``'s on ``trials`` fresh
    inputs from ``make_inputs()`` (a tuple of arguments, given to both).

    See the module docstring for ``returns``.  With ``returns="loss"`` the
    gradients are taken with respect to the floating-point inputs when
    ``variables`` is None, else with respect to ``variables`` (for ``fn``) and
    ``reference_variables`` (for ``reference_fn``; default ``variables``),
    matched by position.  ``dtype`` casts floating inputs before the call and
    sets the tolerance; without it the tolerance follows the least precise
    gradient."""
    import tensorflow as tf

    if returns not in ("loss", "loss_and_grads"):
        raise ValueError(f"returns must be 'loss' or 'loss_and_grads', not {returns!r}")
    ref_vars = list(reference_variables if reference_variables is not None else variables or [])
    own_vars = list(variables or [])
    if len(own_vars) != len(ref_vars):
        raise ValueError(f"{len(own_vars)} variables but {len(ref_vars)} reference_variables")
    for trial in range(1, trials + 1):
        args = make_inputs()
        if not isinstance(args, tuple):
            raise TypeError(f"make_inputs() must return a tuple of arguments, got {type(args).__name__}")
        tensors = _as_tensor_inputs(args, dtype)
        trial_text = f"trial {trial} of {trials}"
        if returns == "loss":
            float_inputs = [
                i for i, t in enumerate(tensors) if isinstance(t, tf.Tensor) and t.dtype.is_floating
            ] if variables is None else []
            names = [f"input {i}" for i in float_inputs] + [f"variable '{_var_name(v, i)}'" for i, v in enumerate(own_vars)]
            weights: dict = {}
            # Each side watches its own copies of the inputs, so they can't share a tape.
            mine = [tf.identity(t) if isinstance(t, tf.Tensor) else t for t in tensors]
            theirs = [tf.identity(t) if isinstance(t, tf.Tensor) else t for t in tensors]
            _, got = _grads_of_loss(fn, mine, [mine[i] for i in float_inputs] + own_vars, weights)
            _, expected = _grads_of_loss(reference_fn, theirs, [theirs[i] for i in float_inputs] + ref_vars, weights)
            if not names:
                raise ValueError("nothing to differentiate: give floating-point inputs or variables")
        else:
            loss, got = fn(*tensors)
            ref_loss, expected = reference_fn(*tensors)
            got, expected = list(got), list(expected)
            names = [f"variable '{_var_name(v, i)}'" for i, v in enumerate(own_vars)] or [
                f"gradient {i}" for i in range(len(expected))
            ]
            if len(names) < len(expected):
                names += [f"gradient {i}" for i in range(len(names), len(expected))]
        if dtype is not None:
            kind = _dtype_name(dtype)
        else:
            kind = _least_precise([_dense(g).dtype.name for g in list(got) + list(expected) if g is not None])
        d_rtol, d_atol = _ANALYTIC.get(kind, _ANALYTIC["float32"])
        _check_lists(
            got, expected, names, rtol=d_rtol if rtol is None else rtol, atol=d_atol if atol is None else atol,
            dtype_name=kind, name=name, trial=trial_text,
        )


# --- mixed precision ------------------------------------------------------------------


def _loss_scale_factor(got: Sequence[Any], expected: Sequence[Any]) -> float | None:
    """If ``got`` looks like ``expected`` times a power of two >= 16 (a loss
    scale left in), return that factor."""
    ratios = []
    for g, e in zip(got, expected):
        g, e = _dense(g), _dense(e)
        if g is None or e is None:
            continue
        mask = np.abs(e) > 1e-3 * max(float(np.max(np.abs(e))), 1e-30)
        if mask.any():
            ratios.append(np.abs(np.asarray(g, np.float64)[mask] / np.asarray(e, np.float64)[mask]))
    if not ratios:
        return None
    r = float(np.median(np.concatenate(ratios)))
    if not np.isfinite(r) or r < 8:
        return None
    power = round(np.log2(r))
    return float(2**power) if abs(np.log2(r) - power) < 0.1 else None


def assert_mixed_precision_gradients(
    fn: Callable[..., Any],
    reference_fn: Callable[..., Any],
    make_inputs: Callable[[], tuple],
    *,
    variables: Sequence[Any] | None = None,
    compute_dtype: str = "float16",
    trials: int = 2,
    name: str = "mixed-precision gradient",
) -> None:
    """Check loss-scaled mixed-precision gradients against float32 ones.

    ``fn(*inputs)`` returns ``(loss, grads)`` computed under a mixed policy
    (16-bit ``compute_dtype``, float32 variables) with loss scaling, and the
    grads already unscaled; ``reference_fn`` returns the same from a float32
    model with the same weights.  Beyond the elementwise comparison (tolerance
    for 16-bit compute), it checks that the gradients are float32 like their
    variables and names a loss scale that was left in."""
    if compute_dtype not in _MIXED:
        raise ValueError(f"compute_dtype must be one of {', '.join(_MIXED)}, not {compute_dtype!r}")
    own_vars = list(variables or [])
    for trial in range(1, trials + 1):
        args = make_inputs()
        if not isinstance(args, tuple):
            raise TypeError(f"make_inputs() must return a tuple of arguments, got {type(args).__name__}")
        _, got = fn(*args)
        _, expected = reference_fn(*args)
        got, expected = list(got), list(expected)
        for i, g in enumerate(got):
            arr = _dense(g)
            what = f"variable '{_var_name(own_vars[i], i)}'" if i < len(own_vars) else f"gradient {i}"
            if arr is not None and arr.dtype != np.float32:
                raise AssertionError(
                    f"{name} for {what} is {arr.dtype}, not float32: under a mixed policy the variables "
                    "stay float32 and so do their gradients. Build the model with a mixed policy "
                    f"('mixed_{compute_dtype}'), not with dtype='{compute_dtype}'."
                )
        factor = _loss_scale_factor(got, expected)
        if factor is not None:
            raise AssertionError(
                f"{name}: the gradients are {factor:g}x the float32 ones (trial {trial} of {trials}): "
                "they still carry the loss scale. Divide them by the scale scale_loss() used "
                "(LossScaleOptimizer.dynamic_scale once built, initial_scale before), or let "
                "optimizer.apply() unscale them."
            )
        names = [f"variable '{_var_name(v, i)}'" for i, v in enumerate(own_vars)]
        names += [f"gradient {i}" for i in range(len(names), len(expected))]
        rtol, atol = _MIXED[compute_dtype]
        _check_lists(
            got, expected, names, rtol=rtol, atol=atol, dtype_name=f"mixed {compute_dtype} vs float32",
            name=name, trial=f"trial {trial} of {trials}",
            hint=f" If only some layers differ, check that they use the mixed policy ({compute_dtype} compute).",
        )


# --- loops --------------------------------------------------------------------------


def assert_loop_gradients_match(
    fn: Any,
    reference_fn: Callable[..., Any],
    make_inputs: Callable[[], tuple],
    *,
    require_graph_loop: bool = True,
    **kwargs: Any,
) -> None:
    """Gradients through a loop: ``fn`` (a ``tf.function``, or a Python
    function that calls one) must compute its result with a graph ``While``
    loop for the first inputs (a loop beside the answer does not count),
    unless ``require_graph_loop=False``, and its gradients must match
    ``reference_fn``'s (keywords as for ``assert_gradients_match``)."""
    if require_graph_loop:
        from autograder.checks.tracing import assert_has_op

        args = make_inputs()
        assert_has_op(fn, "While", *_as_tensor_inputs(args, kwargs.get("dtype")), name=kwargs.get("name"),
                      computes_output=True)
    assert_gradients_match(fn, reference_fn, make_inputs, **kwargs)
