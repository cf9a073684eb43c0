//===- EstOps.td - est dialect operations ------------------*- tablegen -*-===//
//
// Every operation of docs/ops.md (except the graph-only `placeholder`).
// Attribute names, kinds and defaults follow that document exactly, because
// the graph importer creates these ops generically from graph attributes.
//
//===----------------------------------------------------------------------===//
#ifndef EST_OPS_TD
#define EST_OPS_TD

include "dialects/Est/IR/EstBase.td"
include "dialects/Est/IR/EstAttrs.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"

//===----------------------------------------------------------------------===//
// Sources.
//===----------------------------------------------------------------------===//

def Est_ConstantOp : Est_InferOp<"constant", [Pure, ConstantLike]> {
  let summary = "A constant tensor";
  let description = [{
    Produces the tensor `value`; the result type is the value's type.

    ```mlir
    %0 = est.constant dense<[1.0, 2.0]> : tensor<2xf32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Est_Tensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise.
//===----------------------------------------------------------------------===//

/// lhs, rhs of one element type; the result has the broadcast shape.
class Est_BinaryOp<string mnemonic, Type operandType, Type resultType,
                   list<Trait> traits = []>
    : Est_InferOp<mnemonic, traits # [Pure, SameOperandsElementType]> {
  let arguments = (ins operandType:$lhs, operandType:$rhs);
  let results = (outs resultType:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasFolder = 1;
}

class Est_ArithOp<string mnemonic, string what>
    : Est_BinaryOp<mnemonic, Est_NumericTensor, Est_NumericTensor,
                   [SameOperandsAndResultElementType]> {
  let summary = "Elementwise " # what # " with broadcasting";
  let description = [{
    Computes `lhs }] # what # [{ rhs` elementwise. The operands have the same
    element type; their shapes broadcast NumPy-style.
  }];
}

def Est_AddOp : Est_ArithOp<"add", "addition">;
def Est_SubOp : Est_ArithOp<"sub", "subtraction">;
def Est_MulOp : Est_ArithOp<"mul", "multiplication">;
def Est_DivOp : Est_ArithOp<"div", "division">;
def Est_PowOp : Est_ArithOp<"pow", "power">;
def Est_MaximumOp : Est_ArithOp<"maximum", "maximum">;
def Est_MinimumOp : Est_ArithOp<"minimum", "minimum">;

class Est_CompareOp<string mnemonic, string what, Type operandType>
    : Est_BinaryOp<mnemonic, operandType, Est_BoolTensor> {
  let summary = "Elementwise `" # what # "` comparison with broadcasting";
  let description = [{
    Compares `lhs }] # what # [{ rhs` elementwise into an `i1` tensor of the
    broadcast shape.
  }];
}

def Est_EqualOp : Est_CompareOp<"equal", "==", Est_Tensor>;
def Est_NotEqualOp : Est_CompareOp<"not_equal", "!=", Est_Tensor>;
def Est_LessOp : Est_CompareOp<"less", "<", Est_NumericTensor>;
def Est_LessEqualOp : Est_CompareOp<"less_equal", "<=", Est_NumericTensor>;
def Est_GreaterOp : Est_CompareOp<"greater", ">", Est_NumericTensor>;
def Est_GreaterEqualOp
    : Est_CompareOp<"greater_equal", ">=", Est_NumericTensor>;

class Est_LogicalOp<string mnemonic, string what>
    : Est_BinaryOp<mnemonic, Est_BoolTensor, Est_BoolTensor> {
  let summary = "Elementwise logical " # what # " with broadcasting";
  let description = [{
    Computes the logical }] # what # [{ of two `i1` tensors elementwise.
  }];
}

def Est_LogicalAndOp : Est_LogicalOp<"logical_and", "and">;
def Est_LogicalOrOp : Est_LogicalOp<"logical_or", "or">;

/// One operand; the result has the operand's type. The assembly prints one
/// type when both are equal, `T -> U` otherwise (before shape inference).
class Est_UnaryOp<string mnemonic, Type operandType, string what,
                  list<Trait> traits = []>
    : Est_InferOp<mnemonic, traits # [Pure, SameOperandsAndResultElementType]> {
  let summary = "Elementwise " # what;
  let description = [{
    Computes }] # what # [{ of each element; the result has `x`'s type.

    ```mlir
    %1 = est.}] # mnemonic # [{ %0 : tensor<?x256xf32>
    ```
  }];
  let arguments = (ins operandType:$x);
  let results = (outs operandType:$result);
  let assemblyFormat = [{
    $x attr-dict `:` custom<UnaryTypes>(type($x), type($result))
  }];
  let hasFolder = 1;
}

def Est_NegOp : Est_UnaryOp<"neg", Est_NumericTensor, "negation"> {
  let hasCanonicalizer = 1;
}
def Est_AbsOp : Est_UnaryOp<"abs", Est_NumericTensor, "absolute value">;
def Est_SquareOp : Est_UnaryOp<"square", Est_NumericTensor, "square">;
def Est_ExpOp : Est_UnaryOp<"exp", Est_FloatTensor, "exponential">;
def Est_LogOp : Est_UnaryOp<"log", Est_FloatTensor, "natural logarithm">;
def Est_SqrtOp : Est_UnaryOp<"sqrt", Est_FloatTensor, "square root">;
def Est_RsqrtOp
    : Est_UnaryOp<"rsqrt", Est_FloatTensor, "reciprocal square root">;
def Est_TanhOp : Est_UnaryOp<"tanh", Est_FloatTensor, "hyperbolic tangent">;
def Est_SinOp : Est_UnaryOp<"sin", Est_FloatTensor, "sine (radians)">;
def Est_CosOp : Est_UnaryOp<"cos", Est_FloatTensor, "cosine (radians)">;
def Est_FloorOp
    : Est_UnaryOp<"floor", Est_FloatTensor, "largest integer <= x">;
def Est_CeilOp
    : Est_UnaryOp<"ceil", Est_FloatTensor, "smallest integer >= x">;
def Est_RoundOp : Est_UnaryOp<"round", Est_NumericTensor,
    "the nearest integer, halves to even (tf.math.round; integers unchanged)">;
def Est_SignOp
    : Est_UnaryOp<"sign", Est_NumericTensor, "-1, 0 or 1 (NaN stays NaN)">;
def Est_ErfOp : Est_UnaryOp<"erf", Est_FloatTensor, "the error function">;
def Est_Log1pOp : Est_UnaryOp<"log1p", Est_FloatTensor, "log(1 + x)">;
def Est_Expm1Op : Est_UnaryOp<"expm1", Est_FloatTensor, "e^x - 1">;
def Est_SigmoidOp
    : Est_UnaryOp<"sigmoid", Est_FloatTensor, "logistic sigmoid">;
def Est_ReluOp : Est_UnaryOp<"relu", Est_FloatTensor, "max(x, 0)">;
def Est_Relu6Op : Est_UnaryOp<"relu6", Est_FloatTensor, "min(max(x, 0), 6)">;
def Est_EluOp
    : Est_UnaryOp<"elu", Est_FloatTensor, "exponential linear unit">;
def Est_SoftplusOp : Est_UnaryOp<"softplus", Est_FloatTensor, "log(1 + e^x)">;
def Est_LogicalNotOp
    : Est_UnaryOp<"logical_not", Est_BoolTensor, "logical negation">;

def Est_SelectOp : Est_InferOp<"select", [Pure]> {
  let summary = "Elementwise choice between two tensors";
  let description = [{
    `cond ? on_true : on_false` elementwise; the three shapes broadcast.

    ```mlir
    %r = est.select %c, %a, %b : tensor<?xi1>, tensor<?xf32>, tensor<f32> -> tensor<?xf32>
    ```
  }];
  let arguments = (ins Est_BoolTensor:$cond, Est_Tensor:$on_true,
                       Est_Tensor:$on_false);
  let results = (outs Est_Tensor:$result);
  let assemblyFormat = [{
    $cond `,` $on_true `,` $on_false attr-dict `:` type($cond) `,`
    type($on_true) `,` type($on_false) `->` type($result)
  }];
  let hasCanonicalizer = 1;
}

def Est_CastOp : Est_InferOp<"cast", [Pure,
    PredOpTrait<"dtype is the result element type",
        CPred<"getDtype() == ::llvm::cast<::mlir::ShapedType>("
              "getResult().getType()).getElementType()">>]> {
  let summary = "Elementwise conversion to another element type";
  let description = [{
    Converts each element to `dtype`; the shape is unchanged.

    ```mlir
    %1 = est.cast %0 to f32 : tensor<?xi64> -> tensor<?xf32>
    ```
  }];
  let arguments = (ins Est_Tensor:$x, Est_ElementTypeAttr:$dtype);
  let results = (outs Est_Tensor:$result);
  let assemblyFormat = [{
    $x `to` $dtype attr-dict `:` type($x) `->` type($result)
  }];
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Linear algebra, convolution, pooling.
//===----------------------------------------------------------------------===//

def Est_MatmulOp : Est_InferOp<"matmul", [Pure, SameOperandsAndResultElementType]> {
  let summary = "Batched matrix product";
  let description = [{
    `a [..., M, K] x b [..., K, N] -> [..., M, N]`; batch dims broadcast.
    `transpose_a` / `transpose_b` transpose the last two dims first.

    ```mlir
    %c = est.matmul %a, %b {transpose_b = true} : tensor<?x784xf32>, tensor<256x784xf32> -> tensor<?x256xf32>
    ```
  }];
  let arguments = (ins Est_NumericTensor:$a, Est_NumericTensor:$b,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_a,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_b);
  let results = (outs Est_NumericTensor:$result);
  let assemblyFormat = [{
    $a `,` $b attr-dict `:` type($a) `,` type($b) `->` type($result)
  }];
}

def Est_Conv2DOp : Est_InferOp<"conv2d", [Pure, SameOperandsAndResultElementType]> {
  let summary = "2-D convolution, NHWC input and HWIO filter";
  let description = [{
    ```mlir
    %y = est.conv2d %x, %w {padding = "SAME", strides = array<i64: 2, 2>} : tensor<?x28x28x1xf32>, tensor<5x5x1x32xf32> -> tensor<?x14x14x32xf32>
    ```
  }];
  let arguments = (ins Est_FloatTensor:$input, Est_FloatTensor:$filter,
      DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$strides,
      DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$dilations,
      StrAttr:$padding);
  let results = (outs Est_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $filter attr-dict `:` type($input) `,` type($filter) `->`
    type($result)
  }];
}

class Est_PoolOp<string mnemonic, string what>
    : Est_InferOp<mnemonic, [Pure, SameOperandsAndResultElementType]> {
  let summary = "2-D " # what # " pooling of an NHWC tensor";
  let description = [{
    ```mlir
    %y = est.}] # mnemonic # [{ %x {ksize = array<i64: 2, 2>, padding = "VALID", strides = array<i64: 2, 2>} : tensor<?x28x28x32xf32> -> tensor<?x14x14x32xf32>
    ```
  }];
  let arguments = (ins Est_FloatTensor:$input, DenseI64ArrayAttr:$ksize,
                       DenseI64ArrayAttr:$strides, StrAttr:$padding);
  let results = (outs Est_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
}

def Est_MaxPoolOp : Est_PoolOp<"max_pool", "max">;
def Est_AvgPoolOp : Est_PoolOp<"avg_pool", "average">;

// The gradients of conv2d and pooling: the backward graph of the autodiff
// pass (dialects/Est/IR/EstGradients.cpp) uses these instead of sums over
// window offsets. They take the forward op's attributes; `input_size` and
// `filter_size` give the forward operand's spatial size, which the gradient's
// shape does not determine. Batch and channels come from the operands, so
// the batch may be dynamic.

def Est_Conv2DBackpropInputOp
    : Est_InferOp<"conv2d_backprop_input",
                  [Pure, SameOperandsAndResultElementType]> {
  let summary = "The gradient of conv2d with respect to its input";
  let description = [{
    `result[n,ih,iw,c]` sums `grad_output[n,oh,ow,o] * filter[kh,kw,c,o]` over
    the output pixels and filter taps that read input pixel `(ih, iw)` in the
    forward conv2d of the same `strides`, `dilations` and `padding` (TF's
    Conv2DBackpropInput). The result is `[N, input_size[0], input_size[1], C]`.

    ```mlir
    %dx = est.conv2d_backprop_input %dy, %w {input_size = array<i64: 28, 28>, padding = "SAME", strides = array<i64: 2, 2>} : tensor<?x14x14x32xf32>, tensor<5x5x1x32xf32> -> tensor<?x28x28x1xf32>
    ```
  }];
  let arguments = (ins Est_FloatTensor:$grad_output, Est_FloatTensor:$filter,
      DenseI64ArrayAttr:$input_size,
      DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$strides,
      DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$dilations,
      StrAttr:$padding);
  let results = (outs Est_FloatTensor:$result);
  let assemblyFormat = [{
    $grad_output `,` $filter attr-dict `:` type($grad_output) `,`
    type($filter) `->` type($result)
  }];
}

def Est_Conv2DBackpropFilterOp
    : Est_InferOp<"conv2d_backprop_filter",
                  [Pure, SameOperandsAndResultElementType]> {
  let summary = "The gradient of conv2d with respect to its filter";
  let description = [{
    `result[kh,kw,c,o]` sums `input[n,ih,iw,c] * grad_output[n,oh,ow,o]` over
    the batch and the output pixels, `(ih, iw)` the input pixel that filter
    tap `(kh, kw)` reads for output pixel `(oh, ow)` (TF's
    Conv2DBackpropFilter). The result is
    `[filter_size[0], filter_size[1], C, O]`.

    ```mlir
    %dw = est.conv2d_backprop_filter %x, %dy {filter_size = array<i64: 5, 5>, padding = "SAME", strides = array<i64: 2, 2>} : tensor<?x28x28x1xf32>, tensor<?x14x14x32xf32> -> tensor<5x5x1x32xf32>
    ```
  }];
  let arguments = (ins Est_FloatTensor:$input, Est_FloatTensor:$grad_output,
      DenseI64ArrayAttr:$filter_size,
      DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$strides,
      DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$dilations,
      StrAttr:$padding);
  let results = (outs Est_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $grad_output attr-dict `:` type($input) `,`
    type($grad_output) `->` type($result)
  }];
}

def Est_DepthwiseConv2DOp
    : Est_InferOp<"depthwise_conv2d", [Pure, SameOperandsAndResultElementType]> {
  let summary = "Depthwise 2-D convolution, NHWC input, [KH, KW, C, M] filter";
  let description = [{
    `result[n,oh,ow,c*M+m]` sums `input[n,ih,iw,c] * filter[kh,kw,c,m]` over
    the filter taps, `(ih, iw)` the input pixel tap `(kh, kw)` reads for
    output pixel `(oh, ow)` (TF's DepthwiseConv2dNative). Each input channel
    is convolved with its own M filters, so the cost is a pass over the
    input per tap, not a GEMM.

    ```mlir
    %y = est.depthwise_conv2d %x, %w {padding = "SAME", strides = array<i64: 2, 2>} : tensor<?x28x28x32xf32>, tensor<3x3x32x1xf32> -> tensor<?x14x14x32xf32>
    ```
  }];
  let arguments = (ins Est_FloatTensor:$input, Est_FloatTensor:$filter,
      DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$strides,
      DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$dilations,
      StrAttr:$padding);
  let results = (outs Est_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $filter attr-dict `:` type($input) `,` type($filter) `->`
    type($result)
  }];
}

def Est_DepthwiseConv2DBackpropInputOp
    : Est_InferOp<"depthwise_conv2d_backprop_input",
                  [Pure, SameOperandsAndResultElementType]> {
  let summary = "The gradient of depthwise_conv2d with respect to its input";
  let description = [{
    `result[n,ih,iw,c]` sums `grad_output[n,oh,ow,c*M+m] * filter[kh,kw,c,m]`
    over m and the output pixels and taps that read input pixel `(ih, iw)`
    (TF's DepthwiseConv2dNativeBackpropInput). The result is
    `[N, input_size[0], input_size[1], C]`.

    ```mlir
    %dx = est.depthwise_conv2d_backprop_input %dy, %w {input_size = array<i64: 28, 28>, padding = "SAME", strides = array<i64: 2, 2>} : tensor<?x14x14x32xf32>, tensor<3x3x32x1xf32> -> tensor<?x28x28x32xf32>
    ```
  }];
  let arguments = (ins Est_FloatTensor:$grad_output, Est_FloatTensor:$filter,
      DenseI64ArrayAttr:$input_size,
      DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$strides,
      DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$dilations,
      StrAttr:$padding);
  let results = (outs Est_FloatTensor:$result);
  let assemblyFormat = [{
    $grad_output `,` $filter attr-dict `:` type($grad_output) `,`
    type($filter) `->` type($result)
  }];
}

def Est_DepthwiseConv2DBackpropFilterOp
    : Est_InferOp<"depthwise_conv2d_backprop_filter",
                  [Pure, SameOperandsAndResultElementType]> {
  let summary = "The gradient of depthwise_conv2d with respect to its filter";
  let description = [{
    `result[kh,kw,c,m]` sums `input[n,ih,iw,c] * grad_output[n,oh,ow,c*M+m]`
    over the batch and the output pixels (TF's
    DepthwiseConv2dNativeBackpropFilter). The result is
    `[filter_size[0], filter_size[1], C, M]`, M = grad_output's channels / C.

    ```mlir
    %dw = est.depthwise_conv2d_backprop_filter %x, %dy {filter_size = array<i64: 3, 3>, padding = "SAME", strides = array<i64: 2, 2>} : tensor<?x28x28x32xf32>, tensor<?x14x14x32xf32> -> tensor<3x3x32x1xf32>
    ```
  }];
  let arguments = (ins Est_FloatTensor:$input, Est_FloatTensor:$grad_output,
      DenseI64ArrayAttr:$filter_size,
      DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$strides,
      DefaultValuedAttr<DenseI64ArrayAttr, "{1, 1}">:$dilations,
      StrAttr:$padding);
  let results = (outs Est_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $grad_output attr-dict `:` type($input) `,`
    type($grad_output) `->` type($result)
  }];
}

def Est_MaxPoolGradOp
    : Est_InferOp<"max_pool_grad", [Pure, SameOperandsAndResultElementType]> {
  let summary = "The gradient of max_pool";
  let description = [{
    Each window's `grad_output` goes to the first maximum of the window's
    `input` elements (row-major window order), as in TF's MaxPoolGrad; the
    windows are those of `max_pool` with the same attributes. The result has
    the input's shape.

    ```mlir
    %dx = est.max_pool_grad %x, %dy {ksize = array<i64: 2, 2>, padding = "VALID", strides = array<i64: 2, 2>} : tensor<?x28x28x32xf32>, tensor<?x14x14x32xf32> -> tensor<?x28x28x32xf32>
    ```
  }];
  let arguments = (ins Est_FloatTensor:$input, Est_FloatTensor:$grad_output,
                       DenseI64ArrayAttr:$ksize, DenseI64ArrayAttr:$strides,
                       StrAttr:$padding);
  let results = (outs Est_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $grad_output attr-dict `:` type($input) `,`
    type($grad_output) `->` type($result)
  }];
}

def Est_AvgPoolGradOp
    : Est_InferOp<"avg_pool_grad", [Pure, SameOperandsAndResultElementType]> {
  let summary = "The gradient of avg_pool";
  let description = [{
    Each window's `grad_output`, divided by the count of the window's valid
    (unpadded) input elements (TF's SAME divisor), is added to each of those
    elements, as in TF's AvgPoolGrad. The result is
    `[N, input_size[0], input_size[1], C]`.

    ```mlir
    %dx = est.avg_pool_grad %dy {input_size = array<i64: 5, 5>, ksize = array<i64: 3, 3>, padding = "SAME", strides = array<i64: 2, 2>} : tensor<?x3x3x8xf32> -> tensor<?x5x5x8xf32>
    ```
  }];
  let arguments = (ins Est_FloatTensor:$grad_output,
                       DenseI64ArrayAttr:$input_size,
                       DenseI64ArrayAttr:$ksize, DenseI64ArrayAttr:$strides,
                       StrAttr:$padding);
  let results = (outs Est_FloatTensor:$result);
  let assemblyFormat = [{
    $grad_output attr-dict `:` type($grad_output) `->` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Batch normalization
//===----------------------------------------------------------------------===//

def Est_FusedBatchNormOp : Est_InferOp<"fused_batch_norm", [Pure]> {
  let summary = "Training-mode batch normalization, fused";
  let description = [{
    Normalizes `x` per channel (dim `axis`) with the batch statistics over
    every other dim, then scales by `scale` and shifts by `offset` (both
    `[C]`):

      y = (x - mean) * rsqrt(variance + epsilon) * scale + offset

    with `variance` the biased batch variance (TF's FusedBatchNormV3,
    tf.compat.v1.nn.fused_batch_norm with is_training=True). The results:
    `y`, `batch_mean`, `batch_variance` (unbiased: times n / max(n - 1, 1),
    n the elements per channel, as TF returns it for the moving average)
    and `inv_std` (rsqrt(biased variance + epsilon), what the gradient
    reads). The lowering is one pass over `x` for the per-channel shifted
    sums and sums of squares (shifted by the channel's first element), one
    over the `[C]` statistics and one elementwise pass for `y`. The
    gradient of `y` is `est.fused_batch_norm_grad`; the other results get
    none (TF's neither).

    ```mlir
    %y, %mean, %var, %inv = est.fused_batch_norm %x, %scale, %offset {axis = 3 : i64, epsilon = 1.000000e-03 : f64} : tensor<?x8x8x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<?x8x8x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
    ```
  }];
  let arguments = (ins Est_FloatTensor:$x, Est_FloatTensor:$scale,
                       Est_FloatTensor:$offset,
                       DefaultValuedAttr<I64Attr, "-1">:$axis,
                       DefaultValuedAttr<F64Attr, "1e-3">:$epsilon);
  let results = (outs Est_FloatTensor:$y, Est_FloatTensor:$batch_mean,
                      Est_FloatTensor:$batch_variance,
                      Est_FloatTensor:$inv_std);
  let assemblyFormat = [{
    $x `,` $scale `,` $offset attr-dict `:` type($x) `,` type($scale) `,`
    type($offset) `->` type($y) `,` type($batch_mean) `,`
    type($batch_variance) `,` type($inv_std)
  }];
}

def Est_FusedBatchNormGradOp
    : Est_InferOp<"fused_batch_norm_grad", [Pure]> {
  let summary = "The gradients of est.fused_batch_norm, fused";
  let description = [{
    From the gradient `dy` of `y`, the forward op's `x`, `scale`,
    `batch_mean` and `inv_std` (and its `axis`): `dx` (of `x`'s shape),
    `dscale` = sum(dy * xhat) and `doffset` = sum(dy) (`[C]`), with
    xhat = (x - mean) * inv_std and

      dx = scale * inv_std * (dy - doffset / n - xhat * dscale / n)

    (TF's FusedBatchNormGradV3, is_training=True). Two passes over `x`:
    one reduction of both sums, one elementwise pass for `dx`.

    ```mlir
    %dx, %dscale, %doffset = est.fused_batch_norm_grad %dy, %x, %scale, %mean, %inv {axis = 3 : i64} : tensor<?x8x8x16xf32>, tensor<?x8x8x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<?x8x8x16xf32>, tensor<16xf32>, tensor<16xf32>
    ```
  }];
  let arguments = (ins Est_FloatTensor:$dy, Est_FloatTensor:$x,
                       Est_FloatTensor:$scale, Est_FloatTensor:$batch_mean,
                       Est_FloatTensor:$inv_std,
                       DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs Est_FloatTensor:$dx, Est_FloatTensor:$dscale,
                      Est_FloatTensor:$doffset);
  let assemblyFormat = [{
    $dy `,` $x `,` $scale `,` $batch_mean `,` $inv_std attr-dict `:`
    type($dy) `,` type($x) `,` type($scale) `,` type($batch_mean) `,`
    type($inv_std) `->` type($dx) `,` type($dscale) `,` type($doffset)
  }];
}
//===----------------------------------------------------------------------===//
// Reductions.
//===----------------------------------------------------------------------===//

class Est_ReduceOp<string mnemonic, string what>
    : Est_InferOp<mnemonic, [Pure, SameOperandsAndResultElementType]> {
  let summary = "Reduction by " # what # " over `axes`";
  let description = [{
    Reduces `axes` (all axes when absent) by }] # what # [{; `keep_dims`
    keeps them with size 1.

    ```mlir
    %s = est.}] # mnemonic # [{ %x {axes = array<i64: 1>} : tensor<?x10xf32> -> tensor<?xf32>
    ```
  }];
  let arguments = (ins Est_NumericTensor:$x,
                       OptionalAttr<DenseI64ArrayAttr>:$axes,
                       DefaultValuedAttr<BoolAttr, "false">:$keep_dims);
  let results = (outs Est_NumericTensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($result)";
  let hasFolder = 1;
}

def Est_ReduceSumOp : Est_ReduceOp<"reduce_sum", "sum">;
def Est_ReduceMeanOp : Est_ReduceOp<"reduce_mean", "mean">;
def Est_ReduceMaxOp : Est_ReduceOp<"reduce_max", "maximum">;
def Est_ReduceMinOp : Est_ReduceOp<"reduce_min", "minimum">;
def Est_ReduceProdOp : Est_ReduceOp<"reduce_prod", "product">;

class Est_ArgReduceOp<string mnemonic, string what>
    : Est_InferOp<mnemonic, [Pure]> {
  let summary = "Index of the " # what # " along `axis`";
  let description = [{
    ```mlir
    %i = est.}] # mnemonic # [{ %x {axis = 1 : i64} : tensor<?x10xf32> -> tensor<?xi64>
    ```
  }];
  let arguments = (ins Est_NumericTensor:$x, I64Attr:$axis,
      OptionalAttr<Est_IndexTypeAttr>:$output_type);
  let results = (outs Est_IndexTensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($result)";
}

def Est_ArgmaxOp : Est_ArgReduceOp<"argmax", "maximum">;
def Est_ArgminOp : Est_ArgReduceOp<"argmin", "minimum">;

/// tf.math.cumsum / cumprod: the running sum / product along `axis`.
class Est_CumulativeOp<string mnemonic, string what>
    : Est_InferOp<mnemonic, [Pure, SameOperandsAndResultElementType]> {
  let summary = "Running " # what # " along `axis` (tf.math." # mnemonic # ")";
  let description = [{
    `result[..., i, ...]` is the }] # what # [{ of `x[..., j, ...]` over
    `j <= i` along `axis` (`j < i` with `exclusive`, whose first element is
    the identity; `j >= i` / `j > i` with `reverse`). The result has `x`'s
    type.

    ```mlir
    %c = est.}] # mnemonic # [{ %x {axis = 1 : i64, exclusive = true} : tensor<?x10xf32>
    ```
  }];
  let arguments = (ins Est_NumericTensor:$x,
                       DefaultValuedAttr<I64Attr, "0">:$axis,
                       DefaultValuedAttr<BoolAttr, "false">:$exclusive,
                       DefaultValuedAttr<BoolAttr, "false">:$reverse);
  let results = (outs Est_NumericTensor:$result);
  let assemblyFormat = [{
    $x attr-dict `:` custom<UnaryTypes>(type($x), type($result))
  }];
}

def Est_CumsumOp : Est_CumulativeOp<"cumsum", "sum">;
def Est_CumprodOp : Est_CumulativeOp<"cumprod", "product">;

//===----------------------------------------------------------------------===//
// Shapes.
//===----------------------------------------------------------------------===//

class Est_ShapeOp<string mnemonic, list<Trait> traits = []>
    : Est_InferOp<mnemonic, traits # [Pure, SameOperandsAndResultElementType]> {
  let results = (outs Est_Tensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($result)";
}

def Est_ReshapeOp : Est_ShapeOp<"reshape"> {
  let summary = "Reshape to `shape` (one -1 allowed)";
  let description = [{
    ```mlir
    %y = est.reshape %x {shape = array<i64: -1, 784>} : tensor<?x28x28xf32> -> tensor<?x784xf32>
    ```
  }];
  let arguments = (ins Est_Tensor:$x, DenseI64ArrayAttr:$shape);
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Est_TransposeOp : Est_ShapeOp<"transpose"> {
  let summary = "Permutation of the dimensions";
  let description = [{
    Result dim `i` is input dim `perm[i]`.

    ```mlir
    %y = est.transpose %x {perm = array<i64: 1, 0>} : tensor<?x10xf32> -> tensor<10x?xf32>
    ```
  }];
  let arguments = (ins Est_Tensor:$x, DenseI64ArrayAttr:$perm);
  let hasFolder = 1;
  let hasCanonicalizer = 1;
}

def Est_ConcatOp : Est_InferOp<"concat", [Pure, SameOperandsAndResultElementType]> {
  let summary = "Concatenation along `axis`";
  let description = [{
    ```mlir
    %y = est.concat %a, %b {axis = 1 : i64} : (tensor<?x3xf32>, tensor<?x5xf32>) -> tensor<?x8xf32>
    ```
  }];
  let arguments = (ins Variadic<Est_Tensor>:$xs, I64Attr:$axis);
  let results = (outs Est_Tensor:$result);
  let assemblyFormat = [{
    $xs attr-dict `:` `(` type($xs) `)` `->` type($result)
  }];
}

def Est_SliceOp : Est_ShapeOp<"slice"> {
  let summary = "Static slice `x[begin : begin + size]`";
  let description = [{
    `size[i] = -1` takes dimension `i` to its end.

    ```mlir
    %y = est.slice %x {begin = array<i64: 0, 2>, size = array<i64: -1, 3>} : tensor<?x10xf32> -> tensor<?x3xf32>
    ```
  }];
  let arguments = (ins Est_Tensor:$x, DenseI64ArrayAttr:$begin,
                       DenseI64ArrayAttr:$size);
}

def Est_PadOp : Est_ShapeOp<"pad"> {
  let summary = "Constant padding";
  let description = [{
    `paddings = [lo0, hi0, lo1, hi1, ...]`, filled with `constant_value`.

    ```mlir
    %y = est.pad %x {paddings = array<i64: 0, 0, 1, 1>} : tensor<?x4xf32> -> tensor<?x6xf32>
    ```
  }];
  let arguments = (ins Est_Tensor:$x, DenseI64ArrayAttr:$paddings,
                       DefaultValuedAttr<F64Attr, "0.0">:$constant_value);
}

def Est_BroadcastToOp : Est_ShapeOp<"broadcast_to"> {
  let summary = "NumPy broadcast to `shape`";
  let description = [{
    ```mlir
    %y = est.broadcast_to %x {shape = array<i64: 4, 3>} : tensor<3xf32> -> tensor<4x3xf32>
    ```
  }];
  let arguments = (ins Est_Tensor:$x, DenseI64ArrayAttr:$shape);
  let hasFolder = 1;
}

def Est_SqueezeOp : Est_ShapeOp<"squeeze"> {
  let summary = "Removal of size-1 dimensions";
  let description = [{
    Removes `axes` (all size-1 dims when absent).

    ```mlir
    %y = est.squeeze %x {axes = array<i64: 1>} : tensor<?x1xf32> -> tensor<?xf32>
    ```
  }];
  let arguments = (ins Est_Tensor:$x, OptionalAttr<DenseI64ArrayAttr>:$axes);
  let hasCanonicalizer = 1;
}

def Est_ExpandDimsOp : Est_ShapeOp<"expand_dims"> {
  let summary = "Insertion of a size-1 dimension at `axis`";
  let description = [{
    ```mlir
    %y = est.expand_dims %x {axis = -1 : i64} : tensor<?xf32> -> tensor<?x1xf32>
    ```
  }];
  let arguments = (ins Est_Tensor:$x, I64Attr:$axis);
  let hasCanonicalizer = 1;
}

def Est_ReverseOp : Est_ShapeOp<"reverse"> {
  let summary = "tf.reverse: the order of `axes` reversed";
  let description = [{
    Element `i` along each axis in `axes` (distinct, may be negative) reads
    element `n - 1 - i`; the other axes are unchanged.

    ```mlir
    %y = est.reverse %x {axes = array<i64: 1>} : tensor<?x7xf32> -> tensor<?x7xf32>
    ```
  }];
  let arguments = (ins Est_Tensor:$x, DenseI64ArrayAttr:$axes);
}

def Est_ShapeOfOp : Est_InferOp<"shape", [Pure]> {
  let summary = "tf.shape: the dimensions of `x` as a rank-1 integer tensor";
  let description = [{
    A dimension known at run time only (the batch, a padded sequence's
    length) gives its run-time size; the op folds to a constant when `x`'s
    shape is static. `out_type` is i32 (the default, as TF) or i64.

    ```mlir
    %s = est.shape %x : tensor<?x7xf32> -> tensor<2xi32>
    ```
  }];
  let arguments = (ins Est_Tensor:$x,
                       OptionalAttr<Est_IndexTypeAttr>:$out_type);
  let results = (outs Est_IndexTensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($result)";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Indexing.
//===----------------------------------------------------------------------===//

def Est_GatherOp : Est_InferOp<"gather", [Pure]> {
  let summary = "Gather slices of `params` along `axis`";
  let description = [{
    Result shape: `params[:axis] + indices + params[axis+1:]`.

    ```mlir
    %e = est.gather %table, %ids : tensor<1000x64xf32>, tensor<?xi64> -> tensor<?x64xf32>
    ```
  }];
  let arguments = (ins Est_Tensor:$params, Est_IndexTensor:$indices,
                       DefaultValuedAttr<I64Attr, "0">:$axis);
  let results = (outs Est_Tensor:$result);
  let assemblyFormat = [{
    $params `,` $indices attr-dict `:` type($params) `,` type($indices) `->`
    type($result)
  }];
}

def Est_ScatterOp : Est_InferOp<"scatter", [Pure]> {
  let summary = "Rows of `ref` plus (or replaced by) `updates`, axis 0";
  let description = [{
    The transpose of `est.gather` on axis 0: `updates` has the shape
    `indices + ref[1:]`. `mode = "add"`: row `indices[i]` of the result is
    `ref[indices[i]]` plus every update with that index (duplicates summed);
    `mode = "update"`: the update (for duplicate indices the last one, in
    the order of `indices`, as TF's CPU kernel); `mode = "min"` / `"max"`:
    the minimum / maximum of the row and every update with its index.
    Out-of-range indices are clamped into [0, rows - 1], as est.gather does.
    Lowered to loops over the updates that insert into `ref`, so a scatter
    of a variable's value assigned back to it updates the variable's buffer
    in place: O(updates), not O(rows).

    ```mlir
    %t = est.scatter %table, %ids, %rows {mode = "add"} : tensor<1000x64xf32>, tensor<?xi64>, tensor<?x64xf32> -> tensor<1000x64xf32>
    ```
  }];
  let arguments = (ins Est_Tensor:$ref, Est_IndexTensor:$indices,
                       Est_Tensor:$updates,
                       DefaultValuedAttr<StrAttr, "\"add\"">:$mode);
  let results = (outs Est_Tensor:$result);
  let assemblyFormat = [{
    $ref `,` $indices `,` $updates attr-dict `:` type($ref) `,`
    type($indices) `,` type($updates) `->` type($result)
  }];
}

def Est_OneHotOp : Est_InferOp<"one_hot", [Pure]> {
  let summary = "One-hot encoding of integer indices";
  let description = [{
    Inserts a dimension of size `depth` at `axis`; `on_value` where the index
    matches, `off_value` elsewhere, as `dtype`.

    ```mlir
    %y = est.one_hot %labels {depth = 10 : i64} : tensor<?xi64> -> tensor<?x10xf32>
    ```
  }];
  let arguments = (ins Est_IndexTensor:$indices, I64Attr:$depth,
      DefaultValuedAttr<F64Attr, "1.0">:$on_value,
      DefaultValuedAttr<F64Attr, "0.0">:$off_value,
      DefaultValuedAttr<I64Attr, "-1">:$axis,
      OptionalAttr<Est_ElementTypeAttr>:$dtype);
  let results = (outs Est_Tensor:$result);
  let assemblyFormat = "$indices attr-dict `:` type($indices) `->` type($result)";
}

def Est_SequenceMaskOp : Est_InferOp<"sequence_mask", [Pure]> {
  let summary = "tf.sequence_mask: which positions of each sequence are valid";
  let description = [{
    `result[i..., j] = j < lengths[i...]`: a new last dimension whose size
    is dimension `axis` of `maxlen_like` (the padded batch's run-time
    length) or, without it, the attribute `maxlen`.

    ```mlir
    %m = est.sequence_mask %len, %x {axis = 1 : i64} : tensor<?xi32>, tensor<?x?x8xf32> -> tensor<?x?xi1>
    %m = est.sequence_mask %len {maxlen = 5 : i64} : tensor<?xi32> -> tensor<?x5xi1>
    ```
  }];
  let arguments = (ins Est_IndexTensor:$lengths,
                       Optional<Est_Tensor>:$maxlen_like,
                       DefaultValuedAttr<I64Attr, "1">:$axis,
                       DefaultValuedAttr<I64Attr, "-1">:$maxlen);
  let results = (outs Est_BoolTensor:$result);
  let assemblyFormat = [{
    $lengths (`,` $maxlen_like^)? attr-dict `:` type($lengths)
    (`,` type($maxlen_like)^)? `->` type($result)
  }];
}

def Est_ReverseSequenceOp : Est_InferOp<"reverse_sequence", [Pure]> {
  let summary = "tf.reverse_sequence: reverses each sequence's valid prefix";
  let description = [{
    For each `b` along `batch_axis`, the first `lengths[b]` elements along
    `seq_axis` are reversed and the rest (padding) stays in place. A length
    past the sequence dimension is clamped to it (TF reports an error).

    ```mlir
    %r = est.reverse_sequence %x, %len {seq_axis = 1 : i64, batch_axis = 0 : i64} : tensor<?x?x8xf32>, tensor<?xi64> -> tensor<?x?x8xf32>
    ```
  }];
  let arguments = (ins Est_Tensor:$input, Est_IndexTensor:$lengths,
                       I64Attr:$seq_axis,
                       DefaultValuedAttr<I64Attr, "0">:$batch_axis);
  let results = (outs Est_Tensor:$result);
  let assemblyFormat = [{
    $input `,` $lengths attr-dict `:` type($input) `,` type($lengths) `->`
    type($result)
  }];
}

def Est_UnsortedSegmentSumOp
    : Est_InferOp<"unsorted_segment_sum", [Pure]> {
  let summary = "Sums of `data`'s rows per segment (tf.math.unsorted_segment_sum)";
  let description = [{
    `data [N, ...]`, `segment_ids [N]` and `num_segments_like [B, ...]` ->
    `[B] + data[1:]`: row `s` of the result is the sum of the rows `i` of
    `data` with `segment_ids[i] == s`, added in order of `i` (deterministic);
    a segment without rows is zero. `B`, TF's `num_segments`, is dim 0 of
    the third operand (only its shape is used, so it may be a run-time size
    such as the batch). An id outside `[0, B)` is dropped (TF's CPU kernel
    fails on one; here `B` may be known at run time only, and the ids come
    from the host's feature transformation).

    ```mlir
    %s = est.unsorted_segment_sum %rows, %row_ids, %row_lengths : tensor<?x8xf32>, tensor<?xi64>, tensor<?xi64> -> tensor<?x8xf32>
    ```
  }];
  let arguments = (ins Est_NumericTensor:$data, Est_IndexTensor:$segment_ids,
                       Est_Tensor:$num_segments_like);
  let results = (outs Est_NumericTensor:$result);
  let assemblyFormat = [{
    $data `,` $segment_ids `,` $num_segments_like attr-dict `:` type($data)
    `,` type($segment_ids) `,` type($num_segments_like) `->` type($result)
  }];
}

def Est_BucketizeOp : Est_InferOp<"bucketize", [Pure]> {
  let summary = "Bucket index of each element (tf.raw_ops.Bucketize)";
  let description = [{
    Each element `x` becomes the number of `boundaries` `b` with `!(x < b)`
    (for numbers, the number of boundaries `<= x`; NaN counts them all, as
    TF's `upper_bound`), as an `i64` (TF: int32) of `x`'s shape.
    `boundaries` must be sorted ascending (ties allowed) and not NaN; as in
    TF, whose attribute is `list(float)`, each is rounded to f32 and an `x`
    that is not f64 is compared as f32 (f64 `x` as f64). An empty list puts
    every element in bucket 0. Not differentiable (an integer result).

    ```mlir
    %b = est.bucketize %age {boundaries = array<f64: 18.0, 25.0, 30.0>} : tensor<?x1xf32> -> tensor<?x1xi64>
    ```
  }];
  let arguments = (ins Est_NumericTensor:$x, DenseF64ArrayAttr:$boundaries);
  let results = (outs Est_IndexTensor:$result);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Sorting.
//===----------------------------------------------------------------------===//

def Est_ArgsortOp : Est_InferOp<"argsort", [Pure]> {
  let summary = "Indices that sort `x` along `axis` (tf.argsort, top_k's)";
  let description = [{
    The positions along `axis` of the elements of each slice in sorted order,
    `direction` "ASCENDING" or "DESCENDING", as `i32`; ties keep their index
    order (stable, as TF's argsort and top_k). NaN ranks above +inf (last
    ascending, first descending); -0.0 and 0.0 are equal. With `k` >= 0 only
    the first `k` of the order are produced (top_k's indices: DESCENDING
    with k); `k` = -1 is the whole axis. Not differentiable (an integer
    result): sort and top_k take their values with est.take_along_axis.

    ```mlir
    %i = est.argsort %x {direction = "DESCENDING", k = 3 : i64} : tensor<?x10xf32> -> tensor<?x3xi32>
    ```
  }];
  let arguments = (ins Est_NumericTensor:$x,
                       DefaultValuedAttr<I64Attr, "-1">:$axis,
                       DefaultValuedAttr<StrAttr, "\"ASCENDING\"">:$direction,
                       DefaultValuedAttr<I64Attr, "-1">:$k);
  let results = (outs RankedTensorOf<[I32]>:$result);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($result)";
}

def Est_TakeAlongAxisOp : Est_InferOp<"take_along_axis", [Pure]> {
  let summary = "Elements of `arr` picked along `axis` (np.take_along_axis)";
  let description = [{
    `result[..., j, ...] = arr[..., indices[..., j, ...], ...]` with `j`
    along `axis`: `indices` has `arr`'s shape except along `axis` (no
    broadcasting); the result has the indices' shape and arr's element type.
    tf.gather(arr, indices, batch_dims = rank - 1) for the last axis. An
    index outside [0, the axis size) is clamped into it, as est.gather's.

    ```mlir
    %v = est.take_along_axis %x, %i {axis = 1 : i64} : tensor<?x10xf32>, tensor<?x3xi32> -> tensor<?x3xf32>
    ```
  }];
  let arguments = (ins Est_Tensor:$arr, Est_IndexTensor:$indices,
                       DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs Est_Tensor:$result);
  let assemblyFormat = [{
    $arr `,` $indices attr-dict `:` type($arr) `,` type($indices) `->`
    type($result)
  }];
}

def Est_ScatterAlongAxisOp : Est_InferOp<"scatter_along_axis", [Pure]> {
  let summary = "`ref` plus `updates` added along `axis` (take_along_axis's transpose)";
  let description = [{
    `result = ref`, then `result[..., indices[..., j, ...], ...] +=
    updates[..., j, ...]` for every `j` along `axis`, in order (duplicates
    summed): the gradient of est.take_along_axis. `indices` and `updates`
    have one shape, `ref`'s except along `axis`. Indices are clamped as
    take_along_axis clamps them.

    ```mlir
    %g = est.scatter_along_axis %zeros, %i, %dv {axis = 1 : i64} : tensor<?x10xf32>, tensor<?x3xi32>, tensor<?x3xf32> -> tensor<?x10xf32>
    ```
  }];
  let arguments = (ins Est_NumericTensor:$ref, Est_IndexTensor:$indices,
                       Est_NumericTensor:$updates,
                       DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs Est_NumericTensor:$result);
  let assemblyFormat = [{
    $ref `,` $indices `,` $updates attr-dict `:` type($ref) `,`
    type($indices) `,` type($updates) `->` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Images.
//===----------------------------------------------------------------------===//

def Est_ResizeImagesOp
    : Est_InferOp<"resize_images", [Pure, SameOperandsAndResultElementType]> {
  let summary = "Resizing of NHWC images (tf.image.resize, bilinear or nearest)";
  let description = [{
    `[N, H, W, C] -> [N, size[0], size[1], C]` (static H and W), TF's
    ResizeBilinear / ResizeNearestNeighbor: `method` "bilinear" (float
    images) or "nearest"; output pixel `o` samples input coordinate
    `(o + 0.5) * scale - 0.5` with `half_pixel_centers` (TF2's
    tf.image.resize), `o * scale` without, `scale = in / out`, or
    `(in - 1) / (out - 1)` with `align_corners`. The coordinates are computed
    in f32, as TF computes them, so nearest picks TF's pixels.

    ```mlir
    %y = est.resize_images %x {size = array<i64: 8, 6>} : tensor<?x4x3x3xf32> -> tensor<?x8x6x3xf32>
    ```
  }];
  let arguments = (ins Est_NumericTensor:$images, DenseI64ArrayAttr:$size,
      DefaultValuedAttr<StrAttr, "\"bilinear\"">:$method,
      DefaultValuedAttr<BoolAttr, "false">:$align_corners,
      DefaultValuedAttr<BoolAttr, "true">:$half_pixel_centers);
  let results = (outs Est_NumericTensor:$result);
  let assemblyFormat = "$images attr-dict `:` type($images) `->` type($result)";
}

def Est_ResizeImagesGradOp
    : Est_InferOp<"resize_images_grad",
                  [Pure, SameOperandsAndResultElementType]> {
  let summary = "The gradient of resize_images with respect to its images";
  let description = [{
    Each output pixel's `grad_output` added to the input pixels that
    resize_images of the same attributes read for it, with its weights
    (TF's ResizeBilinearGrad / ResizeNearestNeighborGrad). The result is
    `[N, input_size[0], input_size[1], C]`.

    ```mlir
    %dx = est.resize_images_grad %dy {input_size = array<i64: 4, 3>} : tensor<?x8x6x3xf32> -> tensor<?x4x3x3xf32>
    ```
  }];
  let arguments = (ins Est_FloatTensor:$grad_output,
      DenseI64ArrayAttr:$input_size,
      DefaultValuedAttr<StrAttr, "\"bilinear\"">:$method,
      DefaultValuedAttr<BoolAttr, "false">:$align_corners,
      DefaultValuedAttr<BoolAttr, "true">:$half_pixel_centers);
  let results = (outs Est_FloatTensor:$result);
  let assemblyFormat = [{
    $grad_output attr-dict `:` type($grad_output) `->` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Neural-network ops and losses.
//===----------------------------------------------------------------------===//

class Est_SoftmaxBase<string mnemonic, string what>
    : Est_InferOp<mnemonic, [Pure, SameOperandsAndResultElementType]> {
  let summary = what # " along `axis`";
  let description = [{
    ```mlir
    %p = est.}] # mnemonic # [{ %logits : tensor<?x10xf32>
    ```
  }];
  let arguments = (ins Est_FloatTensor:$logits,
                       DefaultValuedAttr<I64Attr, "-1">:$axis);
  let results = (outs Est_FloatTensor:$result);
  let assemblyFormat = [{
    $logits attr-dict `:` custom<UnaryTypes>(type($logits), type($result))
  }];
}

def Est_SoftmaxOp : Est_SoftmaxBase<"softmax", "Softmax">;
def Est_LogSoftmaxOp : Est_SoftmaxBase<"log_softmax", "Log-softmax">;

def Est_LayerNormOp : Est_InferOp<"layer_norm", [Pure]> {
  let summary = "Layer normalization over the trailing axes, fused";
  let description = [{
    `x` is normalized over its dimensions `[begin_norm_axis, rank)` (the
    mean and biased variance of each row over them), then scaled by `gamma`
    and shifted by `beta`, both of shape `x.shape[begin_params_axis:]`
    (`begin_params_axis >= begin_norm_axis`; they broadcast over the other
    normalized dims):

      y = (x - mean) * rsqrt(variance + epsilon) * gamma + beta

    (tf.keras.layers.LayerNormalization, tf.contrib.layers.layer_norm).
    Negative axes count from the end. The lowering is one loop nest per row
    of two passes over it (statistics, then the normalized row); the
    gradient is `est.layer_norm_grad`.

    ```mlir
    %y = est.layer_norm %x, %gamma, %beta {begin_norm_axis = -1 : i64, begin_params_axis = -1 : i64, epsilon = 1.000000e-03 : f64} : tensor<?x16xf32>, tensor<16xf32>, tensor<16xf32> -> tensor<?x16xf32>
    ```
  }];
  let arguments = (ins Est_FloatTensor:$x, Est_FloatTensor:$gamma,
                       Est_FloatTensor:$beta,
                       DefaultValuedAttr<I64Attr, "-1">:$begin_norm_axis,
                       DefaultValuedAttr<I64Attr, "-1">:$begin_params_axis,
                       DefaultValuedAttr<F64Attr, "1e-3">:$epsilon);
  let results = (outs Est_FloatTensor:$result);
  let assemblyFormat = [{
    $x `,` $gamma `,` $beta attr-dict `:` type($x) `,` type($gamma) `,`
    type($beta) `->` type($result)
  }];
}

def Est_LayerNormGradOp : Est_InferOp<"layer_norm_grad", [Pure]> {
  let summary = "The gradients of est.layer_norm, fused";
  let description = [{
    From `est.layer_norm`'s input `x`, its `gamma` and the gradient `dy` of
    its result (the attributes of the forward op): `dx` (of `x`'s shape),
    `dgamma` and `dbeta` (of `gamma`'s shape). The statistics are
    recomputed; `dx` is one loop nest per row (two passes over it),
    `dgamma` and `dbeta` one reduction over the rows.

    ```mlir
    %dx, %dgamma, %dbeta = est.layer_norm_grad %x, %gamma, %dy {begin_norm_axis = -1 : i64, begin_params_axis = -1 : i64, epsilon = 1.000000e-03 : f64} : tensor<?x16xf32>, tensor<16xf32>, tensor<?x16xf32> -> tensor<?x16xf32>, tensor<16xf32>, tensor<16xf32>
    ```
  }];
  let arguments = (ins Est_FloatTensor:$x, Est_FloatTensor:$gamma,
                       Est_FloatTensor:$dy,
                       DefaultValuedAttr<I64Attr, "-1">:$begin_norm_axis,
                       DefaultValuedAttr<I64Attr, "-1">:$begin_params_axis,
                       DefaultValuedAttr<F64Attr, "1e-3">:$epsilon);
  let results = (outs Est_FloatTensor:$dx, Est_FloatTensor:$dgamma,
                      Est_FloatTensor:$dbeta);
  let assemblyFormat = [{
    $x `,` $gamma `,` $dy attr-dict `:` type($x) `,` type($gamma) `,`
    type($dy) `->` type($dx) `,` type($dgamma) `,` type($dbeta)
  }];
}

def Est_AttentionSoftmaxOp : Est_InferOp<"attention_softmax", [Pure]> {
  let summary = "softmax(scale * logits + mask bias) along the last axis, fused";
  let description = [{
    Attention weights: `logits` `[..., T, S]` (rank >= 2) times `scale`,
    plus the mask's bias, then softmax over `S`. The optional `mask` has
    `logits`' rank, each dim 1 (broadcast, e.g. over the heads) or
    `logits`' dim: a boolean mask (true = attend) adds -1e9 where false
    (Keras's Softmax and MultiHeadAttention; f16: its lowest value), a
    float mask is added as it is. `causal` masks `s > t` the same way
    (Keras's `use_causal_mask`). The lowering is one loop nest per row of
    two passes over it (running max and sum of exponentials, then the
    normalized row); the gradient is `est.attention_softmax_grad`.

    ```mlir
    %p = est.attention_softmax %logits, %mask {scale = 0.125 : f64, causal = true} : tensor<?x4x8x8xf32>, tensor<?x1x8x8xi1> -> tensor<?x4x8x8xf32>
    ```
  }];
  let arguments = (ins Est_FloatTensor:$logits, Optional<Est_Tensor>:$mask,
                       DefaultValuedAttr<F64Attr, "1.0">:$scale,
                       DefaultValuedAttr<BoolAttr, "false">:$causal);
  let results = (outs Est_FloatTensor:$result);
  let assemblyFormat = [{
    $logits (`,` $mask^)? attr-dict `:` type($logits) (`,` type($mask)^)?
    `->` type($result)
  }];
}

def Est_AttentionSoftmaxGradOp
    : Est_InferOp<"attention_softmax_grad", [Pure, SameOperandsAndResultElementType]> {
  let summary = "The gradient of est.attention_softmax, fused";
  let description = [{
    From the softmax `y` and the gradient `dy` of it (one shape), the
    gradient of the logits: `scale * y * (dy - sum(dy * y))` with the sum
    over the last axis, one loop nest per row of two passes.

    ```mlir
    %dl = est.attention_softmax_grad %y, %dy {scale = 0.125 : f64} : tensor<?x4x8x8xf32>, tensor<?x4x8x8xf32> -> tensor<?x4x8x8xf32>
    ```
  }];
  let arguments = (ins Est_FloatTensor:$y, Est_FloatTensor:$dy,
                       DefaultValuedAttr<F64Attr, "1.0">:$scale);
  let results = (outs Est_FloatTensor:$result);
  let assemblyFormat = [{
    $y `,` $dy attr-dict `:` type($y) `,` type($dy) `->` type($result)
  }];
}

def Est_SoftmaxCrossEntropyOp
    : Est_InferOp<"softmax_cross_entropy", [Pure, SameOperandsAndResultElementType]> {
  let summary = "Per-example softmax cross entropy with dense labels";
  let description = [{
    logits `[..., C]` and float labels `[..., C]` -> loss `[...]`.

    ```mlir
    %l = est.softmax_cross_entropy %logits, %labels : tensor<?x10xf32>, tensor<?x10xf32> -> tensor<?xf32>
    ```
  }];
  let arguments = (ins Est_FloatTensor:$logits, Est_FloatTensor:$labels);
  let results = (outs Est_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels attr-dict `:` type($logits) `,` type($labels) `->`
    type($result)
  }];
}

def Est_SparseSoftmaxCrossEntropyOp
    : Est_InferOp<"sparse_softmax_cross_entropy", [Pure]> {
  let summary = "Per-example softmax cross entropy with class-index labels";
  let description = [{
    logits `[..., C]` and integer labels `[...]` -> loss `[...]`.

    ```mlir
    %l = est.sparse_softmax_cross_entropy %logits, %labels : tensor<?x10xf32>, tensor<?xi64> -> tensor<?xf32>
    ```
  }];
  let arguments = (ins Est_FloatTensor:$logits, Est_IndexTensor:$labels);
  let results = (outs Est_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels attr-dict `:` type($logits) `,` type($labels) `->`
    type($result)
  }];
}

def Est_SigmoidCrossEntropyOp
    : Est_InferOp<"sigmoid_cross_entropy", [Pure, SameOperandsAndResultElementType]> {
  let summary = "Elementwise sigmoid cross entropy";
  let description = [{
    logits and float labels of the same shape -> loss of logits' type.

    ```mlir
    %l = est.sigmoid_cross_entropy %logits, %labels : tensor<?x1xf32>, tensor<?x1xf32> -> tensor<?x1xf32>
    ```
  }];
  let arguments = (ins Est_FloatTensor:$logits, Est_FloatTensor:$labels);
  let results = (outs Est_FloatTensor:$result);
  let assemblyFormat = [{
    $logits `,` $labels attr-dict `:` type($logits) `,` type($labels) `->`
    type($result)
  }];
}

def Est_StopGradientOp
    : Est_InferOp<"stop_gradient", [Pure, SameOperandsAndResultElementType]> {
  let summary = "Identity that blocks gradients";
  let description = [{
    Forwards `x`; autodiff treats the result as a constant. Never folded away:
    the training pass needs to see it.

    ```mlir
    %y = est.stop_gradient %x : tensor<?x10xf32>
    ```
  }];
  let arguments = (ins Est_Tensor:$x);
  let results = (outs Est_Tensor:$result);
  let assemblyFormat = [{
    $x attr-dict `:` custom<UnaryTypes>(type($x), type($result))
  }];
}

def Est_CheckRangeOp
    : Est_InferOp<"check_range", [MemoryEffects<[MemWrite]>]> {
  let summary = "Run-time check that every element is in [lower, upper)";
  let description = [{
    Forwards `input` when every element `v` has `lower <= v < upper`. When
    one does not, the step stops before any variable is updated and the
    runtime raises one error naming the op's node, `what` ("label", "id",
    ...), the first offending value and its position:
    `node 'loss' : label 3 at batch row 17 is outside [0, 3)`.

    `est-insert-runtime-checks` adds these on the labels of
    `est.sparse_softmax_cross_entropy` and the indices of `est.gather` and
    `est.scatter`, moves every check to right after the definition of its
    input (before any variable update of the step), and numbers them
    (`check`, an index into the module's `estc.runtime_checks` table). The
    memory effect keeps the check from being erased, merged or moved.

    ```mlir
    %l = est.check_range %labels {lower = 0 : i64, upper = 3 : i64, what = "label"} : tensor<?xi64>
    ```
  }];
  let arguments = (ins Est_IndexTensor:$input, I64Attr:$lower, I64Attr:$upper,
                       StrAttr:$what, OptionalAttr<I64Attr>:$check);
  let results = (outs Est_IndexTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Est_CheckFailIfOp : Est_Op<"check_fail_if", [MemoryEffects<[MemWrite]>]> {
  let summary = "Ends the step with run-time check `check` failed";
  let description = [{
    What `est.check_range` lowers to, on scalars so that it passes through
    bufferization and the loop passes unchanged: when `failed` is true, the
    function records (`check`, `position`, `value`) in its status slot (at
    byte `estc.status_offset` of the arena, placed by est-memory-planning)
    and returns at once. `est-lower-runtime-checks` expands it into that
    branch, stores and `func.return` once the function body is in
    `cf` form. `position` is the flat (row-major) index of the offending
    element, `value` its value.

    ```mlir
    est.check_fail_if %failed, %position, %value {check = 0 : i64}
    ```
  }];
  let arguments = (ins I1:$failed, I64:$position, I64:$value, I64Attr:$check);
  let assemblyFormat = "$failed `,` $position `,` $value attr-dict";
}

class Est_FillLikeOp<string mnemonic, string value>
    : Est_InferOp<mnemonic, [Pure, SameOperandsAndResultElementType]> {
  let summary = "A tensor of " # value # "s shaped like `x`";
  let description = [{
    The result has `x`'s type and every element is }] # value # [{ (`true`
    for `i1`). Only `x`'s shape is used, so this works for a batch size known
    at run time only; it folds to a constant when the shape is static.

    ```mlir
    %c = est.}] # mnemonic # [{ %x : tensor<?x10xf32>
    ```
  }];
  let arguments = (ins Est_Tensor:$x);
  let results = (outs Est_Tensor:$result);
  let assemblyFormat = [{
    $x attr-dict `:` custom<UnaryTypes>(type($x), type($result))
  }];
  let hasFolder = 1;
}

def Est_ZerosLikeOp : Est_FillLikeOp<"zeros_like", "zero">;
def Est_OnesLikeOp : Est_FillLikeOp<"ones_like", "one">;

//===----------------------------------------------------------------------===//
// Randomness (counter-based, hence pure).
//===----------------------------------------------------------------------===//

def Est_DropoutOp : Est_InferOp<"dropout", [Pure]> {
  let summary = "Counter-based dropout";
  let description = [{
    Zeroes each element with probability `rate` and scales the others by
    `1 / (1 - rate)`. The mask is a pure function of (`seed`, `counter`,
    element index), so two identical dropouts may be merged.

    ```mlir
    %y = est.dropout %x, %step {rate = 5.000000e-01 : f64, seed = 3 : i64} : tensor<?x256xf32>, tensor<i64> -> tensor<?x256xf32>
    ```
  }];
  let arguments = (ins Est_FloatTensor:$x, Est_CounterTensor:$counter,
                       F64Attr:$rate, I64Attr:$seed);
  let results = (outs Est_FloatTensor:$result);
  let assemblyFormat = [{
    $x `,` $counter attr-dict `:` type($x) `,` type($counter) `->`
    type($result)
  }];
}

def Est_RandomUniformOp : Est_InferOp<"random_uniform", [Pure]> {
  let summary = "Counter-based uniform random tensor";
  let description = [{
    A tensor of `shape` and float `dtype` uniform in [`minval`, `maxval`), a
    pure function of (`seed`, `counter`, element index).

    ```mlir
    %r = est.random_uniform %step {seed = 1 : i64, shape = array<i64: 2, 3>} : tensor<i64> -> tensor<2x3xf32>
    ```
  }];
  let arguments = (ins Est_CounterTensor:$counter, DenseI64ArrayAttr:$shape,
      OptionalAttr<Est_ElementTypeAttr>:$dtype,
      I64Attr:$seed,
      DefaultValuedAttr<F64Attr, "0.0">:$minval,
      DefaultValuedAttr<F64Attr, "1.0">:$maxval);
  let results = (outs Est_FloatTensor:$result);
  let assemblyFormat = "$counter attr-dict `:` type($counter) `->` type($result)";
}

class Est_NormalOp<string mnemonic, string what>
    : Est_InferOp<mnemonic, [Pure]> {
  let summary = "Counter-based " # what # " random tensor";
  let description = [{
    A tensor of `shape` and float `dtype` drawn from a }] # what # [{
    distribution of `mean` and `stddev`, a pure function of (`seed`,
    `counter`, element index).

    ```mlir
    %r = est.}] # mnemonic # [{ %step {seed = 1 : i64, shape = array<i64: 2, 3>, stddev = 1.000000e-01 : f64} : tensor<i64> -> tensor<2x3xf32>
    ```
  }];
  let arguments = (ins Est_CounterTensor:$counter, DenseI64ArrayAttr:$shape,
      OptionalAttr<Est_ElementTypeAttr>:$dtype,
      I64Attr:$seed,
      DefaultValuedAttr<F64Attr, "0.0">:$mean,
      DefaultValuedAttr<F64Attr, "1.0">:$stddev);
  let results = (outs Est_FloatTensor:$result);
  let assemblyFormat = "$counter attr-dict `:` type($counter) `->` type($result)";
}

def Est_RandomNormalOp : Est_NormalOp<"random_normal", "normal">;
def Est_TruncatedNormalOp
    : Est_NormalOp<"truncated_normal", "truncated normal">;

//===----------------------------------------------------------------------===//
// State.
//===----------------------------------------------------------------------===//

def Est_VariableOp : Est_Op<"variable", [Symbol]> {
  let summary = "A module-level variable";
  let description = [{
    Declares a variable of a statically shaped tensor type. `trainable`
    variables are updated by `est.minimize` (unless its `var_list` says
    otherwise). `local` variables are TF's LOCAL_VARIABLES (metric state):
    never trainable, zeros-initialized, not checkpointed, and reset to zeros
    by the runtime at the start of every evaluation.

    ```mlir
    est.variable @"dense/kernel" : tensor<784x256xf32> {initializer = #est.init<"glorot_uniform", {seed = 7 : i64}>, trainable}
    est.variable @"accuracy/total" : tensor<f32> {initializer = #est.init<"zeros">, local}
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<Est_Tensor>:$type,
                       UnitAttr:$trainable,
                       OptionalAttr<Est_InitializerAttr>:$initializer,
                       UnitAttr:$local);
  let assemblyFormat = "$sym_name `:` $type attr-dict";
  let hasVerifier = 1;
}

def Est_ReadVariableOp : Est_Op<"read_variable", [
    MemoryEffects<[MemRead<Est_VariableResource>]>,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Current value of a variable";
  let description = [{
    The result type is the variable's type. (This is the one value-producing
    op without type inference: the type comes from the symbol, which an
    op-local inference cannot see.)

    ```mlir
    %k = est.read_variable @"dense/kernel" : tensor<784x256xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$variable);
  let results = (outs Est_Tensor:$result);
  let assemblyFormat = "$variable attr-dict `:` type($result)";
}

def Est_AssignVariableOp : Est_Op<"assign_variable", [
    InferTypeOpAdaptor, MemoryEffects<[MemWrite<Est_VariableResource>]>,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Overwrites a variable";
  let description = [{
    ```mlir
    est.assign_variable @"total", %v : tensor<f32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$variable, Est_Tensor:$value);
  let assemblyFormat = "$variable `,` $value attr-dict `:` type($value)";
}

def Est_MinimizeOp : Est_Op<"minimize", [
    InferTypeOpAdaptor, MemoryEffects<[MemRead<Est_VariableResource>,
                   MemWrite<Est_VariableResource>]>,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "The train op: one optimizer step on a scalar loss";
  let description = [{
    Updates `var_list` (all trainable variables when absent) with
    `optimizer` (sgd, momentum, adagrad, adam, rmsprop, ftrl) and its
    `hyperparameters`. The training pass expands it into gradients and
    update ops. The optional `learning_rate` operand (a float scalar computed
    in the step, e.g. a schedule of global_step) replaces the
    `learning_rate` hyperparameter. The hyperparameter
    `clip_gradients_by_global_norm` scales all gradients by
    `clip / max(global_norm, clip)` first (tf.clip_by_global_norm).

    ```mlir
    est.minimize %loss optimizer "adam" {learning_rate = 2.000000e-03 : f64} : tensor<f32>
    est.minimize %loss optimizer "sgd" {learning_rate = 1.000000e-01 : f64} var_list [@w, @b] : tensor<f32>
    est.minimize %loss learning_rate %lr : tensor<f32> optimizer "sgd" {} : tensor<f32>
    ```
  }];
  let arguments = (ins 0DTensorOf<[F16, BF16, F32, F64]>:$loss,
                       Optional<0DTensorOf<[F16, BF16, F32, F64]>>:$learning_rate,
                       StrAttr:$optimizer,
                       DictionaryAttr:$hyperparameters,
                       OptionalAttr<FlatSymbolRefArrayAttr>:$var_list);
  let assemblyFormat = [{
    $loss (`learning_rate` $learning_rate^ `:` type($learning_rate))?
    `optimizer` $optimizer $hyperparameters (`var_list` $var_list^)?
    attr-dict `:` type($loss)
  }];
  let hasVerifier = 1;
}

def Est_ApplyGradientsOp : Est_Op<"apply_gradients", [
    AttrSizedOperandSegments,
    MemoryEffects<[MemRead<Est_VariableResource>,
                   MemWrite<Est_VariableResource>]>]> {
  let summary = "One optimizer step from computed gradients";
  let description = [{
    What `est-autodiff` leaves of an `est.minimize`: the gradient of the loss
    for each of `variables` (same order, the variable's type), and the
    optimizer. `est-expand-optimizers` expands it into slot variables,
    `est.assign_variable`s and the `global_step` increment. `learning_rate`
    as for `est.minimize`. `sparse_variables` get their gradient as rows:
    `sparse_values[i]` (shape `[n] + var[1:]`) at rows `sparse_indices[i]`
    (shape `[n]`; duplicates sum) — what a gather of the variable on axis 0
    gives; sgd, adagrad and ftrl update only those rows. `global_step` is
    incremented once per function (however many apply_gradients it holds)
    unless every one has `keep_global_step = true` (tf.train.Optimizer's
    apply_gradients without a global_step).

    ```mlir
    est.apply_gradients "sgd" {learning_rate = 1.000000e-01 : f64} [@w, @b] %gw, %gb : tensor<4x3xf32>, tensor<3xf32>
    est.apply_gradients "sgd" {} [@w] %gw : tensor<4x3xf32> learning_rate %lr : tensor<f32>
    est.apply_gradients "adagrad" {learning_rate = 1.000000e-01 : f64} [] sparse [@emb] indices(%ids : tensor<?xi64>) values(%rows : tensor<?x16xf32>)
    ```
  }];
  let arguments = (ins StrAttr:$optimizer, DictionaryAttr:$hyperparameters,
                       FlatSymbolRefArrayAttr:$variables,
                       Variadic<Est_FloatTensor>:$gradients,
                       Optional<0DTensorOf<[F16, BF16, F32, F64]>>:$learning_rate,
                       OptionalAttr<FlatSymbolRefArrayAttr>:$sparse_variables,
                       Variadic<Est_IndexTensor>:$sparse_indices,
                       Variadic<Est_FloatTensor>:$sparse_values,
                       OptionalAttr<BoolAttr>:$keep_global_step);
  let assemblyFormat = [{
    $optimizer $hyperparameters $variables ($gradients^ `:` type($gradients))?
    (`learning_rate` $learning_rate^ `:` type($learning_rate))?
    (`sparse` $sparse_variables^ `indices` `(` $sparse_indices `:`
     type($sparse_indices) `)` `values` `(` $sparse_values `:`
     type($sparse_values) `)`)?
    attr-dict
  }];
  let hasVerifier = 1;
}

def Est_GradientOp : Est_InferOp<"gradient", [Pure]> {
  let summary = "The gradient of a float scalar with respect to a value";
  let description = [{
    d`y`/d`x` (tf.gradients), of `x`'s type: `x` held as the only input
    that varies, every path from `x` to `y` summed. When `x` is a read of a
    variable, the gradient is with respect to the variable (the sum over
    its reads). `est-autodiff` replaces it with the backward ops, built at
    its place (the gradients of one `y` in one sweep); zeros when `y` does
    not depend on `x`. A gather of a variable is differentiated densely
    here (its gradient scattered into zeros of the variable's shape).

    ```mlir
    %g = est.gradient %loss wrt %w : tensor<f32>, tensor<4x3xf32>
    ```
  }];
  let arguments = (ins 0DTensorOf<[F16, BF16, F32, F64]>:$y,
                       Est_FloatTensor:$x);
  let results = (outs Est_FloatTensor:$result);
  let assemblyFormat = [{
    $y `wrt` $x attr-dict `:` type($y) `,` type($x)
  }];
}

//===----------------------------------------------------------------------===//
// Collectives of data-parallel training (docs/design/distributed.md).
//===----------------------------------------------------------------------===//

def Est_AllReduceOp : Est_Op<"all_reduce", [
    SameOperandsAndResultType,
    MemoryEffects<[MemRead<Est_CollectiveResource>,
                   MemWrite<Est_CollectiveResource>]>]> {
  let summary = "The mean of a buffer over the replicas";
  let description = [{
    Every replica of a data-parallel step passes its own `x`; each gets the
    elementwise mean over the replicas (the runtime's
    `estc_all_reduce_mean_*`, runtime/Collective.h): the same bits on every
    replica. One replica alone gets `x`. `est-insert-collectives` puts one
    before the optimizer update, on all of a step's dense gradients of one
    element type flattened into one buffer, and one on the loss.

    ```mlir
    %g = est.all_reduce "mean" %flat : tensor<1034xf32>
    ```
  }];
  let arguments = (ins TensorRankOf<[F32, F64], [1]>:$x, StrAttr:$reduction);
  let results = (outs TensorRankOf<[F32, F64], [1]>:$result);
  let assemblyFormat = "$reduction $x attr-dict `:` type($x)";
  let hasVerifier = 1;
}

def Est_AllGatherOp : Est_Op<"all_gather", [
    MemoryEffects<[MemRead<Est_CollectiveResource>,
                   MemWrite<Est_CollectiveResource>]>]> {
  let summary = "Every replica's rows (a sparse gradient) on every replica";
  let description = [{
    A sparse gradient -- `rows[i]` for row `indices[i]` of a variable -- of
    every replica, concatenated in rank order, with the rows divided by the
    replica count when `mean` is set (the mean of the replicas' gradients,
    as `est.all_reduce "mean"` of the dense ones; duplicate indices sum when
    the update applies them). The results hold `replicas` times this
    replica's rows: the gathered rows, then, when other replicas had fewer,
    zero rows at the first gathered index (adding zero to a row that is
    updated anyway changes nothing). A replica group of another size, or
    more rows in all than that, is a run-time error.

    ```mlir
    %ids, %rows = est.all_gather %i, %r {mean, replicas = 2 : i64} : tensor<?xi64>, tensor<?x16xf32> -> tensor<?xi64>, tensor<?x16xf32>
    ```
  }];
  let arguments = (ins TensorRankOf<[I64], [1]>:$indices,
                       TensorRankOf<[F32, F64], [2]>:$rows,
                       I64Attr:$replicas, UnitAttr:$mean);
  let results = (outs TensorRankOf<[I64], [1]>:$gathered_indices,
                      TensorRankOf<[F32, F64], [2]>:$gathered_rows);
  let assemblyFormat = [{
    $indices `,` $rows attr-dict `:` type($indices) `,` type($rows) `->`
    type($gathered_indices) `,` type($gathered_rows)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Parameter-server training (docs/design/distributed.md, "Parameter servers").
//===----------------------------------------------------------------------===//

def Est_PsPullRowsOp : Est_Op<"ps_pull_rows", [
    MemoryEffects<[MemRead<Est_ParameterServerResource>]>]> {
  let summary = "Rows of a variable a parameter-server task holds";
  let description = [{
    In a ps worker's step (`est-ps-worker`), what a gather on axis 0 of a
    variable held by a ps task becomes: `rows[i]` := row `ids[i]` of the
    variable, fetched from its task (the runtime's `estc_ps_pull_rows_f32`,
    runtime/ParameterClient.h). The worker holds no copy of the variable:
    `remote` indexes the module's `estc.ps_remote` list, which names it.

    ```mlir
    %rows = est.ps_pull_rows "emb/part_0"[0] (%ids : tensor<?xi64>) -> tensor<?x16xf32>
    ```
  }];
  let arguments = (ins TensorRankOf<[I64], [1]>:$ids, StrAttr:$variable,
                       I64Attr:$remote);
  let results = (outs TensorRankOf<[F32], [2]>:$rows);
  let assemblyFormat = [{
    $variable `[` $remote `]` `(` $ids `:` type($ids) `)` attr-dict `->`
    type($rows)
  }];
  let hasVerifier = 1;
}

def Est_PsWaitOp : Est_Op<"ps_wait", [
    MemoryEffects<[MemRead<Est_ParameterServerResource>,
                   MemWrite<Est_ParameterServerResource>]>]> {
  let summary = "The rows of the pulls before it, arrived";
  let description = [{
    `est.ps_pull_rows` only asks for its rows: the runtime sends the pulls
    between two waits as one call per ps task when the step reaches the
    wait (`estc_ps_wait_rows`), which returns once every row is in place.
    Its results are its operands (the pulls' rows), so what reads the rows
    comes after it.

    ```mlir
    %a, %b = est.ps_wait %r0, %r1 : tensor<?x8xf32>, tensor<?x1xf32> -> tensor<?x8xf32>, tensor<?x1xf32>
    ```
  }];
  let arguments = (ins Variadic<TensorRankOf<[F32], [2]>>:$rows);
  let results = (outs Variadic<TensorRankOf<[F32], [2]>>:$ready);
  let assemblyFormat = [{
    $rows attr-dict `:` type($rows) `->` type($ready)
  }];
  let hasVerifier = 1;
}

def Est_PsPushOp : Est_Op<"ps_push", [
    MemoryEffects<[MemWrite<Est_ParameterServerResource>]>]> {
  let summary = "A tensor of the step's update, for the parameter servers";
  let description = [{
    In a ps worker's step, what replaces the optimizer update: `value`
    (flattened) is staged for the ps tasks, whose apply function takes it
    as its input `key` (`grad/<variable>`, `ids/<variable>`,
    `rows/<variable>`, `learning_rate/<k>`); `input` indexes the module's
    `estc.ps_inputs` list. The runtime sends the staged tensors after the
    step (`estc_ps_push_{f32,i64}`, runtime/ParameterClient.h).

    ```mlir
    est.ps_push "grad/dense/kernel"[0] %g : tensor<12xf32>
    ```
  }];
  let arguments = (ins TensorRankOf<[F32, I64], [1]>:$value, StrAttr:$key,
                       I64Attr:$input);
  let assemblyFormat = "$key `[` $input `]` $value attr-dict `:` type($value)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Structured control flow (docs/design/control-flow.md).
//===----------------------------------------------------------------------===//

def Est_ScanOp : Est_Op<"scan", [
    AttrSizedOperandSegments, SingleBlock, RecursiveMemoryEffects]> {
  let summary = "A loop over the leading axis of sequences, with carried values";
  let description = [{
    Runs `body` once per index `t` of dimension 0 of `sequences` (all the
    same length, known at run time: a padded batch's longest sequence, time
    major), in increasing order, or decreasing with `reverse`
    (jax.lax.scan, tf.scan). The body's arguments are the carried values
    (first `inits`, then what the previous step yielded) and each sequence's
    slice `t`; it yields the new carried values, then one value per step
    that the scan stacks along a new dimension 0. The results are the final
    carried values, then the stacked per-step values (`[T] + shape`). The
    body may use values defined above it (weights, masks); it cannot read or
    assign variables.

    ```mlir
    %h, %ys = est.scan inits(%h0 : tensor<?x4xf32>) over(%xs : tensor<?x?x4xf32>) -> (tensor<?x4xf32>, tensor<?x?x4xf32>) {
    ^bb0(%hp: tensor<?x4xf32>, %x: tensor<?x4xf32>):
      %s = est.add %hp, %x : tensor<?x4xf32>, tensor<?x4xf32> -> tensor<?x4xf32>
      %n = est.tanh %s : tensor<?x4xf32> -> tensor<?x4xf32>
      est.yield %n, %n : tensor<?x4xf32>, tensor<?x4xf32>
    }
    ```
  }];
  let arguments = (ins Variadic<Est_Tensor>:$inits,
                       Variadic<Est_Tensor>:$sequences, UnitAttr:$reverse);
  let results = (outs Variadic<Est_Tensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    (`inits` `(` $inits^ `:` type($inits) `)`)? `over` `(` $sequences `:`
    type($sequences) `)` attr-dict `->` `(` type($results) `)` $body
  }];
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    /// The body's terminator.
    YieldOp getYield();
    /// The final carried values (one per init).
    ::mlir::ResultRange getCarriedResults() {
      return getResults().take_front(getInits().size());
    }
    /// The stacked per-step values.
    ::mlir::ResultRange getStackedResults() {
      return getResults().drop_front(getInits().size());
    }
    /// The body's arguments: carried values, then sequence slices.
    ::mlir::Block::BlockArgListType getCarriedArgs() {
      return getBody().front().getArguments().take_front(getInits().size());
    }
    ::mlir::Block::BlockArgListType getSliceArgs() {
      return getBody().front().getArguments().drop_front(getInits().size());
    }
    /// The type of one step's slice of a sequence of `type`.
    static ::mlir::RankedTensorType sliceType(::mlir::RankedTensorType type);
    /// The type a per-step value of `type` is stacked into, `length` steps
    /// (ShapedType::kDynamic when known at run time only).
    static ::mlir::RankedTensorType stackedType(::mlir::RankedTensorType type,
                                                int64_t length);
    /// The number of steps when static, else ShapedType::kDynamic.
    int64_t getStaticLength();
  }];
}

def Est_IfOp : Est_Op<"if", [RecursiveMemoryEffects]> {
  let summary = "Runs one of two regions on a boolean scalar";
  let description = [{
    Runs `then_region` when `cond` is true, else `else_region` (tf.cond).
    Both yield values of the result types; they may use values defined
    above them and cannot read or assign variables.

    ```mlir
    %r = est.if %c : tensor<i1> -> (tensor<f32>) {
      est.yield %a : tensor<f32>
    } else {
      est.yield %b : tensor<f32>
    }
    ```
  }];
  let arguments = (ins 0DTensorOf<[I1]>:$cond);
  let results = (outs Variadic<Est_Tensor>:$results);
  let regions = (region SizedRegion<1>:$then_region,
                        SizedRegion<1>:$else_region);
  let assemblyFormat = [{
    $cond attr-dict `:` type($cond) `->` `(` type($results) `)` $then_region
    `else` $else_region
  }];
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    YieldOp getThenYield();
    YieldOp getElseYield();
  }];
}

def Est_WhileOp : Est_Op<"while", [SingleBlock, RecursiveMemoryEffects]> {
  let summary = "A loop with carried values and a run-time trip count";
  let description = [{
    tf.while_loop: the carried values start as `inits`; while `cond_region`
    (given the carried values) yields true, `body_region` (given the same)
    yields the next ones. The results are the last carried values. With
    `maximum_iterations`, the loop stops after that many steps whatever
    `cond` says (TF's semantics) -- and only then can it be differentiated:
    the reverse pass keeps one slot per possible iteration.

    ```mlir
    %r = est.while inits(%i0 : tensor<i32>) -> (tensor<i32>) cond {
    ^bb0(%i: tensor<i32>):
      %c = est.less %i, %n : tensor<i32>, tensor<i32> -> tensor<i1>
      est.yield %c : tensor<i1>
    } do {
    ^bb0(%i: tensor<i32>):
      %j = est.add %i, %one : tensor<i32>, tensor<i32> -> tensor<i32>
      est.yield %j : tensor<i32>
    }
    ```
  }];
  let arguments = (ins Variadic<Est_Tensor>:$inits,
                       OptionalAttr<I64Attr>:$maximum_iterations);
  let results = (outs Variadic<Est_Tensor>:$results);
  let regions = (region SizedRegion<1>:$cond_region,
                        SizedRegion<1>:$body_region);
  let assemblyFormat = [{
    `inits` `(` $inits `:` type($inits) `)` attr-dict `->` `(` type($results)
    `)` `cond` $cond_region `do` $body_region
  }];
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    YieldOp getCondYield();
    YieldOp getBodyYield();
  }];
}

def Est_YieldOp : Est_Op<"yield", [
    Pure, ReturnLike, Terminator,
    ParentOneOf<["ScanOp", "IfOp", "WhileOp"]>]> {
  let summary = "Ends a region of est.scan, est.if or est.while";
  let description = [{
    ```mlir
    est.yield %h, %y : tensor<?x4xf32>, tensor<?x4xf32>
    ```
  }];
  let arguments = (ins Variadic<Est_Tensor>:$values);
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
}

#endif // EST_OPS_TD
