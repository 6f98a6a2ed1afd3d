"""Planted wrong answers for exercise 9 (profiling and debugging)."""
from tests.wrong_answers import WrongAnswer

ASSIGNMENT = "09_profiling"

FULL = {"test-profile-steps": 2, "test-slowest-op": 2, "test-stable-loss": 2, "test-safe-normalize": 2,
        "test-accumulation": 3}

WARMUP_INSIDE_PROFILE = '''
def profile_steps(step, args, logdir, steps=5):
    tf.profiler.experimental.start(str(logdir))
    try:
        for _ in range(steps + 1):          # "warm-up" inside the profile: one execution too many
            step(*args).numpy()
    finally:
        tf.profiler.experimental.stop()
    return find_xplane(logdir)
'''

GUESSED_FROM_THE_CODE = '''
SLOWEST_OP_TYPE = "MatMul"
'''

NO_FINALLY = '''
def profile_steps(step, args, logdir, steps=5):
    step(*args)
    tf.profiler.experimental.start(str(logdir))
    for _ in range(steps):
        step(*args).numpy()
    tf.profiler.experimental.stop()         # skipped when a step raises
    return find_xplane(logdir)
'''

CLIPPED_LOG = '''
def stable_cross_entropy(logits, labels):
    probabilities = tf.clip_by_value(tf.nn.softmax(logits), 1e-7, 1.0)
    return -tf.reduce_sum(labels * tf.math.log(probabilities), axis=-1)
'''

SINGLE_WHERE = '''
def safe_normalize(v):
    norm = tf.norm(v, axis=-1, keepdims=True)
    return tf.where(norm > 0.0, v / norm, tf.zeros_like(v))
'''

AVERAGED_MICRO_BATCH_MEANS = '''
def accumulated_gradients(model, x, y, micro_batch_size):
    losses, sums, count = [], None, 0
    for start in range(0, x.shape[0], micro_batch_size):
        xb, yb = x[start:start + micro_batch_size], y[start:start + micro_batch_size]
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(per_example_loss(yb, model(xb)))
        grads = tape.gradient(loss, model.trainable_variables)
        sums = grads if sums is None else [s + g for s, g in zip(sums, grads)]
        losses.append(loss)
        count += 1
    return tf.add_n(losses) / count, [s / count for s in sums]
'''

CASES = [
    WrongAnswer(
        name="warmup_inside_profile_and_guessed_op",
        replace={"answer-profile-steps": WARMUP_INSIDE_PROFILE, "answer-slowest-op": GUESSED_FROM_THE_CODE},
        expect={**FULL, "test-profile-steps": 0, "test-slowest-op": 0},
        messages={"test-profile-steps": "expected 4", "test-slowest-op": "is not an op type"},
    ),
    WrongAnswer(
        name="clipped_log_and_single_where",
        replace={"answer-stable-loss": CLIPPED_LOG, "answer-safe-normalize": SINGLE_WHERE},
        expect={**FULL, "test-stable-loss": 0, "test-safe-normalize": 0},
        messages={"test-stable-loss": "other values", "test-safe-normalize": "check_numerics stopped safe_normalize"},
    ),
    WrongAnswer(
        name="profiler_left_running_and_micro_batch_means_averaged",
        replace={"answer-profile-steps": NO_FINALLY, "answer-accumulation": AVERAGED_MICRO_BATCH_MEANS},
        expect={**FULL, "test-profile-steps": 0, "test-accumulation": 0},
        messages={"test-profile-steps": "still running", "test-accumulation": "full batch's mean loss"},
    ),
]
