"""Planted wrong answers for exercise 10 (scaling out)."""
from tests.wrong_answers import WrongAnswer

ASSIGNMENT = "10_scaling_out"

FULL = {"test-build": 2, "test-replica-loss": 2, "test-train": 4, "test-eval": 2}

PER_REPLICA_MEAN = '''
def replica_loss(model, x, y, global_batch_size):
    return tf.reduce_mean(per_example_loss(model, x, y))   # the mean of this replica's share only
'''

OPTIMIZER_OUTSIDE_SCOPE = '''
def build_replicated(strategy, seed=0, learning_rate=0.01):
    with strategy.scope():
        model = make_model(seed)
    optimizer = tf.keras.optimizers.Adam(learning_rate)
    optimizer.build(model.trainable_variables)
    return model, optimizer
'''

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

NOMINAL_GLOBAL_BATCH = '''
def distributed_train(strategy, model, optimizer, dataset):
    global_batch_size = int(next(iter(dataset))[0].shape[0])   # the first batch's size, for every step

    @tf.function
    def step(batch):
        def replica_step(x, y):
            with tf.GradientTape() as tape:
                loss = replica_loss(model, x, y, global_batch_size)
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))
            return loss
        return strategy.reduce("SUM", strategy.run(replica_step, args=batch), axis=None)
    return [float(step(batch)) for batch in strategy.experimental_distribute_dataset(dataset)]
'''

CASES = [
    WrongAnswer(
        name="per_replica_reduce_mean",
        replace={"answer-replica-loss": PER_REPLICA_MEAN},
        expect={**FULL, "test-replica-loss": 0, "test-train": 0},
        messages={"test-replica-loss": "compute_average_loss", "test-train": "differ"},
    ),
    WrongAnswer(
        name="optimizer_outside_scope_and_mean_of_batch_means",
        replace={"answer-build": OPTIMIZER_OUTSIDE_SCOPE, "answer-eval": MEAN_OF_BATCH_MEANS},
        expect={**FULL, "test-build": 0, "test-eval": 0},
        messages={"test-build": "optimizer variable", "test-eval": "weight every example equally"},
    ),
    WrongAnswer(
        name="nominal_global_batch_for_the_short_last_batch",
        replace={"answer-train": NOMINAL_GLOBAL_BATCH},
        expect={**FULL, "test-train": 0},
        messages={"test-train": "per-step losses differ"},
    ),
]
