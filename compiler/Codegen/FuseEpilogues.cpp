//===- FuseEpilogues.cpp - est-fuse-epilogues
//------------------------------===//
//
// Right after est-linalg-to-runtime-calls: an elementwise act(C + bias)
// after an f32 matmul or convolution kernel call is fused into it
// (estc_matmul_bias_act_f32 / estc_conv2d_nhwc_hwio_bias_act_f32), so the
// output is written once, while hot in cache (see fuseEpilogue).
//
// The kernel calls are visited in program order, each seeing the calls
// before it as fused or not. A kernel call reads its input buffers and
// writes its output buffer (operand 2) through the views
// est-linalg-to-runtime-calls made for it (kernelArgSource), which count as
// the call's own use of the buffer, not as reads through a view; a conv
// backprop kernel gathers its windowed operand at computed coordinates, a
// read this pass does not reason about (as it does not about any read
// inside a loop body). Each fused kernel is declared where
// est-linalg-to-runtime-calls would have declared it had it fused the
// epilogue right after writing the call: kernels are declared in the order
// they are first needed.
//
//===----------------------------------------------------------------------===//

#include "compiler/Codegen/KernelCalls.h"
#include "compiler/Codegen/Passes.h"

#include "mlir/IR/Dominance.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

#include <limits>

namespace mlir {
namespace est {
#define GEN_PASS_DEF_ESTFUSEEPILOGUES
#include "compiler/Codegen/Passes.h.inc"
} // namespace est
} // namespace mlir

using namespace mlir;
using namespace mlir::est::kernels;

namespace {

/// The operand a conv backprop or depthwise kernel gathers (reads at
/// computed coordinates, as the loop nest it replaced did inside its body),
/// or -1: grad_output of (filter, grad_output, grad_input), input of (input,
/// grad_output, grad_filter) and of the depthwise (input, filter, output).
int gatheredOperand(func::CallOp call) {
  StringRef callee = call.getCallee();
  if (callee == "estc_conv2d_backprop_input_f32" ||
      callee == "estc_depthwise_conv2d_backprop_input_f32")
    return 1;
  if (callee == "estc_conv2d_backprop_filter_f32" ||
      callee == "estc_depthwise_conv2d_f32" ||
      callee == "estc_depthwise_conv2d_backprop_filter_f32")
    return 0;
  return -1;
}

bool isKernelCall(Operation *op) {
  auto call = dyn_cast<func::CallOp>(op);
  return call && call.getCallee().starts_with("estc_");
}

//===----------------------------------------------------------------------===//
// Epilogue fusion: act(C + bias) into the kernel call that writes C.
//===----------------------------------------------------------------------===//

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
  SmallVector<Value> aliases = withViews(est::rootOf(value));
  for (Operation *op = from->getNextNode(); op != to; op = op->getNextNode()) {
    if (isMemoryEffectFree(op) || !usesAny(op, aliases))
      continue;
    // A kernel writes its output (operand 2) and reads the rest.
    if (isKernelCall(op)) {
      if (op->getNumOperands() > 2 &&
          llvm::is_contained(aliases, op->getOperand(2)))
        return true;
      continue;
    }
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
/// Calls of estc_* kernels write their operand 2 and read the others; a
/// conv backprop kernel gathering one of them is not known to only read it.
bool onlyReads(Operation *op, ArrayRef<Value> aliases) {
  if (isMemoryEffectFree(op) || !usesAny(op, aliases))
    return true;
  if (auto call = dyn_cast<func::CallOp>(op)) {
    int gathered = gatheredOperand(call);
    if (gathered >= 0 && llvm::is_contained(aliases, call.getOperand(gathered)))
      return false;
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
/// kernel writing `out` with `bias` and `activation`; `kernel` is declared
/// before `declareBefore` (null: at the end of the module) if needed.
void emitFusedCall(func::CallOp call, ModuleOp module, StringRef kernel,
                   unsigned outIndex, Value out, Value bias, int64_t activation,
                   Operation *declareBefore) {
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
      declareKernel(module, kernel, memrefTypes, numScalars, declareBefore);
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
///
/// Returns whether it fused. `fusedKernel` is declared before `declareBefore`
/// (null: at the end of the module) if needed.
bool fuseEpilogue(func::CallOp call, Value c, ModuleOp module,
                  StringRef fusedKernel, unsigned outIndex,
                  Operation *declareBefore) {
  if (!getElementTypeOrSelf(c.getType()).isF32())
    return false;
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
    return false;
  SmallVector<Value> aliasesOfC = withViews(c);
  for (Operation *reader : readers)
    if (auto kernel = dyn_cast<func::CallOp>(reader);
        kernel && gatheredOperand(kernel) >= 0 &&
        llvm::is_contained(aliasesOfC,
                           kernel.getOperand(gatheredOperand(kernel))))
      return false; // gathered by a conv backprop: leave it
  for (Value alias : aliasesOfC)
    if (alias != c && kernelArgSource(alias) != c &&
        llvm::any_of(alias.getUsers(), [&](Operation *user) {
          return !isa<ViewLikeOpInterface>(user) && user != call &&
                 !isMemoryEffectFree(user);
        }))
      return false; // read through a view: leave it
  DominanceInfo dominance(call->getParentOp());
  SmallVector<Value> kernelInputs;
  for (unsigned i = 0; i < outIndex; ++i)
    kernelInputs.push_back(est::rootOf(call.getOperand(i)));

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
      Value outRoot = est::rootOf(out);
      if (!c.getDefiningOp<memref::AllocOp>() || outRoot == est::rootOf(bias) ||
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
    emitFusedCall(call, module, fusedKernel, outIndex, out, bias, *activation,
                  declareBefore);
    g->erase();
    eraseDeadViews(c);
    return true;
  };
  if (fuseOne())
    return true;

  // 2. Every reader adds the same bias first.
  Value bias;
  SmallVector<std::pair<Operation *, Value>> adds; // addf, c argument
  for (Operation *reader : readers) {
    auto g = dyn_cast<linalg::GenericOp>(reader);
    if (!g || !g.hasPureBufferSemantics() ||
        g.getNumLoops() != uint64_t(cast<MemRefType>(c.getType()).getRank()))
      return false;
    Block &body = g.getRegion().front();
    Value cArg, biasArg;
    for (OpOperand &operand : g->getOpOperands()) {
      AffineMap map = g.getMatchingIndexingMap(&operand);
      if (operand.get() == c) {
        if (cArg || g.isDpsInit(&operand) || !map.isIdentity())
          return false;
        cArg = body.getArgument(operand.getOperandNumber());
      } else if (g.isDpsInput(&operand) && !biasArg &&
                 isBiasBuffer(operand.get()) && isLastDimBroadcast(map) &&
                 (!bias || operand.get() == bias)) {
        bias = operand.get();
        biasArg = body.getArgument(operand.getOperandNumber());
      }
    }
    if (!cArg || !biasArg || !cArg.hasOneUse())
      return false;
    auto add = dyn_cast<arith::AddFOp>(cArg.getUses().begin()->getOwner());
    if (!add || !isAddOf(add, cArg, biasArg) || writtenBetween(bias, call, g))
      return false;
    // A whole epilogue that could not be fused (its output is a kernel
    // input) stays as it is rather than become a copy.
    if (readers.size() == 1 && matchEpilogueBody(body, cArg, biasArg))
      return false;
    adds.push_back({add, cArg});
  }
  if (!availableAt(bias, call, dominance))
    return false;
  emitFusedCall(call, module, fusedKernel, outIndex, c, bias, 0, declareBefore);
  for (auto [add, cArg] : adds) {
    add->getResult(0).replaceAllUsesWith(cArg);
    add->erase();
  }
  eraseDeadViews(c);
  return true;
}

//===----------------------------------------------------------------------===//
// The pass.
//===----------------------------------------------------------------------===//

/// The kernels est-linalg-to-runtime-calls emits for linalg.matmul /
/// batch_matmul / conv_2d_nhwc_hwcf, and the fused kernel of each f32 one.
constexpr std::pair<StringLiteral, StringLiteral> kFusableKernels[] = {
    {"estc_matmul_f32", "estc_matmul_bias_act_f32"},
    {"estc_conv2d_nhwc_hwio_f32", "estc_conv2d_nhwc_hwio_bias_act_f32"},
};
constexpr StringLiteral kOtherContractionKernel = "estc_matmul_f64";

/// Where a fused kernel is declared. est-linalg-to-runtime-calls declares
/// kernels at the end of the module as the matmuls and convolutions need
/// them (in program order), then the conv backprops' kernels; the fused
/// kernel of the i-th call goes right after the kernels the first i calls
/// needed, before those needed later.
class KernelDeclarations {
public:
  /// `contractions`: the matmul and convolution kernel calls, in order.
  KernelDeclarations(ModuleOp module, ArrayRef<func::CallOp> contractions)
      : module(module) {
    for (size_t i = 0; i < contractions.size(); ++i)
      firstNeeded.try_emplace(func::CallOp(contractions[i]).getCallee(), i);
    // Kernels called only by other calls (the conv backprops) came last.
    module.walk([&](func::CallOp call) {
      if (call.getCallee().starts_with("estc_"))
        firstNeeded.try_emplace(call.getCallee(), kLast);
    });
  }

  /// The declaration a kernel first needed by the i-th call goes before
  /// (null: the end of the module).
  Operation *insertionPoint(size_t i) {
    for (Operation &op : module.getBody()->getOperations())
      if (auto decl = dyn_cast<func::FuncOp>(op)) {
        auto it = firstNeeded.find(decl.getSymName());
        if (it != firstNeeded.end() && it->second > i)
          return decl;
      }
    return nullptr;
  }

  void declared(StringRef kernel, size_t i) {
    firstNeeded.try_emplace(kernel, i);
  }

private:
  static constexpr size_t kLast = std::numeric_limits<size_t>::max();
  ModuleOp module;
  llvm::StringMap<size_t> firstNeeded;
};

struct EstFuseEpilogues
    : public mlir::est::impl::EstFuseEpiloguesBase<EstFuseEpilogues> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::CallOp> contractions;
    module.walk([&](func::CallOp call) {
      StringRef callee = call.getCallee();
      if (callee == kOtherContractionKernel ||
          llvm::any_of(kFusableKernels,
                       [&](auto kernels) { return kernels.first == callee; }))
        contractions.push_back(call);
    });
    KernelDeclarations declarations(module, contractions);
    for (auto [i, call] : llvm::enumerate(contractions)) {
      const auto *kernels = llvm::find_if(kFusableKernels, [&](auto kernels) {
        return kernels.first == call.getCallee();
      });
      if (kernels == std::end(kFusableKernels) || call.getNumOperands() < 3)
        continue;
      // The buffer the call writes. A kernel computing into a temporary
      // added to the output afterwards has no epilogue to fuse: the
      // temporary's only reader is that addition, which adds no bias.
      Value c = kernelArgSource(call.getOperand(2));
      if (!c)
        continue;
      if (fuseEpilogue(call, c, module, kernels->second, /*outIndex=*/2,
                       declarations.insertionPoint(i)))
        declarations.declared(kernels->second, i);
    }
  }
};

} // namespace
