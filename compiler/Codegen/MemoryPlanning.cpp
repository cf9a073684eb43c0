//===- MemoryPlanning.cpp - est-memory-planning ---------------------------===//
//
// Places every temporary buffer of a function in its `arena` argument (the
// first one), so a compiled step performs no heap allocation.
//
// A function has up to two run-time sizes: the batch, and `values`, the
// largest number of values of its sparse inputs (arguments marked
// `est.values_dim`: their dimension 0 is a count of ids, not the batch;
// docs/design/feature-columns.md). Every other dynamic dimension of an
// argument is the batch. Each memref.alloc needs `s + p * batch + v * n`
// bytes, n being the number of values of the sparse input it derives from
// (at most `values`): its dynamic sizes are evaluated at a few (batch,
// values) points and must be linear in each, and no buffer may depend on
// both. The arena is laid out as
//
//   [ static: S bytes ][ per-example: P * batch ][ per-value: V * values ]
//
// Allocations with p = v = 0 live in the static region at constant
// offsets, the others in the region of their size at `S + o * batch` or
// `S + P * batch + o * values`, with per-unit size q = round64(max(s, 0) +
// p) (or + v: enough for every size >= 1). In each region offsets come from
// a greedy best fit, largest buffer first, against the buffers whose live
// intervals overlap (TFLite's arena planner). Sizes are rounded to 64
// bytes, so every offset is 64-byte aligned for every batch and values.
//
// A function with run-time checks (est.check_fail_if) gets a 64-byte status
// slot at the end of the static region (`estc.status_offset`). The module's
// `estc.arena` entry is [S, P] or [S, P, status offset], and [S, P, status
// offset or -1, V] when the function has per-value buffers.
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

/// A function's arena: `staticBytes + perExampleBytes * batch +
/// perValueBytes * values` bytes, and the byte offset of its run-time
/// checks' status slot (-1: no checks).
struct ArenaLayout {
  int64_t staticBytes, perExampleBytes, statusOffset, perValueBytes;
};

/// The attribute marking an argument whose dimension 0 is a number of
/// sparse values (set by the importer from the placeholder's `values_dim`).
constexpr llvm::StringLiteral kValuesDimAttr = "est.values_dim";

int64_t roundUp(int64_t bytes) {
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

/// Evaluates index computations of a function at a given batch size and
/// number of sparse values.
class SizeEvaluator {
public:
  SizeEvaluator(func::FuncOp func, int64_t batch, int64_t values)
      : func(func), batch(batch), values(values) {}

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
      // The arena's size is neither the batch nor a number of values.
      if (arg.getOwner() != &func.getBody().front() || arg.getArgNumber() == 0)
        return std::nullopt;
      if (index == 0 && func.getArgAttr(arg.getArgNumber(), kValuesDimAttr))
        return values;
      return batch;
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
  int64_t batch, values;
  llvm::DenseMap<Value, std::optional<int64_t>> cache;
};

struct Buffer {
  memref::AllocOp alloc;
  int64_t staticBytes = 0;     // s
  int64_t perExampleBytes = 0; // p
  int64_t perValueBytes = 0;   // v
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
    return checked ? ArenaLayout{kAlignment, 0, 0, 0}
                   : ArenaLayout{0, 0, -1, 0};

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

  // (batch, values) points: the base, each size alone doubled and tripled,
  // and both doubled (which a term in batch * values would fail).
  constexpr int64_t kPoints[][2] = {{1, 1}, {2, 1}, {1, 2},
                                    {3, 1}, {1, 3}, {2, 2}};
  std::vector<SizeEvaluator> evaluators;
  for (auto [batchSize, valueCount] : kPoints)
    evaluators.emplace_back(func, batchSize, valueCount);
  std::vector<Buffer> buffers(allocs.size());
  for (auto [buffer, alloc] : llvm::zip(buffers, allocs)) {
    buffer.alloc = alloc;
    MemRefType type = alloc.getType();
    int64_t bytes = elementBytes(type.getElementType());
    if (!bytes || !type.getLayout().isIdentity())
      return alloc.emitError("est-memory-planning: cannot place ") << type;
    int64_t sizes[std::size(kPoints)];
    for (auto [i, evaluator] : llvm::enumerate(evaluators)) {
      int64_t elements = 1;
      unsigned dynamic = 0;
      for (int64_t dim : type.getShape()) {
        if (!ShapedType::isDynamic(dim)) {
          elements *= dim;
          continue;
        }
        std::optional<int64_t> size =
            evaluator.eval(alloc.getDynamicSizes()[dynamic++]);
        if (!size || *size < 0)
          return alloc.emitError("est-memory-planning: the size of ")
                 << type << " is not a computation on the batch size";
        elements *= *size;
      }
      sizes[i] = elements * bytes;
    }
    int64_t p = sizes[1] - sizes[0], v = sizes[2] - sizes[0];
    int64_t s = sizes[0] - p - v;
    if (sizes[3] != s + 3 * p + v || sizes[4] != s + p + 3 * v ||
        sizes[5] != s + 2 * p + 2 * v || p < 0 || v < 0)
      return alloc.emitError("est-memory-planning: the size of ")
             << type << " is not linear in the batch size";
    if (p != 0 && v != 0)
      return alloc.emitError("est-memory-planning: the size of ")
             << type
             << " depends on both the batch and a number of sparse values";
    buffer.staticBytes = s;
    buffer.perExampleBytes = p;
    buffer.perValueBytes = v;
    int64_t perUnit = p + v;
    buffer.size =
        perUnit == 0 ? roundUp(s) : roundUp(std::max<int64_t>(s, 0) + perUnit);

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

  SmallVector<Buffer *> staticBuffers, perExampleBuffers, perValueBuffers;
  for (Buffer &buffer : buffers)
    (buffer.perExampleBytes != 0 ? perExampleBuffers
     : buffer.perValueBytes != 0 ? perValueBuffers
                                 : staticBuffers)
        .push_back(&buffer);
  int64_t staticTotal = place(staticBuffers);
  // The status slot of the run-time checks ends the static region.
  int64_t statusOffset = -1;
  if (checked) {
    statusOffset = staticTotal;
    staticTotal += kAlignment;
  }
  int64_t perExampleTotal = place(perExampleBuffers);
  int64_t perValueTotal = place(perValueBuffers);

  // The run-time sizes, for the offsets: the batch is a dynamic dimension
  // of an argument that is not a sparse input's values; `values` the
  // largest dimension 0 of the sparse inputs.
  Value batch, values;
  OpBuilder b = OpBuilder::atBlockBegin(&body);
  Location loc = func.getLoc();
  for (BlockArgument arg : body.getArguments().drop_front()) {
    auto type = dyn_cast<MemRefType>(arg.getType());
    if (!type || type.getNumDynamicDims() == 0)
      continue;
    bool sparse = func.getArgAttr(arg.getArgNumber(), kValuesDimAttr) &&
                  type.isDynamicDim(0);
    if (sparse) {
      if (perValueBuffers.empty())
        continue;
      Value count = memref::DimOp::create(b, loc, arg, 0);
      values = values ? arith::MaxUIOp::create(b, loc, values, count) : count;
      // Its other dynamic dimensions, if any, are the batch.
      if (type.getNumDynamicDims() == 1)
        continue;
    }
    if (batch || perExampleBuffers.empty())
      continue;
    int64_t dim = llvm::find_if(type.getShape().drop_front(sparse ? 1 : 0),
                                ShapedType::isDynamic) -
                  type.getShape().begin();
    batch = memref::DimOp::create(b, loc, arg, dim);
  }
  if (!perExampleBuffers.empty() && !batch)
    return func.emitError("est-memory-planning: '")
           << func.getSymName() << "' has batch-sized buffers but no "
           << "argument with a dynamic dimension";
  if (!perValueBuffers.empty() && !values)
    return func.emitError("est-memory-planning: '")
           << func.getSymName() << "' has buffers sized by sparse values "
           << "but no argument marked " << kValuesDimAttr;

  for (Buffer &buffer : buffers) {
    memref::AllocOp alloc = buffer.alloc;
    b.setInsertionPoint(alloc);
    Location loc = alloc.getLoc();
    auto constant = [&](int64_t c) {
      return arith::ConstantIndexOp::create(b, loc, c);
    };
    Value offset;
    if (buffer.perExampleBytes != 0) {
      Value scaled =
          arith::MulIOp::create(b, loc, batch, constant(buffer.offset));
      offset = arith::AddIOp::create(b, loc, scaled, constant(staticTotal));
    } else if (buffer.perValueBytes != 0) {
      // S + P * batch + o * values. The batch of a function whose
      // per-example region is empty does not matter.
      Value base = constant(staticTotal);
      if (perExampleTotal != 0)
        base = arith::AddIOp::create(
            b, loc, base,
            arith::MulIOp::create(b, loc, batch, constant(perExampleTotal)));
      Value scaled =
          arith::MulIOp::create(b, loc, values, constant(buffer.offset));
      offset = arith::AddIOp::create(b, loc, scaled, base);
    } else {
      offset = constant(buffer.offset);
    }
    auto view = memref::ViewOp::create(b, loc, alloc.getType(), arena, offset,
                                       alloc.getDynamicSizes());
    for (Operation *user : llvm::make_early_inc_range(alloc->getUsers()))
      if (isa<memref::DeallocOp>(user))
        user->erase();
    alloc.replaceAllUsesWith(view.getResult());
    alloc.erase();
  }
  return ArenaLayout{staticTotal, perExampleTotal, statusOffset, perValueTotal};
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
    auto [s, p, status, v] = *arena;
    arenas.push_back(NamedAttribute(
        func.getSymNameAttr(),
        v != 0       ? DenseI64ArrayAttr::get(ctx, {s, p, status, v})
        : status < 0 ? DenseI64ArrayAttr::get(ctx, {s, p})
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
