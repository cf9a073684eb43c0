//===- runtime/Parallel.cpp - Thread pool, scratch memory, errors --------===//
//
// Built without the kernel ISA flags: this is where the ISA check runs.
//
//===----------------------------------------------------------------------===//
#include "runtime/Parallel.h"
#include "runtime/Kernels.h"

#define EIGEN_USE_THREADS
#include <unsupported/Eigen/CXX11/ThreadPool>

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>

namespace estc::rt {

void fatal(const char *fmt, ...) {
  std::fprintf(stderr, "estc runtime: ");
  va_list args;
  va_start(args, fmt);
  std::vfprintf(stderr, fmt, args);
  va_end(args);
  std::fprintf(stderr, "\n");
  std::fflush(stderr);
  std::abort();
}

// --- Thread pool -------------------------------------------------------------

namespace {

/// `threads` counts the caller: the Eigen pool has threads - 1 workers.
struct Pool {
  explicit Pool(int threads)
      : threads(threads),
        eigen(threads > 1 ? std::make_unique<Eigen::ThreadPool>(threads - 1)
                          : nullptr) {}
  int threads;
  std::unique_ptr<Eigen::ThreadPool> eigen;
};

int defaultThreads() {
  if (const char *env = std::getenv("ESTC_NUM_THREADS")) {
    int n = std::atoi(env);
    if (n > 0)
      return n;
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

std::mutex poolMutex;
std::shared_ptr<Pool> pool; // guarded by poolMutex

std::shared_ptr<Pool> currentPool() {
  std::lock_guard<std::mutex> lock(poolMutex);
  if (!pool)
    pool = std::make_shared<Pool>(defaultThreads());
  return pool;
}

/// Below this much work a parallel region costs more than it saves.
constexpr double kInlineFlops = 2e5;

struct Region {
  explicit Region(int64_t numTasks, TaskRef task, int helpers)
      : numTasks(numTasks), task(task), done(helpers) {}
  void work() {
    for (int64_t i;
         (i = next.fetch_add(1, std::memory_order_relaxed)) < numTasks;)
      task(i);
  }
  std::atomic<int64_t> next{0};
  int64_t numTasks;
  TaskRef task;
  Eigen::Barrier done;
};

} // namespace

void parallelFor(int64_t numTasks, double flopsPerTask, TaskRef task) {
  if (numTasks <= 0)
    return;
  std::shared_ptr<Pool> p = currentPool();
  if (numTasks == 1 || p->threads == 1 ||
      double(numTasks) * flopsPerTask < kInlineFlops ||
      p->eigen->CurrentThreadId() != -1) {
    for (int64_t i = 0; i < numTasks; ++i)
      task(i);
    return;
  }
  int helpers = int(std::min<int64_t>(p->threads, numTasks) - 1);
  Region region(numTasks, task, helpers);
  Region *r = &region; // one pointer: fits std::function's inline storage
  for (int h = 0; h < helpers; ++h)
    p->eigen->Schedule([r] {
      r->work();
      r->done.Notify();
    });
  region.work();
  region.done.Wait();
}

// --- Scratch -----------------------------------------------------------------

namespace {

std::atomic<size_t> totalScratchBytes{0};

struct Arena {
  void *ptr[size_t(Scratch::Count)] = {};
  size_t size[size_t(Scratch::Count)] = {};
  ~Arena() {
    for (size_t i = 0; i < size_t(Scratch::Count); ++i) {
      std::free(ptr[i]);
      totalScratchBytes -= size[i];
    }
  }
};

thread_local Arena arena;

} // namespace

void *scratchBytes(Scratch slot, size_t bytes) {
  size_t i = size_t(slot);
  if (bytes > arena.size[i]) {
    // Round up to whole pages, and grow by at least half, so a sequence of
    // slightly larger requests does not reallocate every time.
    size_t want = std::max(bytes, arena.size[i] + arena.size[i] / 2);
    want = (want + 4095) & ~size_t(4095);
    void *fresh = std::aligned_alloc(64, want);
    if (!fresh)
      fatal("out of memory allocating %zu bytes of scratch", want);
    std::free(arena.ptr[i]);
    totalScratchBytes += want - arena.size[i];
    arena.ptr[i] = fresh;
    arena.size[i] = want;
  }
  return arena.ptr[i];
}

// --- ISA check ---------------------------------------------------------------

#if defined(ESTC_KERNEL_ISA_AVX512)
static const char *const kIsa = "avx512";
static bool cpuHasIsa() {
  return __builtin_cpu_supports("avx512f") &&
         __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx2") &&
         __builtin_cpu_supports("fma");
}
#elif defined(ESTC_KERNEL_ISA_AVX2)
static const char *const kIsa = "avx2";
static bool cpuHasIsa() {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#else
static const char *const kIsa = "generic";
static bool cpuHasIsa() { return true; }
#endif

void checkKernelIsa() {
  static const bool ok = cpuHasIsa();
  if (!ok)
    fatal("this CPU lacks the instructions the kernels were compiled for "
          "(%s); rebuild with -DESTC_KERNEL_ISA=generic",
          kIsa);
}

} // namespace estc::rt

using namespace estc::rt;

extern "C" {

void estc_runtime_set_num_threads(int numThreads) {
  auto fresh =
      std::make_shared<Pool>(numThreads > 0 ? numThreads : defaultThreads());
  std::shared_ptr<Pool> old;
  {
    std::lock_guard<std::mutex> lock(poolMutex);
    old = std::move(pool);
    pool = std::move(fresh);
  }
  // `old` is joined here, outside the lock.
}

int estc_runtime_get_num_threads(void) { return currentPool()->threads; }

static std::atomic<size_t> parallelLoopsSplit{0};

void estc_parallel_for(void (*fn)(void *, int64_t, int64_t), void *ctx,
                       int64_t n, int64_t cost) {
  if (n <= 0)
    return;
  // Chunks of about kChunkWork operations (at least one iteration, at most
  // kMaxChunks of them): enough for the pool to balance, few enough that the
  // per-chunk call is noise. A function of (n, cost) only.
  constexpr double kChunkWork = 1 << 15;
  constexpr int64_t kMaxChunks = 256;
  double perIteration = double(std::max<int64_t>(cost, 1));
  int64_t chunks = int64_t(std::min(double(std::min(n, kMaxChunks)),
                                    double(n) * perIteration / kChunkWork));
  chunks = std::max<int64_t>(chunks, 1);
  int64_t size = (n + chunks - 1) / chunks;
  chunks = (n + size - 1) / size;
  if (chunks > 1)
    parallelLoopsSplit.fetch_add(1, std::memory_order_relaxed);
  parallelFor(chunks, perIteration * double(size), [&](int64_t i) {
    int64_t lo = i * size;
    fn(ctx, lo, std::min(n, lo + size));
  });
}

size_t estc_runtime_scratch_bytes(void) { return totalScratchBytes.load(); }

size_t estc_runtime_parallel_loops_split(void) {
  return parallelLoopsSplit.load();
}

const char *estc_runtime_kernel_isa(void) { return kIsa; }

} // extern "C"
