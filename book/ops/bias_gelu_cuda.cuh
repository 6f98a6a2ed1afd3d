// The CUDA kernels of the fused bias + GELU op, free of TensorFlow headers so
// that bias_gelu_kernel.cu.cc (the TensorFlow GPU kernel) and
// bias_gelu_harness.cu (the standalone test) launch the very same code.
#ifndef COURSE_OPS_BIAS_GELU_CUDA_CUH_
#define COURSE_OPS_BIAS_GELU_CUDA_CUH_

#include <cstdint>

#include "bias_gelu_math.h"

namespace course_ops {

// y[i] = gelu(x[i] + bias[i % channels]) over a flat [n] buffer whose last
// dimension has `channels` entries.  A grid-stride loop, so any grid size
// covers any n (the seed's one-thread-per-element launch with an `int` index
// breaks past 2^31 elements and needs a grid sized to n).
template <typename T>
__global__ void BiasGeluCudaKernel(const T* __restrict__ x, const T* __restrict__ bias,
                                   T* __restrict__ y, int64_t n, int64_t channels) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    y[i] = gelu(x[i] + bias[i % channels]);
  }
}

// dz[i] = dy[i] * gelu'(x[i] + bias[i % channels]).
template <typename T>
__global__ void BiasGeluGradCudaKernel(const T* __restrict__ dy, const T* __restrict__ x,
                                       const T* __restrict__ bias, T* __restrict__ dz, int64_t n,
                                       int64_t channels) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(blockDim.x) * gridDim.x) {
    dz[i] = dy[i] * gelu_grad(x[i] + bias[i % channels]);
  }
}

// Enough blocks to fill a large GPU a few times over, never more than n needs.
inline int BiasGeluGridSize(int64_t n, int block) {
  const int64_t needed = (n + block - 1) / block;
  return static_cast<int>(needed < 4096 ? (needed > 0 ? needed : 1) : 4096);
}

template <typename T>
cudaError_t LaunchBiasGelu(const T* x, const T* bias, T* y, int64_t n, int64_t channels,
                           cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  const int block = 256;
  BiasGeluCudaKernel<T><<<BiasGeluGridSize(n, block), block, 0, stream>>>(x, bias, y, n, channels);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchBiasGeluGrad(const T* dy, const T* x, const T* bias, T* dz, int64_t n,
                               int64_t channels, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  const int block = 256;
  BiasGeluGradCudaKernel<T><<<BiasGeluGridSize(n, block), block, 0, stream>>>(dy, x, bias, dz, n,
                                                                              channels);
  return cudaGetLastError();
}

}  // namespace course_ops

#endif  // COURSE_OPS_BIAS_GELU_CUDA_CUH_
