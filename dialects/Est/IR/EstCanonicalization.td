//===- EstCanonicalization.td - est DRR canonicalizations -*- tablegen -*-===//
//
// The canonicalization patterns of the est ops that are plain DAG rewrites
// (as in the Toy tutorial's ToyCombine.td). Each is registered by its op's
// getCanonicalizationPatterns (EstCanonicalization.cpp), which also holds
// the patterns that need C++.
//
//===----------------------------------------------------------------------===//
#ifndef EST_CANONICALIZATION_TD
#define EST_CANONICALIZATION_TD

include "mlir/IR/PatternBase.td"
include "dialects/Est/IR/EstOps.td"

def EstTypesAreIdentical : Constraint<CPred<"$0.getType() == $1.getType()">,
                                      "has the same type">;
def EstHasStaticShape
    : Constraint<CPred<"::llvm::cast<::mlir::RankedTensorType>($0.getType())"
                       ".hasStaticShape()">,
                 "has a static shape">;
/// The shape of a statically shaped value, as reshape's `shape` attribute.
def EstStaticShapeAttr : NativeCodeCall<
    "$_builder.getDenseI64ArrayAttr("
    "::llvm::cast<::mlir::RankedTensorType>($0.getType()).getShape())">;

// neg(neg(x)) -> x, when x has the result's type.
def FoldDoubleNeg : Pat<(Est_NegOp:$res (Est_NegOp $x)), (replaceWithValue $x),
                        [(EstTypesAreIdentical $res, $x)]>;

// reshape(reshape(x)) -> reshape(x).
def FoldDoubleReshape
    : Pat<(Est_ReshapeOp:$res (Est_ReshapeOp $x, $_), $shape),
          (Est_ReshapeOp $x, $shape, (location $res))>;

// squeeze / expand_dims with a static operand and result -> reshape.
def SqueezeToReshape
    : Pat<(Est_SqueezeOp:$res $x, $_),
          (Est_ReshapeOp $x, (EstStaticShapeAttr $res), (location $res)),
          [(EstHasStaticShape $res), (EstHasStaticShape $x)]>;
def ExpandDimsToReshape
    : Pat<(Est_ExpandDimsOp:$res $x, $_),
          (Est_ReshapeOp $x, (EstStaticShapeAttr $res), (location $res)),
          [(EstHasStaticShape $res), (EstHasStaticShape $x)]>;

#endif // EST_CANONICALIZATION_TD
