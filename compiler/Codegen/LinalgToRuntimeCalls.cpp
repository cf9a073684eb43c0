//===- LinalgToRuntimeCalls.cpp - est-linalg-to-runtime-calls -------------===//
//
// After bufferization, the heavy linalg ops become calls into EstcRuntime
// (runtime/README.md), as XLA's CPU backend calls Eigen:
//
//   linalg.matmul / batch_matmul (f32, f64)  -> estc_matmul_f32 / _f64
//   linalg.conv_2d_nhwc_hwcf (f32)          -> estc_conv2d_nhwc_hwio_f32
//   linalg.generic {library_call = "estc_conv2d_backprop_input_f32" or
//                   "estc_conv2d_backprop_filter_f32"} (convert-est-to-linalg's
//                   f32 conv backprops) -> that kernel
//
// Kernels overwrite their output, so the zero fill that initializes a
// contraction is dropped; another initial value is added after the call.
// A transpose feeding a matmul operand becomes the kernel's transpose flag,
// and a zero pad feeding a convolution becomes pad_top / pad_left.
// An elementwise act(C + bias) epilogue after an f32 kernel is fused into it
// (estc_matmul_bias_act_f32 / estc_conv2d_nhwc_hwio_bias_act_f32), so the
// output is written once, while hot in cache (see fuseEpilogue).
//
//===----------------------------------------------------------------------===//

#include "compiler/Codegen/Passes.h"

#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

namespace mlir {
namespace est {
#define GEN_PASS_DEF_ESTLINALGTORUNTIMECALLS
#include "compiler/Codegen/Passes.h.inc"
} // namespace est
} // namespace mlir

using namespace mlir;

namespace {

/// `memref<?x..x?xT, strided<[?, ..], offset: ?>>`: the kernels' argument type.
MemRefType kernelArgType(Type element, int64_t rank) {
  SmallVector<int64_t> shape(rank, ShapedType::kDynamic);
  SmallVector<int64_t> strides(rank, ShapedType::kDynamic);
  auto layout = StridedLayoutAttr::get(element.getContext(),
                                       ShapedType::kDynamic, strides);
  return MemRefType::get(shape, element, layout);
}

/// Declares `name(memrefs..., i64 x numScalars)` with the C interface.
FlatSymbolRefAttr declareKernel(ModuleOp module, StringRef name,
                                ArrayRef<Type> memrefs, unsigned numScalars) {
  MLIRContext *ctx = module.getContext();
  if (!module.lookupSymbol(name)) {
    SmallVector<Type> inputs(memrefs.begin(), memrefs.end());
    inputs.append(numScalars, IntegerType::get(ctx, 64));
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    auto decl = func::FuncOp::create(b, module.getLoc(), name,
                                     FunctionType::get(ctx, inputs, {}));
    decl.setPrivate();
    decl->setAttr("llvm.emit_c_interface", UnitAttr::get(ctx));
  }
  return FlatSymbolRefAttr::get(ctx, name);
}

/// Views `buffer` as a rank-`rank` kernel argument: leading unit dims added
/// with memref.expand_shape, then cast to the fully dynamic strided type.
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

bool isZero(Value value) {
  return matchPattern(value, m_AnyZeroFloat()) || matchPattern(value, m_Zero());
}

/// Whether `op` writes zero into every element of its only output: a
/// linalg.fill of zero, or a linalg.map without inputs yielding zero.
bool isZeroFill(Operation *op, Value buffer) {
  if (auto fill = dyn_cast<linalg::FillOp>(op))
    return fill.getOutputs()[0] == buffer && isZero(fill.getInputs()[0]);
  if (auto map = dyn_cast<linalg::MapOp>(op)) {
    if (!map.getInputs().empty() || map.getInit() != buffer)
      return false;
    auto yield = cast<linalg::YieldOp>(map.getMapper().front().getTerminator());
    return yield.getNumOperands() == 1 &&
           yield.getOperand(0).getParentRegion() != &map.getMapper() &&
           isZero(yield.getOperand(0));
  }
  return false;
}

/// Whether `op` or an op nested in it has one of `values` as an operand.
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

/// Ops strictly between `from` and `to` (same block) that use `value` or a
/// view of it.
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

/// Finds the zero fill that last wrote `output` before `op`, with nothing
/// in between touching it.
Operation *findZeroInit(Operation *op, Value output) {
  for (Operation *prev = op->getPrevNode(); prev; prev = prev->getPrevNode()) {
    if (isZeroFill(prev, output))
      return prev;
    // A copy of a zero-filled buffer (one zero init shared by several ops).
    if (auto copy = dyn_cast<memref::CopyOp>(prev);
        copy && copy.getTarget() == output &&
        findZeroInit(copy, copy.getSource()))
      return copy;
    if (isMemoryEffectFree(prev))
      continue;
    if (usesAny(prev, {output}))
      return nullptr;
  }
  return nullptr;
}

/// If `operand` is a buffer written only by a full transpose of the last
/// two dims (and read only by `op`), returns the transpose's input.
linalg::TransposeOp transposeFeeding(Value operand, Operation *op) {
  auto alloc = operand.getDefiningOp<memref::AllocOp>();
  if (!alloc)
    return nullptr;
  linalg::TransposeOp transpose;
  for (Operation *user : alloc->getUsers()) {
    if (user == op)
      continue;
    auto t = dyn_cast<linalg::TransposeOp>(user);
    if (!t || t.getInit() != operand || transpose)
      return nullptr;
    transpose = t;
  }
  if (!transpose)
    return nullptr;
  ArrayRef<int64_t> perm = transpose.getPermutation();
  int64_t rank = perm.size();
  for (int64_t i = 0; i + 2 < rank; ++i)
    if (perm[i] != i)
      return nullptr;
  if (rank < 2 || perm[rank - 2] != rank - 1 || perm[rank - 1] != rank - 2)
    return nullptr;
  if (usedBetween(transpose.getInput(), transpose, op))
    return nullptr;
  return transpose;
}

struct EstLinalgToRuntimeCalls
    : public mlir::est::impl::EstLinalgToRuntimeCallsBase<
          EstLinalgToRuntimeCalls> {
  void runOnOperation() override;
};

/// Emits the kernel call writing `output`: drops a zero fill before `op`,
/// or computes into a temporary and adds it to the initial value. Returns
/// the call when it writes `output` itself (no temporary).
func::CallOp emitKernelCall(OpBuilder &b, Operation *op, ModuleOp module,
                            StringRef kernel, ArrayRef<Value> inputs,
                            Value output, int64_t rank,
                            ArrayRef<int64_t> scalars) {
  Location loc = op->getLoc();
  b.setInsertionPoint(op);
  Value target = output;
  bool accumulate = false;
  if (Operation *fill = findZeroInit(op, output)) {
    fill->erase();
  } else {
    auto type = cast<MemRefType>(output.getType());
    SmallVector<Value> dynamicSizes;
    for (int64_t i = 0; i < type.getRank(); ++i)
      if (type.isDynamicDim(i))
        dynamicSizes.push_back(memref::DimOp::create(b, loc, output, i));
    target = memref::AllocOp::create(
        b, loc, MemRefType::get(type.getShape(), type.getElementType()),
        dynamicSizes);
    accumulate = true;
  }
  SmallVector<Value> args;
  SmallVector<Type> argTypes;
  SmallVector<Value> buffers(inputs.begin(), inputs.end());
  buffers.push_back(target);
  for (Value buffer : buffers) {
    args.push_back(asKernelArg(b, loc, buffer, rank));
    argTypes.push_back(args.back().getType());
  }
  for (int64_t scalar : scalars)
    args.push_back(arith::ConstantIntOp::create(b, loc, scalar, 64));
  FlatSymbolRefAttr callee =
      declareKernel(module, kernel, argTypes, scalars.size());
  auto call = func::CallOp::create(b, loc, callee, TypeRange(), args);
  if (accumulate) {
    auto type = cast<MemRefType>(output.getType());
    AffineMap identity = b.getMultiDimIdentityMap(type.getRank());
    SmallVector<utils::IteratorType> iterators(type.getRank(),
                                               utils::IteratorType::parallel);
    bool isFloat = isa<FloatType>(type.getElementType());
    linalg::GenericOp::create(
        b, loc, TypeRange(), ValueRange{target}, ValueRange{output},
        ArrayRef<AffineMap>{identity, identity}, iterators,
        [&](OpBuilder &nb, Location nloc, ValueRange values) {
          Value sum =
              isFloat ? arith::AddFOp::create(nb, nloc, values[1], values[0])
                            .getResult()
                      : arith::AddIOp::create(nb, nloc, values[1], values[0])
                            .getResult();
          linalg::YieldOp::create(nb, nloc, sum);
        });
  }
  op->erase();
  return accumulate ? nullptr : call;
}

//===----------------------------------------------------------------------===//
// Epilogue fusion: act(C + bias) into the kernel call that writes C.
//===----------------------------------------------------------------------===//

/// The buffer a view chain starts from.
Value rootOf(Value v) {
  while (auto view = v.getDefiningOp<ViewLikeOpInterface>())
    v = view.getViewSource();
  return v;
}

/// `value` and every view of it.
SmallVector<Value> withViews(Value value) {
  SmallVector<Value> all = {value};
  for (unsigned i = 0; i < all.size(); ++i)
    for (Operation *user : all[i].getUsers())
      if (isa<ViewLikeOpInterface>(user))
        llvm::append_range(all, user->getResults());
  return all;
}

/// Whether an op strictly between `from` and `to` (same block) may write
/// the buffer `value` views.
bool writtenBetween(Value value, Operation *from, Operation *to) {
  if (from->getBlock() != to->getBlock() || !from->isBeforeInBlock(to))
    return true;
  SmallVector<Value> aliases = withViews(rootOf(value));
  for (Operation *op = from->getNextNode(); op != to; op = op->getNextNode()) {
    if (isMemoryEffectFree(op) || !usesAny(op, aliases))
      continue;
    auto effects = dyn_cast<MemoryEffectOpInterface>(op);
    if (!effects || (op->getNumRegions() != 0 && !isa<linalg::LinalgOp>(op)))
      return true;
    SmallVector<MemoryEffects::EffectInstance> instances;
    effects.getEffects(instances);
    for (const MemoryEffects::EffectInstance &e : instances)
      if (!isa<MemoryEffects::Read>(e.getEffect()) &&
          (!e.getValue() || llvm::is_contained(aliases, e.getValue())))
        return true;
  }
  return false;
}

/// Whether `v` is the float constant `x` (+0 distinct from -0).
bool isFloatConstant(Value v, double x) {
  FloatAttr attr;
  if (!matchPattern(v, m_Constant(&attr)))
    return false;
  APFloat value = attr.getValue();
  bool lost;
  APFloat want(x);
  want.convert(value.getSemantics(), APFloat::rmNearestTiesToEven, &lost);
  return value.bitwiseIsEqual(want);
}

/// If `v` is `op(x, constant)` or `op(constant, x)`, returns x.
template <typename OpTy> Value stripConstantOperand(Value v, double constant) {
  auto op = v.getDefiningOp<OpTy>();
  if (!op)
    return nullptr;
  if (isFloatConstant(op.getRhs(), constant))
    return op.getLhs();
  if (isFloatConstant(op.getLhs(), constant))
    return op.getRhs();
  return nullptr;
}

/// Whether `v` is `addf(c, bias)` or `addf(bias, c)`.
bool isAddOf(Value v, Value c, Value bias) {
  auto add = v.getDefiningOp<arith::AddFOp>();
  return add && ((add.getLhs() == c && add.getRhs() == bias) ||
                 (add.getLhs() == bias && add.getRhs() == c));
}

/// The activation code of the kernels (0 none, 1 relu, 2 relu6) when `body`
/// yields act(addf(c, bias)) and computes nothing else.
std::optional<int64_t> matchEpilogueBody(Block &body, Value c, Value bias) {
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  if (yield.getNumOperands() != 1)
    return std::nullopt;
  Value v = yield.getOperand(0);
  int64_t activation = 0;
  unsigned expectedOps = 2; // addf, yield
  if (Value x = stripConstantOperand<arith::MinimumFOp>(v, 6.0)) {
    if (Value y = stripConstantOperand<arith::MaximumFOp>(x, 0.0)) {
      v = y;
      activation = 2;
      expectedOps += 2;
    } else {
      return std::nullopt;
    }
  } else if (Value y = stripConstantOperand<arith::MaximumFOp>(v, 0.0)) {
    v = y;
    activation = 1;
    expectedOps += 1;
  }
  if (!isAddOf(v, c, bias))
    return std::nullopt;
  unsigned numOps = 0;
  for (Operation &op : body)
    if (!isa<arith::ConstantOp>(op))
      ++numOps;
  if (numOps != expectedOps)
    return std::nullopt;
  return activation;
}

/// Whether `map` reads a bias along the last of its loop dims:
/// (d0..dn) -> (dn).
bool isLastDimBroadcast(AffineMap map) {
  return map.getNumResults() == 1 && map.getNumSymbols() == 0 &&
         map.getResult(0) ==
             getAffineDimExpr(map.getNumDims() - 1, map.getContext());
}

/// A 1-D f32 buffer.
bool isBiasBuffer(Value v) {
  auto type = dyn_cast<MemRefType>(v.getType());
  return type && type.getRank() == 1 && type.getElementType().isF32();
}

/// Whether `v` is available at `op`.
bool availableAt(Value v, Operation *op, DominanceInfo &dominance) {
  return dominance.properlyDominates(v, op);
}

/// A generic that is a candidate epilogue of C: buffers, all loops parallel
/// and as many as C's dims.
bool isElementwiseOn(linalg::GenericOp g, Value c) {
  return g.hasPureBufferSemantics() && g.getNumDpsInits() == 1 &&
         g.getNumParallelLoops() == g.getNumLoops() &&
         g.getNumLoops() == uint64_t(cast<MemRefType>(c.getType()).getRank());
}

/// Whether `op` (after the fusion point) only reads the buffers in `aliases`.
/// Calls of estc_* kernels write their operand 2 and read the others.
bool onlyReads(Operation *op, ArrayRef<Value> aliases) {
  if (isMemoryEffectFree(op) || !usesAny(op, aliases))
    return true;
  if (auto call = dyn_cast<func::CallOp>(op)) {
    return call.getCallee().starts_with("estc_") &&
           (call.getNumOperands() < 3 ||
            !llvm::is_contained(aliases, call.getOperand(2)));
  }
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects || (op->getNumRegions() != 0 && !isa<linalg::LinalgOp>(op)))
    return false;
  SmallVector<MemoryEffects::EffectInstance> instances;
  effects.getEffects(instances);
  return llvm::all_of(instances, [&](const MemoryEffects::EffectInstance &e) {
    return isa<MemoryEffects::Read>(e.getEffect()) ||
           (e.getValue() && !llvm::is_contained(aliases, e.getValue()));
  });
}

/// Makes the ops after `point` read buffer `to` where they read `from` (or a
/// view of it, rebuilt on `to` after `point`), when they all only read it:
/// `from` then need not hold the value `point` wrote. Both are allocs of
/// the same type. Returns false, changing nothing, when some later op may
/// write `from` or uses it inside a region.
bool redirectLaterReads(Value from, Value to, Operation *point) {
  Block *block = point->getBlock();
  auto isLater = [&](Operation *top) {
    return top != point && !top->isBeforeInBlock(point);
  };
  SmallVector<Value> aliases = withViews(from);
  for (Value alias : aliases)
    for (Operation *user : alias.getUsers()) {
      Operation *top = block->findAncestorOpInBlock(*user);
      if (!top)
        return false;
      if (!isLater(top) || isa<ViewLikeOpInterface>(user))
        continue;
      if (top != user || !onlyReads(user, aliases))
        return false;
    }
  // The same view chain on `to`: views made before `point` are rebuilt
  // right after it, later ones right after themselves.
  OpBuilder afterPoint(point->getContext());
  afterPoint.setInsertionPointAfter(point);
  IRMapping views;
  views.map(from, to);
  std::function<Value(Value)> viewOnTo = [&](Value alias) -> Value {
    if (Value mapped = views.lookupOrNull(alias))
      return mapped;
    Operation *view = alias.getDefiningOp();
    viewOnTo(cast<ViewLikeOpInterface>(view).getViewSource());
    if (isLater(view)) {
      OpBuilder b(view->getContext());
      b.setInsertionPointAfter(view);
      b.clone(*view, views);
    } else {
      afterPoint.clone(*view, views);
    }
    return views.lookup(alias);
  };
  for (Value alias : aliases)
    for (OpOperand &use : llvm::make_early_inc_range(alias.getUses())) {
      Operation *user = use.getOwner();
      if (!isa<ViewLikeOpInterface>(user) &&
          isLater(block->findAncestorOpInBlock(*user)))
        use.set(viewOnTo(alias));
    }
  return true;
}

/// Replaces `call` (kernel `kernel`, output operand `outIndex`) by the fused
/// kernel writing `out` with `bias` and `activation`.
void emitFusedCall(func::CallOp call, ModuleOp module, StringRef kernel,
                   unsigned outIndex, Value out, Value bias,
                   int64_t activation) {
  OpBuilder b(call);
  Location loc = call.getLoc();
  auto outType = cast<MemRefType>(call.getOperand(outIndex).getType());
  SmallVector<Value> args;
  SmallVector<Type> memrefTypes;
  for (unsigned i = 0; i < outIndex; ++i)
    args.push_back(call.getOperand(i));
  args.push_back(asKernelArg(b, loc, out, outType.getRank()));
  args.push_back(asKernelArg(b, loc, bias, 1));
  for (Value arg : args)
    memrefTypes.push_back(arg.getType());
  unsigned numScalars = call.getNumOperands() - outIndex - 1 + 1;
  for (unsigned i = outIndex + 1; i < call.getNumOperands(); ++i)
    args.push_back(call.getOperand(i));
  args.push_back(arith::ConstantIntOp::create(b, loc, activation, 64));
  FlatSymbolRefAttr callee =
      declareKernel(module, kernel, memrefTypes, numScalars);
  func::CallOp::create(b, loc, callee, TypeRange(), args);
  call.erase();
}

/// Erases the views of `buffer` left without users, then `buffer` itself
/// when it is an unused alloc.
void eraseDeadViews(Value buffer) {
  for (Operation *user : llvm::make_early_inc_range(buffer.getUsers()))
    if (isa<ViewLikeOpInterface>(user)) {
      for (Value result : user->getResults())
        eraseDeadViews(result);
      if (user->use_empty())
        user->erase();
    }
  if (auto alloc = buffer.getDefiningOp<memref::AllocOp>();
      alloc && alloc->use_empty())
    alloc->erase();
}

/// After `call` (f32 matmul or convolution) has written buffer `c`, fuses
/// the elementwise epilogue that follows into it, calling `fusedKernel`:
///
///  1. one linalg.generic reading c with the identity map and a 1-D bias
///     along the last dim, computing act(c + bias) (act: none, relu as
///     maximumf(x, 0), relu6 as minimumf(maximumf(x, 0), 6), operands in
///     either order) into c itself or into another buffer d. c has no other
///     use; d must not be a buffer the kernel reads (nor be touched between
///     the call and the generic), and then c must be a temporary.
///  2. every reader of c is a generic whose only use of c is addf(c, bias)
///     with the same bias (a bias add duplicated into several consumers, as
///     fusion leaves logits read by softmax and argmax): the bias is added
///     by the kernel and the consumers read c.
///
/// The bias must be available at the call and not written between the call
/// and the generic(s). Anything else is left alone.
void fuseEpilogue(func::CallOp call, Value c, ModuleOp module,
                  StringRef fusedKernel, unsigned outIndex) {
  if (!call || !getElementTypeOrSelf(c.getType()).isF32())
    return;
  // C's users besides the views that only feed the call.
  // (memref.dim and other ops without memory effects do not count.)
  llvm::SetVector<Operation *> readerSet;
  for (Value alias : withViews(c))
    for (Operation *user : alias.getUsers())
      if (!isa<ViewLikeOpInterface>(user) && user != call &&
          !isMemoryEffectFree(user))
        readerSet.insert(user);
  SmallVector<Operation *> readers = readerSet.takeVector();
  if (readers.empty() || llvm::any_of(readers, [&](Operation *r) {
        return r->getBlock() != call->getBlock() || !call->isBeforeInBlock(r);
      }))
    return;
  for (Value alias : withViews(c))
    if (alias != c && llvm::any_of(alias.getUsers(), [&](Operation *user) {
          return !isa<ViewLikeOpInterface>(user) && user != call &&
                 !isMemoryEffectFree(user);
        }))
      return; // read through a view: leave it
  DominanceInfo dominance(call->getParentOp());
  SmallVector<Value> kernelInputs;
  for (unsigned i = 0; i < outIndex; ++i)
    kernelInputs.push_back(rootOf(call.getOperand(i)));

  // 1. One generic computing act(c + bias).
  llvm::sort(readers,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  auto fuseOne = [&]() -> bool {
    // The first reader; later ones are fine when it writes C in place
    // (they read its result).
    auto g = dyn_cast<linalg::GenericOp>(readers[0]);
    if (!g || !isElementwiseOn(g, c) ||
        (readers.size() != 1 && g.getDpsInitOperand(0)->get() != c))
      return false;
    OpOperand *init = g.getDpsInitOperand(0);
    Value out = init->get();
    Block &body = g.getRegion().front();
    Value cArg, biasArg, bias;
    for (OpOperand *input : g.getDpsInputOperands()) {
      AffineMap map = g.getMatchingIndexingMap(input);
      if (input->get() == c && map.isIdentity() && !cArg)
        cArg = body.getArgument(input->getOperandNumber());
      else if (isBiasBuffer(input->get()) && isLastDimBroadcast(map) && !bias) {
        bias = input->get();
        biasArg = body.getArgument(input->getOperandNumber());
      } else {
        return false;
      }
    }
    if (!g.getMatchingIndexingMap(init).isIdentity() || !bias)
      return false;
    BlockArgument outArg = body.getArgument(init->getOperandNumber());
    if (!cArg) {
      if (out != c) // in place: c is the init
        return false;
      cArg = outArg;
    } else if (!outArg.use_empty()) {
      return false;
    }
    std::optional<int64_t> activation = matchEpilogueBody(body, cArg, biasArg);
    if (!activation || !availableAt(bias, call, dominance) ||
        writtenBetween(bias, call, g))
      return false;
    if (out != c) {
      Value outRoot = rootOf(out);
      if (!c.getDefiningOp<memref::AllocOp>() || outRoot == rootOf(bias) ||
          usedBetween(outRoot, call, g))
        return false;
      if (llvm::is_contained(kernelInputs, outRoot)) {
        // The generic overwrites a buffer the kernel reads (bufferization
        // reuses the previous layer's buffer). Write the result in C instead
        // and make the later readers of `out` read C.
        if (out != outRoot || !out.getDefiningOp<memref::AllocOp>() ||
            out.getType() != c.getType() || !redirectLaterReads(out, c, g))
          return false;
        out = c;
      } else if (!availableAt(out, call, dominance)) {
        return false;
      }
    }
    emitFusedCall(call, module, fusedKernel, outIndex, out, bias, *activation);
    g->erase();
    eraseDeadViews(c);
    return true;
  };
  if (fuseOne())
    return;

  // 2. Every reader adds the same bias first.
  Value bias;
  SmallVector<std::pair<Operation *, Value>> adds; // addf, c argument
  for (Operation *reader : readers) {
    auto g = dyn_cast<linalg::GenericOp>(reader);
    if (!g || !g.hasPureBufferSemantics() ||
        g.getNumLoops() != uint64_t(cast<MemRefType>(c.getType()).getRank()))
      return;
    Block &body = g.getRegion().front();
    Value cArg, biasArg;
    for (OpOperand &operand : g->getOpOperands()) {
      AffineMap map = g.getMatchingIndexingMap(&operand);
      if (operand.get() == c) {
        if (cArg || g.isDpsInit(&operand) || !map.isIdentity())
          return;
        cArg = body.getArgument(operand.getOperandNumber());
      } else if (g.isDpsInput(&operand) && !biasArg &&
                 isBiasBuffer(operand.get()) && isLastDimBroadcast(map) &&
                 (!bias || operand.get() == bias)) {
        bias = operand.get();
        biasArg = body.getArgument(operand.getOperandNumber());
      }
    }
    if (!cArg || !biasArg || !cArg.hasOneUse())
      return;
    auto add = dyn_cast<arith::AddFOp>(cArg.getUses().begin()->getOwner());
    if (!add || !isAddOf(add, cArg, biasArg) || writtenBetween(bias, call, g))
      return;
    // A whole epilogue that could not be fused (its output is a kernel
    // input) stays as it is rather than become a copy.
    if (readers.size() == 1 && matchEpilogueBody(body, cArg, biasArg))
      return;
    adds.push_back({add, cArg});
  }
  if (!availableAt(bias, call, dominance))
    return;
  emitFusedCall(call, module, fusedKernel, outIndex, c, bias, 0);
  for (auto [add, cArg] : adds) {
    add->getResult(0).replaceAllUsesWith(cArg);
    add->erase();
  }
  eraseDeadViews(c);
}

/// linalg.matmul / batch_matmul -> estc_matmul_<type>.
LogicalResult rewriteMatmul(linalg::LinalgOp op, ModuleOp module) {
  Type element = getElementTypeOrSelf(op->getOperand(0).getType());
  if (!op.hasPureBufferSemantics() ||
      llvm::any_of(op->getOperands(), [&](Value v) {
        return getElementTypeOrSelf(v.getType()) != element;
      }))
    return failure();
  StringRef kernel;
  if (element.isF32())
    kernel = "estc_matmul_f32";
  else if (element.isF64())
    kernel = "estc_matmul_f64";
  else
    return failure();

  // Which operands are transposed, from the indexing maps.
  bool batched = isa<linalg::BatchMatmulOp>(op);
  MLIRContext *ctx = op->getContext();
  unsigned numDims = batched ? 4 : 3;
  auto expr = [&](unsigned d) { return getAffineDimExpr(d, ctx); };
  auto map = [&](unsigned r, unsigned c) {
    SmallVector<AffineExpr> results;
    if (batched)
      results.push_back(expr(0));
    results.push_back(expr(r + (batched ? 1 : 0)));
    results.push_back(expr(c + (batched ? 1 : 0)));
    return AffineMap::get(numDims, 0, results, ctx);
  };
  // Loop dims: m = 0, n = 1, k = 2 (after the batch dim).
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  if (maps.size() != 3 || maps[2] != map(0, 1))
    return failure();
  int64_t transposeA, transposeB;
  if (maps[0] == map(0, 2))
    transposeA = 0;
  else if (maps[0] == map(2, 0))
    transposeA = 1;
  else
    return failure();
  if (maps[1] == map(2, 1))
    transposeB = 0;
  else if (maps[1] == map(1, 2))
    transposeB = 1;
  else
    return failure();
  // Integer arithmetic attributes (cast = unsigned...) are not f32/f64.

  Value a = op.getDpsInputOperand(0)->get();
  Value b = op.getDpsInputOperand(1)->get();
  SmallVector<Operation *> deadTransposes;
  if (linalg::TransposeOp t = transposeFeeding(a, op)) {
    a = t.getInput();
    transposeA = 1 - transposeA;
    deadTransposes.push_back(t);
  }
  if (linalg::TransposeOp t = transposeFeeding(b, op)) {
    b = t.getInput();
    transposeB = 1 - transposeB;
    deadTransposes.push_back(t);
  }
  Value c = op.getDpsInitOperand(0)->get();
  OpBuilder builder(op);
  func::CallOp call = emitKernelCall(builder, op, module, kernel, {a, b}, c, 3,
                                     {transposeA, transposeB});
  for (Operation *t : deadTransposes) {
    Value init = cast<linalg::TransposeOp>(t).getInit();
    t->erase();
    if (init.use_empty())
      init.getDefiningOp()->erase();
  }
  if (element.isF32())
    fuseEpilogue(call, c, module, "estc_matmul_bias_act_f32", 2);
  return success();
}

/// Whether two sizes are equal: the same constant or value, or the same
/// dimension of the same buffer.
bool sameSize(OpFoldResult a, OpFoldResult b) {
  if (isEqualConstantIntOrValue(a, b))
    return true;
  auto dimA = dyn_cast_if_present<Value>(a);
  auto dimB = dyn_cast_if_present<Value>(b);
  if (!dimA || !dimB)
    return false;
  auto opA = dimA.getDefiningOp<memref::DimOp>();
  auto opB = dimB.getDefiningOp<memref::DimOp>();
  return opA && opB && opA.getSource() == opB.getSource() &&
         isEqualConstantIntOrValue(opA.getIndex(), opB.getIndex());
}

/// The unpadded interior of a bufferized zero tensor.pad: `padded` is an
/// alloc written by a zero fill and, through one subview at static offsets
/// [0, top, left, 0], by the input. Returns the interior and the pads, and
/// erases the fill (and the copy, when the interior is read from its source).
std::optional<std::tuple<Value, int64_t, int64_t>>
foldZeroPad(Value padded, Operation *conv) {
  auto alloc = padded.getDefiningOp<memref::AllocOp>();
  if (!alloc || alloc->getBlock() != conv->getBlock())
    return std::nullopt;
  Operation *fill = nullptr;
  memref::SubViewOp interior;
  for (Operation *user : alloc->getUsers()) {
    if (user == conv)
      continue;
    if (!fill && isZeroFill(user, padded))
      fill = user;
    else if (auto subview = dyn_cast<memref::SubViewOp>(user);
             subview && !interior)
      interior = subview;
    else
      return std::nullopt;
  }
  if (!fill || !interior || !fill->isBeforeInBlock(conv))
    return std::nullopt;
  SmallVector<int64_t> offsets(interior.getStaticOffsets());
  if (offsets.size() != 4 || ShapedType::isDynamic(offsets[1]) ||
      ShapedType::isDynamic(offsets[2]) || offsets[0] != 0 || offsets[3] != 0 ||
      !interior.hasUnitStride())
    return std::nullopt;
  SmallVector<OpFoldResult> allocSizes = alloc.getMixedSizes();
  SmallVector<OpFoldResult> interiorSizes = interior.getMixedSizes();
  for (unsigned i : {0u, 3u})
    if (!sameSize(allocSizes[i], interiorSizes[i]))
      return std::nullopt;

  Value input = interior.getResult();
  // A copy of the input into the interior: read the input itself.
  if (interior->hasOneUse()) {
    auto copy = dyn_cast<memref::CopyOp>(*interior->getUsers().begin());
    if (copy && copy.getTarget() == input &&
        copy->getBlock() == conv->getBlock() &&
        !usedBetween(copy.getSource(), copy, conv)) {
      input = copy.getSource();
      copy->erase();
      interior->erase();
    }
  }
  fill->erase();
  return std::make_tuple(input, offsets[1], offsets[2]);
}

/// linalg.conv_2d_nhwc_hwcf (f32) -> estc_conv2d_nhwc_hwio_f32.
LogicalResult rewriteConv(linalg::Conv2DNhwcHwcfOp conv, ModuleOp module) {
  if (!conv.hasPureBufferSemantics() ||
      llvm::any_of(conv->getOperands(), [](Value v) {
        return !getElementTypeOrSelf(v.getType()).isF32();
      }))
    return failure();
  auto strides = llvm::to_vector(conv.getStrides().getValues<int64_t>());
  auto dilations = llvm::to_vector(conv.getDilations().getValues<int64_t>());
  Value input = conv.getInputs()[0];
  int64_t padTop = 0, padLeft = 0;
  Value padded = input;
  if (auto folded = foldZeroPad(input, conv))
    std::tie(input, padTop, padLeft) = *folded;
  OpBuilder b(conv);
  Value output = conv.getOutputs()[0];
  func::CallOp call = emitKernelCall(
      b, conv, module, "estc_conv2d_nhwc_hwio_f32",
      {input, conv.getInputs()[1]}, output, 4,
      {strides[0], strides[1], dilations[0], dilations[1], padTop, padLeft});
  if (padded != input && padded.use_empty())
    padded.getDefiningOp()->erase();
  fuseEpilogue(call, output, module, "estc_conv2d_nhwc_hwio_bias_act_f32", 2);
  return success();
}

/// A bufferized conv backprop generic of convert-est-to-linalg -> its
/// kernel. The generic reads the windowed operand (grad_output for the
/// input gradient, the input for the filter gradient) with memref.load in
/// its body; its one input operand is the filter / grad_output and its
/// output the gradient. "estc.conv" holds [sh, sw, dh, dw, pad_top,
/// pad_left].
LogicalResult rewriteConvBackprop(linalg::GenericOp generic, ModuleOp module) {
  StringRef kernel = *generic.getLibraryCall();
  bool input = kernel == "estc_conv2d_backprop_input_f32";
  if (!input && kernel != "estc_conv2d_backprop_filter_f32")
    return generic.emitOpError("unknown runtime kernel '") << kernel << "'";
  auto scalars = generic->getAttrOfType<DenseI64ArrayAttr>("estc.conv");
  SmallVector<memref::LoadOp> loads;
  generic.getRegion().walk([&](memref::LoadOp load) { loads.push_back(load); });
  if (!generic.hasPureBufferSemantics() || !scalars || scalars.size() != 6 ||
      generic.getNumDpsInputs() != 1 || generic.getNumDpsInits() != 1 ||
      loads.size() != 1)
    return generic.emitOpError("is not a bufferized conv backprop of "
                               "convert-est-to-linalg");
  Value windowed = loads.front().getMemRef();
  Value operand = generic.getDpsInputs()[0];
  // Kernel argument order: (filter, grad_output, grad_input) and
  // (input, grad_output, grad_filter).
  SmallVector<Value> inputs = input ? SmallVector<Value>{operand, windowed}
                                    : SmallVector<Value>{windowed, operand};
  OpBuilder b(generic);
  emitKernelCall(b, generic, module, kernel, inputs, generic.getDpsInits()[0],
                 4, scalars.asArrayRef());
  return success();
}

void EstLinalgToRuntimeCalls::runOnOperation() {
  ModuleOp module = getOperation();
  SmallVector<Operation *> candidates;
  module.walk([&](Operation *op) {
    if (isa<linalg::MatmulOp, linalg::BatchMatmulOp, linalg::Conv2DNhwcHwcfOp>(
            op))
      candidates.push_back(op);
  });
  module.walk([&](linalg::GenericOp generic) {
    if (generic.getLibraryCall())
      candidates.push_back(generic);
  });
  for (Operation *op : candidates) {
    if (auto generic = dyn_cast<linalg::GenericOp>(op)) {
      if (failed(rewriteConvBackprop(generic, module)))
        return signalPassFailure();
    } else if (auto conv = dyn_cast<linalg::Conv2DNhwcHwcfOp>(op))
      (void)rewriteConv(conv, module);
    else
      (void)rewriteMatmul(cast<linalg::LinalgOp>(op), module);
  }
  // Buffers that are only zero-filled any more (their readers were copies
  // into kernel outputs) are dead.
  SmallVector<memref::AllocOp> allocs;
  module.walk([&](memref::AllocOp alloc) { allocs.push_back(alloc); });
  for (memref::AllocOp alloc : allocs) {
    if (!llvm::all_of(alloc->getUsers(), [&](Operation *user) {
          return isZeroFill(user, alloc.getResult());
        }))
      continue;
    for (Operation *user : llvm::make_early_inc_range(alloc->getUsers()))
      user->erase();
    alloc.erase();
  }
}

} // namespace
