"""Planted wrong answers for exercise 3 (mixed precision)."""
from tests.wrong_answers import WrongAnswer

ASSIGNMENT = "03_mixed_precision"

FULL = {"test-build-classifier": 2, "test-train-step": 3, "test-choose-policy": 2, "test-speedup": 3}

# The policy on every layer, the logits included: the output comes out in 16 bits.
LOGITS_IN_16_BITS = '''
def build_classifier(policy, n_features=20, n_classes=5, width=64):
    return keras.Sequential([
        keras.Input((n_features,)),
        keras.layers.Dense(width, activation="relu", dtype=policy),
        keras.layers.Dense(width, activation="relu", dtype=policy),
        keras.layers.Dense(n_classes, dtype=policy),
    ])
'''

# No loss scaling: small float16 gradients flush to zero.
NO_LOSS_SCALING = '''
def train_step(model, optimizer, x, y):
    with tf.GradientTape() as tape:
        loss = weighted_loss(y, model(x, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.inner_optimizer.apply(grads, model.trainable_variables)
    return loss
'''

# Unscales by hand and then lets apply() unscale again.
UNSCALED_TWICE = '''
def train_step(model, optimizer, x, y):
    with tf.GradientTape() as tape:
        loss = weighted_loss(y, model(x, training=True))
        scaled = optimizer.scale_loss(loss)
    grads = tape.gradient(scaled, model.trainable_variables)
    scale = optimizer.dynamic_scale if optimizer.built else optimizer.initial_scale
    optimizer.apply([g / scale for g in grads], model.trainable_variables)
    return loss
'''

# float16 for every GPU with Tensor Cores, ignoring the rule for 8.0 and later.
FLOAT16_FOR_ALL = '''
def choose_policy(compute_capability):
    if compute_capability is not None and compute_capability[0] >= 7:
        return "mixed_float16"
    return "float32"
'''

CASES = [
    WrongAnswer(
        name="logits_in_16_bits",
        replace={"answer-build-classifier": LOGITS_IN_16_BITS},
        expect={**FULL, "test-build-classifier": 0},
        messages={"test-build-classifier": "expected float32"},
    ),
    WrongAnswer(
        name="no_loss_scaling_and_float16_everywhere",
        replace={"answer-train-step": NO_LOSS_SCALING, "answer-choose-policy": FLOAT16_FOR_ALL},
        expect={**FULL, "test-train-step": 0, "test-choose-policy": 0},
        messages={"test-train-step": "differs from the reference", "test-choose-policy": "(8, 6)"},
    ),
    WrongAnswer(
        name="gradients_unscaled_twice",
        replace={"answer-train-step": UNSCALED_TWICE},
        expect={**FULL, "test-train-step": 0},
        messages={"test-train-step": "differs from the reference"},
    ),
]
