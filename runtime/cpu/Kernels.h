//===- runtime/cpu/Kernels.h - Kernels compiled code calls
//--------------------===//
//
// The heavy ops of a compiled model (matmul, convolutions) are calls into
// this library, as in XLA's CPU backend. Every kernel follows MLIR's
// `llvm.emit_c_interface` convention: buffers are passed as pointers to
// memref descriptors (runtime/MemRef.h), scalars as int64_t, and the symbol is
// `_mlir_ciface_<name>`. The full contract (shapes, strides, threads, scratch
// memory, determinism) is in runtime/README.md.
//
// All kernels:
//  - read inputs and write outputs through the descriptors' strides (any
//    strides are correct; unit innermost stride is the fast path);
//  - overwrite their output (never accumulate into it);
//  - never allocate after warm-up: scratch lives in per-thread buffers owned
//    by the runtime that only grow;
//  - give bit-identical results for any thread count;
//  - stop the process with one line on stderr when shapes disagree (compiled
//    code has checked them, so this is a compiler bug).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_RUNTIME_CPU_KERNELS_H
#define ESTC_RUNTIME_CPU_KERNELS_H

#include "runtime/MemRef.h"

#include <cstddef>
#include <cstdint>

#if defined(_WIN32)
#define ESTC_RT_EXPORT __declspec(dllexport)
#else
#define ESTC_RT_EXPORT __attribute__((visibility("default")))
#endif

extern "C" {

// --- Thread pool -------------------------------------------------------------

/// Sets the number of threads kernels use (the caller counts as one): 1 runs
/// everything on the calling thread, n <= 0 restores the default (the
/// ESTC_NUM_THREADS environment variable if set, else hardware concurrency).
/// Must not be called while a kernel is running on another thread.
ESTC_RT_EXPORT void estc_runtime_set_num_threads(int num_threads);
ESTC_RT_EXPORT int estc_runtime_get_num_threads(void);

/// Runs fn(ctx, lo, hi) over chunks [lo, hi) covering [0, n), on the thread
/// pool: the compiled loop nests of est-parallelize-loops call this with
/// their outermost (parallel) trip count n and `cost`, the operations per
/// iteration. The chunks depend on n and cost alone, never on the number of
/// threads, so each element is computed by the same code for any thread
/// count. With one thread, or little work, the chunks run in order on the
/// calling thread. n <= 0 does nothing.
ESTC_RT_EXPORT void estc_parallel_for(void (*fn)(void *ctx, int64_t lo,
                                                 int64_t hi),
                                      void *ctx, int64_t n, int64_t cost);

// --- Matmul ------------------------------------------------------------------

/// Batched matmul: C[i] = op(A[i]) x op(B[i]), op = transpose when the flag is
/// non-zero. Shapes: A [ba, M, K] ([ba, K, M] transposed), B [bb, K, N]
/// ([bb, N, K] transposed), C [batch, M, N]; ba and bb are batch or 1 (a batch
/// of 1 is broadcast). Plain matmul is batch 1.
ESTC_RT_EXPORT void _mlir_ciface_estc_matmul_f32(estc::rt::MemRef<float, 3> *a,
                                                 estc::rt::MemRef<float, 3> *b,
                                                 estc::rt::MemRef<float, 3> *c,
                                                 int64_t transpose_a,
                                                 int64_t transpose_b);
ESTC_RT_EXPORT void _mlir_ciface_estc_matmul_f64(estc::rt::MemRef<double, 3> *a,
                                                 estc::rt::MemRef<double, 3> *b,
                                                 estc::rt::MemRef<double, 3> *c,
                                                 int64_t transpose_a,
                                                 int64_t transpose_b);

/// Matmul with a fused epilogue, float only: C = act(op(A) x op(B) + bias),
/// bias [N] added along C's last dimension, activation 0 = none, 1 = relu
/// (max(x, 0), NaN propagates), 2 = relu6 (min(relu(x), 6)). The epilogue runs
/// on each C tile right after its GEMM; results are bit-identical to the
/// unfused matmul followed by the same float operations.
ESTC_RT_EXPORT void _mlir_ciface_estc_matmul_bias_act_f32(
    estc::rt::MemRef<float, 3> *a, estc::rt::MemRef<float, 3> *b,
    estc::rt::MemRef<float, 3> *c, estc::rt::MemRef<float, 1> *bias,
    int64_t transpose_a, int64_t transpose_b, int64_t activation);

// --- 2-D convolution (NHWC input and output, HWIO filter) -------------------
//
// For output pixel (oh, ow) and filter tap (kh, kw) the input pixel is
//   ih = oh * stride_h + kh * dilation_h - pad_top
//   iw = ow * stride_w + kw * dilation_w - pad_left
// and taps outside the input read zero. The output size comes from the output
// (or gradient) descriptor, so bottom/right padding is implied.

/// output[n,oh,ow,o] = sum_{kh,kw,c} input[n,ih,iw,c] * filter[kh,kw,c,o].
ESTC_RT_EXPORT void _mlir_ciface_estc_conv2d_nhwc_hwio_f32(
    estc::rt::MemRef<float, 4> *input, estc::rt::MemRef<float, 4> *filter,
    estc::rt::MemRef<float, 4> *output, int64_t stride_h, int64_t stride_w,
    int64_t dilation_h, int64_t dilation_w, int64_t pad_top, int64_t pad_left);

/// The convolution with a fused epilogue: output = act(conv + bias), bias [O]
/// indexed by the output channel, activation as for
/// _mlir_ciface_estc_matmul_bias_act_f32.
ESTC_RT_EXPORT void _mlir_ciface_estc_conv2d_nhwc_hwio_bias_act_f32(
    estc::rt::MemRef<float, 4> *input, estc::rt::MemRef<float, 4> *filter,
    estc::rt::MemRef<float, 4> *output, estc::rt::MemRef<float, 1> *bias,
    int64_t stride_h, int64_t stride_w, int64_t dilation_h, int64_t dilation_w,
    int64_t pad_top, int64_t pad_left, int64_t activation);

/// grad_input[n,ih,iw,c] = sum over (oh,ow,kh,kw) that read (ih,iw), and o, of
/// grad_output[n,oh,ow,o] * filter[kh,kw,c,o]. grad_input's descriptor gives
/// the input shape.
ESTC_RT_EXPORT void _mlir_ciface_estc_conv2d_backprop_input_f32(
    estc::rt::MemRef<float, 4> *filter, estc::rt::MemRef<float, 4> *grad_output,
    estc::rt::MemRef<float, 4> *grad_input, int64_t stride_h, int64_t stride_w,
    int64_t dilation_h, int64_t dilation_w, int64_t pad_top, int64_t pad_left);

/// grad_filter[kh,kw,c,o] = sum_{n,oh,ow} input[n,ih,iw,c] *
/// grad_output[n,oh,ow,o]. grad_filter's descriptor gives the filter shape.
ESTC_RT_EXPORT void _mlir_ciface_estc_conv2d_backprop_filter_f32(
    estc::rt::MemRef<float, 4> *input, estc::rt::MemRef<float, 4> *grad_output,
    estc::rt::MemRef<float, 4> *grad_filter, int64_t stride_h, int64_t stride_w,
    int64_t dilation_h, int64_t dilation_w, int64_t pad_top, int64_t pad_left);

/// The depthwise convolution (TF's DepthwiseConv2dNative): output[n,oh,ow,
/// c*M+m] = sum_{kh,kw} input[n,ih,iw,c] * filter[kh,kw,c,m], filter
/// [KH, KW, C, M]; the output's descriptor gives its shape.
ESTC_RT_EXPORT void _mlir_ciface_estc_depthwise_conv2d_f32(
    estc::rt::MemRef<float, 4> *input, estc::rt::MemRef<float, 4> *filter,
    estc::rt::MemRef<float, 4> *output, int64_t stride_h, int64_t stride_w,
    int64_t dilation_h, int64_t dilation_w, int64_t pad_top, int64_t pad_left);
/// Its input gradient: grad_input[n,ih,iw,c] sums grad_output[n,oh,ow,
/// c*M+m] * filter[kh,kw,c,m] over the pixels and taps that read (ih, iw).
ESTC_RT_EXPORT void _mlir_ciface_estc_depthwise_conv2d_backprop_input_f32(
    estc::rt::MemRef<float, 4> *filter, estc::rt::MemRef<float, 4> *grad_output,
    estc::rt::MemRef<float, 4> *grad_input, int64_t stride_h, int64_t stride_w,
    int64_t dilation_h, int64_t dilation_w, int64_t pad_top, int64_t pad_left);
/// Its filter gradient: grad_filter[kh,kw,c,m] = sum_{n,oh,ow}
/// input[n,ih,iw,c] * grad_output[n,oh,ow,c*M+m].
ESTC_RT_EXPORT void _mlir_ciface_estc_depthwise_conv2d_backprop_filter_f32(
    estc::rt::MemRef<float, 4> *input, estc::rt::MemRef<float, 4> *grad_output,
    estc::rt::MemRef<float, 4> *grad_filter, int64_t stride_h, int64_t stride_w,
    int64_t dilation_h, int64_t dilation_w, int64_t pad_top, int64_t pad_left);

/// Whether the f32 convolutions and GEMM tiles may hand a call to oneDNN
/// (runtime/cpu/OneDnnConv.h): 1 yes, 0 no, -1 the default (yes unless
/// ESTC_USE_ONEDNN=0 in the environment). Returns 1 when the runtime was
/// built with oneDNN, else 0 (the setting then changes nothing). Must not be
/// called while a kernel is running on another thread.
ESTC_RT_EXPORT int estc_runtime_set_onednn(int enable);

// --- Diagnostics -------------------------------------------------------------

/// Bytes of scratch memory the runtime holds, over all threads. Constant once
/// every kernel shape has run once (tests use it to check "no allocation after
/// warm-up").
ESTC_RT_EXPORT size_t estc_runtime_scratch_bytes(void);

/// How many estc_parallel_for calls split their loop into more than one
/// chunk, over the process. The split depends on the shape alone, so the
/// same calls give the same count for any thread count (tests use it to check
/// that compiled loops reach the pool).
ESTC_RT_EXPORT size_t estc_runtime_parallel_loops_split(void);

/// How many convolution calls / GEMM tiles oneDNN ran (runtime/cpu/
/// OneDnnConv.h), over the process (tests use them to check which calls
/// take that path); and the convolution calls oneDNN offered only a slow
/// (gemm or reference) primitive for on this CPU, which estc's own kernels
/// ran (an AVX2 machine's dilated or asymmetric-stride gradients).
ESTC_RT_EXPORT size_t estc_runtime_onednn_conv_calls(void);
ESTC_RT_EXPORT size_t estc_runtime_onednn_conv_declined(void);
ESTC_RT_EXPORT size_t estc_runtime_onednn_gemm_calls(void);

/// The instruction set the kernels were compiled for: "avx512", "avx2" or
/// "generic" (CMake option ESTC_KERNEL_ISA).
ESTC_RT_EXPORT const char *estc_runtime_kernel_isa(void);

} // extern "C"

#endif // ESTC_RUNTIME_CPU_KERNELS_H
