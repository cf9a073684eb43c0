//===- ControlFlow.cpp - est.scan / est.if / est.while -> scf -----------===//
//
// The control-flow ops become scf loops and conditionals on tensors; their
// regions were lowered already (the walk visits an op's regions first), so
// the bodies are linalg / tensor ops that are moved into the scf op.
//
// est.scan -> scf.for over the steps, destination style. Each carried value
// lives in a stack of T + 1 slots when a per-step output reads it (step t
// reads slot t and writes slot t + 1; reversed: reads t + 1, writes t; the
// output is then a view of the stack), else in two slots (ping-pong:
// iteration i reads slot i % 2, writes (i + 1) % 2). Either way a step
// never overwrites what it reads, one-shot bufferization updates the slots
// in place and no buffer is allocated per step. Per-step outputs
// are written into their [T] stacks. The stacks' sizes are known before the
// loop: their dynamic dimensions are traced back through the body (the
// destinations of its linalg ops, tensor.empty sizes, tensor.dim) to the
// scan's operands and captures. (The stored carried values are also what a
// reverse pass reads: est-autodiff yields them as per-step outputs.)
//
// est.if -> scf.if writing results made before it; est.while -> scf.while
// over two slots per carried value (both below).
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/EstToLinalg/Patterns.h"
#include "compiler/Conversion/EstToLinalg/Utils.h"
#include "dialects/Est/IR/EstOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"

using namespace mlir;
using namespace mlir::est::lowering;

namespace {

/// Rebuilds outside `body` the index value `v` computed in it from shapes:
/// constants, tensor.dim of values whose shapes are known outside, and
/// index arithmetic on those. `argDim(arg, d)` gives dimension d of a body
/// argument outside it.
class SizeTracer {
public:
  SizeTracer(OpBuilder &outside, Region &body,
             function_ref<Value(BlockArgument, int64_t)> argDim)
      : b(outside), body(body), argDim(argDim) {}

  /// Dimension `d` of tensor `v`, outside the body; null if unknown.
  Value dim(Value v, int64_t d) {
    auto type = cast<RankedTensorType>(v.getType());
    Location loc = v.getLoc();
    if (!type.isDynamicDim(d))
      return arith::ConstantIndexOp::create(b, loc, type.getDimSize(d));
    if (!body.isAncestor(v.getParentRegion()))
      return tensor::DimOp::create(b, loc, v, d);
    if (auto arg = dyn_cast<BlockArgument>(v))
      return arg.getOwner()->getParent() == &body ? argDim(arg, d) : Value();
    Operation *op = v.getDefiningOp();
    if (auto dps = dyn_cast<DestinationStyleOpInterface>(op))
      return dim(
          dps.getDpsInitOperand(cast<OpResult>(v).getResultNumber())->get(), d);
    if (auto empty = dyn_cast<tensor::EmptyOp>(op))
      return index(empty.getDynamicSize(d));
    if (auto cast = dyn_cast<tensor::CastOp>(op))
      return dim(cast.getSource(), d);
    if (auto reshape = dyn_cast<tensor::ExpandShapeOp>(op)) {
      OpFoldResult size = reshape.getMixedOutputShape()[d];
      if (auto attr = dyn_cast<Attribute>(size))
        return arith::ConstantIndexOp::create(b, loc,
                                              cast<IntegerAttr>(attr).getInt());
      return index(cast<Value>(size));
    }
    if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op)) {
      Value product;
      for (int64_t src : collapse.getReassociationIndices()[d]) {
        Value s = dim(collapse.getSrc(), src);
        if (!s)
          return Value();
        product = product ? arith::MulIOp::create(b, loc, product, s) : s;
      }
      return product;
    }
    if (auto pad = dyn_cast<tensor::PadOp>(op)) {
      // The source's size plus the padding on both sides (the gradients
      // of slices: an LSTM's or GRU's gates).
      Value size = dim(pad.getSource(), d);
      for (OpFoldResult side :
           {pad.getMixedLowPad()[d], pad.getMixedHighPad()[d]}) {
        if (!size)
          return Value();
        Value amount =
            isa<Attribute>(side)
                ? arith::ConstantIndexOp::create(
                      b, loc, cast<IntegerAttr>(cast<Attribute>(side)).getInt())
                : index(cast<Value>(side));
        size = amount ? arith::AddIOp::create(b, loc, size, amount) : Value();
      }
      return size;
    }
    if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op)) {
      // The result's dimension d is the d-th size that is not dropped.
      llvm::SmallBitVector dropped = slice.getDroppedDims();
      int64_t k = -1;
      for (auto [i, size] : llvm::enumerate(slice.getMixedSizes())) {
        if (dropped.test(i))
          continue;
        if (++k != d)
          continue;
        if (auto attr = dyn_cast<Attribute>(size))
          return arith::ConstantIndexOp::create(
              b, loc, cast<IntegerAttr>(attr).getInt());
        return index(cast<Value>(size));
      }
    }
    return Value();
  }

  /// The index value `v` (computed in the body or outside), outside.
  Value index(Value v) {
    if (!body.isAncestor(v.getParentRegion()))
      return v;
    Operation *op = v.getDefiningOp();
    if (!op)
      return Value();
    Location loc = op->getLoc();
    if (auto c = dyn_cast<arith::ConstantIndexOp>(op))
      return arith::ConstantIndexOp::create(b, loc, c.value());
    if (auto d = dyn_cast<tensor::DimOp>(op)) {
      std::optional<int64_t> i = d.getConstantIndex();
      return i ? dim(d.getSource(), *i) : Value();
    }
    if (isa<arith::AddIOp, arith::SubIOp, arith::MulIOp, arith::DivSIOp,
            arith::DivUIOp, arith::CeilDivSIOp, arith::MaxSIOp, arith::MinSIOp>(
            op)) {
      Value lhs = index(op->getOperand(0)), rhs = index(op->getOperand(1));
      if (!lhs || !rhs)
        return Value();
      IRMapping map;
      map.map(op->getOperand(0), lhs);
      map.map(op->getOperand(1), rhs);
      return b.clone(*op, map)->getResult(0);
    }
    return Value();
  }

private:
  OpBuilder &b;
  Region &body;
  function_ref<Value(BlockArgument, int64_t)> argDim;
};

/// The sizes of `type`'s dimensions after a leading `lead` one, for
/// tensor.empty: the dynamic ones from `dimOf`.
SmallVector<Value> dynamicSizes(RankedTensorType type, Value lead,
                                function_ref<Value(int64_t)> dimOf) {
  SmallVector<Value> sizes;
  if (type.isDynamicDim(0))
    sizes.push_back(lead);
  for (int64_t d = 1; d < type.getRank(); ++d)
    if (type.isDynamicDim(d))
      sizes.push_back(dimOf(d - 1));
  return sizes;
}

/// A new buffer of `type`: the stacks and results of the control-flow ops.
/// bufferization.alloc_tensor rather than tensor.empty, which CSE would
/// merge with another of the same shape (two stacks in one buffer: one
/// would be copied on every write).
Value newBuffer(OpBuilder &b, Location loc, RankedTensorType type,
                ValueRange dynamicSizes) {
  return bufferization::AllocTensorOp::create(b, loc, type, dynamicSizes);
}

/// Slot `index` of `stack` (dimension 0 dropped), as `type`.
/// The offsets, sizes and strides of `count` slots of `stack` from slot
/// `first` (dimension 0; every other dimension whole).
struct SlotRange {
  SmallVector<OpFoldResult> offsets, sizes, strides;
};
SlotRange slotRange(OpBuilder &b, Location loc, Value stack, OpFoldResult first,
                    OpFoldResult count) {
  int64_t rank = cast<RankedTensorType>(stack.getType()).getRank();
  SlotRange r{SmallVector<OpFoldResult>(rank, b.getIndexAttr(0)),
              {count},
              SmallVector<OpFoldResult>(rank, b.getIndexAttr(1))};
  r.offsets[0] = first;
  for (int64_t d = 1; d < rank; ++d)
    r.sizes.push_back(tensor::getMixedSize(b, loc, stack, d));
  return r;
}

/// The type of one slot of `stack`.
RankedTensorType slotType(Value stack) {
  auto type = cast<RankedTensorType>(stack.getType());
  return RankedTensorType::get(type.getShape().drop_front(),
                               type.getElementType());
}

Value readSlot(OpBuilder &b, Location loc, Value stack, Value index,
               Type type) {
  SlotRange r = slotRange(b, loc, stack, index, b.getIndexAttr(1));
  Value slice = tensor::ExtractSliceOp::create(b, loc, slotType(stack), stack,
                                               r.offsets, r.sizes, r.strides);
  return slice.getType() == type
             ? slice
             : Value(tensor::CastOp::create(b, loc, type, slice));
}

/// `stack` with `value` written to slot `index`.
Value writeSlot(OpBuilder &b, Location loc, Value value, Value stack,
                Value index) {
  SlotRange r = slotRange(b, loc, stack, index, b.getIndexAttr(1));
  RankedTensorType type = slotType(stack);
  if (value.getType() != type)
    value = tensor::CastOp::create(b, loc, type, value);
  return tensor::InsertSliceOp::create(b, loc, value, stack, r.offsets, r.sizes,
                                       r.strides);
}

struct ScanOpLowering : public OpRewritePattern<est::ScanOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(est::ScanOp scan,
                                PatternRewriter &rewriter) const override {
    Location loc = scan.getLoc();
    Block &body = scan.getBody().front();
    size_t numCarried = scan.getInits().size();
    bool reverse = scan.getReverse();
    Value seq0 = scan.getSequences().front();
    int64_t staticLength = scan.getStaticLength();
    Value length =
        ShapedType::isDynamic(staticLength)
            ? Value(tensor::DimOp::create(rewriter, loc, seq0, 0))
            : arith::ConstantIndexOp::create(rewriter, loc, staticLength);
    Value c0 = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value c1 = arith::ConstantIndexOp::create(rewriter, loc, 1);
    Value slots = arith::AddIOp::create(rewriter, loc, length, c1);

    // Body arguments' dimensions, outside the loop.
    auto argDim = [&](BlockArgument arg, int64_t d) -> Value {
      unsigned i = arg.getArgNumber();
      if (i < numCarried)
        return dimValue(rewriter, loc, scan.getInits()[i], d);
      return dimValue(rewriter, loc, scan.getSequences()[i - numCarried],
                      d + 1);
    };
    SizeTracer tracer(rewriter, scan.getBody(), argDim);

    SmallVector<Value> stacks;
    auto yield = scan.getYield();
    // A per-step output that is a carried value at its step's start (what
    // est-autodiff stores for the reverse pass) or at its end (an RNN's
    // outputs are its new states) is a view of that value's stack after the
    // loop, not a stack of its own: the carried index (-1: none), and
    // whether it is the value at the step's start.
    SmallVector<int64_t> carriedOutput;
    SmallVector<bool> atStart;
    for (Value value : yield.getValues().drop_front(numCarried)) {
      auto arg = dyn_cast<BlockArgument>(value);
      int64_t k = -1;
      bool start = false;
      if (arg && arg.getOwner() == &body && arg.getArgNumber() < numCarried) {
        k = arg.getArgNumber();
        start = true;
      } else {
        for (size_t c = 0; c < numCarried && k < 0; ++c)
          if (yield.getValues()[c] == value)
            k = static_cast<int64_t>(c);
      }
      carriedOutput.push_back(k);
      atStart.push_back(start);
    }
    // A carried value that a per-step output views keeps every step's value:
    // T + 1 slots (the init in slot 0, step t reads t and writes t + 1;
    // reversed: the init in slot T, step t reads t + 1 and writes t). The
    // others need only two (ping-pong: iteration i reads slot i % 2 and
    // writes (i + 1) % 2, as est.while's): nothing reads their earlier
    // values after the loop.
    SmallVector<bool> everyStep(numCarried, false);
    for (int64_t k : carriedOutput)
      if (k >= 0)
        everyStep[k] = true;
    Value c2 = arith::ConstantIndexOp::create(rewriter, loc, 2);
    for (auto [k, init] : llvm::enumerate(scan.getInits())) {
      auto type =
          ScanOp_stack(init.getType(), everyStep[k] ? ShapedType::kDynamic : 2);
      SmallVector<Value> sizes =
          dynamicSizes(type, everyStep[k] ? slots : c2, [&](int64_t d) {
            return dimValue(rewriter, loc, init, d);
          });
      Value empty = newBuffer(rewriter, loc, type, sizes);
      stacks.push_back(writeSlot(rewriter, loc, init, empty,
                                 everyStep[k] && reverse ? length : c0));
    }
    for (auto [j, value] :
         llvm::enumerate(yield.getValues().drop_front(numCarried))) {
      if (carriedOutput[j] >= 0)
        continue;
      auto type = cast<RankedTensorType>(scan.getStackedResults()[j].getType());
      SmallVector<Value> sizes;
      if (type.isDynamicDim(0))
        sizes.push_back(length);
      for (int64_t d = 1; d < type.getRank(); ++d) {
        if (!type.isDynamicDim(d))
          continue;
        Value size = tracer.dim(value, d - 1);
        if (!size)
          return rewriter.notifyMatchFailure(
              scan, "cannot size per-step output #" + std::to_string(j) +
                        " before the loop (its dimension " +
                        std::to_string(d - 1) +
                        " is not computed from the shapes of the scan's "
                        "operands)");
        sizes.push_back(size);
      }
      stacks.push_back(newBuffer(rewriter, loc, type, sizes));
    }

    auto loop = scf::ForOp::create(rewriter, loc, c0, length, c1, stacks);
    Block *loopBody = loop.getBody();
    rewriter.setInsertionPointToStart(loopBody);
    Value i = loop.getInductionVar();
    // t: the step (the sequences' slice); in / out: the carried values'
    // slots, of a T + 1 stack and of two slots.
    Value t = i, in = i, out;
    if (reverse) {
      Value last = arith::SubIOp::create(rewriter, loc, length, c1);
      t = arith::SubIOp::create(rewriter, loc, last, i);
      in = arith::AddIOp::create(rewriter, loc, t, c1);
      out = t;
    } else {
      out = arith::AddIOp::create(rewriter, loc, t, c1);
    }
    Value pingIn, pingOut;
    if (llvm::is_contained(everyStep, false)) {
      pingIn = arith::RemUIOp::create(rewriter, loc, i, c2);
      pingOut = arith::RemUIOp::create(
          rewriter, loc, arith::AddIOp::create(rewriter, loc, i, c1), c2);
    }
    SmallVector<Value> args;
    for (size_t k = 0; k < numCarried; ++k)
      args.push_back(readSlot(rewriter, loc, loop.getRegionIterArgs()[k],
                              everyStep[k] ? in : pingIn,
                              body.getArgument(k).getType()));
    for (auto [j, seq] : llvm::enumerate(scan.getSequences()))
      args.push_back(readSlot(rewriter, loc, seq, t,
                              body.getArgument(numCarried + j).getType()));
    rewriter.inlineBlockBefore(&body, loopBody, loopBody->end(), args);
    auto inlinedYield = cast<est::YieldOp>(loopBody->back());
    rewriter.setInsertionPoint(inlinedYield);
    SmallVector<Value> next;
    for (auto [k, value] : llvm::enumerate(inlinedYield.getValues())) {
      if (k >= numCarried && carriedOutput[k - numCarried] >= 0)
        continue;
      next.push_back(writeSlot(rewriter, loc, value,
                               loop.getRegionIterArgs()[next.size()],
                               k >= numCarried ? t
                               : everyStep[k]  ? out
                                               : pingOut));
    }
    rewriter.replaceOpWithNewOp<scf::YieldOp>(inlinedYield, next);

    rewriter.setInsertionPointAfter(loop);
    SmallVector<Value> results;
    Value lastPing;
    if (llvm::is_contained(everyStep, false))
      lastPing = arith::RemUIOp::create(rewriter, loc, length, c2);
    for (size_t k = 0; k < numCarried; ++k)
      results.push_back(readSlot(rewriter, loc, loop.getResult(k),
                                 !everyStep[k] ? lastPing
                                 : reverse     ? c0
                                               : length,
                                 scan.getResult(k).getType()));
    unsigned stack = numCarried;
    for (auto [j, k] : llvm::enumerate(carriedOutput)) {
      Value result = scan.getStackedResults()[j];
      if (k < 0) {
        results.push_back(loop.getResult(stack++));
        continue;
      }
      // Slots [0, T) hold the value at each step's start, [1, T + 1) at
      // its end (reversed: the other way round).
      Value carried = loop.getResult(k);
      SlotRange r =
          slotRange(rewriter, loc, carried,
                    rewriter.getIndexAttr(reverse == atStart[j]), length);
      Value view = tensor::ExtractSliceOp::create(
          rewriter, loc, carried, r.offsets, r.sizes, r.strides);
      results.push_back(view.getType() == result.getType()
                            ? view
                            : Value(tensor::CastOp::create(
                                  rewriter, loc, result.getType(), view)));
    }
    rewriter.replaceOp(scan, results);
    return success();
  }

  /// The stack of a carried value of `type`: a leading dimension of
  /// `slots` (dynamic here).
  static RankedTensorType ScanOp_stack(Type type, int64_t slots) {
    return est::ScanOp::stackedType(cast<RankedTensorType>(type), slots);
  }
};

/// A whole tensor written into `dest` (destination style: the value is
/// computed in, or copied into, the buffer of `dest`). A linalg.copy, not a
/// full tensor.insert_slice, which folds away into its source.
Value writeWhole(OpBuilder &b, Location loc, Value value, Value dest) {
  auto type = cast<RankedTensorType>(dest.getType());
  if (value.getType() != type)
    value = tensor::CastOp::create(b, loc, type, value);
  return linalg::CopyOp::create(b, loc, value, dest).getResult(0);
}

// est.if -> scf.if in destination style: each result has a buffer made
// before the branch (its sizes traced out of the branches), which the
// branch that runs writes. A branch yielding a tensor of its own would
// yield a buffer allocated inside it, which memory planning cannot place.
struct IfOpLowering : public OpRewritePattern<est::IfOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(est::IfOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto noArgs = [](BlockArgument, int64_t) { return Value(); };
    SizeTracer thenSizes(rewriter, op.getThenRegion(), noArgs);
    SizeTracer elseSizes(rewriter, op.getElseRegion(), noArgs);
    SmallVector<Value> dests;
    for (auto [k, result] : llvm::enumerate(op.getResults())) {
      auto type = cast<RankedTensorType>(result.getType());
      SmallVector<Value> sizes;
      for (int64_t d = 0; d < type.getRank(); ++d) {
        if (!type.isDynamicDim(d))
          continue;
        Value size = thenSizes.dim(op.getThenYield().getValues()[k], d);
        if (!size)
          size = elseSizes.dim(op.getElseYield().getValues()[k], d);
        if (!size)
          return rewriter.notifyMatchFailure(
              op, "cannot size result #" + std::to_string(k) +
                      " before the branch (its dimension " + std::to_string(d) +
                      " is not computed from shapes known outside it)");
        sizes.push_back(size);
      }
      dests.push_back(newBuffer(rewriter, loc, type, sizes));
    }
    Value cond =
        tensor::ExtractOp::create(rewriter, loc, op.getCond(), ValueRange{});
    auto branch = scf::IfOp::create(rewriter, loc, op.getResultTypes(), cond,
                                    /*withElseRegion=*/true);
    for (auto [from, to] :
         {std::pair(&op.getThenRegion(), &branch.getThenRegion()),
          std::pair(&op.getElseRegion(), &branch.getElseRegion())}) {
      // The builder adds blocks with a terminator only when there are no
      // results.
      if (to->empty())
        rewriter.createBlock(to);
      Block *target = &to->front();
      if (!target->empty())
        rewriter.eraseOp(&target->back());
      rewriter.inlineBlockBefore(&from->front(), target, target->end());
      auto yield = cast<est::YieldOp>(target->back());
      rewriter.setInsertionPoint(yield);
      SmallVector<Value> written;
      for (auto [value, dest] : llvm::zip_equal(yield.getValues(), dests))
        written.push_back(writeWhole(rewriter, loc, value, dest));
      rewriter.replaceOpWithNewOp<scf::YieldOp>(yield, written);
    }
    rewriter.replaceOp(op, branch.getResults());
    return success();
  }
};

// est.while -> scf.while over two slots per carried value (ping-pong):
// iteration i reads slot i % 2 and writes slot (i + 1) % 2, so the carried
// values stay in buffers made before the loop (as est.scan's stacks) and
// nothing is allocated per iteration; the iteration count is carried too
// (it also enforces maximum_iterations).
struct WhileOpLowering : public OpRewritePattern<est::WhileOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(est::WhileOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    std::optional<int64_t> max;
    if (IntegerAttr attr = op.getMaximumIterationsAttr())
      max = attr.getInt();
    Value c0 = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value c1 = arith::ConstantIndexOp::create(rewriter, loc, 1);
    Value c2 = arith::ConstantIndexOp::create(rewriter, loc, 2);
    SmallVector<Value> inits;
    for (auto [init, resultType] :
         llvm::zip_equal(op.getInits(), op.getResultTypes())) {
      auto type =
          est::ScanOp::stackedType(cast<RankedTensorType>(resultType), 2);
      SmallVector<Value> sizes = dynamicSizes(type, c2, [&](int64_t d) {
        return dimValue(rewriter, loc, init, d);
      });
      Value empty = newBuffer(rewriter, loc, type, sizes);
      inits.push_back(writeSlot(rewriter, loc, init, empty, c0));
    }
    inits.push_back(c0);
    SmallVector<Type> types = llvm::to_vector(ValueRange(inits).getTypes());
    SmallVector<Location> locs(types.size(), loc);
    auto loop = scf::WhileOp::create(rewriter, loc, types, inits);
    size_t n = op.getInits().size();
    // The carried values of iteration `i` (slot i % 2 of each stack).
    auto current = [&](Block *block, TypeRange argTypes) {
      Value i = block->getArguments().back();
      Value slot = arith::RemUIOp::create(rewriter, loc, i, c2);
      SmallVector<Value> vars;
      for (auto [stack, type] :
           llvm::zip_equal(block->getArguments().take_front(n), argTypes))
        vars.push_back(readSlot(rewriter, loc, stack, slot, type));
      return vars;
    };

    Block *before = rewriter.createBlock(&loop.getBefore(), {}, types, locs);
    rewriter.setInsertionPointToStart(before);
    SmallVector<Value> condArgs =
        current(before, op.getCondRegion().front().getArgumentTypes());
    rewriter.inlineBlockBefore(&op.getCondRegion().front(), before,
                               before->end(), condArgs);
    auto condYield = cast<est::YieldOp>(before->back());
    rewriter.setInsertionPoint(condYield);
    Value cond = tensor::ExtractOp::create(
        rewriter, loc, condYield.getValues().front(), ValueRange{});
    if (max) {
      Value limit = arith::ConstantIndexOp::create(rewriter, loc, *max);
      Value below =
          arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::slt,
                                before->getArguments().back(), limit);
      cond = arith::AndIOp::create(rewriter, loc, cond, below);
    }
    rewriter.replaceOpWithNewOp<scf::ConditionOp>(condYield, cond,
                                                  before->getArguments());

    Block *after = rewriter.createBlock(&loop.getAfter(), {}, types, locs);
    rewriter.setInsertionPointToStart(after);
    SmallVector<Value> bodyArgs =
        current(after, op.getBodyRegion().front().getArgumentTypes());
    rewriter.inlineBlockBefore(&op.getBodyRegion().front(), after, after->end(),
                               bodyArgs);
    auto bodyYield = cast<est::YieldOp>(after->back());
    rewriter.setInsertionPoint(bodyYield);
    Value i = after->getArguments().back();
    Value nextI = arith::AddIOp::create(rewriter, loc, i, c1);
    Value nextSlot = arith::RemUIOp::create(rewriter, loc, nextI, c2);
    SmallVector<Value> next;
    for (auto [value, stack] : llvm::zip_equal(
             bodyYield.getValues(), after->getArguments().take_front(n)))
      next.push_back(writeSlot(rewriter, loc, value, stack, nextSlot));
    next.push_back(nextI);
    rewriter.replaceOpWithNewOp<scf::YieldOp>(bodyYield, next);

    rewriter.setInsertionPointAfter(loop);
    Value last =
        arith::RemUIOp::create(rewriter, loc, loop.getResults().back(), c2);
    SmallVector<Value> results;
    for (auto [stack, type] :
         llvm::zip_equal(loop.getResults().take_front(n), op.getResultTypes()))
      results.push_back(readSlot(rewriter, loc, stack, last, type));
    rewriter.replaceOp(op, results);
    return success();
  }
};

} // namespace

void mlir::est::populateEstToLinalgControlFlowPatterns(
    RewritePatternSet &patterns) {
  patterns.add<ScanOpLowering, IfOpLowering, WhileOpLowering>(
      patterns.getContext());
}
