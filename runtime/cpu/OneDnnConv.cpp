//===- runtime/cpu/OneDnnConv.cpp - oneDNN's convolutions, where they win -===//
//
// See OneDnnConv.h for when a call comes here and why the results do not
// depend on the thread count.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/OneDnnConv.h"
#include "runtime/cpu/Gemm.h"
#include "runtime/cpu/Kernels.h"
#include "runtime/cpu/Parallel.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#ifndef ESTC_ONEDNN
#define ESTC_ONEDNN 0
#endif

#if ESTC_ONEDNN
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <string>

// libgomp, oneDNN's threading runtime in Debian's build: the calling
// thread's own team size (an ICV of that thread only).
extern "C" void omp_set_num_threads(int);
extern "C" int omp_get_max_threads(void);
#endif

namespace estc::rt {
namespace {

/// -1: not decided yet (ESTC_USE_ONEDNN), 0 off, 1 on.
std::atomic<int> enabled{-1};
/// Calls that oneDNN ran; convolution calls it had only a slow (gemm or
/// reference) primitive for, left to estc's own kernels.
std::atomic<size_t> calls{0}, gemmCalls{0}, declined{0};

[[maybe_unused]] bool oneDnnEnabled() {
  int e = enabled.load(std::memory_order_relaxed);
  if (e < 0) {
    const char *env = std::getenv("ESTC_USE_ONEDNN");
    e = env && std::strcmp(env, "0") == 0 ? 0 : 1;
    enabled.store(e, std::memory_order_relaxed);
  }
  return e == 1;
}

} // namespace
} // namespace estc::rt

extern "C" int estc_runtime_set_onednn(int enable) {
  estc::rt::enabled.store(enable < 0 ? -1 : enable ? 1 : 0);
  return ESTC_ONEDNN ? 1 : 0;
}

extern "C" size_t estc_runtime_onednn_conv_calls(void) {
  return estc::rt::calls.load();
}

extern "C" size_t estc_runtime_onednn_conv_declined(void) {
  return estc::rt::declined.load();
}

extern "C" size_t estc_runtime_onednn_gemm_calls(void) {
  return estc::rt::gemmCalls.load();
}

#if !ESTC_ONEDNN

namespace estc::rt {
bool oneDnnConv2d(const MemRef<float, 4> &, const MemRef<float, 4> &,
                  const MemRef<float, 4> &, const ConvParams &) {
  return false;
}
bool oneDnnConv2dBackpropInput(const MemRef<float, 4> &,
                               const MemRef<float, 4> &,
                               const MemRef<float, 4> &, const ConvParams &) {
  return false;
}
bool oneDnnConv2dBackpropFilter(const MemRef<float, 4> &,
                                const MemRef<float, 4> &,
                                const MemRef<float, 4> &, const ConvParams &) {
  return false;
}
bool oneDnnSgemm(View2D<const float>, View2D<const float>, View2D<float>,
                 bool) {
  return false;
}
bool oneDnnSgemmEnabled() { return false; }
} // namespace estc::rt

#else

namespace estc::rt {
namespace {

using Tensor4 = MemRef<float, 4>;
using dnnl::memory;

/// Work per chunk of images, and the most chunks: oneDNN's kernels lose
/// speed on small chunks (a 7x7x64 filter gradient in 16 chunks of 4 images
/// took 1.8 ms, in 4 of 16 images 1.25 ms), and 4 chunks still keep 2 or 4
/// threads evenly busy.
constexpr double kMinChunkFlops = 64e6;
constexpr int64_t kMaxChunks = 4;

enum class Kind : int64_t { Forward, BackwardData, BackwardWeights };

/// One convolution of a chunk of `n` images; everything else as the call.
struct Shape {
  int64_t n, h, w, c, kh, kw, o, oh, ow;
  ConvParams p;
  int64_t padBottom, padRight;
};

/// A created primitive (or the note that oneDNN has no fast one).
struct Entry {
  bool ok = false;
  dnnl::primitive conv;
  memory::desc blocked;    // the primitive's weights / diff_weights layout
  memory::desc scratchpad; // user-managed, per thread
  dnnl::reorder reorder;   // HWIO -> blocked (data), blocked -> HWIO (weights)
};

dnnl::engine &cpuEngine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

/// While alive, oneDNN on this thread uses this thread alone (OpenMP's team
/// size of the thread, restored after: the caller's own OpenMP code, if
/// any, keeps its setting).
class OneThread {
public:
  OneThread() : saved(omp_get_max_threads()) {
    if (saved != 1)
      omp_set_num_threads(1);
  }
  ~OneThread() {
    if (saved != 1)
      omp_set_num_threads(saved);
  }
  OneThread(const OneThread &) = delete;
  OneThread &operator=(const OneThread &) = delete;

private:
  int saved;
};

dnnl::stream &threadStream() {
  thread_local dnnl::stream stream(cpuEngine());
  return stream;
}

memory::desc nhwc(int64_t n, int64_t c, int64_t h, int64_t w) {
  return memory::desc({n, c, h, w}, memory::data_type::f32,
                      memory::format_tag::nhwc);
}
memory::desc hwio(const Shape &s) {
  return memory::desc({s.o, s.c, s.kh, s.kw}, memory::data_type::f32,
                      memory::format_tag::hwio);
}

Entry create(Kind kind, const Shape &s) {
  OneThread one;
  Entry e;
  dnnl::engine &engine = cpuEngine();
  memory::desc src = nhwc(s.n, s.c, s.h, s.w), dst = nhwc(s.n, s.o, s.oh, s.ow);
  memory::desc any({s.o, s.c, s.kh, s.kw}, memory::data_type::f32,
                   memory::format_tag::any);
  memory::dims strides{s.p.strideH, s.p.strideW},
      dilations{s.p.dilationH - 1, s.p.dilationW - 1},
      padL{s.p.padTop, s.p.padLeft}, padR{s.padBottom, s.padRight};
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  auto fast = [](const char *impl) {
    std::string name = impl;
    return name.find("gemm") == std::string::npos &&
           name.find("ref") == std::string::npos;
  };
  try {
    dnnl::convolution_forward::primitive_desc forward(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training,
                                        dnnl::algorithm::convolution_direct,
                                        src, any, dst, strides, dilations, padL,
                                        padR),
        attr, engine);
    switch (kind) {
    case Kind::Forward:
      if (!fast(forward.impl_info_str()))
        return e;
      e.conv = dnnl::convolution_forward(forward);
      e.blocked = forward.weights_desc();
      e.scratchpad = forward.scratchpad_desc();
      e.reorder = dnnl::reorder(memory(hwio(s), engine, DNNL_MEMORY_NONE),
                                memory(e.blocked, engine, DNNL_MEMORY_NONE));
      break;
    case Kind::BackwardData: {
      dnnl::convolution_backward_data::primitive_desc pd(
          dnnl::convolution_backward_data::desc(
              dnnl::algorithm::convolution_direct, src, any, dst, strides,
              dilations, padL, padR),
          attr, engine, forward);
      if (!fast(pd.impl_info_str()))
        return e;
      e.conv = dnnl::convolution_backward_data(pd);
      e.blocked = pd.weights_desc();
      e.scratchpad = pd.scratchpad_desc();
      e.reorder = dnnl::reorder(memory(hwio(s), engine, DNNL_MEMORY_NONE),
                                memory(e.blocked, engine, DNNL_MEMORY_NONE));
      break;
    }
    case Kind::BackwardWeights: {
      dnnl::convolution_backward_weights::primitive_desc pd(
          dnnl::convolution_backward_weights::desc(
              dnnl::algorithm::convolution_direct, src, any, dst, strides,
              dilations, padL, padR),
          attr, engine, forward);
      if (!fast(pd.impl_info_str()))
        return e;
      e.conv = dnnl::convolution_backward_weights(pd);
      e.blocked = pd.diff_weights_desc();
      e.scratchpad = pd.scratchpad_desc();
      e.reorder = dnnl::reorder(memory(e.blocked, engine, DNNL_MEMORY_NONE),
                                memory(hwio(s), engine, DNNL_MEMORY_NONE));
      break;
    }
    }
  } catch (const dnnl::error &) {
    return Entry{};
  }
  e.ok = true;
  return e;
}

/// The primitive for (kind, shape), created on first use and kept.
const Entry &entry(Kind kind, const Shape &s) {
  using Key = std::array<int64_t, 16>;
  static std::mutex mutex;
  static std::map<Key, std::unique_ptr<Entry>> cache;
  Key key{int64_t(kind), s.n,           s.h,         s.w,
          s.c,           s.kh,          s.kw,        s.o,
          s.oh,          s.ow,          s.p.strideH, s.p.strideW,
          s.p.dilationH, s.p.dilationW, s.p.padTop,  s.p.padLeft};
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<Entry> &slot = cache[key];
  if (!slot)
    slot = std::make_unique<Entry>(create(kind, s));
  return *slot;
}

bool denseNhwc(const Tensor4 &x) { return isContiguous(x); }

/// The call's shape (n: the whole batch), or false when oneDNN does not
/// take it: channels not multiples of 16, a tensor not stored densely, or
/// a geometry that oneDNN's padding cannot express.
bool shapeOf(const Tensor4 &input, const Tensor4 &filter, const Tensor4 &output,
             const ConvParams &p, Shape &s) {
  if (!oneDnnEnabled())
    return false;
  s = {input.sizes[0],
       input.sizes[1],
       input.sizes[2],
       input.sizes[3],
       filter.sizes[0],
       filter.sizes[1],
       filter.sizes[3],
       output.sizes[1],
       output.sizes[2],
       p,
       0,
       0};
  if (s.c % 16 != 0 || s.o % 16 != 0 || s.c == 0 || s.o == 0 || s.n == 0 ||
      s.oh == 0 || s.ow == 0 || filter.sizes[2] != s.c ||
      output.sizes[0] != s.n || output.sizes[3] != s.o)
    return false;
  if (!denseNhwc(input) || !denseNhwc(output) || !isContiguous(filter))
    return false;
  if (p.strideH < 1 || p.strideW < 1 || p.dilationH < 1 || p.dilationW < 1 ||
      p.padTop < 0 || p.padLeft < 0)
    return false;
  // Padding after: what the last output row / column reads past the input
  // (0 when it stops short of the input's end).
  s.padBottom =
      std::max<int64_t>(0, (s.oh - 1) * p.strideH + (s.kh - 1) * p.dilationH +
                               1 - s.h - p.padTop);
  s.padRight =
      std::max<int64_t>(0, (s.ow - 1) * p.strideW + (s.kw - 1) * p.dilationW +
                               1 - s.w - p.padLeft);
  auto outSize = [](int64_t in, int64_t k, int64_t d, int64_t stride,
                    int64_t before, int64_t after) {
    return (in + before + after - ((k - 1) * d + 1)) / stride + 1;
  };
  return outSize(s.h, s.kh, p.dilationH, p.strideH, p.padTop, s.padBottom) ==
             s.oh &&
         outSize(s.w, s.kw, p.dilationW, p.strideW, p.padLeft, s.padRight) ==
             s.ow;
}

/// Chunks of images, from the shapes alone: chunk i holds images
/// [i * n / k, (i + 1) * n / k), so at most two chunk sizes.
int64_t chunksOf(const Shape &s) {
  double flops =
      2.0 * double(s.n * s.oh * s.ow) * double(s.kh * s.kw * s.c) * double(s.o);
  int64_t k = int64_t(flops / kMinChunkFlops);
  k = k > 1 ? (k + 3) / 4 * 4 : 1;
  return std::clamp<int64_t>(k, 1, std::min(kMaxChunks, s.n));
}

/// The entries of the (at most two) chunk sizes, created before the tasks
/// run; false when oneDNN has no fast primitive for one of them.
struct Chunks {
  int64_t count;
  const Entry *small, *large; // n / count and n / count + 1 images
  int64_t first(int64_t i, int64_t n) const { return i * n / count; }
};
bool chunks(Kind kind, const Shape &whole, Chunks &out) {
  out.count = chunksOf(whole);
  Shape s = whole;
  s.n = whole.n / out.count;
  out.small = &entry(kind, s);
  out.large = out.small;
  if (whole.n % out.count != 0) {
    s.n += 1;
    out.large = &entry(kind, s);
  }
  bool ok = out.small->ok && out.large->ok;
  if (!ok)
    declined.fetch_add(1, std::memory_order_relaxed);
  return ok;
}

/// This thread's scratchpad for `e`.
memory scratchpadOf(const Entry &e) {
  size_t bytes = e.scratchpad.get_size();
  void *data = bytes ? scratchBytes(Scratch::WinogradProducts, bytes) : nullptr;
  return memory(e.scratchpad, cpuEngine(), data);
}

/// Runs the filter's reorder into `blocked` (the runtime's SharedFilter
/// scratch) for a forward or backward-data primitive.
memory blockedFilter(const Entry &e, const Shape &s, const Tensor4 &filter) {
  OneThread one;
  size_t bytes = e.blocked.get_size();
  memory user(hwio(s), cpuEngine(), filter.data());
  memory blocked(e.blocked, cpuEngine(),
                 scratchBytes(Scratch::SharedFilter, bytes));
  e.reorder.execute(threadStream(), user, blocked);
  threadStream().wait();
  return blocked;
}

/// The forward and the input gradient: the batch split in chunks, one
/// oneDNN call per chunk of images with the shared blocked filter. `a` is
/// x (or dx), NHWC [n, h, w, c], bound to `argA`; `b` is y (or dy), NHWC
/// [n, oh, ow, o], bound to `argB`.
bool overBatchChunks(Kind kind, const Tensor4 &a, const Tensor4 &filter,
                     const Tensor4 &b, const ConvParams &p, int argA,
                     int argB) {
  Shape s;
  Chunks ch;
  if (!shapeOf(a, filter, b, p, s) || !chunks(kind, s, ch))
    return false;
  // Both chunk sizes share one weights layout (oneDNN picks it from the
  // channels and the filter); checked, as it is assumed below.
  if (ch.small->blocked != ch.large->blocked)
    return false;
  memory weights = blockedFilter(*ch.small, s, filter);
  double flops = 2.0 * double(s.n * s.oh * s.ow * s.kh * s.kw * s.c * s.o);
  parallelFor(ch.count, flops / double(ch.count), [&](int64_t i) {
    OneThread one;
    int64_t n0 = ch.first(i, s.n), n1 = ch.first(i + 1, s.n);
    const Entry &e = n1 - n0 == s.n / ch.count ? *ch.small : *ch.large;
    memory ma(nhwc(n1 - n0, s.c, s.h, s.w), cpuEngine(),
              a.data() + n0 * s.h * s.w * s.c);
    memory mb(nhwc(n1 - n0, s.o, s.oh, s.ow), cpuEngine(),
              b.data() + n0 * s.oh * s.ow * s.o);
    e.conv.execute(threadStream(), {{argA, ma},
                                    {DNNL_ARG_WEIGHTS, weights},
                                    {argB, mb},
                                    {DNNL_ARG_SCRATCHPAD, scratchpadOf(e)}});
    threadStream().wait();
  });
  calls.fetch_add(1);
  return true;
}

} // namespace

bool oneDnnConv2d(const Tensor4 &input, const Tensor4 &filter,
                  const Tensor4 &output, const ConvParams &p) {
  return overBatchChunks(Kind::Forward, input, filter, output, p, DNNL_ARG_SRC,
                         DNNL_ARG_DST);
}

bool oneDnnConv2dBackpropInput(const Tensor4 &filter, const Tensor4 &gradOutput,
                               const Tensor4 &gradInput, const ConvParams &p) {
  return overBatchChunks(Kind::BackwardData, gradInput, filter, gradOutput, p,
                         DNNL_ARG_DIFF_SRC, DNNL_ARG_DIFF_DST);
}

bool oneDnnConv2dBackpropFilter(const Tensor4 &input, const Tensor4 &gradOutput,
                                const Tensor4 &gradFilter,
                                const ConvParams &p) {
  Shape s;
  Chunks ch;
  if (!shapeOf(input, gradFilter, gradOutput, p, s) ||
      !chunks(Kind::BackwardWeights, s, ch))
    return false;
  // Chunk i's partial filter, HWIO, in the SharedPartials scratch; the
  // blocked diff_weights of a chunk in the task's own scratch.
  int64_t filterSize = s.kh * s.kw * s.c * s.o;
  float *partials =
      scratch<float>(Scratch::SharedPartials, size_t(ch.count * filterSize));
  double flops = 2.0 * double(s.n * s.oh * s.ow * s.kh * s.kw * s.c * s.o);
  parallelFor(ch.count, flops / double(ch.count), [&](int64_t i) {
    OneThread one;
    int64_t n0 = ch.first(i, s.n), n1 = ch.first(i + 1, s.n);
    const Entry &e = n1 - n0 == s.n / ch.count ? *ch.small : *ch.large;
    memory src(nhwc(n1 - n0, s.c, s.h, s.w), cpuEngine(),
               input.data() + n0 * s.h * s.w * s.c);
    memory diffDst(nhwc(n1 - n0, s.o, s.oh, s.ow), cpuEngine(),
                   gradOutput.data() + n0 * s.oh * s.ow * s.o);
    memory blocked(e.blocked, cpuEngine(),
                   scratchBytes(Scratch::PixelTile, e.blocked.get_size()));
    memory partial(hwio(s), cpuEngine(), partials + i * filterSize);
    e.conv.execute(threadStream(), {{DNNL_ARG_SRC, src},
                                    {DNNL_ARG_DIFF_WEIGHTS, blocked},
                                    {DNNL_ARG_DIFF_DST, diffDst},
                                    {DNNL_ARG_SCRATCHPAD, scratchpadOf(e)}});
    e.reorder.execute(threadStream(), blocked, partial);
    threadStream().wait();
  });
  // grad_filter = partial[0] + partial[1] + ..., in that order.
  float *dst = gradFilter.data();
  int64_t perTask = 4096;
  parallelFor((filterSize + perTask - 1) / perTask, double(perTask * ch.count),
              [&](int64_t t) {
                int64_t r1 = std::min(filterSize, (t + 1) * perTask);
                for (int64_t r = t * perTask; r < r1; ++r) {
                  float sum = partials[r];
                  for (int64_t j = 1; j < ch.count; ++j)
                    sum += partials[j * filterSize + r];
                  dst[r] = sum;
                }
              });
  calls.fetch_add(1);
  return true;
}

namespace {
/// op(v) for dnnl_sgemm's row-major convention: 'N' with the row stride when
/// v's columns step by 1, 'T' with the column stride when its rows do (a
/// dimension of size 1 steps by anything); false when neither.
bool rowMajorOperand(View2D<const float> v, char &trans, int64_t &ld) {
  if (v.cols == 1 || v.cs == 1) {
    ld = v.rows > 1 ? v.rs : v.cols;
    if (ld >= v.cols) {
      trans = 'N';
      return true;
    }
  }
  if (v.rows == 1 || v.rs == 1) {
    ld = v.cols > 1 ? v.cs : v.rows;
    if (ld >= v.rows) {
      trans = 'T';
      return true;
    }
  }
  return false;
}
} // namespace

bool oneDnnSgemmEnabled() { return oneDnnEnabled(); }

bool oneDnnSgemm(View2D<const float> a, View2D<const float> b, View2D<float> c,
                 bool accumulate) {
  if (!oneDnnEnabled())
    return false;
  char ta, tb, tc;
  int64_t lda, ldb, ldc;
  if (!rowMajorOperand(a, ta, lda) || !rowMajorOperand(b, tb, ldb) ||
      !rowMajorOperand(View2D<const float>(c), tc, ldc) || tc != 'N')
    return false;
  OneThread one;
  if (ta == 'T' && tb == 'N' && lda > ldb) {
    // A^T B where A's rows are longer than B's (X^T dY of a 1024-wide
    // layer's input): oneDNN packs such an A^T slowly (105 GFLOP/s for
    // [4096,1024]^T [4096,256]); C^T = B^T A, which packs the shorter rows,
    // runs at 155. Then one transposing copy.
    int64_t m = c.rows, n = c.cols;
    float *t = scratch<float>(Scratch::GemmResult, size_t(m * n));
    if (dnnl_sgemm('T', 'N', n, m, a.cols, 1.0f, b.data, ldb, a.data, lda, 0.0f,
                   t, m) != dnnl_success)
      return false;
    for (int64_t i = 0; i < m; ++i) {
      float *row = c.data + i * ldc;
      if (accumulate)
        for (int64_t j = 0; j < n; ++j)
          row[j] += t[j * m + i];
      else
        for (int64_t j = 0; j < n; ++j)
          row[j] = t[j * m + i];
    }
  } else if (dnnl_sgemm(ta, tb, c.rows, c.cols, a.cols, 1.0f, a.data, lda,
                        b.data, ldb, accumulate ? 1.0f : 0.0f, c.data,
                        ldc) != dnnl_success) {
    return false;
  }
  gemmCalls.fetch_add(1, std::memory_order_relaxed);
  return true;
}

} // namespace estc::rt

#endif // ESTC_ONEDNN
