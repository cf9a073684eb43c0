//===- runtime/cuda/CudaKernels.cpp - Matmul on cuBLAS, convolutions on cuDNN
//--===//
//
// The estc_cuda_* kernels: the CPU kernels' semantics (runtime/README.md) on
// device memory, on the calling thread's current stream.
//
// Matmul. cuBLAS is column-major; a row-major M x N matrix with row stride
// ld is, to cuBLAS, its N x M transpose with leading dimension ld. So
// C = op(A) op(B) is computed as C^T = op(B)^T op(A)^T: one strided batched
// GEMM with the operands swapped, m = N, n = M. A batch of 1 is broadcast with
// a batch stride of 0.
//
// Convolutions. cuDNN's legacy API on NHWC tensors (their strides passed as
// they are) with the filter in cuDNN's NHWC filter layout, KRSC = [O, KH, KW,
// C]: our HWIO filter, a [KH*KW*C, O] matrix, transposed by cublasSgeam into
// the stream's workspace (and the filter gradient transposed back).
//
// Determinism and precision: cuBLAS with CUBLAS_DEFAULT_MATH and atomics off
// (full FP32, no TF32), cuDNN with CUDNN_FMA_MATH (no tensor cores, so no
// TF32 either) and only algorithms cuDNN reports as deterministic: the
// first such one its heuristic lists (fastest first). The choice depends on
// the GPU, cuDNN's version and the shape alone and is cached per stream, so
// repeated runs are bit-identical.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/Cuda.h"
#include "runtime/cuda/CudaInternal.h"

#include <climits>
#include <string>

using namespace estc::rt;
using namespace estc::rt::cuda;

namespace {

std::string dims(const int64_t *sizes, int n) {
  std::string s = "[";
  for (int i = 0; i < n; ++i)
    s += (i ? "," : "") + std::to_string(sizes[i]);
  return s + "]";
}

bool fitsInt(int64_t v) { return v >= 0 && v <= INT_MAX; }

CUdeviceptr devicePtr(const void *p) {
  return reinterpret_cast<CUdeviceptr>(p);
}

/// Zero-fills a contiguous tensor on the stream (a product over an empty
/// dimension).
template <typename T, int N>
void zeroFill(StreamContext &s, const MemRef<T, N> &m, const char *kernel) {
  if (!isContiguous(m)) {
    s.fail(std::string(kernel) + ": output " + dims(m.sizes, N) +
           " with strides " + dims(m.strides, N) + " is not contiguous");
    return;
  }
  ProfiledRange range(s);
  if (range)
    range.begin(s.stream, "memset zeros %s (%s)", dims(m.sizes, N).c_str(),
                kernel);
  s.check(driver().cuMemsetD8Async(devicePtr(m.data()), 0,
                                   size_t(elements(m)) * sizeof(T), s.stream),
          ESTC_CUDA_STR(cuMemsetD8Async));
}

// --- Matmul ------------------------------------------------------------------

/// One operand as cuBLAS sees it.
struct GemmOperand {
  cublasOperation_t op;
  int64_t ld;
  long long batchStride;
};

/// Describes op(X)^T for the swapped GEMM, X stored as [b, rows, cols] with
/// `strides`; false when neither of its last two dimensions has unit stride.
bool gemmOperand(const int64_t *sizes, const int64_t *strides, bool transpose,
                 GemmOperand &out) {
  int64_t rows = sizes[1], cols = sizes[2];
  out.batchStride = sizes[0] == 1 ? 0 : strides[0];
  // Row-major: cuBLAS sees X^T (cols x rows), which is op(X)^T untransposed.
  if (strides[2] == 1 || cols == 1) {
    int64_t ld = rows > 1 ? strides[1] : std::max<int64_t>(cols, 1);
    if (ld >= std::max<int64_t>(cols, 1)) {
      out.op = transpose ? CUBLAS_OP_T : CUBLAS_OP_N;
      out.ld = ld;
      return true;
    }
  }
  // Column-major (a transposed view): cuBLAS sees X itself.
  if (strides[1] == 1 || rows == 1) {
    int64_t ld = cols > 1 ? strides[2] : std::max<int64_t>(rows, 1);
    if (ld >= std::max<int64_t>(rows, 1)) {
      out.op = transpose ? CUBLAS_OP_N : CUBLAS_OP_T;
      out.ld = ld;
      return true;
    }
  }
  return false;
}

cublasStatus_t gemmStridedBatched(const CublasApi &api, cublasHandle_t h,
                                  cublasOperation_t opA, cublasOperation_t opB,
                                  int m, int n, int k, const float *a, int lda,
                                  long long strideA, const float *b, int ldb,
                                  long long strideB, float *c, int ldc,
                                  long long strideC, int batch) {
  const float one = 1, zero = 0;
  return api.cublasSgemmStridedBatched(h, opA, opB, m, n, k, &one, a, lda,
                                       strideA, b, ldb, strideB, &zero, c, ldc,
                                       strideC, batch);
}

cublasStatus_t gemmStridedBatched(const CublasApi &api, cublasHandle_t h,
                                  cublasOperation_t opA, cublasOperation_t opB,
                                  int m, int n, int k, const double *a, int lda,
                                  long long strideA, const double *b, int ldb,
                                  long long strideB, double *c, int ldc,
                                  long long strideC, int batch) {
  const double one = 1, zero = 0;
  return api.cublasDgemmStridedBatched(h, opA, opB, m, n, k, &one, a, lda,
                                       strideA, b, ldb, strideB, &zero, c, ldc,
                                       strideC, batch);
}

template <typename T>
void cudaMatmul(const char *kernel, const MemRef<T, 3> &a,
                const MemRef<T, 3> &b, const MemRef<T, 3> &c, bool transposeA,
                bool transposeB) {
  StreamContext &s = *currentStream();
  if (s.failed())
    return;
  try {
    int64_t batch = c.sizes[0], m = c.sizes[1], n = c.sizes[2];
    int64_t aRows = transposeA ? a.sizes[2] : a.sizes[1];
    int64_t k = transposeA ? a.sizes[1] : a.sizes[2];
    int64_t bRows = transposeB ? b.sizes[2] : b.sizes[1];
    int64_t bCols = transposeB ? b.sizes[1] : b.sizes[2];
    if ((a.sizes[0] != batch && a.sizes[0] != 1) ||
        (b.sizes[0] != batch && b.sizes[0] != 1) || aRows != m || bRows != k ||
        bCols != n) {
      s.fail(std::string(kernel) + ": shapes " + dims(a.sizes, 3) +
             (transposeA ? "^T" : "") + " x " + dims(b.sizes, 3) +
             (transposeB ? "^T" : "") + " -> " + dims(c.sizes, 3) +
             " do not agree");
      return;
    }
    if (batch == 0 || m == 0 || n == 0)
      return;
    // C must be row-major within a matrix (the compiler passes contiguous
    // views); A and B may be either way round.
    int64_t ldc = m > 1 ? c.strides[1] : n;
    if ((c.strides[2] != 1 && n != 1) || ldc < n) {
      s.fail(std::string(kernel) + ": result " + dims(c.sizes, 3) +
             " with strides " + dims(c.strides, 3) +
             " is not row-major (unit last stride)");
      return;
    }
    long long strideC = batch > 1 ? c.strides[0] : 0;
    if (k == 0) {
      // An empty sum: C = 0, one 2-D memset per matrix.
      ProfiledRange range(s);
      if (range)
        range.begin(s.stream, "memset zeros %lldx%lld batch %lld (%s, K=0)",
                    static_cast<long long>(m), static_cast<long long>(n),
                    static_cast<long long>(batch), kernel);
      for (int64_t i = 0; i < batch; ++i)
        if (!s.check(driver().cuMemsetD2D32Async(
                         devicePtr(c.data() + i * strideC), ldc * sizeof(T), 0,
                         n * sizeof(T) / 4, m, s.stream),
                     ESTC_CUDA_STR(cuMemsetD2D32Async)))
          return;
      return;
    }
    GemmOperand opA, opB;
    if (!gemmOperand(a.sizes, a.strides, transposeA, opA) ||
        !gemmOperand(b.sizes, b.strides, transposeB, opB)) {
      const MemRef<T, 3> &x =
          gemmOperand(a.sizes, a.strides, transposeA, opA) ? b : a;
      s.fail(std::string(kernel) + ": operand " + dims(x.sizes, 3) +
             " with strides " + dims(x.strides, 3) +
             " has no unit stride in its last two dimensions");
      return;
    }
    if (!fitsInt(batch) || !fitsInt(m) || !fitsInt(n) || !fitsInt(k) ||
        !fitsInt(opA.ld) || !fitsInt(opB.ld) || !fitsInt(ldc)) {
      s.fail(std::string(kernel) + ": shapes " + dims(a.sizes, 3) + " x " +
             dims(b.sizes, 3) + " exceed cuBLAS's 32-bit sizes");
      return;
    }
    cublasHandle_t h = s.cublasHandle();
    if (!h)
      return;
    ProfiledRange range(s);
    if (range)
      range.begin(s.stream, "cublas matmul %s %lldx%lldx%lld batch %lld%s%s",
                  sizeof(T) == 4 ? "f32" : "f64", static_cast<long long>(m),
                  static_cast<long long>(n), static_cast<long long>(k),
                  static_cast<long long>(batch), transposeA ? " A^T" : "",
                  transposeB ? " B^T" : "");
    s.check(gemmStridedBatched(cublas(), h, opB.op, opA.op, int(n), int(m),
                               int(k), b.data(), int(opB.ld), opB.batchStride,
                               a.data(), int(opA.ld), opA.batchStride, c.data(),
                               int(ldc), strideC, int(batch)),
            sizeof(T) == 4 ? "cublasSgemmStridedBatched"
                           : "cublasDgemmStridedBatched");
  } catch (const std::exception &e) {
    s.fail(e);
  }
}

// --- Convolutions ------------------------------------------------------------

enum class ConvKind { Forward, BackpropInput, BackpropFilter };

struct ConvParams {
  int64_t strideH, strideW, dilationH, dilationW, padTop, padLeft;
};

/// The cuDNN descriptors of one call, destroyed with it.
class ConvDescriptors {
public:
  explicit ConvDescriptors(const CudnnApi &api) : api_(api) {}
  ~ConvDescriptors() {
    if (x)
      api_.cudnnDestroyTensorDescriptor(x);
    if (y)
      api_.cudnnDestroyTensorDescriptor(y);
    if (w)
      api_.cudnnDestroyFilterDescriptor(w);
    if (conv)
      api_.cudnnDestroyConvolutionDescriptor(conv);
  }
  ConvDescriptors(const ConvDescriptors &) = delete;
  ConvDescriptors &operator=(const ConvDescriptors &) = delete;

  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;

private:
  const CudnnApi &api_;
};

/// A 4-D NHWC tensor descriptor with the memref's strides (a dimension of
/// size 1, whose stride is arbitrary, gets its packed stride: cuDNN checks
/// strides even where they are never multiplied by anything).
bool setTensor(StreamContext &s, const CudnnApi &api,
               cudnnTensorDescriptor_t &desc, const MemRef<float, 4> &m) {
  int64_t stride[4], packed = 1;
  for (int d = 3; d >= 0; --d) {
    stride[d] = m.sizes[d] == 1 ? packed : m.strides[d];
    packed *= m.sizes[d];
  }
  return s.check(api.cudnnCreateTensorDescriptor(&desc),
                 "cudnnCreateTensorDescriptor") &&
         s.check(api.cudnnSetTensor4dDescriptorEx(
                     desc, CUDNN_DATA_FLOAT, int(m.sizes[0]), int(m.sizes[3]),
                     int(m.sizes[1]), int(m.sizes[2]), int(stride[0]),
                     int(stride[3]), int(stride[1]), int(stride[2])),
                 "cudnnSetTensor4dDescriptorEx");
}

/// The first supported deterministic non-tensor-core algorithm in the
/// order of cuDNN's heuristic (its guess of the fastest first). The
/// heuristic's order depends only on the GPU, cuDNN's version and the
/// shape, so the choice (and the results) stay the same from run to run.
template <typename Perf>
bool pickAlgorithm(const Perf *perf, int count, ConvAlgorithm &out) {
  auto usable = [](const Perf &p) {
    return p.status == CUDNN_STATUS_SUCCESS &&
           p.determinism == CUDNN_DETERMINISTIC &&
           (p.mathType == CUDNN_FMA_MATH || p.mathType == CUDNN_DEFAULT_MATH);
  };
  const Perf *pick = nullptr;
  for (int i = 0; i < count && !pick; ++i)
    if (usable(perf[i]))
      pick = &perf[i];
  if (!pick)
    return false;
  out.algorithm = int(pick->algo);
  out.mathType = CUDNN_FMA_MATH;
  out.workspaceBytes = 0;
  return true;
}

constexpr size_t kAlign = 256;
size_t alignUp(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

/// One convolution: `x` the input (NHWC), `w` the HWIO filter, `y` the
/// output; which of them is written depends on `kind`.
void cudaConv(ConvKind kind, const char *kernel, const MemRef<float, 4> &x,
              const MemRef<float, 4> &w, const MemRef<float, 4> &y,
              const ConvParams &p) {
  StreamContext &s = *currentStream();
  if (s.failed())
    return;
  try {
    int64_t n = x.sizes[0], c = x.sizes[3];
    int64_t kh = w.sizes[0], kw = w.sizes[1], o = w.sizes[3];
    if (w.sizes[2] != c || y.sizes[3] != o || y.sizes[0] != n) {
      s.fail(std::string(kernel) + ": input " + dims(x.sizes, 4) + ", filter " +
             dims(w.sizes, 4) + " and output " + dims(y.sizes, 4) +
             " do not agree");
      return;
    }
    if (p.strideH < 1 || p.strideW < 1 || p.dilationH < 1 || p.dilationW < 1 ||
        p.padTop < 0 || p.padLeft < 0) {
      s.fail(std::string(kernel) + ": strides, dilations and paddings must "
                                   "be positive (pads: non-negative)");
      return;
    }
    const MemRef<float, 4> &result = kind == ConvKind::Forward         ? y
                                     : kind == ConvKind::BackpropInput ? x
                                                                       : w;
    if (elements(result) == 0)
      return;
    // A sum over nothing (no channel, no tap, no image): zeros.
    if (elements(x) == 0 || elements(w) == 0 || elements(y) == 0) {
      zeroFill(s, result, kernel);
      return;
    }
    for (int d = 0; d < 4; ++d)
      if (!fitsInt(x.sizes[d]) || !fitsInt(y.sizes[d]) ||
          !fitsInt(w.sizes[d]) || !fitsInt(x.strides[d]) ||
          !fitsInt(y.strides[d])) {
        s.fail(std::string(kernel) + ": input " + dims(x.sizes, 4) +
               " or output " + dims(y.sizes, 4) +
               " exceeds cuDNN's 32-bit sizes, or has a negative stride");
        return;
      }
    if (!isContiguous(w)) {
      s.fail(std::string(kernel) + ": filter " + dims(w.sizes, 4) +
             " with strides " + dims(w.strides, 4) + " is not contiguous");
      return;
    }
    const CudnnApi &api = cudnn();
    const CublasApi &blas = cublas();
    cudnnHandle_t dnn = s.cudnnHandle();
    cublasHandle_t bh = s.cublasHandle();
    if (!dnn || !bh)
      return;

    ConvDescriptors d(api);
    if (!setTensor(s, api, d.x, x) || !setTensor(s, api, d.y, y) ||
        !s.check(api.cudnnCreateFilterDescriptor(&d.w),
                 "cudnnCreateFilterDescriptor") ||
        !s.check(api.cudnnSetFilter4dDescriptor(d.w, CUDNN_DATA_FLOAT,
                                                CUDNN_TENSOR_NHWC, int(o),
                                                int(c), int(kh), int(kw)),
                 "cudnnSetFilter4dDescriptor") ||
        !s.check(api.cudnnCreateConvolutionDescriptor(&d.conv),
                 "cudnnCreateConvolutionDescriptor") ||
        !s.check(api.cudnnSetConvolution2dDescriptor(
                     d.conv, int(p.padTop), int(p.padLeft), int(p.strideH),
                     int(p.strideW), int(p.dilationH), int(p.dilationW),
                     CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                 "cudnnSetConvolution2dDescriptor") ||
        !s.check(api.cudnnSetConvolutionMathType(d.conv, CUDNN_FMA_MATH),
                 "cudnnSetConvolutionMathType"))
      return;

    // cuDNN pads both sides by pad_top / pad_left; the output descriptor
    // (which fixes the bottom/right padding on the CPU) must agree.
    int on = 0, oc = 0, oh = 0, ow = 0;
    if (!s.check(api.cudnnGetConvolution2dForwardOutputDim(d.conv, d.x, d.w,
                                                           &on, &oc, &oh, &ow),
                 "cudnnGetConvolution2dForwardOutputDim"))
      return;
    if (on != n || oc != o || oh != y.sizes[1] || ow != y.sizes[2]) {
      s.fail(std::string(kernel) + ": output " + dims(y.sizes, 4) +
             " is not the [" + std::to_string(on) + "," + std::to_string(oh) +
             "," + std::to_string(ow) + "," + std::to_string(oc) +
             "] that input " + dims(x.sizes, 4) + " and filter " +
             dims(w.sizes, 4) + " give with padding " +
             std::to_string(p.padTop) + "," + std::to_string(p.padLeft) +
             " on both sides (cuDNN pads symmetrically)");
      return;
    }

    std::vector<int64_t> key = {int64_t(kind), p.strideH,   p.strideW,
                                p.dilationH,   p.dilationW, p.padTop,
                                p.padLeft};
    for (const MemRef<float, 4> *m : {&x, &w, &y})
      for (int dim = 0; dim < 4; ++dim) {
        key.push_back(m->sizes[dim]);
        key.push_back(m->strides[dim]);
      }
    auto cached = s.convAlgorithms.find(key);
    if (cached == s.convAlgorithms.end()) {
      ConvAlgorithm algo{};
      int returned = 0;
      bool found = false;
      if (kind == ConvKind::Forward) {
        cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        if (!s.check(api.cudnnGetConvolutionForwardAlgorithm_v7(
                         dnn, d.x, d.w, d.conv, d.y,
                         CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf),
                     "cudnnGetConvolutionForwardAlgorithm_v7"))
          return;
        found = pickAlgorithm(perf, returned, algo) &&
                s.check(api.cudnnGetConvolutionForwardWorkspaceSize(
                            dnn, d.x, d.w, d.conv, d.y,
                            cudnnConvolutionFwdAlgo_t(algo.algorithm),
                            &algo.workspaceBytes),
                        "cudnnGetConvolutionForwardWorkspaceSize");
      } else if (kind == ConvKind::BackpropInput) {
        cudnnConvolutionBwdDataAlgoPerf_t
            perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
        if (!s.check(api.cudnnGetConvolutionBackwardDataAlgorithm_v7(
                         dnn, d.w, d.y, d.conv, d.x,
                         CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &returned,
                         perf),
                     "cudnnGetConvolutionBackwardDataAlgorithm_v7"))
          return;
        found = pickAlgorithm(perf, returned, algo) &&
                s.check(api.cudnnGetConvolutionBackwardDataWorkspaceSize(
                            dnn, d.w, d.y, d.conv, d.x,
                            cudnnConvolutionBwdDataAlgo_t(algo.algorithm),
                            &algo.workspaceBytes),
                        "cudnnGetConvolutionBackwardDataWorkspaceSize");
      } else {
        cudnnConvolutionBwdFilterAlgoPerf_t
            perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
        if (!s.check(api.cudnnGetConvolutionBackwardFilterAlgorithm_v7(
                         dnn, d.x, d.y, d.conv, d.w,
                         CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &returned,
                         perf),
                     "cudnnGetConvolutionBackwardFilterAlgorithm_v7"))
          return;
        found = pickAlgorithm(perf, returned, algo) &&
                s.check(api.cudnnGetConvolutionBackwardFilterWorkspaceSize(
                            dnn, d.x, d.y, d.conv, d.w,
                            cudnnConvolutionBwdFilterAlgo_t(algo.algorithm),
                            &algo.workspaceBytes),
                        "cudnnGetConvolutionBackwardFilterWorkspaceSize");
      }
      if (s.failed())
        return;
      if (!found) {
        s.fail(std::string(kernel) +
               ": cuDNN has no deterministic FP32 "
               "algorithm for input " +
               dims(x.sizes, 4) + " and filter " + dims(w.sizes, 4));
        return;
      }
      cached = s.convAlgorithms.emplace(key, algo).first;
    }
    const ConvAlgorithm &algo = cached->second;
    if (!s.check(api.cudnnSetConvolutionMathType(d.conv, algo.mathType),
                 "cudnnSetConvolutionMathType"))
      return;

    // Workspace: the KRSC filter, then cuDNN's.
    size_t filterBytes = alignUp(size_t(elements(w)) * sizeof(float));
    CUdeviceptr ws = s.reserveWorkspace(filterBytes + algo.workspaceBytes);
    if (!ws)
      return;
    auto *krsc = reinterpret_cast<float *>(ws);
    void *cudnnWs = algo.workspaceBytes
                        ? reinterpret_cast<void *>(ws + filterBytes)
                        : nullptr;
    int hwi = int(kh * kw * c);
    const float one = 1, zero = 0;
    if (kind != ConvKind::BackpropFilter) {
      ProfiledRange range(s);
      if (range)
        range.begin(s.stream, "geam transpose filter HWIO %s -> KRSC",
                    dims(w.sizes, 4).c_str());
      if (!s.check(blas.cublasSgeam(bh, CUBLAS_OP_T, CUBLAS_OP_N, hwi, int(o),
                                    &one, w.data(), int(o), &zero, krsc, hwi,
                                    krsc, hwi),
                   "cublasSgeam"))
        return;
    }
    // "x[1024,28,28,1] w[5,5,1,32] y[1024,28,28,32] algo 1", with the
    // strides, dilations and paddings that are not 1, 1 and 0.
    ProfiledRange range(s);
    if (range) {
      std::string shape;
      auto tensor = [&](const char *name, const MemRef<float, 4> &m) {
        shape +=
            std::string(shape.empty() ? "" : " ") + name + dims(m.sizes, 4);
      };
      auto pair = [&](const char *name, int64_t a, int64_t b, int64_t plain) {
        if (a != plain || b != plain)
          shape += std::string(" ") + name + " " + std::to_string(a) + "x" +
                   std::to_string(b);
      };
      static const char *const kWhat[] = {"fwd", "bwd data", "bwd filter"};
      if (kind == ConvKind::Forward) {
        tensor("x", x);
        tensor("w", w);
        tensor("y", y);
      } else if (kind == ConvKind::BackpropInput) {
        tensor("dy", y);
        tensor("w", w);
        tensor("dx", x);
      } else {
        tensor("x", x);
        tensor("dy", y);
        tensor("dw", w);
      }
      pair("stride", p.strideH, p.strideW, 1);
      pair("dilation", p.dilationH, p.dilationW, 1);
      pair("pad", p.padTop, p.padLeft, 0);
      range.begin(s.stream, "cudnn conv %s NHWC %s algo %d", kWhat[int(kind)],
                  shape.c_str(), algo.algorithm);
    }
    switch (kind) {
    case ConvKind::Forward:
      s.check(api.cudnnConvolutionForward(
                  dnn, &one, d.x, x.data(), d.w, krsc, d.conv,
                  cudnnConvolutionFwdAlgo_t(algo.algorithm), cudnnWs,
                  algo.workspaceBytes, &zero, d.y, y.data()),
              "cudnnConvolutionForward");
      break;
    case ConvKind::BackpropInput:
      s.check(api.cudnnConvolutionBackwardData(
                  dnn, &one, d.w, krsc, d.y, y.data(), d.conv,
                  cudnnConvolutionBwdDataAlgo_t(algo.algorithm), cudnnWs,
                  algo.workspaceBytes, &zero, d.x, x.data()),
              "cudnnConvolutionBackwardData");
      break;
    case ConvKind::BackpropFilter:
      if (s.check(api.cudnnConvolutionBackwardFilter(
                      dnn, &one, d.x, x.data(), d.y, y.data(), d.conv,
                      cudnnConvolutionBwdFilterAlgo_t(algo.algorithm), cudnnWs,
                      algo.workspaceBytes, &zero, d.w, krsc),
                  "cudnnConvolutionBackwardFilter")) {
        range.end();
        ProfiledRange back(s);
        if (back)
          back.begin(s.stream, "geam transpose filter grad KRSC -> HWIO %s",
                     dims(w.sizes, 4).c_str());
        s.check(blas.cublasSgeam(bh, CUBLAS_OP_T, CUBLAS_OP_N, int(o), hwi,
                                 &one, krsc, hwi, &zero, w.data(), int(o),
                                 w.data(), int(o)),
                "cublasSgeam");
      }
      break;
    }
  } catch (const std::exception &e) {
    s.fail(e);
  }
}

} // namespace

extern "C" {

void _mlir_ciface_estc_cuda_matmul_f32(MemRef<float, 3> *a, MemRef<float, 3> *b,
                                       MemRef<float, 3> *c, int64_t transpose_a,
                                       int64_t transpose_b) {
  cudaMatmul<float>("estc_cuda_matmul_f32", *a, *b, *c, transpose_a != 0,
                    transpose_b != 0);
}

void _mlir_ciface_estc_cuda_matmul_f64(MemRef<double, 3> *a,
                                       MemRef<double, 3> *b,
                                       MemRef<double, 3> *c,
                                       int64_t transpose_a,
                                       int64_t transpose_b) {
  cudaMatmul<double>("estc_cuda_matmul_f64", *a, *b, *c, transpose_a != 0,
                     transpose_b != 0);
}

void _mlir_ciface_estc_cuda_conv2d_nhwc_hwio_f32(
    MemRef<float, 4> *input, MemRef<float, 4> *filter, MemRef<float, 4> *output,
    int64_t stride_h, int64_t stride_w, int64_t dilation_h, int64_t dilation_w,
    int64_t pad_top, int64_t pad_left) {
  cudaConv(ConvKind::Forward, "estc_cuda_conv2d_nhwc_hwio_f32", *input, *filter,
           *output,
           {stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left});
}

void _mlir_ciface_estc_cuda_conv2d_backprop_input_f32(
    MemRef<float, 4> *filter, MemRef<float, 4> *grad_output,
    MemRef<float, 4> *grad_input, int64_t stride_h, int64_t stride_w,
    int64_t dilation_h, int64_t dilation_w, int64_t pad_top, int64_t pad_left) {
  cudaConv(ConvKind::BackpropInput, "estc_cuda_conv2d_backprop_input_f32",
           *grad_input, *filter, *grad_output,
           {stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left});
}

void _mlir_ciface_estc_cuda_conv2d_backprop_filter_f32(
    MemRef<float, 4> *input, MemRef<float, 4> *grad_output,
    MemRef<float, 4> *grad_filter, int64_t stride_h, int64_t stride_w,
    int64_t dilation_h, int64_t dilation_w, int64_t pad_top, int64_t pad_left) {
  cudaConv(ConvKind::BackpropFilter, "estc_cuda_conv2d_backprop_filter_f32",
           *input, *grad_filter, *grad_output,
           {stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left});
}

} // extern "C"
