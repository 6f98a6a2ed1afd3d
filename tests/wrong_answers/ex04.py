"""Planted wrong answers for exercise 4 (XLA)."""
from tests.wrong_answers import WrongAnswer

ASSIGNMENT = "04_xla"

FULL = {"test-xla-step": 4, "test-predict-one-compile": 3, "test-cannot-compile": 2, "test-clip-top": 2}

NOT_COMPILED = '''
fast_train_step = tf.function(train_step)   # jit_compile forgotten
'''

SIGNATURE_WITH_NONE = '''
core = tf.function(score_rows, jit_compile=True,
                   input_signature=[tf.TensorSpec([None, FEATURES], tf.float32)])


def predict(x):
    return core(x)   # traces once, but XLA compiles every new batch size
'''

NO_PADDING = '''
core = tf.function(score_rows, jit_compile=True)


def predict(x):
    return core(x)
'''

GUESSED_DYNAMIC_SHAPES = '''
CANNOT_COMPILE = {"numpy_median", "distinct_values", "positives_only"}
'''

NUMPY_UNDER_JIT = '''
clip_top = tf.function(clip_top_numpy, jit_compile=True)
'''

CASES = [
    WrongAnswer(
        name="jit_forgotten_and_signature_with_none",
        replace={"answer-xla-step": NOT_COMPILED, "answer-predict": SIGNATURE_WITH_NONE},
        expect={**FULL, "test-xla-step": 0, "test-predict-one-compile": 0},
        messages={"test-xla-step": "jit_compile=True", "test-predict-one-compile": "input_signature"},
    ),
    WrongAnswer(
        name="no_padding",
        replace={"answer-predict": NO_PADDING},
        expect={**FULL, "test-predict-one-compile": 0},
        messages={"test-predict-one-compile": "traced 6 times"},
    ),
    WrongAnswer(
        name="guessed_list_and_numpy_under_jit",
        replace={"answer-cannot-compile": GUESSED_DYNAMIC_SHAPES, "answer-clip-top": NUMPY_UNDER_JIT},
        expect={**FULL, "test-cannot-compile": 0, "test-clip-top": 0},
        messages={"test-cannot-compile": "XLA does compile", "test-clip-top": "cannot compile"},
    ),
]
