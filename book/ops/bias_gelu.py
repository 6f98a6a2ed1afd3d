"""Python side of the fused bias + GELU op: load the library, wrap the op,
register its gradient.

``import bias_gelu`` (with ``book/ops`` on ``sys.path``) builds the library if
needed (cached), loads it and registers the gradient of ``BiasGelu`` once per
process.  On a machine where TensorFlow sees a GPU and nvcc exists it loads
the build with the CUDA kernel; otherwise the CPU build.
"""
from __future__ import annotations

import tensorflow as tf

import build

_has_gpu = bool(tf.config.list_physical_devices("GPU"))
_toolchain = build.find_toolchain()
LIBRARY_PATH = build.build_bias_gelu(gpu=_has_gpu and _toolchain.nvcc is not None, toolchain=_toolchain)
ops = tf.load_op_library(str(LIBRARY_PATH))


def bias_gelu(x, bias):
    """gelu(x + bias) in one kernel; ``bias`` runs along ``x``'s last axis."""
    return ops.bias_gelu(x, bias)


@tf.RegisterGradient("BiasGelu")
def _bias_gelu_grad(op, dy):
    x, bias = op.inputs
    # One fused kernel for d/dz; bias was broadcast along every axis but the
    # last, so its gradient sums dz over those axes.
    dz = ops.bias_gelu_grad(dy, x, bias)
    return dz, tf.reduce_sum(tf.reshape(dz, [-1, tf.shape(bias)[0]]), axis=0)
