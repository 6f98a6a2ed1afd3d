"""Planted wrong answers for exercise 5 (tf.data)."""
from tests.wrong_answers import WrongAnswer

ASSIGNMENT = "05_tf_data"

FULL = {"test-fast-pipeline": 4, "test-cache-placement": 3, "test-featurize-batch": 3}

PREFETCH_ONLY = '''
def fast_pipeline(ids):
    ds = tf.data.Dataset.from_tensor_slices(ids).map(read_record).map(parse).batch(16)
    return ds.prefetch(tf.data.AUTOTUNE)
'''

CACHE_AFTER_AUGMENT = '''
def training_dataset(ids):
    ds = tf.data.Dataset.from_tensor_slices(ids).map(expensive_load).map(augment)
    return ds.cache().batch(8)
'''

NO_CACHE = '''
def training_dataset(ids):
    return tf.data.Dataset.from_tensor_slices(ids).map(expensive_load).map(augment).batch(8)
'''

STATISTICS_OVER_THE_BATCH = '''
def featurize_batch(xb):
    x = (xb - tf.reduce_mean(xb)) / (tf.math.reduce_std(xb) + 1e-3)
    x = tf.clip_by_value(x, -2.0, 2.0)
    return tf.concat([x, tf.reduce_max(x, -1, keepdims=True) - tf.reduce_min(x, -1, keepdims=True)], axis=-1)
'''

MAP_FN = '''
def featurize_batch(xb):
    return tf.map_fn(featurize, xb)
'''

CASES = [
    WrongAnswer(
        name="prefetch_only_and_cache_after_augment",
        replace={"answer-fast-pipeline": PREFETCH_ONLY, "answer-training-dataset": CACHE_AFTER_AUGMENT},
        expect={**FULL, "test-fast-pipeline": 0, "test-cache-placement": 0},
        messages={"test-fast-pipeline": "too slow", "test-cache-placement": "was cached"},
    ),
    WrongAnswer(
        name="no_cache_and_batch_statistics",
        replace={"answer-training-dataset": NO_CACHE, "answer-featurize-batch": STATISTICS_OVER_THE_BATCH},
        expect={**FULL, "test-cache-placement": 0, "test-featurize-batch": 0},
        messages={"test-cache-placement": "ran 40 times for 20 ids", "test-featurize-batch": "does not match"},
    ),
    WrongAnswer(
        name="map_fn_is_not_vectorised",
        replace={"answer-featurize-batch": MAP_FN},
        expect={**FULL, "test-featurize-batch": 0},
        messages={"test-featurize-batch": "loops over the rows"},
    ),
]
