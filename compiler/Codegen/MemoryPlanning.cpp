//===- MemoryPlanning.cpp - est-memory-planning ---------------------------===//
//
// Places every temporary buffer of a function in its `arena` argument (the
// first one), so a compiled step performs no heap allocation.
//
// A function has up to three run-time sizes (docs/design/
// run-time-dimensions.md): the batch; `values`, the largest number of values
// of its sparse inputs (arguments marked `est.values_dim`: their dimension 0
// is a count of ids, not the batch; docs/design/feature-columns.md); and
// `length`, the sequence length of a padded batch (dimension 1 of an
// argument marked `est.sequence_dim`, and the dimensions an output argument
// lists in `est.sequence_dims`; every sequence input of a call has the same
// length). Every other dynamic dimension of an argument is the batch. Each
// memref.alloc needs `s + p * batch + v * n + q * length + r * batch *
// length` bytes, n being the number of values of the sparse input it
// derives from (at most `values`): its dynamic sizes are evaluated at a few
// (batch, values, length) points, the coefficients fitted and checked at
// more points, and no buffer may depend on both values and the batch or the
// length. The arena is laid out as
//
//   [ static: S ][ per-example: P * batch ][ per-value: V * values ]
//   [ per-step: Q * length ][ per-example-step: R * batch * length ]
//
// Allocations with p = v = q = r = 0 live in the static region at constant
// offsets, the others in the highest region their size needs (r != 0 or
// both p and q: per-example-step; q: per-step; v: per-value; p:
// per-example) at the region's start plus `o * unit` (unit = batch,
// values, length or batch * length), with a size per unit of
// round64(max(s, 0) + p + v + q + r): enough for every batch and length >=
// 1, as batch * length is at least the batch and the length. In each
// region offsets come from a greedy best fit, largest buffer first, against
// the buffers whose live intervals overlap (TFLite's arena planner). Sizes
// are rounded to 64 bytes, so every offset is 64-byte aligned for every
// batch, values and length.
//
// Live intervals are in positions of the function body's top-level ops: an
// allocation inside a region (an scf.for or scf.if body) and its uses count
// as the top-level op that holds them, so the buffer is live for that whole
// op (conservative: every iteration of a loop reuses the same bytes, and
// nothing else is placed there while the loop runs).
//
// A function with run-time checks (est.check_fail_if) gets a 64-byte status
// slot at the end of the static region (`estc.status_offset`). The module's
// `estc.arena` entry is [S, P] or [S, P, status offset], [S, P, status
// offset or -1, V] when the function has per-value buffers, and [S, P,
// status offset or -1, V, Q, R] when it has per-step or per-example-step
// ones.
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
/// perValueBytes * values + perStepBytes * length + perExampleStepBytes *
/// batch * length` bytes, and the byte offset of its run-time checks'
/// status slot (-1: no checks).
struct ArenaLayout {
  int64_t staticBytes, perExampleBytes, statusOffset, perValueBytes;
  int64_t perStepBytes = 0, perExampleStepBytes = 0;
};

/// The attribute marking an argument whose dimension 0 is a number of
/// sparse values (set by the importer from the placeholder's `values_dim`).
constexpr llvm::StringLiteral kValuesDimAttr = "est.values_dim";
/// The attribute marking an input whose dimension 1 is the sequence length
/// (the importer's, from the placeholder's `sequence_dim`), and the one
/// listing an output's dimensions that are (from the importer's
/// `est.sequence_dims` result attribute, kept by est-function-abi).
constexpr llvm::StringLiteral kSequenceDimAttr = "est.sequence_dim";
constexpr llvm::StringLiteral kSequenceDimsAttr = "est.sequence_dims";

/// Whether dimension `index` of argument `arg` of `func` is the sequence
/// length.
bool isSequenceDim(func::FuncOp func, unsigned arg, int64_t index) {
  if (index == 1 && func.getArgAttr(arg, kSequenceDimAttr))
    return true;
  if (auto dims =
          func.getArgAttrOfType<DenseI64ArrayAttr>(arg, kSequenceDimsAttr))
    return llvm::is_contained(dims.asArrayRef(), index);
  return false;
}

int64_t roundUp(int64_t bytes) {
  return (bytes + kAlignment - 1) / kAlignment * kAlignment;
}

/// Evaluates index computations of a function at a given batch size,
/// number of sparse values and sequence length.
class SizeEvaluator {
public:
  SizeEvaluator(func::FuncOp func, int64_t batch, int64_t values,
                int64_t length)
      : func(func), batch(batch), values(values), length(length) {}

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
      if (isSequenceDim(func, arg.getArgNumber(), index))
        return length;
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
  int64_t batch, values, length;
  llvm::DenseMap<Value, std::optional<int64_t>> cache;
};

struct Buffer {
  memref::AllocOp alloc;
  int64_t staticBytes = 0;         // s
  int64_t perExampleBytes = 0;     // p
  int64_t perValueBytes = 0;       // v
  int64_t perStepBytes = 0;        // q
  int64_t perExampleStepBytes = 0; // r
  int64_t start = 0, end = 0;      // live interval (top-level op indices)
  int64_t size = 0;                // bytes (per example in that region)
  int64_t offset = 0;              // in its region
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

  // (batch, values, length) points: the base, each size alone doubled,
  // batch and length both doubled (the batch * length term), then checks:
  // each size alone tripled, pairs doubled, and all three at other sizes
  // (which a term in batch * values or length squared would fail).
  constexpr int64_t kPoints[][3] = {{1, 1, 1}, {2, 1, 1}, {1, 2, 1}, {1, 1, 2},
                                    {2, 1, 2}, {3, 1, 1}, {1, 3, 1}, {1, 1, 3},
                                    {2, 2, 1}, {1, 2, 2}, {3, 2, 3}, {3, 1, 5}};
  std::vector<SizeEvaluator> evaluators;
  for (auto [batchSize, valueCount, length] : kPoints)
    evaluators.emplace_back(func, batchSize, valueCount, length);
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
    // sizes = s + p * batch + v * values + q * length + r * batch * length.
    int64_t r = sizes[4] - sizes[1] - sizes[3] + sizes[0];
    int64_t p = sizes[1] - sizes[0] - r, v = sizes[2] - sizes[0];
    int64_t q = sizes[3] - sizes[0] - r;
    int64_t s = sizes[0] - p - v - q - r;
    bool fits = p >= 0 && v >= 0 && q >= 0 && r >= 0;
    for (auto [point, size] : llvm::zip(kPoints, sizes)) {
      auto [batchSize, valueCount, length] = point;
      fits &= size == s + p * batchSize + v * valueCount + q * length +
                          r * batchSize * length;
    }
    if (!fits)
      return alloc.emitError("est-memory-planning: the size of ")
             << type << " is not linear in the batch size";
    if (p != 0 && v != 0)
      return alloc.emitError("est-memory-planning: the size of ")
             << type
             << " depends on both the batch and a number of sparse values";
    if (v != 0 && (q != 0 || r != 0))
      return alloc.emitError("est-memory-planning: the size of ")
             << type
             << " depends on both the sequence length and a number of "
                "sparse values";
    buffer.staticBytes = s;
    buffer.perExampleBytes = p;
    buffer.perValueBytes = v;
    buffer.perStepBytes = q;
    buffer.perExampleStepBytes = r;
    // In the highest region the size needs: batch and length together
    // (r, or both p and q) go per example and step.
    if (r != 0 || (p != 0 && q != 0)) {
      buffer.perExampleStepBytes = p + q + r;
      buffer.perExampleBytes = buffer.perStepBytes = 0;
    }
    int64_t perUnit = p + v + q + r;
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

  SmallVector<Buffer *> staticBuffers, perExampleBuffers, perValueBuffers,
      perStepBuffers, perExampleStepBuffers;
  for (Buffer &buffer : buffers)
    (buffer.perExampleStepBytes != 0 ? perExampleStepBuffers
     : buffer.perStepBytes != 0      ? perStepBuffers
     : buffer.perExampleBytes != 0   ? perExampleBuffers
     : buffer.perValueBytes != 0     ? perValueBuffers
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
  int64_t perStepTotal = place(perStepBuffers);
  int64_t perExampleStepTotal = place(perExampleStepBuffers);
  bool needsBatch = !perExampleBuffers.empty() ||
                    !perExampleStepBuffers.empty() ||
                    (perExampleTotal != 0 &&
                     (!perValueBuffers.empty() || !perStepBuffers.empty()));
  bool needsValues = !perValueBuffers.empty() ||
                     (perValueTotal != 0 && (!perStepBuffers.empty() ||
                                             !perExampleStepBuffers.empty()));
  bool needsLength = !perStepBuffers.empty() || !perExampleStepBuffers.empty();

  // The run-time sizes, for the offsets: the batch is a dynamic dimension
  // of an argument that is not a sparse input's values nor a sequence
  // length; `values` the largest dimension 0 of the sparse inputs; `length`
  // dimension 1 of the first sequence input (all have the same).
  Value batch, values, length;
  OpBuilder b = OpBuilder::atBlockBegin(&body);
  Location loc = func.getLoc();
  for (BlockArgument arg : body.getArguments().drop_front()) {
    auto type = dyn_cast<MemRefType>(arg.getType());
    if (!type || type.getNumDynamicDims() == 0)
      continue;
    unsigned argNumber = arg.getArgNumber();
    if (!length && needsLength &&
        func.getArgAttr(argNumber, kSequenceDimAttr) && type.getRank() > 1 &&
        type.isDynamicDim(1))
      length = memref::DimOp::create(b, loc, arg, 1);
    bool sparse =
        func.getArgAttr(argNumber, kValuesDimAttr) && type.isDynamicDim(0);
    if (sparse) {
      if (!needsValues)
        continue;
      Value count = memref::DimOp::create(b, loc, arg, 0);
      values = values ? arith::MaxUIOp::create(b, loc, values, count) : count;
      if (type.getNumDynamicDims() == 1)
        continue;
    }
    if (batch || !needsBatch)
      continue;
    // Its first dynamic dimension that is neither a number of values nor a
    // sequence length, if any, is the batch.
    for (int64_t d = sparse ? 1 : 0; d < type.getRank(); ++d) {
      if (!type.isDynamicDim(d) || isSequenceDim(func, argNumber, d))
        continue;
      batch = memref::DimOp::create(b, loc, arg, d);
      break;
    }
  }
  if (needsBatch && !batch)
    return func.emitError("est-memory-planning: '")
           << func.getSymName() << "' has batch-sized buffers but no "
           << "argument with a dynamic dimension";
  if (needsValues && !values)
    return func.emitError("est-memory-planning: '")
           << func.getSymName() << "' has buffers sized by sparse values "
           << "but no argument marked " << kValuesDimAttr;
  if (needsLength && !length)
    return func.emitError("est-memory-planning: '")
           << func.getSymName() << "' has buffers sized by a sequence "
           << "length but no argument marked " << kSequenceDimAttr;

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
    } else if (buffer.perStepBytes != 0 || buffer.perExampleStepBytes != 0) {
      // S + P * batch + V * values + o * length, or that + Q * length + o *
      // batch * length; empty regions before it add nothing.
      Value base = constant(staticTotal);
      auto addScaled = [&](Value size, int64_t bytes) {
        if (bytes != 0)
          base = arith::AddIOp::create(
              b, loc, base,
              arith::MulIOp::create(b, loc, size, constant(bytes)));
      };
      addScaled(batch, perExampleTotal);
      addScaled(values, perValueTotal);
      Value unit = length;
      if (buffer.perExampleStepBytes != 0) {
        addScaled(length, perStepTotal);
        unit = arith::MulIOp::create(b, loc, batch, length);
      }
      Value scaled =
          arith::MulIOp::create(b, loc, unit, constant(buffer.offset));
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
  return ArenaLayout{staticTotal,   perExampleTotal, statusOffset,
                     perValueTotal, perStepTotal,    perExampleStepTotal};
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
    auto [s, p, status, v, q, r] = *arena;
    arenas.push_back(NamedAttribute(
        func.getSymNameAttr(),
        q != 0 || r != 0 ? DenseI64ArrayAttr::get(ctx, {s, p, status, v, q, r})
        : v != 0         ? DenseI64ArrayAttr::get(ctx, {s, p, status, v})
        : status < 0     ? DenseI64ArrayAttr::get(ctx, {s, p})
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
