//===- runtime/cpu/Gemm.h - Single-threaded strided GEMM
//----------------------===//
//
// Internal to the runtime. The one place that calls Eigen's GEMM; matmul and
// the convolutions split work into tiles and call this per tile.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_RUNTIME_CPU_GEMM_H
#define ESTC_RUNTIME_CPU_GEMM_H

#include <cstdint>

namespace estc::rt {

/// A rows x cols matrix: element (i, j) at data[i * rs + j * cs].
template <typename T> struct View2D {
  T *data;
  int64_t rows, cols;
  int64_t rs, cs;

  T &at(int64_t i, int64_t j) const { return data[i * rs + j * cs]; }
  View2D block(int64_t i, int64_t j, int64_t r, int64_t c) const {
    return {data + i * rs + j * cs, r, c, rs, cs};
  }
  View2D transposed() const { return {data, cols, rows, cs, rs}; }
  operator View2D<const T>() const { return {data, rows, cols, rs, cs}; }
};

/// What a kernel applies to each output element right after computing it:
/// out = act(out + bias[column]). `bias` null means no bias. Relu is
/// max(x, 0) propagating NaN and turning -0 into +0, as arith.maximumf;
/// relu6 is then min(x, 6), as arith.minimumf, so fused and unfused results
/// agree bit for bit.
struct Epilogue {
  enum Activation : int64_t { None = 0, Relu = 1, Relu6 = 2 };
  const float *bias = nullptr;
  int64_t biasStride = 1;
  Activation activation = None;

  bool empty() const { return !bias && activation == None; }
  static float relu(float x) { return x <= 0.0f ? 0.0f : x; }
  static float relu6(float x) {
    float y = relu(x);
    return y >= 6.0f ? 6.0f : y;
  }
};

/// Products of at most this many multiply-adds (m * n * k) skip Eigen's
/// blocked GEMM for a direct loop (runtime/cpu/Gemm.cpp, gemmSmall).
constexpr int64_t kSmallGemm = 32 * 32 * 32;

/// c = a * b, or c += a * b when `accumulate`. Runs on the calling thread and
/// uses its scratch (Scratch::Gemm*); never allocates after warm-up. float
/// products with unit-stride operands and a row-major c go to oneDNN's sgemm
/// when the runtime has it (runtime/cpu/OneDnnConv.h; faster on this
/// project's AVX-512 CPU, docs/results.md), which packs into its own heap
/// buffers.
/// Operands with a unit stride in either dimension are used in place; others
/// are copied first. The result depends only on the operands' values and
/// shapes, never on where they live or which thread runs it.
template <typename T>
void gemm(View2D<const T> a, View2D<const T> b, View2D<T> c, bool accumulate);

extern template void gemm<float>(View2D<const float>, View2D<const float>,
                                 View2D<float>, bool);
extern template void gemm<double>(View2D<const double>, View2D<const double>,
                                  View2D<double>, bool);

/// c = act(a * b + bias) in one pass where gemm would run its direct loop
/// for small products (at most kSmallGemm multiply-adds, not a row times a
/// matrix): the bias and activation applied as each element leaves the
/// registers, the same float operations as gemm followed by applyEpilogue.
/// Returns false, writing nothing, for other shapes.
bool gemmSmallEpilogue(View2D<const float> a, View2D<const float> b,
                       View2D<float> c, const Epilogue &e);

/// Applies `f(x, j)` to every element (i, j) of c, row by row.
template <typename T, typename F> void applyEach(View2D<T> c, const F &f) {
  for (int64_t i = 0; i < c.rows; ++i) {
    T *row = c.data + i * c.rs;
    if (c.cs == 1)
      for (int64_t j = 0; j < c.cols; ++j)
        row[j] = f(row[j], j);
    else
      for (int64_t j = 0; j < c.cols; ++j)
        row[j * c.cs] = f(row[j * c.cs], j);
  }
}

} // namespace estc::rt

#endif // ESTC_RUNTIME_CPU_GEMM_H
