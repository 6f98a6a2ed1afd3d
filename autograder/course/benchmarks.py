"""The book's benchmark pairs: a baseline and a faster way to do the same work.

Each ``Benchmark`` names the thresholds row it is judged by and builds its pair
on demand (``setup()`` -> ``(baseline, candidate, make_inputs)``), so importing
this module costs nothing and every run gets fresh ``tf.function`` objects.
``python -m autograder bench`` times every pair with ``measure_speedup`` and the
book's plots read the JSON it writes.  ``slow_setup``, where given, builds a
plausible mistake that produces the right answer without the speedup; the
reliability script (``benchmarks/reliability.py``) checks that it never passes.

To add a pair for a chapter: write a ``_setup_<name>`` function that imports
TensorFlow inside, and add a ``Benchmark`` to ``BENCHMARKS`` (and a row to
``autograder.checks.thresholds.THRESHOLDS`` for its ``check``).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

from autograder.course.roofline import Work

Pair = tuple[Callable[..., Any], Callable[..., Any], Callable[[], tuple]]


@dataclass(frozen=True)
class Benchmark:
    """One baseline/candidate pair of the book."""

    name: str
    chapter: str
    description: str
    check: str  # row of autograder.checks.thresholds.THRESHOLDS
    setup: Callable[[], Pair]
    label: str = "candidate"
    baseline_label: str = "baseline"
    rtol: float = 1e-5
    atol: float = 1e-6
    slow_setup: Callable[[], Pair] | None = None
    # What one candidate call must compute and move (for the same profile as
    # setup()), so the roofline can say how far it is from the machine's limit.
    work: Callable[[], Work] | None = None


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


# --- tf.data: parallel map + prefetch on a latency-bound map ------------------

# Latency-bound on purpose: sleeping costs the same on a loaded machine, so the
# ratio measures the pipeline's structure, not how busy the CPU is.
_LOAD_S = 0.010  # simulated I/O latency per element (a file or network read)
_STEP_S = 0.020  # simulated training step per batch


def _pipeline_inputs() -> tuple:
    import numpy as np

    return (np.random.default_rng().normal(size=(24, 8)).astype("float32"),)


def _consume(ds) -> Any:
    import numpy as np

    batches = []
    for batch in ds:
        time.sleep(_STEP_S)  # the model's step, which prefetch overlaps with loading
        batches.append(batch.numpy())
    return np.concatenate(batches)


def _load(ds, num_parallel_calls):
    import numpy as np
    import tensorflow as tf

    def read(v):  # NumPy in, NumPy out: lighter than py_function's eager tensors
        time.sleep(_LOAD_S)
        return v * np.float32(2.0)

    def load(x):
        y = tf.numpy_function(read, [x], tf.float32)
        y.set_shape(x.shape)
        return y

    return ds.map(load, num_parallel_calls=num_parallel_calls)


def _naive_pipeline(data):
    import tensorflow as tf

    return _consume(_load(tf.data.Dataset.from_tensor_slices(data), None).batch(8))


def _setup_tfdata_parallel_prefetch() -> Pair:
    import tensorflow as tf

    def fast(data):
        ds = _load(tf.data.Dataset.from_tensor_slices(data), tf.data.AUTOTUNE)
        ds = ds.batch(8).prefetch(tf.data.AUTOTUNE)
        # tf.data's thread pool has one thread per core, which caps a map that
        # waits on I/O at the core count (measured: 8 parallel calls on 2 cores
        # ran no faster than 2).  Waiting threads cost no CPU, so give it more.
        options = tf.data.Options()
        options.threading.private_threadpool_size = 8
        return _consume(ds.with_options(options))

    return _naive_pipeline, fast, _pipeline_inputs


def _slow_tfdata_parallel_prefetch() -> Pair:
    """The mistake: ``prefetch`` added but the map left sequential, and the
    prefetch put before ``batch`` where it buffers single elements."""
    import tensorflow as tf

    def slow(data):
        ds = _load(tf.data.Dataset.from_tensor_slices(data), None).prefetch(1)
        return _consume(ds.batch(8))

    return _naive_pipeline, slow, _pipeline_inputs


# --- tf.data: batch before a vectorizable map ---------------------------------


def _vector_inputs() -> tuple:
    import numpy as np

    return (np.random.default_rng().normal(size=(4096, 16)).astype("float32"),)


def _normalise(x):
    import tensorflow as tf

    return tf.tanh(x * 0.5 + 1.0) * 2.0


def _collect(ds) -> Any:
    import numpy as np

    return np.concatenate([b.numpy() for b in ds])


def _work_tfdata_batch_before_map() -> Work:
    n = 4096 * 16
    return Work(flops=4 * n, bytes=2 * n * 4,
                note="multiply, add, tanh, multiply per value; every value read once and written once")


def _setup_tfdata_batch_before_map() -> Pair:
    import tensorflow as tf

    def map_then_batch(data):
        return _collect(tf.data.Dataset.from_tensor_slices(data).map(_normalise).batch(256))

    def batch_then_map(data):
        return _collect(tf.data.Dataset.from_tensor_slices(data).batch(256).map(_normalise))

    return map_then_batch, batch_then_map, _vector_inputs


def _slow_tfdata_batch_before_map() -> Pair:
    """The mistake: parallelising the per-element map instead of batching
    first.  tf.data's map_parallelization already does that to the baseline's
    stateless map, so this gains almost nothing."""
    import tensorflow as tf

    def map_then_batch(data):
        return _collect(tf.data.Dataset.from_tensor_slices(data).map(_normalise).batch(256))

    def parallel_map_then_batch(data):
        ds = tf.data.Dataset.from_tensor_slices(data).map(_normalise, num_parallel_calls=tf.data.AUTOTUNE)
        return _collect(ds.batch(256))

    return map_then_batch, parallel_map_then_batch, _vector_inputs


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


# --- exercise 5: a latency-bound source, and a vectorised map -------------------

_EX5_READ_S = 0.008  # exercise 5's simulated storage latency per record


def _ex5_read_record(record_id):
    import numpy as np
    import tensorflow as tf

    def read(i):
        time.sleep(_EX5_READ_S)
        return np.sin(np.arange(16, dtype=np.float32) * 0.37 + np.float32(i % 10_007))

    record = tf.numpy_function(read, [record_id], tf.float32)
    record.set_shape([16])
    return record


def _ex5_ids() -> tuple:
    import numpy as np

    return (np.random.default_rng().integers(0, 1_000_000, size=64),)


def _ex5_naive(ids):
    import tensorflow as tf

    options = tf.data.Options()
    options.experimental_optimization.inject_prefetch = False
    options.experimental_optimization.map_parallelization = False
    ds = tf.data.Dataset.from_tensor_slices(ids).map(_ex5_read_record).map(lambda r: tf.tanh(r) * 2.0)
    return [b.numpy() for b in ds.batch(16).with_options(options)]


def _setup_tfdata_latency_pipeline() -> Pair:
    import tensorflow as tf

    def fast(ids):
        ds = tf.data.Dataset.from_tensor_slices(ids).map(_ex5_read_record, num_parallel_calls=16)
        ds = ds.batch(16).map(lambda r: tf.tanh(r) * 2.0).prefetch(tf.data.AUTOTUNE)
        options = tf.data.Options()
        options.threading.private_threadpool_size = 16
        return [b.numpy() for b in ds.with_options(options)]

    return _ex5_naive, fast, _ex5_ids


def _slow_tfdata_latency_pipeline() -> Pair:
    """The mistake: trusting AUTOTUNE, which stops at the 2-thread pool on 2 cores."""
    import tensorflow as tf

    def autotune_only(ids):
        ds = tf.data.Dataset.from_tensor_slices(ids).map(_ex5_read_record, num_parallel_calls=tf.data.AUTOTUNE)
        ds = ds.batch(16).map(lambda r: tf.tanh(r) * 2.0).prefetch(tf.data.AUTOTUNE)
        return [b.numpy() for b in ds]

    return _ex5_naive, autotune_only, _ex5_ids


def _ex5_featurize(x):
    import tensorflow as tf

    x = (x - tf.reduce_mean(x)) / (tf.math.reduce_std(x) + 1e-3)
    x = tf.clip_by_value(x, -2.0, 2.0)
    return tf.concat([x, [tf.reduce_max(x) - tf.reduce_min(x)]], axis=0)


def _ex5_rows() -> tuple:
    import numpy as np

    return (np.random.default_rng().normal(size=(8192, 16)).astype("float32"),)


def _ex5_per_element(data):
    import tensorflow as tf

    return [b.numpy() for b in tf.data.Dataset.from_tensor_slices(data).map(_ex5_featurize).batch(256)]


def _setup_tfdata_vectorized_map() -> Pair:
    import tensorflow as tf

    def featurize_batch(xb):
        mean = tf.reduce_mean(xb, axis=-1, keepdims=True)
        std = tf.math.reduce_std(xb, axis=-1, keepdims=True)
        x = tf.clip_by_value((xb - mean) / (std + 1e-3), -2.0, 2.0)
        return tf.concat([x, tf.reduce_max(x, -1, keepdims=True) - tf.reduce_min(x, -1, keepdims=True)], axis=-1)

    def batched(data):
        return [b.numpy() for b in tf.data.Dataset.from_tensor_slices(data).batch(256).map(featurize_batch)]

    return _ex5_per_element, batched, _ex5_rows


def _slow_tfdata_vectorized_map() -> Pair:
    """The mistake: ``tf.map_fn`` over the batch, which still runs the
    per-row function once per row."""
    import tensorflow as tf

    def map_fn_batched(data):
        ds = tf.data.Dataset.from_tensor_slices(data).batch(256).map(lambda xb: tf.map_fn(_ex5_featurize, xb))
        return [b.numpy() for b in ds]

    return _ex5_per_element, map_fn_batched, _ex5_rows


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


BENCHMARKS: dict[str, Benchmark] = {
    b.name: b
    for b in (
        Benchmark(
            name="graph_vs_eager",
            chapter="06_autograph",
            description="40 small ops on an 8x16 tensor: eager Python vs one tf.function",
            check="graph_vs_eager",
            setup=_setup_graph_vs_eager,
            work=_work_graph_vs_eager,
            label="tf.function",
            baseline_label="eager",
            rtol=1e-4,
            atol=1e-5,
            slow_setup=_slow_graph_vs_eager,
        ),
        Benchmark(
            name="xla_fused_chain",
            chapter="04_xla",
            description="24 elementwise ops on 512x1024 floats: tf.function vs jit_compile=True",
            check="xla_fused_chain",
            setup=_setup_xla_fused_chain,
            work=_work_xla_fused_chain,
            label="XLA",
            baseline_label="plain",
            rtol=1e-4,
            atol=1e-5,
            slow_setup=_slow_xla_fused_chain,
        ),
        Benchmark(
            name="tfdata_parallel_prefetch",
            chapter="05_tf_data",
            description="24 elements with 10 ms simulated I/O each, 20 ms step per batch of 8: "
            "sequential map vs parallel map (8-thread pool) + prefetch",
            check="tfdata_parallel_prefetch",
            setup=_setup_tfdata_parallel_prefetch,
            label="parallel map + prefetch",
            baseline_label="naive",
            slow_setup=_slow_tfdata_parallel_prefetch,
        ),
        Benchmark(
            name="tfdata_batch_before_map",
            chapter="05_tf_data",
            description="4096 rows of 16 floats through a vectorizable map: map then batch vs batch then map",
            check="tfdata_batch_before_map",
            setup=_setup_tfdata_batch_before_map,
            work=_work_tfdata_batch_before_map,
            label="batch then map",
            baseline_label="map then batch",
            slow_setup=_slow_tfdata_batch_before_map,
        ),
        Benchmark(
            name="device_matmul",
            chapter="02_gpu_placement",
            description="ten dependent (n x n) @ (n x 64) matmuls with tanh (n=512 on CPU, 1024 on GPU): "
            "/CPU:0 vs the exercise device (/GPU:0, or /CPU:1 without a GPU)",
            check="device_matmul",
            setup=_setup_device_matmul,
            work=_work_device_matmul,
            label="exercise device",
            baseline_label="/CPU:0",
            rtol=1e-3,
            atol=1e-4,
        ),
        Benchmark(
            name="mixed_precision_step",
            chapter="03_mixed_precision",
            description="forward + backward of a 3-layer MLP (256 rows, width 1024 on CPU; 2048 rows, width 4096 on GPU): "
            "float32 vs mixed policy",
            check="mixed_precision_step",
            setup=_setup_mixed_precision_step,
            work=_work_mixed_precision_step,
            label="mixed precision step",
            baseline_label="float32",
            rtol=3e-2,
            atol=3e-2,
        ),
        Benchmark(
            name="xla_train_step",
            chapter="04_xla",
            description="exercise 4's MLP training step (1024x8 inputs, width 256, forward + backward + update): "
            "tf.function vs jit_compile=True",
            check="xla_train_step",
            setup=_setup_xla_train_step,
            label="XLA step",
            baseline_label="plain step",
            rtol=1e-4,
            atol=1e-5,
            slow_setup=_slow_xla_train_step,
        ),
        Benchmark(
            name="tfdata_latency_pipeline",
            chapter="05_tf_data",
            description="exercise 5's source: 64 records, 8 ms simulated latency each, batches of 16: "
            "sequential pipeline (automatic optimisations off) vs 16 reads in flight + prefetch",
            check="tfdata_latency_pipeline",
            setup=_setup_tfdata_latency_pipeline,
            label="16 reads in flight",
            baseline_label="naive",
            slow_setup=_slow_tfdata_latency_pipeline,
        ),
        Benchmark(
            name="tfdata_vectorized_map",
            chapter="05_tf_data",
            description="exercise 5's featurize on 8192 rows of 16 floats: per-element map then batch vs "
            "batch then a vectorised map",
            check="tfdata_vectorized_map",
            setup=_setup_tfdata_vectorized_map,
            label="vectorised map",
            baseline_label="per-element map",
            rtol=1e-4,
            atol=1e-5,
            slow_setup=_slow_tfdata_vectorized_map,
        ),
        Benchmark(
            name="keras_inference_graph_vs_eager",
            chapter="08_deployment",
            description="exercise 8's 6-16-3 Keras classifier on one row: eager model(x) vs "
            "tf.function(model) with a (None, 6) float32 input_signature",
            check="keras_inference_graph_vs_eager",
            setup=_setup_keras_inference_graph_vs_eager,
            label="signature-traced graph",
            baseline_label="eager model(x)",
            rtol=1e-4,
            atol=1e-5,
            slow_setup=_slow_keras_inference_graph_vs_eager,
        ),
    )
}
