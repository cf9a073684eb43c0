//===- Autodiff.cpp - est-autodiff --------------------------------------===//
//
// Reverse-mode automatic differentiation of each `est.minimize`:
//
//   1. The variables to train: `var_list`, or every trainable variable.
//   2. Forward: the float values that depend on a read of such a variable
//      (the "active" values; only they get gradients).
//   3. Backward: from the loss (seed 1.0), in reverse program order, each op
//      with an active operand and a result gradient builds its operands'
//      gradients through GradientOpInterface (dialects/Est/IR/
//      EstGradients.cpp); gradients of a value used several times are
//      summed.
//   A gather on axis 0 of a trained variable's read is not differentiated
//   densely: its gradient is kept as rows (indices, rows of g). A variable
//   whose only gradients are such rows gets them as a sparse gradient of
//   apply_gradients (so its update is O(rows touched)); one also used
//   otherwise gets them scattered into its dense gradient.
//   4. The minimize becomes `est.apply_gradients` with, for each variable
//      that influences the loss, the sum of the gradients of its reads.
//      Variables that do not influence the loss get no update (no slots
//      either); when none does, a one-line warning names the loss and the
//      variables (global_step is still incremented), and so does one for
//      var_list entries that do not influence it.
//   An op on the path without a gradient rule leaves the minimize in place
//   with a warning naming the op (the driver then drops @train), and so
//   does a rule that does not cover its op's shapes or attributes.
//
// The backward ops are inserted right before the minimize, after the
// forward pass they read.
//
// Before the minimizes, every `est.gradient %y wrt %x` (tf.gradients, from
// the graph builder's gradients()) is resolved the same way: the ones of one
// y in one block in one sweep, built before the first of them, from the
// sources x (or every read of x's variable); no sparse rows (a gather's
// gradient is dense), zeros for an x that y does not depend on, and an
// error naming the op when the sweep fails, since the results are used.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"
#include "dialects/Est/IR/EstInterfaces.h"
#include "dialects/Est/IR/EstOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"

namespace mlir {
namespace est {
#define GEN_PASS_DEF_ESTAUTODIFF
#include "compiler/Transforms/Passes.h.inc"
} // namespace est
} // namespace mlir

using namespace mlir;
using namespace mlir::est;

namespace {

bool isFloatTensor(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type && isa<FloatType>(type.getElementType());
}

/// A short description of the loss for diagnostics: its location's name
/// when it has one.
std::string describe(Value loss) {
  if (auto name = dyn_cast<NameLoc>(loss.getLoc()))
    return "'" + name.getName().str() + "'";
  if (Operation *op = loss.getDefiningOp())
    return "'" + op->getName().getStringRef().str() + "'";
  return "the loss";
}

/// Values defined above `op`'s regions that they use, in first-use order.
SmallVector<Value> capturesOf(Operation *op) {
  llvm::SetVector<Value> captures;
  for (Region &region : op->getRegions())
    region.walk([&](Operation *inner) {
      for (Value v : inner->getOperands()) {
        // A block being built (a reverse body) has no parent op yet.
        Operation *owner = v.getParentBlock()->getParentOp();
        if (!owner || !op->isAncestor(owner))
          captures.insert(v);
      }
    });
  return captures.takeVector();
}

/// Whether an operand of `op`, or a value its regions capture, is active.
bool hasActiveInput(Operation *op, const DenseSet<Value> &active) {
  if (llvm::any_of(op->getOperands(),
                   [&](Value v) { return active.contains(v); }))
    return true;
  if (op->getNumRegions() == 0)
    return false;
  return llvm::any_of(capturesOf(op),
                      [&](Value v) { return active.contains(v); });
}

/// Reverse-mode sweep over the ops of one block, from a given op back to
/// the block's start: each op with an active input and a result gradient
/// builds its inputs' gradients (GradientOpInterface; est.scan here).
/// Gradients are built at the builder's insertion point.
struct Sweep {
  Sweep(OpBuilder &b, Location loc, DenseSet<Value> &active,
        const DenseSet<Value> *readValues)
      : b(b), loc(loc), active(active), readValues(readValues) {}

  void accumulate(Value v, Value g) {
    Value &slot = grads[v];
    if (!slot) {
      slot = g;
      return;
    }
    Value merged = concatAdjacentPads(slot, g);
    slot = merged ? merged : Value(AddOp::create(b, loc, slot, g));
  }

  /// slot + g when both are zero pads of one value's gradient (slices of
  /// it: an LSTM's four gates, a GRU's three) covering adjacent ranges of
  /// the same axis: one pad of their concatenation (a concat of all four
  /// gates once they all arrived), so the gradient is written once instead
  /// of zero-filled per slice and summed. Null when they are not.
  Value concatAdjacentPads(Value slot, Value g) {
    auto pa = slot.getDefiningOp<PadOp>(), pb = g.getDefiningOp<PadOp>();
    if (!pa || !pb || slot.getType() != g.getType() ||
        pa.getConstantValue().convertToDouble() != 0.0 ||
        pb.getConstantValue().convertToDouble() != 0.0)
      return Value();
    ArrayRef<int64_t> a = pa.getPaddings(), c = pb.getPaddings();
    auto type = cast<RankedTensorType>(slot.getType());
    int64_t axis = -1;
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (a[2 * d] || a[2 * d + 1] || c[2 * d] || c[2 * d + 1]) {
        if (axis >= 0)
          return Value();
        axis = d;
      }
    if (axis < 0 || type.isDynamicDim(axis))
      return Value();
    int64_t total = type.getDimSize(axis);
    Value first, second;
    int64_t lo, hi;
    if (total - a[2 * axis + 1] == c[2 * axis]) {
      first = pa.getX(), second = pb.getX();
      lo = a[2 * axis], hi = c[2 * axis + 1];
    } else if (total - c[2 * axis + 1] == a[2 * axis]) {
      first = pb.getX(), second = pa.getX();
      lo = c[2 * axis], hi = a[2 * axis + 1];
    } else {
      return Value();
    }
    SmallVector<Value> parts;
    for (Value part : {first, second}) {
      auto concat = part.getDefiningOp<ConcatOp>();
      if (concat && static_cast<int64_t>(concat.getAxis()) == axis)
        llvm::append_range(parts, concat.getXs());
      else
        parts.push_back(part);
    }
    Value joined = ConcatOp::create(b, loc, parts, axis);
    if (lo == 0 && hi == 0)
      return joined;
    SmallVector<int64_t> paddings(2 * type.getRank(), 0);
    paddings[2 * axis] = lo;
    paddings[2 * axis + 1] = hi;
    return PadOp::create(b, loc, joined, b.getDenseI64ArrayAttr(paddings),
                         b.getF64FloatAttr(0.0));
  }

  /// Visits `last` and every op before it; ops in `skip` are not visited.
  LogicalResult run(Operation *last, const DenseSet<Operation *> *skip) {
    for (Operation *op = last, *prev; op; op = prev) {
      prev = op->getPrevNode();
      if (skip && skip->contains(op))
        continue;
      if (!hasActiveInput(op, active))
        continue;
      if (auto scan = dyn_cast<ScanOp>(op)) {
        if (llvm::any_of(scan.getResults(),
                         [&](Value r) { return grads.lookup(r); }) &&
            failed(differentiateScan(scan)))
          return failure();
        continue;
      }
      if (auto branch = dyn_cast<IfOp>(op)) {
        if (llvm::any_of(branch.getResults(),
                         [&](Value r) { return grads.lookup(r); }) &&
            failed(differentiateIf(branch)))
          return failure();
        continue;
      }
      if (auto loop = dyn_cast<WhileOp>(op)) {
        if (!llvm::any_of(loop.getResults(),
                          [&](Value r) { return grads.lookup(r); }))
          continue;
        if (!loop.getMaximumIterationsAttr()) {
          why = "est.while without maximum_iterations cannot be "
                "differentiated (its reverse pass needs a bound on the "
                "iterations to store; set maximum_iterations, as TF needs "
                "for XLA)";
          return failure();
        }
        ScanOp scan = whileAsScan(loop);
        if (failed(differentiateScan(scan)))
          return failure();
        continue;
      }
      if (op->getNumRegions() != 0) {
        why =
            "no gradient rule for '" + op->getName().getStringRef().str() + "'";
        return failure();
      }
      // fused_batch_norm: the gradient of y (its first result); its batch
      // statistics get none (TF's neither), so a loss that reads them is
      // refused rather than differentiated wrongly.
      if (isa<FusedBatchNormOp>(op)) {
        for (Value r : op->getResults().drop_front())
          if (grads.lookup(r)) {
            why = "the gradient through est.fused_batch_norm's batch "
                  "statistics is not defined (only y is differentiable, as "
                  "in TF's FusedBatchNorm)";
            return failure();
          }
      } else if (op->getNumResults() != 1) {
        continue;
      }
      Value g = grads.lookup(op->getResult(0));
      if (!g)
        continue;
      if (auto gather = dyn_cast<GatherOp>(op); gather && readValues) {
        Value params = gather.getParams();
        auto pType = cast<RankedTensorType>(params.getType());
        int64_t axis = gather.getAxisAttr().getInt();
        if (readValues->contains(params) &&
            (axis == 0 || axis == -pType.getRank()) && pType.hasStaticShape()) {
          Value indices = gather.getIndices();
          Value rows = g;
          if (cast<RankedTensorType>(indices.getType()).getRank() != 1) {
            indices = ReshapeOp::create(b, loc, indices,
                                        b.getDenseI64ArrayAttr({-1}));
            SmallVector<int64_t> shape = {-1};
            llvm::append_range(shape, pType.getShape().drop_front());
            rows =
                ReshapeOp::create(b, loc, rows, b.getDenseI64ArrayAttr(shape));
          }
          sparse[params].push_back({indices, rows});
          continue;
        }
      }
      auto rule = dyn_cast<GradientOpInterface>(op);
      if (!rule) {
        why =
            "no gradient rule for '" + op->getName().getStringRef().str() + "'";
        return failure();
      }
      SmallVector<Value> operandGrads;
      std::string error;
      LogicalResult built = success();
      {
        // A rule that does not cover its op's shapes or attributes reports
        // an error; it becomes the warning of an undifferentiated minimize.
        ScopedDiagnosticHandler capture(b.getContext(), [&](Diagnostic &diag) {
          if (diag.getSeverity() != DiagnosticSeverity::Error)
            return failure();
          if (error.empty())
            error = diag.str();
          return success();
        });
        built = rule.buildGradients(b, g, operandGrads);
      }
      if (failed(built)) {
        why = "the gradient of '" + op->getName().getStringRef().str() +
              "' failed: " + error;
        return failure();
      }
      for (auto [operand, og] :
           llvm::zip_equal(op->getOperands(), operandGrads))
        if (og && active.contains(operand))
          accumulate(operand, og);
    }
    return success();
  }

  LogicalResult differentiateScan(ScanOp scan);
  LogicalResult differentiateIf(IfOp op);
  ScanOp whileAsScan(WhileOp loop);

  OpBuilder &b;
  Location loc;
  DenseSet<Value> &active;
  const DenseSet<Value> *readValues;
  DenseMap<Value, Value> grads;
  // Rows of a variable read's gradient from gathers on axis 0: (indices
  // [n], rows [n] + var[1:]).
  DenseMap<Value, SmallVector<std::pair<Value, Value>>> sparse;
  std::string why;
};

// The gradient of a scan is a scan in the other direction over the steps
// (docs/design/control-flow.md):
//   carried   the gradients of the carried values (seeded with those of the
//             final ones), and one sum per active captured value;
//   per step  the gradients of the per-step outputs, and the forward
//             values the step's gradient rules read;
//   outputs   the gradients of the sequences' slices.
// The reverse body is built from a copy of the forward body, whose values
// the gradient rules read; each copied value such a rule reads is then
// replaced by the forward pass's own, which the forward scan stores as an
// extra per-step output (the carried values at the step's start, the gates
// of an LSTM), and the copies are erased. A sequence's slice needs no
// storing: the reverse scan takes the sequence itself.
LogicalResult Sweep::differentiateScan(ScanOp scan) {
  OpBuilder::InsertPoint outerIp = b.saveInsertionPoint();
  Block &body = scan.getBody().front();
  size_t numCarried = scan.getInits().size();
  SmallVector<Value> captures = capturesOf(scan);
  SmallVector<Value> activeCaptures;
  for (Value c : captures)
    if (active.contains(c))
      activeCaptures.push_back(c);
  // Carried float values take gradients (conservatively all of them).
  SmallVector<unsigned> gradCarried;
  for (unsigned k = 0; k < numCarried; ++k)
    if (isFloatTensor(body.getArgument(k)))
      gradCarried.push_back(k);

  // The reverse body: carried gradients, capture sums, then slices.
  auto *rb = new Block();
  auto discard = llvm::scope_exit([&] {
    if (rb)
      eraseDetachedBlock(rb);
  });
  for (unsigned k : gradCarried)
    rb->addArgument(body.getArgument(k).getType(), loc);
  for (Value c : activeCaptures)
    rb->addArgument(c.getType(), loc);
  // Per-step output gradients that exist.
  SmallVector<std::pair<unsigned, Value>> outputGrads; // (output j, stack)
  for (auto [j, r] : llvm::enumerate(scan.getStackedResults()))
    if (Value g = grads.lookup(r))
      outputGrads.push_back({static_cast<unsigned>(j), g});
  SmallVector<BlockArgument> outputGradArgs;
  for (auto [j, g] : outputGrads)
    outputGradArgs.push_back(rb->addArgument(
        ScanOp::sliceType(cast<RankedTensorType>(g.getType())), loc));
  // Copies of the forward body's arguments and ops.
  IRMapping map;
  SmallVector<BlockArgument> argCopies;
  for (BlockArgument arg : body.getArguments()) {
    argCopies.push_back(rb->addArgument(arg.getType(), loc));
    map.map(arg, argCopies.back());
  }
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(rb);
  DenseSet<Operation *> copies;
  DenseMap<Value, Value> original; // copy -> forward value
  Operation *lastCopy = nullptr;
  for (Operation &op : body.without_terminator()) {
    lastCopy = b.clone(op, map);
    copies.insert(lastCopy);
    for (auto [from, to] :
         llvm::zip_equal(op.getResults(), lastCopy->getResults()))
      original[to] = from;
  }
  for (auto [arg, copy] : llvm::zip_equal(body.getArguments(), argCopies))
    original[copy] = arg;

  // Activity inside the body.
  DenseSet<Value> bodyActive(active.begin(), active.end());
  for (unsigned k : gradCarried)
    bodyActive.insert(argCopies[k]);
  for (auto [j, seq] : llvm::enumerate(scan.getSequences()))
    if (active.contains(seq))
      bodyActive.insert(argCopies[numCarried + j]);
  for (Operation *op = rb->empty() ? nullptr : &rb->front(); op;
       op = op->getNextNode())
    if (copies.contains(op) && hasActiveInput(op, bodyActive))
      for (Value r : op->getResults())
        if (isFloatTensor(r))
          bodyActive.insert(r);

  Sweep inner(b, loc, bodyActive, nullptr);
  YieldOp yield = scan.getYield();
  auto copyOf = [&](Value v) { return map.lookupOrDefault(v); };
  for (auto [i, k] : llvm::enumerate(gradCarried))
    if (bodyActive.contains(copyOf(yield.getValues()[k])))
      inner.accumulate(copyOf(yield.getValues()[k]), rb->getArgument(i));
  for (auto [arg, pair] : llvm::zip_equal(outputGradArgs, outputGrads)) {
    Value v = copyOf(yield.getValues()[numCarried + pair.first]);
    if (bodyActive.contains(v))
      inner.accumulate(v, arg);
  }
  if (lastCopy && failed(inner.run(lastCopy, nullptr))) {
    why = inner.why;
    return failure();
  }
  // The reverse step's results: the carried gradients, the capture sums,
  // the slices' gradients.
  SmallVector<Value> next;
  for (unsigned k : gradCarried) {
    Value g = inner.grads.lookup(argCopies[k]);
    next.push_back(g ? g : Value(ZerosLikeOp::create(b, loc, argCopies[k])));
  }
  for (auto [m, c] : llvm::enumerate(activeCaptures)) {
    Value sum = rb->getArgument(gradCarried.size() + m);
    if (Value g = inner.grads.lookup(c))
      sum = AddOp::create(b, loc, sum, g);
    next.push_back(sum);
  }
  SmallVector<unsigned> sliceGrads; // sequences whose slices get gradients
  for (auto [j, seq] : llvm::enumerate(scan.getSequences()))
    if (active.contains(seq)) {
      Value g = inner.grads.lookup(argCopies[numCarried + j]);
      next.push_back(
          g ? g
            : Value(ZerosLikeOp::create(b, loc, argCopies[numCarried + j])));
      sliceGrads.push_back(j);
    }
  YieldOp::create(b, loc, next);

  // Forward values the gradient ops read: stored per step by the forward
  // scan (its body arguments and op results), unless a constant (copied).
  SmallVector<Value> stored;     // forward values to store
  SmallVector<Value> storedArgs; // the reverse body's arguments for them
  // Loop-invariant copies (constants, a transposed capture) are recomputed
  // instead: storing them would cost one copy per step.
  DenseSet<Value> variant(argCopies.begin(), argCopies.end());
  for (Operation &op : *rb)
    if (copies.contains(&op) && hasActiveInput(&op, variant))
      variant.insert(op.result_begin(), op.result_end());
  SmallVector<OpOperand *> reads;
  for (Operation &op : *rb)
    if (!copies.contains(&op))
      op.walk([&](Operation *nested) {
        for (OpOperand &use : nested->getOpOperands())
          reads.push_back(&use);
      });
  for (OpOperand *usePtr : reads) {
    OpOperand &use = *usePtr;
    {
      auto it = original.find(use.get());
      if (it == original.end())
        continue;
      if (!variant.contains(use.get()))
        continue; // loop-invariant: keep the copy
      if (isa<BlockArgument>(use.get()))
        continue; // a copied argument: stays an argument
      auto pos = llvm::find(stored, it->second);
      if (pos == stored.end()) {
        stored.push_back(it->second);
        storedArgs.push_back(rb->addArgument(use.get().getType(), loc));
        pos = stored.end() - 1;
      }
      use.set(storedArgs[pos - stored.begin()]);
    }
  }
  // Erase the copies nothing reads any more (a constant may stay).
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(*rb)))
    if (copies.contains(&op) && op.use_empty())
      op.erase();

  // The stacks the reverse scan reads, slice argument by argument: output
  // gradients, the body arguments' copies (sequences, stored carried
  // values), the stored values. Arguments nothing reads are dropped.
  SmallVector<Value> extraOutputs; // forward values the forward scan stacks
  unsigned firstSlice = gradCarried.size() + activeCaptures.size();
  SmallVector<Value> sequences;
  SmallVector<int64_t> extraIndex(rb->getNumArguments(), -1);
  for (unsigned i = firstSlice; i < rb->getNumArguments(); ++i) {
    if (i < firstSlice + outputGradArgs.size()) {
      sequences.push_back(outputGrads[i - firstSlice].second);
      continue;
    }
    unsigned a = i - firstSlice - outputGradArgs.size();
    if (a < argCopies.size()) {
      if (a >= numCarried) {
        sequences.push_back(scan.getSequences()[a - numCarried]);
        continue;
      }
      extraIndex[i] = extraOutputs.size();
      extraOutputs.push_back(body.getArgument(a));
      sequences.push_back(Value());
      continue;
    }
    extraIndex[i] = extraOutputs.size();
    extraOutputs.push_back(stored[a - argCopies.size()]);
    sequences.push_back(Value());
  }

  // The forward scan again, stacking the stored values too.
  b.setInsertionPoint(scan);
  // Unread copied carried values need no stack: drop them first.
  // A value the scan already stacks (a per-step output) is read from that
  // stack: keptIndex < 0 - 1 - j names stacked result j.
  SmallVector<Value> keptExtras;
  SmallVector<int64_t> keptIndex(extraOutputs.size(), -1);
  ValueRange perStep = scan.getYield().getValues().drop_front(numCarried);
  for (unsigned i = firstSlice; i < rb->getNumArguments(); ++i) {
    if (extraIndex[i] < 0 || rb->getArgument(i).use_empty())
      continue;
    Value v = extraOutputs[extraIndex[i]];
    auto existing = llvm::find(perStep, v);
    if (existing != perStep.end()) {
      keptIndex[extraIndex[i]] = -2 - (existing - perStep.begin());
      continue;
    }
    keptIndex[extraIndex[i]] = keptExtras.size();
    keptExtras.push_back(v);
  }
  SmallVector<Type> types(scan.getResultTypes());
  for (Value v : keptExtras)
    types.push_back(ScanOp::stackedType(cast<RankedTensorType>(v.getType()),
                                        scan.getStaticLength()));
  auto forward = ScanOp::create(b, scan.getLoc(), types, scan.getInits(),
                                scan.getSequences(), scan.getReverse());
  forward.getBody().takeBody(scan.getBody());
  {
    YieldOp y = forward.getYield();
    SmallVector<Value> values(y.getValues());
    llvm::append_range(values, keptExtras);
    OpBuilder::InsertionGuard g2(b);
    b.setInsertionPoint(y);
    YieldOp::create(b, y.getLoc(), values);
    y.erase();
  }
  for (auto [from, to] : llvm::zip(scan.getResults(), forward.getResults())) {
    if (active.contains(from))
      active.insert(to);
    if (Value g = grads.lookup(from))
      grads[to] = g;
    from.replaceAllUsesWith(to);
  }
  // Resolve the stacks of stored values, then drop unread arguments.
  for (unsigned i = firstSlice; i < rb->getNumArguments(); ++i) {
    if (extraIndex[i] < 0)
      continue;
    int64_t k = keptIndex[extraIndex[i]];
    if (k >= 0)
      sequences[i - firstSlice] = forward.getResult(scan.getNumResults() + k);
    else if (k <= -2)
      sequences[i - firstSlice] = forward.getStackedResults()[-2 - k];
  }
  SmallVector<Value> reverseSequences;
  llvm::BitVector erase(rb->getNumArguments());
  for (unsigned i = firstSlice; i < rb->getNumArguments(); ++i) {
    if (rb->getArgument(i).use_empty()) {
      erase.set(i);
      continue;
    }
    reverseSequences.push_back(sequences[i - firstSlice]);
  }
  if (reverseSequences.empty()) {
    // A scan needs a sequence for its length: keep the first one.
    unsigned i = firstSlice + outputGradArgs.size() + numCarried;
    erase.reset(i);
    reverseSequences.push_back(scan.getSequences().front());
  }
  rb->eraseArguments(erase);

  // The reverse scan, after the gradients of the scan's results.
  b.restoreInsertionPoint(outerIp);
  SmallVector<Value> inits;
  for (unsigned k : gradCarried) {
    Value g = grads.lookup(forward.getResult(k));
    inits.push_back(
        g ? g : Value(ZerosLikeOp::create(b, loc, forward.getResult(k))));
  }
  for (Value c : activeCaptures)
    inits.push_back(ZerosLikeOp::create(b, loc, c));
  SmallVector<Type> reverseTypes(ValueRange(inits).getTypes());
  for (unsigned j : sliceGrads)
    reverseTypes.push_back(scan.getSequences()[j].getType());
  auto backward = ScanOp::create(b, loc, reverseTypes, inits, reverseSequences,
                                 !scan.getReverse());
  backward.getBody().push_back(rb);
  rb = nullptr;
  scan.erase();

  for (auto [i, k] : llvm::enumerate(gradCarried))
    if (active.contains(forward.getInits()[k]))
      accumulate(forward.getInits()[k], backward.getResult(i));
  for (auto [m, c] : llvm::enumerate(activeCaptures))
    accumulate(c, backward.getResult(gradCarried.size() + m));
  for (auto [n, j] : llvm::enumerate(sliceGrads))
    accumulate(forward.getSequences()[j], backward.getResult(inits.size() + n));
  return success();
}

// The gradient of an est.if is an est.if on the same condition whose
// branches recompute their forward branch (a copy, so the gradient rules
// read values of their own region; at most one branch runs, so nothing is
// stored) and then its gradients; it yields the gradients of the values the
// branches capture.
LogicalResult Sweep::differentiateIf(IfOp op) {
  SmallVector<Value> activeCaptures;
  for (Value c : capturesOf(op))
    if (active.contains(c))
      activeCaptures.push_back(c);
  SmallVector<Block *> blocks;
  auto discard = llvm::scope_exit([&] {
    for (Block *block : blocks)
      eraseDetachedBlock(block);
  });
  OpBuilder::InsertPoint outerIp = b.saveInsertionPoint();
  for (Region *region : {&op.getThenRegion(), &op.getElseRegion()}) {
    auto *block = new Block();
    blocks.push_back(block);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToEnd(block);
    IRMapping map;
    DenseSet<Value> bodyActive(active.begin(), active.end());
    Operation *lastCopy = nullptr;
    SmallVector<Operation *> copies;
    for (Operation &forward : region->front().without_terminator()) {
      lastCopy = b.clone(forward, map);
      copies.push_back(lastCopy);
      if (hasActiveInput(lastCopy, bodyActive))
        for (Value r : lastCopy->getResults())
          if (isFloatTensor(r))
            bodyActive.insert(r);
    }
    Sweep inner(b, loc, bodyActive, nullptr);
    auto yield = cast<YieldOp>(region->front().getTerminator());
    for (auto [result, value] :
         llvm::zip_equal(op.getResults(), yield.getValues())) {
      Value g = grads.lookup(result);
      Value v = map.lookupOrDefault(value);
      if (g && bodyActive.contains(v))
        inner.accumulate(v, g);
    }
    if (lastCopy && failed(inner.run(lastCopy, nullptr))) {
      why = inner.why;
      return failure();
    }
    SmallVector<Value> values;
    for (Value c : activeCaptures) {
      Value g = inner.grads.lookup(c);
      values.push_back(g ? g : Value(ZerosLikeOp::create(b, loc, c)));
    }
    YieldOp::create(b, loc, values);
    // Erase the recomputed ops no gradient reads (an integer counter's
    // increment): inside a scan they would read values the forward scan
    // would then store per step for nothing.
    for (Operation *copy : llvm::reverse(copies))
      if (copy->use_empty())
        copy->erase();
  }
  b.restoreInsertionPoint(outerIp);
  SmallVector<Type> types;
  for (Value c : activeCaptures)
    types.push_back(c.getType());
  auto backward = IfOp::create(b, loc, types, op.getCond());
  backward.getThenRegion().push_back(blocks[0]);
  backward.getElseRegion().push_back(blocks[1]);
  blocks.clear();
  for (auto [c, g] : llvm::zip_equal(activeCaptures, backward.getResults()))
    accumulate(c, g);
  return success();
}

// A bounded est.while as a scan over its maximum_iterations steps (what the
// reverse pass can store), replacing it: the carried values and whether
// the loop still runs; a step whose condition fails (or that comes after
// one that did) passes the values through.
//   scan inits(vars, true) over(zeros[M]) {
//     %c = est.if %running { cond(vars) } else { false }
//     %v = est.if %c { body(vars) } else { vars }
//     est.yield %v, %c
//   }
ScanOp Sweep::whileAsScan(WhileOp loop) {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(loop);
  Location l = loop.getLoc();
  int64_t steps = loop.getMaximumIterationsAttr().getInt();
  auto boolType = RankedTensorType::get({}, b.getI1Type());
  Value running = ConstantOp::create(
      b, l, DenseElementsAttr::get(boolType, b.getBoolAttr(true)));
  auto stepsType = RankedTensorType::get({steps}, b.getI32Type());
  Value sequence = ConstantOp::create(
      b, l, DenseElementsAttr::get(stepsType, b.getI32IntegerAttr(0)));
  SmallVector<Value> inits(loop.getInits());
  inits.push_back(running);
  SmallVector<Type> types(loop.getResultTypes());
  types.push_back(boolType);
  auto scan = ScanOp::create(b, l, types, inits, ValueRange{sequence}, false);
  auto *body = new Block();
  scan.getBody().push_back(body);
  SmallVector<Value> vars;
  for (Value v : loop.getInits())
    vars.push_back(body->addArgument(v.getType(), l));
  Value isRunning = body->addArgument(boolType, l);
  body->addArgument(RankedTensorType::get({}, b.getI32Type()), l);
  b.setInsertionPointToEnd(body);
  // Copies `region`'s ops on `vars` into `block`; returns what it yields.
  auto inlineRegion = [&](Region &region, Block *block) {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToEnd(block);
    IRMapping map;
    map.map(region.front().getArguments(), vars);
    for (Operation &op : region.front().without_terminator())
      b.clone(op, map);
    SmallVector<Value> out;
    for (Value v : region.front().getTerminator()->getOperands())
      out.push_back(map.lookupOrDefault(v));
    return out;
  };
  auto check = IfOp::create(b, l, TypeRange{boolType}, isRunning);
  {
    auto *thenBlock = new Block();
    check.getThenRegion().push_back(thenBlock);
    SmallVector<Value> c = inlineRegion(loop.getCondRegion(), thenBlock);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToEnd(thenBlock);
    YieldOp::create(b, l, c);
    auto *elseBlock = new Block();
    check.getElseRegion().push_back(elseBlock);
    b.setInsertionPointToEnd(elseBlock);
    YieldOp::create(b, l, ValueRange{isRunning});
  }
  Value goOn = check.getResult(0);
  auto step = IfOp::create(b, l, loop.getResultTypes(), goOn);
  {
    auto *thenBlock = new Block();
    step.getThenRegion().push_back(thenBlock);
    SmallVector<Value> next = inlineRegion(loop.getBodyRegion(), thenBlock);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToEnd(thenBlock);
    YieldOp::create(b, l, next);
    auto *elseBlock = new Block();
    step.getElseRegion().push_back(elseBlock);
    b.setInsertionPointToEnd(elseBlock);
    YieldOp::create(b, l, vars);
  }
  SmallVector<Value> yielded(step.getResults());
  yielded.push_back(goOn);
  YieldOp::create(b, l, yielded);
  for (auto [from, to] : llvm::zip(loop.getResults(), scan.getResults())) {
    if (active.contains(from))
      active.insert(to);
    if (Value g = grads.lookup(from))
      grads[to] = g;
    from.replaceAllUsesWith(to);
  }
  loop.erase();
  return scan;
}

/// Replaces the est.gradient ops `group` (of one `y`, in one block, in block
/// order) with the gradients of `y` from one reverse sweep, built before the
/// first of them. The sources of an `x` read from a variable are all the
/// block's reads of that variable before the first op (their gradients
/// summed); otherwise `x` itself. An `x` that `y` does not depend on gets
/// zeros. A gather is differentiated densely (no sparse rows here).
LogicalResult resolveGradients(ArrayRef<GradientOp> group) {
  GradientOp first = group.front();
  Block *block = first->getBlock();
  Value y = first.getY();
  llvm::MapVector<Value, SmallVector<Value>> sources;
  DenseSet<Value> active;
  for (GradientOp op : group) {
    Value x = op.getX();
    if (sources.count(x))
      continue;
    SmallVector<Value> &from = sources[x];
    auto read = x.getDefiningOp<ReadVariableOp>();
    if (read && read->getBlock() == block) {
      for (Operation &o : *block) {
        if (&o == first.getOperation())
          break;
        auto r = dyn_cast<ReadVariableOp>(o);
        if (r && r.getVariable() == read.getVariable())
          from.push_back(r.getResult());
      }
    }
    if (from.empty())
      from.push_back(x);
    active.insert(from.begin(), from.end());
  }
  for (Operation &op : *block) {
    if (&op == first.getOperation())
      break;
    if (hasActiveInput(&op, active))
      for (Value r : op.getResults())
        if (isFloatTensor(r))
          active.insert(r);
  }

  OpBuilder b(first);
  Location loc = first.getLoc();
  Sweep sweep(b, loc, active, /*readValues=*/nullptr);
  if (active.contains(y)) {
    auto type = cast<RankedTensorType>(y.getType());
    sweep.accumulate(
        y, ConstantOp::create(
               b, loc,
               DenseElementsAttr::get(
                   type, b.getFloatAttr(type.getElementType(), 1.0))));
    Operation *prev = first->getPrevNode();
    if (prev && failed(sweep.run(prev, nullptr)))
      return first.emitError("cannot differentiate ")
             << describe(y) << ": " << sweep.why;
  }
  DenseMap<Value, Value> resolved;
  for (auto &[x, from] : sources) {
    Value sum;
    for (Value v : from)
      if (Value g = sweep.grads.lookup(v))
        sum = sum ? Value(AddOp::create(b, loc, sum, g)) : g;
    resolved[x] = sum;
  }
  for (GradientOp op : group) {
    Value g = resolved.lookup(op.getX());
    if (!g) {
      OpBuilder at(op);
      g = ZerosLikeOp::create(at, op.getLoc(), op.getX());
    }
    op.replaceAllUsesWith(g);
    op.erase();
  }
  return success();
}

/// Resolves every est.gradient of `module` (before the minimizes, whose
/// losses may use them): grouped by block and `y`, in block order, so a
/// later gradient of an earlier one's result differentiates its backward
/// ops.
LogicalResult resolveGradients(ModuleOp module) {
  llvm::MapVector<std::pair<Block *, Value>, SmallVector<GradientOp>> groups;
  bool nested = false;
  module.walk([&](GradientOp op) {
    if (!isa<func::FuncOp>(op->getParentOp())) {
      op.emitError("est.gradient must be in a function's body, not in a "
                   "loop body or branch");
      nested = true;
      return;
    }
    groups[{op->getBlock(), op.getY()}].push_back(op);
  });
  if (nested)
    return failure();
  for (auto &[key, group] : groups)
    if (failed(resolveGradients(group)))
      return failure();
  return success();
}

LogicalResult differentiate(MinimizeOp minimize, ModuleOp module) {
  // 1. The variables to train, in var_list or module order.
  SmallVector<StringRef> names;
  if (auto list = minimize.getVarList()) {
    for (Attribute a : *list)
      names.push_back(cast<FlatSymbolRefAttr>(a).getValue());
  } else {
    for (auto var : module.getOps<VariableOp>())
      if (var.getTrainable())
        names.push_back(var.getSymName());
  }
  llvm::StringSet<> trainable;
  for (StringRef n : names)
    trainable.insert(n);

  // 2. Active values: float results that depend on a trained variable.
  Block *block = minimize->getBlock();
  DenseSet<Value> active;
  llvm::MapVector<StringRef, SmallVector<Value>> reads;
  DenseSet<Value> readValues;
  for (Operation &op : *block) {
    if (&op == minimize.getOperation())
      break;
    if (auto read = dyn_cast<ReadVariableOp>(op)) {
      if (trainable.contains(read.getVariable()) &&
          isFloatTensor(read.getResult())) {
        active.insert(read.getResult());
        reads[read.getVariable()].push_back(read.getResult());
        readValues.insert(read.getResult());
      }
      continue;
    }
    if (hasActiveInput(&op, active))
      for (Value r : op.getResults())
        if (isFloatTensor(r))
          active.insert(r);
  }

  // 3. Backward.
  OpBuilder b(minimize);
  Location loc = minimize.getLoc();
  Sweep sweep(b, loc, active, &readValues);
  Value loss = minimize.getLoss();
  if (active.contains(loss)) {
    auto lossType = cast<RankedTensorType>(loss.getType());
    sweep.accumulate(
        loss,
        ConstantOp::create(
            b, loc,
            DenseElementsAttr::get(
                lossType, b.getFloatAttr(lossType.getElementType(), 1.0))));
    if (failed(sweep.run(minimize->getPrevNode(), nullptr))) {
      // Left for the driver to drop @train with a warning: a model whose
      // training needs an op without a rule still compiles eval/predict.
      minimize.emitWarning("not differentiated: ")
          << sweep.why << " (needed to train on the loss " << describe(loss)
          << ")";
      return success();
    }
  }
  DenseMap<Value, Value> &grads = sweep.grads;
  auto &sparse = sweep.sparse;

  // 4. apply_gradients for the variables the loss depends on.
  SmallVector<Attribute> variables;
  SmallVector<Value> variableGrads;
  SmallVector<StringRef> unused;
  SmallVector<Attribute> sparseVariables;
  SmallVector<Value> sparseIndices, sparseValues;
  for (StringRef name : names) {
    Value sum;
    SmallVector<std::pair<Value, Value>> rows;
    for (Value read : reads.lookup(name)) {
      if (Value g = grads.lookup(read))
        sum = sum ? Value(AddOp::create(b, loc, sum, g)) : g;
      llvm::append_range(rows, sparse.lookup(read));
    }
    if (!rows.empty() && !sum) {
      // Only gathered: the gradient stays rows (concatenated when several).
      SmallVector<Value> indices, values;
      for (auto [i, v] : rows) {
        indices.push_back(i);
        values.push_back(v);
      }
      Value i = indices.size() == 1
                    ? indices.front()
                    : Value(ConcatOp::create(b, loc, indices, 0));
      Value v = values.size() == 1 ? values.front()
                                   : Value(ConcatOp::create(b, loc, values, 0));
      sparseVariables.push_back(FlatSymbolRefAttr::get(b.getContext(), name));
      sparseIndices.push_back(i);
      sparseValues.push_back(v);
      continue;
    }
    // Also used densely: the rows are added into a dense gradient.
    for (auto [i, v] : rows) {
      Value zeros = ZerosLikeOp::create(b, loc, reads.lookup(name).front());
      Value dense =
          ScatterOp::create(b, loc, zeros, i, v, b.getStringAttr("add"));
      sum = sum ? Value(AddOp::create(b, loc, sum, dense)) : dense;
    }
    if (!sum) {
      unused.push_back(name);
      continue;
    }
    variables.push_back(FlatSymbolRefAttr::get(b.getContext(), name));
    variableGrads.push_back(sum);
  }
  auto list = [](ArrayRef<StringRef> vars) {
    std::string s;
    for (StringRef v : vars)
      s += (s.empty() ? "@" : ", @") + v.str();
    return s;
  };
  if (variables.empty() && sparseVariables.empty())
    minimize.emitWarning("no trainable variable influences the loss ")
        << describe(loss) << " (variables: "
        << (unused.empty() ? std::string("none") : list(unused))
        << "); the train op only increments global_step";
  else if (minimize.getVarList() && !unused.empty())
    minimize.emitWarning("var_list variable")
        << (unused.size() > 1 ? "s " : " ") << list(unused) << " do"
        << (unused.size() > 1 ? "" : "es") << " not influence the loss "
        << describe(loss) << "; no update";
  ApplyGradientsOp::create(
      b, loc, minimize.getOptimizerAttr(), minimize.getHyperparametersAttr(),
      b.getArrayAttr(variables), variableGrads, minimize.getLearningRate(),
      sparseVariables.empty() ? ArrayAttr() : b.getArrayAttr(sparseVariables),
      sparseIndices, sparseValues, /*keep_global_step=*/BoolAttr());
  minimize.erase();
  return success();
}

struct AutodiffPass : public est::impl::EstAutodiffBase<AutodiffPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(resolveGradients(module)))
      return signalPassFailure();
    SmallVector<MinimizeOp> minimizes;
    module.walk([&](MinimizeOp op) { minimizes.push_back(op); });
    for (MinimizeOp op : minimizes)
      if (failed(differentiate(op, module)))
        return signalPassFailure();
  }
};

} // namespace
