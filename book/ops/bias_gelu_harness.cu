// Standalone test of the fused bias + GELU CUDA kernels, without TensorFlow:
// launches them on random data of several shapes (empty, odd, larger than one
// grid) and compares with a double-precision CPU reference.
//
//   python book/ops/build.py --harness --run     (or: nvcc -std=c++17 -O2 \
//       bias_gelu_harness.cu -o bias_gelu_harness && ./bias_gelu_harness)
//
// Exit status 0 when every case matches, 1 on a mismatch, 2 when no GPU or
// CUDA error.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "bias_gelu_cuda.cuh"

using course_ops::gelu;
using course_ops::gelu_grad;

#define CUDA_OK(expr)                                                                \
  do {                                                                               \
    cudaError_t status_ = (expr);                                                    \
    if (status_ != cudaSuccess) {                                                    \
      std::fprintf(stderr, "CUDA error: %s at %s\n", cudaGetErrorString(status_), #expr); \
      std::exit(2);                                                                  \
    }                                                                                \
  } while (0)

// Runs one shape; returns the largest absolute error of y and dz against the
// CPU reference.
static double RunCase(int64_t rows, int64_t channels, std::mt19937& rng) {
  const int64_t n = rows * channels;
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> x(n), bias(channels), dy(n), y(n), dz(n);
  for (auto& v : x) v = normal(rng);
  for (auto& v : bias) v = normal(rng);
  for (auto& v : dy) v = normal(rng);

  float *d_x, *d_bias, *d_dy, *d_y, *d_dz;
  const size_t bytes = sizeof(float) * (n > 0 ? n : 1);
  CUDA_OK(cudaMalloc(&d_x, bytes));
  CUDA_OK(cudaMalloc(&d_dy, bytes));
  CUDA_OK(cudaMalloc(&d_y, bytes));
  CUDA_OK(cudaMalloc(&d_dz, bytes));
  CUDA_OK(cudaMalloc(&d_bias, sizeof(float) * channels));
  CUDA_OK(cudaMemcpy(d_x, x.data(), sizeof(float) * n, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(d_dy, dy.data(), sizeof(float) * n, cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(d_bias, bias.data(), sizeof(float) * channels, cudaMemcpyHostToDevice));
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreate(&stream));
  CUDA_OK(course_ops::LaunchBiasGelu(d_x, d_bias, d_y, n, channels, stream));
  CUDA_OK(course_ops::LaunchBiasGeluGrad(d_dy, d_x, d_bias, d_dz, n, channels, stream));
  CUDA_OK(cudaStreamSynchronize(stream));
  CUDA_OK(cudaMemcpy(y.data(), d_y, sizeof(float) * n, cudaMemcpyDeviceToHost));
  CUDA_OK(cudaMemcpy(dz.data(), d_dz, sizeof(float) * n, cudaMemcpyDeviceToHost));

  double worst = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double z = static_cast<double>(x[i]) + bias[i % channels];
    const double scale_y = 1.0 + std::fabs(gelu(z));
    const double scale_dz = 1.0 + std::fabs(dy[i] * gelu_grad(z));
    worst = std::fmax(worst, std::fabs(y[i] - gelu(z)) / scale_y);
    worst = std::fmax(worst, std::fabs(dz[i] - dy[i] * gelu_grad(z)) / scale_dz);
  }
  CUDA_OK(cudaStreamDestroy(stream));
  cudaFree(d_x); cudaFree(d_dy); cudaFree(d_y); cudaFree(d_dz); cudaFree(d_bias);
  return worst;
}

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::fprintf(stderr, "no CUDA device: the harness compiled but cannot run here\n");
    return 2;
  }
  cudaDeviceProp prop;
  CUDA_OK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s (compute capability %d.%d)\n", prop.name, prop.major, prop.minor);

  // Empty, one element, odd sizes, one channel, and more elements than one
  // grid of 4096 x 256 threads covers (the grid-stride loop must wrap).
  const int64_t shapes[][2] = {{0, 7}, {1, 1}, {3, 5}, {17, 129}, {1000, 1}, {4099, 1024}};
  const double tolerance = 1e-5;  // float32 kernel vs double reference, relative
  std::mt19937 rng(1234);
  int failures = 0;
  for (const auto& shape : shapes) {
    const double err = RunCase(shape[0], shape[1], rng);
    const bool ok = err <= tolerance;
    failures += !ok;
    std::printf("%-4s rows=%-6lld channels=%-5lld max relative error %.2e\n", ok ? "ok" : "FAIL",
                static_cast<long long>(shape[0]), static_cast<long long>(shape[1]), err);
  }
  std::printf(failures ? "%d case(s) FAILED\n" : "all cases passed\n", failures);
  return failures ? 1 : 0;
}
