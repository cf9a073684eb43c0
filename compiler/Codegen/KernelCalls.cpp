//===- KernelCalls.cpp - Calls of the estc runtime kernels ----------------===//

#include "compiler/Codegen/KernelCalls.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir {
namespace est {
namespace kernels {

MemRefType kernelArgType(Type element, int64_t rank) {
  SmallVector<int64_t> shape(rank, ShapedType::kDynamic);
  SmallVector<int64_t> strides(rank, ShapedType::kDynamic);
  auto layout = StridedLayoutAttr::get(element.getContext(),
                                       ShapedType::kDynamic, strides);
  return MemRefType::get(shape, element, layout);
}

FlatSymbolRefAttr declareKernel(ModuleOp module, StringRef name,
                                ArrayRef<Type> memrefs, unsigned numScalars,
                                Operation *before) {
  MLIRContext *ctx = module.getContext();
  if (!module.lookupSymbol(name)) {
    SmallVector<Type> inputs(memrefs.begin(), memrefs.end());
    inputs.append(numScalars, IntegerType::get(ctx, 64));
    OpBuilder b =
        before ? OpBuilder(before) : OpBuilder::atBlockEnd(module.getBody());
    auto decl = func::FuncOp::create(b, module.getLoc(), name,
                                     FunctionType::get(ctx, inputs, {}));
    decl.setPrivate();
    decl->setAttr("llvm.emit_c_interface", UnitAttr::get(ctx));
  }
  return FlatSymbolRefAttr::get(ctx, name);
}

Value asKernelArg(OpBuilder &b, Location loc, Value buffer, int64_t rank) {
  auto type = cast<MemRefType>(buffer.getType());
  if (type.getRank() < rank) {
    int64_t extra = rank - type.getRank();
    SmallVector<int64_t> shape(extra, 1);
    llvm::append_range(shape, type.getShape());
    SmallVector<ReassociationIndices> reassociation;
    ReassociationIndices first;
    for (int64_t i = 0; i <= extra; ++i)
      first.push_back(i);
    reassociation.push_back(first);
    for (int64_t i = extra + 1; i < rank; ++i)
      reassociation.push_back({i});
    SmallVector<OpFoldResult> outputShape(extra, b.getIndexAttr(1));
    for (int64_t i = 0; i < type.getRank(); ++i)
      outputShape.push_back(
          type.isDynamicDim(i)
              ? OpFoldResult(
                    memref::DimOp::create(b, loc, buffer, i).getResult())
              : OpFoldResult(b.getIndexAttr(type.getDimSize(i))));
    FailureOr<MemRefType> expanded =
        memref::ExpandShapeOp::computeExpandedType(type, shape, reassociation);
    assert(succeeded(expanded) && "leading unit dims always expand");
    buffer = memref::ExpandShapeOp::create(b, loc, *expanded, buffer,
                                           reassociation, outputShape);
  }
  return memref::CastOp::create(
      b, loc, kernelArgType(type.getElementType(), rank), buffer);
}

/// Whether every user of `v` is a call of an estc kernel.
static bool onlyKernelCallsUse(Value v) {
  return !v.use_empty() && llvm::all_of(v.getUsers(), [](Operation *user) {
    auto call = dyn_cast<func::CallOp>(user);
    return call && call.getCallee().starts_with("estc_");
  });
}

Value kernelArgSource(Value arg) {
  auto cast = arg.getDefiningOp<memref::CastOp>();
  if (!cast || !onlyKernelCallsUse(cast.getResult()))
    return nullptr;
  auto type = cast.getType();
  if (type != kernelArgType(type.getElementType(), type.getRank()))
    return nullptr;
  Value source = cast.getSource();
  // asKernelArg's expand_shape: leading unit dims in its first group.
  auto expand = source.getDefiningOp<memref::ExpandShapeOp>();
  if (!expand || !expand->hasOneUse())
    return source;
  MemRefType from = expand.getSrcType(), to = expand.getResultType();
  int64_t extra = to.getRank() - from.getRank();
  SmallVector<ReassociationIndices> groups = expand.getReassociationIndices();
  if (extra <= 0 || groups.empty() ||
      groups.front().size() != static_cast<size_t>(extra + 1) ||
      llvm::any_of(to.getShape().take_front(extra),
                   [](int64_t d) { return d != 1; }))
    return source;
  for (size_t i = 1; i < groups.size(); ++i)
    if (groups[i].size() != 1)
      return source;
  return expand.getSrc();
}

bool usesAny(Operation *op, ArrayRef<Value> values) {
  return op
      ->walk([&](Operation *nested) {
        for (Value operand : nested->getOperands())
          if (llvm::is_contained(values, operand))
            return WalkResult::interrupt();
        return WalkResult::advance();
      })
      .wasInterrupted();
}

bool usedBetween(Value value, Operation *from, Operation *to) {
  if (from->getBlock() != to->getBlock() || !from->isBeforeInBlock(to))
    return true;
  SmallVector<Value> aliases = {value};
  for (unsigned i = 0; i < aliases.size(); ++i)
    for (Operation *user : aliases[i].getUsers())
      if (isa<ViewLikeOpInterface>(user))
        for (Value result : user->getResults())
          aliases.push_back(result);
  for (Operation *op = from->getNextNode(); op != to; op = op->getNextNode()) {
    if (isMemoryEffectFree(op))
      continue;
    if (usesAny(op, aliases))
      return true;
  }
  return false;
}

} // namespace kernels
} // namespace est
} // namespace mlir
