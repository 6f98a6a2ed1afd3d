"""Mutation catalogue for exercise 6 (AutoGraph and graph loops): per clause
of every part a wrong answer, two right answers written differently, and the
hostile classes.

Clauses (the parts' **Specification** lists):
- test-rnn-graph: 1 reference_rnn's states, 2 computed by a graph While loop
  (no Python callback), 3 one trace for every length and batch size.
- test-rnn-gradients: 1 the reference's gradients for x and the weights,
  2 through the graph loop.
- test-collatz: 1 the sequence as a 1-D int32 tensor, 2 computed by a graph
  While loop, 3 one trace for every n.
- test-standardize: 1 standardize's values, 2 called the same way (Python
  float eps, any batch size), 3 one trace for all of CALLS.
"""

from tests.wrong_answers import released as released_cell
from tests.wrong_answers import SILENCE_ERRORS, Case, edited, steal_solution

ASSIGNMENT = "06_autograph"

ANSWERS = ("answer-rnn-graph", "answer-collatz", "answer-standardize")


def released(gid: str) -> str:
    """The unanswered answer cell ``gid`` of this exercise's release."""
    return released_cell(ASSIGNMENT, gid)


SIGNATURE = '''@tf.function(input_signature=[tf.TensorSpec([None, None, None], tf.float32), tf.TensorSpec([None, None], tf.float32),
                              tf.TensorSpec([None, None], tf.float32), tf.TensorSpec([None], tf.float32)])'''

RNN_TEMPLATE = '''
{decorator}
def rnn_graph(x, w_xh, w_hh, b):
    steps = tf.shape(x)[0]
    states = tf.TensorArray(tf.float32, size=steps)
    h = tf.zeros((tf.shape(x)[1], tf.shape(w_hh)[0]))
    for t in tf.range(steps):
        h = tf.tanh(tf.matmul(x[t], w_xh) + tf.matmul({previous}, w_hh){bias})
        states = states.write(t, h)
    return states.stack()
'''


def rnn(decorator=SIGNATURE, previous="h", bias=" + b"):
    return RNN_TEMPLATE.format(decorator=decorator, previous=previous, bias=bias)


# --- Part 1 and 2: the RNN ---------------------------------------------------------------

# Part 1 clause 1 (and the gradients of part 2, clause 1): the bias is forgotten.
RNN_NO_BIAS = rnn(bias="")
# Part 1 clause 2, part 2 clause 2: a loop that runs beside the answer; the
# states come from a Python callback (right values, one trace).
RNN_LOOP_BESIDE_PY_FUNCTION = SIGNATURE + '''
def rnn_graph(x, w_xh, w_hh, b):
    i = tf.constant(0)
    while i < tf.shape(x)[0]:      # a graph loop, but the answer does not come from it
        i += 1
    return tf.py_function(reference_rnn, [x, w_xh, w_hh, b], tf.float32)
'''
# Part 1 clause 3: reduce_retracing traces a second, relaxed graph.
RNN_REDUCE_RETRACING = rnn(decorator="@tf.function(reduce_retracing=True)")
# Part 2 clause 1: stop_gradient cuts backpropagation through time to one step.
RNN_TRUNCATED_BPTT = rnn(previous="tf.stop_gradient(h)")

# Right: tf.scan, the library's own loop over the first axis.
RNN_SCAN = '''
@tf.function(input_signature=[tf.TensorSpec([None, None, 3], tf.float32), tf.TensorSpec([3, 5], tf.float32),
                              tf.TensorSpec([5, 5], tf.float32), tf.TensorSpec([5], tf.float32)])
def rnn_graph(x, w_xh, w_hh, b):
    h0 = tf.zeros([tf.shape(x)[1], 5])
    return tf.scan(lambda h, x_t: tf.tanh(tf.matmul(x_t, w_xh) + tf.matmul(h, w_hh) + b), x, initializer=h0)
'''

# Right: a plain Python function around a tf.function with an explicit tf.while_loop.
RNN_WRAPPED_WHILE_LOOP = '''
def _rnn(x, w_xh, w_hh, b):
    steps = tf.shape(x)[0]

    def body(t, h, states):
        h = tf.tanh(tf.matmul(x[t], w_xh) + tf.matmul(h, w_hh) + b)
        return t + 1, h, states.write(t, h)

    h0 = tf.zeros([tf.shape(x)[1], tf.shape(w_hh)[0]])
    _, _, states = tf.while_loop(lambda t, h, s: t < steps, body,
                                 [tf.constant(0), h0, tf.TensorArray(tf.float32, size=steps)])
    return states.stack()


_rnn_graph = tf.function(_rnn, input_signature=[tf.TensorSpec([None, None, None], tf.float32),
                                                tf.TensorSpec([None, None], tf.float32),
                                                tf.TensorSpec([None, None], tf.float32),
                                                tf.TensorSpec([None], tf.float32)])


def rnn_graph(x, w_xh, w_hh, b):
    return _rnn_graph(x, w_xh, w_hh, b)


rnn_graph(*rnn_inputs(3, 2))   # a self-check call before the grader's
'''

# Duck-typed: claims one trace and hands over a real loop's graph, but every
# call runs the eager Python loop.
RNN_DUCK = '''
class _LooksTraced:
    __name__ = "rnn_graph"

    def __init__(self):
        self._graph_fn = tf.function(lambda x, w_xh, w_hh, b: tf.scan(
            lambda h, x_t: tf.tanh(tf.matmul(x_t, w_xh) + tf.matmul(h, w_hh) + b), x,
            initializer=tf.zeros([tf.shape(x)[1], 5])))

    def __call__(self, x, w_xh, w_hh, b):
        return reference_rnn(x, w_xh, w_hh, b)

    def experimental_get_tracing_count(self):
        return 1

    def get_concrete_function(self, *args):
        return self._graph_fn.get_concrete_function(*args)


rnn_graph = _LooksTraced()
'''

# --- Part 3: collatz ------------------------------------------------------------------------

COLLATZ_TEMPLATE = '''
@tf.function(input_signature=[tf.TensorSpec([], tf.int32)])
def {name}(n):
    values = tf.reshape(n, [1])
    while n > 1:
        tf.autograph.experimental.set_loop_options(shape_invariants=[(values, tf.TensorShape([None]))])
        n = tf.where(n % 2 == 0, n // 2, 3 * n + 1)
        values = tf.concat([values, [n]], axis=0)
    return {result}
'''

# Clause 1: right numbers, int64 tensor.
COLLATZ_INT64 = COLLATZ_TEMPLATE.format(name="collatz", result="tf.cast(values, tf.int64)")
# Clause 2: a Python loop behind tf.py_function: one trace, right values, no graph loop.
COLLATZ_PY_FUNCTION = '''
def _python_collatz(n):
    n = int(n)
    out = [n]
    while n > 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        out.append(n)
    return np.array(out, np.int32)


@tf.function(input_signature=[tf.TensorSpec([], tf.int32)])
def collatz(n):
    values = tf.py_function(_python_collatz, [n], tf.int32)
    values.set_shape([None])
    return values
'''
# Clause 3: the wrapper turns n into a Python int, so every n is a new graph.
COLLATZ_PYTHON_INT = '''
@tf.function
def _collatz(n):
    n = tf.constant(n)
    values = tf.reshape(n, [1])
    while n > 1:
        tf.autograph.experimental.set_loop_options(shape_invariants=[(values, tf.TensorShape([None]))])
        n = tf.where(n % 2 == 0, n // 2, 3 * n + 1)
        values = tf.concat([values, [n]], axis=0)
    return values


def collatz(n):
    return _collatz(int(n))
'''

# Right: a plain @tf.function (no signature) and a TensorArray that grows.
COLLATZ_TENSOR_ARRAY = '''
@tf.function
def collatz(n):
    values = tf.TensorArray(tf.int32, size=0, dynamic_size=True)
    values = values.write(0, n)
    i = 1
    while n > 1:
        n = tf.where(n % 2 == 0, n // 2, 3 * n + 1)
        values = values.write(i, n)
        i += 1
    return values.stack()
'''

# Right: an explicit tf.while_loop with shape invariants, behind a Python wrapper.
COLLATZ_WHILE_LOOP = '''
@tf.function(input_signature=[tf.TensorSpec([], tf.int32)])
def _collatz_graph(n):
    def body(n, values):
        n = tf.where(n % 2 == 0, n // 2, 3 * n + 1)
        return n, tf.concat([values, tf.reshape(n, [1])], 0)

    _, values = tf.while_loop(lambda n, values: n > 1, body, [n, tf.reshape(n, [1])],
                              shape_invariants=[tf.TensorShape([]), tf.TensorShape([None])])
    return values


def collatz(n):
    return _collatz_graph(n)


assert collatz(tf.constant(6)).numpy().tolist() == [6, 3, 10, 5, 16, 8, 4, 2, 1]
'''

# --- Part 4: standardize_fixed ---------------------------------------------------------------

STANDARDIZE_SIGNATURE = '''
@tf.function(input_signature=[tf.TensorSpec({shape}, tf.float32), tf.TensorSpec([], tf.float32)])
def standardize_fixed(x, eps):
    return (x - tf.reduce_mean(x, axis=0)) / ({spread} + eps)
'''

# Clause 1: the variance where the standard deviation was asked for.
STANDARDIZE_VARIANCE = STANDARDIZE_SIGNATURE.format(shape="[None, None]", spread="tf.math.reduce_variance(x, axis=0)")
# Clause 2: the signature fixes the batch size, so the last, smaller batch fails.
STANDARDIZE_FIXED_BATCH = STANDARDIZE_SIGNATURE.format(shape="[32, 4]", spread="tf.math.reduce_std(x, axis=0)")
# Clause 3: eps made a tensor, but reduce_retracing still traces once more for the small batch.
STANDARDIZE_REDUCE_RETRACING = '''
@tf.function(reduce_retracing=True)
def _standardize(x, eps):
    return (x - tf.reduce_mean(x, axis=0)) / (tf.math.reduce_std(x, axis=0) + eps)


def standardize_fixed(x, eps):
    return _standardize(x, tf.constant(eps, tf.float32))
'''

# Right: a Python wrapper that turns eps into a tensor for a graph with a fixed signature.
STANDARDIZE_WRAPPER = '''
@tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32), tf.TensorSpec([], tf.float32)])
def _standardize_graph(x, eps):
    mean = tf.reduce_mean(x, axis=0)
    std = tf.sqrt(tf.reduce_mean(tf.square(x - mean), axis=0))
    return (x - mean) / (std + eps)


def standardize_fixed(x, eps):
    return _standardize_graph(x, tf.constant(eps, tf.float32))


for _x, _eps in CALLS:          # run the whole schedule first, as the training loop would
    standardize_fixed(_x, _eps)
'''

# Right: the locked function's own Python code, with a signature.
STANDARDIZE_FROM_PYTHON_FUNCTION = '''
standardize_fixed = tf.function(standardize.python_function,
                                input_signature=[tf.TensorSpec([None, None], tf.float32), tf.TensorSpec([], tf.float32)])
'''

# Right: eps kept in a module-level variable named ``_eps`` that a graph without an eps
# argument reads (a hidden test that bound ``_eps`` itself used to break it: issue 21).
STANDARDIZE_MODULE_EPS = '''
_eps = tf.Variable(1e-3, trainable=False)


@tf.function(input_signature=[tf.TensorSpec([None, None], tf.float32)])
def _standardize_current_eps(x):
    return (x - tf.reduce_mean(x, axis=0)) / (tf.math.reduce_std(x, axis=0) + _eps)


def standardize_fixed(x, eps):
    _eps.assign(eps)
    return _standardize_current_eps(x)
'''

# --- hostile ------------------------------------------------------------------------------------

# Rebinds a locked name: the schedule the trace count is judged on.
REBIND_CALLS = STANDARDIZE_REDUCE_RETRACING + '''
CALLS = CALLS[:5]
'''

# Patches the grader: a function whose graph has no While gets one.
PATCH_GRAPH_OP_TYPES = COLLATZ_PY_FUNCTION + '''
import autograder.checks.tracing as _tracing
_real_types = _tracing.graph_op_types
_tracing.graph_op_types = lambda *a, **k: _real_types(*a, **k) | {"While"}
'''

# --- Attacks on what the kernel reports -------------------------------------------------

# Trace counts clamped: the checks' counter module patched so every function reports one trace.
CLAMPS_TRACE_COUNTS = """
import autograder.checks.tracing as _tracing
_tracing.count_traces = lambda *args, **kwargs: 1
""" + edited("06_autograph", "answer-standardize", "def standardize_fixed(x, eps):", "def standardize_fixed(x, eps):")

CASES = [
    Case(
        name="no_bias_int64_variance",
        replace={"answer-rnn-graph": RNN_NO_BIAS, "answer-collatz": COLLATZ_INT64,
                 "answer-standardize": STANDARDIZE_VARIANCE},
        loses=("test-rnn-graph", "test-rnn-gradients", "test-collatz", "test-standardize"),
        breaks={"test-rnn-graph": 1, "test-rnn-gradients": 1, "test-collatz": 1, "test-standardize": 1},
        messages={"test-rnn-graph": "differ from reference_rnn", "test-rnn-gradients": "rnn_graph gradients",
                  "test-collatz": "1-D int32 tensor", "test-standardize": "different values"},
    ),
    Case(
        name="loop_beside_py_function_and_fixed_batch",
        replace={"answer-rnn-graph": RNN_LOOP_BESIDE_PY_FUNCTION, "answer-collatz": COLLATZ_PY_FUNCTION,
                 "answer-standardize": STANDARDIZE_FIXED_BATCH},
        loses=("test-rnn-graph", "test-rnn-gradients", "test-collatz", "test-standardize"),
        breaks={"test-rnn-graph": 2, "test-rnn-gradients": 2, "test-collatz": 2, "test-standardize": 2},
        messages={"test-rnn-graph": "runs beside the answer", "test-rnn-gradients": "runs beside the answer",
                  "test-collatz": "no While op", "test-standardize": "TensorSpec"},
    ),
    Case(
        name="reduce_retracing_python_int_and_tensor_eps",
        replace={"answer-rnn-graph": RNN_REDUCE_RETRACING, "answer-collatz": COLLATZ_PYTHON_INT,
                 "answer-standardize": STANDARDIZE_REDUCE_RETRACING},
        loses=("test-rnn-graph", "test-collatz", "test-standardize"),
        breaks={"test-rnn-graph": 3, "test-collatz": 3, "test-standardize": 3},
        messages={"test-rnn-graph": "traced 2 times", "test-collatz": "at most 1 allowed",
                  "test-standardize": "traced 2 times"},
    ),
    Case(
        name="truncated_backprop",
        replace={"answer-rnn-graph": RNN_TRUNCATED_BPTT},
        loses=("test-rnn-gradients",),
        breaks={"test-rnn-gradients": 1},
        messages={"test-rnn-gradients": "input 0 differs from the reference"},
    ),
    Case(
        name="scan_tensor_array_wrapper",
        replace={"answer-rnn-graph": RNN_SCAN, "answer-collatz": COLLATZ_TENSOR_ARRAY,
                 "answer-standardize": STANDARDIZE_WRAPPER},
    ),
    Case(
        name="wrapped_while_loops_python_function",
        replace={"answer-rnn-graph": RNN_WRAPPED_WHILE_LOOP, "answer-collatz": COLLATZ_WHILE_LOOP,
                 "answer-standardize": STANDARDIZE_FROM_PYTHON_FUNCTION},
    ),
    Case(
        name="right_module_level_eps",
        replace={"answer-standardize": STANDARDIZE_MODULE_EPS},
    ),
    Case(
        name="silenced_errors_unanswered",
        replace={gid: (SILENCE_ERRORS if gid == ANSWERS[0] else "") + released(gid) for gid in ANSWERS},
        loses=("test-rnn-graph", "test-rnn-gradients", "test-collatz", "test-standardize"),
        hostile="silenced-errors",
    ),
    Case(
        name="rebinds_calls",
        replace={"answer-standardize": REBIND_CALLS},
        loses=("test-standardize",),
        messages={"test-standardize": "integrity"},
        hostile="rebinds-locked-name",
    ),
    Case(
        name="patches_graph_op_types",
        replace={"answer-collatz": PATCH_GRAPH_OP_TYPES},
        loses=("test-collatz", "test-standardize"),
        messages={"test-collatz": "integrity", "test-standardize": "integrity"},
        hostile="patches-grader",
    ),
    Case(
        name="duck_typed_rnn",
        replace={"answer-rnn-graph": RNN_DUCK},
        loses=("test-rnn-graph", "test-rnn-gradients"),
        messages={"test-rnn-graph": "runs no tf.function", "test-rnn-gradients": "runs no tf.function"},
        hostile="duck-typed",
    ),
    Case(
        name="reads_course_files",
        replace={"answer-collatz": steal_solution(ASSIGNMENT, "answer-collatz")},
        loses=("test-collatz",),
        hostile="reads-course-files",
    ),
    Case(
        name="clamps_the_trace_counter",
        replace={"answer-standardize": CLAMPS_TRACE_COUNTS},
        attacks=("test-standardize",),
        hostile="forges-counts",
    ),
]
