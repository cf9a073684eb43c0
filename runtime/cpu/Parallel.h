//===- runtime/cpu/Parallel.h - Thread pool, scratch memory, errors
//----------===//
//
// Internal to the runtime (not installed for compiled code). No Eigen here:
// kernels include this from translation units built for the kernel ISA.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_RUNTIME_CPU_PARALLEL_H
#define ESTC_RUNTIME_CPU_PARALLEL_H

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace estc::rt {

/// Prints "estc runtime: <message>" on stderr and aborts. For shape errors
/// that compiled code should have ruled out.
[[noreturn]] void fatal(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

/// A non-owning reference to a `void(int64_t)` callable (no allocation).
class TaskRef {
public:
  template <typename F, typename = std::enable_if_t<
                            !std::is_same_v<std::decay_t<F>, TaskRef>>>
  TaskRef(F &&f)
      : obj(const_cast<void *>(static_cast<const void *>(&f))),
        call([](void *o, int64_t i) {
          (*static_cast<std::decay_t<F> *>(o))(i);
        }) {}
  void operator()(int64_t i) const { call(obj, i); }

private:
  void *obj;
  void (*call)(void *, int64_t);
};

/// Runs task(i) for every i in [0, numTasks) on the process-wide pool and
/// returns when all are done; the calling thread takes tasks too. Which thread
/// runs a task is unspecified, so a task's result must depend only on i (this
/// is what makes kernels bit-identical for any thread count: callers split
/// work into tasks from the problem shape alone). Runs inline when there is
/// one thread, one task, little work (numTasks * flopsPerTask), or when called
/// from a pool thread.
void parallelFor(int64_t numTasks, double flopsPerTask, TaskRef task);

/// Per-thread scratch buffers, one per slot, 64-byte aligned, that only grow
/// (so steady-state calls do not allocate). A slot's contents are garbage on
/// return. Shared* slots belong to the thread that called the kernel and are
/// filled before / read after parallelFor; the others are used inside tasks.
enum class Scratch {
  GemmPackA, // Eigen's packed lhs panel
  GemmPackB, // Eigen's packed rhs panel
  GemmLhs,   // a gemm operand copied because neither stride was 1
  GemmRhs,
  GemmResult,       // a gemm result computed contiguously, then copied out
  PixelTile,        // conv: a tile of pixels gathered or to be scattered
  ConvPointers,     // conv: the pixels of a task, as pointers
  SharedFilter,     // conv: the filter (and bias) repacked for the kernel
  SharedTaps,       // conv: offsets of the filter taps in the input
  SharedPadded,     // conv: a zero-padded copy of the input or grad_input
  SharedPartials,   // conv backprop filter: per-group partial sums
  WinogradInput,    // conv (Winograd): transformed input rows
  WinogradProducts, // conv (Winograd): per-point products
  Count
};
void *scratchBytes(Scratch slot, size_t bytes);
template <typename T> T *scratch(Scratch slot, size_t count) {
  return static_cast<T *>(scratchBytes(slot, count * sizeof(T)));
}

/// Throws the process out with one line when the CPU lacks the instructions
/// the kernels were compiled for (ESTC_KERNEL_ISA). Cheap after the first call.
void checkKernelIsa();

} // namespace estc::rt

#endif // ESTC_RUNTIME_CPU_PARALLEL_H
