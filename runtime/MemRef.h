//===- runtime/MemRef.h - MLIR memref descriptors without MLIR -----------===//
//
// The layout compiled code passes buffers in. With `llvm.emit_c_interface`, a
// call to `@estc_matmul_f32(memref<...>, ...)` becomes a call to
// `_mlir_ciface_estc_matmul_f32(Desc *, ...)` where each descriptor is laid out
// exactly as MLIR's `StridedMemRefType<T, N>` (mlir/ExecutionEngine/
// CRunnerUtils.h). This header repeats that layout so the runtime needs no
// MLIR include.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_RUNTIME_MEMREF_H
#define ESTC_RUNTIME_MEMREF_H

#include <cstddef>
#include <cstdint>

namespace estc::rt {

/// A strided view of an N-d buffer: element (i0, ..., iN-1) lives at
/// `aligned[offset + i0 * strides[0] + ... + iN-1 * strides[N-1]]`.
/// Strides are in elements, not bytes. `allocated` is what was malloc'ed (the
/// runtime never frees or reads through it).
template <typename T, int N> struct MemRef {
  T *allocated;
  T *aligned;
  int64_t offset;
  int64_t sizes[N];
  int64_t strides[N];

  T *data() const { return aligned + offset; }
};

// The layout is part of the ABI: keep it in step with MLIR's.
static_assert(sizeof(MemRef<float, 3>) == 8 * (3 + 2 * 3),
              "MemRef<T, 3> must match StridedMemRefType<T, 3>");
using MemRef4f = MemRef<float, 4>;
static_assert(offsetof(MemRef4f, sizes) == 24 &&
                  offsetof(MemRef4f, strides) == 56,
              "MemRef<T, 4> must match StridedMemRefType<T, 4>");

/// Whether `m` is row-major contiguous (dimensions of size 1 have any
/// stride).
template <typename T, int N> bool isContiguous(const MemRef<T, N> &m) {
  int64_t stride = 1;
  for (int d = N - 1; d >= 0; --d) {
    if (m.sizes[d] != 1 && m.strides[d] != stride)
      return false;
    stride *= m.sizes[d];
  }
  return true;
}

/// The number of elements `m` views.
template <typename T, int N> int64_t elements(const MemRef<T, N> &m) {
  int64_t n = 1;
  for (int d = 0; d < N; ++d)
    n *= m.sizes[d];
  return n;
}

/// The elements of a rank-N view in row-major order, gathered into `flat`
/// (toFlat) or scattered back from it: compiled code usually passes
/// contiguous buffers, but the ABI allows any strides.
template <typename T, int N>
void copyView(const MemRef<T, N> &m, T *flat, bool toFlat) {
  int64_t n = elements(m);
  for (int64_t i = 0; i < n; ++i) {
    int64_t rest = i, at = m.offset;
    for (int d = N - 1; d >= 0; --d) {
      at += (rest % m.sizes[d]) * m.strides[d];
      rest /= m.sizes[d];
    }
    if (toFlat)
      flat[i] = m.aligned[at];
    else
      m.aligned[at] = flat[i];
  }
}

/// Fills `m` as an owned-elsewhere row-major (contiguous) view of `data`.
template <typename T, int N>
MemRef<T, N> makeRowMajor(T *data, const int64_t (&sizes)[N]) {
  MemRef<T, N> m;
  m.allocated = data;
  m.aligned = data;
  m.offset = 0;
  int64_t stride = 1;
  for (int d = N - 1; d >= 0; --d) {
    m.sizes[d] = sizes[d];
    m.strides[d] = stride;
    stride *= sizes[d];
  }
  return m;
}

} // namespace estc::rt

#endif // ESTC_RUNTIME_MEMREF_H
