"""Mutation catalogue for exercise 1 (op logs).

Clauses (the "Specification" lists in the parts' text):

- test-training-step-placement: 1 architecture n_features -> 16 relu -> n_outputs, 2 Keras Adam,
  3 returns the MSE before the update, 4 one update per call with `optimizer` along the loss's
  gradients, 5 every model and optimizer variable on `device`.
- test-produced-by: 1 a letter for each of the four op types, 2 each letter's snippet logs the op.
- test-score-names: 1 a real tf.function, 2 the values, 3 `scorer/linear` MatMul,
  4 `scorer/shifted` AddV2/BiasAdd, 5 `scorer/probability` Sigmoid.
- test-run-strictly: 1 calls fn() inside tf.device(device) and returns its result, 2 soft placement
  off while fn runs, 3 the setting found is restored on return and on error.
"""
from tests.wrong_answers import Case, edited

ASSIGNMENT = "01_op_logs"

STEP, NAMES, SCORE, STRICT = ("test-training-step-placement", "test-produced-by", "test-score-names",
                              "test-run-strictly")


# ---------------------------------------------------------------- part 1: make_training_step

def training_step(layers="""
            tf.keras.layers.Dense(16, activation="relu"),
            tf.keras.layers.Dense(n_outputs),""",
                  optimizer="tf.keras.optimizers.Adam(1e-2)",
                  build="optimizer.build(model.trainable_variables)",
                  returned="loss",
                  applied="optimizer",
                  extra=""):
    """The reference answer with one piece swapped out."""
    return f'''
def make_training_step(device, n_features=8, n_outputs=2):
    with tf.device(device):
        model = tf.keras.Sequential([
            tf.keras.Input((n_features,)),{layers}
        ])
        optimizer = {optimizer}
        {build}
{extra}
    @tf.function
    def train_step(x, y):
        with tf.device(device):
            with tf.GradientTape() as tape:
                prediction = model(x)
                loss = tf.reduce_mean(tf.square(prediction - y))
            grads = tape.gradient(loss, model.trainable_variables)
            {applied}.apply_gradients(zip(grads, model.trainable_variables))
        return {returned}
    return model, optimizer, train_step
'''


HIDDEN_32 = training_step(layers="""
            tf.keras.layers.Dense(32, activation="relu"),
            tf.keras.layers.Dense(n_outputs),""")
SGD = training_step(optimizer="tf.keras.optimizers.SGD(1e-2, momentum=0.9)")
MAE_RETURNED = training_step(returned="tf.reduce_mean(tf.abs(prediction - y))")
# The returned optimizer is never applied: a second Adam (also on the device) does the updates.
OTHER_OPTIMIZER = training_step(
    extra="""    with tf.device(device):
        updater = tf.keras.optimizers.Adam(1e-2)
        updater.build(model.trainable_variables)
""",
    applied="updater")
# Passes for Adam (a subclass, so isinstance says Adam) while every update is a plain SGD step.
ADAM_IN_NAME_ONLY = training_step(optimizer="AdamInName(1e-2)").replace("def make_training_step", """
class AdamInName(tf.keras.optimizers.Adam):
    def update_step(self, gradient, variable, learning_rate):
        variable.assign_sub(learning_rate * gradient)

def make_training_step""", 1)
# Adam built lazily at its first update, which runs outside tf.device: its moments land on CPU:0.
UNBUILT_OUTSIDE = '''
def make_training_step(device, n_features=8, n_outputs=2):
    with tf.device(device):
        model = tf.keras.Sequential([
            tf.keras.Input((n_features,)),
            tf.keras.layers.Dense(16, activation="relu"),
            tf.keras.layers.Dense(n_outputs),
        ])
        optimizer = tf.keras.optimizers.Adam(1e-2)

    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x) - y))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss
    return model, optimizer, train_step
'''

# Right: functional model with a separate ReLU layer, Keras's MSE loss, an eager (undecorated) step,
# the optimizer built by its first update under the device scope, and a self-check call first.
FUNCTIONAL_EAGER = '''
import keras

def make_training_step(device, n_features=8, n_outputs=2):
    with tf.device(device):
        inputs = keras.Input(shape=(n_features,))
        hidden = keras.layers.Activation("relu")(keras.layers.Dense(16)(inputs))
        model = keras.Model(inputs, keras.layers.Dense(n_outputs)(hidden))
        optimizer = keras.optimizers.Adam(learning_rate=0.01)
    mse = keras.losses.MeanSquaredError()

    def train_step(x, y):
        with tf.device(device):
            with tf.GradientTape() as tape:
                loss = mse(y, model(x))
            optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                                          model.trainable_variables))
        return loss
    return model, optimizer, train_step

_m, _o, _s = make_training_step(DEVICE)
_s(tf.ones((4, 8)), tf.zeros((4, 2)))
'''
# Right: a tf.function called under the caller's device scope from a Python wrapper, the
# optimizer built through its variables' first update; sum-of-squares / n written out by hand.
WRAPPED_FUNCTION = '''
def make_training_step(device, n_features=8, n_outputs=2):
    with tf.device(device):
        model = tf.keras.Sequential([tf.keras.layers.Dense(16, activation=tf.nn.relu),
                                     tf.keras.layers.Dense(n_outputs)])
        model.build((None, n_features))
        optimizer = tf.keras.optimizers.Adam()

    @tf.function(reduce_retracing=True)
    def compiled(x, y):
        with tf.GradientTape() as tape:
            err = model(x) - y
            loss = tf.reduce_sum(err * err) / tf.cast(tf.size(err), err.dtype)
        optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                                      model.trainable_variables))
        return loss

    def train_step(x, y):
        with tf.device(device):
            return compiled(x, y)
    return model, optimizer, train_step
'''

# ---------------------------------------------------------------- part 2: PRODUCED_BY

REFERENCE_LETTERS = {"VarHandleOp": "a", "AssignAddVariableOp": "b", "ReadVariableOp": "c",
                     "AssignVariableOp": "d"}


def letters(**changes):
    return f"PRODUCED_BY = {dict(REFERENCE_LETTERS, **changes)!r}\n"


UNANSWERED_LETTER = letters(ReadVariableOp=None)
WRONG_LETTER = letters(ReadVariableOp="b")
# Right: snippet a also logs AssignVariableOp (creating a variable assigns its initial value).
OTHER_LETTER = '''
PRODUCED_BY = dict(zip(["VarHandleOp", "AssignAddVariableOp", "ReadVariableOp", "AssignVariableOp"], "abca"))
print({op: op in run_snippet(letter).ops() for op, letter in PRODUCED_BY.items()})
'''
CHECKED_LETTERS = '''
PRODUCED_BY = {}
for _op in ["VarHandleOp", "AssignAddVariableOp", "ReadVariableOp", "AssignVariableOp"]:
    PRODUCED_BY[_op] = next(letter for letter in sorted(SNIPPETS) if _op in run_snippet(letter).ops())
'''

# ---------------------------------------------------------------- part 3: score


def scorer(linear='tf.matmul(features, weights, name="linear")',
           shifted='tf.add(linear, bias, name="shifted")',
           probability='tf.sigmoid(shifted, name="probability")'):
    return f'''
@tf.function
def score(features, weights, bias):
    with tf.name_scope("scorer"):
        linear = {linear}
        shifted = {shifted}
        return {probability}
'''


WRONG_VALUES = scorer(shifted='tf.add(linear, bias + 1.0, name="shifted")')
UNNAMED_MATMUL = scorer(linear="features @ weights")
UNNAMED_SHIFT = scorer(shifted="linear + bias")
UNNAMED_SIGMOID = scorer(probability='tf.sigmoid(shifted, name="prob")')
# Duck-typed: an object that passes for a tf.function (it has get_concrete_function and friends,
# answering for a correctly named graph) while every call computes in NumPy.
DUCK_SCORE = '''
import numpy as np

@tf.function
def _named(features, weights, bias):
    with tf.name_scope("scorer"):
        return tf.sigmoid(tf.add(tf.matmul(features, weights, name="linear"), bias, name="shifted"),
                          name="probability")

class _LooksLikeAFunction:
    def __call__(self, features, weights, bias):
        _named(features, weights, bias)          # so the placement log shows the names
        x = np.asarray(features) @ np.asarray(weights) + np.asarray(bias)
        return tf.constant(1.0 / (1.0 + np.exp(-x)), dtype=tf.float32)
    def get_concrete_function(self, *args, **kwargs):
        return _named.get_concrete_function(*args, **kwargs)
    def experimental_get_tracing_count(self):
        return _named.experimental_get_tracing_count()
    python_function = _named.python_function

score = _LooksLikeAFunction()
'''
# Right: tf.function(...) applied by assignment, BiasAdd from tf.nn.bias_add, a self-check call.
ASSIGNED_BIAS_ADD = '''
def _score(features, weights, bias):
    with tf.name_scope("scorer"):
        linear = tf.linalg.matmul(features, weights, name="linear")
        return tf.math.sigmoid(tf.nn.bias_add(linear, bias, name="shifted"), name="probability")

score = tf.function(_score)
print(score(tf.ones((4, 3)), tf.ones((3, 2)), tf.zeros((2,))))
'''
# Right: raw ops with names given in full under an absolute scope, and reduce_retracing.
RAW_OPS = '''
@tf.function(reduce_retracing=True)
def score(features, weights, bias):
    with tf.name_scope("scorer/"):
        linear = tf.raw_ops.MatMul(a=features, b=weights, name="linear")
        shifted = tf.raw_ops.AddV2(x=linear, y=bias, name="shifted")
        return tf.raw_ops.Sigmoid(x=shifted, name="probability")
'''

# ---------------------------------------------------------------- part 4: run_strictly

# fn() runs outside tf.device(device): its result is on the default device.
OUTSIDE_SCOPE = '''
def run_strictly(fn, device):
    previous = tf.config.get_soft_device_placement()
    tf.config.set_soft_device_placement(False)
    try:
        with tf.device(device):
            pass
        return fn()
    finally:
        tf.config.set_soft_device_placement(previous)
'''
# Checks the device itself and raises TensorFlow's error, but never turns soft placement off.
NEVER_STRICT = '''
from autograder.checks.placement import normalize_device

def run_strictly(fn, device):
    known = {normalize_device(d.name) for d in tf.config.list_logical_devices()}
    if normalize_device(device) not in known:
        raise tf.errors.InvalidArgumentError(None, None, f"no device {device}")
    with tf.device(device):
        return fn()
'''
# Restores "on" rather than the setting it found.
RESTORES_ON = '''
def run_strictly(fn, device):
    tf.config.set_soft_device_placement(False)
    try:
        with tf.device(device):
            return fn()
    finally:
        tf.config.set_soft_device_placement(True)
'''
# Right: a context manager.
CONTEXT_MANAGER = '''
import contextlib

@contextlib.contextmanager
def _strict_placement():
    found = tf.config.get_soft_device_placement()
    tf.config.set_soft_device_placement(False)
    try:
        yield
    finally:
        tf.config.set_soft_device_placement(found)

def run_strictly(fn, device):
    with _strict_placement(), tf.device(device):
        return fn()
'''
# Right: keeps the result in a variable and returns after the finally block.
RESULT_AFTER_FINALLY = '''
def run_strictly(fn, device):
    was_soft = bool(tf.config.get_soft_device_placement())
    tf.config.set_soft_device_placement(False)
    try:
        with tf.device(device):
            result = fn()
    finally:
        tf.config.set_soft_device_placement(was_soft)
    return result
'''

# Appended to a correct answer: the checks of the parts that follow would see nothing wrong.
PATCH_PLACEMENT = '''
import autograder.checks.placement as _placement
_placement.assert_tensor_on_device = lambda *args, **kwargs: None
_placement._parse_line = lambda line: None
'''

REFERENCE_STEP = training_step()

# --- Attacks on what the kernel reports -------------------------------------------------

# Forged placement: the right step, plus placement-log lines written to stderr for the ops the
# check looks for, on the device it asks about (what a capture in the kernel reads).
FORGES_PLACEMENT_LINES = """
import sys as _sys
_FORGED = "Executing op {} in device /job:localhost/replica:0/task:0/device:CPU:1"
def _forge():
    for _op in ("VarHandleOp", "ReadVariableOp", "AssignVariableOp", "ResourceApplyAdam"):
        print(_FORGED.format(_op), file=_sys.stderr)
""" + edited("01_op_logs", "answer-training-step", "    return model, optimizer, train_step",
             "    _forge()\n    return model, optimizer, train_step")

CASES = [
    Case(
        name="wrong_width_unanswered_op_duck_typed_score_never_strict",
        replace={"answer-training-step": HIDDEN_32, "answer-produced-by": UNANSWERED_LETTER,
                 "answer-score": DUCK_SCORE, "answer-run-strictly": NEVER_STRICT},
        loses=(STEP, NAMES, SCORE, STRICT),
        breaks={STEP: 1, NAMES: 1, SCORE: 1, STRICT: 2},
        messages={STEP: "n_features -> 16 (relu) -> n_outputs", NAMES: "None",
                  SCORE: "must be a tf.function", STRICT: "soft placement on"},
        hostile="duck-typed",
    ),
    Case(
        name="sgd_wrong_letter_wrong_values_restores_on",
        replace={"answer-training-step": SGD, "answer-produced-by": WRONG_LETTER,
                 "answer-score": WRONG_VALUES, "answer-run-strictly": RESTORES_ON},
        loses=(STEP, NAMES, SCORE, STRICT),
        breaks={STEP: 2, NAMES: 2, SCORE: 2, STRICT: 3},
        messages={STEP: "Adam", NAMES: "does not log ReadVariableOp", SCORE: "wrong values",
                  STRICT: "restore the setting it found"},
    ),
    Case(
        name="returns_mae_unnamed_matmul_fn_outside_device",
        replace={"answer-training-step": MAE_RETURNED, "answer-score": UNNAMED_MATMUL,
                 "answer-run-strictly": OUTSIDE_SCOPE},
        loses=(STEP, SCORE, STRICT),
        breaks={STEP: 3, SCORE: 3, STRICT: 1},
        messages={STEP: "mean squared error", SCORE: "scorer/linear", STRICT: "create it inside tf.device"},
    ),
    Case(
        name="returned_optimizer_unused_unnamed_shift_patched_placement_checks",
        replace={"answer-training-step": OTHER_OPTIMIZER, "answer-score": UNNAMED_SHIFT,
                 "answer-run-strictly": RESULT_AFTER_FINALLY + PATCH_PLACEMENT},
        loses=(STEP, SCORE, STRICT),
        breaks={STEP: 4, SCORE: 4},
        messages={STEP: "optimizer.iterations", SCORE: "scorer/shifted", STRICT: "integrity"},
        hostile="patches-grader",
    ),
    Case(
        name="adam_subclass_that_steps_like_sgd",
        replace={"answer-training-step": ADAM_IN_NAME_ONLY},
        loses=(STEP,),
        breaks={STEP: 2},
        messages={STEP: "is not one Adam update"},
        hostile="duck-typed",
    ),
    Case(
        name="optimizer_moments_on_default_device_unnamed_sigmoid",
        replace={"answer-training-step": UNBUILT_OUTSIDE, "answer-score": UNNAMED_SIGMOID},
        loses=(STEP, SCORE),
        breaks={STEP: 5, SCORE: 5},
        messages={STEP: "CPU:0", SCORE: "scorer/probability"},
    ),
    Case(
        name="functional_eager_step_other_letter_assigned_function_context_manager",
        replace={"answer-training-step": FUNCTIONAL_EAGER, "answer-produced-by": OTHER_LETTER,
                 "answer-score": ASSIGNED_BIAS_ADD, "answer-run-strictly": CONTEXT_MANAGER},
    ),
    Case(
        name="wrapped_function_checked_letters_raw_ops_result_after_finally",
        replace={"answer-training-step": WRAPPED_FUNCTION, "answer-produced-by": CHECKED_LETTERS,
                 "answer-score": RAW_OPS, "answer-run-strictly": RESULT_AFTER_FINALLY},
    ),
    Case(
        name="device_rebound_to_the_host",
        replace={"answer-training-step": 'DEVICE = "/CPU:0"\n' + REFERENCE_STEP},
        loses=(STEP, NAMES, SCORE, STRICT),
        messages={STEP: "integrity", STRICT: "integrity"},
        hostile="rebinds-locked-name",
    ),
    Case(
        name="forges_placement_log_lines",
        replace={"answer-training-step": FORGES_PLACEMENT_LINES},
        attacks=("test-training-step-placement",),
        hostile="forges-placement",
    ),
]
