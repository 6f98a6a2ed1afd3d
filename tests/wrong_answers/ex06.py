"""Planted wrong answers for exercise 6 (AutoGraph and graph loops)."""
from tests.wrong_answers import WrongAnswer

ASSIGNMENT = "06_autograph"

FULL = {"test-rnn-graph": 3, "test-rnn-gradients": 2, "test-collatz": 2, "test-standardize": 2}

# The seed's habit: a Python range over x.shape[0] unrolls the loop, one graph per length.
UNROLLED_RNN = '''
@tf.function
def rnn_graph(x, w_xh, w_hh, b):
    h = tf.zeros((x.shape[1], w_hh.shape[0]))
    states = []
    for t in range(x.shape[0]):
        h = tf.tanh(tf.matmul(x[t], w_xh) + tf.matmul(h, w_hh) + b)
        states.append(h)
    return tf.stack(states)
'''

# A graph loop with the right outputs, but reduce_retracing traces twice, and
# stop_gradient cuts backpropagation through time to one step.
TRUNCATED_BPTT = '''
@tf.function(reduce_retracing=True)
def rnn_graph(x, w_xh, w_hh, b):
    steps = tf.shape(x)[0]
    states = tf.TensorArray(tf.float32, size=steps)
    h = tf.zeros((tf.shape(x)[1], tf.shape(w_hh)[0]))
    for t in tf.range(steps):
        h = tf.tanh(tf.matmul(x[t], w_xh) + tf.matmul(tf.stop_gradient(h), w_hh) + b)
        states = states.write(t, h)
    return states.stack()
'''

TRUNCATED_BPTT_ONE_TRACE = TRUNCATED_BPTT.replace(
    "@tf.function(reduce_retracing=True)",
    "@tf.function(input_signature=[tf.TensorSpec([None, None, None]), tf.TensorSpec([None, None]),\n"
    "                              tf.TensorSpec([None, None]), tf.TensorSpec([None])])")

COLLATZ_NO_INVARIANT = '''
@tf.function(input_signature=[tf.TensorSpec([], tf.int32)])
def collatz(n):
    values = tf.reshape(n, [1])
    while n > 1:
        n = tf.where(n % 2 == 0, n // 2, 3 * n + 1)
        values = tf.concat([values, [n]], axis=0)
    return values
'''

# reduce_retracing relaxes shapes but every Python float is still a new graph.
STANDARDIZE_REDUCE_RETRACING = '''
@tf.function(reduce_retracing=True)
def standardize_fixed(x, eps):
    return (x - tf.reduce_mean(x, axis=0)) / (tf.math.reduce_std(x, axis=0) + eps)
'''

CASES = [
    WrongAnswer(
        name="unrolled_python_range",
        replace={"answer-rnn-graph": UNROLLED_RNN},
        expect={**FULL, "test-rnn-graph": 0, "test-rnn-gradients": 0},
        messages={"test-rnn-graph": "While", "test-rnn-gradients": "While"},
    ),
    WrongAnswer(
        name="truncated_backprop_and_reduce_retracing",
        replace={"answer-rnn-graph": TRUNCATED_BPTT},
        expect={**FULL, "test-rnn-graph": 0, "test-rnn-gradients": 0},
        messages={"test-rnn-graph": "input_signature", "test-rnn-gradients": "rnn_graph gradients"},
    ),
    WrongAnswer(
        name="truncated_backprop",
        replace={"answer-rnn-graph": TRUNCATED_BPTT_ONE_TRACE},
        expect={**FULL, "test-rnn-gradients": 0},
        messages={"test-rnn-gradients": "input 0 differs from the reference"},
    ),
    WrongAnswer(
        name="no_shape_invariant_and_python_float_retraces",
        replace={"answer-collatz": COLLATZ_NO_INVARIANT, "answer-standardize": STANDARDIZE_REDUCE_RETRACING},
        expect={**FULL, "test-collatz": 0, "test-standardize": 0},
        messages={"test-collatz": "shape invariants", "test-standardize": "Python ints or floats"},
    ),
]
