"""Mutation catalogue for exercise 10 (scaling out): per clause of every part a
wrong answer, two right answers written differently, and the hostile classes."""

from tests.wrong_answers import Case, steal_solution

ASSIGNMENT = "10_scaling_out"


# --- Part 1: build_replicated ---------------------------------------------------------------

BUILD_TEMPLATE = '''
def build_replicated(strategy, seed=0, learning_rate=0.01):
    with strategy.scope():
        model = make_model({seed})
    with {optimizer_scope}:
        optimizer = tf.keras.optimizers.Adam({learning_rate})
        {build}
    return model, optimizer
'''


def build(seed="seed", optimizer_scope="strategy.scope()", learning_rate="learning_rate",
          build="optimizer.build(model.trainable_variables)"):
    return BUILD_TEMPLATE.format(seed=seed, optimizer_scope=optimizer_scope, learning_rate=learning_rate,
                                 build=build)


IGNORES_SEED = build(seed="")                                   # clause 1
DEFAULT_LEARNING_RATE = build(learning_rate="")                 # clause 2
OPTIMIZER_OUTSIDE_SCOPE = build(optimizer_scope="tf.name_scope('outside')")   # clause 3
OPTIMIZER_NOT_BUILT = build(build="pass")                       # clause 4

BUILD_KERAS_NAMESPACE = '''
import keras

def build_replicated(strategy, seed=0, learning_rate=0.01):
    with strategy.scope():
        model = make_model(seed=seed)
        optimizer = keras.optimizers.Adam(learning_rate=learning_rate)
        optimizer.build(model.trainable_weights)
    return model, optimizer
'''
BUILD_TWO_SCOPES = '''
def build_replicated(strategy, seed=0, learning_rate=0.01):
    scope = strategy.scope
    with scope():
        model = make_model(seed)
    with scope():
        optimizer = tf.keras.optimizers.Adam(learning_rate=float(learning_rate))
        optimizer.build(model.trainable_variables)
    return (model, optimizer)
'''

# Duck-typed: an unmirrored model whose `variables` answers with a mirrored shadow's.
DUCK_MIRRORED_VARIABLES = '''
def build_replicated(strategy, seed=0, learning_rate=0.01):
    with strategy.scope():
        shadow = make_model(seed)
        optimizer = tf.keras.optimizers.Adam(learning_rate)
        optimizer.build(shadow.trainable_variables)

    class LooksMirrored(tf.keras.Sequential):
        @property
        def variables(self):
            return shadow.variables

    tf.keras.utils.set_random_seed(seed)
    model = LooksMirrored([tf.keras.Input((N_FEATURES,)), tf.keras.layers.Dense(16, activation="tanh"),
                           tf.keras.layers.Dense(1)])
    return model, optimizer
'''

# --- Part 2: replica_loss ----------------------------------------------------------------------

PER_REPLICA_MEAN = '''
def replica_loss(model, x, y, global_batch_size):
    return tf.reduce_mean(per_example_loss(model, x, y))
'''
# Clause 2: right when the replicas' shares are equal, wrong for 4 + 3.
MEAN_OVER_REPLICAS = '''
def replica_loss(model, x, y, global_batch_size):
    replicas = tf.distribute.get_strategy().num_replicas_in_sync
    return tf.reduce_mean(per_example_loss(model, x, y)) / replicas
'''
# Clause 2: the replica's mean times its share of the batch: right for 4 + 3, but a replica
# that gets no example (a global batch of 1) returns the mean of nothing (NaN) times 0.
MEAN_TIMES_SHARE = '''
def replica_loss(model, x, y, global_batch_size):
    per_example = per_example_loss(model, x, y)
    share = tf.cast(tf.shape(per_example)[0], per_example.dtype)
    return tf.reduce_mean(per_example) * share / tf.cast(global_batch_size, per_example.dtype)
'''
REPLICA_LOSS_DIVIDE = '''
def replica_loss(model, x, y, global_batch_size):
    per_example = per_example_loss(model, x, y)
    return tf.reduce_sum(per_example) / tf.cast(global_batch_size, per_example.dtype)
'''
REPLICA_LOSS_SCALED = '''
def replica_loss(model, x, y, global_batch_size):
    losses = per_example_loss(model, x, y)
    scale = tf.math.reciprocal(tf.cast(global_batch_size, tf.float32))
    return tf.reduce_sum(losses * scale)
'''

# --- Part 3: distributed_train -------------------------------------------------------------------

TRAIN_TEMPLATE = '''
def distributed_train(strategy, model, optimizer, dataset):
    @tf.function
    def step(batch):
        def replica_step(x, y):
            n = tf.distribute.get_replica_context().all_reduce("SUM", tf.shape(x)[0])
            with tf.GradientTape() as tape:
                loss = replica_loss(model, x, y, n)
                differentiated = {tape_loss}
            grads = tape.gradient(differentiated, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss
        per_replica = strategy.run(replica_step, args=batch)
        return {reduce}
    return [float(step(batch)) for batch in strategy.experimental_distribute_dataset(dataset)]
'''


def train(tape_loss="loss",
          reduce='strategy.reduce("SUM", per_replica, axis=None)'):
    return TRAIN_TEMPLATE.format(tape_loss=tape_loss, reduce=reduce)


# Clause 1: reports the first replica's share as the step's loss.
FIRST_REPLICA_LOSS = train(reduce="strategy.experimental_local_results(per_replica)[0]")
# Clause 2: reports the right loss but differentiates each replica's own mean.
GRADIENT_OF_REPLICA_MEAN = train(tape_loss="tf.reduce_mean(per_example_loss(model, x, y))")
# Clause 3: ignores the strategy: one device does all the work, no strategy.run.
NO_STRATEGY_RUN = '''
def distributed_train(strategy, model, optimizer, dataset):
    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(per_example_loss(model, x, y))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss
    return [float(step(x, y)) for x, y in dataset]
'''
TRAIN_COUNT_FIRST = '''
def distributed_train(strategy, model, optimizer, dataset):
    SUM = tf.distribute.ReduceOp.SUM

    @tf.function
    def step(batch):
        sizes = strategy.run(lambda x, y: tf.shape(x)[0], args=batch)
        global_n = strategy.reduce(SUM, sizes, axis=None)

        def replica_step(x, y):
            with tf.GradientTape() as tape:
                loss = replica_loss(model, x, y, global_n)
            optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                                          model.trainable_variables))
            return loss
        return strategy.reduce(SUM, strategy.run(replica_step, args=batch), axis=None)

    losses = []
    for batch in strategy.experimental_distribute_dataset(dataset):
        losses.append(step(batch).numpy().item())
    return losses
'''
TRAIN_ITERATOR_FUNCTION = '''
def distributed_train(strategy, model, optimizer, dataset):
    def replica_step(x, y):
        ctx = tf.distribute.get_replica_context()
        n = ctx.all_reduce(tf.distribute.ReduceOp.SUM, tf.cast(tf.shape(x)[0], tf.float32))
        with tf.GradientTape() as tape:
            loss = replica_loss(model, x, y, n)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(list(zip(grads, model.trainable_variables)))
        return loss

    train_step = tf.function(lambda batch: strategy.reduce(
        tf.distribute.ReduceOp.SUM, strategy.run(replica_step, args=batch), axis=None))
    iterator = iter(strategy.experimental_distribute_dataset(dataset))
    return [float(train_step(batch)) for batch in iterator]
'''

# --- Part 4: distributed_mean_loss -----------------------------------------------------------------

MEAN_OF_BATCH_MEANS = '''
def distributed_mean_loss(strategy, model, dataset):
    @tf.function
    def batch_mean(batch):
        def replica(x, y):
            per_example = per_example_loss(model, x, y)
            global_n = tf.distribute.get_replica_context().all_reduce("SUM", tf.shape(x)[0])
            return tf.nn.compute_average_loss(per_example, global_batch_size=global_n)
        return strategy.reduce("SUM", strategy.run(replica, args=batch), axis=None)
    means = [float(batch_mean(b)) for b in strategy.experimental_distribute_dataset(dataset)]
    return sum(means) / len(means)
'''
EVAL_RETURNS_TENSOR = '''
def distributed_mean_loss(strategy, model, dataset):
    @tf.function
    def sums(batch):
        def replica(x, y):
            per_example = per_example_loss(model, x, y)
            return tf.reduce_sum(per_example), tf.cast(tf.shape(per_example)[0], tf.float32)
        total, count = strategy.run(replica, args=batch)
        return strategy.reduce("SUM", total, axis=None), strategy.reduce("SUM", count, axis=None)
    total, count = tf.constant(0.0), tf.constant(0.0)
    for batch in strategy.experimental_distribute_dataset(dataset):
        t, c = sums(batch)
        total, count = total + t, count + c
    return total / count
'''
# Clause 3: ignores the strategy it was given: the right number, on one device.
EVAL_WITHOUT_STRATEGY = '''
def distributed_mean_loss(strategy, model, dataset):
    losses = tf.concat([per_example_loss(model, x, y) for x, y in dataset], axis=0)
    return float(tf.reduce_mean(losses))
'''
EVAL_EAGER_NUMPY = '''
def distributed_mean_loss(strategy, model, dataset):
    total, count = np.float64(0.0), 0
    for batch in strategy.experimental_distribute_dataset(dataset):
        sums = strategy.run(lambda x, y: tf.reduce_sum(per_example_loss(model, x, y)), args=batch)
        sizes = strategy.run(lambda x, y: tf.shape(x)[0], args=batch)
        total += strategy.reduce("SUM", sums, axis=None).numpy()
        count += int(strategy.reduce("SUM", sizes, axis=None))
    return total / count
'''
EVAL_ONE_FUNCTION = '''
def distributed_mean_loss(strategy, model, dataset):
    @tf.function
    def run_all(dist):
        total, count = tf.constant(0.0), tf.constant(0.0)
        for x, y in dist:
            def replica(xb, yb):
                pe = per_example_loss(model, xb, yb)
                return tf.stack([tf.reduce_sum(pe), tf.cast(tf.size(pe), tf.float32)])
            both = strategy.reduce(tf.distribute.ReduceOp.SUM, strategy.run(replica, args=(x, y)), axis=None)
            total += both[0]
            count += both[1]
        return total / count
    return run_all(strategy.experimental_distribute_dataset(dataset)).numpy().item()
'''

# Right: every replica's per-example losses gathered with strategy.gather (a second
# strategy in the hidden tests used to make its collectives clash: issue 21).
EVAL_GATHER = '''
def distributed_mean_loss(strategy, model, dataset):
    @tf.function
    def losses_of(batch):
        per_replica = strategy.run(lambda x, y: per_example_loss(model, x, y), args=batch)
        return strategy.gather(per_replica, axis=0)

    losses = [losses_of(batch) for batch in strategy.experimental_distribute_dataset(dataset)]
    return float(tf.reduce_mean(tf.concat(losses, axis=0)))
'''

# Rebinds the locked strategy: the visible test would use a one-device strategy.
REBIND_STRATEGY = EVAL_WITHOUT_STRATEGY + '''
strategy = tf.distribute.OneDeviceStrategy("/CPU:0")
'''

# Patches the gradient check the replica-loss part relies on.
PATCH_GRADIENT_CHECK = REPLICA_LOSS_DIVIDE + '''
import autograder.checks.gradients as _g
_g._check_lists = lambda *args, **kwargs: None
'''

CASES = [
    Case(
        name="right_keras_namespace_divide_count_first_eager_numpy",
        replace={"answer-build": BUILD_KERAS_NAMESPACE, "answer-replica-loss": REPLICA_LOSS_DIVIDE,
                 "answer-train": TRAIN_COUNT_FIRST, "answer-eval": EVAL_EAGER_NUMPY},
    ),
    Case(
        name="right_two_scopes_reciprocal_iterator_one_function",
        replace={"answer-build": BUILD_TWO_SCOPES, "answer-replica-loss": REPLICA_LOSS_SCALED,
                 "answer-train": TRAIN_ITERATOR_FUNCTION, "answer-eval": EVAL_ONE_FUNCTION},
    ),
    Case(
        name="clause1_seed_replica_mean_batch_means",
        replace={"answer-build": IGNORES_SEED, "answer-replica-loss": PER_REPLICA_MEAN,
                 "answer-eval": MEAN_OF_BATCH_MEANS},
        # distributed_train uses replica_loss, so the training part fails with it
        loses=("test-build", "test-replica-loss", "test-train", "test-eval"),
        breaks={"test-build": 1, "test-replica-loss": 1, "test-eval": 1},
        messages={"test-build": "initial weights differ", "test-replica-loss": "compute_average_loss",
                  "test-train": "differ", "test-eval": "weight every example equally"},
    ),
    Case(
        name="clause2_learning_rate_uneven_shares_tensor",
        replace={"answer-build": DEFAULT_LEARNING_RATE, "answer-replica-loss": MEAN_OVER_REPLICAS,
                 "answer-eval": EVAL_RETURNS_TENSOR},
        loses=("test-build", "test-replica-loss", "test-train", "test-eval"),
        breaks={"test-build": 2, "test-replica-loss": 2, "test-eval": 2},
        messages={"test-build": "learning rate", "test-replica-loss": "global batch of 7",
                  "test-eval": "return a Python float"},
    ),
    Case(
        name="clause3_optimizer_outside_scope_first_replica_loss_no_strategy_eval",
        replace={"answer-build": OPTIMIZER_OUTSIDE_SCOPE, "answer-train": FIRST_REPLICA_LOSS,
                 "answer-eval": EVAL_WITHOUT_STRATEGY},
        loses=("test-build", "test-train", "test-eval"),
        breaks={"test-build": 3, "test-train": 1, "test-eval": 3},
        messages={"test-build": "optimizer variable", "test-train": "per-step losses differ",
                  "test-eval": "outside strategy.run"},
    ),
    Case(
        name="duck_typed_mirrored_model_and_gradient_of_replica_mean",
        replace={"answer-build": DUCK_MIRRORED_VARIABLES, "answer-train": GRADIENT_OF_REPLICA_MEAN},
        loses=("test-build", "test-train"),
        breaks={"test-train": 2},
        messages={"test-build": "not a LooksMirrored", "test-train": "differ from the single-device"},
        hostile="duck-typed",
    ),
    Case(
        name="clause4_optimizer_not_built_no_strategy_run_and_stolen_replica_loss",
        replace={"answer-build": OPTIMIZER_NOT_BUILT,
                 "answer-replica-loss": steal_solution(ASSIGNMENT, "answer-replica-loss"),
                 "answer-train": NO_STRATEGY_RUN},
        loses=("test-build", "test-replica-loss", "test-train"),
        breaks={"test-build": 4, "test-train": 3},
        messages={"test-build": "no state yet", "test-train": "outside strategy.run"},
        hostile="reads-course-files",
    ),
    Case(
        name="clause2_mean_times_share_nan_on_empty_replica",
        replace={"answer-replica-loss": MEAN_TIMES_SHARE},
        loses=("test-replica-loss",),
        breaks={"test-replica-loss": 2},
        messages={"test-replica-loss": "global batch of 1"},
    ),
    Case(
        name="right_gather_eval",
        replace={"answer-eval": EVAL_GATHER},
    ),
    Case(
        name="hostile_rebinds_strategy",
        replace={"answer-eval": REBIND_STRATEGY},
        loses=("test-eval",),
        messages={"test-eval": "integrity"},
        hostile="rebinds-locked-name",
    ),
    Case(
        name="hostile_patches_gradient_check",
        replace={"answer-replica-loss": PATCH_GRADIENT_CHECK},
        loses=("test-replica-loss", "test-train", "test-eval"),
        messages={"test-replica-loss": "integrity"},
        hostile="patches-grader",
    ),
]
