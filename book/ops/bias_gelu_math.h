// Element math of the fused bias + GELU op, shared by the CPU kernel, the CUDA
// kernel and the standalone harness.  No TensorFlow headers here, so the
// harness compiles with nvcc alone.
#ifndef COURSE_OPS_BIAS_GELU_MATH_H_
#define COURSE_OPS_BIAS_GELU_MATH_H_

#include <cmath>

#if defined(__CUDACC__)
#define BIAS_GELU_HD __host__ __device__
#else
#define BIAS_GELU_HD
#endif

namespace course_ops {

// Exact GELU, the same function as tf.nn.gelu(z, approximate=False):
// gelu(z) = z * Phi(z) = 0.5 * z * (1 + erf(z / sqrt(2))).
template <typename T>
BIAS_GELU_HD inline T gelu(T z) {
  const T kInvSqrt2 = T(0.70710678118654752440);
  return T(0.5) * z * (T(1) + erf(z * kInvSqrt2));
}

// d gelu / dz = Phi(z) + z * phi(z), phi the standard normal density.
template <typename T>
BIAS_GELU_HD inline T gelu_grad(T z) {
  const T kInvSqrt2 = T(0.70710678118654752440);
  const T kInvSqrt2Pi = T(0.39894228040143267794);
  return T(0.5) * (T(1) + erf(z * kInvSqrt2)) + z * kInvSqrt2Pi * exp(T(-0.5) * z * z);
}

}  // namespace course_ops

#endif  // COURSE_OPS_BIAS_GELU_MATH_H_
