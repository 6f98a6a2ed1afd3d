"""The book's benchmark pairs that time tf.data input pipelines (chapter 5 and
exercise 5): latency-bound maps, batching before a vectorizable map.

Each ``_setup_<name>`` imports TensorFlow inside and returns ``(baseline,
candidate, make_inputs)``; :mod:`autograder.course.benchmarks` registers them
in ``BENCHMARKS`` (import them from there).
"""
from __future__ import annotations

import time
from typing import Any

from autograder.course.benchmark_pairs_compute import Pair
from autograder.course.roofline import Work


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
