"""Graph checks catch a planted retrace, a missing XLA compile and an unrolled loop."""
from __future__ import annotations

import pytest

tf = pytest.importorskip("tensorflow")

from autograder.tracing import (  # noqa: E402
    assert_has_op,
    assert_lacks_op,
    assert_traces_at_most,
    assert_xla_compiled,
    count_traces,
    describe_args,
    graph_op_types,
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

    with pytest.raises(AssertionError, match="^step is a plain Python function, not a tf.function; decorate it with @tf.function$"):
        count_traces(step, SHAPES)


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
        "fused step is not compiled with XLA: TensorFlow produces no HLO for it. "
        "Use @tf.function(jit_compile=True)."
    )


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
