//===- runtime/cpu/Kernels.cpp - C entry points of the kernels
//----------------===//
//
// Built without the kernel ISA flags, so the CPU check runs before any
// instruction the CPU might lack.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/KernelImpl.h"
#include "runtime/cpu/Parallel.h"

using namespace estc::rt;

extern "C" {

void _mlir_ciface_estc_matmul_f32(MemRef<float, 3> *a, MemRef<float, 3> *b,
                                  MemRef<float, 3> *c, int64_t transpose_a,
                                  int64_t transpose_b) {
  checkKernelIsa();
  matmul<float>(*a, *b, *c, transpose_a != 0, transpose_b != 0);
}

void _mlir_ciface_estc_matmul_f64(MemRef<double, 3> *a, MemRef<double, 3> *b,
                                  MemRef<double, 3> *c, int64_t transpose_a,
                                  int64_t transpose_b) {
  checkKernelIsa();
  matmul<double>(*a, *b, *c, transpose_a != 0, transpose_b != 0);
}

void _mlir_ciface_estc_conv2d_nhwc_hwio_f32(
    MemRef<float, 4> *input, MemRef<float, 4> *filter, MemRef<float, 4> *output,
    int64_t stride_h, int64_t stride_w, int64_t dilation_h, int64_t dilation_w,
    int64_t pad_top, int64_t pad_left) {
  checkKernelIsa();
  conv2d(*input, *filter, *output,
         {stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left});
}

/// The epilogue of a *_bias_act kernel: bias must have `size` elements.
static Epilogue epilogueOf(const char *kernel, const MemRef<float, 1> *bias,
                           int64_t size, int64_t activation) {
  if (bias->sizes[0] != size)
    fatal("%s: bias of %lld elements for an output dimension of %lld", kernel,
          (long long)bias->sizes[0], (long long)size);
  if (activation < Epilogue::None || activation > Epilogue::Relu6)
    fatal("%s: unknown activation %lld (0 none, 1 relu, 2 relu6)", kernel,
          (long long)activation);
  return {bias->data(), bias->strides[0], Epilogue::Activation(activation)};
}

void _mlir_ciface_estc_matmul_bias_act_f32(
    MemRef<float, 3> *a, MemRef<float, 3> *b, MemRef<float, 3> *c,
    MemRef<float, 1> *bias, int64_t transpose_a, int64_t transpose_b,
    int64_t activation) {
  checkKernelIsa();
  matmulEpilogue(
      *a, *b, *c, transpose_a != 0, transpose_b != 0,
      epilogueOf("estc_matmul_bias_act", bias, c->sizes[2], activation));
}

void _mlir_ciface_estc_conv2d_nhwc_hwio_bias_act_f32(
    MemRef<float, 4> *input, MemRef<float, 4> *filter, MemRef<float, 4> *output,
    MemRef<float, 1> *bias, int64_t stride_h, int64_t stride_w,
    int64_t dilation_h, int64_t dilation_w, int64_t pad_top, int64_t pad_left,
    int64_t activation) {
  checkKernelIsa();
  conv2d(*input, *filter, *output,
         {stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left},
         epilogueOf("estc_conv2d_nhwc_hwio_bias_act", bias, output->sizes[3],
                    activation));
}

void _mlir_ciface_estc_conv2d_backprop_input_f32(
    MemRef<float, 4> *filter, MemRef<float, 4> *grad_output,
    MemRef<float, 4> *grad_input, int64_t stride_h, int64_t stride_w,
    int64_t dilation_h, int64_t dilation_w, int64_t pad_top, int64_t pad_left) {
  checkKernelIsa();
  conv2dBackpropInput(
      *filter, *grad_output, *grad_input,
      {stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left});
}

void _mlir_ciface_estc_conv2d_backprop_filter_f32(
    MemRef<float, 4> *input, MemRef<float, 4> *grad_output,
    MemRef<float, 4> *grad_filter, int64_t stride_h, int64_t stride_w,
    int64_t dilation_h, int64_t dilation_w, int64_t pad_top, int64_t pad_left) {
  checkKernelIsa();
  conv2dBackpropFilter(
      *input, *grad_output, *grad_filter,
      {stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left});
}

void _mlir_ciface_estc_depthwise_conv2d_f32(
    MemRef<float, 4> *input, MemRef<float, 4> *filter, MemRef<float, 4> *output,
    int64_t stride_h, int64_t stride_w, int64_t dilation_h, int64_t dilation_w,
    int64_t pad_top, int64_t pad_left) {
  checkKernelIsa();
  depthwiseConv2d(
      *input, *filter, *output,
      {stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left});
}

void _mlir_ciface_estc_depthwise_conv2d_backprop_input_f32(
    MemRef<float, 4> *filter, MemRef<float, 4> *grad_output,
    MemRef<float, 4> *grad_input, int64_t stride_h, int64_t stride_w,
    int64_t dilation_h, int64_t dilation_w, int64_t pad_top, int64_t pad_left) {
  checkKernelIsa();
  depthwiseConv2dBackpropInput(
      *filter, *grad_output, *grad_input,
      {stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left});
}

void _mlir_ciface_estc_depthwise_conv2d_backprop_filter_f32(
    MemRef<float, 4> *input, MemRef<float, 4> *grad_output,
    MemRef<float, 4> *grad_filter, int64_t stride_h, int64_t stride_w,
    int64_t dilation_h, int64_t dilation_w, int64_t pad_top, int64_t pad_left) {
  checkKernelIsa();
  depthwiseConv2dBackpropFilter(
      *input, *grad_output, *grad_filter,
      {stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left});
}

} // extern "C"
