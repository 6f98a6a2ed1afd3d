"""Planted wrong answers for exercise 1 (op logs)."""
from tests.wrong_answers import WrongAnswer

ASSIGNMENT = "01_op_logs"

FULL = {"test-training-step-placement": 4, "test-produced-by": 2, "test-score-names": 2, "test-run-strictly": 2}

OPTIMIZER_OUTSIDE_DEVICE = '''
def make_training_step(device, n_features=8, n_outputs=2):
    with tf.device(device):
        model = tf.keras.Sequential([
            tf.keras.Input((n_features,)),
            tf.keras.layers.Dense(16, activation="relu"),
            tf.keras.layers.Dense(n_outputs),
        ])
    optimizer = tf.keras.optimizers.Adam(1e-2)   # created on the default device

    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x) - y))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss
    return model, optimizer, train_step
'''

UNNAMED_SCORE = '''
@tf.function
def score(features, weights, bias):
    return tf.sigmoid(tf.matmul(features, weights) + bias)
'''

NO_RESTORE = '''
def run_strictly(fn, device):
    tf.config.set_soft_device_placement(False)
    with tf.device(device):
        return fn()
'''

CASES = [
    WrongAnswer(
        name="optimizer_on_default_device",
        replace={"answer-training-step": OPTIMIZER_OUTSIDE_DEVICE},
        expect={**FULL, "test-training-step-placement": 0},
        messages={"test-training-step-placement": "CPU:0"},
    ),
    WrongAnswer(
        name="unnamed_ops_and_soft_placement_left_off",
        replace={"answer-score": UNNAMED_SCORE, "answer-run-strictly": NO_RESTORE},
        expect={**FULL, "test-score-names": 0, "test-run-strictly": 0},
        messages={"test-score-names": "scorer/linear", "test-run-strictly": "restore"},
    ),
]
