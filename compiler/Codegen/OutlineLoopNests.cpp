//===- OutlineLoopNests.cpp - est-outline-loop-nests ----------------------===//
//
// Every linalg op on buffers of a function (the loops the compiler
// generates: pooling and its gradient, bias gradients, ReLU masks, dropout,
// optimizer updates) moves into a private function of its own, called where
// the op was (`noinline`). The point is the function boundary: its buffer
// arguments that are distinct buffers are marked noalias. Without it, every
// buffer is a view of the same arena (or a caller's buffer LLVM knows
// nothing about), so the loop vectorizer needs a run-time overlap check at
// every entry of an innermost loop, or gives up; with it, a loop whose
// innermost dimension is contiguous (the channels of NHWC) becomes plain
// SIMD code. The functions stay calls: inlined back (they were, with the
// noalias facts as alias scopes), a large step is one function of
// thousands of loops, and LLVM's loop passes and instruction scheduling
// made MobileNetV2's compile 1.7x slower (25.2 against 15.1 s of CPU;
// docs/results.md), for steps no faster (the iris step's instructions
// within 0.1%).
//
// Two buffers are distinct when their roots (followed through casts,
// reshapes and subviews) are:
//  - two different `memref.view`s of the arena (est-memory-planning places
//    buffers whose live intervals overlap at disjoint offsets, and every
//    buffer an op uses is live at that op), or
//  - two different arguments of the function other than the arena, or one
//    such argument and a view of the arena (the buffer ABI: the arena,
//    variables, inputs and outputs never overlap, docs/design/codegen-abi.md),
//    or
//  - two different `memref.get_global`s, or one and any of the above.
// A buffer gets noalias only when it is distinct from every other buffer of
// the call; an operand with another root kind gets none and keeps the others
// from getting it. Constants are cloned into the function; every other value
// defined outside the op is an argument.
//
// The LLVM positions of the noalias pointers (allocated and aligned pointer
// of each such memref descriptor) are recorded as `estc.noalias_args`;
// est-noalias-to-llvm sets `llvm.noalias` on them after func-to-llvm.
//
// The loop nests est-parallelize-loops moved out before (a call of a launch
// marker, `estc.parallel_body = @body`, whose operands after (n, cost) are
// the body's arguments after (lo, hi)) get the same noalias facts on the
// body's arguments. Short innermost loops are marked `unroll disable`, or,
// in a parallel nest, unrolled when they compute a math function or reduce
// a row (see lowerToLoops and keepRolledInParallelBody: measured choices).
//
//===----------------------------------------------------------------------===//

#include "compiler/Codegen/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/RegionUtils.h"

namespace mlir {
namespace est {
#define GEN_PASS_DEF_ESTOUTLINELOOPNESTS
#include "compiler/Codegen/Passes.h.inc"
} // namespace est
} // namespace mlir

using namespace mlir;

namespace {

/// What a buffer is a view of.
struct Root {
  enum Kind { Unknown, Arena, ArenaView, Argument, Global } kind = Unknown;
  /// The view op, block argument or global's name.
  const void *identity = nullptr;

  bool operator==(const Root &other) const {
    return kind == other.kind && identity == other.identity;
  }
};

Root rootOf(Value buffer, Value arena) {
  while (true) {
    if (buffer == arena)
      return {Root::Arena, buffer.getAsOpaquePointer()};
    if (auto arg = dyn_cast<BlockArgument>(buffer)) {
      if (isa<func::FuncOp>(arg.getOwner()->getParentOp()))
        return {Root::Argument, buffer.getAsOpaquePointer()};
      return {};
    }
    Operation *op = buffer.getDefiningOp();
    if (auto view = dyn_cast<memref::ViewOp>(op)) {
      if (view.getSource() == arena)
        return {Root::ArenaView, op};
      return {};
    }
    if (auto global = dyn_cast<memref::GetGlobalOp>(op))
      return {Root::Global, global.getNameAttr().getAsOpaquePointer()};
    if (auto viewLike = dyn_cast<ViewLikeOpInterface>(op)) {
      buffer = viewLike.getViewSource();
      continue;
    }
    return {};
  }
}

/// Whether two buffers with different roots never overlap.
bool distinct(const Root &a, const Root &b) {
  if (a.kind == Root::Unknown || b.kind == Root::Unknown || a == b)
    return false;
  // The arena itself overlaps every view of it.
  if ((a.kind == Root::Arena && b.kind == Root::ArenaView) ||
      (b.kind == Root::Arena && a.kind == Root::ArenaView))
    return false;
  return true;
}

/// The number of LLVM arguments a value of `type` becomes in func-to-llvm's
/// default calling convention (a ranked memref: allocated and aligned
/// pointers, offset, sizes, strides).
int64_t llvmArgumentCount(Type type) {
  if (auto memref = dyn_cast<MemRefType>(type))
    return 3 + 2 * memref.getRank();
  return 1;
}

/// The LLVM argument positions (allocated and aligned pointer) of the
/// buffers among `arguments` that are distinct from every other buffer
/// argument, once func-to-llvm expanded `arguments` as a function's.
SmallVector<int64_t> noaliasPositions(ArrayRef<Value> arguments, Value arena) {
  SmallVector<Root> roots;
  for (Value argument : arguments)
    roots.push_back(
        isa<MemRefType>(argument.getType()) ? rootOf(argument, arena) : Root{});
  SmallVector<int64_t> noalias;
  if (llvm::any_of(arguments, [](Value v) {
        return isa<UnrankedMemRefType>(v.getType());
      }))
    return noalias;
  int64_t position = 0;
  for (auto [i, argument] : llvm::enumerate(arguments)) {
    bool alone =
        isa<MemRefType>(argument.getType()) && roots[i].kind != Root::Unknown;
    for (auto [j, other] : llvm::enumerate(arguments))
      if (alone && j != i && isa<BaseMemRefType>(other.getType()) &&
          !distinct(roots[i], roots[j]))
        alone = false;
    if (alone) {
      noalias.push_back(position);     // allocated pointer
      noalias.push_back(position + 1); // aligned pointer
    }
    position += llvmArgumentCount(argument.getType());
  }
  return noalias;
}

/// Innermost loops up to this trip count are kept rolled.
constexpr int64_t kMaxKeptRolled = 64;

/// Marks `loop` `unroll disable` for LLVM.
void keepRolled(scf::ForOp loop) {
  MLIRContext *ctx = loop->getContext();
  auto unroll = LLVM::LoopUnrollAttr::get(ctx, BoolAttr::get(ctx, true), {}, {},
                                          {}, {}, {}, {});
  auto annotation = LLVM::LoopAnnotationAttr::get(
      ctx, {}, {}, {}, unroll, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {});
  loop->setAttr("llvm.loop_annotation", annotation);
}

/// Lowers `op` to an scf.for nest. In an all-parallel nest, a short
/// innermost loop (the 20 channels of the max-pool gradient's pixels) is
/// annotated `unroll disable`: LLVM would unroll it completely and then
/// vectorize the next loop out, with gathers and scatters across pixels,
/// where the contiguous channels vectorize directly (measured: the ConvNet's
/// pooling gradient 3x faster). Nests with reductions stay as they are:
/// there the unrolled channels keep their accumulators in registers, which
/// measured faster than the rolled vector loop (bias gradients, the pooling
/// windows).
void lowerToLoops(linalg::LinalgOp op) {
  IRRewriter rewriter(op->getContext());
  rewriter.setInsertionPoint(op);
  FailureOr<linalg::LinalgLoops> loops = linalg::linalgOpToLoops(rewriter, op);
  if (failed(loops))
    return; // left to convert-linalg-to-loops
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  rewriter.eraseOp(op);
  if (loops->size() < 2 ||
      !llvm::all_of(iterators, linalg::isParallelIterator) ||
      ShapedType::isDynamic(ranges.back()) || ranges.back() > kMaxKeptRolled)
    return;
  if (auto innermost = dyn_cast<scf::ForOp>(loops->back()))
    keepRolled(innermost);
}

/// Innermost loops of at most this many iterations whose body computes a
/// math function or reduces a row are unrolled.
constexpr int64_t kMaxUnrolled = 8;

/// Whether `value` is computed from `loop`'s induction variable.
bool dependsOnInduction(Value value, scf::ForOp loop) {
  if (value == loop.getInductionVar())
    return true;
  Operation *def = value.getDefiningOp();
  if (!def || !loop->isProperAncestor(def))
    return false;
  return llvm::any_of(def->getOperands(), [&](Value operand) {
    return dependsOnInduction(operand, loop);
  });
}

/// Whether `loop` reduces each row of the body's outermost (row) loop to one
/// element: nested right in it, and storing to an element its own
/// induction variable does not index (the row's accumulator).
bool reducesRow(scf::ForOp loop) {
  auto rows = dyn_cast<scf::ForOp>(loop->getParentOp());
  if (!rows || !isa<func::FuncOp>(rows->getParentOp()))
    return false;
  bool reduces = false;
  loop.getBody()->walk([&](memref::StoreOp store) {
    if (llvm::none_of(store.getIndices(), [&](Value index) {
          return dependsOnInduction(index, loop);
        }))
      reduces = true;
  });
  return reduces;
}

/// Whether `loop`'s body loads 64-bit integers (a cross-entropy's labels).
bool readsInt64(scf::ForOp loop) {
  bool found = false;
  loop.getBody()->walk(
      [&](memref::LoadOp load) { found |= load.getType().isInteger(64); });
  return found;
}

/// Asks LLVM to vectorize `loop` 8 iterations wide. A row loop that reads
/// i64 labels beside its f32 rows is otherwise vectorized 4 wide on AVX2
/// (the i64 lanes take two registers), and its unrolled exps run at half
/// width: the iris-sized step's softmax gradient, 1.58k -> 0.92k
/// instructions (docs/results.md). The arithmetic is the same per lane.
void vectorizeEightWide(scf::ForOp loop) {
  MLIRContext *ctx = loop->getContext();
  auto vectorize = LLVM::LoopVectorizeAttr::get(
      ctx, BoolAttr::get(ctx, false), {}, {},
      IntegerAttr::get(IntegerType::get(ctx, 32), 8), {}, {}, {});
  loop->setAttr("llvm.loop_annotation",
                LLVM::LoopAnnotationAttr::get(ctx, {}, vectorize, {}, {}, {},
                                              {}, {}, {}, {}, {}, {}, {}, {},
                                              {}, {}));
}

/// The short innermost loops of est-parallelize-loops' nests (lowered
/// there, so seen as loops) are kept rolled too, reductions inside or not:
/// called through the runtime's trampoline, the unrolled form vectorized across
/// pixels with gathers (measured on the ConvNet's step: max-pool 3.5x and its
/// gradient's window argmax 2x slower than the rolled channel loop). Except a
/// loop of at most kMaxUnrolled iterations that computes a math function (exp,
/// log, ...: after est-approximate-math, dozens of scalar instructions each) or
/// reduces a row of a row loop (a max, a sum, a cross-entropy over a few
/// classes), which is unrolled: the loop over rows is then innermost, and LLVM
/// vectorizes it, eight rows at a time (asked for by vectorizeEightWide where
/// the rows read i64 labels; docs/results.md, the iris-sized step).
void keepRolledInParallelBody(func::FuncOp body) {
  SmallVector<scf::ForOp> unroll;
  body.walk([&](scf::ForOp loop) {
    bool innermost = true;
    loop.getBody()->walk([&](scf::ForOp) { innermost = false; });
    std::optional<APInt> trips = loop.getStaticTripCount();
    if (!innermost || !isa<scf::ForOp>(loop->getParentOp()) || !trips ||
        trips->getSExtValue() > kMaxKeptRolled)
      return;
    bool math = false;
    loop.getBody()->walk([&](Operation *op) {
      if (isa<math::MathDialect>(op->getDialect()))
        math = true;
    });
    if ((math || reducesRow(loop)) && trips->getSExtValue() <= kMaxUnrolled)
      unroll.push_back(loop);
    else
      keepRolled(loop);
  });
  // Unrolled here, not left to LLVM: its full unrolling weighs the math
  // functions' expansions and may keep the loop, then vectorize the 3
  // classes with a masked 4-lane vector instead of the rows.
  for (scf::ForOp loop : unroll) {
    auto rows = dyn_cast<scf::ForOp>(loop->getParentOp());
    if (succeeded(loopUnrollFull(loop)) && rows && readsInt64(rows))
      vectorizeEightWide(rows);
  }
}

struct EstOutlineLoopNests
    : public mlir::est::impl::EstOutlineLoopNestsBase<EstOutlineLoopNests> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<func::FuncOp> entries;
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal() && func.isPublic())
        entries.push_back(func);
    for (func::FuncOp func : entries)
      if (failed(outlineAll(func, symbols)))
        return signalPassFailure();
  }

  LogicalResult outlineAll(func::FuncOp func, SymbolTable &symbols) {
    Value arena;
    if (func.getNumArguments() > 0) {
      auto type = dyn_cast<MemRefType>(func.getArgument(0).getType());
      if (type && type.getRank() == 1 && type.getElementType().isInteger(8))
        arena = func.getArgument(0);
    }
    SmallVector<linalg::LinalgOp> ops;
    func.walk([&](linalg::LinalgOp op) {
      if (!op.hasPureBufferSemantics())
        return;
      if (auto generic = dyn_cast<linalg::GenericOp>(op.getOperation()))
        if (generic.getLibraryCall())
          return;
      ops.push_back(op);
    });
    for (auto [i, op] : llvm::enumerate(ops))
      outline(op, func, arena, (func.getSymName() + "_loop" + Twine(i)).str(),
              symbols);
    // est-parallelize-loops' nests: launch(n, cost, captures...) runs
    // body(lo, hi, captures...); the captures get the same treatment.
    func.walk([&](func::CallOp call) {
      auto launch = symbols.lookup<func::FuncOp>(call.getCallee());
      auto bodyName =
          launch
              ? launch->getAttrOfType<FlatSymbolRefAttr>("estc.parallel_body")
              : FlatSymbolRefAttr();
      auto body = bodyName ? symbols.lookup<func::FuncOp>(bodyName.getValue())
                           : func::FuncOp();
      if (!body || body.getNumArguments() != call.getNumOperands())
        return;
      SmallVector<int64_t> noalias =
          noaliasPositions(llvm::to_vector(call.getOperands()), arena);
      if (!noalias.empty())
        body->setAttr(est::kNoAliasArgsAttr,
                      DenseI64ArrayAttr::get(body.getContext(), noalias));
      keepRolledInParallelBody(body);
    });
    return success();
  }

  void outline(linalg::LinalgOp op, func::FuncOp parent, Value arena,
               StringRef name, SymbolTable &symbols) {
    // Values the op uses: its operands, then those its body captures.
    SetVector<Value> used;
    for (Value operand : op->getOperands())
      used.insert(operand);
    getUsedValuesDefinedAbove(op->getRegions(), used);
    SmallVector<Value> arguments;
    SmallVector<Operation *> constants;
    for (Value value : used) {
      Operation *def = value.getDefiningOp();
      if (def && def->getNumOperands() == 0 &&
          def->hasTrait<OpTrait::ConstantLike>())
        constants.push_back(def);
      else
        arguments.push_back(value);
    }

    MLIRContext *ctx = op->getContext();
    OpBuilder b(parent);
    auto type = FunctionType::get(ctx, ValueRange(arguments).getTypes(), {});
    auto callee = func::FuncOp::create(b, op->getLoc(), name, type);
    callee.setPrivate();
    callee->setAttr("passthrough",
                    b.getArrayAttr({b.getStringAttr("noinline")}));
    symbols.insert(callee);

    SmallVector<int64_t> noalias = noaliasPositions(arguments, arena);
    if (!noalias.empty())
      callee->setAttr(est::kNoAliasArgsAttr, b.getDenseI64ArrayAttr(noalias));

    Block *body = callee.addEntryBlock();
    b.setInsertionPointToStart(body);
    IRMapping mapping;
    for (auto [argument, blockArg] : llvm::zip(arguments, body->getArguments()))
      mapping.map(argument, blockArg);
    for (Operation *constant : constants)
      b.clone(*constant, mapping);
    auto cloned = cast<linalg::LinalgOp>(b.clone(*op, mapping));
    func::ReturnOp::create(b, op->getLoc());
    lowerToLoops(cloned);

    b.setInsertionPoint(op);
    func::CallOp::create(b, op->getLoc(), callee, arguments);
    op->erase();
  }
};

} // namespace
