// GPU functors of the fused bias + GELU op: launch the kernels from
// bias_gelu_cuda.cuh on the stream TensorFlow gives this op, so they are
// ordered with the ops before and after it (the seed's launch on the default
// stream is not, and would race with TensorFlow's own stream).
#if GOOGLE_CUDA
#define EIGEN_USE_GPU

#include "bias_gelu.h"
#include "bias_gelu_cuda.cuh"

namespace course_ops {

using GPUDevice = Eigen::GpuDevice;

template <typename T>
struct BiasGeluFunctor<GPUDevice, T> {
  const char* operator()(const GPUDevice& d, const T* x, const T* bias, T* y, int64_t n,
                         int64_t channels) {
    const cudaError_t status = LaunchBiasGelu(x, bias, y, n, channels, d.stream());
    return status == cudaSuccess ? "" : cudaGetErrorString(status);
  }
};

template <typename T>
struct BiasGeluGradFunctor<GPUDevice, T> {
  const char* operator()(const GPUDevice& d, const T* dy, const T* x, const T* bias, T* dz,
                         int64_t n, int64_t channels) {
    const cudaError_t status = LaunchBiasGeluGrad(dy, x, bias, dz, n, channels, d.stream());
    return status == cudaSuccess ? "" : cudaGetErrorString(status);
  }
};

template struct BiasGeluFunctor<GPUDevice, float>;
template struct BiasGeluGradFunctor<GPUDevice, float>;

}  // namespace course_ops

#endif  // GOOGLE_CUDA
