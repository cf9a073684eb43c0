//===- runtime/cpu/Gemm.cpp - Single-threaded strided GEMM on Eigen
//-----------===//
//
// Calls Eigen's blocked GEMM (general_matrix_matrix_product, the routine
// behind `C.noalias() += A * B`) directly, so that strides need no Map types
// and its packing buffers come from our per-thread scratch instead of the
// heap. Eigen's blocking sizes depend only on the matrix sizes and the CPU's
// cache sizes (we pass one thread), so results do not depend on threads.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/Gemm.h"
#include "runtime/cpu/OneDnnConv.h"
#include "runtime/cpu/Parallel.h"

#include <Eigen/Core>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <type_traits>

namespace estc::rt {
namespace {

using Eigen::Index;
namespace ei = Eigen::internal;

/// Eigen's blocking, with the packing panels in our scratch.
template <typename T> class ScratchBlocking : public ei::level3_blocking<T, T> {
public:
  ScratchBlocking(Index rows, Index cols, Index depth) {
    this->m_mc = rows;
    this->m_nc = cols;
    this->m_kc = depth;
    ei::computeProductBlockingSizes<T, T, 1, Index>(this->m_kc, this->m_mc,
                                                    this->m_nc, Index(1));
    this->m_blockA =
        scratch<T>(Scratch::GemmPackA, size_t(this->m_kc * this->m_mc));
    this->m_blockB =
        scratch<T>(Scratch::GemmPackB, size_t(this->m_kc * this->m_nc));
  }
};

/// A matrix Eigen can read in place: storage order and leading dimension.
template <typename T> struct Operand {
  const T *data;
  bool rowMajor;
  Index ld;
};

/// Column-major in place when rows step by 1, row-major when columns do
/// (a dimension of size 1 steps by anything).
template <typename T> bool asColMajor(const View2D<T> &v, Index &ld) {
  if (v.rows > 1 && v.rs != 1)
    return false;
  ld = v.cols > 1 ? v.cs : v.rows;
  return ld >= v.rows || v.cols == 1;
}
template <typename T> bool asRowMajor(const View2D<T> &v, Index &ld) {
  return asColMajor(v.transposed(), ld);
}

template <typename T> Operand<T> operand(View2D<const T> v, Scratch slot) {
  Index ld;
  if (asColMajor(v, ld))
    return {v.data, false, ld};
  if (asRowMajor(v, ld))
    return {v.data, true, ld};
  T *copy = scratch<T>(slot, size_t(v.rows * v.cols));
  for (Index j = 0; j < v.cols; ++j)
    for (Index i = 0; i < v.rows; ++i)
      copy[i + j * v.rows] = v.at(i, j);
  return {copy, false, v.rows};
}

template <typename T, int LhsOrder, int RhsOrder>
void run(Index m, Index n, Index k, const Operand<T> &lhs,
         const Operand<T> &rhs, T *res, Index ldRes) {
  ScratchBlocking<T> blocking(m, n, k);
  ei::general_matrix_matrix_product<Index, T, LhsOrder, false, T, RhsOrder,
                                    false, Eigen::ColMajor, 1>::run(m, n, k,
                                                                    lhs.data,
                                                                    lhs.ld,
                                                                    rhs.data,
                                                                    rhs.ld, res,
                                                                    1, ldRes,
                                                                    T(1),
                                                                    blocking,
                                                                    nullptr);
}

/// res (column-major, m x n, leading dimension ldRes) += lhs * rhs.
template <typename T>
void gemmColMajor(View2D<const T> a, View2D<const T> b, T *res, Index ldRes) {
  Index m = a.rows, n = b.cols, k = a.cols;
  Operand<T> lhs = operand(a, Scratch::GemmLhs);
  Operand<T> rhs = operand(b, Scratch::GemmRhs);
  constexpr int R = Eigen::RowMajor, C = Eigen::ColMajor;
  if (lhs.rowMajor)
    rhs.rowMajor ? run<T, R, R>(m, n, k, lhs, rhs, res, ldRes)
                 : run<T, R, C>(m, n, k, lhs, rhs, res, ldRes);
  else
    rhs.rowMajor ? run<T, C, R>(m, n, k, lhs, rhs, res, ldRes)
                 : run<T, C, C>(m, n, k, lhs, rhs, res, ldRes);
}

/// Sets a matrix to zero, walking memory in order.
template <typename T> void setZero(View2D<T> c) {
  if (std::abs(c.rs) < std::abs(c.cs))
    c = c.transposed();
  for (Index i = 0; i < c.rows; ++i)
    for (Index j = 0; j < c.cols; ++j)
      c.at(i, j) = T(0);
}

/// c (1 x n) (+)= a (1 x k) * b (k x n) for a b whose rows are contiguous
/// (b.cs == 1): one axpy per row of b, in order. A dense layer at batch 1:
/// Eigen's GEMM would pack all of b (the weights) for the single row, which
/// costs several times the product itself.
template <typename T>
void gemvRowMajor(View2D<const T> a, View2D<const T> b, View2D<T> c,
                  bool accumulate) {
  Index n = c.cols, k = a.cols;
  T *__restrict acc = scratch<T>(Scratch::GemmResult, size_t(n));
  std::memset(acc, 0, sizeof(T) * size_t(n));
  for (Index p = 0; p < k; ++p) {
    const T ap = a.at(0, p);
    const T *__restrict row = b.data + p * b.rs;
    for (Index j = 0; j < n; ++j)
      acc[j] += ap * row[j];
  }
  for (Index j = 0; j < n; ++j)
    c.at(0, j) = accumulate ? c.at(0, j) + acc[j] : acc[j];
}

typedef float Vec8 __attribute__((vector_size(32)));

/// Rows [i0, i0 + R) of c by the 8 columns from j0 (numCols of them real):
/// R vector accumulators in registers, one FMA per row and element of the
/// depth, b's row p of those columns at src + p * ld.
template <int R, typename Store>
inline void smallBlock(View2D<const float> a, Index i0, Index k,
                       const float *src, Index ld, Index j0, Index numCols,
                       const Store &store) {
  const float *rows[R];
  for (int r = 0; r < R; ++r)
    rows[r] = a.data + (i0 + r) * a.rs;
  Vec8 acc[R] = {};
  for (Index p = 0; p < k; ++p) {
    Vec8 bp;
    std::memcpy(&bp, src + p * ld, sizeof bp);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
      acc[r] += rows[r][p * a.cs] * bp;
  }
  // Every access to acc at a constant index, so that it stays in
  // registers (a variable one puts it on the stack: 2x slower).
  float sums[R][8];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
    std::memcpy(sums[r], &acc[r], sizeof sums[r]);
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
    store(i0 + r, j0, numCols, sums[r]);
}

/// c (m x n) (+)= a (m x k) * b (k x n), float, for products of at most
/// kSmallGemm multiply-adds (an iris-sized layer: 32 x 10 x 10), where
/// Eigen's packing and blocking cost several times the product. c is
/// computed in blocks of 8 columns by 8, 4, 2 or 1 rows (smallBlock; the
/// rows are never padded, the columns to 8); b's rows are read in place
/// when contiguous, and the columns of b no full block of 8 reads in place
/// are first gathered into a panel padded with zeros. Each element of c is
/// its k products added in order from 0: the same for any thread count,
/// operand layout or blocking, though not the order of Eigen's kernel
/// (results differ from it in the last bits). `store(i, j0, count, sums)`
/// writes sums[0, count) into row i from column j0. (Computing a narrow c
/// as c^T = b^T a^T instead, which pads less, was tried: more instructions
/// for the iris step's matmuls, its gathers and per-element stores costing
/// more than the padding.)
template <typename Store>
void gemmSmall(View2D<const float> a, View2D<const float> b, Index m, Index n,
               const Store &store) {
  constexpr Index kCols = 8;
  Index k = a.cols;
  Index panelCols = (n + kCols - 1) / kCols * kCols;
  // Blocks of 8 columns read in place: those of a b whose rows are
  // contiguous; the rest come from the panel, whose column 0 is column
  // `gathered0` of b. A select, not a zeroing loop after a copy: short
  // memcpy and memset calls cost more than the product (perf, the iris step).
  Index inPlace = b.cs == 1 || n == 1 ? n / kCols * kCols : 0;
  Index gathered0 = inPlace, ldPanel = panelCols - inPlace;
  float *panel = nullptr;
  if (ldPanel > 0) {
    panel = scratch<float>(Scratch::GemmRhs, size_t(k * ldPanel));
    for (Index p = 0; p < k; ++p)
      for (Index j = 0; j < ldPanel; ++j)
        panel[p * ldPanel + j] =
            gathered0 + j < n ? b.at(p, gathered0 + j) : 0.0f;
  }
  auto rowBlock = [&](auto rows, Index i0) {
    constexpr int R = decltype(rows)::value;
    for (Index j0 = 0; j0 < panelCols; j0 += kCols) {
      const float *src = j0 < inPlace ? b.data + j0 : panel + (j0 - gathered0);
      Index ld = j0 < inPlace ? b.rs : ldPanel;
      smallBlock<R>(a, i0, k, src, ld, j0, std::min(kCols, n - j0), store);
    }
  };
  Index i0 = 0;
  for (; i0 + 8 <= m; i0 += 8)
    rowBlock(std::integral_constant<int, 8>(), i0);
  if (i0 + 4 <= m) {
    rowBlock(std::integral_constant<int, 4>(), i0);
    i0 += 4;
  }
  if (i0 + 2 <= m) {
    rowBlock(std::integral_constant<int, 2>(), i0);
    i0 += 2;
  }
  if (i0 < m)
    rowBlock(std::integral_constant<int, 1>(), i0);
}

/// Whether gemm runs gemmSmall for c = a * b: a product of at most
/// kSmallGemm multiply-adds, with something to compute, that is not a row
/// times a matrix (gemvRowMajor's).
bool takesSmallPath(View2D<const float> b, Index m, Index n, Index k) {
  return m > 0 && n > 0 && k > 0 && !(m == 1 && (b.cs == 1 || n == 1)) &&
         m * n * k <= kSmallGemm;
}

} // namespace

template <typename T>
void gemm(View2D<const T> a, View2D<const T> b, View2D<T> c, bool accumulate) {
  Index m = c.rows, n = c.cols, k = a.cols;
  if (m == 0 || n == 0)
    return;
  if (k == 0) {
    if (!accumulate)
      setZero(c);
    return;
  }
  if (m == 1 && (b.cs == 1 || n == 1))
    return gemvRowMajor(a, b, c, accumulate);
  if constexpr (std::is_same_v<T, float>) {
    if (takesSmallPath(b, m, n, k))
      return gemmSmall(a, b, m, n,
                       [&](Index i, Index j0, Index count, const float *sums) {
                         for (Index j = 0; j < count; ++j) {
                           float &out = c.at(i, j0 + j);
                           out = accumulate ? out + sums[j] : sums[j];
                         }
                       });
    if (oneDnnSgemm(a, b, c, accumulate))
      return;
  }

  Index ld;
  if (asColMajor(c, ld)) {
    if (!accumulate)
      setZero(c);
    return gemmColMajor(a, b, c.data, ld);
  }
  if (asRowMajor(c, ld)) { // c^T = b^T a^T, column-major
    if (!accumulate)
      setZero(c);
    return gemmColMajor(b.transposed(), a.transposed(), c.data, ld);
  }
  T *tmp = scratch<T>(Scratch::GemmResult, size_t(m * n));
  View2D<T> t{tmp, m, n, 1, m};
  if (accumulate)
    for (Index j = 0; j < n; ++j)
      for (Index i = 0; i < m; ++i)
        t.at(i, j) = c.at(i, j);
  else
    std::memset(tmp, 0, sizeof(T) * size_t(m * n));
  gemmColMajor(a, b, tmp, m);
  if (std::abs(c.rs) < std::abs(c.cs))
    for (Index j = 0; j < n; ++j)
      for (Index i = 0; i < m; ++i)
        c.at(i, j) = t.at(i, j);
  else
    for (Index i = 0; i < m; ++i)
      for (Index j = 0; j < n; ++j)
        c.at(i, j) = t.at(i, j);
}

template void gemm<float>(View2D<const float>, View2D<const float>,
                          View2D<float>, bool);
template void gemm<double>(View2D<const double>, View2D<const double>,
                           View2D<double>, bool);

bool gemmSmallEpilogue(View2D<const float> a, View2D<const float> b,
                       View2D<float> c, const Epilogue &e) {
  Index m = c.rows, n = c.cols, k = a.cols;
  // gemm's other paths for these shapes (nothing to compute, a row times
  // a matrix, larger products) stay where they are: the same bits.
  if (!takesSmallPath(b, m, n, k))
    return false;
  // As gemm then applyEpilogue: no epilogue stores the sums as they are
  // (-0 stays -0); otherwise act(sum + bias), the bias 0 when absent.
  float zero = 0.0f;
  const float *bias = e.bias ? e.bias : &zero;
  Index bs = e.bias ? e.biasStride : 0;
  bool apply = !e.empty();
  auto storeAs = [&](auto act, auto vact) {
    gemmSmall(a, b, m, n,
              [&](Index i, Index j0, Index count, const float *sums) {
                float *out = &c.at(i, j0);
                if (count == 8 && c.cs == 1 && bs <= 1) {
                  // A whole block of a row: one vector.
                  Vec8 x, bv = {};
                  std::memcpy(&x, sums, sizeof x);
                  if (apply) {
                    if (bs == 1)
                      std::memcpy(&bv, bias + j0, sizeof bv);
                    x = vact(x + bv);
                  }
                  std::memcpy(out, &x, sizeof x);
                  return;
                }
                for (Index j = 0; j < count; ++j)
                  out[j * c.cs] =
                      apply ? act(sums[j] + bias[(j0 + j) * bs]) : sums[j];
              });
  };
  // The vector forms do what Epilogue::relu / relu6 do, lane by lane.
  auto vrelu = [](Vec8 x) {
    Vec8 z = {};
    return x <= z ? z : x;
  };
  auto vrelu6 = [&](Vec8 x) {
    Vec8 y = vrelu(x), six = {6, 6, 6, 6, 6, 6, 6, 6};
    return y >= six ? six : y;
  };
  switch (e.activation) {
  case Epilogue::None:
    storeAs([](float x) { return x; }, [](Vec8 x) { return x; });
    break;
  case Epilogue::Relu:
    storeAs(Epilogue::relu, vrelu);
    break;
  case Epilogue::Relu6:
    storeAs(Epilogue::relu6, vrelu6);
    break;
  }
  return true;
}

} // namespace estc::rt
