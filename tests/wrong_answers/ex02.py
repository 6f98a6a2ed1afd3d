"""Mutation catalogue for exercise 2 (GPU placement and eager execution).

Clauses (the "Specification" lists in the parts' text):

- test-train-step: 1 logits model n_features -> 32 relu -> n_classes, 2 Keras SGD with momentum 0.9,
  3 returns the sparse categorical cross-entropy before the update, 4 one update per call with
  `optimizer` along the loss's gradients, 5 variables, every op of the step and the loss on `device`.
- test-time-per-call: 1 exactly warmup + repeats calls, the warm-up untimed, 2 each call timed on its
  own, 3 the clock stops when every tensor of the result reached the host, 4 the median, a float.
- test-configure-memory: 1 memory growth on every GPU without a limit, 2 one capped logical device
  per GPU with a limit, 3 returns the GPUs, 4 bad limits raise ValueError before any change,
  5 runs no op and lets TensorFlow's errors through.
"""
from tests.wrong_answers import Case, edited

ASSIGNMENT = "02_gpu_placement"

STEP, TIMING, MEMORY = "test-train-step", "test-time-per-call", "test-configure-memory"


# ---------------------------------------------------------------- part 1: make_train_step

def train_step_answer(output="tf.keras.layers.Dense(n_classes)",
                      optimizer="tf.keras.optimizers.SGD(0.1, momentum=0.9)",
                      loss="tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)",
                      applied="optimizer",
                      extra=""):
    """The reference answer with one piece swapped out."""
    return f'''
def make_train_step(device, n_features=8, n_classes=3):
    with tf.device(device):
        model = tf.keras.Sequential([
            tf.keras.Input((n_features,)),
            tf.keras.layers.Dense(32, activation="relu"),
            {output},
        ])
        optimizer = {optimizer}
        optimizer.build(model.trainable_variables)
{extra}
    loss_fn = {loss}

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        {applied}.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    def train_step(x, y):
        with tf.device(device):
            return step(x, y)
    return model, optimizer, train_step
'''


SOFTMAX_OUTPUT = train_step_answer(output='tf.keras.layers.Dense(n_classes, activation="softmax")',
                                   loss="tf.keras.losses.SparseCategoricalCrossentropy()")
# Duck-typed: an "optimizer" with on-device variables, iterations, momentum=0.9 and apply_gradients,
# doing plain gradient descent; it quacks like SGD but is not one.
DUCK_OPTIMIZER = '''
class _SGDLike:
    momentum = 0.9

    def __init__(self, variables):
        self.iterations = tf.Variable(0, dtype=tf.int64)
        self.learning_rate = tf.Variable(0.1)
        self.momentums = [tf.Variable(tf.zeros_like(v)) for v in variables]
        self.variables = [self.iterations, self.learning_rate, *self.momentums]

    def apply_gradients(self, pairs):
        for g, v in pairs:
            v.assign_sub(self.learning_rate * g)
        self.iterations.assign_add(1)

def make_train_step(device, n_features=8, n_classes=3):
    with tf.device(device):
        model = tf.keras.Sequential([tf.keras.Input((n_features,)),
                                     tf.keras.layers.Dense(32, activation="relu"),
                                     tf.keras.layers.Dense(n_classes)])
        optimizer = _SGDLike(model.trainable_variables)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
        return loss

    def train_step(x, y):
        with tf.device(device):
            return step(x, y)
    return model, optimizer, train_step
'''
# 1: the logits layer keeps the default 3 classes (right for the visible test's sizes).
DEFAULT_CLASSES = train_step_answer(output="tf.keras.layers.Dense(3)")
PROBABILITIES_LOSS = train_step_answer(loss="tf.keras.losses.SparseCategoricalCrossentropy(from_logits=False)")
OTHER_OPTIMIZER = train_step_answer(
    extra="""        updater = tf.keras.optimizers.SGD(0.1, momentum=0.9)
        updater.build(model.trainable_variables)
""",
    applied="updater")
# The usual mistake: the device scope sits inside the tf.function, so the
# function call op and the returned loss land on the caller's device (CPU:0).
SCOPE_INSIDE_FUNCTION = '''
def make_train_step(device, n_features=8, n_classes=3):
    with tf.device(device):
        model = tf.keras.Sequential([
            tf.keras.Input((n_features,)),
            tf.keras.layers.Dense(32, activation="relu"),
            tf.keras.layers.Dense(n_classes),
        ])
        optimizer = tf.keras.optimizers.SGD(0.1, momentum=0.9)
        optimizer.build(model.trainable_variables)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def train_step(x, y):
        with tf.device(device):
            with tf.GradientTape() as tape:
                loss = loss_fn(y, model(x, training=True))
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss
    return model, optimizer, train_step
'''
# The optimizer is made and built outside the device scope: its variables live on CPU:0.
OPTIMIZER_ON_HOST = '''
def make_train_step(device, n_features=8, n_classes=3):
    with tf.device(device):
        model = tf.keras.Sequential([tf.keras.Input((n_features,)),
                                     tf.keras.layers.Dense(32, activation="relu"),
                                     tf.keras.layers.Dense(n_classes)])
    optimizer = tf.keras.optimizers.SGD(0.1, momentum=0.9)
    optimizer.build(model.trainable_variables)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
        return loss

    def train_step(x, y):
        with tf.device(device):
            return step(x, y)
    return model, optimizer, train_step
'''
# The returned SGD optimizer counts the steps, but the update is plain gradient descent written by hand:
# no momentum, and not applied with `optimizer` (its iterations are advanced to look right).
MANUAL_UPDATE = """
def make_train_step(device, n_features=8, n_classes=3):
    with tf.device(device):
        model = tf.keras.Sequential([tf.keras.Input((n_features,)),
                                     tf.keras.layers.Dense(32, activation="relu"),
                                     tf.keras.layers.Dense(n_classes)])
        optimizer = tf.keras.optimizers.SGD(0.1, momentum=0.9)
        optimizer.build(model.trainable_variables)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        for g, v in zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables):
            v.assign_sub(0.1 * g)
        optimizer.iterations.assign_add(1)
        return loss

    def train_step(x, y):
        with tf.device(device):
            return step(x, y)
    return model, optimizer, train_step
"""
# Right: functional model, the loss written with tf.nn, an eager (undecorated) step run under the
# device scope, and a self-check call first.
FUNCTIONAL_EAGER = '''
import keras

def make_train_step(device, n_features=8, n_classes=3):
    with tf.device(device):
        inputs = keras.Input(shape=(n_features,))
        hidden = keras.layers.Dense(32, activation="relu")(inputs)
        model = keras.Model(inputs, keras.layers.Dense(n_classes)(hidden))
        optimizer = keras.optimizers.SGD(learning_rate=0.05, momentum=0.9)
        optimizer.build(model.trainable_variables)

    def train_step(x, y):
        with tf.device(device):
            with tf.GradientTape() as tape:
                logits = model(x, training=True)
                loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
            optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                                          model.trainable_variables))
            return loss
    return model, optimizer, train_step

with tf.device(DEVICE):
    _m, _o, _s = make_train_step(DEVICE)
    _s(tf.ones((4, 8)), tf.constant([0, 1, 2, 0]))
'''
# Right: the tf.function itself is called inside tf.device by the caller's code: a decorated
# step returned from inside the device scope, wrapped by functools; self-check call first.
DECORATED_IN_SCOPE = '''
import functools

def make_train_step(device, n_features=8, n_classes=3):
    with tf.device(device):
        model = tf.keras.Sequential([tf.keras.layers.Dense(32, activation=tf.nn.relu),
                                     tf.keras.layers.Dense(n_classes)])
        model.build((None, n_features))
        optimizer = tf.keras.optimizers.SGD(learning_rate=0.1, momentum=0.9)
        optimizer.build(model.trainable_variables)
    cross_entropy = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function(reduce_retracing=True)
    def compiled(x, y):
        with tf.GradientTape() as tape:
            loss = cross_entropy(y, model(x))
        optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
        return loss

    @functools.wraps(compiled)
    def train_step(*args):
        with tf.device(device):
            return compiled(*args)
    return model, optimizer, train_step

_m, _o, _s = make_train_step(DEVICE)
with tf.device(DEVICE):
    _s(tf.ones((4, 8)), tf.constant([0, 1, 2, 0]))
'''

# ---------------------------------------------------------------- part 2: time_per_call


def timer(warmup_loop="""    for _ in range(warmup):
        done(fn(*args))
""", timed="""    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        done(fn(*args))
        times.append(time.perf_counter() - start)
""", done="[t.numpy() for t in tf.nest.flatten(result)]", returned="float(np.median(times))"):
    return f'''
def time_per_call(fn, *args, warmup=2, repeats=10):
    def done(result):
        return {done}

{warmup_loop}{timed}    return {returned}
'''


NO_WARMUP = timer(warmup_loop="")
ONE_CLOCK = timer(timed="""    start = time.perf_counter()
    for _ in range(repeats):
        done(fn(*args))
    times = [(time.perf_counter() - start) / repeats]
""")
FIRST_TENSOR_ONLY = timer(done="tf.nest.flatten(result)[0].numpy()")
MEAN = timer(returned="float(np.mean(times))")
# 4: the middle element after sorting: the median for an odd count, the upper-middle time for an even one.
UPPER_MIDDLE = timer(returned="float(sorted(times)[len(times) // 2])")
# The defaults (2 warm-up calls, 10 timed) whatever the caller asks for.
IGNORES_ARGUMENTS = timer(warmup_loop="""    for _ in range(2):
        done(fn(*args))
""", timed="""    times = []
    for _ in range(10):
        start = time.perf_counter()
        done(fn(*args))
        times.append(time.perf_counter() - start)
""")
# Right: statistics.median of a NumPy-float list, np.asarray for the sync, a NumPy float32 returned.
NUMPY_SYNC = '''
import statistics

def time_per_call(fn, *args, warmup=2, repeats=10):
    def wait(result):
        for tensor in (result if isinstance(result, (list, tuple)) else [result]):
            np.asarray(tensor)
    for _ in range(warmup):
        wait(fn(*args))
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        wait(fn(*args))
        samples.append(np.float64(time.perf_counter() - t0))
    return np.float32(statistics.median(samples))
'''
# Right: waits with tf.nest.map_structure and time.perf_counter_ns, median by sorting.
NANOSECONDS = '''
def time_per_call(fn, *args, warmup=2, repeats=10):
    for _ in range(warmup):
        tf.nest.map_structure(lambda t: t.numpy(), fn(*args))
    ns = []
    for _ in range(repeats):
        begin = time.perf_counter_ns()
        tf.nest.map_structure(lambda t: t.numpy(), fn(*args))
        ns.append(time.perf_counter_ns() - begin)
    ns.sort()
    middle = len(ns) // 2
    median = ns[middle] if len(ns) % 2 else (ns[middle - 1] + ns[middle]) / 2
    return median / 1e9
'''

# ---------------------------------------------------------------- part 3: configure_gpu_memory

VALIDATE = '''
    if limit_mb is not None and (isinstance(limit_mb, bool) or not isinstance(limit_mb, numbers.Integral)
                                 or limit_mb <= 0):
        raise ValueError(f"limit_mb must be a positive whole number of megabytes, got {limit_mb!r}")'''


def memory(validate=VALIDATE, growth="config.experimental.set_memory_growth(gpu, True)",
           limit="config.set_logical_device_configuration(gpu, [config.LogicalDeviceConfiguration(memory_limit=limit_mb)])",
           loop="for gpu in gpus:", returned="gpus"):
    return f'''
import numbers

def configure_gpu_memory(config=tf.config, limit_mb=None):{validate}
    gpus = config.list_physical_devices("GPU")
    {loop}
        if limit_mb is None:
            {growth}
        else:
            {limit}
    return {returned}
'''


GROWTH_FIRST_ONLY = memory(growth="config.experimental.set_memory_growth(gpu, True) if gpu is gpus[0] else None")
LIMIT_IN_BYTES = memory(limit="config.set_logical_device_configuration("
                              "gpu, [config.LogicalDeviceConfiguration(memory_limit=limit_mb * 1024 * 1024)])")
RETURNS_NAMES = memory(returned="[gpu.name for gpu in gpus]")
ACCEPTS_FRACTIONS = memory(validate='''
    if limit_mb is not None and limit_mb <= 0:
        raise ValueError(f"limit_mb must be positive, got {limit_mb!r}")''')
SWALLOWS_RUNTIME_ERROR = '''
import numbers

def configure_gpu_memory(config=tf.config, limit_mb=None):
    if limit_mb is not None and (isinstance(limit_mb, bool) or not isinstance(limit_mb, numbers.Integral)
                                 or limit_mb <= 0):
        raise ValueError(f"limit_mb must be a positive whole number of megabytes, got {limit_mb!r}")
    gpus = config.list_physical_devices("GPU")
    try:
        for gpu in gpus:
            if limit_mb is None:
                config.experimental.set_memory_growth(gpu, True)
            else:
                config.set_logical_device_configuration(
                    gpu, [config.LogicalDeviceConfiguration(memory_limit=limit_mb)])
    except RuntimeError:
        return []
    return gpus
'''
# Right: operator.index for the check, comprehension for the configuration; a tuple-free list.
OPERATOR_INDEX = '''
import operator

def configure_gpu_memory(config=tf.config, limit_mb=None):
    if limit_mb is not None:
        try:
            if isinstance(limit_mb, bool):
                raise TypeError
            limit = operator.index(limit_mb)
        except TypeError:
            raise ValueError(f"limit_mb={limit_mb!r} is not a whole number of megabytes") from None
        if limit < 1:
            raise ValueError(f"limit_mb={limit_mb!r} must be positive")
    gpus = list(config.list_physical_devices("GPU"))
    if limit_mb is None:
        [config.experimental.set_memory_growth(gpu, True) for gpu in gpus]
    else:
        [config.set_logical_device_configuration(gpu, [config.LogicalDeviceConfiguration(memory_limit=limit)])
         for gpu in gpus]
    return gpus
'''
# Right: two loops, int(...) == value check.
SEPARATE_LOOPS = '''
def configure_gpu_memory(config=tf.config, limit_mb=None):
    if limit_mb is not None:
        whole = not isinstance(limit_mb, (bool, str, float)) and int(limit_mb) == limit_mb
        if not whole or limit_mb <= 0:
            raise ValueError("limit_mb must be a positive whole number of megabytes")
    found = config.list_physical_devices("GPU")
    if limit_mb is None:
        for device in found:
            config.experimental.set_memory_growth(device, True)
        return found
    for device in found:
        config.set_logical_device_configuration(device, [config.LogicalDeviceConfiguration(memory_limit=limit_mb)])
    return found
'''
REFERENCE_MEMORY = memory()

# Appended to a correct answer: patches the grader's timing and placement helpers.
PATCH_GRADER = '''
import autograder.checks.placement as _placement
import autograder.checks.timing as _timing
_placement.capture = lambda fn, *a, **k: _placement.Capture(result=fn(*a, **{n: v for n, v in k.items() if n not in ("echo", "fresh")}))
_timing.clock_is_genuine = lambda: True
'''


# --- Attacks on what the kernel reports -------------------------------------------------

# A timer that looks into the function it is handed (its closure holds the hidden sleep schedule).
READS_THE_SCHEDULE_FROM_THE_CLOSURE = edited(
    "02_gpu_placement", "answer-time-per-call", "    for _ in range(warmup):",
    "    _schedule = [c.cell_contents for c in (fn.__closure__ or ())]\n    for _ in range(warmup):")

CASES = [
    Case(
        name="softmax_output_no_warmup_growth_on_first_gpu_only",
        replace={"answer-train-step": SOFTMAX_OUTPUT, "answer-time-per-call": NO_WARMUP,
                 "answer-configure-memory": GROWTH_FIRST_ONLY},
        loses=("test-train-step", "test-time-per-call", "test-configure-memory"),
        breaks={STEP: 1, TIMING: 1, MEMORY: 1},
        messages={STEP: "logits", TIMING: "time_per_call called fn", MEMORY: "every one of them"},
    ),
    Case(
        name="duck_typed_optimizer_one_clock_limit_in_bytes",
        replace={"answer-train-step": DUCK_OPTIMIZER, "answer-time-per-call": ONE_CLOCK,
                 "answer-configure-memory": LIMIT_IN_BYTES},
        loses=("test-train-step", "test-time-per-call", "test-configure-memory"),
        breaks={STEP: 2, TIMING: 2, MEMORY: 2},
        messages={STEP: "SGD", TIMING: "median", MEMORY: "memory_limit="},
        hostile="duck-typed",
    ),
    Case(
        name="probabilities_loss_first_tensor_only_returns_names",
        replace={"answer-train-step": PROBABILITIES_LOSS, "answer-time-per-call": FIRST_TENSOR_ONLY,
                 "answer-configure-memory": RETURNS_NAMES},
        loses=("test-train-step", "test-time-per-call", "test-configure-memory"),
        breaks={STEP: 3, TIMING: 3, MEMORY: 3},
        messages={STEP: "cross-entropy", TIMING: "every tensor", MEMORY: "return the"},
    ),
    Case(
        name="returned_optimizer_unused_mean_fractional_limit",
        replace={"answer-train-step": OTHER_OPTIMIZER, "answer-time-per-call": MEAN,
                 "answer-configure-memory": ACCEPTS_FRACTIONS},
        loses=("test-train-step", "test-time-per-call", "test-configure-memory"),
        breaks={STEP: 4, TIMING: 4, MEMORY: 4},
        messages={STEP: "optimizer.iterations", TIMING: "not the mean", MEMORY: "ValueError"},
    ),
    Case(
        name="logits_for_the_default_class_count",
        replace={"answer-train-step": DEFAULT_CLASSES},
        loses=("test-train-step",),
        breaks={STEP: 1},
        messages={STEP: "the model's weights have shapes"},
    ),
    Case(
        name="upper_middle_median",
        replace={"answer-time-per-call": UPPER_MIDDLE},
        loses=("test-time-per-call",),
        breaks={TIMING: 4},
        messages={TIMING: "the median of an even number of times is the mean of the two middle ones"},
    ),
    Case(
        name="optimizer_on_host_swallows_runtime_error",
        replace={"answer-train-step": OPTIMIZER_ON_HOST, "answer-configure-memory": SWALLOWS_RUNTIME_ERROR},
        loses=("test-train-step", "test-configure-memory"),
        breaks={STEP: 5, MEMORY: 5},
        messages={STEP: "CPU:0", MEMORY: "RuntimeError must reach the caller"},
    ),
    Case(
        name="device_scope_inside_tf_function_patched_grader",
        replace={"answer-train-step": SCOPE_INSIDE_FUNCTION,
                 "answer-configure-memory": REFERENCE_MEMORY + PATCH_GRADER},
        loses=("test-train-step", "test-configure-memory"),
        breaks={STEP: 5},
        messages={STEP: "CPU:0", MEMORY: "integrity"},
        hostile="patches-grader",
    ),
    Case(
        name="hand_written_update_timer_ignores_its_arguments",
        replace={"answer-train-step": MANUAL_UPDATE, "answer-time-per-call": IGNORES_ARGUMENTS},
        loses=("test-train-step", "test-time-per-call"),
        breaks={STEP: 4, TIMING: 1},
        messages={STEP: "momentum 0.9", TIMING: "time_per_call called fn"},
        keeps=(MEMORY,),
    ),
    Case(
        name="functional_eager_step_numpy_sync_operator_index",
        replace={"answer-train-step": FUNCTIONAL_EAGER, "answer-time-per-call": NUMPY_SYNC,
                 "answer-configure-memory": OPERATOR_INDEX},
    ),
    Case(
        name="wrapped_function_nanoseconds_separate_loops",
        replace={"answer-train-step": DECORATED_IN_SCOPE, "answer-time-per-call": NANOSECONDS,
                 "answer-configure-memory": SEPARATE_LOOPS},
    ),
    Case(
        name="device_rebound_to_the_host",
        replace={"answer-train-step": 'DEVICE = "/CPU:0"\n' + OPTIMIZER_ON_HOST},
        loses=("test-train-step", "test-time-per-call", "test-configure-memory"),
        messages={STEP: "integrity", MEMORY: "integrity"},
        hostile="rebinds-locked-name",
    ),
    Case(
        name="reads_the_schedule_from_the_closure",
        replace={"answer-time-per-call": READS_THE_SCHEDULE_FROM_THE_CLOSURE},
        attacks=("test-time-per-call",),
        hostile="shapes-timing",
    ),
]
