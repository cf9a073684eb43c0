//===- Indexing.cpp - est gather, scatter and one_hot to linalg
//------------===//
//
//   gather    linalg.generic + tensor.extract; indices are clamped to
//             [0, dim - 1]
//   scatter   an scf.for nest over the updates carrying the result through
//             tensor.insert (in place after bufferization); indices clamped
//   one_hot   linalg.generic (out-of-range: all off_value)
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/EstToLinalg/Patterns.h"
#include "compiler/Conversion/EstToLinalg/Utils.h"
#include "dialects/Est/IR/EstOps.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::est::lowering;

namespace {

struct GatherOpLowering
    : public LowerOpPattern<est::GatherOp, GatherOpLowering> {
  using LowerOpPattern::LowerOpPattern;

  static Value lower(OpBuilder &b, est::GatherOp gather) {
    Location loc = gather.getLoc();
    Value params = gather.getParams(), indices = gather.getIndices();
    RankedTensorType pType = tensorTypeOf(params);
    RankedTensorType iType = tensorTypeOf(indices);
    RankedTensorType outType = resultTypeOf(gather);
    int64_t axis = gather.getAxisAttr().getInt();
    if (axis < 0)
      axis += pType.getRank();
    int64_t q = iType.getRank(), outRank = outType.getRank();
    MLIRContext *ctx = b.getContext();
    SmallVector<Value> dims;
    for (int64_t d = 0; d < outRank; ++d) {
      if (d < axis)
        dims.push_back(dimValue(b, loc, params, d));
      else if (d < axis + q)
        dims.push_back(dimValue(b, loc, indices, d - axis));
      else
        dims.push_back(dimValue(b, loc, params, d - q + 1));
    }
    Value init = emptyTensor(b, loc, outType, dims);
    SmallVector<AffineExpr> indexExprs;
    for (int64_t i = 0; i < q; ++i)
      indexExprs.push_back(getAffineDimExpr(axis + i, ctx));
    SmallVector<AffineMap> maps = {AffineMap::get(outRank, 0, indexExprs, ctx),
                                   b.getMultiDimIdentityMap(outRank)};
    Value limit = arith::SubIOp::create(b, loc, dimValue(b, loc, params, axis),
                                        indexConst(b, loc, 1));
    Value zero = indexConst(b, loc, 0);
    return linalg::GenericOp::create(
               b, loc, TypeRange{outType}, ValueRange{indices},
               ValueRange{init}, maps, parallel(outRank),
               [&](OpBuilder &nb, Location nloc, ValueRange args) {
                 // Out-of-range indices are clamped into [0, dim - 1].
                 Value i = arith::IndexCastOp::create(
                     nb, nloc, nb.getIndexType(), args[0]);
                 i = arith::MaxSIOp::create(nb, nloc, i, zero);
                 i = arith::MinSIOp::create(nb, nloc, i, limit);
                 SmallVector<Value> coords;
                 for (int64_t d = 0; d < pType.getRank(); ++d) {
                   if (d < axis)
                     coords.push_back(linalg::IndexOp::create(nb, nloc, d));
                   else if (d == axis)
                     coords.push_back(i);
                   else
                     coords.push_back(
                         linalg::IndexOp::create(nb, nloc, d + q - 1));
                 }
                 Value v = tensor::ExtractOp::create(nb, nloc, params, coords);
                 linalg::YieldOp::create(nb, nloc, v);
               })
        .getResult(0);
  }
};

/// A loop nest over the updates (index dims, then the row dims) carrying the
/// result tensor, initialized with `ref`, through tensor.insert: one-shot
/// bufferization updates ref's buffer in place when ref is not used later
/// (a variable's value assigned back), so the work is O(updates).
struct ScatterOpLowering
    : public LowerOpPattern<est::ScatterOp, ScatterOpLowering> {
  using LowerOpPattern::LowerOpPattern;

  static Value lower(OpBuilder &b, est::ScatterOp scatter) {
    Location loc = scatter.getLoc();
    Value ref = scatter.getRef(), indices = scatter.getIndices(),
          updates = scatter.getUpdates();
    RankedTensorType rType = tensorTypeOf(ref);
    int64_t q = tensorTypeOf(indices).getRank(), rank = rType.getRank();
    bool add = scatter.getMode() == "add";
    bool f = isFloat(rType.getElementType());
    Value zero = indexConst(b, loc, 0), one = indexConst(b, loc, 1);
    Value limit = arith::SubIOp::create(b, loc, dimValue(b, loc, ref, 0), one);
    SmallVector<Value> lbs, ubs, steps;
    for (int64_t d = 0; d < q; ++d)
      ubs.push_back(dimValue(b, loc, indices, d));
    for (int64_t d = 1; d < rank; ++d)
      ubs.push_back(dimValue(b, loc, ref, d));
    lbs.assign(ubs.size(), zero);
    steps.assign(ubs.size(), one);
    scf::LoopNest nest = scf::buildLoopNest(
        b, loc, lbs, ubs, steps, ValueRange{ref},
        [&](OpBuilder &nb, Location nl, ValueRange ivs,
            ValueRange args) -> scf::ValueVector {
          Value raw =
              tensor::ExtractOp::create(nb, nl, indices, ivs.take_front(q));
          Value row =
              arith::IndexCastOp::create(nb, nl, nb.getIndexType(), raw);
          row = arith::MaxSIOp::create(nb, nl, row, zero);
          row = arith::MinSIOp::create(nb, nl, row, limit);
          SmallVector<Value> dst = {row};
          llvm::append_range(dst, ivs.drop_front(q));
          Value u = tensor::ExtractOp::create(nb, nl, updates, ivs);
          if (add) {
            Value old = tensor::ExtractOp::create(nb, nl, args[0], dst);
            u = f ? Value(arith::AddFOp::create(nb, nl, old, u))
                  : Value(arith::AddIOp::create(nb, nl, old, u));
          }
          return {tensor::InsertOp::create(nb, nl, u, args[0], dst)};
        });
    // With no loops (a rank-0 index and rank-1 ref) the body runs once and
    // still gives the result.
    assert(nest.results.size() == 1 && "the loop nest carries the result");
    return nest.results.front();
  }
};

struct OneHotOpLowering
    : public LowerOpPattern<est::OneHotOp, OneHotOpLowering> {
  using LowerOpPattern::LowerOpPattern;

  static Value lower(OpBuilder &b, est::OneHotOp oneHot) {
    Location loc = oneHot.getLoc();
    Value indices = oneHot.getIndices();
    RankedTensorType iType = tensorTypeOf(indices);
    RankedTensorType outType = resultTypeOf(oneHot);
    int64_t outRank = outType.getRank();
    int64_t axis = oneHot.getAxisAttr().getInt();
    if (axis < 0)
      axis += outRank;
    MLIRContext *ctx = b.getContext();
    SmallVector<Value> dims;
    SmallVector<AffineExpr> exprs;
    for (int64_t d = 0; d < outRank; ++d) {
      if (d == axis) {
        dims.push_back(indexConst(b, loc, oneHot.getDepthAttr().getInt()));
        continue;
      }
      int64_t id = d < axis ? d : d - 1;
      dims.push_back(dimValue(b, loc, indices, id));
      exprs.push_back(getAffineDimExpr(d, ctx));
    }
    Type elt = outType.getElementType();
    Value on = scalarConst(b, loc, elt, oneHot.getOnValue().convertToDouble());
    Value off =
        scalarConst(b, loc, elt, oneHot.getOffValue().convertToDouble());
    Value init = emptyTensor(b, loc, outType, dims);
    SmallVector<AffineMap> maps = {AffineMap::get(outRank, 0, exprs, ctx),
                                   b.getMultiDimIdentityMap(outRank)};
    Type indexElt = iType.getElementType();
    return linalg::GenericOp::create(
               b, loc, TypeRange{outType}, ValueRange{indices},
               ValueRange{init}, maps, parallel(outRank),
               [&](OpBuilder &nb, Location nloc, ValueRange args) {
                 Value position = linalg::IndexOp::create(nb, nloc, axis);
                 position =
                     arith::IndexCastOp::create(nb, nloc, indexElt, position);
                 Value hot = arith::CmpIOp::create(
                     nb, nloc, arith::CmpIPredicate::eq, args[0], position);
                 Value v = arith::SelectOp::create(nb, nloc, hot, on, off);
                 linalg::YieldOp::create(nb, nloc, v);
               })
        .getResult(0);
  }
};

} // namespace

void mlir::est::populateEstToLinalgIndexingPatterns(
    RewritePatternSet &patterns) {
  patterns.add<GatherOpLowering, ScatterOpLowering, OneHotOpLowering>(
      patterns.getContext());
}
