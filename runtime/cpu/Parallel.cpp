//===- runtime/cpu/Parallel.cpp - Thread pool, scratch memory, errors
//--------===//
//
// Built without the kernel ISA flags: this is where the ISA check runs.
//
//===----------------------------------------------------------------------===//
#include "runtime/cpu/Parallel.h"
#include "runtime/cpu/Kernels.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

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
//
// One region at a time: the caller publishes the task and a generation, the
// helpers (threads - 1 of them) and the caller claim task indices from one
// atomic word (generation << 32 | next index), and the caller returns when
// every task has *completed*. It never waits for a helper to start: on a
// machine whose other cores are busy, a helper that is not scheduled in
// time simply finds nothing left to claim, and the region runs at the
// caller's own speed instead of waiting for the helper to be woken (an
// Eigen::ThreadPool and a barrier made a 2-thread region of 16 tiny tasks
// take 24 us there, against 6 us inline). A claim is a compare-and-swap
// that includes the generation, so a late helper can never claim a task of
// a region that has ended. Helpers spin for a while after each region (a
// step runs dozens of regions back to back), then sleep on a condition
// variable until the next.

namespace {

using Clock = std::chrono::steady_clock;

/// How long helpers spin for the next region before they sleep.
constexpr auto kSpin = std::chrono::microseconds(100);
/// A wait at the end of a region this long means a helper lost its core;
/// regions then run inline for kBackoff.
constexpr auto kPreempted = std::chrono::microseconds(300);
constexpr auto kBackoff = std::chrono::milliseconds(20);

/// Set on helper threads and while the caller runs a region's tasks: a
/// parallelFor from there runs inline.
thread_local bool insideRegion = false;

/// A spin-wait step: the first iterations pause, later ones yield the core
/// (about the first 10 us spin: waits inside a step are usually shorter).
void relaxOrYield(int spins) {
  if (spins >= 256) {
    std::this_thread::yield();
    return;
  }
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

class Pool {
public:
  /// `threads` counts the caller: the pool has threads - 1 helpers.
  explicit Pool(int threads) : threads(threads) {
    for (int i = 1; i < threads; ++i)
      helpers.emplace_back([this] { helperLoop(); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stop = true;
    }
    wake.notify_all();
    for (std::thread &t : helpers)
      t.join();
  }

  /// Runs task(i) for i in [0, numTasks) on the helpers and the caller;
  /// false (nothing run) when another thread's region holds the pool.
  bool run(int64_t numTasks, const TaskRef &task) {
    std::unique_lock<std::mutex> owner(region, std::try_to_lock);
    if (!owner.owns_lock())
      return false;
    Clock::time_point start = Clock::now();
    if (start < inlineUntil)
      return false;
    uint64_t gen = (state.load(std::memory_order_relaxed) >> 32) + 1;
    current.store(&task, std::memory_order_relaxed);
    count.store(numTasks, std::memory_order_relaxed);
    done.store(0, std::memory_order_relaxed);
    state.store(gen << 32, std::memory_order_seq_cst);
    if (sleepers.load(std::memory_order_seq_cst) > 0) {
      std::lock_guard<std::mutex> lock(mutex);
      wake.notify_all();
    }
    insideRegion = true;
    work(gen);
    insideRegion = false;
    Clock::time_point worked = Clock::now();
    // A helper still running a task: spin a little, then yield, which
    // lets it run if the two share a core (a busy machine).
    for (int spins = 0; done.load(std::memory_order_acquire) < numTasks;
         ++spins)
      relaxOrYield(spins);
    // A helper that took a task and then lost its core to another process
    // keeps the caller waiting for a scheduler slice (milliseconds): on a
    // machine that busy, 2 threads ran the ConvNet's step slower than 1.
    // Such a wait -- long, and longer than the caller's own share of the
    // work -- sends the regions of the next kBackoff inline. Which thread
    // runs a task never changes its result.
    Clock::duration waited = Clock::now() - worked;
    if (waited > kPreempted && waited > 2 * (worked - start))
      inlineUntil = Clock::now() + kBackoff;
    return true;
  }

  const int threads;

private:
  /// Claims and runs tasks of region `gen` until none is left.
  void work(uint64_t gen) {
    uint64_t s = state.load(std::memory_order_acquire);
    for (;;) {
      if ((s >> 32) != gen)
        return;
      int64_t i = int64_t(s & 0xffffffffu);
      const TaskRef *task = current.load(std::memory_order_relaxed);
      if (i >= count.load(std::memory_order_relaxed))
        return;
      // Fails, and reloads s, if another thread claimed i or the region
      // changed; on success the region is still `gen`, so task and count
      // were read from it.
      if (!state.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel,
                                       std::memory_order_acquire))
        continue;
      (*task)(i);
      done.fetch_add(1, std::memory_order_release);
      s = state.load(std::memory_order_acquire);
    }
  }

  void helperLoop() {
    insideRegion = true;
    uint64_t seen = 0;
    for (;;) {
      auto spinStart = Clock::now();
      uint64_t gen;
      for (int spins = 0;; ++spins) {
        gen = state.load(std::memory_order_acquire) >> 32;
        if (gen != seen)
          break;
        if (spins % 64 == 63 && Clock::now() - spinStart > kSpin) {
          std::unique_lock<std::mutex> lock(mutex);
          sleepers.fetch_add(1, std::memory_order_seq_cst);
          wake.wait(lock, [&] {
            return stop ||
                   (state.load(std::memory_order_seq_cst) >> 32) != seen;
          });
          sleepers.fetch_sub(1, std::memory_order_relaxed);
          if (stop)
            return;
          spinStart = Clock::now();
        }
        relaxOrYield(spins);
      }
      seen = gen;
      work(gen);
    }
  }

  std::vector<std::thread> helpers;
  std::mutex region;             // held by the caller of the running region
  Clock::time_point inlineUntil; // guarded by region
  // The claimed word and the completion count on lines of their own: every
  // claim and every completion moves one of them between cores.
  alignas(64) std::atomic<uint64_t> state{0};
  alignas(64) std::atomic<int64_t> done{0};
  alignas(64) std::atomic<const TaskRef *> current{nullptr};
  std::atomic<int64_t> count{0};
  std::mutex mutex; // guards stop and the helpers' sleep
  std::condition_variable wake;
  std::atomic<int> sleepers{0};
  bool stop = false;
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

} // namespace

void parallelFor(int64_t numTasks, double flopsPerTask, TaskRef task) {
  if (numTasks <= 0)
    return;
  if (numTasks > 1 && !insideRegion &&
      double(numTasks) * flopsPerTask >= kInlineFlops &&
      numTasks < (int64_t(1) << 31)) {
    std::shared_ptr<Pool> p = currentPool();
    if (p->threads > 1 && p->run(numTasks, task))
      return;
  }
  for (int64_t i = 0; i < numTasks; ++i)
    task(i);
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
  if (double(n) * perIteration < 2 * kChunkWork) {
    // One chunk (the count below would be 1): the small loops of a small
    // step, run here without the divisions.
    fn(ctx, 0, n);
    return;
  }
  int64_t chunks = int64_t(std::min(double(std::min(n, kMaxChunks)),
                                    double(n) * perIteration / kChunkWork));
  chunks = std::max<int64_t>(chunks, 1);
  int64_t size = (n + chunks - 1) / chunks;
  chunks = (n + size - 1) / size;
  if (chunks == 1) {
    // One chunk runs here, as parallelFor would run it, without the task.
    fn(ctx, 0, n);
    return;
  }
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
