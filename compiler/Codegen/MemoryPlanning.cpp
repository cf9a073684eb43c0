//===- MemoryPlanning.cpp - est-memory-planning ---------------------------===//
//
// Places every temporary buffer of a function in its `arena` argument (the
// first one), so a compiled step performs no heap allocation.
//
// Each memref.alloc needs `s + p * batch` bytes: its dynamic sizes are
// evaluated at batch 1, 2 and 3 (every dynamic dimension of an argument is
// the batch) and must be linear in it. The arena is laid out as
//
//   [ static region: S bytes ][ per-example region: P * batch bytes ]
//
// Allocations with p = 0 live in the static region at constant offsets; the
// others in the per-example region at `S + o * batch`, with per-example size
// q = round64(max(s, 0) + p) (enough for every batch >= 1). In each region
// offsets come from a greedy best fit, largest buffer first, against the
// buffers whose live intervals overlap (TFLite's arena planner). Sizes are
// rounded to 64 bytes, so every offset is 64-byte aligned for every batch.
//
// A function with run-time checks (est.check_fail_if) gets a 64-byte status
// slot at the end of the static region (`estc.status_offset`; the module's
// `estc.arena` entry is then [S, P, status offset] instead of [S, P]).
//
//===----------------------------------------------------------------------===//

#include "compiler/Codegen/Passes.h"
#include "dialects/Est/IR/EstOps.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/DenseMap.h"

namespace mlir {
namespace est {
#define GEN_PASS_DEF_ESTMEMORYPLANNING
#include "compiler/Codegen/Passes.h.inc"
} // namespace est
} // namespace mlir

using namespace mlir;

namespace {

constexpr int64_t kAlignment = 64;

/// A function's arena: `staticBytes + perExampleBytes * batch` bytes, and the
/// byte offset of its run-time checks' status slot (-1: no checks).
struct ArenaLayout {
  int64_t staticBytes, perExampleBytes, statusOffset;
};

int64_t roundUp(int64_t bytes) {
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

/// Evaluates index computations of a function at a given batch size.
class SizeEvaluator {
public:
  SizeEvaluator(func::FuncOp func, int64_t batch) : func(func), batch(batch) {}

  std::optional<int64_t> eval(Value value) {
    auto it = cache.find(value);
    if (it != cache.end())
      return it->second;
    std::optional<int64_t> result = compute(value);
    cache[value] = result;
    return result;
  }

private:
  std::optional<int64_t> compute(Value value) {
    APInt constant;
    if (matchPattern(value, m_ConstantInt(&constant)))
      return constant.getSExtValue();
    Operation *op = value.getDefiningOp();
    if (!op)
      return std::nullopt;
    if (auto dim = dyn_cast<memref::DimOp>(op))
      return evalDim(dim.getSource(), dim.getIndex());
    if (isa<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtSIOp,
            arith::ExtUIOp, arith::TruncIOp>(op))
      return eval(op->getOperand(0));
    if (auto apply = dyn_cast<affine::AffineApplyOp>(op)) {
      SmallVector<Attribute> operands;
      for (Value operand : apply.getMapOperands()) {
        std::optional<int64_t> v = eval(operand);
        if (!v)
          return std::nullopt;
        operands.push_back(
            IntegerAttr::get(IndexType::get(op->getContext()), *v));
      }
      SmallVector<Attribute> results;
      if (failed(apply.getAffineMap().constantFold(operands, results)) ||
          results.size() != 1)
        return std::nullopt;
      return cast<IntegerAttr>(results[0]).getInt();
    }
    if (op->getNumOperands() != 2)
      return std::nullopt;
    std::optional<int64_t> lhs = eval(op->getOperand(0));
    std::optional<int64_t> rhs = eval(op->getOperand(1));
    if (!lhs || !rhs)
      return std::nullopt;
    int64_t a = *lhs, b = *rhs;
    if (isa<arith::AddIOp>(op))
      return a + b;
    if (isa<arith::SubIOp>(op))
      return a - b;
    if (isa<arith::MulIOp>(op))
      return a * b;
    if (isa<arith::MaxSIOp, arith::MaxUIOp>(op))
      return std::max(a, b);
    if (isa<arith::MinSIOp, arith::MinUIOp>(op))
      return std::min(a, b);
    if (b == 0)
      return std::nullopt;
    if (isa<arith::DivSIOp, arith::DivUIOp, arith::FloorDivSIOp>(op))
      return a >= 0 ? a / b : -((-a + b - 1) / b);
    if (isa<arith::CeilDivSIOp, arith::CeilDivUIOp>(op))
      return (a + b - 1) / b;
    if (isa<arith::RemSIOp, arith::RemUIOp>(op))
      return a % b;
    return std::nullopt;
  }

  std::optional<int64_t> evalDim(Value source, Value indexValue) {
    std::optional<int64_t> index = eval(indexValue);
    if (!index)
      return std::nullopt;
    return evalDimAt(source, *index);
  }

  std::optional<int64_t> evalDimAt(Value source, int64_t index) {
    auto type = dyn_cast<MemRefType>(source.getType());
    if (!type || index < 0 || index >= type.getRank())
      return std::nullopt;
    if (!type.isDynamicDim(index))
      return type.getDimSize(index);
    if (auto arg = dyn_cast<BlockArgument>(source)) {
      // The arena's size is not the batch.
      if (arg.getOwner() == &func.getBody().front() && arg.getArgNumber() != 0)
        return batch;
      return std::nullopt;
    }
    Operation *op = source.getDefiningOp();
    if (auto alloc = dyn_cast<memref::AllocOp>(op))
      return eval(alloc.getDynamicSizes()[type.getDynamicDimIndex(index)]);
    // Views: the dimension follows from the viewed buffer or from the view's
    // own size operands.
    if (auto cast = dyn_cast<memref::CastOp>(op))
      return evalDimAt(cast.getSource(), index);
    if (auto collapse = dyn_cast<memref::CollapseShapeOp>(op)) {
      int64_t product = 1;
      // A local copy: the reassociation is returned by value.
      SmallVector<ReassociationIndices> groups =
          collapse.getReassociationIndices();
      for (int64_t d : groups[index]) {
        std::optional<int64_t> size = evalDimAt(collapse.getSrc(), d);
        if (!size)
          return std::nullopt;
        product *= *size;
      }
      return product;
    }
    if (auto expand = dyn_cast<memref::ExpandShapeOp>(op))
      return evalOpFoldResult(expand.getMixedOutputShape()[index]);
    if (auto sized = dyn_cast<OffsetSizeAndStrideOpInterface>(op))
      if (sized.getMixedSizes().size() == static_cast<size_t>(type.getRank()))
        return evalOpFoldResult(sized.getMixedSizes()[index]);
    return std::nullopt;
  }

  std::optional<int64_t> evalOpFoldResult(OpFoldResult value) {
    if (auto attr = dyn_cast<Attribute>(value))
      return cast<IntegerAttr>(attr).getInt();
    return eval(cast<Value>(value));
  }

  func::FuncOp func;
  int64_t batch;
  llvm::DenseMap<Value, std::optional<int64_t>> cache;
};

struct Buffer {
  memref::AllocOp alloc;
  int64_t staticBytes = 0;     // s
  int64_t perExampleBytes = 0; // p
  int64_t start = 0, end = 0;  // live interval (top-level op indices)
  int64_t size = 0;            // bytes (per example in that region)
  int64_t offset = 0;          // in its region
};

int64_t elementBytes(Type type) {
  if (type.isIndex())
    return 8;
  if (type.isIntOrFloat())
    return (type.getIntOrFloatBitWidth() + 7) / 8;
  return 0;
}

/// Greedy best fit, largest first. Returns the region's size.
int64_t place(MutableArrayRef<Buffer *> buffers) {
  llvm::stable_sort(buffers, [](const Buffer *a, const Buffer *b) {
    return a->size > b->size;
  });
  SmallVector<Buffer *> placed;
  int64_t total = 0;
  for (Buffer *buffer : buffers) {
    SmallVector<Buffer *> live;
    for (Buffer *other : placed)
      if (other->start <= buffer->end && buffer->start <= other->end)
        live.push_back(other);
    llvm::sort(live, [](const Buffer *a, const Buffer *b) {
      return a->offset < b->offset;
    });
    int64_t cursor = 0, best = -1, bestGap = 0;
    for (Buffer *other : live) {
      int64_t gap = other->offset - cursor;
      if (gap >= buffer->size && (best < 0 || gap < bestGap)) {
        best = cursor;
        bestGap = gap;
      }
      cursor = std::max(cursor, other->offset + other->size);
    }
    buffer->offset = best >= 0 ? best : cursor;
    total = std::max(total, buffer->offset + buffer->size);
    placed.push_back(buffer);
  }
  return total;
}

struct EstMemoryPlanning
    : public mlir::est::impl::EstMemoryPlanningBase<EstMemoryPlanning> {
  void runOnOperation() override;
  FailureOr<ArenaLayout> plan(func::FuncOp func);
};

FailureOr<ArenaLayout> EstMemoryPlanning::plan(func::FuncOp func) {
  SmallVector<memref::AllocOp> allocs;
  func.walk([&](memref::AllocOp alloc) { allocs.push_back(alloc); });
  bool checked = false;
  func.walk([&](est::CheckFailIfOp) { checked = true; });
  if (allocs.empty())
    return checked ? ArenaLayout{kAlignment, 0, 0} : ArenaLayout{0, 0, -1};

  Block &body = func.getBody().front();
  auto arenaType = body.getNumArguments() == 0
                       ? MemRefType()
                       : dyn_cast<MemRefType>(body.getArgument(0).getType());
  if (!func.getBody().hasOneBlock() || !arenaType || arenaType.getRank() != 1 ||
      !arenaType.getElementType().isInteger(8) ||
      !arenaType.getLayout().isIdentity())
    return func.emitError("est-memory-planning: function '")
           << func.getSymName()
           << "' needs one block and a memref<?xi8> arena first argument "
              "(run est-function-abi first)";
  Value arena = body.getArgument(0);

  // Top-level position of every op.
  llvm::DenseMap<Operation *, int64_t> position;
  for (auto [i, op] : llvm::enumerate(body))
    position[&op] = i;
  auto positionOf = [&](Operation *op) {
    return position.lookup(body.findAncestorOpInBlock(*op));
  };

  SizeEvaluator at1(func, 1), at2(func, 2), at3(func, 3);
  std::vector<Buffer> buffers(allocs.size());
  for (auto [buffer, alloc] : llvm::zip(buffers, allocs)) {
    buffer.alloc = alloc;
    MemRefType type = alloc.getType();
    int64_t bytes = elementBytes(type.getElementType());
    if (!bytes || !type.getLayout().isIdentity())
      return alloc.emitError("est-memory-planning: cannot place ") << type;
    int64_t sizes[3];
    for (auto [i, evaluator] :
         llvm::enumerate(std::array<SizeEvaluator *, 3>{&at1, &at2, &at3})) {
      int64_t elements = 1;
      unsigned dynamic = 0;
      for (int64_t dim : type.getShape()) {
        if (!ShapedType::isDynamic(dim)) {
          elements *= dim;
          continue;
        }
        std::optional<int64_t> size =
            evaluator->eval(alloc.getDynamicSizes()[dynamic++]);
        if (!size || *size < 0)
          return alloc.emitError("est-memory-planning: the size of ")
                 << type << " is not a computation on the batch size";
        elements *= *size;
      }
      sizes[i] = elements * bytes;
    }
    int64_t p = sizes[1] - sizes[0], s = sizes[0] - p;
    if (sizes[2] != s + 3 * p || p < 0)
      return alloc.emitError("est-memory-planning: the size of ")
             << type << " is not linear in the batch size";
    buffer.staticBytes = s;
    buffer.perExampleBytes = p;
    buffer.size = p == 0 ? roundUp(s) : roundUp(std::max<int64_t>(s, 0) + p);

    // Live from the alloc to the last use of it or of any view of it.
    buffer.start = buffer.end = positionOf(alloc);
    SmallVector<Value> aliases = {alloc.getResult()};
    for (unsigned i = 0; i < aliases.size(); ++i) {
      for (Operation *user : aliases[i].getUsers()) {
        if (user->hasTrait<OpTrait::IsTerminator>() &&
            !isa<func::ReturnOp>(user))
          return user->emitError("est-memory-planning: a buffer that escapes "
                                 "its region is not supported");
        buffer.end = std::max(buffer.end, positionOf(user));
        for (Value result : user->getResults())
          if (isa<BaseMemRefType>(result.getType()))
            aliases.push_back(result);
      }
    }
  }

  SmallVector<Buffer *> staticBuffers, perExampleBuffers;
  for (Buffer &buffer : buffers)
    (buffer.perExampleBytes == 0 ? staticBuffers : perExampleBuffers)
        .push_back(&buffer);
  int64_t staticTotal = place(staticBuffers);
  // The status slot of the run-time checks ends the static region.
  int64_t statusOffset = -1;
  if (checked) {
    statusOffset = staticTotal;
    staticTotal += kAlignment;
  }
  int64_t perExampleTotal = place(perExampleBuffers);

  // The batch, for per-example offsets: a dynamic dim of an argument.
  Value batch;
  OpBuilder b = OpBuilder::atBlockBegin(&body);
  if (!perExampleBuffers.empty()) {
    for (BlockArgument arg : body.getArguments().drop_front()) {
      auto type = dyn_cast<MemRefType>(arg.getType());
      if (!type || type.getNumDynamicDims() == 0)
        continue;
      int64_t dim = llvm::find_if(type.getShape(), ShapedType::isDynamic) -
                    type.getShape().begin();
      batch = memref::DimOp::create(b, func.getLoc(), arg, dim);
      break;
    }
    if (!batch)
      return func.emitError("est-memory-planning: '")
             << func.getSymName() << "' has batch-sized buffers but no "
             << "argument with a dynamic dimension";
  }

  for (Buffer &buffer : buffers) {
    memref::AllocOp alloc = buffer.alloc;
    b.setInsertionPoint(alloc);
    Location loc = alloc.getLoc();
    Value offset;
    if (buffer.perExampleBytes == 0) {
      offset = arith::ConstantIndexOp::create(b, loc, buffer.offset);
    } else {
      Value scaled = arith::MulIOp::create(
          b, loc, batch, arith::ConstantIndexOp::create(b, loc, buffer.offset));
      offset = arith::AddIOp::create(
          b, loc, scaled, arith::ConstantIndexOp::create(b, loc, staticTotal));
    }
    auto view = memref::ViewOp::create(b, loc, alloc.getType(), arena, offset,
                                       alloc.getDynamicSizes());
    for (Operation *user : llvm::make_early_inc_range(alloc->getUsers()))
      if (isa<memref::DeallocOp>(user))
        user->erase();
    alloc.replaceAllUsesWith(view.getResult());
    alloc.erase();
  }
  return ArenaLayout{staticTotal, perExampleTotal, statusOffset};
}

void EstMemoryPlanning::runOnOperation() {
  ModuleOp module = getOperation();
  MLIRContext *ctx = module.getContext();
  SmallVector<NamedAttribute> arenas;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isExternal())
      continue;
    FailureOr<ArenaLayout> arena = plan(func);
    if (failed(arena))
      return signalPassFailure();
    auto [s, p, status] = *arena;
    arenas.push_back(NamedAttribute(
        func.getSymNameAttr(),
        status < 0 ? DenseI64ArrayAttr::get(ctx, {s, p})
                   : DenseI64ArrayAttr::get(ctx, {s, p, status})));
    if (status >= 0)
      func->setAttr("estc.status_offset",
                    IntegerAttr::get(IntegerType::get(ctx, 64), status));
    func->setAttr("estc.arena_bytes_batch128",
                  IntegerAttr::get(IntegerType::get(ctx, 64), s + p * 128));
  }
  module->setAttr("estc.arena", DictionaryAttr::get(ctx, arenas));

  // Nothing may allocate on the heap any more.
  WalkResult leftover = module.walk([](Operation *op) {
    if (isa<memref::AllocOp, memref::ReallocOp>(op))
      return op->emitError("est-memory-planning: heap allocation left"),
             WalkResult::interrupt();
    if (auto call = dyn_cast<func::CallOp>(op);
        call &&
        (call.getCallee() == "malloc" || call.getCallee() == "aligned_alloc"))
      return op->emitError("est-memory-planning: heap allocation left"),
             WalkResult::interrupt();
    return WalkResult::advance();
  });
  if (leftover.wasInterrupted())
    signalPassFailure();
}

} // namespace
