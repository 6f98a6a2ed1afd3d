// Device-generic interface of the fused bias + GELU kernels: the op kernel in
// bias_gelu_op.cc calls these functors; the CPU versions live there too, the
// GPU versions in bias_gelu_kernel.cu.cc (compiled by nvcc).
#ifndef COURSE_OPS_BIAS_GELU_H_
#define COURSE_OPS_BIAS_GELU_H_

#include <cstdint>

#include "unsupported/Eigen/CXX11/Tensor"

namespace course_ops {

template <typename Device, typename T>
struct BiasGeluFunctor {
  // y = gelu(x + bias), x and y flat with n entries, bias with `channels`.
  // Returns an empty string on success, else what went wrong.
  const char* operator()(const Device& d, const T* x, const T* bias, T* y, int64_t n,
                         int64_t channels);
};

template <typename Device, typename T>
struct BiasGeluGradFunctor {
  // dz = dy * gelu'(x + bias).
  const char* operator()(const Device& d, const T* dy, const T* x, const T* bias, T* dz,
                         int64_t n, int64_t channels);
};

}  // namespace course_ops

#endif  // COURSE_OPS_BIAS_GELU_H_
