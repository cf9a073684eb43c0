//===- ParallelizeLoops.cpp - est-parallelize-loops -----------------------===//
//
// A large linalg op on buffers whose outermost loop is parallel becomes a
// loop nest in a private function of [lo, hi) of that loop and the values it
// captures, called through a marker that est-lower-parallel-calls turns into
// `estc_parallel_for(trampoline, ctx, n, cost)`: the runtime splits [0, n)
// into chunks fixed by n and cost and runs them on its thread pool.
//
// Only the outermost dimension is split, and only when it is parallel and
// every output is indexed by it directly (d0 as one of its map's results), so
// chunks write disjoint elements and a reduction inside one outer iteration
// stays whole in one chunk. Every element is computed by the same loop code
// whatever thread runs its chunk, and the chunks depend on the shape alone:
// results are bit-identical for any thread count.
//
//===----------------------------------------------------------------------===//

#include "compiler/Codegen/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Linalg/Utils/Utils.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir {
namespace est {
#define GEN_PASS_DEF_ESTPARALLELIZELOOPS
#include "compiler/Codegen/Passes.h.inc"
} // namespace est
} // namespace mlir

using namespace mlir;

namespace {

/// Operations per iteration of the op's innermost body: 1 per arith op, 10
/// per math op (exp, log, tanh, ...), at least 1.
int64_t bodyCost(linalg::LinalgOp op) {
  int64_t cost = 0;
  for (Operation &inner : op->getRegion(0).front().without_terminator()) {
    if (isa<linalg::IndexOp>(inner))
      continue;
    cost += isa<math::MathDialect>(inner.getDialect()) ? 10 : 1;
  }
  return std::max<int64_t>(cost, 1);
}

/// Whether splitting the op's outermost loop into chunks is correct and
/// worth it: buffers, outermost loop parallel, every output indexed by d0,
/// no runtime kernel named, and at least `minWork` operations (a dynamic
/// dimension counts as large).
bool shouldParallelize(linalg::LinalgOp op, int64_t minWork) {
  if (!op.hasPureBufferSemantics() || op.getNumLoops() == 0 ||
      !linalg::isParallelIterator(op.getIteratorTypesArray().front()))
    return false;
  if (auto generic = dyn_cast<linalg::GenericOp>(op.getOperation()))
    if (generic.getLibraryCall())
      return false;
  for (OpOperand &init : op.getDpsInitsMutable()) {
    AffineMap map = op.getMatchingIndexingMap(&init);
    if (!llvm::any_of(map.getResults(), [](AffineExpr e) {
          auto dim = dyn_cast<AffineDimExpr>(e);
          return dim && dim.getPosition() == 0;
        }))
      return false;
  }
  double work = double(bodyCost(op));
  for (int64_t size : op.getStaticLoopRanges()) {
    if (ShapedType::isDynamic(size))
      return true;
    work *= double(size);
  }
  return work >= double(minWork);
}

/// Whether `op`, defined before a nest the nest uses, is cloned into the
/// outlined function rather than passed: constants, pure index arithmetic,
/// and views of a buffer (not the `memref.view` that places a buffer in the
/// arena: each buffer stays its own argument).
bool isSinkable(Operation *op) {
  if (op->getNumRegions() != 0 || !isPure(op))
    return false;
  if (matchPattern(op, m_Constant()))
    return true;
  if (isa<memref::SubViewOp, memref::ExpandShapeOp, memref::CollapseShapeOp,
          memref::CastOp, memref::ReinterpretCastOp, affine::AffineApplyOp>(op))
    return true;
  return isa<arith::ArithDialect>(op->getDialect()) &&
         llvm::all_of(op->getResultTypes(), [](Type t) { return t.isIndex(); });
}

struct EstParallelizeLoops
    : public mlir::est::impl::EstParallelizeLoopsBase<EstParallelizeLoops> {
  using EstParallelizeLoopsBase::EstParallelizeLoopsBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    for (auto func : llvm::to_vector(module.getOps<func::FuncOp>())) {
      if (func.isExternal())
        continue;
      SmallVector<linalg::LinalgOp> ops;
      func.walk([&](linalg::LinalgOp op) {
        if (shouldParallelize(op, minWork))
          ops.push_back(op);
      });
      Operation *last = func;
      for (auto [index, op] : llvm::enumerate(ops))
        if (failed(outline(op, func, index, last, symbols)))
          return signalPassFailure();
    }
  }

  /// Lowers `op` to loops in place and moves the nest into
  /// `@<func>_pfor<index>(lo, hi, captures...)`, called through the marker
  /// `@<func>_pfor<index>_launch(n, cost, captures...)`, both inserted
  /// after `last` (which becomes the marker).
  LogicalResult outline(linalg::LinalgOp op, func::FuncOp func, size_t index,
                        Operation *&last, SymbolTable &symbols) {
    MLIRContext *ctx = op->getContext();
    IRRewriter rewriter(ctx);
    Location loc = op.getLoc();
    int64_t cost = bodyCost(op);
    rewriter.setInsertionPoint(op);
    FailureOr<linalg::LinalgLoops> loops =
        linalg::linalgOpToLoops(rewriter, op);
    if (failed(loops))
      return op->emitError("est-parallelize-loops: cannot lower to loops");
    rewriter.eraseOp(op);
    auto outer = dyn_cast<scf::ForOp>(loops->front());
    std::optional<int64_t> lb =
        outer ? getConstantIntValue(outer.getLowerBound()) : std::nullopt;
    std::optional<int64_t> step =
        outer ? getConstantIntValue(outer.getStep()) : std::nullopt;
    if (!outer || lb != 0 || step != 1)
      return outer->emitError(
          "est-parallelize-loops: expected an outer loop from 0 step 1");

    // Operations per outer iteration: the body's times every inner trip
    // count (the bounds are computed before the nest, from 0 step 1).
    rewriter.setInsertionPoint(outer);
    Value perIteration = arith::ConstantIndexOp::create(rewriter, loc, cost);
    for (Operation *inner : llvm::drop_begin(*loops)) {
      Value ub = cast<scf::ForOp>(inner).getUpperBound();
      if (Operation *def = ub.getDefiningOp())
        if (outer->isAncestor(def))
          return inner->emitError("est-parallelize-loops: inner loop bound "
                                  "computed inside the outer loop");
      perIteration = arith::MulIOp::create(rewriter, loc, perIteration, ub);
    }

    // What the nest uses from outside: constants, index arithmetic and the
    // views of a buffer (subviews, reshapes, casts) are cloned into the
    // function, so that one buffer reached through two views is one pointer
    // there; the buffers themselves (each `memref.view` of the arena, the
    // function's arguments), loaded scalars and sizes become arguments, one
    // pointer per buffer, which est-outline-loop-nests marks noalias when
    // the buffers are distinct.
    SetVector<Value> used;
    getUsedValuesDefinedAbove(outer.getRegion(), used);
    SetVector<Value> captureSet;
    SetVector<Operation *> sunk; // operands before users
    std::function<void(Value)> visit = [&](Value v) {
      Operation *def = v.getDefiningOp();
      if (captureSet.contains(v) || (def && sunk.contains(def)))
        return;
      if (def && isSinkable(def)) {
        for (Value operand : def->getOperands())
          visit(operand);
        sunk.insert(def);
        return;
      }
      captureSet.insert(v);
    };
    for (Value v : used)
      visit(v);
    SmallVector<Value> captures = captureSet.takeVector();

    Type indexType = rewriter.getIndexType();
    SmallVector<Type> bodyArgs = {indexType, indexType};
    SmallVector<Type> launchArgs = {indexType, indexType};
    for (Value v : captures) {
      bodyArgs.push_back(v.getType());
      launchArgs.push_back(v.getType());
    }
    std::string name = (func.getName() + "_pfor" + Twine(index)).str();
    rewriter.setInsertionPointAfter(last);
    auto body = func::FuncOp::create(rewriter, loc, name,
                                     FunctionType::get(ctx, bodyArgs, {}));
    body.setPrivate();
    symbols.insert(body);
    auto launch =
        func::FuncOp::create(rewriter, loc, (body.getName() + "_launch").str(),
                             FunctionType::get(ctx, launchArgs, {}));
    launch.setPrivate();
    launch->setAttr("estc.parallel_body",
                    FlatSymbolRefAttr::get(body.getNameAttr()));
    symbols.insert(launch);
    last = launch;

    // The call site: launch(n, cost, captures...) where the nest was.
    rewriter.setInsertionPoint(outer);
    SmallVector<Value> launchOperands = {outer.getUpperBound(), perIteration};
    llvm::append_range(launchOperands, captures);
    func::CallOp::create(rewriter, loc, launch, launchOperands);

    // The body: the nest from lo to hi.
    Block *entry = body.addEntryBlock();
    rewriter.setInsertionPointToStart(entry);
    IRMapping mapping;
    for (auto [value, arg] :
         llvm::zip(captures, entry->getArguments().drop_front(2)))
      mapping.map(value, arg);
    for (Operation *op : sunk)
      rewriter.clone(*op, mapping);
    Value one = arith::ConstantIndexOp::create(rewriter, loc, 1);
    auto returnOp = func::ReturnOp::create(rewriter, loc);
    rewriter.moveOpBefore(outer, returnOp);
    outer.getLowerBoundMutable().assign(entry->getArgument(0));
    outer.getUpperBoundMutable().assign(entry->getArgument(1));
    outer.getStepMutable().assign(one);
    for (Value v : used)
      replaceAllUsesInRegionWith(v, mapping.lookup(v), outer.getRegion());
    return success();
  }
};

} // namespace
