//===- EstGradients.cpp - Reverse-mode gradient rules of the est ops -----===//
//
// One rule per differentiable op, each a function `gradient(OpT, ...)`
// building est ops only (so the existing lowering compiles the backward
// pass). The rules are attached to the ops as GradientOpInterface external
// models. Conventions:
// - Gradients of broadcasting operands are summed back to the operand shape
//   (`reduceTo`).
// - maximum/minimum send the gradient of a tie to `lhs` (TF's `x >= y`).
// - reduce_max/reduce_min split the gradient of a tie evenly (TF).
// - abs'(0) = 0, relu'(0) = 0, relu6'(0) = relu6'(6) = 0 (TF); floor, ceil,
//   round and sign have none.
// - cumsum's gradient is the cumsum of g in the other direction; cumprod's
//   is TF's, divided by x (wrong where x has zeros, as TF's).
// - Integer/boolean operands, `select`'s condition, `stop_gradient`, counters
//   and indices get no gradient (a null entry).
// - dropout's gradient is the same dropout (seed, counter, rate) of the
//   incoming gradient: the mask is a pure function of the element index.
// - conv2d, max_pool and avg_pool gradients are the dedicated ops
//   conv2d_backprop_input / conv2d_backprop_filter, max_pool_grad and
//   avg_pool_grad (any batch, static H and W); conv2d_backprop_input's
//   (conv2d_transpose's) are conv2d and conv2d_backprop_filter. max_pool's
//   gradient goes to the first maximum of each window (TF); avg_pool divides
//   by the count of valid elements (TF's SAME). depthwise_conv2d's are
//   depthwise_conv2d_backprop_input / _filter (TF's
//   DepthwiseConv2dNativeBackprop*), each linear in both operands: their
//   gradients are the other two of the three ops.
// - reduce_prod's rule is exact with zeros; gather (any axis) is dense here:
//   a scatter-add of g into zeros (O(indices x slice), not a one-hot
//   matmul over every row).
// - unsorted_segment_sum's data gets gather(g, segment_ids).
// - take_along_axis (top_k's and sort's values) and scatter_along_axis are
//   each other's transposes; so are resize_images and resize_images_grad.
// - layer_norm's gradients are the fused layer_norm_grad (dx, dgamma,
//   dbeta); attention_softmax's the fused attention_softmax_grad (an
//   additive mask's too, with scale 1, summed over its broadcast dims).
// - fused_batch_norm's y gets the fused fused_batch_norm_grad (dx, dscale,
//   doffset); its batch statistics get no gradient (the autodiff pass
//   refuses a loss that reads them), as TF's FusedBatchNorm.
// - Ops with an integer result (argmax, bucketize, casts to integers) need
//   no rule: the autodiff pass never makes an integer value active.
// Not covered (the autodiff pass leaves the minimize with a warning naming
// the op): one_hot, random ops (no differentiable operands anyway).
//
//===----------------------------------------------------------------------===//

#include "dialects/Est/IR/EstBuilder.h"
#include "dialects/Est/IR/EstInterfaces.h"
#include "dialects/Est/IR/EstOps.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;
using namespace mlir::est;

#include "dialects/Est/IR/EstInterfaces.cpp.inc"

namespace {

RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}
bool isFloatTensor(Value v) {
  return isa<FloatType>(tensorType(v).getElementType());
}

/// The est ops the rules are written in: EstBuilder's and a few of their
/// own.
struct G : EstBuilder {
  using EstBuilder::EstBuilder;

  /// `g` where `cond`, 0 elsewhere (of the broadcast shape).
  Value where(Value cond, Value g) { return select(cond, g, scalar(g, 0.0)); }
  /// `g` broadcast to `like`'s shape (dynamic dims included).
  Value broadcastLike(Value g, Value like) {
    if (tensorType(g) == tensorType(like))
      return g;
    return mul(g, onesLike(like));
  }

  /// Sums `g` (of a broadcast shape) back to `type`: over the leading extra
  /// dims and over the dims where `type` has 1 and `g` does not.
  Value reduceTo(Value g, RankedTensorType type) {
    RankedTensorType gType = tensorType(g);
    if (gType.getShape() == type.getShape())
      return g;
    int64_t extra = gType.getRank() - type.getRank();
    SmallVector<int64_t> ones;
    for (int64_t i = 0; i < type.getRank(); ++i)
      if (type.getDimSize(i) == 1 && gType.getDimSize(extra + i) != 1)
        ones.push_back(extra + i);
    if (!ones.empty())
      g = reduceSum(g, ones, /*keepDims=*/true);
    if (extra > 0)
      g = reduceSum(g, llvm::to_vector(llvm::seq<int64_t>(0, extra)),
                    /*keepDims=*/false);
    return g;
  }
  Value reduceTo(Value g, Value like) { return reduceTo(g, tensorType(like)); }

  /// `g` reshaped to `type` (at most one dynamic dim, which becomes -1).
  FailureOr<Value> reshapeTo(Value g, RankedTensorType type) {
    if (tensorType(g).getShape() == type.getShape())
      return g;
    SmallVector<int64_t> shape(type.getShape());
    int dynamic = 0;
    for (int64_t &d : shape)
      if (ShapedType::isDynamic(d)) {
        d = -1;
        ++dynamic;
      }
    if (dynamic > 1)
      return failure();
    return reshape(g, shape);
  }

  /// The result of a reduction over `axes` (keep_dims or not) of `x` with
  /// the reduced dims put back as size 1.
  Value keepDims(Value reduced, std::optional<ArrayRef<int64_t>> axes,
                 bool keep, Value x) {
    if (keep)
      return reduced;
    int64_t rank = tensorType(x).getRank();
    SmallVector<int64_t> sorted = normalizedAxes(axes, rank);
    for (int64_t axis : sorted)
      reduced = ExpandDimsOp::create(b, loc, reduced, axis);
    return reduced;
  }

  static SmallVector<int64_t>
  normalizedAxes(std::optional<ArrayRef<int64_t>> axes, int64_t rank) {
    SmallVector<int64_t> out;
    if (!axes) {
      out = llvm::to_vector(llvm::seq<int64_t>(0, rank));
    } else {
      for (int64_t a : *axes)
        out.push_back(a < 0 ? a + rank : a);
    }
    llvm::sort(out);
    out.erase(llvm::unique(out), out.end());
    return out;
  }
};

using Grads = SmallVectorImpl<Value>;

G helper(OpBuilder &b, Operation *op) { return G{b, op->getLoc()}; }

std::optional<ArrayRef<int64_t>> optionalAxes(DenseI64ArrayAttr attr) {
  if (!attr)
    return std::nullopt;
  return attr.asArrayRef();
}

//===----------------------------------------------------------------------===//
// Elementwise binary.
//===----------------------------------------------------------------------===//

LogicalResult gradient(AddOp op, OpBuilder &b, Value g, Grads &out) {
  G h = helper(b, op);
  out.assign(std::initializer_list<Value>{h.reduceTo(g, op.getLhs()),
                                          h.reduceTo(g, op.getRhs())});
  return success();
}

LogicalResult gradient(SubOp op, OpBuilder &b, Value g, Grads &out) {
  G h = helper(b, op);
  out.assign(std::initializer_list<Value>{h.reduceTo(g, op.getLhs()),
                                          h.reduceTo(h.neg(g), op.getRhs())});
  return success();
}

LogicalResult gradient(MulOp op, OpBuilder &b, Value g, Grads &out) {
  G h = helper(b, op);
  out.assign(std::initializer_list<Value>{
      h.reduceTo(h.mul(g, op.getRhs()), op.getLhs()),
      h.reduceTo(h.mul(g, op.getLhs()), op.getRhs())});
  return success();
}

LogicalResult gradient(DivOp op, OpBuilder &b, Value g, Grads &out) {
  G h = helper(b, op);
  Value x = op.getLhs(), y = op.getRhs(), z = op.getResult();
  // d/dx = g / y; d/dy = -g * z / y.
  out.assign(std::initializer_list<Value>{
      h.reduceTo(h.div(g, y), x), h.reduceTo(h.neg(h.div(h.mul(g, z), y)), y)});
  return success();
}

LogicalResult gradient(PowOp op, OpBuilder &b, Value g, Grads &out) {
  G h = helper(b, op);
  Value x = op.getLhs(), y = op.getRhs(), z = op.getResult();
  // d/dx = g * y * x^(y-1); d/dy = g * z * log(x) where x > 0, else 0 (TF).
  Value ym1 = h.sub(y, h.scalar(y, 1.0));
  Value dx = h.mul(g, h.mul(y, h.pow(x, ym1)));
  Value positive = h.greater(x, h.scalar(x, 0.0));
  Value safeX = h.select(positive, x, h.onesLike(x));
  Value logX = h.where(positive, LogOp::create(b, op.getLoc(), safeX));
  Value dy = h.mul(g, h.mul(z, logX));
  out.assign(
      std::initializer_list<Value>{h.reduceTo(dx, x), h.reduceTo(dy, y)});
  return success();
}

/// maximum: lhs gets g where lhs >= rhs (ties), rhs elsewhere; minimum:
/// lhs where lhs <= rhs.
template <typename OpT, typename CmpOp>
LogicalResult minMaxGradient(OpT op, OpBuilder &b, Value g, Grads &out) {
  G h = helper(b, op);
  Value x = op.getLhs(), y = op.getRhs();
  Value toLhs = CmpOp::create(b, op.getLoc(), x, y);
  Value zero = h.scalar(g, 0.0);
  out.assign(
      std::initializer_list<Value>{h.reduceTo(h.select(toLhs, g, zero), x),
                                   h.reduceTo(h.select(toLhs, zero, g), y)});
  return success();
}
LogicalResult gradient(MaximumOp op, OpBuilder &b, Value g, Grads &out) {
  return minMaxGradient<MaximumOp, GreaterEqualOp>(op, b, g, out);
}
LogicalResult gradient(MinimumOp op, OpBuilder &b, Value g, Grads &out) {
  return minMaxGradient<MinimumOp, LessEqualOp>(op, b, g, out);
}

//===----------------------------------------------------------------------===//
// Elementwise unary.
//===----------------------------------------------------------------------===//

LogicalResult gradient(NegOp op, OpBuilder &b, Value g, Grads &out) {
  out.assign(std::initializer_list<Value>{helper(b, op).neg(g)});
  return success();
}

LogicalResult gradient(AbsOp op, OpBuilder &b, Value g, Grads &out) {
  G h = helper(b, op);
  Value x = op.getX();
  Value zero = h.scalar(x, 0.0);
  Value sign = h.select(h.greater(x, zero), h.scalar(x, 1.0),
                        h.select(h.less(x, zero), h.scalar(x, -1.0), zero));
  out.assign(std::initializer_list<Value>{h.mul(g, sign)});
  return success();
}

LogicalResult gradient(SquareOp op, OpBuilder &b, Value g, Grads &out) {
  G h = helper(b, op);
  out.assign(std::initializer_list<Value>{
      h.mul(g, h.mul(op.getX(), h.scalar(g, 2.0)))});
  return success();
}

LogicalResult gradient(ExpOp op, OpBuilder &b, Value g, Grads &out) {
  out.assign(
      std::initializer_list<Value>{helper(b, op).mul(g, op.getResult())});
  return success();
}

LogicalResult gradient(LogOp op, OpBuilder &b, Value g, Grads &out) {
  out.assign(std::initializer_list<Value>{helper(b, op).div(g, op.getX())});
  return success();
}

LogicalResult gradient(SqrtOp op, OpBuilder &b, Value g, Grads &out) {
  G h = helper(b, op);
  // g * 0.5 / sqrt(x)
  out.assign(std::initializer_list<Value>{
      h.div(h.mul(g, h.scalar(g, 0.5)), op.getResult())});
  return success();
}

LogicalResult gradient(RsqrtOp op, OpBuilder &b, Value g, Grads &out) {
  G h = helper(b, op);
  // d x^-1/2 = -0.5 x^-3/2 = -0.5 z^3
  Value z = op.getResult();
  out.assign(std::initializer_list<Value>{
      h.mul(g, h.mul(h.scalar(g, -0.5), h.mul(z, h.mul(z, z))))});
  return success();
}

LogicalResult gradient(TanhOp op, OpBuilder &b, Value g, Grads &out) {
  G h = helper(b, op);
  Value z = op.getResult();
  out.assign(std::initializer_list<Value>{
      h.mul(g, h.sub(h.scalar(z, 1.0), h.mul(z, z)))});
  return success();
}

LogicalResult gradient(SinOp op, OpBuilder &b, Value g, Grads &out) {
  G h = helper(b, op);
  out.assign(std::initializer_list<Value>{
      h.mul(g, CosOp::create(b, op.getLoc(), op.getX()))});
  return success();
}

LogicalResult gradient(CosOp op, OpBuilder &b, Value g, Grads &out) {
  G h = helper(b, op);
  out.assign(std::initializer_list<Value>{
      h.mul(g, h.neg(SinOp::create(b, op.getLoc(), op.getX())))});
  return success();
}

/// Piecewise constant: no gradient (TF's Floor has none).
LogicalResult gradient(FloorOp, OpBuilder &, Value, Grads &out) {
  out.assign(std::initializer_list<Value>{Value()});
  return success();
}

/// ceil, round and sign are piecewise constant: no gradient (TF's Ceil and
/// Round have none, Sign's is zeros).
LogicalResult gradient(CeilOp, OpBuilder &, Value, Grads &out) {
  out.assign(std::initializer_list<Value>{Value()});
  return success();
}
LogicalResult gradient(RoundOp, OpBuilder &, Value, Grads &out) {
  out.assign(std::initializer_list<Value>{Value()});
  return success();
}
LogicalResult gradient(SignOp, OpBuilder &, Value, Grads &out) {
  out.assign(std::initializer_list<Value>{Value()});
  return success();
}

/// erf'(x) = 2 / sqrt(pi) * exp(-x^2).
LogicalResult gradient(ErfOp op, OpBuilder &b, Value g, Grads &out) {
  G h = helper(b, op);
  Value x = op.getX();
  Value e = ExpOp::create(b, op.getLoc(), h.neg(h.square(x)));
  out.assign(std::initializer_list<Value>{
      h.mul(g, h.mul(h.scalar(x, 1.1283791670955126), e))});
  return success();
}

LogicalResult gradient(Log1pOp op, OpBuilder &b, Value g, Grads &out) {
  G h = helper(b, op);
  Value x = op.getX();
  out.assign(
      std::initializer_list<Value>{h.div(g, h.add(h.scalar(x, 1.0), x))});
  return success();
}

/// expm1'(x) = exp(x) = expm1(x) + 1.
LogicalResult gradient(Expm1Op op, OpBuilder &b, Value g, Grads &out) {
  G h = helper(b, op);
  Value y = op.getResult();
  out.assign(
      std::initializer_list<Value>{h.mul(g, h.add(y, h.scalar(y, 1.0)))});
  return success();
}

LogicalResult gradient(SigmoidOp op, OpBuilder &b, Value g, Grads &out) {
  G h = helper(b, op);
  Value z = op.getResult();
  out.assign(std::initializer_list<Value>{
      h.mul(g, h.mul(z, h.sub(h.scalar(z, 1.0), z)))});
  return success();
}

LogicalResult gradient(ReluOp op, OpBuilder &b, Value g, Grads &out) {
  G h = helper(b, op);
  out.assign(std::initializer_list<Value>{
      h.where(h.greater(op.getX(), h.scalar(g, 0.0)), g)});
  return success();
}

LogicalResult gradient(Relu6Op op, OpBuilder &b, Value g, Grads &out) {
  G h = helper(b, op);
  Value x = op.getX();
  Value inside =
      LogicalAndOp::create(b, op.getLoc(), h.greater(x, h.scalar(x, 0.0)),
                           h.less(x, h.scalar(x, 6.0)));
  out.assign(std::initializer_list<Value>{h.where(inside, g)});
  return success();
}

LogicalResult gradient(EluOp op, OpBuilder &b, Value g, Grads &out) {
  G h = helper(b, op);
  // x > 0: g; else g * (elu(x) + 1) = g * exp(x).
  Value x = op.getX();
  Value negative = h.mul(g, h.add(op.getResult(), h.scalar(x, 1.0)));
  out.assign(std::initializer_list<Value>{
      h.select(h.greater(x, h.scalar(x, 0.0)), g, negative)});
  return success();
}

LogicalResult gradient(SoftplusOp op, OpBuilder &b, Value g, Grads &out) {
  G h = helper(b, op);
  out.assign(std::initializer_list<Value>{
      h.mul(g, SigmoidOp::create(b, op.getLoc(), op.getX()))});
  return success();
}

LogicalResult gradient(SelectOp op, OpBuilder &b, Value g, Grads &out) {
  G h = helper(b, op);
  Value zero = h.scalar(g, 0.0);
  Value c = op.getCond();
  out.assign(std::initializer_list<Value>{
      Value(), h.reduceTo(h.select(c, g, zero), op.getOnTrue()),
      h.reduceTo(h.select(c, zero, g), op.getOnFalse())});
  return success();
}

LogicalResult gradient(CastOp op, OpBuilder &b, Value g, Grads &out) {
  if (!isFloatTensor(op.getX())) {
    out.assign(std::initializer_list<Value>{Value()});
    return success();
  }
  Type elt = tensorType(op.getX()).getElementType();
  out.assign(std::initializer_list<Value>{
      CastOp::create(b, op.getLoc(), g, TypeAttr::get(elt))});
  return success();
}

LogicalResult gradient(StopGradientOp, OpBuilder &, Value, Grads &out) {
  out.assign(std::initializer_list<Value>{Value()});
  return success();
}

/// Constant in x's values: no gradient.
LogicalResult gradient(ZerosLikeOp, OpBuilder &, Value, Grads &out) {
  out.assign(std::initializer_list<Value>{Value()});
  return success();
}
LogicalResult gradient(OnesLikeOp, OpBuilder &, Value, Grads &out) {
  out.assign(std::initializer_list<Value>{Value()});
  return success();
}

//===----------------------------------------------------------------------===//
// Linear algebra.
//===----------------------------------------------------------------------===//

LogicalResult gradient(MatmulOp op, OpBuilder &b, Value g, Grads &out) {
  G h = helper(b, op);
  Location loc = op.getLoc();
  Value a = op.getA(), m = op.getB();
  bool ta = op.getTransposeA(), tb = op.getTransposeB();
  auto mm = [&](Value x, Value y, bool tx, bool ty) -> Value {
    return MatmulOp::create(b, loc, x, y, tx, ty);
  };
  Value da, db;
  // A 2-D weight applied to every row of a batched a [..., M, K] (a
  // recurrent layer's input projection over [T, batch, features]): its
  // gradient is one GEMM over the rows collapsed, [rows, K]^T x [rows, N],
  // not a batched product [..., K, N] summed over the batch afterwards
  // (T small GEMMs and a [T, K, N] temporary).
  auto aType = tensorType(a), mType = tensorType(m);
  if (!ta && aType.getRank() > 2 && mType.getRank() == 2 &&
      !aType.isDynamicDim(aType.getRank() - 1) &&
      !tensorType(g).isDynamicDim(aType.getRank() - 1)) {
    int64_t k = aType.getDimSize(aType.getRank() - 1);
    int64_t n = tensorType(g).getDimSize(aType.getRank() - 1);
    Value rows = ReshapeOp::create(b, loc, a, b.getDenseI64ArrayAttr({-1, k}));
    Value gRows = ReshapeOp::create(b, loc, g, b.getDenseI64ArrayAttr({-1, n}));
    da = tb ? mm(g, m, false, false) : mm(g, m, false, true);
    db = tb ? mm(gRows, rows, true, false) : mm(rows, gRows, true, false);
    out.assign(std::initializer_list<Value>{h.reduceTo(da, a), db});
    return success();
  }
  if (!ta && !tb) {
    da = mm(g, m, false, true);
    db = mm(a, g, true, false);
  } else if (!ta && tb) {
    da = mm(g, m, false, false);
    db = mm(g, a, true, false);
  } else if (ta && !tb) {
    da = mm(m, g, false, true);
    db = mm(a, g, false, false);
  } else {
    da = mm(m, g, true, true);
    db = mm(g, a, true, true);
  }
  out.assign(
      std::initializer_list<Value>{h.reduceTo(da, a), h.reduceTo(db, m)});
  return success();
}

//===----------------------------------------------------------------------===//
// Convolution and pooling: the dedicated gradient ops.
//===----------------------------------------------------------------------===//

/// The static [H, W] of an NHWC operand (the batch may be dynamic).
FailureOr<SmallVector<int64_t>> spatialSize(Operation *op, Value x) {
  RankedTensorType type = tensorType(x);
  if (type.getRank() != 4 || type.isDynamicDim(1) || type.isDynamicDim(2))
    return op->emitError("gradient needs static H and W");
  return SmallVector<int64_t>{type.getDimSize(1), type.getDimSize(2)};
}

LogicalResult gradient(Conv2DOp op, OpBuilder &b, Value g, Grads &out) {
  FailureOr<SmallVector<int64_t>> inputSize = spatialSize(op, op.getInput());
  if (failed(inputSize))
    return failure();
  auto filter = tensorType(op.getFilter());
  Value dx = Conv2DBackpropInputOp::create(
      b, op.getLoc(), g, op.getFilter(), b.getDenseI64ArrayAttr(*inputSize),
      op.getStridesAttr(), op.getDilationsAttr(), op.getPaddingAttr());
  Value dw = Conv2DBackpropFilterOp::create(
      b, op.getLoc(), op.getInput(), g,
      b.getDenseI64ArrayAttr({filter.getDimSize(0), filter.getDimSize(1)}),
      op.getStridesAttr(), op.getDilationsAttr(), op.getPaddingAttr());
  out.assign(std::initializer_list<Value>{dx, dw});
  return success();
}

LogicalResult gradient(DepthwiseConv2DOp op, OpBuilder &b, Value g,
                       Grads &out) {
  FailureOr<SmallVector<int64_t>> inputSize = spatialSize(op, op.getInput());
  if (failed(inputSize))
    return failure();
  auto filter = tensorType(op.getFilter());
  Value dx = DepthwiseConv2DBackpropInputOp::create(
      b, op.getLoc(), g, op.getFilter(), b.getDenseI64ArrayAttr(*inputSize),
      op.getStridesAttr(), op.getDilationsAttr(), op.getPaddingAttr());
  Value dw = DepthwiseConv2DBackpropFilterOp::create(
      b, op.getLoc(), op.getInput(), g,
      b.getDenseI64ArrayAttr({filter.getDimSize(0), filter.getDimSize(1)}),
      op.getStridesAttr(), op.getDilationsAttr(), op.getPaddingAttr());
  out.assign(std::initializer_list<Value>{dx, dw});
  return success();
}

/// depthwise_conv2d_backprop_input is linear in each operand: grad_output
/// gets depthwise_conv2d(g, filter), the filter
/// depthwise_conv2d_backprop_filter(g, grad_output).
LogicalResult gradient(DepthwiseConv2DBackpropInputOp op, OpBuilder &b, Value g,
                       Grads &out) {
  auto filter = tensorType(op.getFilter());
  Value dy = DepthwiseConv2DOp::create(
      b, op.getLoc(), g, op.getFilter(), op.getStridesAttr(),
      op.getDilationsAttr(), op.getPaddingAttr());
  Value dw = DepthwiseConv2DBackpropFilterOp::create(
      b, op.getLoc(), g, op.getGradOutput(),
      b.getDenseI64ArrayAttr({filter.getDimSize(0), filter.getDimSize(1)}),
      op.getStridesAttr(), op.getDilationsAttr(), op.getPaddingAttr());
  out.assign(std::initializer_list<Value>{dy, dw});
  return success();
}

/// depthwise_conv2d_backprop_filter is linear in each operand: the input
/// gets depthwise_conv2d_backprop_input(grad_output, g), grad_output
/// depthwise_conv2d(input, g).
LogicalResult gradient(DepthwiseConv2DBackpropFilterOp op, OpBuilder &b,
                       Value g, Grads &out) {
  FailureOr<SmallVector<int64_t>> inputSize = spatialSize(op, op.getInput());
  if (failed(inputSize))
    return failure();
  Value dx = DepthwiseConv2DBackpropInputOp::create(
      b, op.getLoc(), op.getGradOutput(), g, b.getDenseI64ArrayAttr(*inputSize),
      op.getStridesAttr(), op.getDilationsAttr(), op.getPaddingAttr());
  Value dy = DepthwiseConv2DOp::create(
      b, op.getLoc(), op.getInput(), g, op.getStridesAttr(),
      op.getDilationsAttr(), op.getPaddingAttr());
  out.assign(std::initializer_list<Value>{dx, dy});
  return success();
}

/// conv2d_backprop_input (conv2d_transpose) is linear in each operand, the
/// adjoint of conv2d's input: grad_output gets conv2d(g, filter), the filter
/// conv2d_backprop_filter(g, grad_output), with the op's own attributes.
LogicalResult gradient(Conv2DBackpropInputOp op, OpBuilder &b, Value g,
                       Grads &out) {
  auto filter = tensorType(op.getFilter());
  Value dy =
      Conv2DOp::create(b, op.getLoc(), g, op.getFilter(), op.getStridesAttr(),
                       op.getDilationsAttr(), op.getPaddingAttr());
  Value dw = Conv2DBackpropFilterOp::create(
      b, op.getLoc(), g, op.getGradOutput(),
      b.getDenseI64ArrayAttr({filter.getDimSize(0), filter.getDimSize(1)}),
      op.getStridesAttr(), op.getDilationsAttr(), op.getPaddingAttr());
  out.assign(std::initializer_list<Value>{dy, dw});
  return success();
}

LogicalResult gradient(MaxPoolOp op, OpBuilder &b, Value g, Grads &out) {
  Value dx =
      MaxPoolGradOp::create(b, op.getLoc(), op.getInput(), g, op.getKsizeAttr(),
                            op.getStridesAttr(), op.getPaddingAttr());
  out.assign(std::initializer_list<Value>{dx});
  return success();
}

LogicalResult gradient(AvgPoolOp op, OpBuilder &b, Value g, Grads &out) {
  FailureOr<SmallVector<int64_t>> inputSize = spatialSize(op, op.getInput());
  if (failed(inputSize))
    return failure();
  Value dx = AvgPoolGradOp::create(
      b, op.getLoc(), g, b.getDenseI64ArrayAttr(*inputSize), op.getKsizeAttr(),
      op.getStridesAttr(), op.getPaddingAttr());
  out.assign(std::initializer_list<Value>{dx});
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions.
//===----------------------------------------------------------------------===//

LogicalResult gradient(ReduceSumOp op, OpBuilder &b, Value g, Grads &out) {
  G h = helper(b, op);
  Value x = op.getX();
  Value kept =
      h.keepDims(g, optionalAxes(op.getAxesAttr()), op.getKeepDims(), x);
  out.assign(std::initializer_list<Value>{h.broadcastLike(kept, x)});
  return success();
}

LogicalResult gradient(ReduceMeanOp op, OpBuilder &b, Value g, Grads &out) {
  G h = helper(b, op);
  Value x = op.getX();
  auto axes = optionalAxes(op.getAxesAttr());
  Value kept = h.keepDims(g, axes, op.getKeepDims(), x);
  // The count of reduced elements, also for dims known at run time only.
  Value count = h.reduceSum(
      h.onesLike(x), G::normalizedAxes(axes, tensorType(x).getRank()), true);
  out.assign(
      std::initializer_list<Value>{h.broadcastLike(h.div(kept, count), x)});
  return success();
}

/// reduce_max / reduce_min: the gradient goes to the elements equal to the
/// result, split evenly among ties (TF).
template <typename OpT>
LogicalResult extremumGradient(OpT op, OpBuilder &b, Value g, Grads &out) {
  G h = helper(b, op);
  Value x = op.getX();
  auto axes = optionalAxes(op.getAxesAttr());
  Value y = h.keepDims(op.getResult(), axes, op.getKeepDims(), x);
  Value kept = h.keepDims(g, axes, op.getKeepDims(), x);
  Value hit = h.equal(x, y);
  Value indicator = h.select(hit, h.onesLike(x), h.zerosLike(x));
  Value ties = h.reduceSum(
      indicator, G::normalizedAxes(axes, tensorType(x).getRank()), true);
  out.assign(std::initializer_list<Value>{h.mul(h.div(indicator, ties), kept)});
  return success();
}
LogicalResult gradient(ReduceMaxOp op, OpBuilder &b, Value g, Grads &out) {
  return extremumGradient(op, b, g, out);
}

/// reduce_prod: d/dx_i = prod_{j != i} x_j, exact with zeros (no division by
/// a zero): with p the product of the non-zero elements and z the count of
/// zeros in the reduced group, x_i != 0 gets p / x_i when z == 0 (else 0),
/// x_i == 0 gets p when z == 1 (else 0).
LogicalResult gradient(ReduceProdOp op, OpBuilder &b, Value g, Grads &out) {
  G h = helper(b, op);
  Location loc = op.getLoc();
  Value x = op.getX();
  auto axes = optionalAxes(op.getAxesAttr());
  SmallVector<int64_t> all = G::normalizedAxes(axes, tensorType(x).getRank());
  Value isZero = h.equal(x, h.scalar(x, 0.0));
  Value nonZero = h.select(isZero, h.onesLike(x), x);
  Value p =
      ReduceProdOp::create(b, loc, nonZero, b.getDenseI64ArrayAttr(all), true);
  Value z =
      h.reduceSum(h.select(isZero, h.onesLike(x), h.zerosLike(x)), all, true);
  Value zero = h.scalar(x, 0.0);
  Value atZero = h.select(h.equal(z, h.scalar(x, 1.0)), p, zero);
  Value atOther = h.select(h.equal(z, zero), h.div(p, nonZero), zero);
  Value local = h.select(isZero, h.broadcastLike(atZero, x), atOther);
  Value kept = h.keepDims(g, axes, op.getKeepDims(), x);
  out.assign(std::initializer_list<Value>{h.mul(local, kept)});
  return success();
}
LogicalResult gradient(ReduceMinOp op, OpBuilder &b, Value g, Grads &out) {
  return extremumGradient(op, b, g, out);
}

//===----------------------------------------------------------------------===//
// Shapes.
//===----------------------------------------------------------------------===//

LogicalResult reshapeBack(Operation *op, OpBuilder &b, Value g, Value x,
                          Grads &out) {
  FailureOr<Value> r = helper(b, op).reshapeTo(g, tensorType(x));
  if (failed(r))
    return op->emitError("gradient needs at most one dynamic dimension");
  out.assign(std::initializer_list<Value>{*r});
  return success();
}

LogicalResult gradient(ReshapeOp op, OpBuilder &b, Value g, Grads &out) {
  return reshapeBack(op, b, g, op.getX(), out);
}
LogicalResult gradient(SqueezeOp op, OpBuilder &b, Value g, Grads &out) {
  return reshapeBack(op, b, g, op.getX(), out);
}
LogicalResult gradient(ExpandDimsOp op, OpBuilder &b, Value g, Grads &out) {
  return reshapeBack(op, b, g, op.getX(), out);
}

LogicalResult gradient(TransposeOp op, OpBuilder &b, Value g, Grads &out) {
  ArrayRef<int64_t> perm = op.getPerm();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p < 0 ? p + perm.size() : p] = i;
  out.assign(std::initializer_list<Value>{
      TransposeOp::create(b, op.getLoc(), g, b.getDenseI64ArrayAttr(inverse))});
  return success();
}

LogicalResult gradient(BroadcastToOp op, OpBuilder &b, Value g, Grads &out) {
  out.assign(
      std::initializer_list<Value>{helper(b, op).reduceTo(g, op.getX())});
  return success();
}

LogicalResult gradient(ConcatOp op, OpBuilder &b, Value g, Grads &out) {
  int64_t rank = tensorType(g).getRank();
  int64_t axis = op.getAxisAttr().getInt();
  if (axis < 0)
    axis += rank;
  int64_t offset = 0;
  out.clear();
  for (Value x : op.getXs()) {
    int64_t size = tensorType(x).getDimSize(axis);
    if (ShapedType::isDynamic(size))
      return op.emitError("gradient needs static sizes along the axis");
    SmallVector<int64_t> begin(rank, 0), sizes(rank, -1);
    begin[axis] = offset;
    sizes[axis] = size;
    out.push_back(SliceOp::create(b, op.getLoc(), g,
                                  b.getDenseI64ArrayAttr(begin),
                                  b.getDenseI64ArrayAttr(sizes)));
    offset += size;
  }
  return success();
}

LogicalResult gradient(SliceOp op, OpBuilder &b, Value g, Grads &out) {
  RankedTensorType xType = tensorType(op.getX());
  RankedTensorType yType = tensorType(op.getResult());
  SmallVector<int64_t> paddings;
  for (int64_t i = 0; i < xType.getRank(); ++i) {
    int64_t begin = op.getBegin()[i], size = op.getSize()[i];
    int64_t dim = xType.getDimSize(i);
    int64_t hi = 0;
    if (size != -1) {
      if (ShapedType::isDynamic(dim) ||
          ShapedType::isDynamic(yType.getDimSize(i)))
        return op.emitError("gradient needs static sliced dimensions");
      hi = dim - begin - size;
    }
    if (begin != 0 && ShapedType::isDynamic(dim) && size != -1)
      return op.emitError("gradient needs static sliced dimensions");
    paddings.push_back(begin);
    paddings.push_back(hi);
  }
  out.assign(std::initializer_list<Value>{
      PadOp::create(b, op.getLoc(), g, b.getDenseI64ArrayAttr(paddings),
                    b.getF64FloatAttr(0.0))});
  return success();
}

LogicalResult gradient(PadOp op, OpBuilder &b, Value g, Grads &out) {
  RankedTensorType xType = tensorType(op.getX());
  ArrayRef<int64_t> paddings = op.getPaddings();
  SmallVector<int64_t> begin, sizes;
  for (int64_t i = 0; i < xType.getRank(); ++i) {
    int64_t lo = paddings[2 * i], hi = paddings[2 * i + 1];
    begin.push_back(lo);
    int64_t dim = xType.getDimSize(i);
    if (ShapedType::isDynamic(dim)) {
      if (hi != 0)
        return op.emitError("gradient needs static padded dimensions");
      sizes.push_back(-1);
    } else {
      sizes.push_back(dim);
    }
  }
  out.assign(std::initializer_list<Value>{
      SliceOp::create(b, op.getLoc(), g, b.getDenseI64ArrayAttr(begin),
                      b.getDenseI64ArrayAttr(sizes))});
  return success();
}

//===----------------------------------------------------------------------===//
// Indexing.
//===----------------------------------------------------------------------===//

/// Dense gradient of a gather: g's slices scatter-added into zeros of
/// params' shape (est.scatter, O(indices x slice), duplicates summed in
/// index order). Along another axis, the axis is moved to the front of
/// params and g's index dims to the front of g, and the result back.
LogicalResult gradient(GatherOp op, OpBuilder &b, Value g, Grads &out) {
  G h = helper(b, op);
  Location loc = op.getLoc();
  RankedTensorType params = tensorType(op.getParams());
  int64_t rank = params.getRank();
  int64_t axis = op.getAxisAttr().getInt();
  if (axis < 0)
    axis += rank;
  if (!params.hasStaticShape() || axis < 0 || axis >= rank)
    return op.emitError("gradient needs statically shaped params");
  int64_t indexRank = tensorType(op.getIndices()).getRank();
  // Axis != 0: the gradient of gather(transpose(params, [axis, rest]), i, 0)
  // with g's index dims moved to the front, transposed back.
  SmallVector<int64_t> toFront = {axis}; // params dims, axis first
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis)
      toFront.push_back(d);
  if (axis != 0) {
    SmallVector<int64_t>
        gPerm; // g: [pre, index dims, post] -> [index, pre, post]
    for (int64_t d = 0; d < indexRank; ++d)
      gPerm.push_back(axis + d);
    for (int64_t d = 0; d < axis; ++d)
      gPerm.push_back(d);
    for (int64_t d = axis + indexRank; d < rank - 1 + indexRank; ++d)
      gPerm.push_back(d);
    g = TransposeOp::create(b, loc, g, b.getDenseI64ArrayAttr(gPerm));
  }
  SmallVector<int64_t> frontShape;
  for (int64_t d : toFront)
    frontShape.push_back(params.getDimSize(d));
  Value zeros =
      h.splat(RankedTensorType::get(frontShape, params.getElementType()), 0.0);
  Value result = ScatterOp::create(b, loc, zeros, op.getIndices(), g,
                                   b.getStringAttr("add"));
  if (axis != 0) {
    SmallVector<int64_t> inverse(rank);
    for (auto [i, p] : llvm::enumerate(toFront))
      inverse[p] = i;
    result =
        TransposeOp::create(b, loc, result, b.getDenseI64ArrayAttr(inverse));
  }
  out.assign(std::initializer_list<Value>{result, Value()});
  return success();
}

/// scatter add: ref's gradient is g, the updates' the gathered rows of g;
/// update: the replaced rows of ref get none (TF's tensor_scatter_update;
/// for duplicate indices every update gets the row's gradient).
LogicalResult gradient(ScatterOp op, OpBuilder &b, Value g, Grads &out) {
  G h = helper(b, op);
  Location loc = op.getLoc();
  if (op.getMode() == "min" || op.getMode() == "max") {
    // TF's _TensorScatterMinOrMaxGrad: g goes to every element equal to the
    // result (ref's and the updates'), divided among the ties.
    Value ref = op.getRef(), updates = op.getUpdates(), y = op.getResult();
    Type elt = tensorType(g).getElementType();
    Value refHit = h.castTo(h.equal(ref, y), elt);
    Value updateHit =
        h.castTo(h.equal(updates, h.gather(y, op.getIndices())), elt);
    Value hits = ScatterOp::create(b, loc, refHit, op.getIndices(), updateHit,
                                   b.getStringAttr("add"));
    Value share = h.div(g, hits);
    out.assign(std::initializer_list<Value>{
        h.mul(share, refHit), Value(),
        h.mul(h.gather(share, op.getIndices()), updateHit)});
    return success();
  }
  Value rows = h.gather(g, op.getIndices());
  Value refGrad = g;
  if (op.getMode() != "add")
    refGrad = ScatterOp::create(b, loc, g, op.getIndices(),
                                h.zerosLike(op.getUpdates()),
                                b.getStringAttr("update"));
  out.assign(std::initializer_list<Value>{refGrad, Value(), rows});
  return success();
}

/// unsorted_segment_sum: each row of data gets its segment's gradient,
/// gather(g, segment_ids) (TF's _UnsortedSegmentSumGrad). The gather clamps
/// an id outside [0, B), whose row the forward op dropped; ids come from
/// the host's feature transformation, which never makes one.
LogicalResult gradient(UnsortedSegmentSumOp op, OpBuilder &b, Value g,
                       Grads &out) {
  G h = helper(b, op);
  out.assign(std::initializer_list<Value>{h.gather(g, op.getSegmentIds()),
                                          Value(), Value()});
  return success();
}

/// reverse is its own transpose.
LogicalResult gradient(ReverseOp op, OpBuilder &b, Value g, Grads &out) {
  Value r = ReverseOp::create(b, op.getLoc(), g, op.getAxesAttr());
  out.assign(std::initializer_list<Value>{r});
  return success();
}

/// reverse_sequence reverses each valid prefix, so its gradient is the same
/// reversal of g (lengths get none).
LogicalResult gradient(ReverseSequenceOp op, OpBuilder &b, Value g,
                       Grads &out) {
  Value r =
      ReverseSequenceOp::create(b, op.getLoc(), g, op.getLengths(),
                                op.getSeqAxisAttr(), op.getBatchAxisAttr());
  out.assign(std::initializer_list<Value>{r, Value()});
  return success();
}

/// cumsum: each x[i] adds into every result at or after i (before, with
/// reverse), so its gradient is the cumsum of g the other way round, with
/// the same `exclusive` (TF's _CumsumGrad).
LogicalResult gradient(CumsumOp op, OpBuilder &b, Value g, Grads &out) {
  out.assign(std::initializer_list<Value>{CumsumOp::create(
      b, op.getLoc(), g, op.getAxisAttr(), op.getExclusiveAttr(),
      b.getBoolAttr(!op.getReverse()))});
  return success();
}

/// cumprod: TF's _CumprodGrad, cumsum(cumprod(x) * g, reverse flipped) / x,
/// exact where x has no zeros (as TF's).
LogicalResult gradient(CumprodOp op, OpBuilder &b, Value g, Grads &out) {
  G h = helper(b, op);
  Value sums = CumsumOp::create(b, op.getLoc(), h.mul(op.getResult(), g),
                                op.getAxisAttr(), op.getExclusiveAttr(),
                                b.getBoolAttr(!op.getReverse()));
  out.assign(std::initializer_list<Value>{h.div(sums, op.getX())});
  return success();
}

//===----------------------------------------------------------------------===//
// Sorting and images.
//===----------------------------------------------------------------------===//

/// take_along_axis: arr's gradient is g added back at the taken positions
/// (scatter_along_axis into zeros; duplicates summed), as TF's gather with
/// batch_dims (top_k's and sort's values).
LogicalResult gradient(TakeAlongAxisOp op, OpBuilder &b, Value g, Grads &out) {
  G h = helper(b, op);
  Value r = ScatterAlongAxisOp::create(b, op.getLoc(), h.zerosLike(op.getArr()),
                                       op.getIndices(), g, op.getAxisAttr());
  out.assign(std::initializer_list<Value>{r, Value()});
  return success();
}

/// scatter_along_axis adds updates into ref: ref's gradient is g, the
/// updates' the elements of g they were added to.
LogicalResult gradient(ScatterAlongAxisOp op, OpBuilder &b, Value g,
                       Grads &out) {
  Value rows = TakeAlongAxisOp::create(b, op.getLoc(), g, op.getIndices(),
                                       op.getAxisAttr());
  out.assign(std::initializer_list<Value>{g, Value(), rows});
  return success();
}

/// resize_images is linear in its images: the gradient is its transpose,
/// resize_images_grad with the same attributes.
LogicalResult gradient(ResizeImagesOp op, OpBuilder &b, Value g, Grads &out) {
  RankedTensorType in = tensorType(op.getImages());
  Value r = ResizeImagesGradOp::create(
      b, op.getLoc(), g,
      b.getDenseI64ArrayAttr({in.getDimSize(1), in.getDimSize(2)}),
      op.getMethodAttr(), op.getAlignCornersAttr(),
      op.getHalfPixelCentersAttr());
  out.assign(std::initializer_list<Value>{r});
  return success();
}

/// resize_images_grad is the transpose of resize_images, whose transpose
/// it is again.
LogicalResult gradient(ResizeImagesGradOp op, OpBuilder &b, Value g,
                       Grads &out) {
  RankedTensorType in = tensorType(op.getGradOutput());
  Value r = ResizeImagesOp::create(
      b, op.getLoc(), g,
      b.getDenseI64ArrayAttr({in.getDimSize(1), in.getDimSize(2)}),
      op.getMethodAttr(), op.getAlignCornersAttr(),
      op.getHalfPixelCentersAttr());
  out.assign(std::initializer_list<Value>{r});
  return success();
}

//===----------------------------------------------------------------------===//
// Neural-network ops and losses.
//===----------------------------------------------------------------------===//

LogicalResult gradient(SoftmaxOp op, OpBuilder &b, Value g, Grads &out) {
  G h = helper(b, op);
  Value y = op.getResult();
  int64_t axis = op.getAxisAttr().getInt();
  Value dot = h.reduceSum(h.mul(g, y), {axis}, true);
  out.assign(std::initializer_list<Value>{h.mul(y, h.sub(g, dot))});
  return success();
}

LogicalResult gradient(LogSoftmaxOp op, OpBuilder &b, Value g, Grads &out) {
  G h = helper(b, op);
  Value y = op.getResult();
  Value sum = h.reduceSum(g, {op.getAxisAttr().getInt()}, true);
  out.assign(std::initializer_list<Value>{
      h.sub(g, h.mul(ExpOp::create(b, op.getLoc(), y), sum))});
  return success();
}

LogicalResult gradient(SoftmaxCrossEntropyOp op, OpBuilder &b, Value g,
                       Grads &out) {
  G h = helper(b, op);
  Location loc = op.getLoc();
  Value logits = op.getLogits(), labels = op.getLabels();
  Value gk = ExpandDimsOp::create(b, loc, g, -1);
  Value p = SoftmaxOp::create(b, loc, logits, -1);
  Value logP = LogSoftmaxOp::create(b, loc, logits, -1);
  out.assign(std::initializer_list<Value>{h.mul(h.sub(p, labels), gk),
                                          h.mul(h.neg(logP), gk)});
  return success();
}

LogicalResult gradient(SparseSoftmaxCrossEntropyOp op, OpBuilder &b, Value g,
                       Grads &out) {
  G h = helper(b, op);
  Location loc = op.getLoc();
  Value logits = op.getLogits();
  RankedTensorType type = tensorType(logits);
  int64_t classes = type.getDimSize(type.getRank() - 1);
  if (ShapedType::isDynamic(classes))
    return op.emitError("gradient needs a static class count");
  Value gk = ExpandDimsOp::create(b, loc, g, -1);
  Value p = SoftmaxOp::create(b, loc, logits, -1);
  Value hot = OneHotOp::create(
      b, loc, op.getLabels(), b.getI64IntegerAttr(classes),
      b.getF64FloatAttr(1.0), b.getF64FloatAttr(0.0), b.getI64IntegerAttr(-1),
      TypeAttr::get(type.getElementType()));
  out.assign(std::initializer_list<Value>{h.mul(h.sub(p, hot), gk), Value()});
  return success();
}

LogicalResult gradient(FusedBatchNormOp op, OpBuilder &b, Value g, Grads &out) {
  auto grad = FusedBatchNormGradOp::create(b, op.getLoc(), g, op.getX(),
                                           op.getScale(), op.getBatchMean(),
                                           op.getInvStd(), op.getAxisAttr());
  out.assign(std::initializer_list<Value>{grad.getDx(), grad.getDscale(),
                                          grad.getDoffset()});
  return success();
}

LogicalResult gradient(SigmoidCrossEntropyOp op, OpBuilder &b, Value g,
                       Grads &out) {
  G h = helper(b, op);
  Value x = op.getLogits(), z = op.getLabels();
  Value s = SigmoidOp::create(b, op.getLoc(), x);
  out.assign(
      std::initializer_list<Value>{h.mul(g, h.sub(s, z)), h.mul(g, h.neg(x))});
  return success();
}

LogicalResult gradient(LayerNormOp op, OpBuilder &b, Value g, Grads &out) {
  auto grad = LayerNormGradOp::create(
      b, op.getLoc(), op.getX(), op.getGamma(), g, op.getBeginNormAxisAttr(),
      op.getBeginParamsAxisAttr(), op.getEpsilonAttr());
  out.assign(std::initializer_list<Value>{grad.getDx(), grad.getDgamma(),
                                          grad.getDbeta()});
  return success();
}

LogicalResult gradient(AttentionSoftmaxOp op, OpBuilder &b, Value g,
                       Grads &out) {
  Location loc = op.getLoc();
  Value y = op.getResult();
  out.assign(std::initializer_list<Value>{
      AttentionSoftmaxGradOp::create(b, loc, y, g, op.getScaleAttr())});
  // An additive mask gets the gradient of scale * logits + mask, summed over
  // the dims it broadcasts along; a boolean one none.
  Value mask = op.getMask();
  if (mask && isFloatTensor(mask)) {
    G h = helper(b, op);
    Value dz =
        AttentionSoftmaxGradOp::create(b, loc, y, g, b.getF64FloatAttr(1.0));
    out.push_back(h.reduceTo(dz, mask));
  }
  return success();
}

LogicalResult gradient(DropoutOp op, OpBuilder &b, Value g, Grads &out) {
  out.assign(std::initializer_list<Value>{
      DropoutOp::create(b, op.getLoc(), g, op.getCounter(), op.getRateAttr(),
                        op.getSeedAttr()),
      Value()});
  return success();
}

//===----------------------------------------------------------------------===//
// Registration.
//===----------------------------------------------------------------------===//

template <typename OpT>
struct GradientModel
    : public GradientOpInterface::ExternalModel<GradientModel<OpT>, OpT> {
  LogicalResult buildGradients(Operation *op, OpBuilder &builder,
                               Value resultGrad,
                               SmallVectorImpl<Value> &operandGrads) const {
    operandGrads.clear();
    if (failed(gradient(cast<OpT>(op), builder, resultGrad, operandGrads)))
      return failure();
    operandGrads.resize(op->getNumOperands());
    return success();
  }
};

template <typename... OpTs> void attach(MLIRContext &context) {
  (OpTs::template attachInterface<GradientModel<OpTs>>(context), ...);
}

} // namespace

void mlir::est::attachGradientInterfaces(MLIRContext &context) {
  attach<AddOp, SubOp, MulOp, DivOp, PowOp, MaximumOp, MinimumOp, NegOp, AbsOp,
         SquareOp, ExpOp, LogOp, SqrtOp, RsqrtOp, TanhOp, SinOp, CosOp, FloorOp,
         CeilOp, RoundOp, SignOp, ErfOp, Log1pOp, Expm1Op, CumsumOp, CumprodOp,
         SigmoidOp, ReluOp, Relu6Op, EluOp, SoftplusOp, SelectOp, CastOp,
         StopGradientOp, ZerosLikeOp, OnesLikeOp, MatmulOp, Conv2DOp,
         Conv2DBackpropInputOp, DepthwiseConv2DOp,
         DepthwiseConv2DBackpropInputOp, DepthwiseConv2DBackpropFilterOp,
         MaxPoolOp, AvgPoolOp, ReduceSumOp, ReduceMeanOp, ReduceMaxOp,
         ReduceMinOp, ReduceProdOp, ReshapeOp, SqueezeOp, ExpandDimsOp,
         TransposeOp, BroadcastToOp, ConcatOp, SliceOp, PadOp, GatherOp,
         ScatterOp, UnsortedSegmentSumOp, SoftmaxOp, LogSoftmaxOp,
         SoftmaxCrossEntropyOp, SparseSoftmaxCrossEntropyOp,
         SigmoidCrossEntropyOp, DropoutOp, ReverseSequenceOp, ReverseOp,
         TakeAlongAxisOp, ScatterAlongAxisOp, ResizeImagesOp,
         ResizeImagesGradOp, LayerNormOp, AttentionSoftmaxOp, FusedBatchNormOp>(
      context);
}
