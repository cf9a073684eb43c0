//===- Windows.cpp - est pooling and window gradients to linalg
//------------===//
//
//   max_pool avg_pool   tensor.pad + a linalg.generic over (n, oh, ow, kh,
//                       kw, c), the channels innermost; avg divides by the
//                       count of valid elements
//   conv2d_backprop_input/_filter, depthwise_conv2d and its two
//   gradients, max_pool_grad, avg_pool_grad
//                       one linalg.generic each (two for max_pool_grad: the
//                       first argmax of each window, then the scatter, all
//                       parallel when windows do not overlap; pooling
//                       gradients with the channels innermost), reading the
//                       windowed operand with tensor.extract at computed,
//                       bounds-checked coordinates (see below); f32 conv
//                       backprops and depthwise convs carry library_call =
//                       the runtime kernel,
//                       which est-linalg-to-runtime-calls calls instead
//
// Gradients of convolution and pooling: each is one linalg.generic over the
// result's elements and the window offsets (or, for the filter gradient,
// over the filter's elements and the output pixels). The operand a window
// reads at a computed coordinate is read with tensor.extract: output pixel
// (oh, ow) and tap (kh, kw) read input pixel (oh*sh + kh*dh - pt,
// ow*sw + kw*dw - pl); seen from input pixel (ih, iw) that is output pixel
// ((ih + pt - kh*dh) / sh, ...) when the division is exact and in range.
// Coordinates are clamped into range and the contribution selected to 0
// outside it, so the loops need no padding copy. f32 conv backprops become
// runtime kernel calls after bufferization (library_call + the "estc.conv"
// attribute [sh, sw, dh, dw, pt, pl]); these generics are their f64 (and
// reference) implementation.
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/EstToLinalg/Patterns.h"
#include "compiler/Conversion/EstToLinalg/Utils.h"
#include "dialects/Est/IR/EstOps.h"

#include "mlir/IR/PatternMatch.h"

#include <limits>
#include <tuple>

using namespace mlir;
using namespace mlir::est::lowering;

namespace {

/// The geometry of a conv2d / pooling window over an input of spatial size
/// [h, w].
struct WindowGeometry {
  int64_t h, w, oh, ow, kh, kw, sh, sw, dh, dw, pt, pl;

  static FailureOr<WindowGeometry> get(ArrayRef<int64_t> inputSize,
                                       ArrayRef<int64_t> window,
                                       ArrayRef<int64_t> strides,
                                       ArrayRef<int64_t> dilations,
                                       StringRef paddingName) {
    auto padding = estc::shape::parsePadding(paddingName.str());
    if (!padding || inputSize.size() != 2 || window.size() != 2 ||
        strides.size() != 2 || dilations.size() != 2 ||
        llvm::any_of(inputSize, ShapedType::isDynamic))
      return failure();
    WindowGeometry g;
    g.h = inputSize[0], g.w = inputSize[1];
    g.kh = window[0], g.kw = window[1];
    g.sh = strides[0], g.sw = strides[1];
    g.dh = dilations[0], g.dw = dilations[1];
    g.oh = estc::shape::convOutputSize(g.h, g.kh, g.sh, g.dh, *padding);
    g.ow = estc::shape::convOutputSize(g.w, g.kw, g.sw, g.dw, *padding);
    g.pt = estc::shape::convPadBefore(g.h, g.kh, g.sh, g.dh, *padding);
    g.pl = estc::shape::convPadBefore(g.w, g.kw, g.sw, g.dw, *padding);
    return g;
  }
  SmallVector<int64_t> kernelScalars() const {
    return {sh, sw, dh, dw, pt, pl};
  }
};

/// Index arithmetic inside a generic's body.
struct IndexMath {
  OpBuilder &b;
  Location loc;
  Value c(int64_t v) { return indexConst(b, loc, v); }
  Value idx(int64_t dim) { return linalg::IndexOp::create(b, loc, dim); }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value mul(Value x, int64_t k) {
    return k == 1 ? x : arith::MulIOp::create(b, loc, x, c(k)).getResult();
  }
  Value sub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
  Value cmp(arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, p, x, y);
  }
  Value both(Value x, Value y) { return arith::AndIOp::create(b, loc, x, y); }
  Value select(Value cond, Value x, Value y) {
    return arith::SelectOp::create(b, loc, cond, x, y);
  }
  /// Whether 0 <= v < limit.
  Value inRange(Value v, int64_t limit) {
    return both(cmp(arith::CmpIPredicate::sge, v, c(0)),
                cmp(arith::CmpIPredicate::slt, v, c(limit)));
  }
  /// The output coordinate whose window reads input coordinate `in` at tap
  /// `k` (t = in + pad - k * dilation, exact multiple of the stride, in
  /// range): (the coordinate clamped to 0 when invalid, validity).
  std::pair<Value, Value> outputOf(Value in, Value k, int64_t pad,
                                   int64_t dilation, int64_t stride,
                                   int64_t outSize) {
    Value t = sub(add(in, c(pad)), mul(k, dilation));
    Value valid = cmp(arith::CmpIPredicate::sge, t, c(0));
    Value o = t;
    if (stride != 1) {
      Value rem = arith::RemSIOp::create(b, loc, t, c(stride));
      valid = both(valid, cmp(arith::CmpIPredicate::eq, rem, c(0)));
      o = arith::DivSIOp::create(b, loc, t, c(stride));
    }
    valid = both(valid, cmp(arith::CmpIPredicate::slt, o, c(outSize)));
    return {select(valid, o, c(0)), valid};
  }
  /// The input coordinate output coordinate `out` reads at tap `k`:
  /// (clamped to 0 when outside the input, validity).
  std::pair<Value, Value> inputOf(Value out, Value k, int64_t pad,
                                  int64_t dilation, int64_t stride,
                                  int64_t inSize) {
    Value in = sub(add(mul(out, stride), mul(k, dilation)), c(pad));
    Value valid = inRange(in, inSize);
    return {select(valid, in, c(0)), valid};
  }
};

AffineMap dimsMap(MLIRContext *ctx, unsigned numDims,
                  ArrayRef<unsigned> results) {
  SmallVector<AffineExpr> exprs;
  for (unsigned d : results)
    exprs.push_back(getAffineDimExpr(d, ctx));
  return AffineMap::get(numDims, 0, exprs, ctx);
}

SmallVector<utils::IteratorType> iterators(int64_t parallelLoops,
                                           int64_t reductionLoops) {
  SmallVector<utils::IteratorType> its = parallel(parallelLoops);
  its.append(reductionLoops, utils::IteratorType::reduction);
  return its;
}

/// The iterators of a window loop nest (n, y, x | kh, kw | c): the taps
/// outside the channels, so the innermost loop runs over the contiguous
/// channels of NHWC and vectorizes; each element still visits its taps in
/// row-major order.
SmallVector<utils::IteratorType> windowIterators() {
  using utils::IteratorType;
  return {IteratorType::parallel,  IteratorType::parallel,
          IteratorType::parallel,  IteratorType::reduction,
          IteratorType::reduction, IteratorType::parallel};
}

/// `acc + (valid ? v : 0)`.
Value accumulateIf(OpBuilder &b, Location loc, Value valid, Value v,
                   Value acc) {
  Value zero = scalarConst(b, loc, v.getType(), 0);
  return arith::AddFOp::create(b, loc, acc,
                               arith::SelectOp::create(b, loc, valid, v, zero));
}

/// Marks an f32 conv backprop generic for est-linalg-to-runtime-calls.
void markRuntimeKernel(OpBuilder &b, linalg::GenericOp generic,
                       StringRef kernel, const WindowGeometry &g) {
  if (!getElementTypeOrSelf(generic.getResultTypes().front()).isF32())
    return;
  generic.setLibraryCallAttr(b.getStringAttr(kernel));
  generic->setAttr("estc.conv", b.getDenseI64ArrayAttr(g.kernelScalars()));
}

/// Where a conv backprop's body reads its gathered operand: four indices
/// (coordinates clamped into range) and whether the H and W taps are valid.
struct BackpropTap {
  SmallVector<Value, 4> indices;
  Value validH, validW;
};

/// The loop nest of the conv backprops and of the depthwise convolution and
/// its two gradients: 4 parallel loops over the result, `reductionLoops`
/// more; `streamed` read through `streamedMap`, the other operand
/// `gathered` read at `tapOf`'s tap; result += streamed * gathered where
/// both taps are valid. f32 is marked for the runtime's `kernel`, the
/// others stay loops.
Value windowTapLoops(OpBuilder &b, Location loc, RankedTensorType outType,
                     Value init, Value streamed, AffineMap streamedMap,
                     Value gathered, unsigned reductionLoops,
                     function_ref<BackpropTap(IndexMath &)> tapOf,
                     StringRef kernel, const WindowGeometry &g) {
  MLIRContext *ctx = b.getContext();
  unsigned loops = 4 + reductionLoops;
  SmallVector<AffineMap> maps = {streamedMap,
                                 dimsMap(ctx, loops, {0, 1, 2, 3})};
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{outType}, ValueRange{streamed}, ValueRange{init}, maps,
      iterators(4, reductionLoops),
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        IndexMath m{nb, nloc};
        BackpropTap tap = tapOf(m);
        Value v = tensor::ExtractOp::create(nb, nloc, gathered, tap.indices);
        Value prod = arith::MulFOp::create(nb, nloc, v, args[0]);
        linalg::YieldOp::create(nb, nloc,
                                accumulateIf(nb, nloc,
                                             m.both(tap.validH, tap.validW),
                                             prod, args[1]));
      });
  markRuntimeKernel(b, generic, kernel, g);
  return generic.getResult(0);
}

//===----------------------------------------------------------------------===//
// Patterns.
//===----------------------------------------------------------------------===//

/// max_pool (`IsMax`) / avg_pool.
template <typename OpTy, bool IsMax>
struct PoolOpLowering : public OpRewritePattern<OpTy> {
  using OpRewritePattern<OpTy>::OpRewritePattern;

  LogicalResult matchAndRewrite(OpTy pool, PatternRewriter &b) const override {
    constexpr bool isMax = IsMax;
    Location loc = pool.getLoc();
    Value input = pool.getInput();
    ArrayRef<int64_t> ksize = pool.getKsize();
    ArrayRef<int64_t> strides = pool.getStrides();
    StringRef paddingName = pool.getPadding();
    RankedTensorType inType = tensorTypeOf(input);
    auto padding = estc::shape::parsePadding(paddingName.str());
    if (!padding)
      return b.notifyMatchFailure(pool,
                                  "unknown padding '" + paddingName + "'");
    if (inType.getRank() != 4 || inType.isDynamicDim(1) ||
        inType.isDynamicDim(2))
      return b.notifyMatchFailure(pool,
                                  "needs static spatial input dimensions");
    RankedTensorType outType = resultTypeOf(pool);
    if (outType.isDynamicDim(1) || outType.isDynamicDim(2) ||
        outType.isDynamicDim(3))
      return b.notifyMatchFailure(pool,
                                  "needs a static output shape but the batch");
    int64_t height = inType.getDimSize(1), width = inType.getDimSize(2);
    auto [top, bottom] = spatialPads(height, ksize[0], strides[0], 1, *padding);
    auto [left, right] = spatialPads(width, ksize[1], strides[1], 1, *padding);
    Type elt = inType.getElementType();
    double inf = std::numeric_limits<double>::infinity();
    Value padded = padSpatial(b, loc, input, {top, left}, {bottom, right},
                              isMax ? -inf : 0.0);
    Value init =
        filledTensor(b, loc, outType,
                     {dimValue(b, loc, input, 0), Value(), Value(), Value()},
                     scalarConst(b, loc, elt, isMax ? -inf : 0.0));
    // linalg.pooling_nhwc_max / _sum as a generic with loops (n, oh, ow, kh,
    // kw, c): the channels innermost, contiguous in NHWC (the named ops put
    // the 2x2 window innermost, which LLVM unrolls and then vectorizes across
    // output pixels with gathers). Each output visits its taps in the same
    // row-major order.
    MLIRContext *ctx = b.getContext();
    Value window = tensor::EmptyOp::create(b, loc, ksize, elt);
    auto d = [&](unsigned i) { return getAffineDimExpr(i, ctx); };
    SmallVector<AffineMap> poolMaps = {
        AffineMap::get(
            6, 0,
            {d(0), d(1) * strides[0] + d(3), d(2) * strides[1] + d(4), d(5)},
            ctx),
        dimsMap(ctx, 6, {3, 4}), dimsMap(ctx, 6, {0, 1, 2, 5})};
    Value pooled =
        linalg::GenericOp::create(
            b, loc, TypeRange{outType}, ValueRange{padded, window},
            ValueRange{init}, poolMaps, windowIterators(),
            [&](OpBuilder &nb, Location nloc, ValueRange args) {
              Value r = isMax
                            ? (Value)arith::MaximumFOp::create(nb, nloc,
                                                               args[2], args[0])
                            : arith::AddFOp::create(nb, nloc, args[2], args[0]);
              linalg::YieldOp::create(nb, nloc, r);
            })
            .getResult(0);
    if (isMax) {
      b.replaceOp(pool, pooled);
      return success();
    }
    Value sum = pooled;
    // Divide by the number of valid (not padded) elements of each window, a
    // function of the output row and column only.
    int64_t outH = outType.getDimSize(1), outW = outType.getDimSize(2);
    SmallVector<double> counts;
    bool uniform = true;
    for (int64_t oy = 0; oy < outH; ++oy)
      for (int64_t ox = 0; ox < outW; ++ox) {
        int64_t y0 = oy * strides[0] - top, x0 = ox * strides[1] - left;
        int64_t rows =
            std::min(y0 + ksize[0], height) - std::max<int64_t>(y0, 0);
        int64_t cols =
            std::min(x0 + ksize[1], width) - std::max<int64_t>(x0, 0);
        counts.push_back(static_cast<double>(rows * cols));
        uniform = uniform && counts.back() == counts.front();
      }
    Value divisor;
    if (uniform || counts.empty()) {
      Attribute only =
          b.getFloatAttr(elt, counts.empty() ? 1.0 : counts.front());
      divisor = arith::ConstantOp::create(
          b, loc,
          DenseElementsAttr::get(RankedTensorType::get({}, elt),
                                 ArrayRef<Attribute>{only}));
    } else {
      SmallVector<Attribute> values;
      for (double c : counts)
        values.push_back(b.getFloatAttr(elt, c));
      divisor = arith::ConstantOp::create(
          b, loc,
          DenseElementsAttr::get(RankedTensorType::get({outH, outW}, elt),
                                 values));
    }
    // Broadcast [OH, OW] against [N, OH, OW, C]: a map (n, h, w, c) -> (h, w).
    SmallVector<AffineMap> maps = {b.getMultiDimIdentityMap(4)};
    if (uniform || counts.empty())
      maps.push_back(AffineMap::get(4, 0, {}, ctx));
    else
      maps.push_back(AffineMap::get(
          4, 0, {getAffineDimExpr(1, ctx), getAffineDimExpr(2, ctx)}, ctx));
    maps.push_back(b.getMultiDimIdentityMap(4));
    Value out =
        emptyTensor(b, loc, outType,
                    {dimValue(b, loc, input, 0), Value(), Value(), Value()});
    b.replaceOp(pool, linalg::GenericOp::create(
                          b, loc, TypeRange{outType}, ValueRange{sum, divisor},
                          ValueRange{out}, maps, parallel(4),
                          [&](OpBuilder &nb, Location nloc, ValueRange args) {
                            Value q = arith::DivFOp::create(nb, nloc, args[0],
                                                            args[1]);
                            linalg::YieldOp::create(nb, nloc, q);
                          })
                          .getResult(0));
    return success();
  }
};

struct Conv2DBackpropInputOpLowering
    : public OpRewritePattern<est::Conv2DBackpropInputOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(est::Conv2DBackpropInputOp op,
                                PatternRewriter &b) const override {
    Location loc = op.getLoc();
    Value dy = op.getGradOutput(), filter = op.getFilter();
    RankedTensorType fType = tensorTypeOf(filter), outType = resultTypeOf(op);
    if (!fType.hasStaticShape() || outType.isDynamicDim(3))
      return b.notifyMatchFailure(op, "needs a static filter shape");
    FailureOr<WindowGeometry> g = WindowGeometry::get(
        op.getInputSize(), {fType.getDimSize(0), fType.getDimSize(1)},
        op.getStrides(), op.getDilations(), op.getPadding());
    if (failed(g))
      return b.notifyMatchFailure(
          op, "needs NHWC operands, 2 strides and dilations and a known "
              "padding");
    // Loops (n, ih, iw, c | kh, kw, o): the filter streamed, dy gathered.
    Type elt = outType.getElementType();
    Value init = filledTensor(
        b, loc, outType, {dimValue(b, loc, dy, 0), Value(), Value(), Value()},
        scalarConst(b, loc, elt, 0));
    b.replaceOp(
        op,
        windowTapLoops(
            b, loc, outType, init, filter,
            dimsMap(b.getContext(), 7, {4, 5, 3, 6}), dy, 3,
            [&](IndexMath &m) {
              auto [oh, validH] =
                  m.outputOf(m.idx(1), m.idx(4), g->pt, g->dh, g->sh, g->oh);
              auto [ow, validW] =
                  m.outputOf(m.idx(2), m.idx(5), g->pl, g->dw, g->sw, g->ow);
              return BackpropTap{{m.idx(0), oh, ow, m.idx(6)}, validH, validW};
            },
            "estc_conv2d_backprop_input_f32", *g));
    return success();
  }
};

struct Conv2DBackpropFilterOpLowering
    : public OpRewritePattern<est::Conv2DBackpropFilterOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(est::Conv2DBackpropFilterOp op,
                                PatternRewriter &b) const override {
    Location loc = op.getLoc();
    Value x = op.getInput(), dy = op.getGradOutput();
    RankedTensorType xType = tensorTypeOf(x), outType = resultTypeOf(op);
    if (!outType.hasStaticShape())
      return b.notifyMatchFailure(op, "needs a static filter shape");
    FailureOr<WindowGeometry> g = WindowGeometry::get(
        {xType.getDimSize(1), xType.getDimSize(2)}, op.getFilterSize(),
        op.getStrides(), op.getDilations(), op.getPadding());
    if (failed(g))
      return b.notifyMatchFailure(op, "needs static spatial input dimensions");
    // Loops (kh, kw, c, o | n, oh, ow): dy streamed, x gathered.
    Type elt = outType.getElementType();
    Value init = filledTensor(b, loc, outType, {}, scalarConst(b, loc, elt, 0));
    b.replaceOp(
        op,
        windowTapLoops(
            b, loc, outType, init, dy, dimsMap(b.getContext(), 7, {4, 5, 6, 3}),
            x, 3,
            [&](IndexMath &m) {
              auto [ih, validH] =
                  m.inputOf(m.idx(5), m.idx(0), g->pt, g->dh, g->sh, g->h);
              auto [iw, validW] =
                  m.inputOf(m.idx(6), m.idx(1), g->pl, g->dw, g->sw, g->w);
              return BackpropTap{{m.idx(4), ih, iw, m.idx(2)}, validH, validW};
            },
            "estc_conv2d_backprop_filter_f32", *g));
    return success();
  }
};

/// depthwise_conv2d: loops (n, oh, ow, q | kh, kw), q = c * M + m; the
/// filter streamed as [kh, kw, q floordiv M, q mod M], the input gathered.
struct DepthwiseConv2DOpLowering
    : public OpRewritePattern<est::DepthwiseConv2DOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(est::DepthwiseConv2DOp op,
                                PatternRewriter &b) const override {
    Location loc = op.getLoc();
    Value x = op.getInput(), filter = op.getFilter();
    RankedTensorType xType = tensorTypeOf(x), fType = tensorTypeOf(filter);
    RankedTensorType outType = resultTypeOf(op);
    if (!fType.hasStaticShape() || outType.isDynamicDim(3))
      return b.notifyMatchFailure(op, "needs a static filter shape");
    FailureOr<WindowGeometry> g = WindowGeometry::get(
        {xType.getDimSize(1), xType.getDimSize(2)},
        {fType.getDimSize(0), fType.getDimSize(1)}, op.getStrides(),
        op.getDilations(), op.getPadding());
    if (failed(g))
      return b.notifyMatchFailure(op, "needs static spatial input dimensions");
    int64_t mult = fType.getDimSize(3);
    MLIRContext *ctx = b.getContext();
    AffineExpr q = getAffineDimExpr(3, ctx);
    AffineMap filterMap =
        AffineMap::get(6, 0,
                       {getAffineDimExpr(4, ctx), getAffineDimExpr(5, ctx),
                        q.floorDiv(mult), q % mult},
                       ctx);
    Type elt = outType.getElementType();
    Value init = filledTensor(
        b, loc, outType, {dimValue(b, loc, x, 0), Value(), Value(), Value()},
        scalarConst(b, loc, elt, 0));
    b.replaceOp(
        op, windowTapLoops(
                b, loc, outType, init, filter, filterMap, x, 2,
                [&](IndexMath &m) {
                  auto [ih, validH] =
                      m.inputOf(m.idx(1), m.idx(4), g->pt, g->dh, g->sh, g->h);
                  auto [iw, validW] =
                      m.inputOf(m.idx(2), m.idx(5), g->pl, g->dw, g->sw, g->w);
                  Value c = m.idx(3);
                  if (mult != 1)
                    c = arith::DivUIOp::create(m.b, m.loc, c, m.c(mult));
                  return BackpropTap{{m.idx(0), ih, iw, c}, validH, validW};
                },
                "estc_depthwise_conv2d_f32", *g));
    return success();
  }
};

/// depthwise_conv2d_backprop_input: loops (n, ih, iw, c | kh, kw, m); the
/// filter streamed, grad_output gathered at channel c * M + m.
struct DepthwiseConv2DBackpropInputOpLowering
    : public OpRewritePattern<est::DepthwiseConv2DBackpropInputOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(est::DepthwiseConv2DBackpropInputOp op,
                                PatternRewriter &b) const override {
    Location loc = op.getLoc();
    Value dy = op.getGradOutput(), filter = op.getFilter();
    RankedTensorType fType = tensorTypeOf(filter), outType = resultTypeOf(op);
    if (!fType.hasStaticShape() || outType.isDynamicDim(3))
      return b.notifyMatchFailure(op, "needs a static filter shape");
    FailureOr<WindowGeometry> g = WindowGeometry::get(
        op.getInputSize(), {fType.getDimSize(0), fType.getDimSize(1)},
        op.getStrides(), op.getDilations(), op.getPadding());
    if (failed(g))
      return b.notifyMatchFailure(op, "needs a known padding");
    int64_t mult = fType.getDimSize(3);
    Type elt = outType.getElementType();
    Value init = filledTensor(
        b, loc, outType, {dimValue(b, loc, dy, 0), Value(), Value(), Value()},
        scalarConst(b, loc, elt, 0));
    b.replaceOp(op,
                windowTapLoops(
                    b, loc, outType, init, filter,
                    dimsMap(b.getContext(), 7, {4, 5, 3, 6}), dy, 3,
                    [&](IndexMath &m) {
                      auto [oh, validH] = m.outputOf(m.idx(1), m.idx(4), g->pt,
                                                     g->dh, g->sh, g->oh);
                      auto [ow, validW] = m.outputOf(m.idx(2), m.idx(5), g->pl,
                                                     g->dw, g->sw, g->ow);
                      Value q = m.add(m.mul(m.idx(3), mult), m.idx(6));
                      return BackpropTap{{m.idx(0), oh, ow, q}, validH, validW};
                    },
                    "estc_depthwise_conv2d_backprop_input_f32", *g));
    return success();
  }
};

/// depthwise_conv2d_backprop_filter: loops (kh, kw, c, m | n, oh, ow);
/// grad_output streamed at channel c * M + m, the input gathered.
struct DepthwiseConv2DBackpropFilterOpLowering
    : public OpRewritePattern<est::DepthwiseConv2DBackpropFilterOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(est::DepthwiseConv2DBackpropFilterOp op,
                                PatternRewriter &b) const override {
    Location loc = op.getLoc();
    Value x = op.getInput(), dy = op.getGradOutput();
    RankedTensorType xType = tensorTypeOf(x), outType = resultTypeOf(op);
    if (!outType.hasStaticShape())
      return b.notifyMatchFailure(op, "needs a static filter shape");
    FailureOr<WindowGeometry> g = WindowGeometry::get(
        {xType.getDimSize(1), xType.getDimSize(2)}, op.getFilterSize(),
        op.getStrides(), op.getDilations(), op.getPadding());
    if (failed(g))
      return b.notifyMatchFailure(op, "needs static spatial input dimensions");
    int64_t mult = outType.getDimSize(3);
    MLIRContext *ctx = b.getContext();
    AffineMap dyMap = AffineMap::get(
        7, 0,
        {getAffineDimExpr(4, ctx), getAffineDimExpr(5, ctx),
         getAffineDimExpr(6, ctx),
         getAffineDimExpr(2, ctx) * mult + getAffineDimExpr(3, ctx)},
        ctx);
    Type elt = outType.getElementType();
    Value init = filledTensor(b, loc, outType, {}, scalarConst(b, loc, elt, 0));
    b.replaceOp(
        op,
        windowTapLoops(
            b, loc, outType, init, dy, dyMap, x, 3,
            [&](IndexMath &m) {
              auto [ih, validH] =
                  m.inputOf(m.idx(5), m.idx(0), g->pt, g->dh, g->sh, g->h);
              auto [iw, validW] =
                  m.inputOf(m.idx(6), m.idx(1), g->pl, g->dw, g->sw, g->w);
              return BackpropTap{{m.idx(4), ih, iw, m.idx(2)}, validH, validW};
            },
            "estc_depthwise_conv2d_backprop_filter_f32", *g));
    return success();
  }
};

struct MaxPoolGradOpLowering
    : public LowerOpPattern<est::MaxPoolGradOp, MaxPoolGradOpLowering> {
  using LowerOpPattern::LowerOpPattern;
  static constexpr const char *kUnsupported =
      "needs static spatial and channel dimensions";

  /// The gradient, or failure (before building anything) when the window or
  /// the channels are not static.
  static FailureOr<Value> lower(OpBuilder &b, est::MaxPoolGradOp op) {
    Location loc = op.getLoc();
    Value x = op.getInput(), dy = op.getGradOutput();
    RankedTensorType xType = tensorTypeOf(x), dyType = tensorTypeOf(dy);
    RankedTensorType outType = resultTypeOf(op);
    int64_t ones[] = {1, 1};
    FailureOr<WindowGeometry> g = WindowGeometry::get(
        {xType.getDimSize(1), xType.getDimSize(2)}, op.getKsize(),
        op.getStrides(), ones, op.getPadding());
    if (failed(g) || outType.isDynamicDim(3))
      return failure();
    MLIRContext *ctx = b.getContext();
    Type elt = outType.getElementType();
    Type i32 = b.getI32Type();
    Value window =
        tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{g->kh, g->kw}, elt);
    // 1. The first maximum of each window: loops (n, oh, ow, kh, kw, c);
    // tap index kh * KW + kw, -1 while no valid element was seen.
    auto maxType = RankedTensorType::get(
        {dyType.getDimSize(0), g->oh, g->ow, outType.getDimSize(3)}, elt);
    auto argType = maxType.clone(i32);
    SmallVector<Value> dims = {dimValue(b, loc, dy, 0), Value(), Value(),
                               Value()};
    Value maxInit = filledTensor(
        b, loc, maxType, dims,
        scalarConst(b, loc, elt, -std::numeric_limits<double>::infinity()));
    Value argInit =
        filledTensor(b, loc, argType, dims, intConst(b, loc, i32, -1));
    SmallVector<AffineMap> argMaps = {dimsMap(ctx, 6, {3, 4}),
                                      dimsMap(ctx, 6, {0, 1, 2, 5}),
                                      dimsMap(ctx, 6, {0, 1, 2, 5})};
    auto argmax = linalg::GenericOp::create(
        b, loc, TypeRange{maxType, argType}, ValueRange{window},
        ValueRange{maxInit, argInit}, argMaps, windowIterators(),
        [&](OpBuilder &nb, Location nloc, ValueRange args) {
          IndexMath m{nb, nloc};
          Value kh = m.idx(3), kw = m.idx(4);
          auto [ih, validH] = m.inputOf(m.idx(1), kh, g->pt, 1, g->sh, g->h);
          auto [iw, validW] = m.inputOf(m.idx(2), kw, g->pl, 1, g->sw, g->w);
          Value v = tensor::ExtractOp::create(
              nb, nloc, x, ValueRange{m.idx(0), ih, iw, m.idx(5)});
          Value none =
              arith::CmpIOp::create(nb, nloc, arith::CmpIPredicate::eq, args[2],
                                    intConst(nb, nloc, i32, -1));
          Value greater = arith::CmpFOp::create(
              nb, nloc, arith::CmpFPredicate::OGT, v, args[1]);
          Value take = m.both(m.both(validH, validW),
                              arith::OrIOp::create(nb, nloc, none, greater));
          Value tap = arith::IndexCastOp::create(nb, nloc, i32,
                                                 m.add(m.mul(kh, g->kw), kw));
          linalg::YieldOp::create(nb, nloc,
                                  ValueRange{m.select(take, v, args[1]),
                                             m.select(take, tap, args[2])});
        });
    Value arg = argmax.getResult(1);
    Value zero = scalarConst(b, loc, elt, 0);
    // `acc` plus the gradient of output window `coords` when the input element
    // at its tap (tapH, tapW) is the window's first maximum.
    auto addIfFirstMax = [&](OpBuilder &nb, Location nloc, IndexMath &m,
                             ArrayRef<Value> coords, Value tapH, Value tapW,
                             Value validH, Value validW, Value acc) {
      Value winner = tensor::ExtractOp::create(nb, nloc, arg, coords);
      Value tap = arith::IndexCastOp::create(nb, nloc, i32,
                                             m.add(m.mul(tapH, g->kw), tapW));
      Value hit = m.both(m.both(validH, validW),
                         arith::CmpIOp::create(
                             nb, nloc, arith::CmpIPredicate::eq, winner, tap));
      Value v = tensor::ExtractOp::create(nb, nloc, dy, coords);
      return accumulateIf(nb, nloc, hit, v, acc);
    };
    if (g->sh >= g->kh && g->sw >= g->kw) {
      // 2'. Windows that do not overlap (TF's usual 2x2 / 2): each input
      // element is in at most one window, the one at (ih + pt) / sh, as its
      // tap (ih + pt) % sh. Loops (n, ih, iw, c), all parallel, no init. The
      // result is `0 + (hit ? g : 0)`, as the sum over taps below gives it
      // (-0 included).
      Value init = emptyTensor(
          b, loc, outType, {dimValue(b, loc, x, 0), Value(), Value(), Value()});
      return linalg::GenericOp::create(
                 b, loc, TypeRange{outType}, ValueRange{}, ValueRange{init},
                 ArrayRef<AffineMap>{b.getMultiDimIdentityMap(4)}, parallel(4),
                 [&](OpBuilder &nb, Location nloc, ValueRange) {
                   IndexMath m{nb, nloc};
                   auto window = [&](Value in, int64_t pad, int64_t stride,
                                     int64_t k, int64_t outSize) {
                     Value t = m.add(in, m.c(pad));
                     Value o = arith::DivUIOp::create(nb, nloc, t, m.c(stride));
                     Value tap =
                         arith::RemUIOp::create(nb, nloc, t, m.c(stride));
                     Value valid = m.both(
                         m.cmp(arith::CmpIPredicate::ult, tap, m.c(k)),
                         m.cmp(arith::CmpIPredicate::ult, o, m.c(outSize)));
                     return std::make_tuple(m.select(valid, o, m.c(0)), tap,
                                            valid);
                   };
                   auto [oh, tapH, validH] =
                       window(m.idx(1), g->pt, g->sh, g->kh, g->oh);
                   auto [ow, tapW, validW] =
                       window(m.idx(2), g->pl, g->sw, g->kw, g->ow);
                   SmallVector<Value> coords = {m.idx(0), oh, ow, m.idx(3)};
                   linalg::YieldOp::create(nb, nloc,
                                           addIfFirstMax(nb, nloc, m, coords,
                                                         tapH, tapW, validH,
                                                         validW, zero));
                 })
          .getResult(0);
    }
    // 2. Each input element sums the gradients of the windows whose first
    // maximum it is: loops (n, ih, iw, kh, kw, c).
    Value init =
        filledTensor(b, loc, outType,
                     {dimValue(b, loc, x, 0), Value(), Value(), Value()}, zero);
    SmallVector<AffineMap> maps = {dimsMap(ctx, 6, {3, 4}),
                                   dimsMap(ctx, 6, {0, 1, 2, 5})};
    return linalg::GenericOp::create(
               b, loc, TypeRange{outType}, ValueRange{window}, ValueRange{init},
               maps, windowIterators(),
               [&](OpBuilder &nb, Location nloc, ValueRange args) {
                 IndexMath m{nb, nloc};
                 Value kh = m.idx(3), kw = m.idx(4);
                 auto [oh, validH] =
                     m.outputOf(m.idx(1), kh, g->pt, 1, g->sh, g->oh);
                 auto [ow, validW] =
                     m.outputOf(m.idx(2), kw, g->pl, 1, g->sw, g->ow);
                 SmallVector<Value> coords = {m.idx(0), oh, ow, m.idx(5)};
                 linalg::YieldOp::create(nb, nloc,
                                         addIfFirstMax(nb, nloc, m, coords, kh,
                                                       kw, validH, validW,
                                                       args[1]));
               })
        .getResult(0);
  }
};

struct AvgPoolGradOpLowering
    : public LowerOpPattern<est::AvgPoolGradOp, AvgPoolGradOpLowering> {
  using LowerOpPattern::LowerOpPattern;
  static constexpr const char *kUnsupported =
      "needs static spatial and channel dimensions";

  /// The gradient, or failure (before building anything) when the window or
  /// the channels are not static.
  static FailureOr<Value> lower(OpBuilder &b, est::AvgPoolGradOp op) {
    Location loc = op.getLoc();
    Value dy = op.getGradOutput();
    RankedTensorType outType = resultTypeOf(op);
    int64_t ones[] = {1, 1};
    FailureOr<WindowGeometry> g =
        WindowGeometry::get(op.getInputSize(), op.getKsize(), op.getStrides(),
                            ones, op.getPadding());
    if (failed(g) || outType.isDynamicDim(3))
      return failure();
    MLIRContext *ctx = b.getContext();
    Type elt = outType.getElementType();
    Value window =
        tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{g->kh, g->kw}, elt);
    Value init = filledTensor(
        b, loc, outType, {dimValue(b, loc, dy, 0), Value(), Value(), Value()},
        scalarConst(b, loc, elt, 0));
    SmallVector<AffineMap> maps = {dimsMap(ctx, 6, {3, 4}),
                                   dimsMap(ctx, 6, {0, 1, 2, 5})};
    // Loops (n, ih, iw, kh, kw, c); each window's gradient is divided by the
    // count of its valid (unpadded) elements.
    return linalg::GenericOp::create(
               b, loc, TypeRange{outType}, ValueRange{window}, ValueRange{init},
               maps, windowIterators(),
               [&](OpBuilder &nb, Location nloc, ValueRange args) {
                 IndexMath m{nb, nloc};
                 auto [oh, validH] =
                     m.outputOf(m.idx(1), m.idx(3), g->pt, 1, g->sh, g->oh);
                 auto [ow, validW] =
                     m.outputOf(m.idx(2), m.idx(4), g->pl, 1, g->sw, g->ow);
                 auto extent = [&](Value o, int64_t stride, int64_t pad,
                                   int64_t k, int64_t size) {
                   Value start = m.sub(m.mul(o, stride), m.c(pad));
                   Value end = arith::MinSIOp::create(
                       nb, nloc, m.add(start, m.c(k)), m.c(size));
                   return m.sub(
                       end, arith::MaxSIOp::create(nb, nloc, start, m.c(0)));
                 };
                 Value count = arith::MulIOp::create(
                     nb, nloc, extent(oh, g->sh, g->pt, g->kh, g->h),
                     extent(ow, g->sw, g->pl, g->kw, g->w));
                 Value countF = arith::SIToFPOp::create(
                     nb, nloc, elt,
                     arith::IndexCastOp::create(nb, nloc, nb.getI64Type(),
                                                count));
                 Value v = tensor::ExtractOp::create(
                     nb, nloc, dy, ValueRange{m.idx(0), oh, ow, m.idx(5)});
                 Value share = arith::DivFOp::create(nb, nloc, v, countF);
                 linalg::YieldOp::create(nb, nloc,
                                         accumulateIf(nb, nloc,
                                                      m.both(validH, validW),
                                                      share, args[1]));
               })
        .getResult(0);
  }
};

} // namespace

void mlir::est::populateEstToLinalgWindowPatterns(RewritePatternSet &patterns) {
  patterns
      .add<PoolOpLowering<MaxPoolOp, true>, PoolOpLowering<AvgPoolOp, false>,
           Conv2DBackpropInputOpLowering, Conv2DBackpropFilterOpLowering,
           DepthwiseConv2DOpLowering, DepthwiseConv2DBackpropInputOpLowering,
           DepthwiseConv2DBackpropFilterOpLowering, MaxPoolGradOpLowering,
           AvgPoolGradOpLowering>(patterns.getContext());
}
