"""The book's benchmark pairs that time computation: eager vs graph, XLA, mixed
precision, the device matmul and a Keras model's inference.

Each ``_setup_<name>`` imports TensorFlow inside and returns ``(baseline,
candidate, make_inputs)``; :mod:`autograder.course.benchmarks` registers them
in ``BENCHMARKS`` (import them from there).
"""
from __future__ import annotations

from typing import Any, Callable

from autograder.course.roofline import Work

# What a setup builds: (baseline, candidate, make_inputs).
Pair = tuple[Callable[..., Any], Callable[..., Any], Callable[[], tuple]]


# --- graph vs eager -----------------------------------------------------------


def _small_op_step(x, w):
    """Forty tiny ops: in eager mode each one pays Python and dispatch
    overhead, which is what a tf.function removes."""
    import tensorflow as tf

    for _ in range(20):
        x = tf.tanh(tf.matmul(x, w)) * 0.5 + 0.1
    return x


def _small_op_inputs() -> tuple:
    import tensorflow as tf

    return (tf.random.normal([8, 16]), tf.random.normal([16, 16], stddev=0.3))


def _work_graph_vs_eager() -> Work:
    per_step = 2 * 8 * 16 * 16 + 3 * 8 * 16  # matmul, then tanh, multiply, add
    return Work(flops=20 * per_step, bytes=(8 * 16 + 16 * 16 + 8 * 16) * 4,
                note="20 x (8x16 @ 16x16 matmul + 3 elementwise ops); x and w read once, x written once")


def _setup_graph_vs_eager() -> Pair:
    import tensorflow as tf

    return _small_op_step, tf.function(_small_op_step), _small_op_inputs


def _slow_graph_vs_eager() -> Pair:
    """The mistake: a tf.function that hands every iteration back to Python
    (``tf.py_function``), so it keeps all of eager's overhead."""
    import tensorflow as tf

    def one(x, w):
        return tf.tanh(tf.matmul(x, w)) * 0.5 + 0.1

    @tf.function
    def step(x, w):
        for _ in range(20):
            x = tf.py_function(one, [x, w], tf.float32)
        return x

    return _small_op_step, step, _small_op_inputs


# --- XLA on a fused elementwise chain -----------------------------------------


def _chain(x):
    """24 elementwise ops: a plain graph runs 24 kernels, each reading and
    writing the whole tensor; XLA fuses them into one pass over memory."""
    import tensorflow as tf

    y = x
    for _ in range(6):
        y = y * 1.0001 + 0.5
        y = tf.maximum(y, y * -0.1)
        y = y * y * 0.01 - y
    return y


def _chain_inputs() -> tuple:
    import tensorflow as tf

    return (tf.random.normal([512, 1024]),)


def _work_xla_fused_chain() -> Work:
    n = 512 * 1024
    return Work(flops=6 * 7 * n, bytes=2 * n * 4,
                note="7 elementwise flops x 6 rounds per element; fused, the tensor is read once and written once")


def _setup_xla_fused_chain() -> Pair:
    import tensorflow as tf

    return tf.function(_chain), tf.function(_chain, jit_compile=True), _chain_inputs


def _slow_xla_fused_chain() -> Pair:
    """The mistake: ``jit_compile`` forgotten (auto-clustering is off on CPU)."""
    import tensorflow as tf

    return tf.function(_chain), tf.function(_chain), _chain_inputs


# --- mixed precision training step --------------------------------------------


def _mixed_precision_sizes() -> tuple[int, int]:
    from autograder.checks.hardware import current_profile

    # A GPU needs big matmuls before Tensor Cores pay off; a CPU needs small
    # ones to stay within a chapter's time budget.
    return (2048, 4096) if current_profile().has_gpu else (256, 1024)


def _work_mixed_precision_step() -> Work:
    from autograder.checks.hardware import current_profile

    batch, width = _mixed_precision_sizes()
    weights = 512 * width + width * width + width * 10
    # forward + weight gradients over every layer; input gradients for layers
    # 2 and 3 only (the input batch is not differentiated)
    flops = 2 * batch * weights * 2 + 2 * batch * (width * width + width * 10)
    return Work(flops=flops, bytes=(weights + batch * 512) * 4,
                dtype="float16" if current_profile().has_gpu else "bfloat16",
                note="matmul flops of forward and backward (elementwise ops not counted); "
                "float32 weights and inputs read once")


def _setup_mixed_precision_step() -> Pair:
    """Forward and backward pass of an MLP in float32 vs a mixed policy
    (mixed_float16 on GPUs, mixed_bfloat16 on CPUs, where float16 matmuls are
    emulated).  The loss is returned, not applied, so repeated calls agree."""
    import keras
    import tensorflow as tf

    from autograder.checks.hardware import current_profile

    mixed = "mixed_float16" if current_profile().has_gpu else "mixed_bfloat16"

    batch, width = _mixed_precision_sizes()

    def build(policy: str) -> keras.Model:
        inputs = keras.Input((512,))
        h = keras.layers.Dense(width, activation="relu", dtype=policy)(inputs)
        h = keras.layers.Dense(width, activation="relu", dtype=policy)(h)
        logits = keras.layers.Dense(10, dtype="float32")(h)
        return keras.Model(inputs, logits)

    model32, model_mixed = build("float32"), build(mixed)
    model_mixed.set_weights(model32.get_weights())
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def make_step(model: keras.Model):
        @tf.function
        def step(x, y):
            with tf.GradientTape() as tape:
                loss = loss_fn(y, model(x, training=True))
            grads = tape.gradient(loss, model.trainable_variables)
            return loss, tf.linalg.global_norm([tf.cast(g, tf.float32) for g in grads])

        return step

    def inputs() -> tuple:
        return (tf.random.normal([batch, 512]), tf.random.uniform([batch], 0, 10, dtype=tf.int32))

    return make_step(model32), make_step(model_mixed), inputs


# --- the seed's CPU-vs-GPU matmul benchmark, done right -----------------------


def _matmul_chain(w, x):
    """Ten dependent matmuls.  ``tanh`` keeps the values bounded: the seed's
    ``x = tf.matmul(x, x)`` overflows to inf within a few steps and then
    times arithmetic on inf and NaN."""
    import tensorflow as tf

    for _ in range(10):
        x = tf.tanh(tf.matmul(w, x))
    return x


def _device_matmul_n() -> int:
    from autograder.checks.hardware import current_profile

    return 1024 if current_profile().has_gpu else 512


def _work_device_matmul() -> Work:
    n = _device_matmul_n()
    return Work(flops=10 * (2 * n * n * 64 + n * 64), bytes=(n * n + 2 * n * 64) * 4,
                note="10 x ((n x n) @ (n x 64) matmul + tanh); weights and input read once, output written once")


def _setup_device_matmul() -> Pair:
    """The same chain on /CPU:0 and on the exercise device (/GPU:0, or /CPU:1
    of two logical CPUs, which shares /CPU:0's cores and memory).  The weight
    matrix is put on each device once, here; the small (n x 64) input is
    copied to the device inside each timed call, as a batch would be."""
    import tensorflow as tf

    from autograder.checks.hardware import current_profile

    device = current_profile().device()
    n = _device_matmul_n()
    weights = tf.random.normal([n, n], stddev=n**-0.5)

    def on(where):
        with tf.device(where):
            w = tf.identity(weights)

        @tf.function
        def run(x):
            return _matmul_chain(w, x)

        def call(x):
            with tf.device(where):
                return run(x)

        return call

    def inputs() -> tuple:
        return (tf.random.normal([n, 64]),)

    return on("/CPU:0"), on(device), inputs


# --- exercise 4: XLA on a functional training step -----------------------------


def _ex4_step(params, x, y):
    """Exercise 4's training step: an MLP with add/mul/max activations,
    forward + backward + SGD update, returning the loss and new parameters."""
    import tensorflow as tf

    def act(h):
        return tf.maximum(h, 0.1 * h) * (1.0 + 0.01 * h * h) - 0.05 * h

    w_in, b_in, scales, w_out = params
    with tf.GradientTape() as tape:
        tape.watch(params)
        h = act(tf.matmul(x, w_in) + b_in)
        for i in range(3):
            h = act(h * scales[i] + 0.1)
        loss = tf.reduce_mean(tf.square(tf.matmul(h, w_out) - y))
    grads = tape.gradient(loss, params)
    return loss, [p - 0.01 * g for p, g in zip(params, grads)]


def _ex4_inputs() -> tuple:
    import tensorflow as tf

    params = [tf.random.normal([8, 256], stddev=0.3), tf.zeros([256]),
              tf.random.uniform([3, 256], 0.5, 1.0), tf.random.normal([256, 1], stddev=0.1)]
    return (params, tf.random.normal([1024, 8]), tf.random.normal([1024, 1]))


def _setup_xla_train_step() -> Pair:
    import tensorflow as tf

    return tf.function(_ex4_step), tf.function(_ex4_step, jit_compile=True), _ex4_inputs


def _slow_xla_train_step() -> Pair:
    """The mistake: ``jit_compile`` forgotten."""
    import tensorflow as tf

    return tf.function(_ex4_step), tf.function(_ex4_step), _ex4_inputs


# --- a Keras model's inference: eager vs one signature-traced graph -----------


def _keras_classifier():
    """Exercise 8's model: 6 features -> 16 relu -> 3 logits."""
    import keras

    inputs = keras.Input((6,), name="features")
    hidden = keras.layers.Dense(16, activation="relu")(inputs)
    return keras.Model(inputs, keras.layers.Dense(3)(hidden))


def _one_row() -> tuple:
    import tensorflow as tf

    return (tf.random.normal([1, 6]),)


def _setup_keras_inference_graph_vs_eager() -> Pair:
    import tensorflow as tf

    model = _keras_classifier()
    fast = tf.function(model, input_signature=[tf.TensorSpec([None, 6], tf.float32)])
    return (lambda x: model(x)), fast, _one_row


def _slow_keras_inference_graph_vs_eager() -> Pair:
    """The mistake: the "fast" function is the model itself, still eager."""
    model = _keras_classifier()
    return (lambda x: model(x)), (lambda x: model(x)), _one_row
