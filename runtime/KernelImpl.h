//===- runtime/KernelImpl.h - Kernels behind the C entry points ----------===//
//
// Internal to the runtime. runtime/Kernels.cpp (built for any x86-64) checks
// the CPU, then calls these (built for ESTC_KERNEL_ISA).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_RUNTIME_KERNELIMPL_H
#define ESTC_RUNTIME_KERNELIMPL_H

#include "runtime/MemRef.h"

namespace estc::rt {

template <typename T>
void matmul(const MemRef<T, 3> &a, const MemRef<T, 3> &b, const MemRef<T, 3> &c,
            bool transposeA, bool transposeB);
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

void conv2d(const MemRef<float, 4> &input, const MemRef<float, 4> &filter,
            const MemRef<float, 4> &output, const ConvParams &p);
void conv2dBackpropInput(const MemRef<float, 4> &filter,
                         const MemRef<float, 4> &gradOutput,
                         const MemRef<float, 4> &gradInput,
                         const ConvParams &p);
void conv2dBackpropFilter(const MemRef<float, 4> &input,
                          const MemRef<float, 4> &gradOutput,
                          const MemRef<float, 4> &gradFilter,
                          const ConvParams &p);

} // namespace estc::rt

#endif // ESTC_RUNTIME_KERNELIMPL_H
