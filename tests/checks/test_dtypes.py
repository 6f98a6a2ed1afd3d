"""Dtype checks, as the learner reads them."""
from __future__ import annotations

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

from autograder.checks.dtypes import assert_output_dtype, assert_policy, assert_variable_dtype  # noqa: E402


def test_policy_matches_and_mismatch_says_how_to_fix():
    mixed = keras.layers.Dense(4, dtype="mixed_float16", name="hidden")
    assert_policy(mixed, "mixed_float16")
    plain = keras.layers.Dense(4, name="hidden")
    with pytest.raises(AssertionError) as info:
        assert_policy(plain, "mixed_float16")
    assert str(info.value) == (
        "Dense 'hidden' uses dtype policy 'float32' (compute float32, variables float32); expected "
        "'mixed_float16': set keras.mixed_precision.set_global_policy('mixed_float16') before building "
        "the model, or pass dtype='mixed_float16' to the layer."
    )
    with pytest.raises(AssertionError, match="^the model has no dtype policy"):
        assert_policy(object(), "mixed_float16", what="the model")


def test_float16_logits_are_caught_with_the_mixed_precision_hint():
    inputs = keras.Input((4,))
    h = keras.layers.Dense(8, dtype="mixed_float16")(inputs)
    bad = keras.Model(inputs, keras.layers.Dense(3, dtype="mixed_float16")(h))
    good = keras.Model(inputs, keras.layers.Dense(3, dtype="float32")(h))
    x = np.ones((2, 4), "float32")
    assert_output_dtype(good(x), tf.float32, what="logits")
    with pytest.raises(AssertionError) as info:
        assert_output_dtype(bad(x), tf.float32, what="logits")
    assert str(info.value).startswith(
        "logits has dtype float16; expected float32. Under mixed precision keep the last layer in float32"
    )
    assert_output_dtype(np.zeros(2, np.float16), "float16")
    with pytest.raises(AssertionError, match="^logits is a list, not a tensor"):
        assert_output_dtype([1.0], tf.float32, what="logits")


def test_variables_stay_float32_under_a_mixed_policy():
    mixed = keras.layers.Dense(3, dtype="mixed_bfloat16", name="mixed")
    mixed.build((None, 4))
    assert_variable_dtype(mixed, tf.float32)
    half = keras.layers.Dense(3, dtype="float16", name="half")
    half.build((None, 4))
    with pytest.raises(AssertionError) as info:
        assert_variable_dtype(half, tf.float32, what="the hidden layer")
    assert str(info.value) == (
        "the hidden layer: variable 'half/kernel' has dtype float16; expected float32. A mixed policy "
        "keeps variables in float32 and computes in 16 bits; dtype='float16' makes the variables float16 too."
    )
    assert_variable_dtype(tf.Variable(1.0), "float32")
    with pytest.raises(AssertionError, match="has no variables yet"):
        assert_variable_dtype(keras.layers.Dense(3, name="unbuilt"), tf.float32)


def test_compute_dtype_is_read_from_the_matmuls_that_run():
    from autograder.checks.dtypes import assert_compute_dtype, matmul_dtypes

    def mlp(policy):
        return keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu", dtype=policy),
                                 keras.layers.Dense(3, dtype="float32")])

    x = tf.ones((2, 4))
    assert matmul_dtypes(mlp("mixed_bfloat16"), x) == ["bfloat16", "float32"]
    assert_compute_dtype(mlp("mixed_float16"), x, "float16")
    assert_compute_dtype(mlp("float32"), x, tf.float32, at_least=2)

    class NamesThePolicy(keras.Model):
        """Its Dense layer carries the mixed policy; its call multiplies in float32 itself."""

        def __init__(self):
            super().__init__()
            self.dense = keras.layers.Dense(3, dtype="mixed_float16")
            self.dense.build((None, 4))

        def call(self, x):
            return tf.matmul(x, tf.convert_to_tensor(self.dense.kernel))

    duck = NamesThePolicy()
    assert_policy(duck.dense, "mixed_float16")  # the attribute says mixed...
    with pytest.raises(AssertionError) as info:  # ...what runs does not
        assert_compute_dtype(duck, x, "float16", what="the model")
    assert str(info.value).startswith(
        "the model runs 0 matrix multiplication(s) in float16 when called, expected at least 1 "
        "(the matmuls it runs are in: float32)."
    )


def test_train_step_compute_dtype_is_read_from_what_fit_ran():
    from autograder.checks.dtypes import assert_step_compute_dtype, step_matmul_dtypes
    from autograder.checks.tracing import record_fit

    x, y = np.ones((8, 3), np.float32), np.zeros((8,), np.int32)

    def fitted(policy):
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, dtype=policy),
                                  keras.layers.Dense(2, dtype=policy),
                                  keras.layers.Activation("linear", dtype="float32")])
        model.compile(optimizer="sgd", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        return record_fit(model, x, y, epochs=1, verbose=0)[1]

    mixed = fitted("mixed_bfloat16")
    assert step_matmul_dtypes(mixed).count("bfloat16") >= 4  # forward and backward
    assert_step_compute_dtype(mixed, "bfloat16", at_least=4)
    with pytest.raises(AssertionError, match=r"the train step ran 0 matrix multiplication\(s\) in bfloat16.*float32"):
        assert_step_compute_dtype(fitted("float32"), "bfloat16", at_least=2)
