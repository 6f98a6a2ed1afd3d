"""Graph checks: how often a ``tf.function`` traces, whether XLA compiled what
ran, and which ops a graph holds (and which of them compute its outputs).

Every check judges what **executed**: while the checked callable runs, the
grader records each top-level call of TensorFlow's own function type
(``tf.function`` objects, ``polymorphic_function.Function``) through the
class's genuine ``__call__`` (kept from when this module was imported, before
any learner code).  So

* a ``tf.function`` passes, and so does a plain Python function that calls
  one (a wrapper): its calls are shown to run that function's work;
* an object that merely has an ``experimental_get_tracing_count`` or an
  ``experimental_get_compiler_ir`` method runs no ``tf.function`` and fails;
* "compiled by XLA" means the concrete function that ran carries XLA's
  must-compile attribute (``jit_compile=True``, or a called function that
  does), and the callable's result changes when the compiled function's
  outputs are perturbed: its answer comes from the compiled work;
* tracing counts are read from TensorFlow's own class methods, and for a
  ``tf.function`` from a fresh copy of it (``Function._clone``), so a check's
  verdict does not depend on what the learner called before.

Each check raises ``AssertionError`` with one line that names the function,
what was found and what to change.
"""
from __future__ import annotations

import contextlib
import re
import threading
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Sequence

import numpy as np
import tensorflow as tf
from tensorflow.python.eager.polymorphic_function.polymorphic_function import Function as _Function

# The genuine methods, taken when this module is imported (before learner code).
_CALL = _Function.__call__
_COUNT = _Function.experimental_get_tracing_count
_CONCRETE = _Function.get_concrete_function
_COMPILER_IR = _Function.experimental_get_compiler_ir
_CLONE = _Function._clone

# Op types that count as the one asked for: AutoGraph emits the stateless form
# when the loop body has no stateful ops, and a learner asking "is there a
# While?" means either.
OP_ALIASES: dict[str, frozenset[str]] = {
    "While": frozenset({"While", "StatelessWhile"}),
    "If": frozenset({"If", "StatelessIf"}),
    "Case": frozenset({"Case", "StatelessCase"}),
    "PartitionedCall": frozenset({"PartitionedCall", "StatefulPartitionedCall"}),
}
#: Ops that hand a graph's work back to the Python interpreter.
PYTHON_OPS = frozenset({"PyFunc", "PyFuncStateless", "EagerPyFunc"})
_MUST_COMPILE = "_XlaMustCompile"

_OP_HINTS = {
    "While": (
        "AutoGraph unrolled the loop at trace time; loop over a tensor (for i in tf.range(n) "
        "with n a tensor, or while on a tensor condition) so it becomes a graph loop"
    ),
    "If": "the condition was a Python bool at trace time; branch on a tensor so AutoGraph emits tf.cond",
}


def _name_of(fn: Any, name: str | None) -> str:
    return name or getattr(fn, "__name__", None) or type(fn).__name__


def is_tf_function(obj: Any) -> bool:
    """True for TensorFlow's own ``tf.function`` type (not a subclass, not a look-alike)."""
    return type(obj) is _Function


def describe_args(args: Sequence[Any]) -> str:
    """'(float32[2, 3], 5)': what a call passed, as tracing sees it."""
    parts = []
    for a in args:
        shape, dtype = getattr(a, "shape", None), getattr(a, "dtype", None)
        if shape is not None and dtype is not None:
            dname = getattr(dtype, "name", str(dtype))
            dims = ", ".join("None" if d is None else str(d) for d in list(shape))
            parts.append(f"{dname}[{dims}]")
        elif isinstance(a, (list, tuple)) and len(a) <= 6:
            inner = describe_args(a)[1:-1]
            parts.append(f"[{inner}]" if isinstance(a, list) else f"({inner})")
        else:
            text = repr(a)
            parts.append(text if len(text) <= 20 else text[:17] + "...")
    return "(" + ", ".join(parts) + ")"


# --- recording what ran -----------------------------------------------------------


@dataclass
class FunctionCall:
    """One top-level (eager) call of a ``tf.function`` made while recording."""

    function: Any
    args: tuple
    kwargs: dict
    traces_before: int
    traces_after: int = -1
    _compiled: bool | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return getattr(self.function, "__name__", None) or "tf.function"

    def concrete(self) -> Any:
        """The concrete function this call ran (the cached one for these arguments)."""
        return _CONCRETE(self.function, *self.args, **self.kwargs)

    @property
    def compiled(self) -> bool:
        """Whether what ran was compiled by XLA: the concrete function, or a
        function it calls, carries XLA's must-compile attribute."""
        if self._compiled is None:
            self._compiled = _must_compile(self.concrete())
        return self._compiled

    @property
    def shapes(self) -> str:
        return describe_args(self.args)

    def inner_compiled(self) -> dict[str, str]:
        """The XLA-compiled functions this call's graph calls from its library (a ``tf.function``
        that calls a compiled one), by name, each with its arguments' dtypes and static shapes
        written as :attr:`shapes` writes them (``None`` for a size the graph does not know)."""
        library = self.concrete().graph.as_graph_def().library.function
        return {f.signature.name: _signature_text(f) for f in library
                if f.attr.get(_MUST_COMPILE) is not None and f.attr[_MUST_COMPILE].b}


def _signature_text(fdef: Any) -> str:
    """``(float32[128, 32])``: a FunctionDef's argument dtypes and static shapes (its own record)."""
    parts = []
    for index, arg in enumerate(fdef.signature.input_arg):
        shapes = fdef.arg_attr[index].attr["_output_shapes"].list.shape if index in fdef.arg_attr else []
        dims = ("?" if not shapes or shapes[0].unknown_rank else
                "[" + ", ".join("None" if d.size < 0 else str(d.size) for d in shapes[0].dim) + "]")
        parts.append(tf.dtypes.as_dtype(arg.type).name + dims)
    return "(" + ", ".join(parts) + ")"


def _must_compile(concrete: Any) -> bool:
    attr = concrete.function_def.attr.get(_MUST_COMPILE)
    if attr is not None and attr.b:
        return True
    library = concrete.graph.as_graph_def().library.function
    return any(f.attr.get(_MUST_COMPILE) is not None and f.attr[_MUST_COMPILE].b for f in library)


_state = threading.local()


def _perturbed(value: Any) -> Any:
    """``value`` with every tensor changed by a random, non-monotone amount."""
    def change(t: Any) -> Any:
        if not isinstance(t, (tf.Tensor, tf.Variable)):
            return t
        t = tf.convert_to_tensor(t)
        if t.dtype.is_floating or t.dtype.is_complex:
            noise = tf.cast(tf.random.normal(tf.shape(t), dtype=tf.float32), t.dtype)
            return t + noise * (1 + tf.abs(t))
        if t.dtype in (tf.int32, tf.int64):
            return t + tf.random.uniform(tf.shape(t), 1, 5, dtype=t.dtype)
        if t.dtype == tf.bool:
            return tf.logical_not(t)
        return t

    return tf.nest.map_structure(change, value)


@contextlib.contextmanager
def record_calls(*, perturb: bool = False) -> Iterator[list[FunctionCall]]:
    """Record every top-level call of a ``tf.function`` made inside the block.

    Calls made while a function traces (nested, symbolic calls) are part of
    the outer function's graph and are not recorded.  With ``perturb``, the
    outputs of calls that ran XLA-compiled work are returned changed (see
    :func:`assert_xla_compiled`)."""
    calls: list[FunctionCall] = []
    previous = _Function.__dict__["__call__"]

    def recording_call(self: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(_state, "depth", 0) or not tf.executing_eagerly():
            return _CALL(self, *args, **kwargs)
        record = FunctionCall(self, args, kwargs, _COUNT(self))
        calls.append(record)
        _state.depth = 1
        try:
            out = _CALL(self, *args, **kwargs)
        finally:
            _state.depth = 0
            record.traces_after = _COUNT(self)
        if perturb and record.compiled:
            out = _perturbed(out)
        return out

    _Function.__call__ = recording_call
    try:
        yield calls
    finally:
        _Function.__call__ = previous


def functions_run(fn: Any, calls: Iterable[tuple], *, name: str | None = None) -> list[FunctionCall]:
    """Call ``fn(*args)`` for each tuple in ``calls``; return the ``tf.function``
    calls they made.  Fails if they ran none."""
    label = _name_of(fn, name)
    calls = list(calls)
    with record_calls() as ran:
        for args in calls:
            fn(*args)
    if not ran:
        raise AssertionError(
            f"{label} is a plain Python {type(fn).__name__} that runs no tf.function: its work is not "
            "traced into a graph. Decorate it with @tf.function (or call a tf.function from it)."
        )
    return ran


def _distinct(ran: Iterable[FunctionCall]) -> list[Any]:
    out: dict[int, Any] = {}
    for call in ran:
        out.setdefault(id(call.function), call.function)
    return list(out.values())


# --- tracing counts -------------------------------------------------------------------


def count_traces(tf_function: Any, calls: Iterable[tuple], *, name: str | None = None,
                 fresh: bool = False) -> int:
    """Call ``tf_function(*args)`` for each tuple in ``calls`` and return how
    many new traces (concrete functions) those calls caused.  Traces made
    before this call do not count.

    ``tf_function`` may be a ``tf.function`` or a Python function that calls
    ``tf.function`` objects; the traces of every ``tf.function`` that ran are
    added up.  With ``fresh``, a ``tf.function`` is first replaced by a fresh
    copy of itself, so the count is what these calls cost from scratch,
    whatever was called before; a Python wrapper cannot be copied, so for it
    ``fresh`` counts every trace its functions ever made."""
    label = _name_of(tf_function, name)
    calls = list(calls)
    target = _CLONE(tf_function, None) if fresh and is_tf_function(tf_function) else tf_function
    ran = functions_run(target, calls, name=label)
    if fresh and not is_tf_function(tf_function):
        return sum(_COUNT(f) for f in _distinct(ran))
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for call in ran:
        first.setdefault(id(call.function), call.traces_before)
        last[id(call.function)] = call.traces_after
    return sum(last[k] - first[k] for k in first)


def assert_traces_at_most(fn: Any, calls: Sequence[tuple], n: int, *, name: str | None = None,
                          fresh: bool = False) -> int:
    """Fail if the calls make ``fn`` trace more than ``n`` times (``fresh``:
    counted from scratch, see :func:`count_traces`)."""
    label = _name_of(fn, name)
    calls = list(calls)
    traces = count_traces(fn, calls, name=label, fresh=fresh)
    if traces > n:
        shown = ", ".join(describe_args(c) for c in calls[:4]) + (", ..." if len(calls) > 4 else "")
        raise AssertionError(
            f"{label} traced {traces} times for {len(calls)} calls {shown}; at most {n} allowed. "
            "Each new shape, dtype or Python value makes a new graph: give the tf.function an "
            "input_signature with None for the dimensions that vary (or reduce_retracing=True), "
            "and pass numbers as tensors, not Python ints or floats."
        )
    return traces


# --- XLA -----------------------------------------------------------------------------------


def _leaves(value: Any) -> list[np.ndarray]:
    out = []
    for leaf in tf.nest.flatten(value, expand_composites=True):
        numpy = getattr(leaf, "numpy", None)
        out.append(np.asarray(numpy() if callable(numpy) else leaf))
    return out


def _same(a: Any, b: Any) -> bool:
    left, right = _leaves(a), _leaves(b)
    return len(left) == len(right) and all(
        x.shape == y.shape and np.array_equal(x, y, equal_nan=x.dtype.kind in "fc") for x, y in zip(left, right)
    )


def _compile_error(label: str, args: Sequence[Any], exc: Exception) -> AssertionError:
    return AssertionError(
        f"{label} is marked jit_compile=True but XLA cannot compile it for {describe_args(args)}: "
        f"{_compile_failure(str(exc))}"
    )


def assert_runs_compiled(fn: Any, *args: Any, name: str | None = None, via: Any = None,
                         via_name: str | None = None) -> list[FunctionCall]:
    """Fail unless calling ``fn(*args)`` runs XLA-compiled work and returns its
    result; return the compiled calls it made.

    ``fn`` may be a ``tf.function`` with ``jit_compile=True`` or any callable
    that calls one.  The call is made twice: as is, and with the outputs of
    the compiled calls perturbed; if ``fn``'s result does not change, its
    answer does not come from the compiled work.  With ``via``, the compiled
    functions that ran must be among ``via`` (a ``tf.function``, or the calls
    another check returned: ``predict`` must compute through ``core``)."""
    label = _name_of(fn, name)
    if not callable(fn):
        raise AssertionError(f"{label} is a {type(fn).__name__}, not a function")
    with record_calls() as ran:
        try:
            plain = fn(*args)
        except (tf.errors.InvalidArgumentError, tf.errors.UnimplementedError) as exc:
            if ran and any(_safe_compiled(c) for c in ran) and _looks_like_compile_error(str(exc)):
                raise _compile_error(label, args, exc) from None
            raise
    vlabel = via_name or _name_of(via, None)
    if not ran and via is not None:
        raise AssertionError(
            f"{label} does not compute through {vlabel}: called with {describe_args(args)} it ran no "
            f"tf.function at all. Call {vlabel} and return what it computes."
        )
    if not ran:
        raise AssertionError(
            f"{label} ran no tf.function when called with {describe_args(args)}, so nothing was compiled by "
            "XLA: compile the work with tf.function(..., jit_compile=True) and call that."
        )
    compiled = [c for c in ran if c.compiled]
    if not compiled:
        names = ", ".join(sorted({c.name for c in ran}))
        raise AssertionError(
            f"{label} is not compiled with XLA: the tf.function it ran ({names}) was not made with "
            "jit_compile=True. Use tf.function(..., jit_compile=True)."
        )
    if via is not None:
        allowed = {id(f) for f in _via_functions(via)}
        names = _via_names(via)  # a tf.function that calls via's compiled function from its graph counts too
        through = [c for c in compiled if id(c.function) in allowed or set(c.inner_compiled()) & names]
        stray = sorted({c.name for c in compiled if c not in through})
        if stray or not through:
            raise AssertionError(
                f"{label} does not compute through {vlabel}: the compiled functions it ran "
                f"({', '.join(sorted({c.name for c in compiled}))}) are not {vlabel}'s. Call {vlabel}."
            )
    with record_calls(perturb=True):
        changed = fn(*args)
    if _same(plain, changed):
        names = ", ".join(sorted({c.name for c in compiled}))
        raise AssertionError(
            f"{label}'s result does not come from the XLA-compiled function it calls ({names}): its answer "
            "is computed some other way. Return what the compiled function computes."
        )
    return compiled


def _via_functions(via: Any) -> list[Any]:
    """``via`` as a list of ``tf.function`` objects: one, or those of recorded calls."""
    if is_tf_function(via):
        return [via]
    return [c.function if isinstance(c, FunctionCall) else c for c in via]


def _via_names(via: Any) -> set[str]:
    """The names of the concrete functions ``via`` ran (recorded calls) or has (a ``tf.function``)."""
    if is_tf_function(via):
        concretes = getattr(via, "_list_all_concrete_functions", lambda: [])()
    else:
        concretes = [c.concrete() for c in via if isinstance(c, FunctionCall)]
    return {c.function_def.signature.name for c in concretes}


def _safe_compiled(call: FunctionCall) -> bool:
    try:
        return call.compiled
    except Exception:  # the concrete function cannot even be built: not a compile question
        return False


def _looks_like_compile_error(text: str) -> bool:
    return any(s in text for s in ("XLA", "OpKernel", "compil", "unsupported operations"))


def assert_xla_compiled(fn: Any, *args: Any, name: str | None = None) -> str:
    """Fail unless calling ``fn(*args)`` runs XLA-compiled work whose result is
    what ``fn`` returns (see :func:`assert_runs_compiled`); return the HLO text
    of the first compiled function that ran (empty when that function is
    compiled only inside another one)."""
    label = _name_of(fn, name)
    compiled = assert_runs_compiled(fn, *args, name=label)
    call = compiled[0]
    try:
        hlo = _COMPILER_IR(call.function, *call.args, **call.kwargs)(stage="hlo")
    except Exception as exc:
        if "jit_compile" in str(exc):  # the compiled function is nested in a plain one
            return ""
        raise _compile_error(label, args, exc) from None
    if "HloModule" not in hlo:
        raise AssertionError(f"{label}: the compiler returned no HLO module for {describe_args(args)}")
    return hlo


def _compile_failure(text: str) -> str:
    """The part of an XLA compile error a learner can act on."""
    unsupported = re.findall(r"No registered '(\w+)' OpKernel for XLA", text)
    unsupported += re.findall(r"unsupported operations.*?:\s*\n?\s*(\w+)", text)
    if unsupported:
        ops = ", ".join(sorted(set(unsupported)))
        return f"XLA has no kernel for {ops}; move that op out of the compiled function"
    first = text.strip().splitlines()[0] if text.strip() else "unknown error"
    return first if len(first) <= 200 else first[:197] + "..."


# --- graph contents ----------------------------------------------------------------------


def _concretes(fn: Any, args: Sequence[Any], label: str) -> list[Any]:
    """The concrete functions ``fn(*args)`` runs: its own for a ``tf.function``;
    those of the ``tf.function`` objects a Python wrapper calls."""
    if is_tf_function(fn):
        return [_CONCRETE(fn, *args)]
    return [call.concrete() for call in functions_run(fn, [tuple(args)], name=label)]


def _called_functions(attrs: Any) -> list[str]:
    names = []
    for value in attrs.values():
        if value.HasField("func"):
            names.append(value.func.name)
        elif value.HasField("list"):
            names.extend(f.name for f in value.list.func)
    return names


def _library_types(library: dict[str, Any], roots: Iterable[str]) -> set[str]:
    """Op types in the functions ``roots`` and in every function they call."""
    types: set[str] = set()
    todo, seen = list(roots), set()
    while todo:
        fname = todo.pop()
        if fname in seen or fname not in library:
            continue
        seen.add(fname)
        for node in library[fname].node_def:
            types.add(node.op)
            todo.extend(_called_functions(node.attr))
    return types


def graph_op_types(fn: Any, *args: Any, name: str | None = None, outputs_only: bool = False) -> set[str]:
    """Op types in ``fn``'s graph for ``args``, including the bodies of nested
    functions (loop and branch bodies, called tf.functions) from the graph's
    function library.  With ``outputs_only``, only the ops the outputs are
    computed from (their data inputs, transitively; a loop or a called
    function counts with everything in its body)."""
    label = _name_of(fn, name)
    types: set[str] = set()
    for concrete in _concretes(fn, args, label):
        graph = concrete.graph
        library = {f.signature.name: f for f in graph.as_graph_def().library.function}
        if not outputs_only:
            types.update(op.type for op in graph.get_operations())
            for fdef in library.values():
                types.update(node.op for node in fdef.node_def)
            continue
        todo, seen = [t.op for t in graph.outputs], set()
        while todo:
            op = todo.pop()
            if op.name in seen:
                continue
            seen.add(op.name)
            types.add(op.type)
            types.update(_library_types(library, _called_functions(op.node_def.attr)))
            todo.extend(t.op for t in op.inputs)
    return types


def assert_has_op(fn: Any, op_type: str, *args: Any, name: str | None = None, hint: str | None = None,
                  computes_output: bool = False) -> None:
    """Fail unless ``fn``'s graph for ``args`` contains ``op_type`` (``"While"``
    also accepts ``StatelessWhile``, ``"If"`` accepts ``StatelessIf``); with
    ``computes_output``, the op must be one the outputs are computed from
    (a loop that runs beside the answer does not count)."""
    label = _name_of(fn, name)
    wanted = OP_ALIASES.get(op_type, frozenset({op_type}))
    types = graph_op_types(fn, *args, name=label)
    if not types & wanted:
        advice = hint or _OP_HINTS.get(op_type, f"make the computation produce a {op_type} op")
        raise AssertionError(f"{label} has no {op_type} op in its graph for {describe_args(args)}: {advice}.")
    if computes_output and not graph_op_types(fn, *args, name=label, outputs_only=True) & wanted:
        raise AssertionError(
            f"{label} has a {op_type} op in its graph for {describe_args(args)}, but its result is not computed "
            f"by it: the {op_type} runs beside the answer. Compute the returned values in the {op_type}."
        )


def assert_lacks_op(fn: Any, op_type: str, *args: Any, name: str | None = None, hint: str | None = None) -> None:
    """Fail if ``fn``'s graph for ``args`` contains ``op_type`` (e.g. a
    ``PyFunc`` that sends every step back to Python; ``"PyFunc"`` stands for
    every op that calls Python)."""
    label = _name_of(fn, name)
    wanted = PYTHON_OPS if op_type == "PyFunc" else OP_ALIASES.get(op_type, frozenset({op_type}))
    found = graph_op_types(fn, *args, name=label) & wanted
    if found:
        advice = f": {hint}" if hint else ""
        raise AssertionError(
            f"{label} has a {'/'.join(sorted(found))} op in its graph for {describe_args(args)}{advice}."
        )


# --- Keras fit ---------------------------------------------------------------------------


def record_fit(model: Any, *args: Any, **kwargs: Any) -> tuple[Any, list[FunctionCall]]:
    """Run ``model.fit(*args, **kwargs)`` and return its history and the
    top-level ``tf.function`` calls it made: the train function Keras built
    for this fit (``make_train_function``), as it ran."""
    with record_calls() as ran:
        history = model.fit(*args, **kwargs)
    return history, ran


def assert_fit_compiled(model: Any, *args: Any, name: str | None = None,
                        **kwargs: Any) -> tuple[Any, list[FunctionCall]]:
    """Fail unless ``model.fit(*args, **kwargs)`` runs its train step compiled
    by XLA; return the history and the ``tf.function`` calls fit made.

    Judged from the concrete functions fit ran (a train step compiled with
    ``jit_compile=True`` carries XLA's must-compile attribute), not from
    ``model.jit_compile``: that attribute is read when fit builds its train
    function, so setting it after the first fit changes nothing that runs."""
    label = name or f"{type(model).__name__}.fit"
    history, ran = record_fit(model, *args, **kwargs)
    said = getattr(model, "jit_compile", None)
    if not ran:
        raise AssertionError(
            f"{label} ran no tf.function: it trained eagerly (run_eagerly=True?), so nothing was compiled by "
            "XLA. Compile the model with jit_compile=True and leave run_eagerly off."
        )
    if not any(c.compiled for c in ran):
        names = ", ".join(sorted({c.name for c in ran}))
        raise AssertionError(
            f"{label} is not compiled with XLA: the train function it ran ({names}) was not built with "
            f"jit_compile=True (model.jit_compile says {said!r}). Pass jit_compile=True to model.compile "
            "(or set model.jit_compile = True before the first fit: fit builds its train function once)."
        )
    return history, ran


def function_defs_run(calls: Iterable[FunctionCall]) -> list[Any]:
    """The ``FunctionDef`` protos of what ``calls`` ran: each call's concrete
    function and every function in its graph's library (nested steps, branch
    and loop bodies)."""
    out: dict[str, Any] = {}
    for call in calls:
        concrete = call.concrete()
        out.setdefault(concrete.function_def.signature.name, concrete.function_def)
        for fdef in concrete.graph.as_graph_def().library.function:
            out.setdefault(fdef.signature.name, fdef)
    return list(out.values())
