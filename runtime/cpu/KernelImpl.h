//===- runtime/cpu/KernelImpl.h - Kernels behind the C entry points
//----------===//
//
// Internal to the runtime. runtime/cpu/Kernels.cpp (built for any x86-64)
// checks the CPU, then calls these (built for ESTC_KERNEL_ISA).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_RUNTIME_CPU_KERNELIMPL_H
#define ESTC_RUNTIME_CPU_KERNELIMPL_H

#include "runtime/MemRef.h"
#include "runtime/cpu/Gemm.h"

#include <cstdint>

namespace estc::rt {

/// Applies `e` to `tile`, whose column j is output column col0 + j.
inline void applyEpilogue(View2D<float> tile, const Epilogue &e, int64_t col0) {
  if (e.empty())
    return;
  float zero = 0.0f;
  const float *bias = e.bias ? e.bias + col0 * e.biasStride : &zero;
  int64_t bs = e.bias ? e.biasStride : 0;
  switch (e.activation) {
  case Epilogue::None:
    applyEach(tile, [&](float x, int64_t j) { return x + bias[j * bs]; });
    break;
  case Epilogue::Relu:
    applyEach(tile, [&](float x, int64_t j) {
      return Epilogue::relu(x + bias[j * bs]);
    });
    break;
  case Epilogue::Relu6:
    applyEach(tile, [&](float x, int64_t j) {
      return Epilogue::relu6(x + bias[j * bs]);
    });
    break;
  }
}

template <typename T>
void matmul(const MemRef<T, 3> &a, const MemRef<T, 3> &b, const MemRef<T, 3> &c,
            bool transposeA, bool transposeB);
/// matmul<float> with `epilogue` applied to each C tile after its GEMM; the
/// bias is indexed by the column (N).
void matmulEpilogue(const MemRef<float, 3> &a, const MemRef<float, 3> &b,
                    const MemRef<float, 3> &c, bool transposeA, bool transposeB,
                    const Epilogue &epilogue);
extern template void matmul<float>(const MemRef<float, 3> &,
                                   const MemRef<float, 3> &,
                                   const MemRef<float, 3> &, bool, bool);
extern template void matmul<double>(const MemRef<double, 3> &,
                                    const MemRef<double, 3> &,
                                    const MemRef<double, 3> &, bool, bool);

/// Window geometry shared by the three convolutions.
struct ConvParams {
  int64_t strideH, strideW, dilationH, dilationW, padTop, padLeft;
};

/// `epilogue` is applied to each tile of output pixels after its GEMM; the
/// bias is indexed by the output channel.
void conv2d(const MemRef<float, 4> &input, const MemRef<float, 4> &filter,
            const MemRef<float, 4> &output, const ConvParams &p,
            const Epilogue &epilogue = {});
void conv2dBackpropInput(const MemRef<float, 4> &filter,
                         const MemRef<float, 4> &gradOutput,
                         const MemRef<float, 4> &gradInput,
                         const ConvParams &p);
void conv2dBackpropFilter(const MemRef<float, 4> &input,
                          const MemRef<float, 4> &gradOutput,
                          const MemRef<float, 4> &gradFilter,
                          const ConvParams &p);

/// The depthwise convolution (filter [KH, KW, C, M], output channel
/// c * M + m) and its gradients (runtime/cpu/Depthwise.cpp).
void depthwiseConv2d(const MemRef<float, 4> &input,
                     const MemRef<float, 4> &filter,
                     const MemRef<float, 4> &output, const ConvParams &p);
void depthwiseConv2dBackpropInput(const MemRef<float, 4> &filter,
                                  const MemRef<float, 4> &gradOutput,
                                  const MemRef<float, 4> &gradInput,
                                  const ConvParams &p);
void depthwiseConv2dBackpropFilter(const MemRef<float, 4> &input,
                                   const MemRef<float, 4> &gradOutput,
                                   const MemRef<float, 4> &gradFilter,
                                   const ConvParams &p);

} // namespace estc::rt

#endif // ESTC_RUNTIME_CPU_KERNELIMPL_H
