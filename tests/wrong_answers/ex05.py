"""Mutation catalogue for exercise 5 (tf.data).

Clauses are the numbered "Specification" lines of each part's text:

- test-fast-pipeline: 1 a tf.data.Dataset, 2 the naive batches in order, 3 speed
  (0.6 of the hidden reference's speedup, in factors);
- test-cache-placement: 1 a tf.data.Dataset, 2 augment(load(id)) in order in
  batches of 8, 3 one load per id over all epochs, 4 new augmentations each epoch;
- test-featurize-batch: 1 featurize per row, 2 no loop over rows in the graph,
  3 speed (0.4 of the hidden reference's speedup, in factors).
"""
from tests.wrong_answers import Case, steal_solution

ASSIGNMENT = "05_tf_data"

P1, P2, P3 = "test-fast-pipeline", "test-cache-placement", "test-featurize-batch"
A1, A2, A3 = "answer-fast-pipeline", "answer-training-dataset", "answer-featurize-batch"

# --- part 1 -------------------------------------------------------------------------

# 1.3: AUTOTUNE alone: on a 2-core machine tf.data caps it at 2 reads in flight.
AUTOTUNE_ONLY = '''
def fast_pipeline(ids):
    ds = tf.data.Dataset.from_tensor_slices(ids).map(read_record, num_parallel_calls=tf.data.AUTOTUNE)
    return ds.map(parse).batch(16).prefetch(tf.data.AUTOTUNE)
'''

# 1.2: fast, but drops the last partial batch (64 ids hide it; 37 do not).
DROPS_LAST_BATCH = '''
def fast_pipeline(ids):
    ds = tf.data.Dataset.from_tensor_slices(ids).map(read_record, num_parallel_calls=16)
    options = tf.data.Options()
    options.threading.private_threadpool_size = 16
    return ds.batch(16, drop_remainder=True).map(parse).prefetch(2).with_options(options)
'''

# 1.2: fast, but lets tf.data yield records as they arrive (deterministic off): reads take
# 2 to 14 ms, so the records come out of order (with every read 8 ms they seldom did).
OUT_OF_ORDER = '''
def fast_pipeline(ids):
    options = tf.data.Options()
    options.threading.private_threadpool_size = 16
    options.deterministic = False      # order does not matter for speed
    ds = tf.data.Dataset.from_tensor_slices(ids).map(read_record, num_parallel_calls=16)
    return ds.map(parse, num_parallel_calls=4).batch(16).prefetch(2).with_options(options)
'''

# 1.1 (duck-typed): an iterable of the right batches, read 16 at a time by a
# thread pool: fast and right, but not a tf.data.Dataset.
NOT_A_DATASET = '''
import concurrent.futures as _futures

class FastBatches:
    element_spec = tf.TensorSpec([None, 16], tf.float32)

    def __init__(self, ids):
        self.ids = np.asarray(ids)

    def __iter__(self):
        with _futures.ThreadPoolExecutor(16) as pool:
            records = np.stack(list(pool.map(_read, self.ids)))
        rows = tf.tanh(tf.constant(records)) * 2.0
        for start in range(0, len(self.ids), 16):
            yield rows[start:start + 16]

def fast_pipeline(ids):
    return FastBatches(ids)
'''

# Right: one fused map, 8 reads in flight, an 8-thread pool.
FUSED_EIGHT_WIDE = '''
def fast_pipeline(ids):
    options = tf.data.Options()
    options.threading.private_threadpool_size = 8
    ds = tf.data.Dataset.from_tensor_slices(ids)
    ds = ds.map(lambda i: parse(read_record(i)), num_parallel_calls=8, deterministic=True)
    return ds.batch(16).with_options(options)
'''

# Right: 24 reads in flight, parse per element, a small fixed prefetch.
WIDE_POOL_PREFETCH = '''
def fast_pipeline(ids):
    ds = (tf.data.Dataset.from_tensor_slices(ids)
          .map(read_record, num_parallel_calls=24)
          .map(parse, num_parallel_calls=tf.data.AUTOTUNE)
          .batch(16)
          .prefetch(2))
    options = tf.data.Options()
    options.threading.private_threadpool_size = 24
    return ds.with_options(options)
'''

# --- part 2 -------------------------------------------------------------------------

# 2.4: the cache after the random map freezes the augmentations.
CACHE_AFTER_AUGMENT = '''
def training_dataset(ids):
    ds = tf.data.Dataset.from_tensor_slices(ids).map(expensive_load).map(augment)
    return ds.cache().batch(8)
'''

# 2.3: no cache: every epoch loads again.
NO_CACHE = '''
def training_dataset(ids):
    return tf.data.Dataset.from_tensor_slices(ids).map(expensive_load).map(augment).batch(8)
'''

# 2.2: batches of 4.
BATCHES_OF_FOUR = '''
def training_dataset(ids):
    ds = tf.data.Dataset.from_tensor_slices(ids).map(expensive_load).cache()
    return ds.map(augment).batch(4)
'''

# 2.1 (duck-typed): loads once, new augmentations each pass, batches of 8, but a
# plain Python iterable.
NOT_A_DATASET_2 = '''
class Epochs:
    def __init__(self, ids):
        self.images = tf.stack([expensive_load(i) for i in ids])

    def __iter__(self):
        augmented = augment(self.images)
        for start in range(0, len(augmented), 8):
            yield augmented[start:start + 8]

def training_dataset(ids):
    return Epochs(ids)
'''

# Rebinds the locked expensive_load with a memoising copy, so no cache is needed
# and LOADS counts one load per id.
REBINDS_EXPENSIVE_LOAD = '''
_seen = {}

def _load_once(record_id):
    key = int(record_id)
    if key not in _seen:
        _seen[key] = _load(record_id)
    return _seen[key]

def expensive_load(record_id):
    image = tf.numpy_function(_load_once, [record_id], tf.float32)
    image.set_shape([8])
    return image

def training_dataset(ids):
    return tf.data.Dataset.from_tensor_slices(ids).map(expensive_load).map(augment).batch(8)
'''

# Right: load everything eagerly once, then a dataset over the loaded images.
EAGER_PRELOAD = '''
def training_dataset(ids):
    images = tf.stack([expensive_load(i) for i in ids])
    return tf.data.Dataset.from_tensor_slices(images).map(augment).batch(8)
'''

# Right: parallel load, cache, batch, then augment whole batches.
AUGMENT_BATCHES = '''
def training_dataset(ids):
    ds = tf.data.Dataset.from_tensor_slices(ids).map(expensive_load, num_parallel_calls=tf.data.AUTOTUNE)
    return ds.cache().batch(8).map(augment).prefetch(tf.data.AUTOTUNE)
'''

# --- part 3 -------------------------------------------------------------------------

# 3.1: statistics over the whole batch instead of per row.
STATISTICS_OVER_THE_BATCH = '''
def featurize_batch(xb):
    x = (xb - tf.reduce_mean(xb)) / (tf.math.reduce_std(xb) + 1e-3)
    x = tf.clip_by_value(x, -2.0, 2.0)
    return tf.concat([x, tf.reduce_max(x, -1, keepdims=True) - tf.reduce_min(x, -1, keepdims=True)], axis=-1)
'''

# 3.2: a loop over the rows in the graph.
MAP_FN = '''
def featurize_batch(xb):
    return tf.map_fn(featurize, xb)
'''

# 3.3: no While op, the right values, but a Python loop over the rows behind a
# numpy_function: not faster than the per-element pipeline.
NUMPY_ROW_LOOP = '''
def _rows(xb):
    out = []
    for row in xb:
        z = np.clip((row - row.mean()) / (row.std() + 1e-3), -2.0, 2.0)
        out.append(np.append(z, z.max() - z.min()).astype(np.float32))
    return np.stack(out)

def featurize_batch(xb):
    features = tf.numpy_function(_rows, [xb], tf.float32)
    features.set_shape([None, None])
    return features
'''

# Patches the thresholds table (the audit's "None turns speed into skipped")
# and submits the slow row loop.
PATCHES_THRESHOLDS = '''
import autograder.checks.thresholds as _thresholds
for _row in _thresholds.THRESHOLDS.values():
    for _profile in list(_row):
        _row[_profile] = None
''' + NUMPY_ROW_LOOP

# Right: tf.vectorized_map turns the per-row function into batch ops.
VECTORIZED_MAP = '''
def featurize_batch(xb):
    return tf.vectorized_map(featurize, xb)
'''

# Right: a Python wrapper around a tf.function, with tf.nn.moments.
WRAPPED_MOMENTS = '''
@tf.function
def _features(xb):
    mean, variance = tf.nn.moments(xb, axes=[1], keepdims=True)
    z = tf.clip_by_value((xb - mean) / (tf.sqrt(variance) + 1e-3), -2.0, 2.0)
    return tf.concat([z, tf.reduce_max(z, 1, keepdims=True) - tf.reduce_min(z, 1, keepdims=True)], axis=1)

def featurize_batch(xb):
    return _features(xb)
'''

CASES = [
    Case(
        name="slow_pipelines",
        replace={A1: AUTOTUNE_ONLY, A2: CACHE_AFTER_AUGMENT, A3: NUMPY_ROW_LOOP},
        loses=("test-fast-pipeline", "test-cache-placement", "test-featurize-batch"),
        breaks={P1: 3, P2: 4, P3: 3},
        messages={P1: "too slow", P2: "exactly the augmentations of epoch 1", P3: "too slow"},
    ),
    Case(
        name="wrong_batches",
        replace={A1: DROPS_LAST_BATCH, A2: NO_CACHE, A3: STATISTICS_OVER_THE_BATCH},
        loses=("test-fast-pipeline", "test-cache-placement", "test-featurize-batch"),
        breaks={P1: 2, P2: 3, P3: 1},
        messages={P1: "differs from naive_pipeline", P2: "ran 39 times for 13 ids", P3: "differs from featurize per row"},
    ),
    Case(
        name="duck_typed_datasets_and_map_fn",
        replace={A1: NOT_A_DATASET, A2: NOT_A_DATASET_2, A3: MAP_FN},
        loses=("test-fast-pipeline", "test-cache-placement", "test-featurize-batch"),
        breaks={P1: 1, P2: 1, P3: 2},
        messages={P1: "must return a tf.data.Dataset", P2: "must return a tf.data.Dataset",
                  P3: "loops over the rows"},
        hostile="duck-typed",
    ),
    Case(
        name="out_of_order_reads",
        replace={A1: OUT_OF_ORDER},
        loses=("test-fast-pipeline",),
        breaks={P1: 2},
        messages={P1: "batches in order"},
    ),
    Case(
        name="steals_part1_and_batches_of_four",
        replace={A1: steal_solution(ASSIGNMENT, A1), A2: BATCHES_OF_FOUR},
        loses=("test-fast-pipeline", "test-cache-placement"),
        breaks={P2: 2},
        messages={P2: "expected batches of 8"},
        hostile="reads-course-files",
    ),
    Case(
        name="rebinds_expensive_load",
        replace={A2: REBINDS_EXPENSIVE_LOAD},
        loses=("test-cache-placement", "test-featurize-batch"),
        messages={P2: "integrity", P3: "integrity"},
        hostile="rebinds-locked-name",
    ),
    Case(
        name="patches_thresholds",
        replace={A3: PATCHES_THRESHOLDS},
        loses=("test-featurize-batch",),
        messages={P3: "integrity"},
        hostile="patches-grader",
    ),
    Case(
        name="right_fused_preload_vectorized_map",
        replace={A1: FUSED_EIGHT_WIDE, A2: EAGER_PRELOAD, A3: VECTORIZED_MAP},
    ),
    Case(
        name="right_wide_pool_batch_augment_wrapped",
        replace={A1: WIDE_POOL_PREFETCH, A2: AUGMENT_BATCHES, A3: WRAPPED_MOMENTS},
    ),
]
