"""Mutation catalogue for exercise 7 (custom op kernel and gradient): per
clause of every part a wrong answer, two right answers written differently,
and the hostile classes.

Clauses (the parts' **Specification** lists):
- test-kernel: 1 compiles, 2 output 0 has the input's shape and dtype, 3 every
  element x * sigmoid(beta_ x), finite for large |x|, 4 float and double, each
  in its own precision.
- test-gradient (swish_grad on its own): 1 dy times the derivative, x's shape
  and dtype, 2 the op's own beta, 3 TensorFlow ops (works in a graph: the
  judge runs the exported graph itself on fresh inputs).
- test-gradient-numeric: 1 the registered gradient agrees with finite
  differences through the kernel.
- test-device: 1 op and gradient run on RUN_ON in a graph with soft placement
  off, with the right values.

Every distinct kernel is one C++ build (about 15 s), so kernels are shared
between cases where they can be.
"""

from tests.wrong_answers import Case

ASSIGNMENT = "07_custom_ops"

FULL = {"test-kernel": 4, "test-gradient": 2, "test-gradient-numeric": 2, "test-device": 2}


KERNEL_TEMPLATE = '''
SWISH_COMPUTE = r"""
    const Tensor& input = context->input(0);
    Tensor* output = nullptr;
    OP_REQUIRES_OK(context, context->allocate_output(0, {shape}, &output));
    auto x = input.flat<T>();
    auto y = output->flat<T>();
    const T beta = static_cast<T>(beta_);
    for (int64_t i = 0; i < x.size(); ++i) {{
      {body}
    }}
"""
'''


def kernel(body="y(i) = x(i) / (T(1) + std::exp(-beta * x(i)));", shape="input.shape()"):
    return KERNEL_TEMPLATE.format(body=body, shape=shape)


# --- Part 1: the kernel ------------------------------------------------------------------------

# Clause 1: a missing semicolon.
KERNEL_DOES_NOT_COMPILE = '''
SWISH_COMPUTE = r"""
    const Tensor& input = context->input(0);
    Tensor* output = nullptr
    OP_REQUIRES_OK(context, context->allocate_output(0, input.shape(), &output));
"""
'''
# Clause 2: a flat output of the right size and values, whatever the input's shape.
KERNEL_FLAT_OUTPUT = kernel(shape="TensorShape({input.NumElements()})")
# Clause 3: beta read in the constructor, but the loop hard-codes beta = 1.
KERNEL_IGNORES_BETA = kernel(body="y(i) = x(i) / (T(1) + std::exp(-x(i)));")
# Clause 3: exp(bx) / (1 + exp(bx)) is inf / inf = NaN for large x.
KERNEL_OVERFLOWS = kernel(body="const T e = std::exp(beta * x(i)); y(i) = x(i) * e / (T(1) + e);")
# Clause 3: the stable sigmoid's branch taken on x's sign instead of beta * x's: stable for beta > 0 only.
KERNEL_BRANCHES_ON_X = kernel(body="if (x(i) >= T(0)) { y(i) = x(i) / (T(1) + std::exp(-beta * x(i))); } "
                                   "else { const T e = std::exp(beta * x(i)); y(i) = x(i) * e / (T(1) + e); }")
# Clause 4: every T computed through float: double results lose their precision.
KERNEL_IN_FLOAT = kernel(body="const float v = static_cast<float>(x(i)); "
                              "y(i) = static_cast<T>(v / (1.0f + std::exp(-beta_ * v)));")

# Right: an Eigen expression over the flat views.
KERNEL_EIGEN = '''
SWISH_COMPUTE = r"""
    const Tensor& input = context->input(0);
    Tensor* output = nullptr;
    OP_REQUIRES_OK(context, context->allocate_output(0, input.shape(), &output));
    auto x = input.flat<T>();
    const T beta = static_cast<T>(beta_);
    output->flat<T>() = x * ((x * (-beta)).exp() + T(1)).inverse();
"""
'''

# Right: the sigmoid first, through pointers.
KERNEL_POINTERS = '''
SWISH_COMPUTE = r"""
    const Tensor& in = context->input(0);
    Tensor* out = nullptr;
    OP_REQUIRES_OK(context, context->allocate_output(0, in.shape(), &out));
    const T* src = in.flat<T>().data();
    T* dst = out->flat<T>().data();
    for (int64_t i = 0, n = in.NumElements(); i < n; ++i) {
      const T s = T(1) / (T(1) + std::exp(-static_cast<T>(beta_) * src[i]));
      dst[i] = src[i] * s;
    }
"""
'''

# --- Part 2: the gradient ------------------------------------------------------------------------

GRADIENT_TEMPLATE = '''
def swish_grad(op, dy):
    x = op.inputs[0]
    beta = {beta}
    s = tf.sigmoid(beta * x)
    {result}
'''


def gradient(beta='tf.cast(op.get_attr("beta"), x.dtype)', result="return dy * (s + beta * x * s * (1 - s))"):
    return GRADIENT_TEMPLATE.format(beta=beta, result=result)


# Clause 1: d/dx [x s(bx)] taken as s(bx): the product rule's second term is missing.
GRADIENT_WITHOUT_PRODUCT_RULE = gradient(result="return dy * s")
# Clause 2: beta fixed at 1.
GRADIENT_BETA_ONE = gradient(beta="tf.constant(1.0, x.dtype)")
# Clause 3: the right formula in NumPy: works eagerly, but a graph has no values.
GRADIENT_IN_NUMPY = '''
def swish_grad(op, dy):
    x = op.inputs[0].numpy()
    beta = op.get_attr("beta")
    s = 1 / (1 + np.exp(-beta * x))
    return dy * tf.constant(s + beta * x * s * (1 - s), dtype=dy.dtype)
'''
# Clause 3: the right formula in NumPy inside tf.py_function: it runs in a graph, but as a
# Python call (EagerPyFunc), not TensorFlow ops; the grader runs the exported graph itself.
# The registered gradient is numerically right, so parts 3 and 4 keep their marks.
GRADIENT_IN_PY_FUNCTION = '''
def swish_grad(op, dy):
    x = op.inputs[0]
    beta = op.get_attr("beta")

    def numpy_grad(xv, dyv):
        xv, dyv = xv.numpy(), dyv.numpy()
        s = 1 / (1 + np.exp(-beta * xv))
        return dyv * (s + beta * xv * s * (1 - s))

    return tf.reshape(tf.py_function(numpy_grad, [x, dy], x.dtype), tf.shape(x))
'''
# Test-device clause 1: the gradient pinned to the host's first CPU.
GRADIENT_ON_CPU0 = '''
def swish_grad(op, dy):
    with tf.device("/CPU:0"):
        x = op.inputs[0]
        beta = tf.cast(op.get_attr("beta"), x.dtype)
        s = tf.sigmoid(beta * x)
        return dy * (s + beta * x * s * (1 - s))
'''

# Right: let a tape differentiate the formula inside the gradient function.
GRADIENT_BY_TAPE = '''
def swish_grad(op, dy):
    x = tf.identity(op.inputs[0])
    beta = tf.cast(op.get_attr("beta"), x.dtype)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * tf.math.sigmoid(beta * x)
    return tape.gradient(y, x, output_gradients=dy)
'''

# Right: from the op's output, y = x s: dy/dx = beta y + s (1 - beta y).
GRADIENT_FROM_OUTPUT = '''
def swish_grad(op, dy):
    (x,) = op.inputs
    y = op.outputs[0]
    beta = tf.constant(op.get_attr("beta"), dtype=op.get_attr("T"))
    s = tf.math.sigmoid(beta * x)
    return dy * (beta * y + s * (1 - beta * y))
'''

# --- hostile ---------------------------------------------------------------------------------------

# Rebinds a locked name: build_swish hands back the Python reference, no C++ built.
REBIND_BUILD_SWISH = '''
import types as _types
SWISH_COMPUTE = ""
build_swish = lambda body, gpu=False: _types.SimpleNamespace(swish=lambda x, beta=1.0: swish_reference(x, beta))
'''

# Patches the grader: every gradient comparison reports a match.
PATCH_COMPARE = GRADIENT_WITHOUT_PRODUCT_RULE + '''
import autograder.checks.gradients as _gradients
_gradients._compare = lambda got, expected, rtol, atol: (True, 0.0, 0.0, ())
'''

# Duck-typed: a str that formats (and so names its op) as a correct kernel,
# while the C++ it hands the compiler copies the input.
KERNEL_DUCK = '''
class _Kernel(str):
    def __format__(self, spec):
        return """
    const Tensor& input = context->input(0);
    Tensor* output = nullptr;
    OP_REQUIRES_OK(context, context->allocate_output(0, input.shape(), &output));
    auto x = input.flat<T>();
    auto y = output->flat<T>();
    for (int64_t i = 0; i < x.size(); ++i) y(i) = x(i) / (T(1) + std::exp(-static_cast<T>(beta_) * x(i)));
"""


SWISH_COMPUTE = _Kernel("    context->set_output(0, context->input(0));\\n")
'''

# test-gradient 1: float64 inputs raise.  Part 4 runs in float32 and must keep its marks
# although the gradient parts' tests stop early (they used to leave TensorFlow collecting
# run metadata that part 4 then counted: issue 21).
GRADIENT_FLOAT32_ONLY = '''
def swish_grad(op, dy):
    x = op.inputs[0]
    if x.dtype == tf.float64:
        raise TypeError("this gradient handles float32 only")
    beta = tf.cast(op.get_attr("beta"), x.dtype)
    s = tf.sigmoid(beta * x)
    return dy * (s + beta * x * s * (1 - s))
'''

# Right: the one-element list TensorFlow's gradient convention allows (one gradient per input).
GRADIENT_AS_LIST = '''
def swish_grad(op, dy):
    (x,) = op.inputs
    beta = tf.constant(op.get_attr("beta"), dtype=x.dtype)
    sig = tf.math.sigmoid(beta * x)
    return [dy * sig * (1 + beta * x * (1 - sig))]
'''

CASES = [
    Case(
        name="ignores_beta_and_no_product_rule",
        replace={"answer-kernel": KERNEL_IGNORES_BETA, "answer-gradient": GRADIENT_WITHOUT_PRODUCT_RULE},
        loses=("test-kernel", "test-gradient", "test-gradient-numeric", "test-device"),
        breaks={"test-kernel": 3, "test-gradient": 1, "test-gradient-numeric": 1, "test-device": 1},
        messages={"test-kernel": "beta=", "test-gradient": "swish_grad is wrong",
                  "test-gradient-numeric": "finite differences", "test-device": "gradient is wrong"},
    ),
    Case(
        name="flat_output",
        replace={"answer-kernel": KERNEL_FLAT_OUTPUT},
        loses=("test-kernel", "test-gradient-numeric", "test-device"),
        breaks={"test-kernel": 2},
        messages={"test-kernel": "allocate output 0 with the input's shape"},
    ),
    Case(
        name="float_precision_and_beta_one",
        replace={"answer-kernel": KERNEL_IN_FLOAT, "answer-gradient": GRADIENT_BETA_ONE},
        loses=("test-kernel", "test-gradient", "test-gradient-numeric"),
        breaks={"test-kernel": 4, "test-gradient": 2, "test-gradient-numeric": 1},
        messages={"test-kernel": "own precision", "test-gradient": "beta=",
                  "test-gradient-numeric": "finite differences"},
    ),
    Case(
        name="does_not_compile_and_numpy_gradient",
        replace={"answer-kernel": KERNEL_DOES_NOT_COMPILE, "answer-gradient": GRADIENT_IN_NUMPY},
        loses=("test-kernel", "test-gradient", "test-gradient-numeric", "test-device"),
        breaks={"test-kernel": 1, "test-gradient": 3},
        messages={"test-kernel": "SWISH_COMPUTE", "test-gradient": "inside tf.function",
                  "test-gradient-numeric": "SWISH_COMPUTE", "test-device": "SWISH_COMPUTE"},
    ),
    Case(
        name="overflows_and_gradient_on_cpu0",
        replace={"answer-kernel": KERNEL_OVERFLOWS, "answer-gradient": GRADIENT_ON_CPU0},
        loses=("test-kernel", "test-device"),
        breaks={"test-kernel": 3, "test-device": 1},
        messages={"test-kernel": "overflows", "test-device": "must run on CPU:1"},
    ),
    Case(
        name="stable_only_for_positive_beta",
        replace={"answer-kernel": KERNEL_BRANCHES_ON_X},
        loses=("test-kernel",),
        breaks={"test-kernel": 3},
        messages={"test-kernel": "overflows for large |x|"},
        keeps=("test-gradient-numeric",),
    ),
    Case(
        name="eigen_and_tape",
        replace={"answer-kernel": KERNEL_EIGEN, "answer-gradient": GRADIENT_BY_TAPE},
    ),
    Case(
        name="pointers_and_output",
        replace={"answer-kernel": KERNEL_POINTERS, "answer-gradient": GRADIENT_FROM_OUTPUT},
    ),
    Case(
        name="gradient_float32_only_placement_kept",
        replace={"answer-gradient": GRADIENT_FLOAT32_ONLY},
        loses=("test-gradient", "test-gradient-numeric"),
        breaks={"test-gradient": 1},
        messages={"test-gradient": "float32 only"},
        keeps=("test-device",),
    ),
    Case(
        name="gradient_in_py_function",
        replace={"answer-gradient": GRADIENT_IN_PY_FUNCTION},
        loses=("test-gradient",),
        breaks={"test-gradient": 3},
        messages={"test-gradient": "EagerPyFunc"},
        keeps=("test-gradient-numeric", "test-device"),
    ),
    Case(
        name="gradient_as_one_element_list",
        replace={"answer-gradient": GRADIENT_AS_LIST},
    ),
    Case(
        name="rebinds_build_swish",
        replace={"answer-kernel": REBIND_BUILD_SWISH},
        loses=("test-kernel", "test-gradient", "test-gradient-numeric", "test-device"),
        messages={name: "integrity" for name in FULL},
        hostile="rebinds-locked-name",
    ),
    Case(
        name="patches_gradient_compare",
        replace={"answer-gradient": PATCH_COMPARE},
        loses=("test-gradient", "test-gradient-numeric", "test-device"),
        messages={"test-gradient": "integrity", "test-gradient-numeric": "integrity", "test-device": "integrity"},
        hostile="patches-grader",
    ),
    Case(
        name="duck_typed_kernel_string",
        replace={"answer-kernel": KERNEL_DUCK},
        loses=("test-kernel", "test-gradient-numeric", "test-device"),
        messages={"test-kernel": "must be a str", "test-device": "must be a str"},
        hostile="duck-typed",
    ),
]
