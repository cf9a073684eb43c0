//===- Sorting.cpp - est argsort, take_along_axis, ... to loops ----------===//
//
//   argsort      an scf.for nest over the slices along `axis` (every other
//                dim) carrying the result; per slice, with a static k <= 16
//                (top_k's usual k) k selection passes over the slice, each
//                the best element after the previous one in the order
//                (O(n k), no scratch); otherwise a heapsort of the slice's
//                positions in an [n] scratch tensor carried by the nest
//                (O(n log n)), whose first k are written out. The order is
//                strict (value, then position), so both give the one stable
//                result.
//   take_along_axis
//                linalg.generic + tensor.extract, the index clamped into
//                [0, dim - 1] (as est.gather's)
//   scatter_along_axis
//                an scf.for nest over the updates carrying the result
//                through tensor.insert (as est.scatter's), indices clamped
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

/// Up to this static k, argsort selects k times instead of sorting.
constexpr int64_t kMaxSelectionK = 16;

/// The order of one argsort slice: positions along the axis, compared by
/// their values in `x` (NaN above +inf), ties by position.
struct SliceOrder {
  Value x;
  SmallVector<Value> outer; // the slice's coordinates, axis left out
  int64_t axis;
  bool descending;

  Value load(OpBuilder &b, Location loc, Value pos) const {
    SmallVector<Value> at(outer);
    at.insert(at.begin() + axis, pos);
    return tensor::ExtractOp::create(b, loc, x, at);
  }

  /// Whether position `i` comes before position `j`.
  Value before(OpBuilder &b, Location loc, Value i, Value j) const {
    Value vi = load(b, loc, i), vj = load(b, loc, j);
    Value better, equal;
    if (isFloat(vi.getType())) {
      Value nanI =
          arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, vi, vi);
      Value nanJ =
          arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, vj, vj);
      Value notNanI = arith::XOrIOp::create(
          b, loc, nanI, arith::ConstantIntOp::create(b, loc, 1, 1));
      Value notNanJ = arith::XOrIOp::create(
          b, loc, nanJ, arith::ConstantIntOp::create(b, loc, 1, 1));
      // NaN ranks above every number: first descending, last ascending.
      Value nanFirst = descending
                           ? arith::AndIOp::create(b, loc, nanI, notNanJ)
                           : arith::AndIOp::create(b, loc, notNanI, nanJ);
      Value cmp = arith::CmpFOp::create(b, loc,
                                        descending ? arith::CmpFPredicate::OGT
                                                   : arith::CmpFPredicate::OLT,
                                        vi, vj);
      better = arith::OrIOp::create(b, loc, cmp, nanFirst);
      equal = arith::OrIOp::create(
          b, loc,
          arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, vi, vj),
          arith::AndIOp::create(b, loc, nanI, nanJ));
    } else {
      better = arith::CmpIOp::create(b, loc,
                                     descending ? arith::CmpIPredicate::sgt
                                                : arith::CmpIPredicate::slt,
                                     vi, vj);
      equal = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, vi, vj);
    }
    Value earlier =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, i, j);
    return arith::OrIOp::create(b, loc, better,
                                arith::AndIOp::create(b, loc, equal, earlier));
  }
};

Value toIndex(OpBuilder &b, Location loc, Value v) {
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
}
Value toI32(OpBuilder &b, Location loc, Value v) {
  return arith::IndexCastOp::create(b, loc, b.getI32Type(), v);
}

/// `out` with positions 0..k-1 of the slice's order written at the slice's
/// coordinates: k passes, each taking the best position after the
/// previous pass's.
Value selectFirstK(OpBuilder &b, Location loc, const SliceOrder &order,
                   Value out, Value n, int64_t k) {
  Value zero = indexConst(b, loc, 0), one = indexConst(b, loc, 1);
  auto passes = scf::ForOp::create(
      b, loc, zero, indexConst(b, loc, k), one, ValueRange{out, zero},
      [&](OpBuilder &pb, Location pl, Value j, ValueRange acc) {
        Value prev = acc[1];
        Value first =
            arith::CmpIOp::create(pb, pl, arith::CmpIPredicate::eq, j, zero);
        Value no = arith::ConstantIntOp::create(pb, pl, 0, 1);
        auto scan = scf::ForOp::create(
            pb, pl, zero, n, one, ValueRange{zero, no},
            [&](OpBuilder &sb, Location sl, Value i, ValueRange best) {
              Value eligible = arith::OrIOp::create(
                  sb, sl, first, order.before(sb, sl, prev, i));
              Value improves = arith::OrIOp::create(
                  sb, sl,
                  arith::XOrIOp::create(
                      sb, sl, best[1],
                      arith::ConstantIntOp::create(sb, sl, 1, 1)),
                  order.before(sb, sl, i, best[0]));
              Value take = arith::AndIOp::create(sb, sl, eligible, improves);
              Value pos = arith::SelectOp::create(sb, sl, take, i, best[0]);
              Value found = arith::OrIOp::create(sb, sl, best[1], take);
              scf::YieldOp::create(sb, sl, ValueRange{pos, found});
            });
        Value pos = scan.getResult(0);
        SmallVector<Value> at(order.outer);
        at.insert(at.begin() + order.axis, j);
        Value written =
            tensor::InsertOp::create(pb, pl, toI32(pb, pl, pos), acc[0], at);
        scf::YieldOp::create(pb, pl, ValueRange{written, pos});
      });
  return passes.getResult(0);
}

/// Heapsort of the slice's positions in `perm` [n] (i32) by the slice's
/// order (a max-heap of the last position: ascending in the order).
Value heapsort(OpBuilder &b, Location loc, const SliceOrder &order, Value perm,
               Value n) {
  Value zero = indexConst(b, loc, 0), one = indexConst(b, loc, 1),
        two = indexConst(b, loc, 2);
  // perm[i] = i.
  perm = scf::ForOp::create(
             b, loc, zero, n, one, ValueRange{perm},
             [&](OpBuilder &ib, Location il, Value i, ValueRange acc) {
               scf::YieldOp::create(
                   ib, il,
                   tensor::InsertOp::create(ib, il, toI32(ib, il, i), acc[0],
                                            ValueRange{i})
                       .getResult());
             })
             .getResult(0);
  // Moves perm[root] down the heap perm[0, end) to its place.
  auto siftDown = [&](OpBuilder &sb, Location sl, Value perm, Value root,
                      Value end) -> Value {
    // The condition forwards (perm, root, child, perm[root], perm[child]):
    // the loop's result and after-region types.
    Type indexType = sb.getIndexType(), i32 = sb.getI32Type();
    auto loop = scf::WhileOp::create(
        sb, sl, TypeRange{perm.getType(), indexType, indexType, i32, i32},
        ValueRange{perm, root},
        [&](OpBuilder &wb, Location wl, ValueRange args) {
          Value p = args[0], r = args[1];
          Value c = arith::AddIOp::create(
              wb, wl, arith::MulIOp::create(wb, wl, r, two), one);
          Value c1 = arith::AddIOp::create(wb, wl, c, one);
          Value hasC =
              arith::CmpIOp::create(wb, wl, arith::CmpIPredicate::ult, c, end);
          Value hasC1 =
              arith::CmpIOp::create(wb, wl, arith::CmpIPredicate::ult, c1, end);
          // Loads stay inside [0, end): a missing child reads the root.
          Value cc = arith::SelectOp::create(wb, wl, hasC, c, r);
          Value cc1 = arith::SelectOp::create(wb, wl, hasC1, c1, cc);
          Value pr = tensor::ExtractOp::create(wb, wl, p, ValueRange{r});
          Value pc = tensor::ExtractOp::create(wb, wl, p, ValueRange{cc});
          Value pc1 = tensor::ExtractOp::create(wb, wl, p, ValueRange{cc1});
          Value useC1 = arith::AndIOp::create(
              wb, wl, hasC1,
              order.before(wb, wl, toIndex(wb, wl, pc), toIndex(wb, wl, pc1)));
          Value child = arith::SelectOp::create(wb, wl, useC1, cc1, cc);
          Value pChild = arith::SelectOp::create(wb, wl, useC1, pc1, pc);
          Value down =
              arith::AndIOp::create(wb, wl, hasC,
                                    order.before(wb, wl, toIndex(wb, wl, pr),
                                                 toIndex(wb, wl, pChild)));
          scf::ConditionOp::create(wb, wl, down,
                                   ValueRange{p, r, child, pr, pChild});
        },
        [&](OpBuilder &wb, Location wl, ValueRange args) {
          Value p = args[0], r = args[1], child = args[2];
          p = tensor::InsertOp::create(wb, wl, args[4], p, ValueRange{r});
          p = tensor::InsertOp::create(wb, wl, args[3], p, ValueRange{child});
          scf::YieldOp::create(wb, wl, ValueRange{p, child});
        });
    return loop.getResult(0);
  };
  Value half = arith::DivUIOp::create(b, loc, n, two);
  perm = scf::ForOp::create(
             b, loc, zero, half, one, ValueRange{perm},
             [&](OpBuilder &hb, Location hl, Value t, ValueRange acc) {
               Value root = arith::SubIOp::create(
                   hb, hl, arith::SubIOp::create(hb, hl, half, one), t);
               scf::YieldOp::create(hb, hl, siftDown(hb, hl, acc[0], root, n));
             })
             .getResult(0);
  Value last = arith::MaxSIOp::create(
      b, loc, arith::SubIOp::create(b, loc, n, one), zero);
  perm =
      scf::ForOp::create(
          b, loc, zero, last, one, ValueRange{perm},
          [&](OpBuilder &sb, Location sl, Value t, ValueRange acc) {
            Value end = arith::SubIOp::create(
                sb, sl, arith::SubIOp::create(sb, sl, n, one), t);
            Value p = acc[0];
            Value top = tensor::ExtractOp::create(sb, sl, p, ValueRange{zero});
            Value bottom =
                tensor::ExtractOp::create(sb, sl, p, ValueRange{end});
            p = tensor::InsertOp::create(sb, sl, bottom, p, ValueRange{zero});
            p = tensor::InsertOp::create(sb, sl, top, p, ValueRange{end});
            scf::YieldOp::create(sb, sl, siftDown(sb, sl, p, zero, end));
          })
          .getResult(0);
  return perm;
}

struct ArgsortOpLowering
    : public LowerOpPattern<est::ArgsortOp, ArgsortOpLowering> {
  using LowerOpPattern::LowerOpPattern;

  static Value lower(OpBuilder &b, est::ArgsortOp op) {
    Location loc = op.getLoc();
    Value x = op.getX();
    RankedTensorType xType = tensorTypeOf(x), outType = resultTypeOf(op);
    int64_t rank = xType.getRank();
    int64_t axis = op.getAxis();
    if (axis < 0)
      axis += rank;
    int64_t k = op.getK();
    bool descending = op.getDirection() == "DESCENDING";
    Value n = dimValue(b, loc, x, axis);
    SmallVector<Value> dims;
    for (int64_t d = 0; d < rank; ++d)
      dims.push_back(d == axis ? (k < 0 ? n : indexConst(b, loc, k))
                               : dimValue(b, loc, x, d));
    Value out = emptyTensor(b, loc, outType, dims);
    bool select = k >= 0 && k <= kMaxSelectionK;
    SmallVector<Value> carried = {out};
    if (!select)
      carried.push_back(emptyTensor(
          b, loc, RankedTensorType::get({ShapedType::kDynamic}, b.getI32Type()),
          {n}));
    Value zero = indexConst(b, loc, 0), one = indexConst(b, loc, 1);
    SmallVector<Value> lbs, ubs, steps;
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis)
        ubs.push_back(dims[d]);
    lbs.assign(ubs.size(), zero);
    steps.assign(ubs.size(), one);
    scf::LoopNest nest = scf::buildLoopNest(
        b, loc, lbs, ubs, steps, carried,
        [&](OpBuilder &nb, Location nl, ValueRange ivs,
            ValueRange args) -> scf::ValueVector {
          SliceOrder order{x, SmallVector<Value>(ivs), axis, descending};
          if (select)
            return {selectFirstK(nb, nl, order, args[0], n, k)};
          Value perm = heapsort(nb, nl, order, args[1], n);
          Value count = k < 0 ? n : indexConst(nb, nl, k);
          Value written =
              scf::ForOp::create(
                  nb, nl, zero, count, one, ValueRange{args[0]},
                  [&](OpBuilder &cb, Location cl, Value j, ValueRange acc) {
                    Value p =
                        tensor::ExtractOp::create(cb, cl, perm, ValueRange{j});
                    SmallVector<Value> at(ivs);
                    at.insert(at.begin() + axis, j);
                    scf::YieldOp::create(
                        cb, cl,
                        tensor::InsertOp::create(cb, cl, p, acc[0], at)
                            .getResult());
                  })
                  .getResult(0);
          return {written, perm};
        });
    return nest.results.front();
  }
};

/// The index of `arr` along `axis` that an index element names, clamped
/// into [0, dim - 1].
Value clampedIndex(OpBuilder &b, Location loc, Value raw, Value limit) {
  Value i = toIndex(b, loc, raw);
  i = arith::MaxSIOp::create(b, loc, i, indexConst(b, loc, 0));
  return arith::MinSIOp::create(b, loc, i, limit);
}

struct TakeAlongAxisOpLowering
    : public LowerOpPattern<est::TakeAlongAxisOp, TakeAlongAxisOpLowering> {
  using LowerOpPattern::LowerOpPattern;

  static Value lower(OpBuilder &b, est::TakeAlongAxisOp op) {
    Location loc = op.getLoc();
    Value arr = op.getArr(), indices = op.getIndices();
    RankedTensorType outType = resultTypeOf(op);
    int64_t rank = outType.getRank();
    int64_t axis = op.getAxis();
    if (axis < 0)
      axis += rank;
    SmallVector<Value> dims;
    for (int64_t d = 0; d < rank; ++d)
      dims.push_back(dimValue(b, loc, indices, d));
    Value init = emptyTensor(b, loc, outType, dims);
    Value limit = arith::SubIOp::create(b, loc, dimValue(b, loc, arr, axis),
                                        indexConst(b, loc, 1));
    SmallVector<AffineMap> maps(2, b.getMultiDimIdentityMap(rank));
    return linalg::GenericOp::create(
               b, loc, TypeRange{outType}, ValueRange{indices},
               ValueRange{init}, maps, parallel(rank),
               [&](OpBuilder &nb, Location nl, ValueRange args) {
                 SmallVector<Value> at;
                 for (int64_t d = 0; d < rank; ++d)
                   at.push_back(
                       d == axis ? clampedIndex(nb, nl, args[0], limit)
                                 : Value(linalg::IndexOp::create(nb, nl, d)));
                 Value v = tensor::ExtractOp::create(nb, nl, arr, at);
                 linalg::YieldOp::create(nb, nl, v);
               })
        .getResult(0);
  }
};

struct ScatterAlongAxisOpLowering
    : public LowerOpPattern<est::ScatterAlongAxisOp,
                            ScatterAlongAxisOpLowering> {
  using LowerOpPattern::LowerOpPattern;

  static Value lower(OpBuilder &b, est::ScatterAlongAxisOp op) {
    Location loc = op.getLoc();
    Value ref = op.getRef(), indices = op.getIndices(),
          updates = op.getUpdates();
    int64_t rank = tensorTypeOf(ref).getRank();
    int64_t axis = op.getAxis();
    if (axis < 0)
      axis += rank;
    bool f = isFloat(tensorTypeOf(ref).getElementType());
    Value zero = indexConst(b, loc, 0), one = indexConst(b, loc, 1);
    Value limit =
        arith::SubIOp::create(b, loc, dimValue(b, loc, ref, axis), one);
    SmallVector<Value> lbs(rank, zero), ubs, steps(rank, one);
    for (int64_t d = 0; d < rank; ++d)
      ubs.push_back(dimValue(b, loc, indices, d));
    scf::LoopNest nest = scf::buildLoopNest(
        b, loc, lbs, ubs, steps, ValueRange{ref},
        [&](OpBuilder &nb, Location nl, ValueRange ivs,
            ValueRange args) -> scf::ValueVector {
          Value raw = tensor::ExtractOp::create(nb, nl, indices, ivs);
          SmallVector<Value> dst(ivs);
          dst[axis] = clampedIndex(nb, nl, raw, limit);
          Value u = tensor::ExtractOp::create(nb, nl, updates, ivs);
          Value old = tensor::ExtractOp::create(nb, nl, args[0], dst);
          Value sum = f ? Value(arith::AddFOp::create(nb, nl, old, u))
                        : Value(arith::AddIOp::create(nb, nl, old, u));
          return {tensor::InsertOp::create(nb, nl, sum, args[0], dst)};
        });
    return nest.results.front();
  }
};

} // namespace

void mlir::est::populateEstToLinalgSortingPatterns(
    RewritePatternSet &patterns) {
  patterns.add<ArgsortOpLowering, TakeAlongAxisOpLowering,
               ScatterAlongAxisOpLowering>(patterns.getContext());
}
