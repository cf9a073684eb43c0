//===- KernelCalls.h - Calls of the estc runtime kernels --------*- C++ -*-===//
//
// What est-linalg-to-runtime-calls and est-fuse-epilogues share: kernel
// declarations, the kernels' argument views (runtime/README.md) and the
// alias queries both make on buffers.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_COMPILER_CODEGEN_KERNELCALLS_H
#define ESTC_COMPILER_CODEGEN_KERNELCALLS_H

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir {
namespace est {
namespace kernels {

/// `memref<?x..x?xT, strided<[?, ..], offset: ?>>`: the kernels' argument type.
MemRefType kernelArgType(Type element, int64_t rank);

/// Declares `name(memrefs..., i64 x numScalars)` with the C interface, unless
/// the module has it: at the end of the module, or before `before`.
FlatSymbolRefAttr declareKernel(ModuleOp module, StringRef name,
                                ArrayRef<Type> memrefs, unsigned numScalars,
                                Operation *before = nullptr);

/// Views `buffer` as a rank-`rank` kernel argument: leading unit dims added
/// with memref.expand_shape, then cast to the fully dynamic strided type.
Value asKernelArg(OpBuilder &b, Location loc, Value buffer, int64_t rank);
/// The buffer a kernel call argument `arg` views, when `arg` is such a view
/// (asKernelArg's cast, of its expand_shape or of the buffer) made only for
/// kernel calls; null otherwise.
Value kernelArgSource(Value arg);

/// Whether `op` or an op nested in it has one of `values` as an operand.
bool usesAny(Operation *op, ArrayRef<Value> values);
/// Ops strictly between `from` and `to` (same block) that use `value` or a
/// view of it.
bool usedBetween(Value value, Operation *from, Operation *to);

} // namespace kernels
} // namespace est
} // namespace mlir

#endif // ESTC_COMPILER_CODEGEN_KERNELCALLS_H
