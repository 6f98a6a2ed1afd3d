"""Planted wrong answers for exercise 2 (GPU placement and eager execution)."""
from tests.wrong_answers import WrongAnswer

ASSIGNMENT = "02_gpu_placement"

FULL = {"test-train-step": 4, "test-time-per-call": 3, "test-configure-memory": 3}

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

# Stops the clock when the work is queued, not done.
NO_SYNC = '''
def time_per_call(fn, *args, warmup=2, repeats=10):
    for _ in range(warmup):
        fn(*args)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return float(np.median(times))
'''

# Syncs, but ignores `warmup`: the first (tracing) call is timed.
NO_WARMUP = '''
def time_per_call(fn, *args, warmup=2, repeats=10):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        [t.numpy() for t in tf.nest.flatten(fn(*args))]
        times.append(time.perf_counter() - start)
    return float(np.median(times))
'''

# Configures only the first GPU and accepts any limit.
FIRST_GPU_ONLY = '''
def configure_gpu_memory(config=tf.config, limit_mb=None):
    gpus = config.list_physical_devices("GPU")
    if gpus:
        if limit_mb is None:
            config.experimental.set_memory_growth(gpus[0], True)
        else:
            config.set_logical_device_configuration(
                gpus[0], [config.LogicalDeviceConfiguration(memory_limit=limit_mb)])
    return gpus
'''

CASES = [
    WrongAnswer(
        name="device_scope_inside_tf_function",
        replace={"answer-train-step": SCOPE_INSIDE_FUNCTION},
        expect={**FULL, "test-train-step": 0},
        messages={"test-train-step": "CPU:0"},
    ),
    WrongAnswer(
        name="timing_without_sync",
        replace={"answer-time-per-call": NO_SYNC},
        expect={**FULL, "test-time-per-call": 0},
        messages={"test-time-per-call": "Too short"},
    ),
    WrongAnswer(
        name="timing_includes_tracing_and_first_gpu_only",
        replace={"answer-time-per-call": NO_WARMUP, "answer-configure-memory": FIRST_GPU_ONLY},
        expect={**FULL, "test-time-per-call": 0, "test-configure-memory": 0},
        messages={"test-time-per-call": "Too long", "test-configure-memory": "every one"},
    ),
]
