// A fused bias + GELU op for TensorFlow: y = gelu(x + bias), the activation of
// a transformer's MLP block, in one pass over memory instead of three (add,
// erf, multiply) when run eagerly.
//
// Built by build.py: for the CPU with g++ alone, and for the GPU with
// -DGOOGLE_CUDA=1 plus the object nvcc makes from bias_gelu_kernel.cu.cc.
// -DCOURSE_OPS_GPU_ONLY leaves the CPU kernels out (the chapter uses that
// build to show what calling a GPU-only kernel on a CPU does).
#define EIGEN_USE_THREADS
#if GOOGLE_CUDA
#define EIGEN_USE_GPU
#endif

#include "bias_gelu.h"

#include <cstring>

#include "bias_gelu_math.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/shape_inference.h"
#include "unsupported/Eigen/SpecialFunctions"

namespace course_ops {

using ::tensorflow::OpKernel;
using ::tensorflow::OpKernelConstruction;
using ::tensorflow::OpKernelContext;
using ::tensorflow::Status;
using ::tensorflow::Tensor;
using ::tensorflow::TensorShapeUtils;
using ::tensorflow::errors::InvalidArgument;
using ::tensorflow::shape_inference::DimensionHandle;
using ::tensorflow::shape_inference::InferenceContext;
using ::tensorflow::shape_inference::ShapeHandle;
using CPUDevice = Eigen::ThreadPoolDevice;
using GPUDevice = Eigen::GpuDevice;

// Shape functions: x has rank >= 1, bias is a vector as long as x's last
// dimension, the output has x's shape.  They run when a graph is built, so a
// wrong bias shape fails at trace time inside tf.function, not in the kernel.
static Status CheckXAndBias(InferenceContext* c, int x_index, int bias_index, ShapeHandle* x) {
  ShapeHandle bias;
  TF_RETURN_IF_ERROR(c->WithRankAtLeast(c->input(x_index), 1, x));
  TF_RETURN_IF_ERROR(c->WithRank(c->input(bias_index), 1, &bias));
  DimensionHandle channels;
  return c->Merge(c->Dim(*x, -1), c->Dim(bias, 0), &channels);
}

static Status BiasGeluShape(InferenceContext* c) {
  ShapeHandle x;
  TF_RETURN_IF_ERROR(CheckXAndBias(c, 0, 1, &x));
  c->set_output(0, x);
  return Status();
}

static Status BiasGeluGradShape(InferenceContext* c) {
  ShapeHandle x, out;
  TF_RETURN_IF_ERROR(CheckXAndBias(c, 1, 2, &x));
  TF_RETURN_IF_ERROR(c->Merge(c->input(0), x, &out));
  c->set_output(0, out);
  return Status();
}

REGISTER_OP("BiasGelu")
    .Input("x: T")
    .Input("bias: T")
    .Output("y: T")
    .Attr("T: {float, double}")
    .SetShapeFn(BiasGeluShape)
    .Doc("y = gelu(x + bias) (exact, erf-based GELU); bias runs along x's last dimension.");

REGISTER_OP("BiasGeluGrad")
    .Input("dy: T")
    .Input("x: T")
    .Input("bias: T")
    .Output("dz: T")
    .Attr("T: {float, double}")
    .SetShapeFn(BiasGeluGradShape)
    .Doc("dz = dy * gelu'(x + bias): the gradient with respect to x (and, summed, bias).");

// CPU functors: one row (the last dimension, as long as bias) at a time, as
// Eigen array expressions so erf and exp use Eigen's vectorised versions, and
// rows split over TensorFlow's intra-op thread pool.  (A scalar loop over
// std::erf with an `i % channels` per element measured several times slower
// than TensorFlow's own ops on the build machine.)
template <typename T>
using Row = Eigen::Array<T, Eigen::Dynamic, 1>;

template <typename T>
struct BiasGeluFunctor<CPUDevice, T> {
  const char* operator()(const CPUDevice& d, const T* x, const T* bias, T* y, int64_t n,
                         int64_t channels) {
    if (n == 0) return "";
    const T kInvSqrt2 = T(0.70710678118654752440);
    // Cost of one row in the units Eigen uses to decide how finely to shard.
    const Eigen::TensorOpCost row_cost(2 * sizeof(T) * channels, sizeof(T) * channels, 20 * channels);
    d.parallelFor(n / channels, row_cost, [=](Eigen::Index begin, Eigen::Index end) {
      const Eigen::Map<const Row<T>> b(bias, channels);
      for (Eigen::Index r = begin; r < end; ++r) {
        const auto z = Eigen::Map<const Row<T>>(x + r * channels, channels) + b;
        Eigen::Map<Row<T>>(y + r * channels, channels) = T(0.5) * z * (T(1) + (z * kInvSqrt2).erf());
      }
    });
    return "";
  }
};

template <typename T>
struct BiasGeluGradFunctor<CPUDevice, T> {
  const char* operator()(const CPUDevice& d, const T* dy, const T* x, const T* bias, T* dz,
                         int64_t n, int64_t channels) {
    if (n == 0) return "";
    const T kInvSqrt2 = T(0.70710678118654752440);
    const T kInvSqrt2Pi = T(0.39894228040143267794);
    const Eigen::TensorOpCost row_cost(3 * sizeof(T) * channels, sizeof(T) * channels, 30 * channels);
    d.parallelFor(n / channels, row_cost, [=](Eigen::Index begin, Eigen::Index end) {
      const Eigen::Map<const Row<T>> b(bias, channels);
      for (Eigen::Index r = begin; r < end; ++r) {
        const auto z = Eigen::Map<const Row<T>>(x + r * channels, channels) + b;
        const auto g = T(0.5) * (T(1) + (z * kInvSqrt2).erf()) + z * kInvSqrt2Pi * (T(-0.5) * z * z).exp();
        Eigen::Map<Row<T>>(dz + r * channels, channels) =
            Eigen::Map<const Row<T>>(dy + r * channels, channels) * g;
      }
    });
    return "";
  }
};

// Checks shared by both kernels: eager calls reach the kernel without a shape
// function having seen the shapes.
static Status CheckBias(const Tensor& x, const Tensor& bias) {
  if (!TensorShapeUtils::IsVectorOrHigher(x.shape()))
    return InvalidArgument("x must have rank >= 1, got shape ", x.shape().DebugString());
  if (!TensorShapeUtils::IsVector(bias.shape()))
    return InvalidArgument("bias must be a vector, got shape ", bias.shape().DebugString());
  if (bias.dim_size(0) != x.dim_size(x.dims() - 1))
    return InvalidArgument("bias has ", bias.dim_size(0), " entries but x's last dimension is ",
                           x.dim_size(x.dims() - 1));
  return Status();
}

template <typename Device, typename T>
class BiasGeluOp : public OpKernel {
 public:
  explicit BiasGeluOp(OpKernelConstruction* context) : OpKernel(context) {}

  void Compute(OpKernelContext* context) override {
    const Tensor& x = context->input(0);
    const Tensor& bias = context->input(1);
    OP_REQUIRES_OK(context, CheckBias(x, bias));
    Tensor* y = nullptr;
    // forward_input_or_allocate_output reuses x's buffer when nothing else
    // holds it, so the op can run in place like TensorFlow's own activations.
    OP_REQUIRES_OK(context, context->forward_input_or_allocate_output({0}, 0, x.shape(), &y));
    const char* error = BiasGeluFunctor<Device, T>()(
        context->eigen_device<Device>(), x.flat<T>().data(), bias.flat<T>().data(),
        y->flat<T>().data(), x.NumElements(), bias.NumElements());
    OP_REQUIRES(context, error[0] == '\0', ::tensorflow::errors::Internal("BiasGelu: ", error));
  }
};

template <typename Device, typename T>
class BiasGeluGradOp : public OpKernel {
 public:
  explicit BiasGeluGradOp(OpKernelConstruction* context) : OpKernel(context) {}

  void Compute(OpKernelContext* context) override {
    const Tensor& dy = context->input(0);
    const Tensor& x = context->input(1);
    const Tensor& bias = context->input(2);
    OP_REQUIRES_OK(context, CheckBias(x, bias));
    OP_REQUIRES(context, dy.shape() == x.shape(),
                InvalidArgument("dy has shape ", dy.shape().DebugString(), " but x has ",
                                x.shape().DebugString()));
    Tensor* dz = nullptr;
    OP_REQUIRES_OK(context, context->forward_input_or_allocate_output({0}, 0, x.shape(), &dz));
    const char* error = BiasGeluGradFunctor<Device, T>()(
        context->eigen_device<Device>(), dy.flat<T>().data(), x.flat<T>().data(),
        bias.flat<T>().data(), dz->flat<T>().data(), x.NumElements(), bias.NumElements());
    OP_REQUIRES(context, error[0] == '\0', ::tensorflow::errors::Internal("BiasGeluGrad: ", error));
  }
};

#ifndef COURSE_OPS_GPU_ONLY
#define REGISTER_CPU(T)                                                                     \
  REGISTER_KERNEL_BUILDER(                                                                  \
      Name("BiasGelu").Device(::tensorflow::DEVICE_CPU).TypeConstraint<T>("T"),            \
      BiasGeluOp<CPUDevice, T>);                                                            \
  REGISTER_KERNEL_BUILDER(                                                                  \
      Name("BiasGeluGrad").Device(::tensorflow::DEVICE_CPU).TypeConstraint<T>("T"),        \
      BiasGeluGradOp<CPUDevice, T>);
REGISTER_CPU(float);
REGISTER_CPU(double);
#undef REGISTER_CPU
#endif

#if GOOGLE_CUDA
// The GPU functors are defined in bias_gelu_kernel.cu.cc; declare that the
// instantiations exist there so this file does not instantiate them itself.
extern template struct BiasGeluFunctor<GPUDevice, float>;
extern template struct BiasGeluGradFunctor<GPUDevice, float>;

REGISTER_KERNEL_BUILDER(
    Name("BiasGelu").Device(::tensorflow::DEVICE_GPU).TypeConstraint<float>("T"),
    BiasGeluOp<GPUDevice, float>);
REGISTER_KERNEL_BUILDER(
    Name("BiasGeluGrad").Device(::tensorflow::DEVICE_GPU).TypeConstraint<float>("T"),
    BiasGeluGradOp<GPUDevice, float>);
#endif

}  // namespace course_ops
