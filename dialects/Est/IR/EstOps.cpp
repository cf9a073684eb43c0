//===- EstOps.cpp - est dialect operations ----------------------------===//
//
// Type inference (through lib/Shape/ShapeFunctions.h), verifiers and custom
// assembly of the est ops. Their folders are in EstFolders.cpp, their
// canonicalization patterns in EstCanonicalization.{td,cpp}.
//
// Type inference is total: the graph importer creates ops generically from
// graph attributes and calls inferReturnTypes before verifying, so every
// inferReturnTypes checks its operand count, operand types and required
// attributes itself and reports a one-line error instead of asserting.
//
//===----------------------------------------------------------------------===//

#include "dialects/Est/IR/EstOps.h"

#include "lib/Shape/ShapeFunctions.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>
#include <sstream>

using namespace mlir;
using namespace mlir::est;
namespace shape = estc::shape;
using shape::Dims;
using shape::ShapeOr;

//===----------------------------------------------------------------------===//
// Shared helpers.
//===----------------------------------------------------------------------===//

bool mlir::est::areRelaxedCompatible(TypeRange inferred, TypeRange declared) {
  if (inferred.size() != declared.size())
    return false;
  for (auto [inf, decl] : llvm::zip_equal(inferred, declared)) {
    if (inf == decl)
      continue;
    auto infTensor = dyn_cast<RankedTensorType>(inf);
    auto declTensor = dyn_cast<RankedTensorType>(decl);
    if (!infTensor || !declTensor ||
        infTensor.getElementType() != declTensor.getElementType() ||
        infTensor.getRank() != declTensor.getRank())
      return false;
    for (auto [i, d] :
         llvm::zip_equal(infTensor.getShape(), declTensor.getShape()))
      if (!ShapedType::isDynamic(d) && i != d)
        return false;
  }
  return true;
}

namespace {

/// MLIR shape -> shape-function dims (kDynamic -> kUnknownDim).
Dims toDims(ArrayRef<int64_t> shape) {
  Dims dims;
  dims.reserve(shape.size());
  for (int64_t d : shape)
    dims.push_back(ShapedType::isDynamic(d) ? shape::kUnknownDim : d);
  return dims;
}

/// Shape-function dims -> MLIR shape (negative -> kDynamic).
SmallVector<int64_t> fromDims(const Dims &dims) {
  SmallVector<int64_t> shape;
  shape.reserve(dims.size());
  for (int64_t d : dims)
    shape.push_back(d < 0 ? ShapedType::kDynamic : d);
  return shape;
}

/// An attribute list verbatim (-1 stays -1: "infer" / "to the end").
Dims attrDims(DenseI64ArrayAttr attr) {
  return Dims(attr.asArrayRef().begin(), attr.asArrayRef().end());
}

bool boolOr(BoolAttr attr, bool dflt) { return attr ? attr.getValue() : dflt; }
int64_t intOr(IntegerAttr attr, int64_t dflt) {
  return attr ? attr.getValue().getSExtValue() : dflt;
}
Type typeOr(TypeAttr attr, Type dflt) { return attr ? attr.getValue() : dflt; }
Dims dimsOr(DenseI64ArrayAttr attr, Dims dflt) {
  return attr ? attrDims(attr) : dflt;
}
std::optional<Dims> optionalDims(DenseI64ArrayAttr attr) {
  if (!attr)
    return std::nullopt;
  return attrDims(attr);
}

/// Type inference of one op: operand checks, attribute checks and the
/// result, with every error prefixed "'est.<op>' op ".
class Inference {
public:
  Inference(std::optional<Location> loc, StringRef opName, ValueRange operands,
            SmallVectorImpl<Type> &results)
      : loc(loc), opName(opName), operands(operands), results(results) {}

  LogicalResult fail(const Twine &message) {
    return emitOptionalError(loc, "'", opName, "' op ", message);
  }

  /// Checks the operand count (`max` < 0: variadic) and that each operand is
  /// a ranked tensor.
  LogicalResult operandCount(int64_t min, int64_t max) {
    int64_t n = operands.size();
    if (n < min || (max >= 0 && n > max)) {
      if (min == max)
        return fail("expected " + Twine(min) + " operands, but found " +
                    Twine(n));
      return fail("expected at least " + Twine(min) + " operands, but found " +
                  Twine(n));
    }
    for (auto [i, v] : llvm::enumerate(operands)) {
      if (!v || !isa<RankedTensorType>(v.getType())) {
        std::string s;
        llvm::raw_string_ostream os(s);
        if (v)
          os << v.getType();
        else
          os << "null";
        return fail("operand #" + Twine(i) + " must be a ranked tensor, got " +
                    s);
      }
    }
    return success();
  }
  LogicalResult operandCount(int64_t n) { return operandCount(n, n); }

  template <typename AttrT> LogicalResult require(AttrT attr, StringRef name) {
    if (!attr)
      return fail("requires attribute '" + name + "'");
    return success();
  }

  RankedTensorType type(unsigned i) {
    return cast<RankedTensorType>(operands[i].getType());
  }
  Dims dims(unsigned i) { return toDims(type(i).getShape()); }
  Type elt(unsigned i) { return type(i).getElementType(); }

  /// Requires operand `i` (`what`: "dy") to have the shape of operand `j`
  /// (`of`: "x").
  LogicalResult sameShape(unsigned i, StringRef what, unsigned j,
                          StringRef of) {
    if (succeeded(verifyCompatibleShape(type(i), type(j))))
      return success();
    return fail(what + " " + shape::toString(dims(i)) +
                " must have the shape of " + of + " " +
                shape::toString(dims(j)));
  }

  /// Requires the `epsilon` attribute (absent: 1e-3) to be >= 0.
  LogicalResult nonNegativeEpsilon(FloatAttr epsilonAttr) {
    double epsilon = epsilonAttr ? epsilonAttr.getValueAsDouble() : 1e-3;
    if (epsilon >= 0.0)
      return success();
    std::ostringstream os;
    os << "epsilon must be >= 0, got " << epsilon;
    return fail(os.str());
  }

  /// Requires operands `i` and `j` to have one element type.
  LogicalResult sameElementType(unsigned i, unsigned j) {
    if (elt(i) == elt(j))
      return success();
    std::string s;
    llvm::raw_string_ostream os(s);
    os << "operands have different element types " << elt(i) << " and "
       << elt(j);
    return fail(s);
  }

  LogicalResult result(const ShapeOr &shape, Type elementType) {
    if (!shape)
      return fail(shape.message());
    results.push_back(RankedTensorType::get(fromDims(*shape), elementType));
    return success();
  }
  LogicalResult result(Type type) {
    results.push_back(type);
    return success();
  }

  std::optional<Location> loc;
  StringRef opName;
  ValueRange operands;
  SmallVectorImpl<Type> &results;
};

/// Parses a padding attribute, reporting a bad value.
FailureOr<shape::Padding> padding(Inference &inf, StringAttr attr) {
  if (failed(inf.require(attr, "padding")))
    return failure();
  auto padding = shape::parsePadding(attr.getValue().str());
  if (!padding) {
    (void)inf.fail("padding must be \"SAME\" or \"VALID\", got \"" +
                   attr.getValue() + "\"");
    return failure();
  }
  return *padding;
}

/// Elementwise ops with broadcasting: `numOperands` operands (the first
/// `firstValue` of which are conditions), result element type `resultElt` or
/// the first value operand's.
LogicalResult inferBroadcast(Inference &inf, unsigned numOperands,
                             unsigned firstValue, Type resultElt) {
  if (failed(inf.operandCount(numOperands)))
    return failure();
  for (unsigned i = firstValue + 1; i < numOperands; ++i)
    if (failed(inf.sameElementType(firstValue, i)))
      return failure();
  std::vector<Dims> shapes;
  for (unsigned i = 0; i < numOperands; ++i)
    shapes.push_back(inf.dims(i));
  return inf.result(shape::broadcast(shapes),
                    resultElt ? resultElt : inf.elt(firstValue));
}

LogicalResult inferSameType(Inference &inf) {
  if (failed(inf.operandCount(1)))
    return failure();
  return inf.result(inf.type(0));
}

} // namespace

//===----------------------------------------------------------------------===//
// Custom assembly: `T` when the operand and result types agree, else `T -> U`.
//===----------------------------------------------------------------------===//

static ParseResult parseUnaryTypes(OpAsmParser &parser, Type &operand,
                                   Type &result) {
  if (parser.parseType(operand))
    return failure();
  if (succeeded(parser.parseOptionalArrow()))
    return parser.parseType(result);
  result = operand;
  return success();
}

static void printUnaryTypes(OpAsmPrinter &printer, Operation *, Type operand,
                            Type result) {
  printer << operand;
  if (operand != result)
    printer << " -> " << result;
}

#define GET_OP_CLASSES
#include "dialects/Est/IR/EstOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Type inference.
//===----------------------------------------------------------------------===//

#define EST_INFER(OP)                                                          \
  LogicalResult OP::inferReturnTypes(                                          \
      [[maybe_unused]] MLIRContext *context, std::optional<Location> location, \
      Adaptor adaptor, SmallVectorImpl<Type> &inferred)

#define EST_INFERENCE                                                          \
  Inference inf(location, getOperationName(), adaptor.getOperands(), inferred)

EST_INFER(ConstantOp) {
  EST_INFERENCE;
  if (failed(inf.operandCount(0)) ||
      failed(inf.require(adaptor.getValueAttr(), "value")))
    return failure();
  auto type = dyn_cast<RankedTensorType>(adaptor.getValueAttr().getType());
  if (!type)
    return inf.fail("value must be a ranked tensor");
  return inf.result(type);
}

// Binary elementwise ops.
#define EST_INFER_BINARY(OP, RESULT_ELT)                                       \
  EST_INFER(OP) {                                                              \
    EST_INFERENCE;                                                             \
    return inferBroadcast(inf, 2, 0, RESULT_ELT);                              \
  }
EST_INFER_BINARY(AddOp, nullptr)
EST_INFER_BINARY(SubOp, nullptr)
EST_INFER_BINARY(MulOp, nullptr)
EST_INFER_BINARY(DivOp, nullptr)
EST_INFER_BINARY(PowOp, nullptr)
EST_INFER_BINARY(MaximumOp, nullptr)
EST_INFER_BINARY(MinimumOp, nullptr)
EST_INFER_BINARY(EqualOp, IntegerType::get(context, 1))
EST_INFER_BINARY(NotEqualOp, IntegerType::get(context, 1))
EST_INFER_BINARY(LessOp, IntegerType::get(context, 1))
EST_INFER_BINARY(LessEqualOp, IntegerType::get(context, 1))
EST_INFER_BINARY(GreaterOp, IntegerType::get(context, 1))
EST_INFER_BINARY(GreaterEqualOp, IntegerType::get(context, 1))
EST_INFER_BINARY(LogicalAndOp, IntegerType::get(context, 1))
EST_INFER_BINARY(LogicalOrOp, IntegerType::get(context, 1))
#undef EST_INFER_BINARY

EST_INFER(SelectOp) {
  EST_INFERENCE;
  return inferBroadcast(inf, 3, 1, nullptr);
}

// Unary ops with the operand's type.
#define EST_INFER_SAME(OP)                                                     \
  EST_INFER(OP) {                                                              \
    EST_INFERENCE;                                                             \
    return inferSameType(inf);                                                 \
  }
EST_INFER_SAME(NegOp)
EST_INFER_SAME(AbsOp)
EST_INFER_SAME(SquareOp)
EST_INFER_SAME(ExpOp)
EST_INFER_SAME(LogOp)
EST_INFER_SAME(SqrtOp)
EST_INFER_SAME(RsqrtOp)
EST_INFER_SAME(TanhOp)
EST_INFER_SAME(SinOp)
EST_INFER_SAME(CosOp)
EST_INFER_SAME(FloorOp)
EST_INFER_SAME(CeilOp)
EST_INFER_SAME(RoundOp)
EST_INFER_SAME(SignOp)
EST_INFER_SAME(ErfOp)
EST_INFER_SAME(Log1pOp)
EST_INFER_SAME(Expm1Op)
EST_INFER_SAME(SigmoidOp)
EST_INFER_SAME(ReluOp)
EST_INFER_SAME(Relu6Op)
EST_INFER_SAME(EluOp)
EST_INFER_SAME(SoftplusOp)
EST_INFER_SAME(LogicalNotOp)
EST_INFER_SAME(StopGradientOp)
EST_INFER_SAME(CheckRangeOp)
EST_INFER_SAME(ZerosLikeOp)
EST_INFER_SAME(OnesLikeOp)
#undef EST_INFER_SAME

EST_INFER(GradientOp) {
  EST_INFERENCE;
  if (failed(inf.operandCount(2)))
    return failure();
  return inf.result(inf.type(1));
}

EST_INFER(CastOp) {
  EST_INFERENCE;
  if (failed(inf.operandCount(1)) ||
      failed(inf.require(adaptor.getDtypeAttr(), "dtype")))
    return failure();
  return inf.result(inf.type(0).clone(adaptor.getDtypeAttr().getValue()));
}

EST_INFER(MatmulOp) {
  EST_INFERENCE;
  if (failed(inf.operandCount(2)) || failed(inf.sameElementType(0, 1)))
    return failure();
  return inf.result(shape::matmul(inf.dims(0), inf.dims(1),
                                  boolOr(adaptor.getTransposeAAttr(), false),
                                  boolOr(adaptor.getTransposeBAttr(), false)),
                    inf.elt(0));
}

EST_INFER(Conv2DOp) {
  EST_INFERENCE;
  if (failed(inf.operandCount(2)) || failed(inf.sameElementType(0, 1)))
    return failure();
  FailureOr<shape::Padding> pad = padding(inf, adaptor.getPaddingAttr());
  if (failed(pad))
    return failure();
  return inf.result(shape::conv2d(inf.dims(0), inf.dims(1),
                                  dimsOr(adaptor.getStridesAttr(), {1, 1}),
                                  dimsOr(adaptor.getDilationsAttr(), {1, 1}),
                                  *pad),
                    inf.elt(0));
}

/// The window of a pool op or pool gradient.
struct PoolWindow {
  Dims ksize, strides;
  shape::Padding padding;
};
template <typename Adaptor>
static FailureOr<PoolWindow> poolWindow(Inference &inf, Adaptor adaptor) {
  if (failed(inf.require(adaptor.getKsizeAttr(), "ksize")) ||
      failed(inf.require(adaptor.getStridesAttr(), "strides")))
    return failure();
  FailureOr<shape::Padding> pad = padding(inf, adaptor.getPaddingAttr());
  if (failed(pad))
    return failure();
  return PoolWindow{attrDims(adaptor.getKsizeAttr()),
                    attrDims(adaptor.getStridesAttr()), *pad};
}

template <typename Adaptor>
static LogicalResult inferPool(Inference &inf, Adaptor adaptor) {
  if (failed(inf.operandCount(1)))
    return failure();
  FailureOr<PoolWindow> w = poolWindow(inf, adaptor);
  if (failed(w))
    return failure();
  return inf.result(
      shape::pool2d(inf.dims(0), w->ksize, w->strides, w->padding), inf.elt(0));
}
EST_INFER(MaxPoolOp) {
  EST_INFERENCE;
  return inferPool(inf, adaptor);
}
EST_INFER(AvgPoolOp) {
  EST_INFERENCE;
  return inferPool(inf, adaptor);
}

/// conv2d_backprop_input and _filter: two operands of one element type, the
/// size of the result (`sizeName`), strides and dilations (default 1) and
/// padding; `shapeFn` is their shape function.
template <typename Adaptor, typename ShapeFn>
static LogicalResult inferConvBackprop(Inference &inf, Adaptor adaptor,
                                       DenseI64ArrayAttr size,
                                       StringRef sizeName, ShapeFn shapeFn) {
  if (failed(inf.operandCount(2)) || failed(inf.sameElementType(0, 1)) ||
      failed(inf.require(size, sizeName)))
    return failure();
  FailureOr<shape::Padding> pad = padding(inf, adaptor.getPaddingAttr());
  if (failed(pad))
    return failure();
  return inf.result(shapeFn(inf.dims(0), inf.dims(1), attrDims(size),
                            dimsOr(adaptor.getStridesAttr(), {1, 1}),
                            dimsOr(adaptor.getDilationsAttr(), {1, 1}), *pad),
                    inf.elt(0));
}
EST_INFER(Conv2DBackpropInputOp) {
  EST_INFERENCE;
  return inferConvBackprop(inf, adaptor, adaptor.getInputSizeAttr(),
                           "input_size", shape::conv2dBackpropInput);
}
EST_INFER(Conv2DBackpropFilterOp) {
  EST_INFERENCE;
  return inferConvBackprop(inf, adaptor, adaptor.getFilterSizeAttr(),
                           "filter_size", shape::conv2dBackpropFilter);
}

EST_INFER(DepthwiseConv2DOp) {
  EST_INFERENCE;
  if (failed(inf.operandCount(2)) || failed(inf.sameElementType(0, 1)))
    return failure();
  FailureOr<shape::Padding> pad = padding(inf, adaptor.getPaddingAttr());
  if (failed(pad))
    return failure();
  return inf.result(
      shape::depthwiseConv2d(inf.dims(0), inf.dims(1),
                             dimsOr(adaptor.getStridesAttr(), {1, 1}),
                             dimsOr(adaptor.getDilationsAttr(), {1, 1}), *pad),
      inf.elt(0));
}
EST_INFER(DepthwiseConv2DBackpropInputOp) {
  EST_INFERENCE;
  return inferConvBackprop(inf, adaptor, adaptor.getInputSizeAttr(),
                           "input_size", shape::depthwiseConv2dBackpropInput);
}
EST_INFER(DepthwiseConv2DBackpropFilterOp) {
  EST_INFERENCE;
  return inferConvBackprop(inf, adaptor, adaptor.getFilterSizeAttr(),
                           "filter_size", shape::depthwiseConv2dBackpropFilter);
}

EST_INFER(MaxPoolGradOp) {
  EST_INFERENCE;
  if (failed(inf.operandCount(2)) || failed(inf.sameElementType(0, 1)))
    return failure();
  FailureOr<PoolWindow> w = poolWindow(inf, adaptor);
  if (failed(w))
    return failure();
  return inf.result(shape::maxPoolGrad(inf.dims(0), inf.dims(1), w->ksize,
                                       w->strides, w->padding),
                    inf.elt(0));
}

EST_INFER(AvgPoolGradOp) {
  EST_INFERENCE;
  if (failed(inf.operandCount(1)) ||
      failed(inf.require(adaptor.getInputSizeAttr(), "input_size")))
    return failure();
  FailureOr<PoolWindow> w = poolWindow(inf, adaptor);
  if (failed(w))
    return failure();
  return inf.result(shape::avgPoolGrad(inf.dims(0),
                                       attrDims(adaptor.getInputSizeAttr()),
                                       w->ksize, w->strides, w->padding),
                    inf.elt(0));
}

EST_INFER(FusedBatchNormOp) {
  EST_INFERENCE;
  if (failed(inf.operandCount(3)) || failed(inf.sameElementType(0, 1)) ||
      failed(inf.sameElementType(0, 2)))
    return failure();
  if (failed(inf.nonNegativeEpsilon(adaptor.getEpsilonAttr())))
    return failure();
  ShapeOr c = shape::batchNorm(inf.dims(0), inf.dims(1), inf.dims(2),
                               intOr(adaptor.getAxisAttr(), -1));
  if (!c)
    return inf.fail(c.message());
  (void)inf.result(inf.type(0));
  for (int i = 0; i < 3; ++i)
    (void)inf.result(c, inf.elt(0));
  return success();
}

EST_INFER(FusedBatchNormGradOp) {
  EST_INFERENCE;
  if (failed(inf.operandCount(5)))
    return failure();
  for (unsigned i = 1; i < 5; ++i)
    if (failed(inf.sameElementType(0, i)))
      return failure();
  if (failed(inf.sameShape(0, "dy", 1, "x")))
    return failure();
  int64_t axis = intOr(adaptor.getAxisAttr(), -1);
  ShapeOr c = shape::batchNorm(inf.dims(1), inf.dims(2), inf.dims(2), axis);
  if (!c)
    return inf.fail(c.message());
  for (auto [i, what] : {std::pair{3u, "batch_mean"}, {4u, "inv_std"}}) {
    Dims d = inf.dims(i);
    if (!shape::isCompatible(d, *c))
      return inf.fail(std::string(what) + " " + shape::toString(d) +
                      " must have the shape " + shape::toString(*c) +
                      " of x's channels");
  }
  (void)inf.result(inf.type(1));
  (void)inf.result(c, inf.elt(0));
  return inf.result(c, inf.elt(0));
}

template <typename Adaptor>
static LogicalResult inferReduce(Inference &inf, Adaptor adaptor) {
  if (failed(inf.operandCount(1)))
    return failure();
  return inf.result(shape::reduce(inf.dims(0),
                                  optionalDims(adaptor.getAxesAttr()),
                                  boolOr(adaptor.getKeepDimsAttr(), false)),
                    inf.elt(0));
}
#define EST_INFER_REDUCE(OP)                                                   \
  EST_INFER(OP) {                                                              \
    EST_INFERENCE;                                                             \
    return inferReduce(inf, adaptor);                                          \
  }
EST_INFER_REDUCE(ReduceSumOp)
EST_INFER_REDUCE(ReduceMeanOp)
EST_INFER_REDUCE(ReduceMaxOp)
EST_INFER_REDUCE(ReduceMinOp)
EST_INFER_REDUCE(ReduceProdOp)
#undef EST_INFER_REDUCE

template <typename Adaptor>
static LogicalResult inferArgReduce(MLIRContext *context, Inference &inf,
                                    Adaptor adaptor) {
  if (failed(inf.operandCount(1)) ||
      failed(inf.require(adaptor.getAxisAttr(), "axis")))
    return failure();
  return inf.result(
      shape::argReduce(inf.dims(0), intOr(adaptor.getAxisAttr(), 0)),
      typeOr(adaptor.getOutputTypeAttr(), IntegerType::get(context, 64)));
}
EST_INFER(ArgmaxOp) {
  EST_INFERENCE;
  return inferArgReduce(context, inf, adaptor);
}
EST_INFER(ArgminOp) {
  EST_INFERENCE;
  return inferArgReduce(context, inf, adaptor);
}

EST_INFER(ReshapeOp) {
  EST_INFERENCE;
  if (failed(inf.operandCount(1)) ||
      failed(inf.require(adaptor.getShapeAttr(), "shape")))
    return failure();
  return inf.result(
      shape::reshape(inf.dims(0), attrDims(adaptor.getShapeAttr())),
      inf.elt(0));
}

EST_INFER(TransposeOp) {
  EST_INFERENCE;
  if (failed(inf.operandCount(1)) ||
      failed(inf.require(adaptor.getPermAttr(), "perm")))
    return failure();
  return inf.result(
      shape::transpose(inf.dims(0), attrDims(adaptor.getPermAttr())),
      inf.elt(0));
}

EST_INFER(ConcatOp) {
  EST_INFERENCE;
  if (failed(inf.operandCount(1, -1)) ||
      failed(inf.require(adaptor.getAxisAttr(), "axis")))
    return failure();
  std::vector<Dims> inputs;
  for (unsigned i = 0, e = adaptor.getOperands().size(); i < e; ++i) {
    if (failed(inf.sameElementType(0, i)))
      return failure();
    inputs.push_back(inf.dims(i));
  }
  return inf.result(shape::concat(inputs, intOr(adaptor.getAxisAttr(), 0)),
                    inf.elt(0));
}

EST_INFER(SliceOp) {
  EST_INFERENCE;
  if (failed(inf.operandCount(1)) ||
      failed(inf.require(adaptor.getBeginAttr(), "begin")) ||
      failed(inf.require(adaptor.getSizeAttr(), "size")))
    return failure();
  return inf.result(shape::slice(inf.dims(0), attrDims(adaptor.getBeginAttr()),
                                 attrDims(adaptor.getSizeAttr())),
                    inf.elt(0));
}

EST_INFER(PadOp) {
  EST_INFERENCE;
  if (failed(inf.operandCount(1)) ||
      failed(inf.require(adaptor.getPaddingsAttr(), "paddings")))
    return failure();
  return inf.result(
      shape::pad(inf.dims(0), attrDims(adaptor.getPaddingsAttr())), inf.elt(0));
}

EST_INFER(BroadcastToOp) {
  EST_INFERENCE;
  if (failed(inf.operandCount(1)) ||
      failed(inf.require(adaptor.getShapeAttr(), "shape")))
    return failure();
  return inf.result(
      shape::broadcastTo(inf.dims(0), attrDims(adaptor.getShapeAttr())),
      inf.elt(0));
}

EST_INFER(SqueezeOp) {
  EST_INFERENCE;
  if (failed(inf.operandCount(1)))
    return failure();
  return inf.result(
      shape::squeeze(inf.dims(0), optionalDims(adaptor.getAxesAttr())),
      inf.elt(0));
}

EST_INFER(ExpandDimsOp) {
  EST_INFERENCE;
  if (failed(inf.operandCount(1)) ||
      failed(inf.require(adaptor.getAxisAttr(), "axis")))
    return failure();
  return inf.result(
      shape::expandDims(inf.dims(0), intOr(adaptor.getAxisAttr(), 0)),
      inf.elt(0));
}

EST_INFER(ReverseOp) {
  EST_INFERENCE;
  if (failed(inf.operandCount(1)) ||
      failed(inf.require(adaptor.getAxesAttr(), "axes")))
    return failure();
  return inf.result(
      shape::reverse(inf.dims(0), attrDims(adaptor.getAxesAttr())), inf.elt(0));
}

EST_INFER(ShapeOfOp) {
  EST_INFERENCE;
  if (failed(inf.operandCount(1)))
    return failure();
  return inf.result(
      shape::Dims{inf.type(0).getRank()},
      typeOr(adaptor.getOutTypeAttr(), IntegerType::get(context, 32)));
}

EST_INFER(GatherOp) {
  EST_INFERENCE;
  if (failed(inf.operandCount(2)))
    return failure();
  return inf.result(
      shape::gather(inf.dims(0), inf.dims(1), intOr(adaptor.getAxisAttr(), 0)),
      inf.elt(0));
}

EST_INFER(ScatterOp) {
  EST_INFERENCE;
  if (failed(inf.operandCount(3)) || failed(inf.sameElementType(0, 2)))
    return failure();
  StringRef mode = adaptor.getModeAttr() ? adaptor.getModeAttr().getValue()
                                         : StringRef("add");
  if (mode != "add" && mode != "update" && mode != "min" && mode != "max")
    return inf.fail("mode must be \"add\", \"update\", \"min\" or \"max\", "
                    "got \"" +
                    mode + "\"");
  if (ShapeOr s = shape::scatter(inf.dims(0), inf.dims(1), inf.dims(2)); !s)
    return inf.fail(s.message());
  return inf.result(inf.type(0));
}

EST_INFER(UnsortedSegmentSumOp) {
  EST_INFERENCE;
  if (failed(inf.operandCount(3)))
    return failure();
  return inf.result(
      shape::unsortedSegmentSum(inf.dims(0), inf.dims(1), inf.dims(2)),
      inf.elt(0));
}

EST_INFER(BucketizeOp) {
  EST_INFERENCE;
  if (failed(inf.operandCount(1)) ||
      failed(inf.require(adaptor.getBoundariesAttr(), "boundaries")))
    return failure();
  return inf.result(RankedTensorType::get(inf.type(0).getShape(),
                                          IntegerType::get(context, 64)));
}

EST_INFER(SequenceMaskOp) {
  EST_INFERENCE;
  if (failed(inf.operandCount(1, 2)))
    return failure();
  RankedTensorType lengths = inf.type(0);
  if (!isa<IntegerType>(lengths.getElementType()) ||
      lengths.getElementType().isInteger(1))
    return inf.fail("lengths must be integers");
  int64_t maxlen = intOr(adaptor.getMaxlenAttr(), -1);
  int64_t size;
  if (adaptor.getOperands().size() == 2) {
    RankedTensorType like = inf.type(1);
    int64_t axis = intOr(adaptor.getAxisAttr(), 1);
    std::optional<int64_t> a = shape::normalizeAxis(axis, like.getRank());
    if (!a)
      return inf.fail("axis " + Twine(axis) + " is out of range for rank " +
                      Twine(like.getRank()));
    size = like.getDimSize(*a);
  } else {
    if (maxlen < 0)
      return inf.fail("needs maxlen_like or a maxlen >= 0");
    size = maxlen;
  }
  SmallVector<int64_t> shape(lengths.getShape());
  shape.push_back(size);
  return inf.result(RankedTensorType::get(shape, IntegerType::get(context, 1)));
}

template <typename Adaptor>
static LogicalResult inferCumulative(Inference &inf, Adaptor adaptor) {
  if (failed(inf.operandCount(1)))
    return failure();
  int64_t axis = intOr(adaptor.getAxisAttr(), 0);
  int64_t rank = inf.type(0).getRank();
  if (!shape::normalizeAxis(axis, rank))
    return inf.fail("axis " + Twine(axis) + " is out of range for rank " +
                    Twine(rank));
  return inf.result(inf.type(0));
}
EST_INFER(CumsumOp) {
  EST_INFERENCE;
  return inferCumulative(inf, adaptor);
}
EST_INFER(CumprodOp) {
  EST_INFERENCE;
  return inferCumulative(inf, adaptor);
}

EST_INFER(ReverseSequenceOp) {
  EST_INFERENCE;
  if (failed(inf.operandCount(2)))
    return failure();
  RankedTensorType input = inf.type(0), lengths = inf.type(1);
  int64_t rank = input.getRank();
  int64_t seq = intOr(adaptor.getSeqAxisAttr(), 1);
  int64_t batch = intOr(adaptor.getBatchAxisAttr(), 0);
  if (!adaptor.getSeqAxisAttr())
    return inf.fail("requires attribute 'seq_axis'");
  std::optional<int64_t> s = shape::normalizeAxis(seq, rank);
  std::optional<int64_t> bt = shape::normalizeAxis(batch, rank);
  if (!s || !bt || *s == *bt)
    return inf.fail("seq_axis and batch_axis must be distinct axes of the "
                    "rank-" +
                    Twine(rank) + " input");
  batch = *bt;
  if (lengths.getRank() != 1)
    return inf.fail("lengths must have rank 1");
  int64_t n = lengths.getDimSize(0), b = input.getDimSize(batch);
  if (!ShapedType::isDynamic(n) && !ShapedType::isDynamic(b) && n != b)
    return inf.fail("lengths has " + Twine(n) + " entries for a batch of " +
                    Twine(b));
  return inf.result(input);
}

EST_INFER(OneHotOp) {
  EST_INFERENCE;
  if (failed(inf.operandCount(1)) ||
      failed(inf.require(adaptor.getDepthAttr(), "depth")))
    return failure();
  return inf.result(shape::oneHot(inf.dims(0), intOr(adaptor.getDepthAttr(), 0),
                                  intOr(adaptor.getAxisAttr(), -1)),
                    typeOr(adaptor.getDtypeAttr(), Float32Type::get(context)));
}

EST_INFER(ArgsortOp) {
  EST_INFERENCE;
  if (failed(inf.operandCount(1)))
    return failure();
  StringRef direction = adaptor.getDirectionAttr()
                            ? adaptor.getDirectionAttr().getValue()
                            : StringRef("ASCENDING");
  if (direction != "ASCENDING" && direction != "DESCENDING")
    return inf.fail(
        "direction must be \"ASCENDING\" or \"DESCENDING\", got \"" +
        direction + "\"");
  return inf.result(shape::argsort(inf.dims(0),
                                   intOr(adaptor.getAxisAttr(), -1),
                                   intOr(adaptor.getKAttr(), -1)),
                    IntegerType::get(context, 32));
}

EST_INFER(TakeAlongAxisOp) {
  EST_INFERENCE;
  if (failed(inf.operandCount(2)))
    return failure();
  return inf.result(shape::takeAlongAxis(inf.dims(0), inf.dims(1),
                                         intOr(adaptor.getAxisAttr(), -1)),
                    inf.elt(0));
}

EST_INFER(ScatterAlongAxisOp) {
  EST_INFERENCE;
  if (failed(inf.operandCount(3)) || failed(inf.sameElementType(0, 2)))
    return failure();
  if (ShapeOr s = shape::scatterAlongAxis(inf.dims(0), inf.dims(1), inf.dims(2),
                                          intOr(adaptor.getAxisAttr(), -1));
      !s)
    return inf.fail(s.message());
  return inf.result(inf.type(0));
}

/// resize_images and its gradient: `method` is "bilinear" (float images
/// only) or "nearest".
static LogicalResult checkResizeMethod(Inference &inf, StringAttr attr) {
  StringRef method = attr ? attr.getValue() : StringRef("bilinear");
  if (method != "bilinear" && method != "nearest")
    return inf.fail("method must be \"bilinear\" or \"nearest\", got \"" +
                    method + "\"");
  if (method == "bilinear" && !isa<FloatType>(inf.elt(0)))
    return inf.fail("bilinear resizing needs float images");
  return success();
}

EST_INFER(ResizeImagesOp) {
  EST_INFERENCE;
  if (failed(inf.operandCount(1)) ||
      failed(inf.require(adaptor.getSizeAttr(), "size")) ||
      failed(checkResizeMethod(inf, adaptor.getMethodAttr())))
    return failure();
  return inf.result(
      shape::resizeImages(inf.dims(0), attrDims(adaptor.getSizeAttr())),
      inf.elt(0));
}

EST_INFER(ResizeImagesGradOp) {
  EST_INFERENCE;
  if (failed(inf.operandCount(1)) ||
      failed(inf.require(adaptor.getInputSizeAttr(), "input_size")) ||
      failed(checkResizeMethod(inf, adaptor.getMethodAttr())))
    return failure();
  return inf.result(shape::resizeImagesGrad(
                        inf.dims(0), attrDims(adaptor.getInputSizeAttr())),
                    inf.elt(0));
}

template <typename Adaptor>
static LogicalResult inferSoftmax(Inference &inf, Adaptor adaptor) {
  if (failed(inf.operandCount(1)))
    return failure();
  int64_t axis = intOr(adaptor.getAxisAttr(), -1);
  int64_t rank = inf.type(0).getRank();
  if (!shape::normalizeAxis(axis, rank))
    return inf.fail("axis " + Twine(axis) + " is out of range for rank " +
                    Twine(rank));
  return inf.result(inf.type(0));
}
EST_INFER(SoftmaxOp) {
  EST_INFERENCE;
  return inferSoftmax(inf, adaptor);
}
EST_INFER(LogSoftmaxOp) {
  EST_INFERENCE;
  return inferSoftmax(inf, adaptor);
}

/// Checks the operands and attributes of est.layer_norm and its gradient
/// (operand 2 is beta or dy) and returns x's type.
template <typename Adaptor>
static LogicalResult inferLayerNorm(Inference &inf, Adaptor adaptor,
                                    bool grad) {
  if (failed(inf.operandCount(3)) || failed(inf.sameElementType(0, 1)) ||
      failed(inf.sameElementType(0, 2)))
    return failure();
  if (!isa<FloatType>(inf.elt(0)))
    return inf.fail("x must be a float tensor");
  if (failed(inf.nonNegativeEpsilon(adaptor.getEpsilonAttr())))
    return failure();
  Dims x = inf.dims(0), gamma = inf.dims(1);
  Dims beta = grad ? gamma : inf.dims(2);
  int64_t norm = intOr(adaptor.getBeginNormAxisAttr(), -1);
  int64_t params = intOr(adaptor.getBeginParamsAxisAttr(), -1);
  ShapeOr out = shape::layerNorm(x, gamma, beta, norm, params);
  if (!out)
    return inf.fail(out.message());
  if (grad && failed(inf.sameShape(2, "dy", 0, "x")))
    return failure();
  return success();
}

EST_INFER(LayerNormOp) {
  EST_INFERENCE;
  if (failed(inferLayerNorm(inf, adaptor, /*grad=*/false)))
    return failure();
  return inf.result(inf.type(0));
}

EST_INFER(LayerNormGradOp) {
  EST_INFERENCE;
  if (failed(inferLayerNorm(inf, adaptor, /*grad=*/true)))
    return failure();
  (void)inf.result(inf.type(0));
  (void)inf.result(inf.type(1));
  return inf.result(inf.type(1));
}

EST_INFER(AttentionSoftmaxOp) {
  EST_INFERENCE;
  if (failed(inf.operandCount(1, 2)))
    return failure();
  if (!isa<FloatType>(inf.elt(0)))
    return inf.fail("logits must be a float tensor");
  std::optional<Dims> mask;
  if (adaptor.getOperands().size() == 2) {
    Type m = inf.elt(1);
    if (!m.isInteger(1) && m != inf.elt(0))
      return inf.fail("mask must be a bool tensor or a float tensor of the "
                      "logits' element type");
    mask = inf.dims(1);
  }
  return inf.result(shape::attentionSoftmax(inf.dims(0), mask), inf.elt(0));
}

EST_INFER(AttentionSoftmaxGradOp) {
  EST_INFERENCE;
  if (failed(inf.operandCount(2)) || failed(inf.sameElementType(0, 1)))
    return failure();
  if (inf.type(0).getRank() < 1)
    return inf.fail("y must have rank >= 1");
  if (failed(inf.sameShape(1, "dy", 0, "y")))
    return failure();
  return inf.result(inf.type(0));
}

EST_INFER(SoftmaxCrossEntropyOp) {
  EST_INFERENCE;
  if (failed(inf.operandCount(2)) || failed(inf.sameElementType(0, 1)))
    return failure();
  return inf.result(shape::softmaxCrossEntropy(inf.dims(0), inf.dims(1)),
                    inf.elt(0));
}

EST_INFER(SparseSoftmaxCrossEntropyOp) {
  EST_INFERENCE;
  if (failed(inf.operandCount(2)))
    return failure();
  return inf.result(shape::sparseSoftmaxCrossEntropy(inf.dims(0), inf.dims(1)),
                    inf.elt(0));
}

EST_INFER(SigmoidCrossEntropyOp) {
  EST_INFERENCE;
  if (failed(inf.operandCount(2)) || failed(inf.sameElementType(0, 1)))
    return failure();
  if (failed(inf.sameShape(1, "labels", 0, "logits")))
    return failure();
  return inf.result(inf.type(0));
}

EST_INFER(DropoutOp) {
  EST_INFERENCE;
  if (failed(inf.operandCount(2)) ||
      failed(inf.require(adaptor.getRateAttr(), "rate")) ||
      failed(inf.require(adaptor.getSeedAttr(), "seed")))
    return failure();
  double rate = adaptor.getRateAttr().getValueAsDouble();
  if (!(rate >= 0.0 && rate < 1.0)) {
    std::ostringstream os;
    os << "rate must be in [0, 1), got " << rate;
    return inf.fail(os.str());
  }
  return inf.result(inf.type(0));
}

template <typename Adaptor>
static LogicalResult inferRandom(MLIRContext *context, Inference &inf,
                                 Adaptor adaptor) {
  if (failed(inf.operandCount(1)) ||
      failed(inf.require(adaptor.getShapeAttr(), "shape")) ||
      failed(inf.require(adaptor.getSeedAttr(), "seed")))
    return failure();
  Type dtype = typeOr(adaptor.getDtypeAttr(), Float32Type::get(context));
  if (!isa<FloatType>(dtype)) {
    std::string s;
    llvm::raw_string_ostream os(s);
    os << dtype;
    return inf.fail("dtype must be a float type, got " + s);
  }
  Dims dims = attrDims(adaptor.getShapeAttr());
  for (int64_t d : dims)
    if (d < 0)
      return inf.fail("shape " + shape::toString(dims) +
                      " must be non-negative");
  return inf.result(RankedTensorType::get(fromDims(dims), dtype));
}
EST_INFER(RandomUniformOp) {
  EST_INFERENCE;
  return inferRandom(context, inf, adaptor);
}
EST_INFER(RandomNormalOp) {
  EST_INFERENCE;
  return inferRandom(context, inf, adaptor);
}
EST_INFER(TruncatedNormalOp) {
  EST_INFERENCE;
  return inferRandom(context, inf, adaptor);
}

EST_INFER(AssignVariableOp) {
  EST_INFERENCE;
  if (failed(inf.operandCount(1)) ||
      failed(inf.require(adaptor.getVariableAttr(), "variable")))
    return failure();
  return success();
}

EST_INFER(MinimizeOp) {
  EST_INFERENCE;
  // The loss and, optionally, the learning rate (a float scalar).
  if (failed(inf.operandCount(1, 2)) ||
      failed(inf.require(adaptor.getOptimizerAttr(), "optimizer")) ||
      failed(inf.require(adaptor.getHyperparametersAttr(), "hyperparameters")))
    return failure();
  return success();
}

#undef EST_INFERENCE
#undef EST_INFER

//===----------------------------------------------------------------------===//
// Verifiers and symbol uses.
//===----------------------------------------------------------------------===//

LogicalResult CheckRangeOp::verify() {
  if (getLowerAttr().getInt() >= getUpperAttr().getInt())
    return emitOpError("range [") << getLowerAttr().getInt() << ", "
                                  << getUpperAttr().getInt() << ") is empty";
  return success();
}

LogicalResult BucketizeOp::verify() {
  ArrayRef<double> boundaries = getBoundaries();
  for (size_t i = 0; i < boundaries.size(); ++i) {
    if (std::isnan(boundaries[i]))
      return emitOpError("boundary ") << i << " is NaN";
    if (i > 0 && boundaries[i] < boundaries[i - 1])
      return emitOpError("boundaries must be sorted ascending, but boundary ")
             << i << " (" << boundaries[i] << ") < boundary " << i - 1 << " ("
             << boundaries[i - 1] << ")";
  }
  return success();
}

LogicalResult VariableOp::verify() {
  auto type = cast<RankedTensorType>(getType());
  if (!type.hasStaticShape())
    return emitOpError("variable type must have a static shape, got ") << type;
  if (getLocal()) {
    if (getTrainable())
      return emitOpError("a local variable cannot be trainable");
    InitializerAttr init = getInitializerAttr();
    if (!init || init.getKind() != "zeros")
      return emitOpError("a local variable must have the zeros initializer");
  }
  return success();
}

/// Resolves `name` to an est.variable; when `type` is given, it must be the
/// variable's type (or the same type with some dimensions dynamic).
static FailureOr<VariableOp> lookupVariable(Operation *op,
                                            SymbolTableCollection &symbols,
                                            FlatSymbolRefAttr name, Type type,
                                            StringRef what) {
  Operation *symbol = symbols.lookupNearestSymbolFrom(op, name.getAttr());
  if (!symbol)
    return op->emitOpError("references unknown variable ") << name;
  auto variable = dyn_cast<VariableOp>(symbol);
  if (!variable)
    return op->emitOpError("references ")
           << name << ", which is not an est.variable";
  if (type && !areRelaxedCompatible(variable.getType(), type))
    return op->emitOpError()
           << what << " type " << type << " does not match the type "
           << variable.getType() << " of variable " << name;
  return variable;
}

LogicalResult
ReadVariableOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return lookupVariable(*this, symbolTable, getVariableAttr(), getType(),
                        "result");
}

LogicalResult
AssignVariableOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  return lookupVariable(*this, symbolTable, getVariableAttr(),
                        getValue().getType(), "value");
}

LogicalResult MinimizeOp::verify() {
  StringRef optimizer = getOptimizer();
  if (!llvm::is_contained({"sgd", "momentum", "adagrad", "adam", "rmsprop",
                           "ftrl", "adadelta", "proximal_gradient_descent",
                           "proximal_adagrad", "adagrad_da", "adamw", "adamax",
                           "nadam", "lazy_adam", "keras_sgd", "keras_rmsprop",
                           "keras_adagrad", "keras_adam"},
                          optimizer))
    return emitOpError("unknown optimizer \"")
           << optimizer
           << "\" (expected sgd, momentum, adagrad, adam, rmsprop, ftrl, "
              "adadelta, proximal_gradient_descent, proximal_adagrad, "
              "adagrad_da, adamw, adamax, nadam, lazy_adam, keras_sgd, "
              "keras_rmsprop, keras_adagrad or keras_adam)";
  return success();
}

LogicalResult AllReduceOp::verify() {
  if (getReduction() != "mean")
    return emitOpError() << "reduction '" << getReduction()
                         << "' is not supported (\"mean\")";
  return success();
}

LogicalResult PsPullRowsOp::verify() {
  if (getRemoteAttr().getInt() < 0)
    return emitOpError() << "remote index " << getRemoteAttr().getInt()
                         << " is negative";
  auto ids = cast<RankedTensorType>(getIds().getType());
  auto rows = cast<RankedTensorType>(getRows().getType());
  if (!ShapedType::isDynamic(ids.getDimSize(0)) &&
      !ShapedType::isDynamic(rows.getDimSize(0)) &&
      ids.getDimSize(0) != rows.getDimSize(0))
    return emitOpError() << ids.getDimSize(0) << " ids but "
                         << rows.getDimSize(0) << " rows";
  if (ShapedType::isDynamic(rows.getDimSize(1)))
    return emitOpError() << "rows " << rows << " have a dynamic width";
  return success();
}

LogicalResult PsWaitOp::verify() {
  if (getRows().getTypes() != getReady().getTypes())
    return emitOpError() << "results must have the operands' types";
  return success();
}

LogicalResult PsPushOp::verify() {
  if (getInputAttr().getInt() < 0)
    return emitOpError() << "input index " << getInputAttr().getInt()
                         << " is negative";
  if (getKey().empty())
    return emitOpError() << "has an empty key";
  return success();
}

LogicalResult AllGatherOp::verify() {
  auto indices = cast<RankedTensorType>(getIndices().getType());
  auto rows = cast<RankedTensorType>(getRows().getType());
  auto outIndices = cast<RankedTensorType>(getGatheredIndices().getType());
  auto outRows = cast<RankedTensorType>(getGatheredRows().getType());
  int64_t replicas = static_cast<int64_t>(getReplicas());
  if (replicas < 1)
    return emitOpError() << "replicas must be >= 1, not " << replicas;
  int64_t n = indices.getDimSize(0), m = rows.getDimSize(0);
  if (!ShapedType::isDynamic(n) && !ShapedType::isDynamic(m) && n != m)
    return emitOpError() << n << " indices but " << m << " rows";
  if (outRows.getElementType() != rows.getElementType() ||
      outRows.getDimSize(1) != rows.getDimSize(1))
    return emitOpError() << "gathered rows " << outRows << " do not match "
                         << rows;
  for (int64_t size : {outIndices.getDimSize(0), outRows.getDimSize(0)})
    if (!ShapedType::isDynamic(size) && !ShapedType::isDynamic(n) &&
        size != n * replicas)
      return emitOpError() << "gathered " << size << " rows, not replicas x "
                           << n;
  return success();
}

LogicalResult ApplyGradientsOp::verify() {
  if (getVariables().size() != getGradients().size())
    return emitOpError() << getVariables().size() << " variables but "
                         << getGradients().size() << " gradients";
  size_t sparse = getSparseVariables() ? getSparseVariables()->size() : 0;
  if (getSparseIndices().size() != sparse || getSparseValues().size() != sparse)
    return emitOpError() << sparse << " sparse variables but "
                         << getSparseIndices().size() << " indices and "
                         << getSparseValues().size() << " values";
  for (auto [indices, values] :
       llvm::zip_equal(getSparseIndices(), getSparseValues())) {
    auto i = cast<RankedTensorType>(indices.getType());
    auto v = cast<RankedTensorType>(values.getType());
    if (i.getRank() != 1 || v.getRank() < 1)
      return emitOpError("sparse indices must have rank 1 and values rank "
                         ">= 1, got ")
             << i << " and " << v;
  }
  return success();
}

LogicalResult MinimizeOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  if (!getVarList())
    return success();
  for (auto name : getVarList()->getAsRange<FlatSymbolRefAttr>()) {
    FailureOr<VariableOp> variable =
        lookupVariable(*this, symbolTable, name, nullptr, "");
    if (failed(variable))
      return failure();
    Type elt = cast<RankedTensorType>(variable->getType()).getElementType();
    if (!isa<FloatType>(elt))
      return emitOpError("cannot train variable ")
             << name << " of non-float type " << variable->getType();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Control flow: est.scan, est.if, est.while.
//===----------------------------------------------------------------------===//

namespace {

/// Same element type and rank, and equal sizes where both are static: the
/// two may describe the same run-time tensor (shape inference refines `?`).
bool mayBeSameTensor(Type a, Type b) {
  return areRelaxedCompatible(a, b) || areRelaxedCompatible(b, a);
}

/// The region's values must not touch variables: they are threaded through
/// the step by est-function-abi, outside any loop.
LogicalResult verifyNoVariableAccess(Operation *parent, Region &region) {
  WalkResult result = region.walk([&](Operation *op) {
    if (isa<ReadVariableOp, AssignVariableOp, MinimizeOp, ApplyGradientsOp>(
            op)) {
      parent->emitOpError("cannot contain ")
          << op->getName() << ": read variables before the loop and pass "
          << "the values in";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

/// The yield ending `region`, checked against `expected` types.
LogicalResult verifyYield(Operation *parent, Region &region, StringRef what,
                          TypeRange expected) {
  auto yield = dyn_cast<YieldOp>(region.front().getTerminator());
  if (!yield)
    return parent->emitOpError() << what << " must end with est.yield";
  if (yield.getValues().size() != expected.size())
    return parent->emitOpError()
           << what << " yields " << yield.getValues().size()
           << " values, expected " << expected.size();
  for (auto [i, pair] :
       llvm::enumerate(llvm::zip_equal(yield.getValues(), expected))) {
    auto [value, type] = pair;
    if (!mayBeSameTensor(value.getType(), type))
      return parent->emitOpError()
             << what << " yields " << value.getType() << " as value #" << i
             << ", expected " << type;
  }
  return success();
}

} // namespace

void mlir::est::eraseDetachedBlock(Block *block) {
  block->dropAllDefinedValueUses();
  for (Operation &op : *block)
    op.dropAllReferences();
  delete block;
}

YieldOp ScanOp::getYield() {
  return cast<YieldOp>(getBody().front().getTerminator());
}

RankedTensorType ScanOp::sliceType(RankedTensorType type) {
  return RankedTensorType::get(type.getShape().drop_front(),
                               type.getElementType());
}

RankedTensorType ScanOp::stackedType(RankedTensorType type, int64_t length) {
  SmallVector<int64_t> shape = {length};
  llvm::append_range(shape, type.getShape());
  return RankedTensorType::get(shape, type.getElementType());
}

int64_t ScanOp::getStaticLength() {
  for (Value seq : getSequences()) {
    int64_t n = cast<RankedTensorType>(seq.getType()).getDimSize(0);
    if (!ShapedType::isDynamic(n))
      return n;
  }
  return ShapedType::kDynamic;
}

LogicalResult ScanOp::verifyRegions() {
  if (getSequences().empty())
    return emitOpError("needs at least one sequence (its dimension 0 is the "
                       "number of steps)");
  int64_t length = ShapedType::kDynamic;
  for (auto [i, seq] : llvm::enumerate(getSequences())) {
    auto type = cast<RankedTensorType>(seq.getType());
    if (type.getRank() == 0)
      return emitOpError("sequence #") << i << " is a scalar; a sequence has "
                                       << "its steps in dimension 0";
    int64_t n = type.getDimSize(0);
    if (!ShapedType::isDynamic(n) && !ShapedType::isDynamic(length) &&
        n != length)
      return emitOpError("sequences have ")
             << length << " and " << n << " steps; all need the same";
    if (!ShapedType::isDynamic(n))
      length = n;
  }
  Block &block = getBody().front();
  size_t numCarried = getInits().size();
  if (block.getNumArguments() != numCarried + getSequences().size())
    return emitOpError("body has ")
           << block.getNumArguments() << " arguments, expected "
           << numCarried + getSequences().size()
           << " (the carried values, then one slice per sequence)";
  for (auto [i, pair] :
       llvm::enumerate(llvm::zip_equal(getInits(), getCarriedArgs()))) {
    auto [init, arg] = pair;
    if (!mayBeSameTensor(init.getType(), arg.getType()))
      return emitOpError("carried value #")
             << i << " is " << init.getType() << " but the body takes "
             << arg.getType();
  }
  for (auto [i, pair] :
       llvm::enumerate(llvm::zip_equal(getSequences(), getSliceArgs()))) {
    auto [seq, arg] = pair;
    auto expected = sliceType(cast<RankedTensorType>(seq.getType()));
    if (!mayBeSameTensor(expected, arg.getType()))
      return emitOpError("the slice of sequence #")
             << i << " is " << expected << " but the body takes "
             << arg.getType();
  }
  auto yield = dyn_cast<YieldOp>(block.getTerminator());
  if (!yield)
    return emitOpError("body must end with est.yield");
  if (yield.getValues().size() < numCarried)
    return emitOpError("body yields ")
           << yield.getValues().size() << " values but carries " << numCarried;
  SmallVector<Type> expected(getInits().getTypes());
  for (Value v : yield.getValues().drop_front(numCarried))
    expected.push_back(v.getType());
  if (failed(verifyYield(*this, getBody(), "body", expected)))
    return failure();
  if (getResults().size() != yield.getValues().size())
    return emitOpError("has ")
           << getResults().size() << " results but its body yields "
           << yield.getValues().size();
  for (auto [i, pair] : llvm::enumerate(
           llvm::zip_equal(getResults(), yield.getValues().getTypes()))) {
    auto [result, type] = pair;
    Type want = i < numCarried
                    ? type
                    : Type(stackedType(cast<RankedTensorType>(type), length));
    if (!mayBeSameTensor(result.getType(), want))
      return emitOpError("result #")
             << i << " is " << result.getType() << ", expected " << want;
  }
  return verifyNoVariableAccess(*this, getBody());
}

YieldOp IfOp::getThenYield() {
  return cast<YieldOp>(getThenRegion().front().getTerminator());
}
YieldOp IfOp::getElseYield() {
  return cast<YieldOp>(getElseRegion().front().getTerminator());
}

LogicalResult IfOp::verifyRegions() {
  for (Region *region : {&getThenRegion(), &getElseRegion()}) {
    if (region->front().getNumArguments() != 0)
      return emitOpError("regions take no arguments");
    if (failed(verifyYield(*this, *region,
                           region == &getThenRegion() ? "then" : "else",
                           getResultTypes())) ||
        failed(verifyNoVariableAccess(*this, *region)))
      return failure();
  }
  return success();
}

YieldOp WhileOp::getCondYield() {
  return cast<YieldOp>(getCondRegion().front().getTerminator());
}
YieldOp WhileOp::getBodyYield() {
  return cast<YieldOp>(getBodyRegion().front().getTerminator());
}

LogicalResult WhileOp::verifyRegions() {
  if (IntegerAttr max = getMaximumIterationsAttr(); max && max.getInt() < 0)
    return emitOpError("maximum_iterations must be >= 0, got ") << max.getInt();
  if (!areRelaxedCompatible(getResultTypes(), getInits().getTypes()) &&
      !areRelaxedCompatible(getInits().getTypes(), getResultTypes()))
    return emitOpError("results must have the types of the carried values");
  for (Region *region : {&getCondRegion(), &getBodyRegion()}) {
    Block &block = region->front();
    StringRef what = region == &getCondRegion() ? "cond" : "body";
    if (block.getNumArguments() != getInits().size())
      return emitOpError() << what << " has " << block.getNumArguments()
                           << " arguments, expected " << getInits().size();
    for (auto [init, arg] : llvm::zip_equal(getInits(), block.getArguments()))
      if (!mayBeSameTensor(init.getType(), arg.getType()))
        return emitOpError() << what << " takes " << arg.getType()
                             << " for a carried " << init.getType();
    if (failed(verifyNoVariableAccess(*this, *region)))
      return failure();
  }
  Type i1 = RankedTensorType::get({}, IntegerType::get(getContext(), 1));
  if (failed(verifyYield(*this, getCondRegion(), "cond", {i1})))
    return failure();
  return verifyYield(*this, getBodyRegion(), "body", getInits().getTypes());
}

//===----------------------------------------------------------------------===//
// Shape inference through a block (est-shape-inference, the importer).
//===----------------------------------------------------------------------===//

/// Sets `value`'s type to `type` when that refines it (same tensor, some
/// dynamic dimensions now known).
static void refineType(Value value, Type type) {
  if (type != value.getType() && areRelaxedCompatible(type, value.getType()))
    value.setType(type);
}

LogicalResult mlir::est::inferShapes(Block &block) {
  for (Operation &op : block) {
    if (auto scan = dyn_cast<ScanOp>(op)) {
      for (auto [init, arg] :
           llvm::zip_equal(scan.getInits(), scan.getCarriedArgs()))
        refineType(arg, init.getType());
      for (auto [seq, arg] :
           llvm::zip_equal(scan.getSequences(), scan.getSliceArgs()))
        refineType(arg,
                   ScanOp::sliceType(cast<RankedTensorType>(seq.getType())));
      if (failed(inferShapes(scan.getBody().front())))
        return failure();
      size_t numCarried = scan.getInits().size();
      for (auto [i, pair] : llvm::enumerate(llvm::zip_equal(
               scan.getResults(), scan.getYield().getValues()))) {
        auto [result, yielded] = pair;
        refineType(result, i < numCarried
                               ? scan.getInits()[i].getType()
                               : Type(ScanOp::stackedType(
                                     cast<RankedTensorType>(yielded.getType()),
                                     scan.getStaticLength())));
      }
      continue;
    }
    if (auto branch = dyn_cast<IfOp>(op)) {
      if (failed(inferShapes(branch.getThenRegion().front())) ||
          failed(inferShapes(branch.getElseRegion().front())))
        return failure();
      for (auto [result, a, b] : llvm::zip_equal(
               branch.getResults(), branch.getThenYield().getValues(),
               branch.getElseYield().getValues()))
        if (a.getType() == b.getType())
          refineType(result, a.getType());
      continue;
    }
    if (auto loop = dyn_cast<WhileOp>(op)) {
      for (Region *region : {&loop.getCondRegion(), &loop.getBodyRegion()}) {
        for (auto [init, arg] :
             llvm::zip_equal(loop.getInits(), region->front().getArguments()))
          refineType(arg, init.getType());
        if (failed(inferShapes(region->front())))
          return failure();
      }
      for (auto [result, init] :
           llvm::zip_equal(loop.getResults(), loop.getInits()))
        refineType(result, init.getType());
      continue;
    }
    auto infer = dyn_cast<InferTypeOpInterface>(op);
    if (!infer)
      continue;
    SmallVector<Type> inferred;
    if (failed(infer.inferReturnTypes(
            op.getContext(), op.getLoc(), op.getOperands(),
            op.getRawDictionaryAttrs(), op.getPropertiesStorage(),
            op.getRegions(), inferred)))
      return failure();
    for (auto [result, type] : llvm::zip_equal(op.getResults(), inferred))
      refineType(result, type);
  }
  return success();
}
