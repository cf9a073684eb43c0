//===- Images.cpp - est resize_images and its gradient to linalg ---------===//
//
// The sampling positions depend only on the static sizes, so they are
// computed here, in f32 exactly as TF's resize kernels compute them
// (image_resizer_state.h: CalculateResizeScale, HalfPixelScaler,
// LegacyScaler; compute_interpolation_weights), and become constant tables
// of one entry per output row and per output column:
//
//   resize_images       linalg.generic over the output reading the tables
//                       (rows by the output row, columns by the output
//                       column) and 4 (bilinear) or 1 (nearest) input
//                       pixels through tensor.extract
//   resize_images_grad  zeros of the input's shape, then an scf.for nest over
//                       grad_output (n, y, x, c) adding each element, times
//                       its weights, into the pixels it was read from (in
//                       place after bufferization; TF's loop order)
//
//===----------------------------------------------------------------------===//

#include "compiler/Conversion/EstToLinalg/Patterns.h"
#include "compiler/Conversion/EstToLinalg/Utils.h"
#include "dialects/Est/IR/EstOps.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
using namespace mlir::est::lowering;

namespace {

/// The sampling of one spatial dimension: per output position, the lower
/// and upper input positions and the weight of the upper one (bilinear), or
/// the one input position (nearest, in `lower`).
struct Sampling {
  SmallVector<int32_t> lower, upper;
  SmallVector<float> lerp;
};

Sampling sampling(int64_t in, int64_t out, bool nearest, bool alignCorners,
                  bool halfPixel) {
  float scale = (alignCorners && out > 1)
                    ? static_cast<float>(in - 1) / static_cast<float>(out - 1)
                    : static_cast<float>(in) / static_cast<float>(out);
  Sampling s;
  for (int64_t o = 0; o < out; ++o) {
    if (nearest) {
      float at = halfPixel ? (static_cast<float>(o) + 0.5f) * scale
                           : static_cast<float>(o) * scale;
      int64_t i =
          static_cast<int64_t>(alignCorners ? std::round(at) : std::floor(at));
      i = std::min(i, in - 1);
      if (halfPixel)
        i = std::max<int64_t>(i, 0);
      s.lower.push_back(static_cast<int32_t>(i));
      s.upper.push_back(static_cast<int32_t>(i));
      s.lerp.push_back(0.0f);
      continue;
    }
    float at = halfPixel ? (static_cast<float>(o) + 0.5f) * scale - 0.5f
                         : static_cast<float>(o) * scale;
    float floorAt = std::floor(at);
    s.lower.push_back(static_cast<int32_t>(
        std::max<int64_t>(static_cast<int64_t>(floorAt), 0)));
    s.upper.push_back(static_cast<int32_t>(
        std::min<int64_t>(static_cast<int64_t>(std::ceil(at)), in - 1)));
    s.lerp.push_back(at - floorAt);
  }
  return s;
}

/// The tables of one dimension as constants: lower, upper (i32), lerp
/// (`elt`).
struct Tables {
  Value lower, upper, lerp;
};

Tables tables(OpBuilder &b, Location loc, const Sampling &s, Type elt) {
  int64_t n = static_cast<int64_t>(s.lower.size());
  auto iType = RankedTensorType::get({n}, b.getI32Type());
  auto fType = RankedTensorType::get({n}, elt);
  SmallVector<Attribute> lerps;
  for (float l : s.lerp)
    lerps.push_back(b.getFloatAttr(elt, static_cast<double>(l)));
  return {
      arith::ConstantOp::create(
          b, loc, DenseElementsAttr::get(iType, ArrayRef(s.lower))),
      arith::ConstantOp::create(
          b, loc, DenseElementsAttr::get(iType, ArrayRef(s.upper))),
      arith::ConstantOp::create(b, loc, DenseElementsAttr::get(fType, lerps))};
}

Value toIndex(OpBuilder &b, Location loc, Value v) {
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
}

/// a + (b - a) * t.
Value lerp(OpBuilder &b, Location loc, Value lo, Value hi, Value t) {
  return arith::AddFOp::create(
      b, loc, lo,
      arith::MulFOp::create(b, loc, arith::SubFOp::create(b, loc, hi, lo), t));
}

struct ResizeImagesOpLowering
    : public LowerOpPattern<est::ResizeImagesOp, ResizeImagesOpLowering> {
  using LowerOpPattern::LowerOpPattern;

  static Value lower(OpBuilder &b, est::ResizeImagesOp op) {
    Location loc = op.getLoc();
    Value images = op.getImages();
    RankedTensorType inType = tensorTypeOf(images), outType = resultTypeOf(op);
    Type elt = outType.getElementType();
    bool nearest = op.getMethod() == "nearest";
    bool align = op.getAlignCorners(), half = op.getHalfPixelCenters();
    Sampling ys = sampling(inType.getDimSize(1), outType.getDimSize(1), nearest,
                           align, half);
    Sampling xs = sampling(inType.getDimSize(2), outType.getDimSize(2), nearest,
                           align, half);
    Type lerpType = isFloat(elt) ? elt : b.getF32Type();
    Tables yt = tables(b, loc, ys, lerpType), xt = tables(b, loc, xs, lerpType);
    SmallVector<Value> dims = {
        dimValue(b, loc, images, 0), indexConst(b, loc, outType.getDimSize(1)),
        indexConst(b, loc, outType.getDimSize(2)), dimValue(b, loc, images, 3)};
    Value init = emptyTensor(b, loc, outType, dims);
    MLIRContext *ctx = b.getContext();
    AffineMap byRow = AffineMap::get(4, 0, {getAffineDimExpr(1, ctx)}, ctx);
    AffineMap byCol = AffineMap::get(4, 0, {getAffineDimExpr(2, ctx)}, ctx);
    SmallVector<Value> inputs = {yt.lower, xt.lower};
    SmallVector<AffineMap> maps = {byRow, byCol};
    if (!nearest) {
      inputs.append({yt.upper, yt.lerp, xt.upper, xt.lerp});
      maps.append({byRow, byRow, byCol, byCol});
    }
    maps.push_back(b.getMultiDimIdentityMap(4));
    return linalg::GenericOp::create(
               b, loc, TypeRange{outType}, inputs, ValueRange{init}, maps,
               parallel(4),
               [&](OpBuilder &nb, Location nl, ValueRange args) {
                 Value n = linalg::IndexOp::create(nb, nl, 0);
                 Value c = linalg::IndexOp::create(nb, nl, 3);
                 auto pixel = [&](Value y, Value x) -> Value {
                   return tensor::ExtractOp::create(
                       nb, nl, images,
                       ValueRange{n, toIndex(nb, nl, y), toIndex(nb, nl, x),
                                  c});
                 };
                 Value v;
                 if (nearest) {
                   v = pixel(args[0], args[1]);
                 } else {
                   Value yLo = args[0], xLo = args[1], yHi = args[2],
                         yLerp = args[3], xHi = args[4], xLerp = args[5];
                   Value top =
                       lerp(nb, nl, pixel(yLo, xLo), pixel(yLo, xHi), xLerp);
                   Value bottom =
                       lerp(nb, nl, pixel(yHi, xLo), pixel(yHi, xHi), xLerp);
                   v = lerp(nb, nl, top, bottom, yLerp);
                 }
                 linalg::YieldOp::create(nb, nl, v);
               })
        .getResult(0);
  }
};

struct ResizeImagesGradOpLowering
    : public LowerOpPattern<est::ResizeImagesGradOp,
                            ResizeImagesGradOpLowering> {
  using LowerOpPattern::LowerOpPattern;

  static Value lower(OpBuilder &b, est::ResizeImagesGradOp op) {
    Location loc = op.getLoc();
    Value g = op.getGradOutput();
    RankedTensorType gType = tensorTypeOf(g), outType = resultTypeOf(op);
    Type elt = outType.getElementType();
    bool nearest = op.getMethod() == "nearest";
    bool align = op.getAlignCorners(), half = op.getHalfPixelCenters();
    Sampling ys = sampling(outType.getDimSize(1), gType.getDimSize(1), nearest,
                           align, half);
    Sampling xs = sampling(outType.getDimSize(2), gType.getDimSize(2), nearest,
                           align, half);
    Tables yt = tables(b, loc, ys, elt), xt = tables(b, loc, xs, elt);
    Value n = dimValue(b, loc, g, 0), c = dimValue(b, loc, g, 3);
    SmallVector<Value> dims = {n, indexConst(b, loc, outType.getDimSize(1)),
                               indexConst(b, loc, outType.getDimSize(2)), c};
    Value init =
        filledTensor(b, loc, outType, dims, scalarConst(b, loc, elt, 0));
    Value zero = indexConst(b, loc, 0), one = indexConst(b, loc, 1);
    SmallVector<Value> lbs(4, zero), steps(4, one);
    SmallVector<Value> ubs = {n, indexConst(b, loc, gType.getDimSize(1)),
                              indexConst(b, loc, gType.getDimSize(2)), c};
    Value oneF = scalarConst(b, loc, elt, 1.0);
    scf::LoopNest nest = scf::buildLoopNest(
        b, loc, lbs, ubs, steps, ValueRange{init},
        [&](OpBuilder &nb, Location nl, ValueRange ivs,
            ValueRange args) -> scf::ValueVector {
          Value y = ivs[1], x = ivs[2];
          auto at = [&](Value table, Value i) -> Value {
            return tensor::ExtractOp::create(nb, nl, table, ValueRange{i});
          };
          Value v = tensor::ExtractOp::create(nb, nl, g, ivs);
          Value acc = args[0];
          auto add = [&](Value yi, Value xi, Value w) {
            SmallVector<Value> dst = {ivs[0], toIndex(nb, nl, yi),
                                      toIndex(nb, nl, xi), ivs[3]};
            Value old = tensor::ExtractOp::create(nb, nl, acc, dst);
            Value sum = arith::AddFOp::create(nb, nl, old, w);
            acc = tensor::InsertOp::create(nb, nl, sum, acc, dst);
          };
          Value yLo = at(yt.lower, y), xLo = at(xt.lower, x);
          if (nearest) {
            add(yLo, xLo, v);
            return {acc};
          }
          Value yHi = at(yt.upper, y), xHi = at(xt.upper, x);
          Value yLerp = at(yt.lerp, y), xLerp = at(xt.lerp, x);
          Value yInv = arith::SubFOp::create(nb, nl, oneF, yLerp);
          Value xInv = arith::SubFOp::create(nb, nl, oneF, xLerp);
          auto mul = [&](Value a, Value w) -> Value {
            return arith::MulFOp::create(nb, nl, a, w);
          };
          add(yLo, xLo, mul(mul(v, yInv), xInv));
          add(yLo, xHi, mul(mul(v, yInv), xLerp));
          add(yHi, xLo, mul(mul(v, yLerp), xInv));
          add(yHi, xHi, mul(mul(v, yLerp), xLerp));
          return {acc};
        });
    return nest.results.front();
  }
};

} // namespace

void mlir::est::populateEstToLinalgImagePatterns(RewritePatternSet &patterns) {
  patterns.add<ResizeImagesOpLowering, ResizeImagesGradOpLowering>(
      patterns.getContext());
}
