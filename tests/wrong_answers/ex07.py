"""Planted wrong answers for exercise 7 (custom op kernel and gradient)."""
from tests.wrong_answers import WrongAnswer

ASSIGNMENT = "07_custom_ops"

FULL = {"test-kernel": 4, "test-gradient": 2, "test-gradient-numeric": 2, "test-device": 2}

# The attribute is read in the constructor but the loop hard-codes beta = 1.
KERNEL_IGNORES_BETA = '''
SWISH_COMPUTE = r"""
    const Tensor& input = context->input(0);
    Tensor* output = nullptr;
    OP_REQUIRES_OK(context, context->allocate_output(0, input.shape(), &output));
    auto x = input.flat<T>();
    auto y = output->flat<T>();
    for (int64_t i = 0; i < x.size(); ++i) y(i) = x(i) / (T(1) + std::exp(-x(i)));
"""
'''

# A missing semicolon: every part needs the op, so every part reports the compiler's line.
KERNEL_DOES_NOT_COMPILE = '''
SWISH_COMPUTE = r"""
    const Tensor& input = context->input(0);
    Tensor* output = nullptr
    OP_REQUIRES_OK(context, context->allocate_output(0, input.shape(), &output));
"""
'''

# d/dx [x s(bx)] taken as s(bx): the product rule's second term is missing.
GRADIENT_WITHOUT_PRODUCT_RULE = '''
def swish_grad(op, dy):
    x = op.inputs[0]
    return dy * tf.sigmoid(tf.cast(op.get_attr("beta"), x.dtype) * x)
'''

# Right formula in NumPy: works eagerly, but a graph has no values to call .numpy() on.
GRADIENT_IN_NUMPY = '''
def swish_grad(op, dy):
    x = op.inputs[0].numpy()
    beta = op.get_attr("beta")
    s = 1 / (1 + np.exp(-beta * x))
    return dy * tf.constant(s + beta * x * s * (1 - s), dtype=dy.dtype)
'''

CASES = [
    WrongAnswer(
        name="kernel_ignores_beta",
        replace={"answer-kernel": KERNEL_IGNORES_BETA},
        expect={**FULL, "test-kernel": 0, "test-gradient-numeric": 0},
        messages={"test-kernel": "beta=0.5", "test-gradient-numeric": "finite differences"},
    ),
    WrongAnswer(
        name="kernel_does_not_compile",
        replace={"answer-kernel": KERNEL_DOES_NOT_COMPILE},
        expect={name: 0 for name in FULL},
        messages={name: "SWISH_COMPUTE" for name in FULL},
    ),
    WrongAnswer(
        name="gradient_without_product_rule",
        replace={"answer-gradient": GRADIENT_WITHOUT_PRODUCT_RULE},
        expect={**FULL, "test-gradient": 0, "test-gradient-numeric": 0, "test-device": 0},
        messages={"test-gradient": "swish gradient (beta=1.0)", "test-device": "gradient is wrong"},
    ),
    WrongAnswer(
        name="gradient_in_numpy",
        replace={"answer-gradient": GRADIENT_IN_NUMPY},
        expect={**FULL, "test-device": 0},
        messages={"test-device": "numpy"},
    ),
]
