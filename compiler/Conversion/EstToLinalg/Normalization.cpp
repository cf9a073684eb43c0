//===- Normalization.cpp - layer_norm, attention_softmax to linalg -------===//
//
// The fused row ops: layer normalization and the attention softmax, and
// their gradients. Each is one linalg.generic whose loops are
//
//   (rows..., phase, row elements...)
//
// with the rows parallel and the phase and the row's elements reductions:
// one row is visited `phases` times in a row, so its statistics (a shifted
// sum and sum of squares; the maximum, then the sum of exponentials) are
// accumulated in the first passes into per-row outputs and the results are
// written in the last, while the row is still in cache. On the CPU,
// est-unroll-phase-loops makes each phase a loop of its own. No intermediate
// tensor of the row's size exists, the rows run in parallel (the outermost
// loop is parallel and every output is indexed by it) and a row's
// reduction stays in one thread in its order, on the CPU and the GPU.
//
// The phase loop's size comes from an unread input of `phases` elements
// (a linalg loop takes its size from an operand); the body reads the
// phase and the element position through linalg.index.
//
// layer_norm_grad's dgamma and dbeta are a second linalg.generic: a
// reduction over the rows (and the normalized dims the parameters
// broadcast along) of dy * xhat and dy, in x's order (rows outer, each row
// read contiguously, the parameters' loop innermost).
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/EstToLinalg/Patterns.h"
#include "compiler/Conversion/EstToLinalg/Utils.h"
#include "dialects/Est/IR/EstOps.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::est;
using namespace mlir::est::lowering;

namespace {

/// The loop structure of a fused row op over `x`: rows are x's dims
/// [0, rowRank), the row's elements dims [rowRank, rank); loop rowRank is
/// the phase.
struct RowNest {
  RowNest(OpBuilder &b, Location loc, Value x, int64_t rowRank, int64_t phases)
      : b(b), loc(loc), x(x), rank(tensorTypeOf(x).getRank()), rowRank(rowRank),
        ctx(b.getContext()) {
    for (int64_t d = 0; d < rank; ++d)
      dims.push_back(dimValue(b, loc, x, d));
    phaseInput = tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{phases},
                                         b.getI8Type());
    // The row's element count as a float of x's type, and its inverse.
    Value n = indexConst(b, loc, 1);
    for (int64_t d = rowRank; d < rank; ++d)
      n = arith::MulIOp::create(b, loc, n, dims[d]);
    Type elt = tensorTypeOf(x).getElementType();
    Value count = arith::IndexCastOp::create(b, loc, b.getI64Type(), n);
    count = arith::SIToFPOp::create(b, loc, elt, count);
    invCount =
        arith::DivFOp::create(b, loc, scalarConst(b, loc, elt, 1.0), count);
  }

  int64_t loops() const { return rank + 1; }
  /// Loop of x's dim `d`.
  AffineExpr loopOf(int64_t d) const {
    return getAffineDimExpr(d < rowRank ? d : d + 1, ctx);
  }
  /// x's dims [from, rank) (its elements), or the rows' [0, rowRank).
  AffineMap elementsFrom(int64_t from) const {
    SmallVector<AffineExpr> exprs;
    for (int64_t d = from; d < rank; ++d)
      exprs.push_back(loopOf(d));
    return AffineMap::get(loops(), 0, exprs, ctx);
  }
  AffineMap rowsMap() const {
    SmallVector<AffineExpr> exprs;
    for (int64_t d = 0; d < rowRank; ++d)
      exprs.push_back(loopOf(d));
    return AffineMap::get(loops(), 0, exprs, ctx);
  }
  AffineMap phaseMap() const {
    return AffineMap::get(loops(), 0, {getAffineDimExpr(rowRank, ctx)}, ctx);
  }
  SmallVector<utils::IteratorType> iterators() const {
    SmallVector<utils::IteratorType> its(rowRank,
                                         utils::IteratorType::parallel);
    its.append(rank - rowRank + 1, utils::IteratorType::reduction);
    return its;
  }
  /// An uninitialized per-row tensor (written at a row's first element).
  Value rowTensor() const {
    auto type = tensorTypeOf(x);
    SmallVector<int64_t> shape(type.getShape().take_front(rowRank));
    return emptyTensor(b, loc,
                       RankedTensorType::get(shape, type.getElementType()),
                       ArrayRef<Value>(dims).take_front(rowRank));
  }
  Value likeX() const { return emptyTensor(b, loc, tensorTypeOf(x), dims); }

  /// In the body: the phase, and whether this is the row's first element.
  static Value phaseIs(OpBuilder &nb, Location nl, int64_t rowRank,
                       int64_t phase) {
    Value p = linalg::IndexOp::create(nb, nl, rowRank);
    return arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::eq, p,
                                 arith::ConstantIndexOp::create(nb, nl, phase));
  }
  static Value isFirst(OpBuilder &nb, Location nl, int64_t rowRank,
                       int64_t rank) {
    Value first = arith::ConstantIntOp::create(nb, nl, 1, 1);
    Value zero = arith::ConstantIndexOp::create(nb, nl, 0);
    for (int64_t d = rowRank; d < rank; ++d) {
      Value i = linalg::IndexOp::create(nb, nl, d + 1);
      first = arith::AndIOp::create(
          nb, nl, first,
          arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::eq, i, zero));
    }
    return first;
  }

  OpBuilder &b;
  Location loc;
  Value x;
  int64_t rank, rowRank;
  MLIRContext *ctx;
  SmallVector<Value> dims;
  Value phaseInput, invCount;
};

/// The first pass of a row's statistics: sums of d = x - shift and d * d,
/// the shift being the row's first element (which keeps the variance
/// sum(d^2)/n - (sum(d)/n)^2 accurate when the mean is large).
void accumulateMoments(OpBuilder &nb, Location nl, Value first, Value x,
                       Value &shift, Value &sum, Value &sumSq) {
  Value zero = scalarConst(nb, nl, x.getType(), 0.0);
  shift = arith::SelectOp::create(nb, nl, first, x, shift);
  sum = arith::SelectOp::create(nb, nl, first, zero, sum);
  sumSq = arith::SelectOp::create(nb, nl, first, zero, sumSq);
  Value d = arith::SubFOp::create(nb, nl, x, shift);
  sum = arith::AddFOp::create(nb, nl, sum, d);
  sumSq =
      arith::AddFOp::create(nb, nl, sumSq, arith::MulFOp::create(nb, nl, d, d));
}

/// The mean and rsqrt(variance + epsilon) of a row from its moments.
std::pair<Value, Value> finishMoments(OpBuilder &nb, Location nl, Value shift,
                                      Value sum, Value sumSq, Value invCount,
                                      double epsilon) {
  Type t = shift.getType();
  Value m = arith::MulFOp::create(nb, nl, sum, invCount);
  Value var = arith::SubFOp::create(
      nb, nl, arith::MulFOp::create(nb, nl, sumSq, invCount),
      arith::MulFOp::create(nb, nl, m, m));
  var = arith::MaximumFOp::create(nb, nl, var, scalarConst(nb, nl, t, 0.0));
  Value mean = arith::AddFOp::create(nb, nl, shift, m);
  Value rstd = math::RsqrtOp::create(
      nb, nl,
      arith::AddFOp::create(nb, nl, var, scalarConst(nb, nl, t, epsilon)));
  return {mean, rstd};
}

int64_t normalizedAxis(int64_t axis, int64_t rank) {
  return axis < 0 ? axis + rank : axis;
}

/// layer_norm: outputs (shift, sum, sumSq, y); phase 0 accumulates the
/// moments, phase 1 writes y with the mean and rstd they give.
struct LayerNormOpLowering
    : public LowerOpPattern<LayerNormOp, LayerNormOpLowering> {
  using LowerOpPattern::LowerOpPattern;

  static Value lower(OpBuilder &b, LayerNormOp op) {
    Location loc = op.getLoc();
    Value x = op.getX();
    int64_t rank = tensorTypeOf(x).getRank();
    int64_t norm = normalizedAxis(op.getBeginNormAxis(), rank);
    int64_t params = normalizedAxis(op.getBeginParamsAxis(), rank);
    double epsilon = op.getEpsilon().convertToDouble();
    RowNest nest(b, loc, x, norm, /*phases=*/2);
    SmallVector<AffineMap> maps = {nest.elementsFrom(0),
                                   nest.elementsFrom(params),
                                   nest.elementsFrom(params),
                                   nest.phaseMap(),
                                   nest.rowsMap(),
                                   nest.rowsMap(),
                                   nest.rowsMap(),
                                   nest.elementsFrom(0)};
    Value row = nest.rowTensor();
    Value invCount = nest.invCount;
    auto generic = linalg::GenericOp::create(
        b, loc,
        TypeRange{row.getType(), row.getType(), row.getType(), tensorTypeOf(x)},
        ValueRange{x, op.getGamma(), op.getBeta(), nest.phaseInput},
        ValueRange{row, row, row, nest.likeX()}, maps, nest.iterators(),
        [&](OpBuilder &nb, Location nl, ValueRange args) {
          Value xv = args[0], gamma = args[1], beta = args[2];
          Value first = RowNest::isFirst(nb, nl, norm, rank);
          Value stats = RowNest::phaseIs(nb, nl, norm, 0);
          Value shift = args[4], sum = args[5], sumSq = args[6];
          auto ifOp = scf::IfOp::create(
              nb, nl, stats,
              [&](OpBuilder &tb, Location tl) {
                Value s0 = shift, s1 = sum, s2 = sumSq; // updated in place
                accumulateMoments(tb, tl, first, xv, s0, s1, s2);
                scf::YieldOp::create(tb, tl, ValueRange{s0, s1, s2, args[7]});
              },
              [&](OpBuilder &eb, Location el) {
                // Phase 1: mean and rstd from the row's sums, the same at
                // every element (LLVM hoists them), so nothing is carried
                // from one element to the next and the loop vectorizes.
                auto [mean, rstd] =
                    finishMoments(eb, el, shift, sum, sumSq, invCount, epsilon);
                Value y = arith::MulFOp::create(
                    eb, el, arith::SubFOp::create(eb, el, xv, mean), rstd);
                y = arith::AddFOp::create(
                    eb, el, arith::MulFOp::create(eb, el, y, gamma), beta);
                scf::YieldOp::create(eb, el, ValueRange{shift, sum, sumSq, y});
              });
          linalg::YieldOp::create(nb, nl, ifOp.getResults());
        });
    return generic.getResult(3);
  }
};

/// layer_norm_grad: dx row by row in two phases. Phase 0 accumulates, with
/// d = x - shift (the row's first element) and g = dy * gamma, the sums of
/// d, d^2, g and g * d; phase 1 turns them into mean, rstd, mean(g) and
/// mean(g * xhat) = rstd * (sum(g d) - (mean - shift) sum(g)) / n (values
/// of the row, which LLVM computes once) and writes dx = rstd * (g -
/// mean(g) - xhat * mean(g * xhat)). Then each row's mean and rstd, and
/// dgamma and dbeta.
struct LayerNormGradOpLowering : public OpRewritePattern<LayerNormGradOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(LayerNormGradOp op,
                                PatternRewriter &b) const override {
    Location loc = op.getLoc();
    Value x = op.getX(), gammaIn = op.getGamma(), dyIn = op.getDy();
    int64_t rank = tensorTypeOf(x).getRank();
    int64_t norm = normalizedAxis(op.getBeginNormAxis(), rank);
    int64_t params = normalizedAxis(op.getBeginParamsAxis(), rank);
    double epsilon = op.getEpsilon().convertToDouble();
    RowNest nest(b, loc, x, norm, /*phases=*/2);
    Value invCount = nest.invCount;
    Value row = nest.rowTensor();
    Type rowType = row.getType();
    SmallVector<AffineMap> maps = {nest.elementsFrom(0),
                                   nest.elementsFrom(params),
                                   nest.elementsFrom(0), nest.phaseMap()};
    maps.append(5, nest.rowsMap());
    maps.push_back(nest.elementsFrom(0));
    auto rows = linalg::GenericOp::create(
        b, loc,
        TypeRange{rowType, rowType, rowType, rowType, rowType, tensorTypeOf(x)},
        ValueRange{x, gammaIn, dyIn, nest.phaseInput},
        ValueRange{row, row, row, row, row, nest.likeX()}, maps,
        nest.iterators(), [&](OpBuilder &nb, Location nl, ValueRange args) {
          Value xv = args[0], gamma = args[1], dy = args[2];
          Type t = xv.getType();
          Value first = RowNest::isFirst(nb, nl, norm, rank);
          Value sums = RowNest::phaseIs(nb, nl, norm, 0);
          auto ifOp = scf::IfOp::create(
              nb, nl, sums,
              [&](OpBuilder &tb, Location tl) {
                Value shift = args[4], sum = args[5], sumSq = args[6];
                accumulateMoments(tb, tl, first, xv, shift, sum, sumSq);
                Value zero = scalarConst(tb, tl, t, 0.0);
                Value sumG =
                    arith::SelectOp::create(tb, tl, first, zero, args[7]);
                Value sumGd =
                    arith::SelectOp::create(tb, tl, first, zero, args[8]);
                Value g = arith::MulFOp::create(tb, tl, dy, gamma);
                Value d = arith::SubFOp::create(tb, tl, xv, shift);
                sumG = arith::AddFOp::create(tb, tl, sumG, g);
                sumGd = arith::AddFOp::create(
                    tb, tl, sumGd, arith::MulFOp::create(tb, tl, g, d));
                scf::YieldOp::create(
                    tb, tl,
                    ValueRange{shift, sum, sumSq, sumG, sumGd, args[9]});
              },
              [&](OpBuilder &eb, Location el) {
                // Phase 1: mean, rstd, mean(g) and mean(g * xhat) from the
                // row's sums, the same at every element (LLVM hoists them):
                // nothing is carried from one element to the next.
                Value shift = args[4], sum = args[5], sumSq = args[6];
                Value sumG = args[7], sumGd = args[8];
                auto [mean, rstd] =
                    finishMoments(eb, el, shift, sum, sumSq, invCount, epsilon);
                Value m = arith::MulFOp::create(eb, el, sum, invCount);
                Value meanG = arith::MulFOp::create(eb, el, sumG, invCount);
                Value centered = arith::SubFOp::create(
                    eb, el, sumGd, arith::MulFOp::create(eb, el, m, sumG));
                Value meanGx = arith::MulFOp::create(
                    eb, el, arith::MulFOp::create(eb, el, rstd, centered),
                    invCount);
                Value xhat = arith::MulFOp::create(
                    eb, el, arith::SubFOp::create(eb, el, xv, mean), rstd);
                Value g = arith::MulFOp::create(eb, el, dy, gamma);
                Value dx = arith::SubFOp::create(
                    eb, el, arith::SubFOp::create(eb, el, g, meanG),
                    arith::MulFOp::create(eb, el, xhat, meanGx));
                dx = arith::MulFOp::create(eb, el, rstd, dx);
                scf::YieldOp::create(
                    eb, el, ValueRange{shift, sum, sumSq, sumG, sumGd, dx});
              });
          linalg::YieldOp::create(nb, nl, ifOp.getResults());
        });

    // The rows' mean and rstd, for dgamma: one element per row.
    MLIRContext *ctx = b.getContext();
    AffineMap rowId = b.getMultiDimIdentityMap(norm);
    auto moments = linalg::GenericOp::create(
        b, loc, TypeRange{rowType, rowType},
        ValueRange{rows.getResult(0), rows.getResult(1), rows.getResult(2)},
        ValueRange{row, row}, SmallVector<AffineMap>(5, rowId),
        SmallVector<utils::IteratorType>(norm, utils::IteratorType::parallel),
        [&](OpBuilder &nb, Location nl, ValueRange args) {
          auto [mean, rstd] = finishMoments(nb, nl, args[0], args[1], args[2],
                                            invCount, epsilon);
          linalg::YieldOp::create(nb, nl, ValueRange{mean, rstd});
        });
    Value mean = moments.getResult(0), rstd = moments.getResult(1);

    // dgamma, dbeta: loops in x's order, the dims before params reductions
    // and the params' parallel: row by row, each row read contiguously (a
    // params-outer order would read x column by column).
    SmallVector<AffineExpr> rowExprs, paramExprs;
    for (int64_t d = 0; d < norm; ++d)
      rowExprs.push_back(getAffineDimExpr(d, ctx));
    for (int64_t d = params; d < rank; ++d)
      paramExprs.push_back(getAffineDimExpr(d, ctx));
    AffineMap xMap = b.getMultiDimIdentityMap(rank);
    SmallVector<AffineMap> colMaps = {xMap,
                                      xMap,
                                      AffineMap::get(rank, 0, rowExprs, ctx),
                                      AffineMap::get(rank, 0, rowExprs, ctx),
                                      AffineMap::get(rank, 0, paramExprs, ctx),
                                      AffineMap::get(rank, 0, paramExprs, ctx)};
    SmallVector<utils::IteratorType> its(params,
                                         utils::IteratorType::reduction);
    its.append(rank - params, utils::IteratorType::parallel);
    RankedTensorType paramType =
        cast<RankedTensorType>(op.getDgamma().getType());
    SmallVector<Value> paramDims;
    for (int64_t d = params; d < rank; ++d)
      paramDims.push_back(nest.dims[d]);
    Type elt = paramType.getElementType();
    Value zeros = filledTensor(b, loc, paramType, paramDims,
                               scalarConst(b, loc, elt, 0.0));
    auto cols = linalg::GenericOp::create(
        b, loc, TypeRange{paramType, paramType},
        ValueRange{x, dyIn, mean, rstd}, ValueRange{zeros, zeros}, colMaps, its,
        [&](OpBuilder &nb, Location nl, ValueRange args) {
          Value xhat = arith::MulFOp::create(
              nb, nl, arith::SubFOp::create(nb, nl, args[0], args[2]), args[3]);
          Value dgamma = arith::AddFOp::create(
              nb, nl, args[4], arith::MulFOp::create(nb, nl, args[1], xhat));
          Value dbeta = arith::AddFOp::create(nb, nl, args[5], args[1]);
          linalg::YieldOp::create(nb, nl, ValueRange{dgamma, dbeta});
        });
    b.replaceOp(
        op,
        ValueRange{rows.getResult(5),
                   castTo(b, loc, cols.getResult(0), op.getDgamma().getType()),
                   castTo(b, loc, cols.getResult(1), op.getDbeta().getType())});
    return success();
  }
};

/// The bias a masked-out logit gets: Keras's _large_compatible_negative.
double maskedBias(Type t) { return t.isF16() ? -65504.0 : -1e9; }

/// attention_softmax: outputs (max, sum, y); phase 0 takes the row's
/// maximum, phase 1 writes e = exp(v - max) into y, phase 2 sums y, phase 3
/// divides y by the sum: one exp per element, and the two phases that hold
/// the exps and divisions carry nothing from one element to the next.
struct AttentionSoftmaxOpLowering
    : public LowerOpPattern<AttentionSoftmaxOp, AttentionSoftmaxOpLowering> {
  using LowerOpPattern::LowerOpPattern;

  static Value lower(OpBuilder &b, AttentionSoftmaxOp op) {
    Location loc = op.getLoc();
    Value logits = op.getLogits(), mask = op.getMask();
    RankedTensorType type = tensorTypeOf(logits);
    int64_t rank = type.getRank();
    Type elt = type.getElementType();
    double scale = op.getScale().convertToDouble();
    bool causal = op.getCausal();
    RowNest nest(b, loc, logits, rank - 1, /*phases=*/4);
    SmallVector<Value> inputs = {logits};
    SmallVector<AffineMap> maps = {nest.elementsFrom(0)};
    bool boolMask = false;
    if (mask) {
      // The dims the mask broadcasts along (static 1s) are collapsed away,
      // so its map is a projected permutation of the loops.
      RankedTensorType maskType = tensorTypeOf(mask);
      boolMask = maskType.getElementType().isInteger(1);
      SmallVector<AffineExpr> exprs;
      SmallVector<ReassociationIndices> groups;
      ReassociationIndices pending;
      for (int64_t d = 0; d < rank; ++d) {
        pending.push_back(d);
        if (maskType.getDimSize(d) == 1 && type.getDimSize(d) != 1)
          continue;
        exprs.push_back(nest.loopOf(d));
        groups.push_back(pending);
        pending.clear();
      }
      if (!pending.empty() && !groups.empty())
        llvm::append_range(groups.back(), pending);
      if (static_cast<int64_t>(groups.size()) != rank)
        mask = tensor::CollapseShapeOp::create(b, loc, mask, groups);
      inputs.push_back(mask);
      maps.push_back(AffineMap::get(nest.loops(), 0, exprs, b.getContext()));
    }
    inputs.push_back(nest.phaseInput);
    maps.push_back(nest.phaseMap());
    Value row = nest.rowTensor();
    maps.append({nest.rowsMap(), nest.rowsMap(), nest.elementsFrom(0)});
    unsigned outs = inputs.size();
    auto generic = linalg::GenericOp::create(
        b, loc, TypeRange{row.getType(), row.getType(), type}, inputs,
        ValueRange{row, row, nest.likeX()}, maps, nest.iterators(),
        [&](OpBuilder &nb, Location nl, ValueRange args) {
          Value v = args[0];
          if (scale != 1.0)
            v = arith::MulFOp::create(nb, nl, v,
                                      scalarConst(nb, nl, elt, scale));
          Value masked;
          if (mask && boolMask) {
            masked = arith::XOrIOp::create(
                nb, nl, args[1], arith::ConstantIntOp::create(nb, nl, 1, 1));
          } else if (mask) {
            v = arith::AddFOp::create(nb, nl, v, args[1]);
          }
          if (causal) {
            // t: the logits' dim rank - 2 (a row loop); s: the last.
            Value t = linalg::IndexOp::create(nb, nl, rank - 2);
            Value s = linalg::IndexOp::create(nb, nl, rank);
            Value later =
                arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::ugt, s, t);
            masked = masked ? Value(arith::OrIOp::create(nb, nl, masked, later))
                            : later;
          }
          if (masked)
            v = arith::SelectOp::create(
                nb, nl, masked,
                arith::AddFOp::create(
                    nb, nl, v, scalarConst(nb, nl, elt, maskedBias(elt))),
                v);
          Value first = RowNest::isFirst(nb, nl, rank - 1, rank);
          Value m = args[outs], l = args[outs + 1], y = args[outs + 2];
          // Each phase is a plain loop once est-unroll-phase-loops has
          // split them: phases 1 and 3 vectorize, 0 and 2 are one max or
          // add per element in the row's order.
          Value phase = linalg::IndexOp::create(nb, nl, rank - 1);
          auto sw = scf::IndexSwitchOp::create(
              nb, nl, TypeRange{elt, elt, elt}, phase,
              ArrayRef<int64_t>{0, 1, 2}, /*caseRegionsCount=*/3);
          auto build =
              [&](Region &region,
                  llvm::function_ref<SmallVector<Value>(OpBuilder &, Location)>
                      body) {
                OpBuilder::InsertionGuard guard(nb);
                nb.setInsertionPointToStart(&region.emplaceBlock());
                scf::YieldOp::create(nb, nl, body(nb, nl));
              };
          // Phase 0: the row's maximum (maxnum: a NaN logit reaches every
          // output through phase 1's exp all the same).
          build(sw.getCaseRegions()[0],
                [&](OpBuilder &rb, Location rl) -> SmallVector<Value> {
                  Value mNew = arith::SelectOp::create(
                      rb, rl, first, v, arith::MaxNumFOp::create(rb, rl, m, v));
                  return {mNew, l, y};
                });
          // Phase 1: exp(v - max), kept in y.
          build(sw.getCaseRegions()[1],
                [&](OpBuilder &rb, Location rl) -> SmallVector<Value> {
                  Value e = math::ExpOp::create(
                      rb, rl, arith::SubFOp::create(rb, rl, v, m));
                  return {m, l, e};
                });
          // Phase 2: their sum, in the row's order.
          build(sw.getCaseRegions()[2],
                [&](OpBuilder &rb, Location rl) -> SmallVector<Value> {
                  Value acc = arith::SelectOp::create(
                      rb, rl, first, scalarConst(rb, rl, elt, 0.0), l);
                  return {m, arith::AddFOp::create(rb, rl, acc, y), y};
                });
          // Phase 3: y / sum.
          build(sw.getDefaultRegion(),
                [&](OpBuilder &rb, Location rl) -> SmallVector<Value> {
                  return {m, l, arith::DivFOp::create(rb, rl, y, l)};
                });
          linalg::YieldOp::create(nb, nl, sw.getResults());
        });
    return generic.getResult(2);
  }
};

/// attention_softmax_grad: phase 0 sums dy * y over the row, phase 1 writes
/// scale * y * (dy - sum).
struct AttentionSoftmaxGradOpLowering
    : public LowerOpPattern<AttentionSoftmaxGradOp,
                            AttentionSoftmaxGradOpLowering> {
  using LowerOpPattern::LowerOpPattern;

  static Value lower(OpBuilder &b, AttentionSoftmaxGradOp op) {
    Location loc = op.getLoc();
    Value y = op.getY(), dy = op.getDy();
    RankedTensorType type = tensorTypeOf(y);
    int64_t rank = type.getRank();
    Type elt = type.getElementType();
    double scale = op.getScale().convertToDouble();
    RowNest nest(b, loc, y, rank - 1, /*phases=*/2);
    Value row = nest.rowTensor();
    SmallVector<AffineMap> maps = {nest.elementsFrom(0), nest.elementsFrom(0),
                                   nest.phaseMap(), nest.rowsMap(),
                                   nest.elementsFrom(0)};
    auto generic = linalg::GenericOp::create(
        b, loc, TypeRange{row.getType(), type},
        ValueRange{y, dy, nest.phaseInput}, ValueRange{row, nest.likeX()}, maps,
        nest.iterators(), [&](OpBuilder &nb, Location nl, ValueRange args) {
          Value yv = args[0], g = args[1], dot = args[3];
          Value first = RowNest::isFirst(nb, nl, rank - 1, rank);
          Value stats = RowNest::phaseIs(nb, nl, rank - 1, 0);
          Value acc = arith::SelectOp::create(
              nb, nl, first, scalarConst(nb, nl, elt, 0.0), dot);
          acc = arith::AddFOp::create(nb, nl, acc,
                                      arith::MulFOp::create(nb, nl, yv, g));
          Value dl = arith::MulFOp::create(
              nb, nl, yv, arith::SubFOp::create(nb, nl, g, dot));
          if (scale != 1.0)
            dl = arith::MulFOp::create(nb, nl, dl,
                                       scalarConst(nb, nl, elt, scale));
          linalg::YieldOp::create(
              nb, nl,
              ValueRange{arith::SelectOp::create(nb, nl, stats, acc, dot),
                         arith::SelectOp::create(nb, nl, stats, args[4], dl)});
        });
    return generic.getResult(1);
  }
};

} // namespace

void mlir::est::populateEstToLinalgNormalizationPatterns(
    RewritePatternSet &patterns) {
  patterns.add<LayerNormOpLowering, LayerNormGradOpLowering,
               AttentionSoftmaxOpLowering, AttentionSoftmaxGradOpLowering>(
      patterns.getContext());
}
