"""Graph checks catch a planted retrace, a missing XLA compile and an unrolled loop,
judge what ran (not attributes a look-alike supplies) and accept wrappers."""
from __future__ import annotations

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from autograder.checks.tracing import (  # noqa: E402
    assert_has_op,
    assert_lacks_op,
    assert_traces_at_most,
    assert_xla_compiled,
    count_traces,
    assert_runs_compiled,
    describe_args,
    graph_op_types,
    record_calls,
)

SHAPES = [(tf.ones([n]),) for n in (2, 3, 4)]


def test_count_traces_counts_only_new_traces():
    @tf.function
    def double(x):
        return x * 2

    assert count_traces(double, SHAPES) == 3
    assert count_traces(double, SHAPES) == 0  # already traced for these shapes


def test_input_signature_passes_and_a_planted_retrace_fails():
    @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
    def good(x):
        return x * 2

    assert assert_traces_at_most(good, SHAPES, 1, name="scale") == 1

    @tf.function
    def retraces(x):
        return x * 2

    with pytest.raises(AssertionError) as info:
        assert_traces_at_most(retraces, SHAPES, 1, name="scale")
    assert str(info.value) == (
        "scale traced 3 times for 3 calls (float32[2]), (float32[3]), (float32[4]); at most 1 allowed. "
        "Each new shape, dtype or Python value makes a new graph: give the tf.function an "
        "input_signature with None for the dimensions that vary (or reduce_retracing=True), "
        "and pass numbers as tensors, not Python ints or floats."
    )


def test_python_scalars_retrace_and_are_named():
    @tf.function
    def power(x, n):
        return x**n

    calls = [(tf.ones([2]), n) for n in (1, 2, 3)]
    with pytest.raises(AssertionError, match=r"power traced 3 times for 3 calls \(float32\[2\], 1\)"):
        assert_traces_at_most(power, calls, 1)


def test_plain_function_is_named_as_such():
    def step(x):
        return x

    with pytest.raises(AssertionError, match="^step is a plain Python function that runs no tf.function"):
        count_traces(step, SHAPES)


def test_look_alike_tracing_count_is_not_a_tf_function():
    class LooksTraced:
        def __call__(self, x):
            return x * 2

        def experimental_get_tracing_count(self):
            return 0

    with pytest.raises(AssertionError, match="^LooksTraced is a plain Python LooksTraced that runs no tf.function"):
        assert_traces_at_most(LooksTraced(), SHAPES, 1)


def test_wrapper_counts_the_traces_of_the_tf_functions_it_calls():
    inner = tf.function(lambda x: x * 2)

    def wrapper(x):
        return inner(x)

    assert count_traces(wrapper, SHAPES) == 3
    assert count_traces(wrapper, SHAPES) == 0
    fixed = tf.function(lambda x: x * 2, input_signature=[tf.TensorSpec([None], tf.float32)])
    assert assert_traces_at_most(lambda x: fixed(x), SHAPES, 1, fresh=True) == 1
    # A new tf.function per call: each traces once, together once per call.
    assert count_traces(lambda x: tf.function(lambda v: v + 1)(x), SHAPES) == 3


def test_fresh_count_ignores_earlier_calls():
    relaxed = tf.function(lambda x: x * 2, reduce_retracing=True)
    count_traces(relaxed, SHAPES)  # already generalised: no new trace now ...
    assert count_traces(relaxed, SHAPES) == 0
    # ... but from scratch the same calls cost two traces.
    assert count_traces(relaxed, SHAPES, fresh=True) == 2


def test_xla_check_returns_hlo_and_catches_a_non_jit_function():
    @tf.function(jit_compile=True)
    def fused(x):
        return tf.nn.relu(x * 2 + 1)

    hlo = assert_xla_compiled(fused, tf.ones([8]))
    assert "HloModule" in hlo and "f32[8]" in hlo

    @tf.function
    def plain(x):
        return tf.nn.relu(x * 2 + 1)

    with pytest.raises(AssertionError) as info:
        assert_xla_compiled(plain, tf.ones([8]), name="fused step")
    assert str(info.value) == (
        "fused step is not compiled with XLA: the tf.function it ran (plain) was not made with "
        "jit_compile=True. Use tf.function(..., jit_compile=True)."
    )


def test_xla_check_accepts_wrappers_and_nested_compiled_functions():
    fused = tf.function(lambda x: tf.nn.relu(x * 2 + 1), jit_compile=True)

    def wrapper(x):
        return fused(x)[:2]

    assert "HloModule" in assert_xla_compiled(wrapper, tf.ones([8]))
    outer = tf.function(lambda x: fused(x) + 1.0)
    assert assert_xla_compiled(outer, tf.ones([8])) == ""  # compiled inside a plain graph: no HLO of its own
    calls = assert_runs_compiled(wrapper, tf.ones([4]), via=fused, via_name="fused")
    assert [c.function for c in calls] == [fused]


def test_xla_check_rejects_look_alikes_and_decoys():
    fused = tf.function(lambda x: tf.nn.relu(x * 2 + 1), jit_compile=True)

    class LooksCompiled:
        """Answers for another, compiled function; every call runs NumPy."""

        def __call__(self, x):
            return tf.constant(np.maximum(x.numpy() * 2 + 1, 0))

        def experimental_get_compiler_ir(self, *args):
            return fused.experimental_get_compiler_ir(*args)

        def experimental_get_tracing_count(self):
            return 1

    with pytest.raises(AssertionError, match="^step ran no tf.function when called with"):
        assert_xla_compiled(LooksCompiled(), tf.ones([8]), name="step")

    def decoy(x):
        fused(x)  # runs the compiled function, then answers with NumPy
        return tf.constant(np.maximum(x.numpy() * 2 + 1, 0))

    with pytest.raises(AssertionError, match="^decoy's result does not come from the XLA-compiled function"):
        assert_xla_compiled(decoy, tf.ones([8]))

    other = tf.function(lambda x: x * 3.0, jit_compile=True)
    with pytest.raises(AssertionError, match="^predict does not compute through core"):
        assert_runs_compiled(lambda x: other(x), tf.ones([4]), name="predict", via=fused, via_name="core")


def test_record_calls_restores_the_class_and_skips_nested_calls():
    from tensorflow.python.eager.polymorphic_function.polymorphic_function import Function

    before = Function.__dict__["__call__"]
    inner = tf.function(lambda x: x + 1)
    outer = tf.function(lambda x: inner(x) * 2)
    with record_calls() as ran:
        outer(tf.ones([2]))
    assert [c.function for c in ran] == [outer]
    assert ran[0].traces_before == 0 and ran[0].traces_after == 1
    assert Function.__dict__["__call__"] is before


def test_xla_check_names_an_uncompilable_op():
    @tf.function(jit_compile=True)
    def uses_strings(x):
        return tf.strings.as_string(x)

    with pytest.raises(AssertionError) as info:
        assert_xla_compiled(uses_strings, tf.ones([2]))
    assert str(info.value) == (
        "uses_strings is marked jit_compile=True but XLA cannot compile it for (float32[2]): "
        "XLA has no kernel for AsString; move that op out of the compiled function"
    )


def test_while_found_in_nested_functions_and_unrolled_loop_caught():
    @tf.function
    def graph_loop(x, n):
        for _ in tf.range(n):
            x = x * 0.5
        return x

    types = graph_op_types(graph_loop, tf.ones([2]), tf.constant(3))
    assert "StatelessWhile" in types or "While" in types
    assert "Mul" in types  # from the loop body, which lives in the function library
    assert_has_op(graph_loop, "While", tf.ones([2]), tf.constant(3))

    @tf.function
    def unrolled(x, n):
        for _ in range(n):
            x = x * 0.5
        return x

    with pytest.raises(AssertionError) as info:
        assert_has_op(unrolled, "While", tf.ones([2]), 3)
    assert str(info.value) == (
        "unrolled has no While op in its graph for (float32[2], 3): AutoGraph unrolled the loop at "
        "trace time; loop over a tensor (for i in tf.range(n) with n a tensor, or while on a tensor "
        "condition) so it becomes a graph loop."
    )


def test_assert_lacks_op_catches_py_function():
    @tf.function
    def back_to_python(x):
        return tf.py_function(lambda v: v * 2, [x], tf.float32)

    with pytest.raises(AssertionError, match=r"^back_to_python has a EagerPyFunc op in its graph for \(float32\[2\]\): keep the step in TensorFlow ops\.$"):
        assert_lacks_op(back_to_python, "EagerPyFunc", tf.ones([2]), hint="keep the step in TensorFlow ops")


def test_describe_args():
    assert describe_args((tf.ones([2, 3]), 5, "x" * 30)) == "(float32[2, 3], 5, 'xxxxxxxxxxxxxxxx...)"


def test_while_must_compute_the_output():
    @tf.function
    def beside(x):
        i = tf.constant(0)
        while i < 3:
            i += 1
        return x * 2

    assert_has_op(beside, "While", tf.ones([2]))  # there is one ...
    with pytest.raises(AssertionError, match="its result is not computed by it"):
        assert_has_op(beside, "While", tf.ones([2]), computes_output=True)  # ... but not in the answer's path

    @tf.function
    def loop(x):
        for _ in tf.range(3):
            x = x * 2
        return x

    assert_has_op(lambda x: loop(x), "While", tf.ones([2]), computes_output=True)  # a wrapper counts


def test_py_function_family_is_one_name():
    @tf.function
    def via_numpy(x):
        return tf.numpy_function(lambda v: v * 2, [x], tf.float32)

    with pytest.raises(AssertionError, match="has a PyFunc op"):
        assert_lacks_op(via_numpy, "PyFunc", tf.ones([2]))


def _tiny_model(jit_compile):
    keras = pytest.importorskip("keras")
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse", jit_compile=jit_compile)
    return model


FIT_DATA = (np.ones((8, 3), np.float32), np.zeros((8, 2), np.float32))


def test_fit_compiled_is_judged_from_the_train_function_that_ran():
    from autograder.checks.tracing import assert_fit_compiled, function_defs_run, record_fit

    history, calls = assert_fit_compiled(_tiny_model(True), *FIT_DATA, epochs=2, batch_size=4, verbose=0)
    assert len(history.history["loss"]) == 2 and calls and any(c.compiled for c in calls)
    assert any("MatMul" in {n.op for n in f.node_def} for f in function_defs_run(calls))

    with pytest.raises(AssertionError, match=r"not compiled with XLA.*model.jit_compile says False"):
        assert_fit_compiled(_tiny_model(False), *FIT_DATA, epochs=1, verbose=0, name="fit")

    # The attribute set after the first fit says True; the train function that runs is not compiled.
    late = _tiny_model(False)
    record_fit(late, *FIT_DATA, epochs=1, verbose=0)
    late.jit_compile = True
    assert late.jit_compile is True
    with pytest.raises(AssertionError, match=r"fit is not compiled with XLA.*model.jit_compile says True"):
        assert_fit_compiled(late, *FIT_DATA, epochs=1, verbose=0, name="fit")

    # Set before the first fit, it is what fit builds its train function with.
    early = _tiny_model(False)
    early.jit_compile = True
    assert_fit_compiled(early, *FIT_DATA, epochs=1, verbose=0)


def test_fit_run_eagerly_is_named():
    from autograder.checks.tracing import assert_fit_compiled

    model = _tiny_model(False)
    model.run_eagerly = True
    with pytest.raises(AssertionError, match="ran no tf.function: it trained eagerly"):
        assert_fit_compiled(model, *FIT_DATA, epochs=1, verbose=0, name="fit")


def test_a_tf_function_that_calls_the_compiled_function_from_its_graph_computes_through_it():
    from autograder.checks.tracing import assert_runs_compiled

    def score(x):
        return tf.reduce_sum(x * x, axis=-1)

    core = tf.function(score, jit_compile=True)
    other = tf.function(score, jit_compile=True)

    @tf.function
    def nested(x):
        return core(tf.ensure_shape(tf.pad(x, [[0, 8 - tf.shape(x)[0]], [0, 0]]), [8, 4]))[:tf.shape(x)[0]]

    @tf.function
    def elsewhere(x):
        return other(x)

    core_calls = assert_runs_compiled(core, tf.ones([8, 4]), name="core")
    ran = assert_runs_compiled(nested, tf.ones([3, 4]), name="predict", via=core_calls, via_name="core")
    assert list(ran[0].inner_compiled().values()) == ["(float32[8, 4])"]
    assert_runs_compiled(nested, tf.ones([3, 4]), name="predict", via=core, via_name="core")
    with pytest.raises(AssertionError, match="does not compute through core"):
        assert_runs_compiled(elsewhere, tf.ones([3, 4]), name="predict", via=core_calls, via_name="core")
