//===- runtime/Collective.cpp - Collectives of compiled code --------------===//
//
// The C entry points compiled code calls for data-parallel training, over
// whatever rt::Collective the process installed (runtime/Collective.h).
// Without one, or with a group of one, each is the identity.
//
//===----------------------------------------------------------------------===//
#include "runtime/Collective.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

namespace estc::rt {

Collective::~Collective() = default;

namespace {

/// The installed group, its first error and its counters. The error is
/// written once (under the mutex) and then only read.
struct Slot {
  std::atomic<Collective *> group{nullptr};
  std::atomic<bool> failed{false};
  std::mutex mutex;
  std::string error;
  CollectiveStats stats;
};

/// The process's slot, unless this thread installed its own.
thread_local std::unique_ptr<Slot> threadSlot;
Slot &slot() {
  static Slot process;
  return threadSlot ? *threadSlot : process;
}

/// Times one collective of compiled code and records its failure; a group
/// that failed once is not called again (its peers are gone or out of
/// step), so every later collective is a no-op until setCollective().
template <typename Fn> bool guarded(size_t bytes, Fn &&fn) {
  Slot &s = slot();
  Collective *c = s.group.load(std::memory_order_acquire);
  if (!c || s.failed.load(std::memory_order_acquire))
    return false;
  auto start = std::chrono::steady_clock::now();
  try {
    fn(*c);
  } catch (const std::exception &e) {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.failed.load(std::memory_order_relaxed)) {
      s.error = e.what();
      s.failed.store(true, std::memory_order_release);
    }
    return false;
  }
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.stats.calls += 1;
  s.stats.bytes += static_cast<int64_t>(bytes);
  s.stats.seconds += seconds;
  return true;
}

int64_t groupSize() {
  Collective *c = slot().group.load(std::memory_order_acquire);
  return c ? c->size() : 1;
}

template <typename T> void allReduceMean(MemRef<T, 1> *buf) {
  int64_t n = buf->sizes[0];
  if (n <= 0 || groupSize() == 1)
    return;
  std::vector<T> copy;
  T *data = buf->data();
  if (!isContiguous(*buf)) {
    copy.resize(static_cast<size_t>(n));
    copyView(*buf, copy.data(), true);
    data = copy.data();
  }
  bool ok = guarded(sizeof(T) * static_cast<size_t>(n), [&](Collective &c) {
    c.allReduceSum(data, static_cast<size_t>(n));
    T scale = static_cast<T>(c.size());
    for (int64_t i = 0; i < n; ++i)
      data[i] /= scale;
  });
  if (ok && !copy.empty())
    copyView(*buf, copy.data(), false);
}

/// out := every replica's rows of `in`, in rank order (the mean's
/// division applied when `mean`), then, up to out's rows, padding: the
/// first gathered row when `padWithFirst` (indices), else zeros. On a
/// failed or absent group, `in` is copied to the front of `out`: the step's
/// results are then discarded (CompiledModel throws the recorded error).
template <typename T, int N>
void allGather(MemRef<T, N> *in, MemRef<T, N> *out, bool mean,
               bool padWithFirst) {
  int64_t rowElements = 1;
  for (int d = 1; d < N; ++d)
    rowElements *= in->sizes[d];
  int64_t rows = in->sizes[0], outRows = out->sizes[0];
  std::vector<T> src(static_cast<size_t>(rows * rowElements));
  copyView(*in, src.data(), true);
  std::vector<T> dst(static_cast<size_t>(outRows * rowElements), T(0));
  bool ok = false;
  if (groupSize() > 1) {
    ok = guarded(src.size() * sizeof(T), [&](Collective &c) {
      // Every replica's rows and room: a gather that does not fit one
      // replica fails on all of them alike (one that went on alone would
      // wait in allGatherV for the others until the engine's timeout).
      size_t n = static_cast<size_t>(c.size());
      std::vector<int64_t> counts(2 * n, 0);
      counts[static_cast<size_t>(c.rank())] = rows;
      counts[n + static_cast<size_t>(c.rank())] = outRows;
      c.allReduceSum(counts.data(), counts.size());
      int64_t total = 0;
      for (size_t r = 0; r < n; ++r)
        total += counts[r];
      for (size_t r = 0; r < n; ++r)
        if (total > counts[n + r])
          throw CollectiveError(
              "all_gather: the replicas' sparse gradients have " +
              std::to_string(total) + " rows in all, more than the " +
              std::to_string(counts[n + r]) + " (replicas x its own " +
              std::to_string(counts[r]) + ") replica " + std::to_string(r) +
              "'s step holds: the replicas' sparse inputs differ in size");
      counts.resize(n);
      std::vector<size_t> bytes(counts.size());
      for (size_t r = 0; r < counts.size(); ++r)
        bytes[r] = static_cast<size_t>(counts[r] * rowElements) * sizeof(T);
      c.allGatherV(src.data(), dst.data(), bytes.data());
      if (mean) {
        T scale = static_cast<T>(c.size());
        for (T &v : dst)
          v /= scale;
      }
      if (padWithFirst && total > 0)
        for (size_t i = static_cast<size_t>(total * rowElements);
             i < dst.size(); ++i)
          dst[i] = dst[i % static_cast<size_t>(rowElements)];
    });
  }
  if (!ok)
    std::copy_n(src.begin(), std::min(src.size(), dst.size()), dst.begin());
  copyView(*out, dst.data(), false);
}

} // namespace

void setCollective(Collective *c) {
  Slot &s = slot();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.group.store(c, std::memory_order_release);
  s.error.clear();
  s.failed.store(false, std::memory_order_release);
  if (c) // the counters stay readable after the group is uninstalled
    s.stats = {};
}

void setThreadCollective(Collective *c) {
  if (!c) {
    threadSlot.reset();
    return;
  }
  threadSlot = std::make_unique<Slot>();
  threadSlot->group.store(c, std::memory_order_release);
}

Collective *collective() {
  return slot().group.load(std::memory_order_acquire);
}

CollectiveStats collectiveStats() {
  Slot &s = slot();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.stats;
}

void recordCollective(double seconds, int64_t bytes) {
  Slot &s = slot();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.stats.calls += 1;
  s.stats.bytes += bytes;
  s.stats.seconds += seconds;
}

void resetCollectiveStats() {
  Slot &s = slot();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.stats = {};
}

} // namespace estc::rt

using namespace estc::rt;

extern "C" {

int64_t estc_collective_size(void) { return groupSize(); }

void _mlir_ciface_estc_all_reduce_mean_f32(MemRef<float, 1> *buf) {
  allReduceMean(buf);
}

void _mlir_ciface_estc_all_reduce_mean_f64(MemRef<double, 1> *buf) {
  allReduceMean(buf);
}

void _mlir_ciface_estc_all_gather_i64(MemRef<int64_t, 1> *in,
                                      MemRef<int64_t, 1> *out) {
  allGather(in, out, /*mean=*/false, /*padWithFirst=*/true);
}

void _mlir_ciface_estc_all_gather_f32(MemRef<float, 2> *in,
                                      MemRef<float, 2> *out, int64_t mean) {
  allGather(in, out, mean != 0, /*padWithFirst=*/false);
}

void _mlir_ciface_estc_all_gather_f64(MemRef<double, 2> *in,
                                      MemRef<double, 2> *out, int64_t mean) {
  allGather(in, out, mean != 0, /*padWithFirst=*/false);
}

const char *estc_collective_error(void) {
  Slot &s = slot();
  if (!s.failed.load(std::memory_order_acquire))
    return nullptr;
  return s.error.c_str();
}

} // extern "C"
