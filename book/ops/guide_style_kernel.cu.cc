// A kernel written the way TensorFlow's "create an op" guide writes its GPU
// example: TensorFlow's GPU helpers (GpuGridRangeX, GpuLaunchKernel) from
// gpu_kernel_helper.h.  It is not part of the op; the chapter and the tests
// compile it with and without --expt-relaxed-constexpr to show that nvcc 13
// rejects TensorFlow's GPU headers without that flag.
#if GOOGLE_CUDA
#define EIGEN_USE_GPU
#include "tensorflow/core/util/gpu_kernel_helper.h"

using namespace tensorflow;
using GPUDevice = Eigen::GpuDevice;

__global__ void TwiceKernel(const int size, const float* in, float* out) {
  for (int i : GpuGridRangeX(size)) out[i] = 2 * __ldg(in + i);
}

void LaunchTwice(const GPUDevice& d, int size, const float* in, float* out) {
  GpuLaunchConfig config = GetGpuLaunchConfig(size, d);
  TF_CHECK_OK(GpuLaunchKernel(TwiceKernel, config.block_count, config.thread_per_block, 0,
                              d.stream(), size, in, out));
}
#endif  // GOOGLE_CUDA
