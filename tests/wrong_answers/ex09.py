"""Mutation catalogue for exercise 9 (profiling and debugging): per clause of
every part a wrong answer, two right answers written differently, and the
hostile classes."""

from tests.wrong_answers import Case, edited, steal_solution

ASSIGNMENT = "09_profiling"


# --- Part 1: profile_steps ---------------------------------------------------------------

# Clause 1: no warm-up call (the trace still holds `steps` executions).
NO_WARMUP = '''
def profile_steps(step, args, logdir, steps=5):
    with tf.profiler.experimental.Profile(str(logdir)):
        for _ in range(steps):
            step(*args).numpy()
    return find_xplane(logdir)
'''

# Clause 2: the warm-up inside the profile: one execution too many.
WARMUP_INSIDE_PROFILE = '''
def profile_steps(step, args, logdir, steps=5):
    tf.profiler.experimental.start(str(logdir))
    try:
        for _ in range(steps + 1):
            step(*args).numpy()
    finally:
        tf.profiler.experimental.stop()
    return find_xplane(logdir)
'''

# Clause 3: no finally: the profiler keeps running when a step raises.
NO_FINALLY = '''
def profile_steps(step, args, logdir, steps=5):
    step(*args)
    tf.profiler.experimental.start(str(logdir))
    for _ in range(steps):
        step(*args).numpy()
    tf.profiler.experimental.stop()
    return find_xplane(logdir)
'''

# Clause 4: returns the folder, not the trace file.
RETURNS_LOGDIR = '''
def profile_steps(step, args, logdir, steps=5):
    step(*args)
    with tf.profiler.experimental.Profile(str(logdir)):
        for _ in range(steps):
            step(*args).numpy()
    return logdir
'''

PROFILE_START_STOP = '''
def profile_steps(step, args, logdir, steps=5):
    import glob, os
    step(*args)
    options = tf.profiler.experimental.ProfilerOptions(host_tracer_level=2, python_tracer_level=0)
    tf.profiler.experimental.start(os.fspath(logdir), options=options)
    try:
        for _ in range(steps):
            out = step(*args)
            np.asarray(out)
    finally:
        tf.profiler.experimental.stop()
    files = glob.glob(os.path.join(os.fspath(logdir), "plugins", "profile", "*", "*.xplane.pb"))
    return max(files, key=os.path.getmtime)
'''

PROFILE_WITH_TRACE_STEPS = '''
def profile_steps(step, args, logdir, steps=5):
    _ = step(*args)
    with tf.profiler.experimental.Profile(str(logdir)):
        for i in range(steps):
            with tf.profiler.experimental.Trace("step", step_num=i, _r=1):
                result = step(*args)
                for leaf in tf.nest.flatten(result):
                    leaf.numpy()
    return Path(find_xplane(logdir))
'''

# --- Part 2: slowest op ------------------------------------------------------------------

GUESSED_PYTHON_NAME = '''
SLOWEST_OP_TYPE = "matmul"
'''
SECOND_SLOWEST = '''
SLOWEST_OP_TYPE = "Cumsum"
'''
SLOWEST_FROM_THE_TABLE = '''
_trace = profile_steps(mystery_step, (mystery_input,), Path(tempfile.mkdtemp()), steps=3)
SLOWEST_OP_TYPE = op_table(_trace)[0].op
'''
SLOWEST_NUMPY_STRING = '''
SLOWEST_OP_TYPE = np.str_("TopKV2")
'''
# Duck-typed: a string equal to every string.
EQUALS_EVERYTHING = '''
class _AnyOp(str):
    def __eq__(self, other):
        return True
    __hash__ = str.__hash__

SLOWEST_OP_TYPE = _AnyOp("TopKV2?")
'''
# Rebinds the locked mystery_step so that the slowest op is the learner's choice.
REBIND_MYSTERY = '''
@tf.function
def mystery_step(x):
    return tf.reduce_sum(tf.math.cumsum(x, axis=1))

SLOWEST_OP_TYPE = "Cumsum"
'''

# --- Part 3: stable cross-entropy ---------------------------------------------------------

MEAN_OVER_CLASSES = '''
def stable_cross_entropy(logits, labels):
    return -tf.reduce_mean(labels * tf.nn.log_softmax(logits), axis=-1)
'''
# Clause 2: right values, but the unselected branch takes log(0) = -inf.
WHERE_LOG_SOFTMAX = '''
def stable_cross_entropy(logits, labels):
    probabilities = tf.nn.softmax(logits)
    terms = tf.where(probabilities > 0.0, labels * tf.math.log(probabilities), labels * tf.nn.log_softmax(logits))
    return -tf.reduce_sum(terms, axis=-1)
'''
# Clause 3: right, finite values; the log-sum-exp's gradient is cut.
STOPPED_LOGSUMEXP = '''
def stable_cross_entropy(logits, labels):
    lse = tf.stop_gradient(tf.reduce_logsumexp(logits, axis=-1, keepdims=True))
    return -tf.reduce_sum(labels * (logits - lse), axis=-1)
'''
CE_LIBRARY = '''
def stable_cross_entropy(logits, labels):
    return tf.nn.softmax_cross_entropy_with_logits(labels=labels, logits=logits)
'''
CE_LOGSUMEXP = '''
def stable_cross_entropy(logits, labels):
    shifted = logits - tf.reduce_max(logits, axis=-1, keepdims=True)
    log_z = tf.math.log(tf.reduce_sum(tf.exp(shifted), axis=-1))
    return log_z * tf.reduce_sum(labels, axis=-1) - tf.reduce_sum(labels * shifted, axis=-1)
'''

# --- Part 4: safe normalize ----------------------------------------------------------------

FIRST_AXIS = '''
def safe_normalize(v):
    squared = tf.reduce_sum(tf.square(v), axis=0, keepdims=True)
    nonzero = squared > 0.0
    norm = tf.sqrt(tf.where(nonzero, squared, tf.ones_like(squared)))
    return tf.where(nonzero, v / norm, tf.zeros_like(v))
'''
# Clause 2: tf.math.l2_normalize: 0 at a zero row, but a gradient of 1/sqrt(epsilon) there.
L2_NORMALIZE = '''
def safe_normalize(v):
    return tf.math.l2_normalize(v, axis=-1)
'''
SINGLE_WHERE = '''
def safe_normalize(v):
    norm = tf.norm(v, axis=-1, keepdims=True)
    return tf.where(norm > 0.0, v / norm, tf.zeros_like(v))
'''
STOPPED_NORM = '''
def safe_normalize(v):
    squared = tf.reduce_sum(tf.square(v), axis=-1, keepdims=True)
    nonzero = squared > 0.0
    norm = tf.stop_gradient(tf.sqrt(tf.where(nonzero, squared, tf.ones_like(squared))))
    return tf.where(nonzero, v / norm, tf.zeros_like(v))
'''
NORMALIZE_DIVIDE_NO_NAN = '''
def safe_normalize(v):
    squared = tf.reduce_sum(v * v, axis=-1, keepdims=True)
    safe = tf.where(squared > 0, squared, 1.0)
    return tf.math.divide_no_nan(v, tf.sqrt(safe)) * tf.cast(squared > 0, v.dtype)
'''
NORMALIZE_MAXIMUM = '''
def safe_normalize(v):
    squared = tf.reduce_sum(tf.square(v), axis=-1, keepdims=True)
    scaled = v * tf.math.rsqrt(tf.maximum(squared, np.finfo(np.float32).tiny))
    return tf.where(squared > 0, scaled, 0.0)
'''

# --- Part 5: accumulation -------------------------------------------------------------------

# Clause 1: the mean of the micro-batch means (gradients right).
LOSS_MEAN_OF_MEANS = '''
def accumulated_gradients(model, x, y, micro_batch_size):
    n = x.shape[0]
    means, sums = [], [tf.zeros_like(v) for v in model.trainable_variables]
    for start in range(0, n, micro_batch_size):
        xb, yb = x[start:start + micro_batch_size], y[start:start + micro_batch_size]
        with tf.GradientTape() as tape:
            per_example = per_example_loss(yb, model(xb))
            loss = tf.reduce_sum(per_example) / n
        sums = [s + g for s, g in zip(sums, tape.gradient(loss, model.trainable_variables))]
        means.append(tf.reduce_mean(per_example))
    return tf.add_n(means) / len(means), sums
'''
# Clause 2: right loss, gradients of each micro-batch's mean added up unscaled.
GRADS_OF_MEANS_SUMMED = '''
def accumulated_gradients(model, x, y, micro_batch_size):
    n = x.shape[0]
    total, sums = 0.0, [tf.zeros_like(v) for v in model.trainable_variables]
    for start in range(0, n, micro_batch_size):
        xb, yb = x[start:start + micro_batch_size], y[start:start + micro_batch_size]
        with tf.GradientTape() as tape:
            per_example = per_example_loss(yb, model(xb))
            loss = tf.reduce_mean(per_example)
        sums = [s + g for s, g in zip(sums, tape.gradient(loss, model.trainable_variables))]
        total += float(tf.reduce_sum(per_example))
    return tf.constant(total / n), sums
'''
# Clause 3: the whole batch at once.
WHOLE_BATCH = '''
def accumulated_gradients(model, x, y, micro_batch_size):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(per_example_loss(y, model(x)))
    return loss, tape.gradient(loss, model.trainable_variables)
'''
ACCUMULATE_WEIGHTED_MEANS = '''
def accumulated_gradients(model, x, y, micro_batch_size):
    n = int(x.shape[0])
    loss_total, grads_total = 0.0, None
    for xb, yb in tf.data.Dataset.from_tensor_slices((x, y)).batch(micro_batch_size):
        weight = int(xb.shape[0]) / n
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(per_example_loss(yb, model(xb)))
        grads = tape.gradient(loss, model.trainable_variables)
        grads_total = ([weight * g for g in grads] if grads_total is None
                       else [a + weight * g for a, g in zip(grads_total, grads)])
        loss_total += weight * float(loss)
    return np.float32(loss_total), grads_total
'''
ACCUMULATE_VARIABLES = '''
def accumulated_gradients(model, x, y, micro_batch_size):
    n = x.shape[0]
    accum = [tf.Variable(tf.zeros_like(v), trainable=False) for v in model.trainable_variables]
    total = tf.Variable(0.0)
    starts = list(range(0, n, micro_batch_size))
    for start in starts:
        end = min(start + micro_batch_size, n)
        with tf.GradientTape() as tape:
            loss_sum = tf.reduce_sum(per_example_loss(y[start:end], model(x[start:end])))
        for a, g in zip(accum, tape.gradient(loss_sum, model.trainable_variables)):
            a.assign_add(g / n)
        total.assign_add(loss_sum / n)
    return total.read_value(), [a.read_value() for a in accum]
'''

# Clause 3 (lets that error propagate): the step's error is caught and printed.
SWALLOWS_STEP_ERROR = '''
def profile_steps(step, args, logdir, steps=5):
    step(*args)
    with tf.profiler.experimental.Profile(str(logdir)):
        for _ in range(steps):
            try:
                step(*args).numpy()
            except Exception as error:
                print("a profiled step failed:", error)
                break
    return find_xplane(logdir)
'''

# Clause 4 (the file this profile wrote): the oldest trace under logdir, not the newest.
RETURNS_OLDEST_TRACE = '''
def profile_steps(step, args, logdir, steps=5):
    import glob, os
    step(*args)
    with tf.profiler.experimental.Profile(str(logdir)):
        for _ in range(steps):
            step(*args).numpy()
    files = glob.glob(os.path.join(str(logdir), "plugins", "profile", "*", "*.xplane.pb"))
    return min(files, key=os.path.getmtime)
'''

# Part 3 clause 1: finite, but an epsilon inside the log caps the loss of a confident wrong answer.
LOG_EPSILON = '''
def stable_cross_entropy(logits, labels):
    return -tf.reduce_sum(labels * tf.math.log(tf.nn.softmax(logits) + 1e-12), axis=-1)
'''

# Part 5 clause 1: every micro-batch's sum divided as if the last one were full.
PADDED_COUNT = '''
def accumulated_gradients(model, x, y, micro_batch_size):
    n = x.shape[0]
    count = -(-n // micro_batch_size) * micro_batch_size
    total, sums = tf.constant(0.0), [tf.zeros_like(v) for v in model.trainable_variables]
    for start in range(0, n, micro_batch_size):
        xb, yb = x[start:start + micro_batch_size], y[start:start + micro_batch_size]
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(per_example_loss(yb, model(xb))) / count
        sums = [s + g for s, g in zip(sums, tape.gradient(loss, model.trainable_variables))]
        total += loss
    return total, sums
'''

# Patches TensorFlow's profiler start so that a profiler left running looks free.
PATCH_PROFILER_START = NO_FINALLY + '''
_real_start = tf.profiler.experimental.start

def _start(logdir, options=None):
    try:
        tf.profiler.experimental.stop()
    except Exception:
        pass
    return _real_start(logdir, options=options)

tf.profiler.experimental.start = _start
'''

# Right: explicit ProfilerOptions with start/stop.
PROFILE_WITH_OPTIONS = '''
def profile_steps(step, args, logdir, steps=5):
    step(*args)   # warm-up: the trace happens here, outside the profile
    options = tf.profiler.experimental.ProfilerOptions(host_tracer_level=3, python_tracer_level=1,
                                                       device_tracer_level=1)
    tf.profiler.experimental.start(str(logdir), options=options)
    try:
        for _ in range(steps):
            out = step(*args)
            tf.nest.map_structure(lambda t: t.numpy() if hasattr(t, "numpy") else t, out)
    finally:
        tf.profiler.experimental.stop()
    return find_xplane(logdir)
'''

# Right: the micro-step a tf.function traced once with a None batch dimension (the grader's
# spy used to call int() on that dimension: issue 21).
ACCUMULATE_TRACED_MICRO_STEP = '''
def accumulated_gradients(model, x, y, micro_batch_size):
    rows = x.shape[0]

    @tf.function(input_signature=[tf.TensorSpec([None, x.shape[1]], x.dtype), tf.TensorSpec([None], y.dtype)])
    def micro_step(xb, yb):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(per_example_loss(yb, model(xb))) / rows
        return loss, tape.gradient(loss, model.trainable_variables)

    loss_sum, grad_sums = tf.constant(0.0), None
    for start in range(0, rows, micro_batch_size):
        loss, grads = micro_step(x[start:start + micro_batch_size], y[start:start + micro_batch_size])
        loss_sum += loss
        grad_sums = list(grads) if grad_sums is None else [a + g for a, g in zip(grad_sums, grads)]
    return loss_sum, grad_sums
'''

# --- Attacks on what the kernel reports -------------------------------------------------

# A forged trace: the profile is recorded, then a trace of the answer's own making (an XSpace with no
# events) is written beside it as the newest file, where a reader of the logdir looks.
FORGES_THE_TRACE = """
import os as _os
import time as _time
from tensorflow.tsl.profiler.protobuf import xplane_pb2 as _xplane_pb2
""" + edited("09_profiling", "answer-profile-steps", "    return find_xplane(logdir)",
             "    _real = find_xplane(logdir)\n"
             "    _forged = _os.path.join(_os.path.dirname(str(_real)), 'forged.xplane.pb')\n"
             "    with open(_forged, 'wb') as _out:\n"
             "        _out.write(_xplane_pb2.XSpace().SerializeToString())\n"
             "    _time.sleep(0.01)\n"
             "    return _forged")

CASES = [
    Case(
        name="right_start_stop_table_library_divide_no_nan_weighted",
        replace={"answer-profile-steps": PROFILE_START_STOP, "answer-slowest-op": SLOWEST_FROM_THE_TABLE,
                 "answer-stable-loss": CE_LIBRARY, "answer-safe-normalize": NORMALIZE_DIVIDE_NO_NAN,
                 "answer-accumulation": ACCUMULATE_WEIGHTED_MEANS},
    ),
    Case(
        name="right_trace_steps_numpy_str_logsumexp_maximum_variables",
        replace={"answer-profile-steps": PROFILE_WITH_TRACE_STEPS, "answer-slowest-op": SLOWEST_NUMPY_STRING,
                 "answer-stable-loss": CE_LOGSUMEXP, "answer-safe-normalize": NORMALIZE_MAXIMUM,
                 "answer-accumulation": ACCUMULATE_VARIABLES},
    ),
    Case(
        name="right_profiler_options_traced_micro_step",
        replace={"answer-profile-steps": PROFILE_WITH_OPTIONS, "answer-accumulation": ACCUMULATE_TRACED_MICRO_STEP},
    ),
    Case(
        name="clause1_no_warmup_python_name_mean_first_axis_mean_of_means",
        replace={"answer-profile-steps": NO_WARMUP, "answer-slowest-op": GUESSED_PYTHON_NAME,
                 "answer-stable-loss": MEAN_OVER_CLASSES, "answer-safe-normalize": FIRST_AXIS,
                 "answer-accumulation": LOSS_MEAN_OF_MEANS},
        loses=("test-profile-steps", "test-slowest-op", "test-stable-loss", "test-safe-normalize", "test-accumulation"),
        breaks={"test-profile-steps": 1, "test-slowest-op": 1, "test-stable-loss": 1, "test-safe-normalize": 1,
                "test-accumulation": 1},
        messages={"test-profile-steps": "called step 4 times", "test-slowest-op": "is not an op type",
                  "test-stable-loss": "other values", "test-safe-normalize": "wrong values",
                  "test-accumulation": "full batch's mean loss"},
    ),
    Case(
        name="clause2_warmup_inside_second_op_log_where_l2_normalize_unscaled",
        replace={"answer-profile-steps": WARMUP_INSIDE_PROFILE, "answer-slowest-op": SECOND_SLOWEST,
                 "answer-stable-loss": WHERE_LOG_SOFTMAX, "answer-safe-normalize": L2_NORMALIZE,
                 "answer-accumulation": GRADS_OF_MEANS_SUMMED},
        loses=("test-profile-steps", "test-slowest-op", "test-stable-loss", "test-safe-normalize", "test-accumulation"),
        breaks={"test-profile-steps": 2, "test-slowest-op": 2, "test-stable-loss": 2, "test-safe-normalize": 2,
                "test-accumulation": 2},
        messages={"test-profile-steps": "expected 4", "test-slowest-op": "is not the slowest",
                  "test-stable-loss": "check_numerics stopped", "test-safe-normalize": "at a zero row",
                  "test-accumulation": "accumulated gradient"},
    ),
    Case(
        name="clause3_no_finally_stopped_gradients_single_where_whole_batch_and_stolen_op",
        replace={"answer-profile-steps": NO_FINALLY, "answer-slowest-op": steal_solution(ASSIGNMENT, "answer-slowest-op"),
                 "answer-stable-loss": STOPPED_LOGSUMEXP, "answer-safe-normalize": SINGLE_WHERE,
                 "answer-accumulation": WHOLE_BATCH},
        loses=("test-profile-steps", "test-slowest-op", "test-stable-loss", "test-safe-normalize", "test-accumulation"),
        breaks={"test-profile-steps": 3, "test-stable-loss": 3, "test-safe-normalize": 3, "test-accumulation": 3},
        messages={"test-profile-steps": "still running", "test-stable-loss": "gradient of stable_cross_entropy",
                  "test-safe-normalize": "check_numerics stopped", "test-accumulation": "rows at once"},
        hostile="reads-course-files",
    ),
    Case(
        name="clause4_returns_logdir_stopped_norm_and_duck_typed_op",
        replace={"answer-profile-steps": RETURNS_LOGDIR, "answer-slowest-op": EQUALS_EVERYTHING,
                 "answer-safe-normalize": STOPPED_NORM},
        loses=("test-profile-steps", "test-slowest-op", "test-safe-normalize"),
        breaks={"test-profile-steps": 4, "test-safe-normalize": 4},
        messages={"test-profile-steps": "return the path of the .xplane.pb file",
                  "test-slowest-op": "not a _AnyOp", "test-safe-normalize": "for non-zero rows"},
        hostile="duck-typed",
    ),
    Case(
        name="clause3_swallows_step_error_log_epsilon_padded_count",
        replace={"answer-profile-steps": SWALLOWS_STEP_ERROR, "answer-stable-loss": LOG_EPSILON,
                 "answer-accumulation": PADDED_COUNT},
        loses=("test-profile-steps", "test-stable-loss", "test-accumulation"),
        breaks={"test-profile-steps": 3, "test-stable-loss": 1, "test-accumulation": 1},
        messages={"test-profile-steps": "must let an error raised by the step propagate",
                  "test-stable-loss": "other values", "test-accumulation": "full batch's mean loss"},
        keeps=("test-slowest-op",),
    ),
    Case(
        name="clause4_returns_oldest_trace",
        replace={"answer-profile-steps": RETURNS_OLDEST_TRACE},
        loses=("test-profile-steps",),
        breaks={"test-profile-steps": 4},
        messages={"test-profile-steps": "the newest under logdir"},
    ),
    Case(
        name="hostile_rebinds_mystery_step",
        replace={"answer-slowest-op": REBIND_MYSTERY},
        loses=("test-slowest-op", "test-stable-loss", "test-safe-normalize", "test-accumulation"),
        messages={"test-slowest-op": "integrity", "test-accumulation": "integrity"},
        hostile="rebinds-locked-name",
    ),
    Case(
        name="hostile_patches_profiler_start",
        replace={"answer-profile-steps": PATCH_PROFILER_START},
        loses=("test-profile-steps", "test-slowest-op", "test-stable-loss", "test-safe-normalize", "test-accumulation"),
        messages={"test-profile-steps": "integrity"},
        hostile="patches-grader",
    ),
    Case(
        name="forges_the_trace_file",
        replace={"answer-profile-steps": FORGES_THE_TRACE},
        attacks=("test-profile-steps",),
        hostile="forges-trace",
    ),
]
