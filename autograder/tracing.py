"""Graph checks: how often a ``tf.function`` traces, whether XLA compiled it,
and which ops its graph holds.

Each check raises ``AssertionError`` with one line that names the function,
what was found and what to change.
"""
from __future__ import annotations

import re
from typing import Any, Iterable, Sequence

# Op types that count as the one asked for: AutoGraph emits the stateless form
# when the loop body has no stateful ops, and a learner asking "is there a
# While?" means either.
OP_ALIASES: dict[str, frozenset[str]] = {
    "While": frozenset({"While", "StatelessWhile"}),
    "If": frozenset({"If", "StatelessIf"}),
    "Case": frozenset({"Case", "StatelessCase"}),
    "PartitionedCall": frozenset({"PartitionedCall", "StatefulPartitionedCall"}),
}

_OP_HINTS = {
    "While": (
        "AutoGraph unrolled the loop at trace time; loop over a tensor (for i in tf.range(n) "
        "with n a tensor, or while on a tensor condition) so it becomes a graph loop"
    ),
    "If": "the condition was a Python bool at trace time; branch on a tensor so AutoGraph emits tf.cond",
}


def _name_of(fn: Any, name: str | None) -> str:
    return name or getattr(fn, "__name__", None) or type(fn).__name__


def _require_tf_function(fn: Any, name: str) -> None:
    if not callable(getattr(fn, "experimental_get_tracing_count", None)):
        raise AssertionError(
            f"{name} is a plain Python {type(fn).__name__}, not a tf.function; "
            "decorate it with @tf.function"
        )


def describe_args(args: Sequence[Any]) -> str:
    """'(float32[2, 3], 5)': what a call passed, as tracing sees it."""
    parts = []
    for a in args:
        shape, dtype = getattr(a, "shape", None), getattr(a, "dtype", None)
        if shape is not None and dtype is not None:
            dname = getattr(dtype, "name", str(dtype))
            dims = ", ".join("None" if d is None else str(d) for d in list(shape))
            parts.append(f"{dname}[{dims}]")
        else:
            text = repr(a)
            parts.append(text if len(text) <= 20 else text[:17] + "...")
    return "(" + ", ".join(parts) + ")"


def count_traces(tf_function: Any, calls: Iterable[tuple], *, name: str | None = None) -> int:
    """Call ``tf_function(*args)`` for each tuple in ``calls`` and return how
    many new traces (concrete functions) those calls caused.  Traces made
    before this call do not count."""
    label = _name_of(tf_function, name)
    _require_tf_function(tf_function, label)
    before = tf_function.experimental_get_tracing_count()
    for args in calls:
        tf_function(*args)
    return tf_function.experimental_get_tracing_count() - before


def assert_traces_at_most(fn: Any, calls: Sequence[tuple], n: int, *, name: str | None = None) -> int:
    """Fail if the calls make ``fn`` trace more than ``n`` times."""
    label = _name_of(fn, name)
    calls = list(calls)
    traces = count_traces(fn, calls, name=label)
    if traces > n:
        shown = ", ".join(describe_args(c) for c in calls[:4]) + (", ..." if len(calls) > 4 else "")
        raise AssertionError(
            f"{label} traced {traces} times for {len(calls)} calls {shown}; at most {n} allowed. "
            "Each new shape, dtype or Python value makes a new graph: give the tf.function an "
            "input_signature with None for the dimensions that vary (or reduce_retracing=True), "
            "and pass numbers as tensors, not Python ints or floats."
        )
    return traces


def assert_xla_compiled(fn: Any, *args: Any, name: str | None = None) -> str:
    """Fail unless ``fn`` is compiled by XLA for ``args``; return its HLO text.

    The HLO comes from ``experimental_get_compiler_ir(*args)(stage="hlo")``,
    which TensorFlow only produces for ``jit_compile=True`` functions, so a
    function that merely looks compiled cannot pass."""
    label = _name_of(fn, name)
    _require_tf_function(fn, label)
    try:
        hlo = fn.experimental_get_compiler_ir(*args)(stage="hlo")
    except Exception as exc:
        text = str(exc)
        if "marked with 'jit_compile=True'" in text:
            raise AssertionError(
                f"{label} is not compiled with XLA: TensorFlow produces no HLO for it. "
                "Use @tf.function(jit_compile=True)."
            ) from None
        raise AssertionError(
            f"{label} is marked jit_compile=True but XLA cannot compile it for {describe_args(args)}: "
            f"{_compile_failure(text)}"
        ) from None
    if "HloModule" not in hlo:
        raise AssertionError(f"{label}: the compiler returned no HLO module for {describe_args(args)}")
    return hlo


def _compile_failure(text: str) -> str:
    """The part of an XLA compile error a learner can act on."""
    unsupported = re.findall(r"No registered '(\w+)' OpKernel for XLA", text)
    if unsupported:
        ops = ", ".join(sorted(set(unsupported)))
        return f"XLA has no kernel for {ops}; move that op out of the compiled function"
    first = text.strip().splitlines()[0] if text.strip() else "unknown error"
    return first if len(first) <= 200 else first[:197] + "..."


def graph_op_types(fn: Any, *args: Any, name: str | None = None) -> set[str]:
    """Op types in ``fn``'s graph for ``args``, including the bodies of nested
    functions (loop and branch bodies, called tf.functions) from the graph's
    function library."""
    label = _name_of(fn, name)
    _require_tf_function(fn, label)
    graph = fn.get_concrete_function(*args).graph
    types = {op.type for op in graph.get_operations()}
    for fdef in graph.as_graph_def().library.function:
        types.update(node.op for node in fdef.node_def)
    return types


def assert_has_op(fn: Any, op_type: str, *args: Any, name: str | None = None, hint: str | None = None) -> None:
    """Fail unless ``fn``'s graph for ``args`` contains ``op_type`` (``"While"``
    also accepts ``StatelessWhile``, ``"If"`` accepts ``StatelessIf``)."""
    label = _name_of(fn, name)
    types = graph_op_types(fn, *args, name=label)
    wanted = OP_ALIASES.get(op_type, frozenset({op_type}))
    if types & wanted:
        return
    advice = hint or _OP_HINTS.get(op_type, f"make the computation produce a {op_type} op")
    raise AssertionError(f"{label} has no {op_type} op in its graph for {describe_args(args)}: {advice}.")


def assert_lacks_op(fn: Any, op_type: str, *args: Any, name: str | None = None, hint: str | None = None) -> None:
    """Fail if ``fn``'s graph for ``args`` contains ``op_type`` (e.g. a
    ``PyFunc`` that sends every step back to Python)."""
    label = _name_of(fn, name)
    found = graph_op_types(fn, *args, name=label) & OP_ALIASES.get(op_type, frozenset({op_type}))
    if found:
        advice = f": {hint}" if hint else ""
        raise AssertionError(
            f"{label} has a {'/'.join(sorted(found))} op in its graph for {describe_args(args)}{advice}."
        )
