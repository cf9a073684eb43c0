//===- GpuMapLoops.cpp - est-gpu-map-loops --------------------------------===//
//
// CUDA's gpu stage maps the step onto the device (docs/design/gpu.md):
//
//   linalg op on buffers  -> gpu.launch, one thread per parallel iteration
//                            (linearized, 256 a block, bounds-guarded), the
//                            reduction iterations in order inside the thread
//   est.check_fail_if     -> a one-thread gpu.launch writing the status slot
//
// and every kernel after a function's first check first reads the status
// slot's first word and does nothing when a check has failed. The host code
// left around the launches only does descriptor arithmetic, kernel calls
// and launches: a scalar it computed from a buffer (a check's offending
// value) is recomputed inside the kernel that uses it.
//
// Why a launch per op rather than upstream's scf.parallel tiling and
// gpu-map-parallel-loops: the linearized 1-D launch needs no tiling
// heuristics, works for any rank and dynamic sizes, and keeps a reduction
// whole inside one thread, in the op's order, so results are bit-identical
// for any launch shape (the CPU's determinism, docs/architecture.md).
//
//===----------------------------------------------------------------------===//

#include "compiler/Codegen/Passes.h"
#include "dialects/Est/IR/EstOps.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Affine/Utils.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/RegionUtils.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

namespace mlir {
namespace est {
#define GEN_PASS_DEF_ESTGPUMAPLOOPS
#include "compiler/Codegen/Passes.h.inc"
} // namespace est
} // namespace mlir

using namespace mlir;

namespace {

/// Threads per block of every loop kernel.
constexpr int64_t kBlockSize = 256;
/// Threads per block of a block sum (mapBlockReduction): its blocks are few
/// (one per output element) and each thread's loads wait on memory, so
/// more threads keep more loads in flight.
constexpr int64_t kSumBlockSize = 1024;
/// Independent sums per thread of a block sum: loads in flight per thread.
constexpr int64_t kSumUnroll = 4;

/// Host values that come from device memory: a memref.load, or an op
/// without writes (an scf.if around a load, arithmetic) that uses one. Such
/// a value cannot exist on the host; the kernels that use it recompute it.
class DeviceScalars {
public:
  bool fromDevice(Value value) {
    Operation *def = value.getDefiningOp();
    if (!def || isa<gpu::LaunchOp>(def))
      return false;
    auto it = known.find(def);
    if (it != known.end())
      return it->second;
    known[def] = false; // no cycles in SSA, but be safe
    bool result = false;
    if (!writesMemory(def)) {
      def->walk([&](memref::LoadOp) { result = true; });
      if (!result)
        for (Value operand : capturedOperands(def))
          if (fromDevice(operand)) {
            result = true;
            break;
          }
    }
    known[def] = result;
    return result;
  }

  /// The operands of `op` and the values its regions use from above.
  static SmallVector<Value> capturedOperands(Operation *op) {
    SmallVector<Value> values(op->getOperands());
    llvm::SetVector<Value> above;
    for (Region &region : op->getRegions())
      getUsedValuesDefinedAbove(region, above);
    values.append(above.begin(), above.end());
    return values;
  }

private:
  static bool writesMemory(Operation *op) {
    bool writes = false;
    op->walk([&](Operation *inner) {
      if (isa<memref::LoadOp>(inner) || isMemoryEffectFree(inner) ||
          inner->hasTrait<OpTrait::IsTerminator>() ||
          inner->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
        return;
      writes = true;
    });
    return writes;
  }

public:
  /// Forgets every answer (ops are about to be erased).
  void clear() { known.clear(); }

private:
  llvm::DenseMap<Operation *, bool> known;
};

struct EstGpuMapLoops : public est::impl::EstGpuMapLoopsBase<EstGpuMapLoops> {
  void runOnOperation() override;

private:
  /// The buffers (their roots) `op`, a host op between a host read and the
  /// kernel that recomputes it, may write; None: anything.
  std::optional<SmallVector<Value>> writtenRoots(Operation *op);

  LogicalResult mapFunction(func::FuncOp func);
  gpu::LaunchOp mapLinalgOp(linalg::LinalgOp op, Value status);
  gpu::LaunchOp mapBlockReduction(linalg::LinalgOp op, Value status,
                                  ArrayRef<unsigned> threadDims,
                                  ArrayRef<unsigned> serialDims,
                                  ArrayRef<Value> sizes);
  gpu::LaunchOp mapCheck(est::CheckFailIfOp check, Value status, bool guard);
  gpu::LaunchOp mapSerial(Operation *op, Value status);
  LogicalResult sinkDeviceScalars(gpu::LaunchOp launch);

  DeviceScalars deviceScalars;
  /// What each launch made here writes: the linalg op's outputs, the
  /// status slot.
  llvm::DenseMap<Operation *, SmallVector<Value>> launchWrites;
};

Value constantIndex(OpBuilder &b, Location loc, int64_t value) {
  return arith::ConstantIndexOp::create(b, loc, value);
}

/// A launch of `blocks` blocks of `threads` threads whose body is empty but
/// for its terminator; the builder is left before the terminator.
gpu::LaunchOp createLaunch(OpBuilder &b, Location loc, Value blocks,
                           Value threads) {
  Value one = constantIndex(b, loc, 1);
  auto launch =
      gpu::LaunchOp::create(b, loc, blocks, one, one, threads, one, one);
  b.setInsertionPointToEnd(&launch.getBody().front());
  auto terminator = gpu::TerminatorOp::create(b, loc);
  b.setInsertionPoint(terminator);
  return launch;
}

/// In the launch body: `if (status[0] == 0 && extra) { ... }`, the builder
/// left inside the then block. No condition at all: the builder is unmoved.
void guardBody(OpBuilder &b, Location loc, Value status, Value extra) {
  Value condition = extra;
  if (status) {
    Value word = memref::LoadOp::create(b, loc, status,
                                        ValueRange{constantIndex(b, loc, 0)});
    Value zero = arith::ConstantIntOp::create(b, loc, b.getI64Type(), 0);
    Value ok =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, word, zero);
    condition = condition
                    ? arith::AndIOp::create(b, loc, ok, condition).getResult()
                    : ok;
  }
  if (!condition)
    return;
  auto ifOp = scf::IfOp::create(b, loc, condition, /*withElseRegion=*/false);
  b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
}

/// The indices of `map` at loop indices `ivs`.
SmallVector<Value> indicesAt(OpBuilder &b, Location loc, AffineMap map,
                             ValueRange ivs) {
  SmallVector<Value> indices;
  for (AffineExpr e : map.getResults())
    indices.push_back(affine::expandAffineExpr(b, loc, e, ivs, {}));
  return indices;
}

/// Whether the expression reads loop `dim`.
bool usesDim(AffineMap map, unsigned dim) { return map.isFunctionOfDim(dim); }

/// Sets `ivs[d]` for the loops `dims` from the linear index `linear`,
/// row-major (the last loop varies fastest); the first loop takes what is
/// left, with no remainder (a bounds guard keeps it below its size).
void delinearize(OpBuilder &b, Location loc, Value linear,
                 ArrayRef<unsigned> dims, ArrayRef<Value> sizes,
                 SmallVectorImpl<Value> &ivs) {
  for (unsigned d : llvm::reverse(dims)) {
    if (d == dims.front()) {
      ivs[d] = linear;
      return;
    }
    ivs[d] = arith::RemUIOp::create(b, loc, linear, sizes[d]);
    linear = arith::DivUIOp::create(b, loc, linear, sizes[d]);
  }
}

/// `op`'s body at loop indices `ivs`, its inputs loaded there and its
/// outputs' block arguments bound to `outputs` (a null value: unused);
/// returns what it yields.
SmallVector<Value> emitBody(OpBuilder &b, Location loc, linalg::LinalgOp op,
                            ArrayRef<Value> ivs, ValueRange outputs) {
  Block &body = *op.getBlock();
  IRMapping mapping;
  for (OpOperand *input : op.getDpsInputOperands()) {
    Value value = input->get();
    if (isa<MemRefType>(value.getType()))
      value = memref::LoadOp::create(
          b, loc, value,
          indicesAt(b, loc, op.getMatchingIndexingMap(input), ivs));
    mapping.map(body.getArgument(input->getOperandNumber()), value);
  }
  for (auto [i, value] : llvm::enumerate(outputs))
    if (value)
      mapping.map(body.getArgument(op.getNumDpsInputs() + i), value);
  for (Operation &inner : body.without_terminator()) {
    if (auto index = dyn_cast<linalg::IndexOp>(inner)) {
      mapping.map(index.getResult(), ivs[index.getDim()]);
      continue;
    }
    b.clone(inner, mapping);
  }
  SmallVector<Value> results;
  for (Value v : body.getTerminator()->getOperands())
    results.push_back(mapping.lookupOrDefault(v));
  return results;
}

} // namespace

/// One thread per parallel iteration (those every output indexes directly:
/// no two threads write one element); the others run in order inside the
/// thread.
/// The addition that accumulates `op`'s single f32 output: the yield of
/// `arith.addf` of the output's block argument (its only use) and a term.
static arith::AddFOp sumOf(linalg::LinalgOp op) {
  if (op.getNumDpsInits() != 1 || !op.getDpsInits()[0].getType() ||
      !isa<MemRefType>(op.getDpsInits()[0].getType()))
    return {};
  Block &body = *op.getBlock();
  BlockArgument out = body.getArgument(op.getNumDpsInputs());
  if (!out.getType().isF32() || !out.hasOneUse())
    return {};
  auto add = dyn_cast<arith::AddFOp>(*out.getUsers().begin());
  Operation *yield = body.getTerminator();
  if (!add || yield->getNumOperands() != 1 ||
      yield->getOperand(0) != add.getResult())
    return {};
  return add;
}

/// Whether `op` is a sum of a run-time number of terms (the batch), or of
/// at least kBlockSize, into at most kMaxBlockReductionOutputs elements
/// known at compile time: then one block of kSumBlockSize threads per output
/// element reduces it (mapBlockReduction). The thread-per-element form
/// would leave most of the GPU idle while each thread walks its terms.
/// (kBlockSize terms at least: fewer are as fast in one thread.)
static bool blockReducible(linalg::LinalgOp op, ArrayRef<unsigned> threadDims,
                           ArrayRef<unsigned> serialDims) {
  constexpr int64_t kMaxBlockReductionOutputs = 65536;
  if (serialDims.empty() || !sumOf(op))
    return false;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  AffineMap outMap = op.getMatchingIndexingMap(&op.getDpsInitsMutable()[0]);
  SmallVector<int64_t> bounds = op.getStaticLoopRanges();
  int64_t outputs = 1, terms = 1;
  for (unsigned d : threadDims) {
    if (ShapedType::isDynamic(bounds[d]))
      return false;
    outputs *= bounds[d];
  }
  for (unsigned d : serialDims) {
    // A serial parallel loop writes several outputs from one thread.
    if (iterators[d] != utils::IteratorType::reduction || usesDim(outMap, d))
      return false;
    terms = ShapedType::isDynamic(bounds[d]) || ShapedType::isDynamic(terms)
                ? ShapedType::kDynamic
                : terms * bounds[d];
  }
  return outputs > 0 && outputs <= kMaxBlockReductionOutputs &&
         (ShapedType::isDynamic(terms) || terms >= kBlockSize);
}

/// A block per output element: thread t keeps kSumUnroll sums (from -0.0,
/// the sum's identity), the k-th adding terms t + k * kSumBlockSize,
/// t + (k + kSumUnroll) * kSumBlockSize, ... in order (the first also the
/// terms after the last whole group), then adds them in a fixed tree; the
/// block's kSumBlockSize partial sums are added in a fixed tree in shared
/// memory, and thread 0 adds the total to the output's initial value. The order
/// depends only on kSumBlockSize, never on the GPU or the launch, so repeated
/// runs are bit-identical; it differs from the CPU's left-to-right order by
/// rounding.
gpu::LaunchOp EstGpuMapLoops::mapBlockReduction(linalg::LinalgOp op,
                                                Value status,
                                                ArrayRef<unsigned> threadDims,
                                                ArrayRef<unsigned> serialDims,
                                                ArrayRef<Value> sizes) {
  Location loc = op.getLoc();
  OpBuilder b(op);
  Type f32 = b.getF32Type();
  Value count = constantIndex(b, loc, 1);
  for (unsigned d : threadDims)
    count = arith::MulIOp::create(b, loc, count, sizes[d]);
  Value terms = constantIndex(b, loc, 1);
  for (unsigned d : serialDims)
    terms = arith::MulIOp::create(b, loc, terms, sizes[d]);
  Value one = constantIndex(b, loc, 1);
  Value threads = constantIndex(b, loc, kSumBlockSize);
  auto shared = MemRefType::get(
      {kSumBlockSize}, f32, MemRefLayoutAttrInterface(),
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup));
  auto launch = gpu::LaunchOp::create(
      b, loc, arith::MaxUIOp::create(b, loc, count, one), one, one, threads,
      one, one, /*dynamicSharedMemorySize=*/nullptr, /*asyncTokenType=*/nullptr,
      /*asyncDependencies=*/{}, /*workgroupAttributions=*/TypeRange{shared});
  b.setInsertionPointToEnd(&launch.getBody().front());
  auto terminator = gpu::TerminatorOp::create(b, loc);
  b.setInsertionPoint(terminator);
  Value partial = launch.getWorkgroupAttributions().front();
  Value tid = launch.getThreadIds().x;
  // Every thread of a block sees the same status word, so the barriers
  // below are reached by all or none.
  guardBody(b, loc, status, Value());

  SmallVector<Value> ivs(op.getNumLoops());
  delinearize(b, loc, launch.getBlockIds().x, threadDims, sizes, ivs);
  Value identity = arith::ConstantOp::create(b, loc, b.getFloatAttr(f32, -0.0));
  // kSumUnroll sums per thread, each over every (kSumUnroll *
  // kSumBlockSize)-th term, so that a thread has kSumUnroll loads in flight
  // instead of one; the terms past the last whole group go to the first.
  Value group = constantIndex(b, loc, kSumUnroll * kSumBlockSize);
  Value zero = constantIndex(b, loc, 0);
  Value groupsEnd = arith::MaxSIOp::create(
      b, loc,
      arith::SubIOp::create(
          b, loc, terms,
          constantIndex(b, loc, (kSumUnroll - 1) * kSumBlockSize)),
      zero);
  SmallVector<Value> identities(kSumUnroll, identity);
  auto groups = scf::ForOp::create(
      b, loc, tid, groupsEnd, group, identities,
      [&](OpBuilder &lb, Location, Value first, ValueRange acc) {
        SmallVector<Value> next;
        for (int64_t k = 0; k < kSumUnroll; ++k) {
          Value term = arith::AddIOp::create(
              lb, loc, first, constantIndex(lb, loc, k * kSumBlockSize));
          delinearize(lb, loc, term, serialDims, sizes, ivs);
          next.push_back(emitBody(lb, loc, op, ivs, acc[k]).front());
        }
        scf::YieldOp::create(lb, loc, next);
      });
  // The first term no group took: tid + ceil((groupsEnd - tid) / group) *
  // group, or tid when there was no group.
  Value grouped =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, groupsEnd, tid);
  Value groupCount = arith::SelectOp::create(
      b, loc, grouped,
      arith::CeilDivUIOp::create(
          b, loc, arith::SubIOp::create(b, loc, groupsEnd, tid), group),
      zero);
  Value restStart = arith::AddIOp::create(
      b, loc, tid, arith::MulIOp::create(b, loc, groupCount, group));
  auto rest = scf::ForOp::create(
      b, loc, restStart, terms, threads, ValueRange{groups.getResult(0)},
      [&](OpBuilder &lb, Location, Value term, ValueRange acc) {
        delinearize(lb, loc, term, serialDims, sizes, ivs);
        scf::YieldOp::create(lb, loc, emitBody(lb, loc, op, ivs, acc));
      });
  // The thread's sums in a fixed tree: (s0 + s1) + (s2 + s3).
  SmallVector<Value> sums = {rest.getResult(0)};
  for (int64_t k = 1; k < kSumUnroll; ++k)
    sums.push_back(groups.getResult(k));
  while (sums.size() > 1) {
    SmallVector<Value> pairs;
    for (size_t i = 0; i + 1 < sums.size(); i += 2)
      pairs.push_back(arith::AddFOp::create(b, loc, sums[i], sums[i + 1]));
    if (sums.size() % 2)
      pairs.push_back(sums.back());
    sums = pairs;
  }
  memref::StoreOp::create(b, loc, sums.front(), partial, ValueRange{tid});
  gpu::BarrierOp::create(b, loc);
  for (int64_t stride = kSumBlockSize / 2; stride > 0; stride /= 2) {
    Value s = constantIndex(b, loc, stride);
    Value lower =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, tid, s);
    auto ifOp = scf::IfOp::create(b, loc, lower, /*withElseRegion=*/false);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
      Value mine = memref::LoadOp::create(b, loc, partial, ValueRange{tid});
      Value theirs = memref::LoadOp::create(
          b, loc, partial,
          ValueRange{arith::AddIOp::create(b, loc, tid, s).getResult()});
      memref::StoreOp::create(
          b, loc, arith::AddFOp::create(b, loc, mine, theirs).getResult(),
          partial, ValueRange{tid});
    }
    gpu::BarrierOp::create(b, loc);
  }
  Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid,
                                      constantIndex(b, loc, 0));
  auto store = scf::IfOp::create(b, loc, first, /*withElseRegion=*/false);
  b.setInsertionPoint(store.thenBlock()->getTerminator());
  OpOperand &init = op.getDpsInitsMutable()[0];
  SmallVector<Value> at =
      indicesAt(b, loc, op.getMatchingIndexingMap(&init), ivs);
  Value initial = memref::LoadOp::create(b, loc, init.get(), at);
  Value total = memref::LoadOp::create(b, loc, partial,
                                       ValueRange{constantIndex(b, loc, 0)});
  memref::StoreOp::create(
      b, loc, arith::AddFOp::create(b, loc, initial, total).getResult(),
      init.get(), at);
  return launch;
}

gpu::LaunchOp EstGpuMapLoops::mapLinalgOp(linalg::LinalgOp op, Value status) {
  Location loc = op.getLoc();
  OpBuilder b(op);
  unsigned numLoops = op.getNumLoops();
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  SmallVector<unsigned> threadDims, serialDims;
  for (unsigned d = 0; d < numLoops; ++d) {
    bool parallel = iterators[d] == utils::IteratorType::parallel;
    for (OpOperand &init : op.getDpsInitsMutable()) {
      AffineMap map = op.getMatchingIndexingMap(&init);
      if (!llvm::is_contained(map.getResults(), b.getAffineDimExpr(d)))
        parallel = false;
    }
    (parallel ? threadDims : serialDims).push_back(d);
  }
  // Loop sizes on the host (descriptor sizes, constants).
  SmallVector<Range> ranges = op.createLoopRanges(b, loc);
  SmallVector<Value> sizes;
  for (Range &r : ranges)
    sizes.push_back(getValueOrCreateConstantIndexOp(b, loc, r.size));
  Value count = constantIndex(b, loc, 1);
  for (unsigned d : threadDims)
    count = arith::MulIOp::create(b, loc, count, sizes[d]);
  // A sum over many elements into few (a bias gradient: 20 channels, each
  // the sum of batch x 24 x 24 terms) is a block per output element, not
  // one thread walking every term; see blockReducible.
  if (blockReducible(op, threadDims, serialDims))
    return mapBlockReduction(op, status, threadDims, serialDims, sizes);
  Value threads = constantIndex(b, loc, kBlockSize);
  // At least one block: CUDA refuses a grid of none.
  Value blocks = arith::MaxUIOp::create(
      b, loc, arith::CeilDivUIOp::create(b, loc, count, threads),
      constantIndex(b, loc, 1));

  gpu::LaunchOp launch = createLaunch(b, loc, blocks, threads);
  gpu::KernelDim3 blockIds = launch.getBlockIds();
  gpu::KernelDim3 threadIds = launch.getThreadIds();
  Value id = arith::AddIOp::create(
      b, loc,
      arith::MulIOp::create(b, loc, blockIds.x,
                            constantIndex(b, loc, kBlockSize)),
      threadIds.x);
  Value inBounds =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, id, count);
  guardBody(b, loc, status, inBounds);

  SmallVector<Value> ivs(numLoops);
  delinearize(b, loc, id, threadDims, sizes, ivs);

  Block &body = *op.getBlock();
  auto inits = op.getDpsInitsMutable();
  // The accumulators stay in registers unless an output element moves with
  // a serial loop.
  bool registers = llvm::none_of(inits, [&](OpOperand &init) {
    AffineMap map = op.getMatchingIndexingMap(&init);
    return llvm::any_of(serialDims,
                        [&](unsigned d) { return usesDim(map, d); });
  });

  auto loadOutputs = [&](OpBuilder &nb) {
    SmallVector<Value> values;
    for (OpOperand &init : inits) {
      Value arg = body.getArgument(init.getOperandNumber());
      bool needed = !arg.use_empty() || (registers && !serialDims.empty());
      values.push_back(
          needed
              ? memref::LoadOp::create(
                    nb, loc, init.get(),
                    indicesAt(nb, loc, op.getMatchingIndexingMap(&init), ivs))
                    .getResult()
              : Value());
    }
    return values;
  };
  auto storeOutputs = [&](OpBuilder &nb, ValueRange values) {
    for (auto [init, value] : llvm::zip(inits, values))
      memref::StoreOp::create(
          nb, loc, value, init.get(),
          indicesAt(nb, loc, op.getMatchingIndexingMap(&init), ivs));
  };

  if (serialDims.empty()) {
    storeOutputs(b, emitBody(b, loc, op, ivs, loadOutputs(b)));
  } else if (registers) {
    // Output indices do not depend on the serial loops: load once, carry
    // the accumulators through the loops, store once.
    SmallVector<Value> initial = loadOutputs(b);
    Value zero = constantIndex(b, loc, 0), one = constantIndex(b, loc, 1);
    std::function<SmallVector<Value>(OpBuilder &, unsigned, ValueRange)> nest =
        [&](OpBuilder &nb, unsigned level,
            ValueRange accumulators) -> SmallVector<Value> {
      if (level == serialDims.size())
        return emitBody(nb, loc, op, ivs, accumulators);
      unsigned d = serialDims[level];
      auto loop = scf::ForOp::create(
          nb, loc, zero, sizes[d], one, accumulators,
          [&](OpBuilder &lb, Location, Value iv, ValueRange iterArgs) {
            ivs[d] = iv;
            scf::YieldOp::create(lb, loc, nest(lb, level + 1, iterArgs));
          });
      return SmallVector<Value>(loop.getResults());
    };
    SmallVector<Value> results = nest(b, 0, initial);
    storeOutputs(b, results);
  } else {
    // An output element moves with a serial loop: read and write it in
    // every iteration, as linalg's own loops do.
    Value zero = constantIndex(b, loc, 0), one = constantIndex(b, loc, 1);
    std::function<void(OpBuilder &, unsigned)> nest = [&](OpBuilder &nb,
                                                          unsigned level) {
      if (level == serialDims.size()) {
        storeOutputs(nb, emitBody(nb, loc, op, ivs, loadOutputs(nb)));
        return;
      }
      unsigned d = serialDims[level];
      scf::ForOp::create(nb, loc, zero, sizes[d], one, ValueRange{},
                         [&](OpBuilder &lb, Location, Value iv, ValueRange) {
                           ivs[d] = iv;
                           nest(lb, level + 1);
                           scf::YieldOp::create(lb, loc);
                         });
    };
    nest(b, 0);
  }
  return launch;
}

/// One thread: when the check failed, its code, position and value go to
/// the status slot.
gpu::LaunchOp EstGpuMapLoops::mapCheck(est::CheckFailIfOp check, Value status,
                                       bool guard) {
  Location loc = check.getLoc();
  OpBuilder b(check);
  Value one = constantIndex(b, loc, 1);
  gpu::LaunchOp launch = createLaunch(b, loc, one, one);
  guardBody(b, loc, guard ? status : Value(), Value());
  auto ifFailed =
      scf::IfOp::create(b, loc, check.getFailed(), /*withElseRegion=*/false);
  b.setInsertionPoint(ifFailed.thenBlock()->getTerminator());
  Value code = arith::ConstantIntOp::create(b, loc, b.getI64Type(),
                                            check.getCheckAttr().getInt() + 1);
  for (auto [i, v] : llvm::enumerate(
           std::array<Value, 3>{code, check.getPosition(), check.getValue()}))
    memref::StoreOp::create(b, loc, v, status,
                            ValueRange{constantIndex(b, loc, i)});
  return launch;
}

/// One thread runs `op`, a loop nest the earlier stages left on buffers
/// (scatter, unsorted_segment_sum: iterations that may write one element
/// run in order), moved into the kernel as it is.
gpu::LaunchOp EstGpuMapLoops::mapSerial(Operation *op, Value status) {
  Location loc = op->getLoc();
  OpBuilder b(op);
  Value one = constantIndex(b, loc, 1);
  gpu::LaunchOp launch = createLaunch(b, loc, one, one);
  guardBody(b, loc, status, Value());
  op->moveBefore(b.getInsertionBlock(), b.getInsertionPoint());
  return launch;
}

/// Whether `op` writes a buffer itself, not through a linalg op nested in
/// it (which becomes a kernel of its own).
static bool storesDirectly(Operation *op) {
  bool stores = false;
  op->walk<WalkOrder::PreOrder>([&](Operation *inner) {
    if (isa<linalg::LinalgOp>(inner))
      return WalkResult::skip();
    if (isa<memref::StoreOp>(inner)) {
      stores = true;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return stores;
}

/// Whether `value` is (a view of) a constant global: host memory, which a
/// kernel must reference itself (gpu-kernel-outlining then copies the
/// global into the kernel's module).
static bool isConstantView(Value value) {
  return static_cast<bool>(
      est::rootOf(value).getDefiningOp<memref::GetGlobalOp>());
}

/// Recomputes inside `launch` every host value it uses that comes from
/// device memory (with the values that one needs in turn), and takes in the
/// constant globals it reads. The host computation must not have been
/// separated from the launch by anything that writes memory, or the kernel
/// would read newer data.
LogicalResult EstGpuMapLoops::sinkDeviceScalars(gpu::LaunchOp launch) {
  llvm::SetVector<Value> above;
  getUsedValuesDefinedAbove(launch.getBody(), above);
  auto needsSinking = [&](Value v) {
    return deviceScalars.fromDevice(v) || isConstantView(v);
  };
  SmallVector<Value> toSink;
  for (Value v : above)
    if (needsSinking(v))
      toSink.push_back(v);
  if (toSink.empty())
    return success();

  Block &entry = launch.getBody().front();
  OpBuilder b(&entry, entry.begin());
  IRMapping mapping;
  std::function<LogicalResult(Value)> sink = [&](Value v) -> LogicalResult {
    if (mapping.contains(v) || !needsSinking(v))
      return success();
    Operation *def = v.getDefiningOp();
    if (!deviceScalars.fromDevice(v)) {
      // A constant: nothing writes it.
      for (Value operand : def->getOperands())
        if (failed(sink(operand)))
          return failure();
      Operation *clone = b.clone(*def, mapping);
      for (auto [from, to] : llvm::zip(def->getResults(), clone->getResults()))
        mapping.map(from, to);
      return success();
    }
    if (def->getBlock() != launch->getBlock())
      return def->emitError("est-gpu-map-loops: a value read from device "
                            "memory on the host is used by a kernel in "
                            "another block");
    // The buffers it reads, which nothing up to the launch may write (an
    // arena buffer whose last read this was may have been reused).
    SmallVector<Value> read;
    def->walk([&](memref::LoadOp load) {
      read.push_back(est::rootOf(load.getMemRef()));
    });
    for (Operation *between = def->getNextNode(); between != launch;
         between = between->getNextNode()) {
      std::optional<SmallVector<Value>> written = writtenRoots(between);
      if (!written || llvm::any_of(*written, [&](Value w) {
            return llvm::is_contained(read, w);
          }))
        return def->emitError("est-gpu-map-loops: a value read from device "
                              "memory on the host is used by a kernel after "
                              "another kernel may have overwritten it");
    }
    for (Value operand : DeviceScalars::capturedOperands(def))
      if (failed(sink(operand)))
        return failure();
    Operation *clone = b.clone(*def, mapping);
    for (auto [from, to] : llvm::zip(def->getResults(), clone->getResults()))
      mapping.map(from, to);
    return success();
  };
  for (Value v : toSink)
    if (failed(sink(v)))
      return failure();
  for (Value v : toSink)
    replaceAllUsesInRegionWith(v, mapping.lookup(v), launch.getBody());
  return success();
}

std::optional<SmallVector<Value>> EstGpuMapLoops::writtenRoots(Operation *op) {
  SmallVector<Value> roots;
  if (auto it = launchWrites.find(op); it != launchWrites.end()) {
    for (Value v : it->second)
      roots.push_back(est::rootOf(v));
    return roots;
  }
  if (isa<func::CallOp>(op)) {
    // A kernel call: any buffer it is given.
    for (Value v : op->getOperands())
      if (isa<MemRefType>(v.getType()))
        roots.push_back(est::rootOf(v));
    return roots;
  }
  if (isMemoryEffectFree(op) || isa<memref::LoadOp>(op))
    return roots;
  if (op->hasTrait<OpTrait::HasRecursiveMemoryEffects>()) {
    bool writes = false;
    op->walk([&](Operation *inner) {
      if (inner != op && !isMemoryEffectFree(inner) &&
          !isa<memref::LoadOp>(inner) &&
          !inner->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
        writes = true;
    });
    if (!writes)
      return roots;
  }
  return std::nullopt;
}

LogicalResult EstGpuMapLoops::mapFunction(func::FuncOp func) {
  // Answers are keyed by op, and the previous function's were erased.
  deviceScalars.clear();
  launchWrites.clear();
  SmallVector<Operation *> work;
  func.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
      work.push_back(op);
      return WalkResult::skip();
    }
    if (isa<est::CheckFailIfOp>(op))
      work.push_back(op);
    // A loop nest on buffers (scalar loads and stores): one thread.
    if (op != func && op->getNumRegions() > 0 && storesDirectly(op)) {
      work.push_back(op);
      return WalkResult::skip();
    }
    return WalkResult::advance();
  });

  // A check on the operands of an earlier one in its block (CSE made two
  // checks of one tensor one condition) can never be the first to fail,
  // as on the CPU, where the earlier one returns first; dropped, so its
  // kernel does not recompute the shared scalars after other kernels.
  SmallVector<est::CheckFailIfOp> kept;
  llvm::erase_if(work, [&](Operation *op) {
    auto check = dyn_cast<est::CheckFailIfOp>(op);
    if (!check)
      return false;
    for (est::CheckFailIfOp earlier : kept)
      if (earlier->getBlock() == check->getBlock() &&
          llvm::equal(earlier->getOperands(), check->getOperands())) {
        check->erase();
        return true;
      }
    kept.push_back(check);
    return false;
  });

  // The status slot, when the function has checks.
  Value status;
  bool hasChecks = llvm::any_of(
      work, [](Operation *op) { return isa<est::CheckFailIfOp>(op); });
  if (hasChecks) {
    auto offset = func->getAttrOfType<IntegerAttr>("estc.status_offset");
    auto arenaType = func.getNumArguments() == 0
                         ? MemRefType()
                         : dyn_cast<MemRefType>(func.getArgument(0).getType());
    if (!offset || !arenaType || !arenaType.getElementType().isInteger(8))
      return func.emitError("est-gpu-map-loops: '")
             << func.getSymName()
             << "' has run-time checks but no status slot (run "
                "est-memory-planning first)";
    OpBuilder b(&func.getBody().front(), func.getBody().front().begin());
    Location loc = func.getLoc();
    status = memref::ViewOp::create(
        b, loc, MemRefType::get({3}, b.getI64Type()), func.getArgument(0),
        constantIndex(b, loc, offset.getInt()), ValueRange{});
  }

  bool afterCheck = false;
  for (Operation *op : work) {
    gpu::LaunchOp launch;
    if (!isa<linalg::LinalgOp, est::CheckFailIfOp>(op)) {
      if (op->getNumResults() != 0)
        return op->emitError("est-gpu-map-loops: a loop nest that writes "
                             "buffers on the host returns values");
      launch = mapSerial(op, afterCheck ? status : Value());
      if (failed(sinkDeviceScalars(launch)))
        return failure();
      // What it writes: any buffer it uses.
      SmallVector<Value> written;
      op->walk(
          [&](memref::StoreOp store) { written.push_back(store.getMemRef()); });
      launchWrites[launch] = written;
      continue;
    }
    if (auto check = dyn_cast<est::CheckFailIfOp>(op)) {
      launch = mapCheck(check, status, afterCheck);
      launchWrites[launch] = {status};
      afterCheck = true;
    } else {
      auto linalgOp = cast<linalg::LinalgOp>(op);
      if (!linalgOp.hasPureBufferSemantics())
        return op->emitError("est-gpu-map-loops: '")
               << op->getName() << "' is not on buffers (run bufferization "
               << "first)";
      launch = mapLinalgOp(linalgOp, afterCheck ? status : Value());
      launchWrites[launch] = SmallVector<Value>(linalgOp.getDpsInits());
    }
    if (failed(sinkDeviceScalars(launch)))
      return failure();
    op->erase();
  }

  // What the kernels now recompute is dead on the host.
  SmallVector<Operation *> hostOps;
  func.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (isa<gpu::LaunchOp>(op))
      return WalkResult::skip();
    if (op != func)
      hostOps.push_back(op);
    return WalkResult::advance();
  });
  for (Operation *op : llvm::reverse(hostOps))
    if (op->use_empty() && op->getNumResults() > 0 &&
        (deviceScalars.fromDevice(op->getResult(0)) ||
         isConstantView(op->getResult(0))))
      op->erase();

  // Host code never touches a buffer.
  WalkResult result = func.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (isa<gpu::LaunchOp>(op))
      return WalkResult::skip();
    SetVector<Operation *> uses;
    if (isa<memref::LoadOp>(op))
      getForwardSlice(op, &uses);
    if (llvm::any_of(uses, [](Operation *user) {
          return isa<scf::IfOp, scf::ConditionOp>(user);
        })) {
      // The host would need the condition's value from device memory.
      op->emitError("est-gpu-map-loops: '")
          << func.getSymName()
          << "': a run-time condition (est.if, est.while) is not supported "
             "on the CUDA target yet (its value is in device memory); "
             "compile for the CPU";
      return WalkResult::interrupt();
    }
    if (isa<memref::LoadOp, memref::StoreOp>(op)) {
      op->emitError("est-gpu-map-loops: '")
          << func.getSymName() << "': host code " << op->getName()
          << " of a buffer (every buffer is device memory)";
      return WalkResult::interrupt();
    }
    if (isa<func::CallOp>(op) && llvm::any_of(op->getOperands(), [](Value v) {
          return isa<MemRefType>(v.getType()) && isConstantView(v);
        })) {
      op->emitError("est-gpu-map-loops: '")
          << func.getSymName()
          << "': a kernel call reads a constant in host memory (copy it "
             "into a buffer first: est-linalg-to-runtime-calls device=cuda)";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

void EstGpuMapLoops::runOnOperation() {
  for (auto func : getOperation().getOps<func::FuncOp>())
    if (!func.isExternal() && failed(mapFunction(func)))
      return signalPassFailure();
}
