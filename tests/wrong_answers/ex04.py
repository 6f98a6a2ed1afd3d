"""Mutation catalogue for exercise 4 (XLA): per clause of every part a wrong
answer, two right answers written differently, and the hostile classes.

Clauses (the parts' **Specification** lists):
- test-xla-step: 1 train_step's results, 2 runs compiled by XLA, 3 reaches the
  square root of the hidden reference's speedup.
- test-predict-one-compile: 1 predict == score_rows, 2 core is score_rows
  compiled by XLA, 3 predict computes through core, 4 one fixed shape (one
  trace, one compilation).
- test-cannot-compile: 1 a set of FUNCTIONS keys, 2 misses none, 3 lists none
  that compiles.
- test-clip-top: 1 clip_top_numpy's results, 2 runs compiled by XLA.
"""

from tests.wrong_answers import Case

ASSIGNMENT = "04_xla"


# --- Part 1: the compiled training step ------------------------------------------------

# Clause 1: compiled and fast, but the functional update is dropped: the old parameters come back.
STEP_RETURNS_OLD_PARAMS = '''
@tf.function(jit_compile=True)
def fast_train_step(params, x, y):
    loss, new_params = train_step(params, x, y)
    return loss, params
'''

# Clause 2: jit_compile forgotten: a plain graph.
STEP_NOT_COMPILED = '''
fast_train_step = tf.function(train_step)
'''

# Clause 3: compiled, right results, but a new tf.function per call: XLA compiles every call.
STEP_COMPILED_EVERY_CALL = '''
def fast_train_step(params, x, y):
    return tf.function(train_step, jit_compile=True)(params, x, y)
'''

# Clause 3, cheaply: the compiled step behind a wrapper that spends 50 ms on other work each call
# (about 5 s to fail, where recompiling every call takes about 20 s to time).
STEP_SLOWED = '''
import time as _time

_compiled_step = tf.function(train_step, jit_compile=True)


def fast_train_step(params, x, y):
    _time.sleep(0.05)
    return _compiled_step(params, x, y)
'''

# Right: a Python wrapper around the compiled step.
STEP_WRAPPER = '''
_compiled_step = tf.function(train_step, jit_compile=True)


def fast_train_step(params, x, y):
    """The XLA-compiled step, behind a plain Python function."""
    return _compiled_step(params, x, y)


fast_train_step(*make_inputs(batch=64))   # a self-check call before the grader's
'''

# Right: the decorator form.
STEP_DECORATED = '''
@tf.function(jit_compile=True)
def fast_train_step(params, x, y):
    loss, updated = train_step(params, x, y)
    return loss, updated
'''

# Duck-typed: quacks like a compiled tf.function (its compiler IR is a real
# compiled step's), but every call runs the step eagerly.
STEP_DUCK = '''
class _LooksCompiled:
    __name__ = "fast_train_step"
    _real = tf.function(train_step, jit_compile=True)

    def __call__(self, params, x, y):
        return train_step(params, x, y)

    def experimental_get_compiler_ir(self, *args):
        return self._real.experimental_get_compiler_ir(*args)

    def experimental_get_tracing_count(self):
        return 1


fast_train_step = _LooksCompiled()
'''

# --- Part 2: one compilation for every batch size --------------------------------------

PREDICT_TEMPLATE = '''
core = tf.function(score_rows{jit}{signature})


def predict(x):
    rows = tf.shape(x)[0]
    {body}
'''
PADDED = "return core(tf.pad(x, [[0, BUCKET - rows], [0, 0]]))[:rows]"


def predict(jit=", jit_compile=True", signature="", body=PADDED):
    return PREDICT_TEMPLATE.format(jit=jit, signature=signature, body=body)


# Clause 1: pads but forgets to slice: BUCKET values come back.
PREDICT_NOT_SLICED = predict(body="return core(tf.pad(x, [[0, BUCKET - rows], [0, 0]]))")
# Clause 2: core is a plain graph, not compiled by XLA.
CORE_NOT_COMPILED = predict(jit="")
# Clause 3: core is right, but predict computes eagerly without it.
PREDICT_WITHOUT_CORE = predict(body="return score_rows(x)")
# Clause 4: one trace, but XLA compiles every batch size (no padding).
SIGNATURE_WITH_NONE = predict(signature=", input_signature=[tf.TensorSpec([None, FEATURES], tf.float32)]",
                              body="return core(x)")

# Right: an input_signature that leaves rows open, padding with concatenated zeros.
PREDICT_CONCAT_SIGNATURE_NONE = '''
core = tf.function(score_rows, jit_compile=True, input_signature=[tf.TensorSpec([None, FEATURES], tf.float32)])


def predict(x):
    rows = x.shape[0]
    padded = tf.concat([x, tf.zeros([BUCKET - rows, FEATURES])], axis=0)
    return core(padded)[:rows]
'''

# Right: a fully known signature, NumPy padding, a NumPy result, a wrapper core.
PREDICT_NUMPY_PADDING = '''
_compiled = tf.function(score_rows, jit_compile=True,
                        input_signature=[tf.TensorSpec([BUCKET, FEATURES], tf.float32)])


def core(x):
    return _compiled(x)


def predict(x):
    x = np.asarray(x, dtype=np.float32)
    padded = np.zeros((BUCKET, FEATURES), np.float32)
    padded[: len(x)] = x
    return core(tf.constant(padded)).numpy()[: len(x)]


predict(np.ones((3, FEATURES), np.float32))
'''

# Right: predict is itself a tf.function that calls the compiled core on a fixed shape from its graph
# (the specification lets predict be plain Python or not).
PREDICT_NESTED_FUNCTION = '''
core = tf.function(score_rows, jit_compile=True)


@tf.function
def predict(x):
    rows = tf.shape(x)[0]
    padded = tf.ensure_shape(tf.pad(x, [[0, BUCKET - rows], [0, 0]]), [BUCKET, FEATURES])
    return core(padded)[:rows]
'''
# Clause 3: a tf.function predict calls core (so it runs compiled work) but returns what it computes
# itself from x: the judge re-runs predict's graph with core shifted, and the answer does not move.
PREDICT_NESTED_CALLS_CORE_BESIDE = PREDICT_NESTED_FUNCTION.replace(
    "    return core(padded)[:rows]",
    "    _ = core(padded)\n    return score_rows(x) + 0.0 * tf.reduce_sum(_)")
# Clause 4: a tf.function predict, traced once for any number of rows, calls core on a shape its graph
# does not know ([None, FEATURES]): XLA compiles core anew for every shape it meets.
PREDICT_NESTED_UNKNOWN_SHAPE = PREDICT_NESTED_FUNCTION.replace(
    "tf.ensure_shape(tf.pad(x, [[0, BUCKET - rows], [0, 0]]), [BUCKET, FEATURES])",
    "tf.pad(x, [[0, BUCKET - rows], [0, 0]])").replace(
    "@tf.function\n", "@tf.function(input_signature=[tf.TensorSpec([None, FEATURES], tf.float32)])\n")

# --- Part 3: what XLA cannot compile ---------------------------------------------------

CANNOT_NOT_A_SET = 'CANNOT_COMPILE = "numpy_median, as_text, histogram"\n'       # clause 1
CANNOT_MISSES_ONE = 'CANNOT_COMPILE = {"numpy_median", "as_text"}\n'              # clause 2
CANNOT_LISTS_DYNAMIC = 'CANNOT_COMPILE = {"numpy_median", "as_text", "histogram", "distinct_values"}\n'  # clause 3
CANNOT_AS_LIST = 'CANNOT_COMPILE = ["as_text", "histogram", "numpy_median"]\n'
CANNOT_COMPUTED = '''
def _fails_under_xla(fn):
    try:
        tf.function(fn, jit_compile=True)(EXAMPLE)
    except tf.errors.OpError:
        return True
    return False


CANNOT_COMPILE = frozenset(name for name, fn in FUNCTIONS.items() if _fails_under_xla(fn))
'''

# --- Part 4: clip_top --------------------------------------------------------------------

# Clause 1: the (k+1)-th largest value, one column off.
CLIP_OFF_BY_ONE = '''
@tf.function(jit_compile=True)
def clip_top(x, k):
    kth = tf.math.top_k(x, k=min(k + 1, x.shape[-1])).values[:, -1:]
    return tf.minimum(x, kth)
'''

# Clause 2: TensorFlow ops, right values, but no jit_compile.
CLIP_NOT_COMPILED = '''
@tf.function
def clip_top(x, k):
    kth = tf.math.top_k(x, k=k).values[:, k - 1:k]
    return tf.minimum(x, kth)
'''

# Clause 2: the NumPy version under jit_compile: XLA cannot compile it.
CLIP_NUMPY_UNDER_JIT = '''
clip_top = tf.function(clip_top_numpy, jit_compile=True)
'''

# Right: a wrapper around a compiled function, with tf.sort.
CLIP_WRAPPER_SORT = '''
@tf.function(jit_compile=True)
def _clip(x, k):
    kth = tf.sort(x, axis=-1, direction="DESCENDING")[:, k - 1]
    return tf.minimum(x, kth[:, None])


def clip_top(x, k):
    return _clip(x, k)


clip_top(tf.ones([2, 3]), 2)
'''

# Right: top_k and gather, decorated.
CLIP_GATHER = '''
@tf.function(jit_compile=True)
def clip_top(x, k):
    top = tf.math.top_k(x, k=k).values
    kth = tf.gather(top, [k - 1], axis=1)
    return tf.where(x > kth, kth, x)
'''

# Duck-typed: NumPy on every call; the compiler IR answers for another, compiled function.
CLIP_DUCK = '''
class _ClipTop:
    __name__ = "clip_top"
    _other = tf.function(lambda x, k: tf.minimum(x, 1.0), jit_compile=True)

    def __call__(self, x, k):
        return tf.constant(_clip_top(np.asarray(x), k))

    def experimental_get_compiler_ir(self, *args):
        return self._other.experimental_get_compiler_ir(*args)

    def experimental_get_tracing_count(self):
        return 1


clip_top = _ClipTop()
'''

# Patches the grader: every concrete function counts as XLA-compiled.
PATCH_MUST_COMPILE = CLIP_NOT_COMPILED + '''
import autograder.checks.tracing as _tracing
_tracing._must_compile = lambda concrete: True
'''

# Rebinds a locked name: drops the function it would have to list.
REBIND_FUNCTIONS = '''
FUNCTIONS = {name: fn for name, fn in FUNCTIONS.items() if name != "histogram"}
CANNOT_COMPILE = {"numpy_median", "as_text"}
'''

CASES = [
    Case(
        name="not_compiled_signature_none_misses_one_off_by_one",
        replace={"answer-xla-step": STEP_NOT_COMPILED, "answer-predict": SIGNATURE_WITH_NONE,
                 "answer-cannot-compile": CANNOT_MISSES_ONE, "answer-clip-top": CLIP_OFF_BY_ONE},
        loses=("test-xla-step", "test-predict-one-compile", "test-cannot-compile", "test-clip-top"),
        breaks={"test-xla-step": 2, "test-predict-one-compile": 4, "test-cannot-compile": 2, "test-clip-top": 1},
        messages={"test-xla-step": "jit_compile=True", "test-predict-one-compile": "input_signature",
                  "test-cannot-compile": "misses 1", "test-clip-top": "differs from clip_top_numpy"},
    ),
    Case(
        name="old_params_predict_without_core_lists_dynamic_clip_not_compiled",
        replace={"answer-xla-step": STEP_RETURNS_OLD_PARAMS, "answer-predict": PREDICT_WITHOUT_CORE,
                 "answer-cannot-compile": CANNOT_LISTS_DYNAMIC, "answer-clip-top": CLIP_NOT_COMPILED},
        loses=("test-xla-step", "test-predict-one-compile", "test-cannot-compile", "test-clip-top"),
        breaks={"test-xla-step": 1, "test-predict-one-compile": 3, "test-cannot-compile": 3, "test-clip-top": 2},
        messages={"test-xla-step": "differs from train_step", "test-predict-one-compile": "through core",
                  "test-cannot-compile": "XLA does compile", "test-clip-top": "not compiled with XLA"},
    ),
    Case(
        name="compiled_every_call_unsliced_not_a_set_numpy_under_jit",
        replace={"answer-xla-step": STEP_COMPILED_EVERY_CALL, "answer-predict": PREDICT_NOT_SLICED,
                 "answer-cannot-compile": CANNOT_NOT_A_SET, "answer-clip-top": CLIP_NUMPY_UNDER_JIT},
        loses=("test-xla-step", "test-predict-one-compile", "test-cannot-compile", "test-clip-top"),
        breaks={"test-xla-step": 3, "test-predict-one-compile": 1, "test-cannot-compile": 1, "test-clip-top": 2},
        messages={"test-xla-step": "needed", "test-predict-one-compile": "is not score_rows(x)",
                  "test-cannot-compile": "must be a set", "test-clip-top": "cannot compile"},
    ),
    Case(
        name="wrapped_signature_none_list_sort",
        replace={"answer-xla-step": STEP_WRAPPER, "answer-predict": PREDICT_CONCAT_SIGNATURE_NONE,
                 "answer-cannot-compile": CANNOT_AS_LIST, "answer-clip-top": CLIP_WRAPPER_SORT},
    ),
    Case(
        name="decorated_numpy_padding_computed_gather",
        replace={"answer-xla-step": STEP_DECORATED, "answer-predict": PREDICT_NUMPY_PADDING,
                 "answer-cannot-compile": CANNOT_COMPUTED, "answer-clip-top": CLIP_GATHER},
    ),
    Case(
        name="right_predict_is_a_tf_function_calling_core",
        replace={"answer-predict": PREDICT_NESTED_FUNCTION},
    ),
    Case(
        name="nested_predict_computes_beside_core",
        replace={"answer-predict": PREDICT_NESTED_CALLS_CORE_BESIDE},
        loses=("test-predict-one-compile",),
        breaks={"test-predict-one-compile": 3},
        messages={"test-predict-one-compile": "does not come from core"},
        keeps=("test-clip-top",),
    ),
    Case(
        name="nested_predict_calls_core_on_an_unknown_shape",
        replace={"answer-predict": PREDICT_NESTED_UNKNOWN_SHAPE},
        loses=("test-predict-one-compile",),
        breaks={"test-predict-one-compile": 4},
        messages={"test-predict-one-compile": "not fully known"},
    ),
    Case(
        name="rebinds_functions_and_core_not_compiled",
        replace={"answer-predict": CORE_NOT_COMPILED, "answer-cannot-compile": REBIND_FUNCTIONS},
        loses=("test-predict-one-compile", "test-cannot-compile", "test-clip-top"),
        breaks={"test-predict-one-compile": 2},
        messages={"test-predict-one-compile": "not compiled with XLA", "test-cannot-compile": "integrity",
                  "test-clip-top": "integrity"},
        hostile="rebinds-locked-name",
    ),
    Case(
        name="patches_must_compile",
        replace={"answer-clip-top": PATCH_MUST_COMPILE},
        loses=("test-clip-top",),
        messages={"test-clip-top": "integrity"},
        hostile="patches-grader",
    ),
    Case(
        name="duck_typed_compiled_step_and_clip_top",
        replace={"answer-xla-step": STEP_DUCK, "answer-clip-top": CLIP_DUCK},
        loses=("test-xla-step", "test-clip-top"),
        messages={"test-xla-step": "ran no tf.function", "test-clip-top": "ran no tf.function"},
        hostile="duck-typed",
    ),
    Case(  # part independence: a part 1 that fails its timing (calls staged in the kernel) costs no other part
        name="slowed_step_keeps_the_other_parts",
        replace={"answer-xla-step": STEP_SLOWED},
        loses=("test-xla-step",),
        breaks={"test-xla-step": 3},
        messages={"test-xla-step": "needed"},
        keeps=("test-predict-one-compile", "test-cannot-compile", "test-clip-top"),
    ),
]
