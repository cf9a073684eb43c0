//===- Indexing.cpp - est gather, scatter, one_hot, ... to linalg --------===//
//
//   gather       linalg.generic + tensor.extract; indices are clamped to
//                [0, dim - 1] unless an est.check_range checked them
//                (`est.indices_checked`, set by the pass)
//   scatter      an scf.for nest over the updates, in order, carrying the
//                result through tensor.insert (in place after
//                bufferization; "update" keeps the last write);
//                indices clamped unless checked, as for gather
//   unsorted_segment_sum
//                zeros of [B] + data[1:], then an scf.for over data's rows in
//                order (a deterministic sum) that adds each row whose id is
//                in [0, B) into its segment (scf.if; others are dropped)
//   one_hot      linalg.generic (out-of-range: all off_value, as in TF)
//   bucketize    linalg.generic: up to 16 boundaries, a sum of comparisons
//                (vectorizes, no loads); more, a branchless binary search
//                over a constant table, log2(K) steps
//   check_range  a linalg reduction to the first offending flat position,
//                then est.check_fail_if with it and the value there
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/EstToLinalg/Patterns.h"
#include "compiler/Conversion/EstToLinalg/Utils.h"
#include "dialects/Est/IR/EstOps.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"

#include <limits>

using namespace mlir;
using namespace mlir::est::lowering;

namespace {

/// Marks a gather or scatter whose indices an est.check_range checked
/// against exactly the rows they index: no clamping needed.
constexpr llvm::StringLiteral kIndicesChecked = "est.indices_checked";

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
    bool checked = gather->hasAttr(kIndicesChecked);
    return linalg::GenericOp::create(
               b, loc, TypeRange{outType}, ValueRange{indices},
               ValueRange{init}, maps, parallel(outRank),
               [&](OpBuilder &nb, Location nloc, ValueRange args) {
                 Value i = arith::IndexCastOp::create(
                     nb, nloc, nb.getIndexType(), args[0]);
                 if (!checked) {
                   // Unchecked indices are clamped into [0, dim - 1].
                   i = arith::MaxSIOp::create(nb, nloc, i, zero);
                   i = arith::MinSIOp::create(nb, nloc, i, limit);
                 }
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
    StringRef mode = scatter.getMode();
    bool checked = scatter->hasAttr(kIndicesChecked);
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
          if (!checked) {
            row = arith::MaxSIOp::create(nb, nl, row, zero);
            row = arith::MinSIOp::create(nb, nl, row, limit);
          }
          SmallVector<Value> dst = {row};
          llvm::append_range(dst, ivs.drop_front(q));
          Value u = tensor::ExtractOp::create(nb, nl, updates, ivs);
          if (mode != "update") {
            Value old = tensor::ExtractOp::create(nb, nl, args[0], dst);
            if (mode == "add")
              u = f ? Value(arith::AddFOp::create(nb, nl, old, u))
                    : Value(arith::AddIOp::create(nb, nl, old, u));
            else if (mode == "min")
              u = f ? Value(arith::MinimumFOp::create(nb, nl, old, u))
                    : Value(arith::MinSIOp::create(nb, nl, old, u));
            else
              u = f ? Value(arith::MaximumFOp::create(nb, nl, old, u))
                    : Value(arith::MaxSIOp::create(nb, nl, old, u));
          }
          return {tensor::InsertOp::create(nb, nl, u, args[0], dst)};
        });
    // With no loops (a rank-0 index and rank-1 ref) the body runs once and
    // still gives the result.
    assert(nest.results.size() == 1 && "the loop nest carries the result");
    return nest.results.front();
  }
};

/// The sum in row order: an scf.for over the N rows of `data` carrying the
/// result, each in-range row added into its segment by a loop nest over the
/// row's elements (extract + add + insert, in place after bufferization).
struct UnsortedSegmentSumOpLowering
    : public LowerOpPattern<est::UnsortedSegmentSumOp,
                            UnsortedSegmentSumOpLowering> {
  using LowerOpPattern::LowerOpPattern;

  static Value lower(OpBuilder &b, est::UnsortedSegmentSumOp op) {
    Location loc = op.getLoc();
    Value data = op.getData(), ids = op.getSegmentIds();
    RankedTensorType outType = resultTypeOf(op);
    int64_t rank = outType.getRank();
    Type elt = outType.getElementType();
    bool f = isFloat(elt);
    // Dim 0 is the number of segments: the third operand's dim 0.
    SmallVector<Value> dims = {dimValue(b, loc, op.getNumSegmentsLike(), 0)};
    for (int64_t d = 1; d < rank; ++d)
      dims.push_back(dimValue(b, loc, data, d));
    Value init =
        filledTensor(b, loc, outType, dims, scalarConst(b, loc, elt, 0.0));
    Value zero = indexConst(b, loc, 0), one = indexConst(b, loc, 1);
    Value segments = dims[0];
    SmallVector<Value> innerUbs(dims.begin() + 1, dims.end());
    SmallVector<Value> innerLbs(innerUbs.size(), zero),
        innerSteps(innerUbs.size(), one);
    auto rows = scf::ForOp::create(
        b, loc, zero, dimValue(b, loc, ids, 0), one, ValueRange{init},
        [&](OpBuilder &rb, Location rl, Value i, ValueRange acc) {
          Value raw = tensor::ExtractOp::create(rb, rl, ids, ValueRange{i});
          Value s = arith::IndexCastOp::create(rb, rl, rb.getIndexType(), raw);
          Value inRange = arith::AndIOp::create(
              rb, rl,
              arith::CmpIOp::create(rb, rl, arith::CmpIPredicate::sge, s, zero),
              arith::CmpIOp::create(rb, rl, arith::CmpIPredicate::slt, s,
                                    segments));
          auto ifOp = scf::IfOp::create(
              rb, rl, inRange,
              [&](OpBuilder &tb, Location tl) {
                scf::LoopNest nest = scf::buildLoopNest(
                    tb, tl, innerLbs, innerUbs, innerSteps, ValueRange{acc[0]},
                    [&](OpBuilder &nb, Location nl, ValueRange ivs,
                        ValueRange args) -> scf::ValueVector {
                      SmallVector<Value> src = {i}, dst = {s};
                      llvm::append_range(src, ivs);
                      llvm::append_range(dst, ivs);
                      Value v = tensor::ExtractOp::create(nb, nl, data, src);
                      Value old =
                          tensor::ExtractOp::create(nb, nl, args[0], dst);
                      Value sum =
                          f ? Value(arith::AddFOp::create(nb, nl, old, v))
                            : Value(arith::AddIOp::create(nb, nl, old, v));
                      return {
                          tensor::InsertOp::create(nb, nl, sum, args[0], dst)};
                    });
                scf::YieldOp::create(tb, tl, nest.results);
              },
              [&](OpBuilder &eb, Location el) {
                scf::YieldOp::create(eb, el, acc[0]);
              });
          scf::YieldOp::create(rb, rl, ifOp.getResults());
        });
    return rows.getResult(0);
  }
};

/// sequence_mask: one linalg.generic over [lengths..., maxlen], each
/// element `index(last) < lengths[...]`.
struct SequenceMaskOpLowering
    : public LowerOpPattern<est::SequenceMaskOp, SequenceMaskOpLowering> {
  using LowerOpPattern::LowerOpPattern;

  static Value lower(OpBuilder &b, est::SequenceMaskOp op) {
    Location loc = op.getLoc();
    Value lengths = op.getLengths();
    RankedTensorType outType = resultTypeOf(op);
    int64_t rank = outType.getRank();
    SmallVector<Value> dims;
    for (int64_t d = 0; d + 1 < rank; ++d)
      dims.push_back(dimValue(b, loc, lengths, d));
    if (Value like = op.getMaxlenLike()) {
      int64_t axis = op.getAxisAttr().getInt();
      if (axis < 0)
        axis += tensorTypeOf(like).getRank();
      dims.push_back(dimValue(b, loc, like, axis));
    } else {
      dims.push_back(indexConst(b, loc, op.getMaxlenAttr().getInt()));
    }
    Value init = emptyTensor(b, loc, outType, dims);
    MLIRContext *ctx = b.getContext();
    SmallVector<AffineExpr> exprs;
    for (int64_t d = 0; d + 1 < rank; ++d)
      exprs.push_back(getAffineDimExpr(d, ctx));
    SmallVector<AffineMap> maps = {AffineMap::get(rank, 0, exprs, ctx),
                                   b.getMultiDimIdentityMap(rank)};
    Type elt = tensorTypeOf(lengths).getElementType();
    return linalg::GenericOp::create(
               b, loc, TypeRange{outType}, ValueRange{lengths},
               ValueRange{init}, maps, parallel(rank),
               [&](OpBuilder &nb, Location nl, ValueRange args) {
                 Value j = linalg::IndexOp::create(nb, nl, rank - 1);
                 j = arith::IndexCastOp::create(nb, nl, elt, j);
                 Value valid = arith::CmpIOp::create(
                     nb, nl, arith::CmpIPredicate::slt, j, args[0]);
                 linalg::YieldOp::create(nb, nl, valid);
               })
        .getResult(0);
  }
};

/// reverse_sequence: one linalg.generic over the result, reading the
/// input at the mirrored position along seq_axis inside the valid prefix
/// (lengths clamped to [0, the sequence dimension]).
struct ReverseSequenceOpLowering
    : public LowerOpPattern<est::ReverseSequenceOp, ReverseSequenceOpLowering> {
  using LowerOpPattern::LowerOpPattern;

  static Value lower(OpBuilder &b, est::ReverseSequenceOp op) {
    Location loc = op.getLoc();
    Value input = op.getInput(), lengths = op.getLengths();
    RankedTensorType type = resultTypeOf(op);
    int64_t rank = type.getRank();
    int64_t seq = op.getSeqAxisAttr().getInt();
    int64_t batch = op.getBatchAxisAttr().getInt();
    seq = seq < 0 ? seq + rank : seq;
    batch = batch < 0 ? batch + rank : batch;
    SmallVector<Value> dims;
    for (int64_t d = 0; d < rank; ++d)
      dims.push_back(dimValue(b, loc, input, d));
    Value init = emptyTensor(b, loc, type, dims);
    MLIRContext *ctx = b.getContext();
    SmallVector<AffineMap> maps = {
        AffineMap::get(rank, 0, {getAffineDimExpr(batch, ctx)}, ctx),
        b.getMultiDimIdentityMap(rank)};
    Value seqSize = dims[seq];
    return linalg::GenericOp::create(
               b, loc, TypeRange{type}, ValueRange{lengths}, ValueRange{init},
               maps, parallel(rank),
               [&](OpBuilder &nb, Location nl, ValueRange args) {
                 Value length = arith::IndexCastOp::create(
                     nb, nl, nb.getIndexType(), args[0]);
                 Value zero = arith::ConstantIndexOp::create(nb, nl, 0);
                 Value one = arith::ConstantIndexOp::create(nb, nl, 1);
                 length = arith::MaxSIOp::create(nb, nl, length, zero);
                 length = arith::MinSIOp::create(nb, nl, length, seqSize);
                 SmallVector<Value> at;
                 for (int64_t d = 0; d < rank; ++d)
                   at.push_back(linalg::IndexOp::create(nb, nl, d));
                 Value s = at[seq];
                 Value inside = arith::CmpIOp::create(
                     nb, nl, arith::CmpIPredicate::slt, s, length);
                 Value mirrored = arith::SubIOp::create(
                     nb, nl, arith::SubIOp::create(nb, nl, length, one), s);
                 at[seq] = arith::SelectOp::create(nb, nl, inside, mirrored, s);
                 Value v = tensor::ExtractOp::create(nb, nl, input, at);
                 linalg::YieldOp::create(nb, nl, v);
               })
        .getResult(0);
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

/// The bucket of each element: the number of boundaries b with !(x < b)
/// (`uge`, so NaN counts every boundary, as TF's upper_bound). Boundaries are
/// rounded to f32 (TF's list(float) attribute); x is compared as f32, or as
/// f64 when it is f64, as TF's kernel compares T with float.
struct BucketizeOpLowering
    : public LowerOpPattern<est::BucketizeOp, BucketizeOpLowering> {
  using LowerOpPattern::LowerOpPattern;

  /// Up to this many boundaries: one comparison each, summed.
  static constexpr size_t kMaxLinear = 16;

  static Value lower(OpBuilder &b, est::BucketizeOp op) {
    Location loc = op.getLoc();
    Value x = op.getX();
    RankedTensorType outType = resultTypeOf(op);
    Type xElt = tensorTypeOf(x).getElementType();
    Type cmpType = xElt.isF64() ? Type(b.getF64Type()) : Type(b.getF32Type());
    SmallVector<double> bounds;
    for (double v : op.getBoundaries())
      bounds.push_back(static_cast<double>(static_cast<float>(v)));
    int64_t k = static_cast<int64_t>(bounds.size());
    Type i64 = b.getI64Type();
    // The table the binary search reads (captured by the loop body).
    Value table;
    if (bounds.size() > kMaxLinear) {
      auto tableType = RankedTensorType::get({k}, cmpType);
      table =
          cmpType.isF64()
              ? arith::ConstantOp::create(
                    b, loc,
                    DenseElementsAttr::get(tableType, ArrayRef<double>(bounds)))
              : arith::ConstantOp::create(
                    b, loc,
                    DenseElementsAttr::get(
                        tableType, ArrayRef<float>(llvm::to_vector(
                                       llvm::map_range(bounds, [](double v) {
                                         return static_cast<float>(v);
                                       })))));
    }
    return buildElementwise(
        b, loc, ValueRange{x}, outType,
        [&](OpBuilder &nb, Location nl, ValueRange args) -> Value {
          Value v = convertScalar(nb, nl, args[0], cmpType);
          auto notLess = [&](Value bound) {
            return arith::CmpFOp::create(nb, nl, arith::CmpFPredicate::UGE, v,
                                         bound);
          };
          if (!table) {
            Value count = intConst(nb, nl, i64, 0);
            for (double bound : bounds) {
              Value hit = notLess(scalarConst(nb, nl, cmpType, bound));
              count = arith::AddIOp::create(
                  nb, nl, count, arith::ExtUIOp::create(nb, nl, i64, hit));
            }
            return count;
          }
          // The longest prefix of boundaries with !(x < b), by binary
          // lifting: the predicate holds on a prefix since they are sorted.
          Value lo = indexConst(nb, nl, 0);
          Value size = indexConst(nb, nl, k);
          Value last = indexConst(nb, nl, k - 1);
          for (int64_t step = int64_t(1) << (63 - __builtin_clzll(k));
               step >= 1; step /= 2) {
            Value next =
                arith::AddIOp::create(nb, nl, lo, indexConst(nb, nl, step));
            Value valid = arith::CmpIOp::create(
                nb, nl, arith::CmpIPredicate::ule, next, size);
            Value at = arith::MinUIOp::create(
                nb, nl,
                arith::SubIOp::create(nb, nl, next, indexConst(nb, nl, 1)),
                last);
            Value bound =
                tensor::ExtractOp::create(nb, nl, table, ValueRange{at});
            Value take = arith::AndIOp::create(nb, nl, valid, notLess(bound));
            lo = arith::SelectOp::create(nb, nl, take, next, lo);
          }
          return arith::IndexCastOp::create(nb, nl, i64, lo);
        });
  }
};

/// The first offending element in row-major order: a reduction of
/// `bad ? position : INT64_MAX` with min, then, when one was found, its value
/// (read under an scf.if: the input may be empty).
struct CheckRangeOpLowering
    : public LowerOpPattern<est::CheckRangeOp, CheckRangeOpLowering> {
  using LowerOpPattern::LowerOpPattern;

  static Value lower(OpBuilder &b, est::CheckRangeOp check) {
    Location loc = check.getLoc();
    Value input = check.getInput();
    RankedTensorType type = tensorTypeOf(input);
    int64_t rank = type.getRank();
    Type i64 = b.getI64Type();
    MLIRContext *ctx = b.getContext();
    SmallVector<Value> dims;
    for (int64_t d = 0; d < rank; ++d)
      dims.push_back(dimValue(b, loc, input, d));
    Value none = intConst(b, loc, i64, std::numeric_limits<int64_t>::max());
    auto scalarType = RankedTensorType::get({}, i64);
    Value init = filledTensor(b, loc, scalarType, {}, none);
    SmallVector<AffineMap> maps = {b.getMultiDimIdentityMap(rank),
                                   AffineMap::get(rank, 0, {}, ctx)};
    SmallVector<utils::IteratorType> iterators(rank,
                                               utils::IteratorType::reduction);
    Value lower = intConst(b, loc, i64, check.getLowerAttr().getInt());
    Value upper = intConst(b, loc, i64, check.getUpperAttr().getInt());
    auto toI64 = [&](OpBuilder &nb, Location nloc, Value v) {
      return v.getType() == i64 ? v : arith::ExtSIOp::create(nb, nloc, i64, v);
    };
    Value first =
        linalg::GenericOp::create(
            b, loc, TypeRange{scalarType}, ValueRange{input}, ValueRange{init},
            maps, iterators,
            [&](OpBuilder &nb, Location nloc, ValueRange args) {
              Value v = toI64(nb, nloc, args[0]);
              Value below = arith::CmpIOp::create(
                  nb, nloc, arith::CmpIPredicate::slt, v, lower);
              Value above = arith::CmpIOp::create(
                  nb, nloc, arith::CmpIPredicate::sge, v, upper);
              Value bad = arith::OrIOp::create(nb, nloc, below, above);
              Value flat = indexConst(nb, nloc, 0);
              for (int64_t d = 0; d < rank; ++d) {
                flat = arith::MulIOp::create(nb, nloc, flat, dims[d]);
                flat = arith::AddIOp::create(
                    nb, nloc, flat, linalg::IndexOp::create(nb, nloc, d));
              }
              Value position = arith::IndexCastOp::create(nb, nloc, i64, flat);
              Value candidate =
                  arith::SelectOp::create(nb, nloc, bad, position, none);
              linalg::YieldOp::create(
                  nb, nloc,
                  arith::MinSIOp::create(nb, nloc, args[1], candidate)
                      .getResult());
            })
            .getResult(0);
    Value position = tensor::ExtractOp::create(b, loc, first, ValueRange{});
    Value failed =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, position, none);
    auto ifOp = scf::IfOp::create(
        b, loc, failed,
        [&](OpBuilder &tb, Location tloc) {
          // Row-major coordinates of `position`, last dim first.
          Value rest =
              arith::IndexCastOp::create(tb, tloc, tb.getIndexType(), position);
          SmallVector<Value> coords(rank);
          for (int64_t d = rank - 1; d >= 0; --d) {
            coords[d] = arith::RemUIOp::create(tb, tloc, rest, dims[d]);
            rest = arith::DivUIOp::create(tb, tloc, rest, dims[d]);
          }
          Value v = tensor::ExtractOp::create(tb, tloc, input, coords);
          scf::YieldOp::create(tb, tloc, toI64(tb, tloc, v));
        },
        [&](OpBuilder &eb, Location eloc) {
          scf::YieldOp::create(eb, eloc, intConst(eb, eloc, i64, 0));
        });
    est::CheckFailIfOp::create(b, loc, failed, position, ifOp.getResult(0),
                               check.getCheckAttr() ? check.getCheckAttr()
                                                    : b.getI64IntegerAttr(-1));
    return input;
  }
};

} // namespace

void mlir::est::markCheckedIndices(Operation *root) {
  auto checkedRows = [](Value indices, Value rows, int64_t axis) {
    auto check = indices.getDefiningOp<est::CheckRangeOp>();
    auto type = cast<RankedTensorType>(rows.getType());
    return check && check.getLowerAttr().getInt() == 0 &&
           !type.isDynamicDim(axis) &&
           check.getUpperAttr().getInt() == type.getDimSize(axis);
  };
  root->walk([&](Operation *op) {
    bool checked = false;
    if (auto gather = dyn_cast<est::GatherOp>(op)) {
      int64_t axis = gather.getAxis();
      if (axis < 0)
        axis += tensorTypeOf(gather.getParams()).getRank();
      checked = checkedRows(gather.getIndices(), gather.getParams(), axis);
    } else if (auto scatter = dyn_cast<est::ScatterOp>(op)) {
      checked = checkedRows(scatter.getIndices(), scatter.getRef(), 0);
    }
    if (checked)
      op->setAttr(kIndicesChecked, UnitAttr::get(op->getContext()));
  });
}

void mlir::est::populateEstToLinalgIndexingPatterns(
    RewritePatternSet &patterns) {
  patterns
      .add<GatherOpLowering, ScatterOpLowering, UnsortedSegmentSumOpLowering,
           OneHotOpLowering, BucketizeOpLowering, CheckRangeOpLowering,
           SequenceMaskOpLowering, ReverseSequenceOpLowering>(
          patterns.getContext());
}
