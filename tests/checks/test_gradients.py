"""Gradient checks pass correct gradients and catch planted wrong ones, with
messages that name the variable, the error and the tolerance."""
from __future__ import annotations

import re

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

from autograder.checks.gradients import (  # noqa: E402
    assert_gradient_numeric,
    assert_gradients_match,
    assert_loop_gradients_match,
    assert_mixed_precision_gradients,
    tolerance_for,
)


def test_tolerances_by_dtype():
    assert tolerance_for(tf.float32) == (1e-4, 1e-5)
    assert tolerance_for("float16") == (2e-2, 5e-3)
    assert tolerance_for(tf.bfloat16, numeric=True) == (1e-1, 1.5e-1)
    rtol32, _ = tolerance_for("float32", numeric=True)
    rtol16, _ = tolerance_for("float16", numeric=True)
    assert rtol16 > rtol32
    with pytest.raises(ValueError, match="no gradient tolerance for dtype int32"):
        tolerance_for(tf.int32)


# --- custom gradients vs finite differences --------------------------------------


def softplus_with(grad_factor: float):
    @tf.custom_gradient
    def softplus(x):
        y = tf.math.log1p(tf.exp(x))

        def grad(upstream):
            return upstream * tf.sigmoid(x) * grad_factor

        return y, grad

    return softplus


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16", "bfloat16"])
def test_correct_custom_gradient_passes_in_every_dtype(dtype):
    x = tf.constant(np.linspace(-2, 2, 6).reshape(2, 3), dtype=dtype)
    assert_gradient_numeric(softplus_with(1.0), [x])


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_planted_wrong_custom_gradient_is_caught(dtype):
    x = tf.constant(np.linspace(-2, 2, 6).reshape(2, 3), dtype=dtype)
    with pytest.raises(AssertionError) as info:
        assert_gradient_numeric(softplus_with(1.5), [x], name="softplus gradient")
    msg = str(info.value)
    assert msg.startswith(f"softplus gradient for input 0 ({dtype}[2, 3]) disagrees with finite differences: max abs error ")
    rtol, atol = tolerance_for(dtype, numeric=True)
    assert f"tolerance rtol={rtol:g}, atol={atol:g} (x max(1, max|gradient|)) for {dtype}" in msg
    assert re.search(r"worst: d output\(\d, \d\) / d input\(\d, \d\): analytic [\d.]+, numeric [\d.]+", msg)


def test_registered_gradient_override_is_checked():
    @tf.RegisterGradient("CourseTestWrongSquare")
    def _wrong_square(op, grad):  # d(x^2)/dx without the factor 2
        return grad * op.inputs[0]

    @tf.function
    def square(x):
        with tf.compat.v1.get_default_graph().gradient_override_map({"Square": "CourseTestWrongSquare"}):
            return tf.square(x)

    with pytest.raises(AssertionError, match=r"^gradient for input 0 \(float32\[3\]\) disagrees"):
        assert_gradient_numeric(square, [tf.constant([1.0, 2.0, 3.0])])
    assert_gradient_numeric(tf.function(tf.square), [tf.constant([1.0, 2.0, 3.0])])


# --- learner vs reference ---------------------------------------------------------


def softplus_inputs():
    return (tf.random.normal([4, 5]),)


def test_learner_matches_reference_on_fresh_inputs_and_wrong_one_is_named():
    reference = tf.math.softplus
    assert_gradients_match(softplus_with(1.0), reference, softplus_inputs)
    with pytest.raises(AssertionError) as info:
        assert_gradients_match(softplus_with(1.01), reference, softplus_inputs, name="softplus gradient")
    assert re.fullmatch(
        r"softplus gradient for input 0 differs from the reference: max abs error [\d.e-]+, max rel error "
        r"0\.01 at index \(\d, \d\) \(got -?[\d.e-]+, expected -?[\d.e-]+\); tolerance rtol=0\.0001, "
        r"atol=1e-05 \(x max\(1, max\|gradient\|\)\) for float32 \(trial 1 of 3\)\.",
        str(info.value),
    )


def test_dtype_casts_inputs_and_sets_the_tolerance():
    assert_gradients_match(softplus_with(1.0), tf.math.softplus, softplus_inputs, dtype="float16")
    with pytest.raises(AssertionError, match=r"rtol=0\.02, atol=0\.005 .* for float16"):
        assert_gradients_match(softplus_with(1.2), tf.math.softplus, softplus_inputs, dtype="float16")


def test_stop_gradient_gives_a_none_message():
    def blocked(x, w):
        return tf.reduce_sum(tf.stop_gradient(x) * w)

    def reference(x, w):
        return tf.reduce_sum(x * w)

    with pytest.raises(AssertionError) as info:
        assert_gradients_match(blocked, reference, lambda: (tf.ones([3]), tf.ones([3])))
    assert str(info.value).startswith(
        "gradient for input 0 is None but the reference's is not: the loss does not depend on it "
        "through differentiable TensorFlow ops. Look for tf.stop_gradient"
    )


def test_variables_of_two_models_are_matched_by_position():
    def model(name):
        return keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, name="head")], name=name)

    mine, ref = model("mine"), model("ref")
    for theirs, ours in zip(ref.weights, mine.weights):
        theirs.assign(ours)

    def loss_of(m, penalty):
        return lambda x: tf.reduce_mean(m(x) ** 2) + penalty * tf.reduce_sum(m.layers[-1].kernel ** 2)

    def inputs():
        return (tf.random.normal([8, 4]),)

    assert_gradients_match(loss_of(mine, 0.0), loss_of(ref, 0.0), inputs,
                           variables=mine.trainable_variables, reference_variables=ref.trainable_variables)
    with pytest.raises(AssertionError, match=r"^gradient for variable 'mine/head/kernel' differs from the reference"):
        assert_gradients_match(loss_of(mine, 0.1), loss_of(ref, 0.0), inputs,
                               variables=mine.trainable_variables, reference_variables=ref.trainable_variables)


def test_non_scalar_output_is_checked_elementwise():
    def wrong_at_one_element(x):
        return tf.tanh(x) + tf.one_hot(2, 4) * x * 0.1

    with pytest.raises(AssertionError, match=r"for input 0 differs .* at index \(2,\)"):
        assert_gradients_match(wrong_at_one_element, tf.tanh, lambda: (tf.random.normal([4]),))


def test_loss_and_grads_form():
    w = tf.Variable([1.0, -2.0], name="w")

    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(w * x) ** 2
        return loss, tape.gradient(loss, [w])

    def clipped_wrong(x):
        loss, grads = step(x)
        return loss, [tf.clip_by_value(g, -0.1, 0.1) for g in grads]

    inputs = lambda: (tf.constant([1.0, 3.0]),)  # noqa: E731
    assert_gradients_match(step, step, inputs, variables=[w], returns="loss_and_grads")
    with pytest.raises(AssertionError, match=r"^gradient for variable 'w' differs from the reference"):
        assert_gradients_match(clipped_wrong, step, inputs, variables=[w], returns="loss_and_grads")
    with pytest.raises(AssertionError, match=r"^gradient: got 2 gradients, the reference has 1 \(trial 1 of 3\)"):
        assert_gradients_match(lambda x: (0.0, [w, w]), step, inputs, returns="loss_and_grads")
    with pytest.raises(ValueError, match="returns must be"):
        assert_gradients_match(step, step, inputs, returns="grads")


# --- mixed precision --------------------------------------------------------------


@pytest.fixture(scope="module")
def mixed_pair():
    def build(policy):
        inputs = keras.Input((8,))
        h = keras.layers.Dense(16, activation="tanh", dtype=policy, name="hidden")(inputs)
        return keras.Model(inputs, keras.layers.Dense(3, dtype="float32", name="logits")(h))

    m32, m16 = build("float32"), build("mixed_float16")
    for mixed, full in zip(m16.weights, m32.weights):
        mixed.assign(full)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    opt = keras.optimizers.LossScaleOptimizer(keras.optimizers.SGD(0.1))

    def reference(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, m32(x))
        return loss, tape.gradient(loss, m32.trainable_variables)

    def scaled(x, y, unscale=True):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, m16(x))
            scaled_loss = opt.scale_loss(loss)
        grads = tape.gradient(scaled_loss, m16.trainable_variables)
        return loss, [g / opt.initial_scale for g in grads] if unscale else grads

    def inputs():
        return (tf.random.normal([32, 8]), tf.random.uniform([32], 0, 3, tf.int32))

    return m16, reference, scaled, inputs


def test_mixed_precision_gradients_match_float32(mixed_pair):
    m16, reference, scaled, inputs = mixed_pair
    assert_mixed_precision_gradients(scaled, reference, inputs, variables=m16.trainable_variables)


def test_loss_scale_left_in_is_named(mixed_pair):
    m16, reference, scaled, inputs = mixed_pair
    with pytest.raises(AssertionError) as info:
        assert_mixed_precision_gradients(lambda x, y: scaled(x, y, unscale=False), reference, inputs)
    assert str(info.value).startswith(
        "mixed-precision gradient: the gradients are 32768x the float32 ones (trial 1 of 2): "
        "they still carry the loss scale."
    )


def test_float16_gradients_and_wrong_values_are_caught(mixed_pair):
    m16, reference, scaled, inputs = mixed_pair

    def half(x, y):
        loss, grads = scaled(x, y)
        return loss, [tf.cast(g, tf.float16) for g in grads]

    with pytest.raises(AssertionError, match=r"for variable 'hidden/kernel' is float16, not float32"):
        assert_mixed_precision_gradients(half, reference, inputs, variables=m16.trainable_variables)

    # One variable wrong by more than the tolerance on every input.  (Doubling the
    # biases was not: a batch whose hidden-bias gradients are all under atol keeps
    # 2g within it, and the check then named logits/bias; seen once in CI.)
    def shifted_hidden_bias(x, y):
        loss, grads = scaled(x, y)
        return loss, [g + 0.25 if v.path == "hidden/bias" else g for g, v in zip(grads, m16.trainable_variables)]

    with pytest.raises(AssertionError, match=r"for variable 'hidden/bias' differs .* for mixed float16 vs float32"):
        assert_mixed_precision_gradients(shifted_hidden_bias, reference, inputs, variables=m16.trainable_variables)


# --- loops ------------------------------------------------------------------------


def power_inputs():
    return (tf.random.uniform([3], 0.5, 1.5), tf.constant(4))


def reference_power(x, n):
    return x ** tf.cast(n, x.dtype)


def test_gradients_through_a_while_loop():
    @tf.function
    def power(x, n):
        y = tf.ones_like(x)
        for _ in tf.range(n):
            y = y * x
        return y

    assert_loop_gradients_match(power, reference_power, power_inputs)

    @tf.function
    def leaky(x, n):
        y = tf.ones_like(x)
        for _ in tf.range(n):
            y = y * tf.stop_gradient(x)
        return y + x

    with pytest.raises(AssertionError, match=r"^gradient for input 0 differs from the reference"):
        assert_loop_gradients_match(leaky, reference_power, power_inputs)


def test_unrolled_loop_is_not_a_graph_loop():
    @tf.function
    def unrolled(x, n):
        y = tf.ones_like(x)
        for _ in range(4):
            y = y * x
        return y

    with pytest.raises(AssertionError, match=r"^unrolled has no While op in its graph"):
        assert_loop_gradients_match(unrolled, reference_power, power_inputs)
