//===- runtime/cpu/Matmul.cpp - Batched matmul
//-------------------------------===//
//
// Each batch's C is cut into a grid of tiles chosen from (M, N, K) alone; one
// task computes one tile with a single-threaded GEMM over the whole K. So
// every element of C is produced by the same operations whatever the thread
// count, and small products run inline without touching the pool.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/Gemm.h"
#include "runtime/cpu/KernelImpl.h"
#include "runtime/cpu/OneDnnConv.h"
#include "runtime/cpu/Parallel.h"

#include <algorithm>
#include <cmath>
#include <type_traits>

namespace estc::rt {
namespace {

/// Below this a tile is not worth a task; above kMaxTiles tiles per matrix
/// the repacking of shared panels starts to cost more than balance gains.
constexpr double kMinTileFlops = 4e6;
constexpr int64_t kMaxTiles = 32;
/// The same for float products whose tiles oneDNN's sgemm runs
/// (runtime/cpu/OneDnnConv.h): it packs both operands on every call, so the
/// small tiles of a long product (a weight gradient X^T dY, K = 4096) ran
/// at 95 GFLOP/s where 8 tiles of at least 32 MFLOP run at 130
/// (docs/results.md "BERT-mini training step (issue 28)").
constexpr double kMinOneDnnTileFlops = 32e6;
constexpr int64_t kMaxOneDnnTiles = 8;

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t roundUp(int64_t a, int64_t b) { return ceilDiv(a, b) * b; }

struct TilePlan {
  int64_t mBlock, nBlock, mTiles, nTiles;
};

/// Splits an M x N result (depth K) into about flops / kMinTileFlops tiles,
/// as square as the shape allows, with edges multiple of 16.
TilePlan planTiles(int64_t m, int64_t n, int64_t k, bool oneDnn) {
  double flops = 2.0 * double(m) * double(n) * double(k);
  int64_t want = std::clamp<int64_t>(
      int64_t(flops / (oneDnn ? kMinOneDnnTileFlops : kMinTileFlops)), 1,
      oneDnn ? kMaxOneDnnTiles : kMaxTiles);
  int64_t mTiles = std::clamp<int64_t>(
      std::llround(std::sqrt(double(want) * double(m) /
                             double(std::max<int64_t>(n, 1)))),
      1, std::max<int64_t>(1, ceilDiv(m, 32)));
  int64_t nTiles = std::clamp<int64_t>(ceilDiv(want, mTiles), 1,
                                       std::max<int64_t>(1, ceilDiv(n, 32)));
  TilePlan plan;
  plan.mBlock = std::max<int64_t>(1, roundUp(ceilDiv(m, mTiles), 16));
  plan.nBlock = std::max<int64_t>(1, roundUp(ceilDiv(n, nTiles), 16));
  plan.mTiles = std::max<int64_t>(1, ceilDiv(m, plan.mBlock));
  plan.nTiles = std::max<int64_t>(1, ceilDiv(n, plan.nBlock));
  return plan;
}

/// op(X[batch]) as a matrix.
template <typename T>
View2D<const T> matrixOf(const MemRef<T, 3> &x, int64_t batch, bool transpose) {
  int64_t b = x.sizes[0] == 1 ? 0 : batch;
  View2D<const T> v{x.data() + b * x.strides[0], x.sizes[1], x.sizes[2],
                    x.strides[1], x.strides[2]};
  return transpose ? v.transposed() : v;
}

/// The batched matmul; `epilogue` (float only) runs on each tile right after
/// its GEMM, while the tile is in cache.
template <typename T>
void matmulImpl(const MemRef<T, 3> &a, const MemRef<T, 3> &b,
                const MemRef<T, 3> &c, bool transposeA, bool transposeB,
                const Epilogue &epilogue) {
  int64_t batch = c.sizes[0], m = c.sizes[1], n = c.sizes[2];
  int64_t aRows = transposeA ? a.sizes[2] : a.sizes[1];
  int64_t k = transposeA ? a.sizes[1] : a.sizes[2];
  int64_t bRows = transposeB ? b.sizes[2] : b.sizes[1];
  int64_t bCols = transposeB ? b.sizes[1] : b.sizes[2];
  if ((a.sizes[0] != batch && a.sizes[0] != 1) ||
      (b.sizes[0] != batch && b.sizes[0] != 1) || aRows != m || bRows != k ||
      bCols != n)
    fatal("estc_matmul: shapes [%lld,%lld,%lld]%s x [%lld,%lld,%lld]%s -> "
          "[%lld,%lld,%lld] do not agree",
          (long long)a.sizes[0], (long long)a.sizes[1], (long long)a.sizes[2],
          transposeA ? "^T" : "", (long long)b.sizes[0], (long long)b.sizes[1],
          (long long)b.sizes[2], transposeB ? "^T" : "", (long long)batch,
          (long long)m, (long long)n);

  View2D<T> cAll{c.data(), m, n, c.strides[1], c.strides[2]};
  if (batch * m * n * k <= kSmallGemm) {
    // Tiny products (an iris-sized layer): one tile each, on this thread.
    for (int64_t i = 0; i < batch; ++i) {
      View2D<T> cTile = cAll;
      cTile.data += i * c.strides[0];
      if constexpr (std::is_same_v<T, float>)
        if (gemmSmallEpilogue(matrixOf(a, i, transposeA),
                              matrixOf(b, i, transposeB), cTile, epilogue))
          continue;
      gemm<T>(matrixOf(a, i, transposeA), matrixOf(b, i, transposeB), cTile,
              false);
      if constexpr (std::is_same_v<T, float>)
        applyEpilogue(cTile, epilogue, 0);
    }
    return;
  }
  // The plan depends on the shapes and on whether oneDNN runs the tiles
  // (a setting of the process), never on the thread count.
  TilePlan plan =
      planTiles(m, n, k, std::is_same_v<T, float> && oneDnnSgemmEnabled());
  int64_t tilesPerBatch = plan.mTiles * plan.nTiles;
  double flopsPerTile =
      2.0 * double(plan.mBlock) * double(plan.nBlock) * double(k);
  // Tasks are claimed in index order, so the edge tiles (narrower or
  // shorter: m or n not a multiple of the block) go last: the last task a
  // thread takes is then a small one, and the others wait less for it at
  // the end of the region. Which tile a task computes does not change what
  // it computes.
  const int64_t fullRows = std::min(plan.mTiles, m / plan.mBlock);
  const int64_t fullCols = std::min(plan.nTiles, n / plan.nBlock);
  auto tileAt = [&](int64_t t, int64_t &row, int64_t &col) {
    if (t < fullRows * fullCols) { // the full tiles
      row = t / fullCols;
      col = t % fullCols;
      return;
    }
    t -= fullRows * fullCols;
    if (fullCols < plan.nTiles && t < fullRows) { // the narrow last column
      row = t;
      col = plan.nTiles - 1;
      return;
    }
    if (fullCols < plan.nTiles)
      t -= fullRows;
    row = plan.mTiles - 1; // the short last row
    col = t;
  };
  parallelFor(batch * tilesPerBatch, flopsPerTile, [&](int64_t task) {
    int64_t i = task / tilesPerBatch, row, col;
    tileAt(task % tilesPerBatch, row, col);
    int64_t r0 = row * plan.mBlock;
    int64_t c0 = col * plan.nBlock;
    int64_t rows = std::min(plan.mBlock, m - r0);
    int64_t cols = std::min(plan.nBlock, n - c0);
    View2D<const T> opA = matrixOf(a, i, transposeA).block(r0, 0, rows, k);
    View2D<const T> opB = matrixOf(b, i, transposeB).block(0, c0, k, cols);
    View2D<T> cTile = cAll;
    cTile.data += i * c.strides[0];
    gemm<T>(opA, opB, cTile.block(r0, c0, rows, cols), false);
    if constexpr (std::is_same_v<T, float>)
      applyEpilogue(cTile.block(r0, c0, rows, cols), epilogue, c0);
  });
}

} // namespace

template <typename T>
void matmul(const MemRef<T, 3> &a, const MemRef<T, 3> &b, const MemRef<T, 3> &c,
            bool transposeA, bool transposeB) {
  matmulImpl<T>(a, b, c, transposeA, transposeB, {});
}

void matmulEpilogue(const MemRef<float, 3> &a, const MemRef<float, 3> &b,
                    const MemRef<float, 3> &c, bool transposeA, bool transposeB,
                    const Epilogue &epilogue) {
  matmulImpl<float>(a, b, c, transposeA, transposeB, epilogue);
}

template void matmul<float>(const MemRef<float, 3> &, const MemRef<float, 3> &,
                            const MemRef<float, 3> &, bool, bool);
template void matmul<double>(const MemRef<double, 3> &,
                             const MemRef<double, 3> &,
                             const MemRef<double, 3> &, bool, bool);

} // namespace estc::rt
