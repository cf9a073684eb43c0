//===- runtime/cpu/OneDnnConv.h - oneDNN's convolutions, where they win -===//
//
// The three f32 convolution kernels of runtime/cpu/Conv2D.cpp hand a call to
// oneDNN (Debian's libdnnl 2.6, TF's own CPU convolution library) when the
// runtime was built with it (ESTC_ONEDNN, on where CMake finds it) and the
// call is one where oneDNN was measured faster than the runtime's own
// kernels (docs/results.md "ResNet-style step (issue 28)"): both channel
// counts multiples of 16 (16, 32, 64, ... : oneDNN's vector block), no
// epilogue, NHWC activations and an HWIO filter stored densely, and a
// primitive that is one of oneDNN's direct JIT convolutions (brgconv / jit;
// never its im2col + GEMM or reference ones). Activations stay NHWC (no
// reorder); only the filter is reordered into oneDNN's blocked layout.
//
// Determinism: oneDNN runs single-threaded inside the runtime's own pool.
// The batch is split into chunks of images by the shapes alone (never by
// the thread count); each chunk is one oneDNN call on one thread; the filter
// gradient sums the chunks' partial filters in chunk order. Results are
// therefore bit-identical for any thread count, as the runtime's own
// kernels' (not bit-identical to them: another summation order).
//
// The float GEMM tiles of runtime/cpu/Gemm.cpp go to oneDNN's sgemm the
// same way (oneDnnSgemm below), one tile per call.
//
// ESTC_USE_ONEDNN=0 in the environment (or estc_runtime_set_onednn(0))
// turns both off; every call then runs the runtime's own kernels.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_RUNTIME_CPU_ONEDNNCONV_H
#define ESTC_RUNTIME_CPU_ONEDNNCONV_H

#include "runtime/cpu/Gemm.h"
#include "runtime/cpu/KernelImpl.h"

namespace estc::rt {

/// Each returns false, having done nothing, when the call is not one that
/// oneDNN takes (see above); the caller then runs its own kernel.
bool oneDnnConv2d(const MemRef<float, 4> &input, const MemRef<float, 4> &filter,
                  const MemRef<float, 4> &output, const ConvParams &p);
bool oneDnnConv2dBackpropInput(const MemRef<float, 4> &filter,
                               const MemRef<float, 4> &gradOutput,
                               const MemRef<float, 4> &gradInput,
                               const ConvParams &p);
bool oneDnnConv2dBackpropFilter(const MemRef<float, 4> &input,
                                const MemRef<float, 4> &gradOutput,
                                const MemRef<float, 4> &gradFilter,
                                const ConvParams &p);

/// c = a * b (c += a * b when `accumulate`) by oneDNN's sgemm on this
/// thread alone, for runtime/cpu/Gemm.cpp's gemm<float>; false, having done
/// nothing, when the runtime has no oneDNN, it is turned off, or an operand
/// has no unit stride (c: its columns must step by 1).
bool oneDnnSgemm(View2D<const float> a, View2D<const float> b, View2D<float> c,
                 bool accumulate);
/// Whether oneDnnSgemm takes unit-stride tiles (built with oneDNN, not
/// turned off).
bool oneDnnSgemmEnabled();

} // namespace estc::rt

#endif // ESTC_RUNTIME_CPU_ONEDNNCONV_H
