"""Mutation catalogue for exercise 3 (mixed precision).

Clauses are the numbered "Specification" lines of each part's text:

- test-build-classifier: 1 Dense-relu-Dense-relu-Dense logits, 2 hidden layers
  compute under the policy (judged from the matmuls that run), 3 float32
  output, 4 float32 variables, 5 global policy unchanged;
- test-train-step: 1 returns the unscaled weighted loss, 2 gradients of the
  scaled loss, 3 the optimizer unscales once and skips inf/NaN steps, 4 one
  update of every variable;
- test-choose-policy: 1 None, 2 below 7, 3 major 7, 4 major 8 and above,
  5 ValueError with a one-line message for anything else;
- test-fast-fit: 1 build_fn's model, compiled so that fit trains like a float32
  twin with SGD on sparse cross-entropy from logits, 2 the train step fit runs
  computes in the policy (its matmuls), 3 float32 output, 4 loss scaling under
  mixed_float16 (a LossScaleOptimizer; a model whose float16 gradients would
  underflow), 5 fit's train step compiled by XLA (judged from the function that
  ran, not model.jit_compile), 6 global policy unchanged;
- test-speedup: 1 the mixed step computes the reference float32 step's loss
  and gradient norm, 2 speed on a GPU profile (0.5 of the hidden reference's
  speedup, in factors).  Clause 2 is not graded on the cpu profile, where this
  catalogue runs, so no case here breaks it; it needs a GPU machine.
"""
from tests.wrong_answers import Case, steal_solution

ASSIGNMENT = "03_mixed_precision"

P1, P2, P3, P4 = "test-build-classifier", "test-train-step", "test-choose-policy", "test-speedup"
P5 = "test-fast-fit"
A1, A2, A3, A5 = "answer-build-classifier", "answer-train-step", "answer-choose-policy", "answer-fast-fit"

REFERENCE_BUILD = '''
def build_classifier(policy, n_features=20, n_classes=5, width=64):
    return keras.Sequential([
        keras.Input((n_features,)),
        keras.layers.Dense(width, activation="relu", dtype=policy),
        keras.layers.Dense(width, activation="relu", dtype=policy),
        keras.layers.Dense(n_classes, dtype=policy),
        keras.layers.Activation("linear", dtype="float32"),
    ])
'''

# --- part 1 -------------------------------------------------------------------------

# 1.1: ReLU on the logits too.
RELU_ON_LOGITS = REFERENCE_BUILD.replace(
    'keras.layers.Dense(n_classes, dtype=policy)', 'keras.layers.Dense(n_classes, activation="relu", dtype=policy)')

# 1.2: bfloat16 quietly replaced by float32 layers (right for the visible float16 call).
BF16_AS_FLOAT32 = '''
def build_classifier(policy, n_features=20, n_classes=5, width=64):
    layer_policy = "float32" if policy == "mixed_bfloat16" else policy
    return keras.Sequential([
        keras.Input((n_features,)),
        keras.layers.Dense(width, activation="relu", dtype=layer_policy),
        keras.layers.Dense(width, activation="relu", dtype=layer_policy),
        keras.layers.Dense(n_classes, dtype=layer_policy),
        keras.layers.Activation("linear", dtype="float32"),
    ])
'''

# 1.3: the policy on every layer, the logits included: the output comes out in 16 bits.
LOGITS_IN_16_BITS = '''
def build_classifier(policy, n_features=20, n_classes=5, width=64):
    return keras.Sequential([
        keras.Input((n_features,)),
        keras.layers.Dense(width, activation="relu", dtype=policy),
        keras.layers.Dense(width, activation="relu", dtype=policy),
        keras.layers.Dense(n_classes, dtype=policy),
    ])
'''

# 1.4: the logits layer in plain float16 (float16 variables), cast back to float32.
LOGITS_VARIABLES_FLOAT16 = '''
def build_classifier(policy, n_features=20, n_classes=5, width=64):
    logits_dtype = "float16" if policy == "mixed_float16" else policy
    return keras.Sequential([
        keras.Input((n_features,)),
        keras.layers.Dense(width, activation="relu", dtype=policy),
        keras.layers.Dense(width, activation="relu", dtype=policy),
        keras.layers.Dense(n_classes, dtype=logits_dtype),
        keras.layers.Activation("linear", dtype="float32"),
    ])
'''

# 1.5: sets the global policy and leaves it set.
SETS_GLOBAL_POLICY = '''
def build_classifier(policy, n_features=20, n_classes=5, width=64):
    keras.mixed_precision.set_global_policy(policy)
    return keras.Sequential([
        keras.Input((n_features,)),
        keras.layers.Dense(width, activation="relu"),
        keras.layers.Dense(width, activation="relu"),
        keras.layers.Dense(n_classes),
        keras.layers.Activation("linear", dtype="float32"),
    ])
'''

# 1.2 (duck-typed): real Dense layers that carry the policy, but the model's call
# multiplies by their float32 variables itself: it names the policy and computes in float32.
FLOAT32_INSIDE = '''
class Float32Inside(keras.Model):
    def __init__(self, policy, n_features, n_classes, width):
        super().__init__()
        self.hidden1 = keras.layers.Dense(width, activation="relu", dtype=policy)
        self.hidden2 = keras.layers.Dense(width, activation="relu", dtype=policy)
        self.logits = keras.layers.Dense(n_classes, dtype=policy)
        self.hidden1.build((None, n_features))
        self.hidden2.build((None, width))
        self.logits.build((None, width))
        self.built = True

    def call(self, x):
        h = tf.cast(x, tf.float32)
        for layer, activation in ((self.hidden1, tf.nn.relu), (self.hidden2, tf.nn.relu), (self.logits, tf.identity)):
            h = activation(tf.matmul(h, tf.convert_to_tensor(layer.kernel)) + tf.convert_to_tensor(layer.bias))
        return h

def build_classifier(policy, n_features=20, n_classes=5, width=64):
    return Float32Inside(policy, n_features, n_classes, width)
'''

# 1.5: sets the policy for the build and then "restores" a hard-coded "float32": right
# under a float32 global policy only (the hidden tests also call under mixed_bfloat16).
RESTORES_FLOAT32 = '''
def build_classifier(policy, n_features=20, n_classes=5, width=64):
    keras.mixed_precision.set_global_policy(policy)
    try:
        return keras.Sequential([
            keras.Input((n_features,)),
            keras.layers.Dense(width, activation="relu"),
            keras.layers.Dense(width, activation="relu"),
            keras.layers.Dense(n_classes),
            keras.layers.Activation("linear", dtype="float32"),
        ])
    finally:
        keras.mixed_precision.set_global_policy("float32")
'''

# Part 5, 1: a softmax head where the logits are asked for (part 1 loses it too).
SOFTMAX_HEAD = REFERENCE_BUILD.replace('keras.layers.Activation("linear", dtype="float32")',
                                       'keras.layers.Activation("softmax", dtype="float32")')

# Right: functional API, the logits layer itself in float32.
FUNCTIONAL_FLOAT32_LOGITS = '''
def build_classifier(policy, n_features=20, n_classes=5, width=64):
    inputs = keras.Input(shape=(n_features,))
    h = keras.layers.Dense(width, activation="relu", dtype=policy)(inputs)
    h = keras.layers.Dense(width, activation="relu", dtype=policy)(h)
    logits = keras.layers.Dense(n_classes, dtype="float32")(h)
    return keras.Model(inputs, logits)
'''

# Right: sets the global policy for the build and restores it; a DTypePolicy object.
SCOPED_GLOBAL_POLICY = '''
def build_classifier(policy, n_features=20, n_classes=5, width=64):
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(keras.DTypePolicy(policy))
    try:
        model = keras.Sequential([
            keras.Input((n_features,)),
            keras.layers.Dense(width, activation="relu"),
            keras.layers.Dense(width, activation="relu"),
            keras.layers.Dense(n_classes),
            keras.layers.Activation("linear", dtype="float32"),
        ])
    finally:
        keras.mixed_precision.set_global_policy(previous)
    return model
'''

# --- part 2 -------------------------------------------------------------------------

REFERENCE_STEP = '''
def train_step(model, optimizer, x, y):
    with tf.GradientTape() as tape:
        loss = weighted_loss(y, model(x, training=True))
        scaled = optimizer.scale_loss(loss)
    grads = tape.gradient(scaled, model.trainable_variables)
    optimizer.apply(grads, model.trainable_variables)
    return loss
'''

# 2.1: returns the scaled loss.
RETURNS_SCALED_LOSS = REFERENCE_STEP.replace("    return loss\n", "    return scaled\n")

# 2.2: no loss scaling; the optimizer still divides by its scale.
NO_SCALE_LOSS = '''
def train_step(model, optimizer, x, y):
    with tf.GradientTape() as tape:
        loss = weighted_loss(y, model(x, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply(grads, model.trainable_variables)
    return loss
'''

# 2.3: unscales by hand and applies with the inner optimizer: right on finite
# gradients, but an overflowing step writes NaN into the variables.
INNER_OPTIMIZER = '''
def train_step(model, optimizer, x, y):
    with tf.GradientTape() as tape:
        loss = weighted_loss(y, model(x, training=True))
        scaled = optimizer.scale_loss(loss)
    grads = tape.gradient(scaled, model.trainable_variables)
    optimizer.inner_optimizer.apply([g / optimizer.dynamic_scale for g in grads], model.trainable_variables)
    return loss
'''

# 2.4: updates the kernels only.
KERNELS_ONLY = '''
def train_step(model, optimizer, x, y):
    with tf.GradientTape() as tape:
        loss = weighted_loss(y, model(x, training=True))
        scaled = optimizer.scale_loss(loss)
    kernels = [v for v in model.trainable_variables if "kernel" in v.path]
    grads = tape.gradient(scaled, kernels)
    optimizer.apply(grads, kernels)
    return loss
'''

# 2.3: clips the gradients of the scaled loss (a habit from float32 training) before the optimizer
# unscales them: the scaled norm, the loss scale times the true one, is clipped instead of the true one.
CLIPS_SCALED_GRADIENTS = '''
def train_step(model, optimizer, x, y):
    with tf.GradientTape() as tape:
        loss = weighted_loss(y, model(x, training=True))
        scaled = optimizer.scale_loss(loss)
    grads = tape.gradient(scaled, model.trainable_variables)
    grads, _ = tf.clip_by_global_norm(grads, 5.0)
    optimizer.apply(grads, model.trainable_variables)
    return loss
'''

# Rebinds the locked LOSS_WEIGHT (no small gradients left to lose) and skips scaling.
REBINDS_LOSS_WEIGHT = '''
LOSS_WEIGHT = 1.0
''' + NO_SCALE_LOSS

# Patches a private function of the gradient checker, with a step that has no loss scaling.
PATCHES_GRADIENT_CHECK = '''
import autograder.checks.gradients as _gradients
_gradients._check_lists = lambda *args, **kwargs: None
_gradients._loss_scale_factor = lambda *args, **kwargs: None
''' + NO_SCALE_LOSS

# 2.1: model(x) without training=True: the same with Dense layers only, but a model with
# batch normalization then normalises with its moving statistics, not the batch's.
NO_TRAINING_FLAG = REFERENCE_STEP.replace("model(x, training=True)", "model(x)")

# 2.3: unscales by hand and then hands the gradients to optimizer.apply, which unscales
# them again: every update is 1 / loss-scale of the gradient.
UNSCALES_TWICE = '''
def train_step(model, optimizer, x, y):
    with tf.GradientTape() as tape:
        loss = weighted_loss(y, model(x, training=True))
        scaled = optimizer.scale_loss(loss)
    grads = tape.gradient(scaled, model.trainable_variables)
    optimizer.apply([g / optimizer.dynamic_scale for g in grads], model.trainable_variables)
    return loss
'''

# Right: a @tf.function step with apply_gradients, called once on its own model
# (an unbuilt optimizer) before the grader's calls.
DECORATED_SELF_CHECKED = '''
@tf.function
def train_step(model, optimizer, x, y):
    with tf.GradientTape() as tape:
        logits = model(x, training=True)
        loss = weighted_loss(y, logits)
        scaled_loss = optimizer.scale_loss(loss)
    gradients = tape.gradient(scaled_loss, model.trainable_weights)
    optimizer.apply_gradients(zip(gradients, model.trainable_weights))
    return loss

_model = build_classifier("mixed_float16")
_optimizer = keras.optimizers.LossScaleOptimizer(keras.optimizers.SGD(0.1))
print("self-check loss:", float(train_step(_model, _optimizer, tf.random.normal((8, 20)), tf.zeros((8,), tf.int32))))
'''

# Right: a Python wrapper around a compiled inner step.
WRAPPED_STEP = '''
@tf.function
def _scaled_step(model, optimizer, x, y):
    variables = model.trainable_variables
    with tf.GradientTape() as tape:
        loss = LOSS_WEIGHT * cross_entropy(y, model(x, training=True))
        scaled = optimizer.scale_loss(loss)
    optimizer.apply(tape.gradient(scaled, variables), variables)
    return loss

def train_step(model, optimizer, x, y):
    return _scaled_step(model, optimizer, x, y)
'''

# --- part 3 -------------------------------------------------------------------------

VALIDATE = '''
def _checked(cc):
    if cc is None:
        return None
    if not (isinstance(cc, tuple) and len(cc) == 2
            and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in cc)):
        raise ValueError(f"expected None or a (major, minor) tuple of non-negative ints, got {cc!r}")
    return cc
'''

# 3.1: None is treated as invalid.
NONE_RAISES = VALIDATE + '''
def choose_policy(compute_capability):
    if compute_capability is None:
        raise ValueError("no GPU: no compute capability")
    major, _ = _checked(compute_capability)
    return "mixed_bfloat16" if major >= 8 else "mixed_float16" if major == 7 else "float32"
'''

# 3.2: Pascal (6.x) gets float16.
SIX_IS_MIXED = VALIDATE + '''
def choose_policy(compute_capability):
    if _checked(compute_capability) is None:
        return "float32"
    major, _ = compute_capability
    return "mixed_bfloat16" if major >= 8 else "mixed_float16" if major >= 6 else "float32"
'''

# 3.3: compares major.minor as a number: Turing (7.5) gets bfloat16.
TURING_BFLOAT16 = VALIDATE + '''
def choose_policy(compute_capability):
    if _checked(compute_capability) is None:
        return "float32"
    major, minor = compute_capability
    version = major + minor / 10
    return "mixed_bfloat16" if version >= 7.5 else "mixed_float16" if version >= 7.0 else "float32"
'''

# 3.4: a lookup table that knows 7 and 8 only: Hopper (9.0) gets float32.
TABLE_MISSES_NEWER = VALIDATE + '''
def choose_policy(compute_capability):
    if _checked(compute_capability) is None:
        return "float32"
    return {7: "mixed_float16", 8: "mixed_bfloat16"}.get(compute_capability[0], "float32")
'''

# 3.5: checks the length and the sign only: (8.0, 6) passes, ("8", "6") raises TypeError.
LOOSE_VALIDATION = '''
def choose_policy(compute_capability):
    if compute_capability is None:
        return "float32"
    if not isinstance(compute_capability, tuple) or len(compute_capability) != 2:
        raise ValueError(f"bad compute capability {compute_capability!r}")
    major, minor = compute_capability
    if major < 0 or minor < 0:
        raise ValueError(f"bad compute capability {compute_capability!r}")
    return "mixed_bfloat16" if major >= 8 else "mixed_float16" if major == 7 else "float32"
'''

# 3.5: a message over several lines.
MULTILINE_MESSAGE = '''
def choose_policy(compute_capability):
    if compute_capability is None:
        return "float32"
    if not (isinstance(compute_capability, tuple) and len(compute_capability) == 2
            and all(type(n) is int and n >= 0 for n in compute_capability)):
        raise ValueError("invalid compute capability\\nexpected None or (major, minor)")
    major = compute_capability[0]
    return "mixed_bfloat16" if major >= 8 else "mixed_float16" if major == 7 else "float32"
'''

# Right: match/case, numbers.Integral (NumPy integers accepted too).
MATCH_CASE = '''
import numbers

def choose_policy(compute_capability):
    match compute_capability:
        case None:
            return "float32"
        case (major, minor) if isinstance(compute_capability, tuple) and all(
                isinstance(n, numbers.Integral) and not isinstance(n, bool) and n >= 0 for n in (major, minor)):
            if major >= 8:
                return "mixed_bfloat16"
            return "mixed_float16" if major == 7 else "float32"
    raise ValueError(f"compute_capability must be None or (major, minor) ints >= 0, not {compute_capability!r}")
'''

# Right: a list of thresholds, validation by exception.
THRESHOLD_LIST = '''
_RULES = [(8, "mixed_bfloat16"), (7, "mixed_float16"), (0, "float32")]

def choose_policy(compute_capability):
    if compute_capability is None:
        return "float32"
    try:
        major, minor = compute_capability
    except (TypeError, ValueError):
        raise ValueError(f"not a (major, minor) pair: {compute_capability!r}") from None
    if type(compute_capability) is not tuple or type(major) is not int or type(minor) is not int or min(major, minor) < 0:
        raise ValueError(f"not a (major, minor) pair of non-negative ints: {compute_capability!r}")
    for lowest, policy in _RULES:
        if major >= lowest:
            return policy
'''

# --- part 4 (test-fast-fit) ---------------------------------------------------------
REFERENCE_FAST = '''
def compile_for_speed(build_fn, policy, learning_rate=0.1):
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(policy)
    try:
        model = keras.Sequential([build_fn(), keras.layers.Activation("linear", dtype="float32")])
    finally:
        keras.mixed_precision.set_global_policy(previous)
    model.compile(optimizer=keras.optimizers.SGD(learning_rate),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  jit_compile=True)
    return model
'''
# 4.1: Adam instead of plain SGD: fit trains, but not like the float32 SGD twin.
ADAM = REFERENCE_FAST.replace("keras.optimizers.SGD(learning_rate)", "keras.optimizers.Adam(learning_rate)")
# 4.2: builds outside the policy (float32 compute), scales the loss by hand: right but slow.
FLOAT32_COMPUTE = '''
def compile_for_speed(build_fn, policy, learning_rate=0.1):
    model = keras.Sequential([build_fn(), keras.layers.Activation("linear", dtype="float32")])
    optimizer = keras.optimizers.SGD(learning_rate)
    if policy == "mixed_float16":
        optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
    model.compile(optimizer=optimizer, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  jit_compile=True)
    return model
'''
# 4.3: returns build_fn's model itself: its logits come out in 16 bits.
NO_FLOAT32_OUTPUT = '''
def compile_for_speed(build_fn, policy, learning_rate=0.1):
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(policy)
    try:
        model = build_fn()
    finally:
        keras.mixed_precision.set_global_policy(previous)
    model.compile(optimizer=keras.optimizers.SGD(learning_rate),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), jit_compile=True)
    return model
'''
# 4.4: the float32 wrapper is created after the policy is restored: the compiled model's
# policy is float32, so compile does not wrap the optimizer and float16 gradients underflow.
WRAPPER_AFTER_RESTORE = '''
def compile_for_speed(build_fn, policy, learning_rate=0.1):
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(policy)
    try:
        inner = build_fn()
    finally:
        keras.mixed_precision.set_global_policy(previous)
    model = keras.Sequential([inner, keras.layers.Activation("linear", dtype="float32")])
    model.compile(optimizer=keras.optimizers.SGD(learning_rate),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), jit_compile=True)
    return model
'''
# 4.5 (duck-typed): compiled without XLA and fitted once, then model.jit_compile = True:
# the attribute says True, the train function fit runs is the uncompiled one.
LATE_JIT_ATTRIBUTE = '''
def compile_for_speed(build_fn, policy, learning_rate=0.1):
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(policy)
    try:
        model = keras.Sequential([build_fn(), keras.layers.Activation("linear", dtype="float32")])
    finally:
        keras.mixed_precision.set_global_policy(previous)
    model.compile(optimizer=keras.optimizers.SGD(learning_rate),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), jit_compile=False)
    n_features = model.inputs[0].shape[-1]
    model.fit(np.zeros((4, n_features), "float32"), np.zeros((4,), "int32"), epochs=1, verbose=0)  # a warm-up fit
    model.jit_compile = True        # says True from now on; the train function is already built
    return model
'''
# 4.6: sets the global policy and leaves it set.
LEAKS_GLOBAL_POLICY = '''
def compile_for_speed(build_fn, policy, learning_rate=0.1):
    keras.mixed_precision.set_global_policy(policy)
    model = keras.Sequential([build_fn(), keras.layers.Activation("linear", dtype="float32")])
    model.compile(optimizer=keras.optimizers.SGD(learning_rate),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), jit_compile=True)
    return model
'''
# 4.5: Keras's default jit_compile="auto": False on a machine without a GPU, so the
# train step fit runs on the CPU-only grader is not compiled by XLA.
JIT_AUTO = REFERENCE_FAST.replace("jit_compile=True", 'jit_compile="auto"')
# 4.6: restores a hard-coded "float32" instead of the policy it found.
RESTORES_FLOAT32_FAST = REFERENCE_FAST.replace("keras.mixed_precision.set_global_policy(previous)",
                                               'keras.mixed_precision.set_global_policy("float32")')
# Right: a functional float32 wrapper, the LossScaleOptimizer made by hand, and
# model.jit_compile = True after compile but before the first fit (fit builds its step with it).
EXPLICIT_SCALING_LATE_ATTRIBUTE = '''
def compile_for_speed(build_fn, policy, learning_rate=0.1):
    previous = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(policy)
    try:
        inner = build_fn()
    finally:
        keras.mixed_precision.set_global_policy(previous)
    logits = keras.layers.Activation("linear", dtype="float32")(inner.outputs[0])
    model = keras.Model(inner.inputs[0], logits)      # a float32 model: compile would not scale by itself
    optimizer = keras.optimizers.SGD(learning_rate=learning_rate)
    if keras.DTypePolicy(policy).compute_dtype == "float16":
        optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
    model.compile(optimizer=optimizer, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.jit_compile = True                         # before the first fit: fit builds its train step with it
    return model
'''
# Right: compiled while the policy is set (compile wraps the optimizer), a Lambda cast to
# float32, a loss function instead of a loss object.
COMPILED_UNDER_POLICY = '''
def _to_float32(t):
    return keras.ops.cast(t, "float32")

def _loss(y_true, logits):
    return keras.losses.sparse_categorical_crossentropy(y_true, logits, from_logits=True)

def compile_for_speed(build_fn, policy, learning_rate=0.1):
    saved = keras.mixed_precision.global_policy().name
    keras.mixed_precision.set_global_policy(policy)
    try:
        model = keras.Sequential([build_fn(), keras.layers.Lambda(_to_float32, dtype="float32")])
        model.compile(optimizer=keras.optimizers.SGD(learning_rate), loss=_loss, jit_compile=True)
    finally:
        keras.mixed_precision.set_global_policy(saved)
    return model
'''

CASES = [
    Case(
        name="relu_logits_scaled_loss_none_raises",
        replace={A1: RELU_ON_LOGITS, A2: RETURNS_SCALED_LOSS, A3: NONE_RAISES, A5: ADAM},
        loses=("test-build-classifier", "test-train-step", "test-choose-policy", P5, "test-speedup"),
        breaks={P1: 1, P2: 1, P3: 1, P5: 1, P4: 1},
        messages={P1: "computes something else than Dense", P2: "return the loss itself",
                  P5: "train with SGD(learning_rate) on sparse categorical cross-entropy from logits",
                  P3: "choose_policy(None)", P4: "gives a different result from the reference"},
    ),
    Case(
        name="bf16_as_float32_no_scaling_pascal_mixed",
        replace={A1: BF16_AS_FLOAT32, A2: NO_SCALE_LOSS, A3: SIX_IS_MIXED, A5: FLOAT32_COMPUTE},
        loses=("test-build-classifier", "test-train-step", "test-choose-policy", P5),
        breaks={P1: 2, P2: 2, P3: 2, P5: 2},
        messages={P1: "mixed_bfloat16", P2: "mixed-precision gradient", P3: "choose_policy((6, 1))",
                  P5: "ran 0 matrix multiplication(s) in float16"},
    ),
    Case(
        name="logits_16_bits_inner_optimizer_turing_bf16",
        replace={A1: LOGITS_IN_16_BITS, A2: INNER_OPTIMIZER, A3: TURING_BFLOAT16, A5: NO_FLOAT32_OUTPUT},
        loses=("test-build-classifier", "test-train-step", "test-choose-policy", P5),
        breaks={P1: 3, P2: 3, P3: 3, P5: 3},
        messages={P1: "expected float32", P2: "inf/NaN changed", P3: "choose_policy((7, 5))",
                  P5: "model's output has dtype float16; expected float32"},
    ),
    Case(
        name="float16_logit_variables_kernels_only_hopper_float32",
        replace={A1: LOGITS_VARIABLES_FLOAT16, A2: KERNELS_ONLY, A3: TABLE_MISSES_NEWER, A5: WRAPPER_AFTER_RESTORE},
        loses=("test-build-classifier", "test-train-step", "test-choose-policy", P5),
        breaks={P1: 4, P2: 4, P3: 4, P5: 4},
        messages={P1: "has dtype float16; expected float32", P2: "mixed-precision gradient",
                  P3: "choose_policy((9, 0))", P5: "not a LossScaleOptimizer"},
    ),
    Case(
        name="duck_typed_model_and_multiline_error",
        replace={A1: FLOAT32_INSIDE, A2: UNSCALES_TWICE, A3: MULTILINE_MESSAGE, A5: LATE_JIT_ATTRIBUTE},
        loses=("test-build-classifier", "test-train-step", "test-choose-policy", P5),
        breaks={P1: 2, P2: 3, P3: 5, P5: 5},
        messages={P1: "matrix multiplication(s) in float16", P2: "mixed-precision gradient", P3: "one-line message",
                  P5: "is not compiled with XLA"},
        hostile="duck-typed",
    ),
    Case(
        name="global_policy_and_rebinds_loss_weight",
        replace={A1: SETS_GLOBAL_POLICY, A2: REBINDS_LOSS_WEIGHT},
        loses=("test-build-classifier", "test-train-step", "test-choose-policy", P5, "test-speedup"),
        breaks={P1: 5},
        messages={P1: "changed the global dtype policy", P2: "integrity", P3: "integrity", P4: "integrity"},
        hostile="rebinds-locked-name",
    ),
    Case(
        name="patches_gradient_check",
        replace={A2: PATCHES_GRADIENT_CHECK},
        loses=("test-train-step", "test-choose-policy", P5, "test-speedup"),
        messages={P2: "integrity"},
        hostile="patches-grader",
    ),
    Case(
        name="steals_build_classifier_loose_validation",
        replace={A1: steal_solution(ASSIGNMENT, A1), A3: LOOSE_VALIDATION, A5: LEAKS_GLOBAL_POLICY},
        # Part 2 grades train_step on the grader's own models (parts are judged independently), so
        # the reference train_step keeps its marks without build_classifier.
        loses=("test-build-classifier", "test-choose-policy", P5, "test-speedup"),
        breaks={P3: 5, P5: 6},
        messages={P3: "must raise ValueError", P5: "changed the global dtype policy from 'float32' to 'mixed_float16'"},
        hostile="reads-course-files",
    ),
    Case(
        name="restores_float32_no_training_flag_jit_auto",
        replace={A1: RESTORES_FLOAT32, A2: NO_TRAINING_FLAG, A5: JIT_AUTO},
        loses=("test-build-classifier", "test-train-step", P5),
        breaks={P1: 5, P2: 1, P5: 5},
        messages={P1: "changed the global dtype policy from 'mixed_bfloat16' to 'float32'",
                  P2: "mixed-precision gradient for variable", P5: "is not compiled with XLA"},
    ),
    Case(
        name="clips_scaled_gradients",
        replace={A2: CLIPS_SCALED_GRADIENTS},
        loses=("test-train-step",),
        breaks={P2: 3},
        messages={P2: "the same factor for every variable: hand the gradients of the scaled loss to the optimizer"},
    ),
    Case(
        name="softmax_head_restores_float32_in_fit",
        replace={A1: SOFTMAX_HEAD, A5: RESTORES_FLOAT32_FAST},
        loses=("test-build-classifier", P5, "test-speedup"),
        breaks={P4: 1, P5: 6},
        messages={P4: "gives a different result from the reference",
                  P5: "changed the global dtype policy from 'mixed_bfloat16' to 'float32'"},
    ),
    Case(
        name="right_functional_decorated_match",
        replace={A1: FUNCTIONAL_FLOAT32_LOGITS, A2: DECORATED_SELF_CHECKED, A3: MATCH_CASE,
                 A5: EXPLICIT_SCALING_LATE_ATTRIBUTE},
    ),
    Case(
        name="right_scoped_policy_wrapped_rules",
        replace={A1: SCOPED_GLOBAL_POLICY, A2: WRAPPED_STEP, A3: THRESHOLD_LIST, A5: COMPILED_UNDER_POLICY},
    ),
]
