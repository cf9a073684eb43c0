//===- EstBase.td - est dialect definition -----------------*- tablegen -*-===//
//
// The `est` dialect: the operations of a TF Estimator model_fn graph, one op
// per graph node kind (docs/ops.md). Tensors are builtin ranked tensors.
//
//===----------------------------------------------------------------------===//
#ifndef EST_BASE_TD
#define EST_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

def Est_Dialect : Dialect {
  let name = "est";
  let cppNamespace = "::mlir::est";
  let summary = "Dataflow operations of TF Estimator model_fn graphs";
  let description = [{
    One operation per graph node kind; see docs/ops.md. Result types follow
    the shared shape rules of lib/Shape/ShapeFunctions.h, and every
    value-producing op (except `est.read_variable`, whose type is that of its
    variable symbol) infers its result type from its operands and attributes.
    Variables are module-level symbols (`est.variable`) read and written by
    `est.read_variable`, `est.assign_variable` and `est.minimize`.
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasConstantMaterializer = 1;
  let dependentDialects = [];
}

//===----------------------------------------------------------------------===//
// Type constraints.
//===----------------------------------------------------------------------===//

def Est_FloatElt : AnyTypeOf<[F16, BF16, F32, F64]>;
def Est_IntElt : AnyTypeOf<[I32, I64]>;

def Est_Tensor : RankedTensorOf<[F16, BF16, F32, F64, I32, I64, I1]>;
def Est_NumericTensor : RankedTensorOf<[F16, BF16, F32, F64, I32, I64]>;
def Est_FloatTensor : RankedTensorOf<[F16, BF16, F32, F64]>;
def Est_IndexTensor : RankedTensorOf<[I32, I64]>;
def Est_BoolTensor : RankedTensorOf<[I1]>;
def Est_CounterTensor : 0DTensorOf<[I64]>;

def Est_ElementType : TypeConstraint<
    Or<[Est_FloatElt.predicate, Est_IntElt.predicate, I1.predicate]>,
    "est element type (f16, bf16, f32, f64, i32, i64, i1)">;
def Est_ElementTypeAttr : TypeAttrBase<"::mlir::Type",
    "est element type attribute"> {
  let predicate = And<[TypeAttr.predicate,
      SubstLeaves<"$_self", "::llvm::cast<::mlir::TypeAttr>($_self).getValue()",
                  Est_ElementType.predicate>]>;
  let constBuilderCall = "::mlir::TypeAttr::get($0)";
}
def Est_IndexTypeAttr : TypeAttrBase<"::mlir::Type",
    "integer type attribute (i32 or i64)"> {
  let predicate = And<[TypeAttr.predicate,
      SubstLeaves<"$_self", "::llvm::cast<::mlir::TypeAttr>($_self).getValue()",
                  Est_IntElt.predicate>]>;
  let constBuilderCall = "::mlir::TypeAttr::get($0)";
}

/// The state of all `est.variable`s, read and written by the state ops.
def Est_VariableResource : Resource<"::mlir::est::VariableResource">;
/// The replica group of a data-parallel step: every collective reads and
/// writes it, so collectives keep their order and are never removed.
def Est_CollectiveResource : Resource<"::mlir::est::CollectiveResource">;
/// The parameter-server tasks of a ps worker's step: pulls read it, pushes
/// write it, so pushes are never removed.
def Est_ParameterServerResource
    : Resource<"::mlir::est::ParameterServerResource">;

//===----------------------------------------------------------------------===//
// Base op classes.
//===----------------------------------------------------------------------===//

class Est_Op<string mnemonic, list<Trait> traits = []>
    : Op<Est_Dialect, mnemonic, traits>;

/// A value-producing op whose result type is inferred through the shared
/// shape rules. A declared result type is compatible with the inferred one
/// when element types and ranks match and each declared dim equals the
/// inferred one or is dynamic, so `est-shape-inference` can refine it.
class Est_InferOp<string mnemonic, list<Trait> traits = []>
    : Est_Op<mnemonic, traits # [InferTypeOpAdaptorWithIsCompatible]> {
  let extraClassDefinition = [{
    bool $cppClass::isCompatibleReturnTypes(::mlir::TypeRange inferred,
                                            ::mlir::TypeRange declared) {
      return ::mlir::est::areRelaxedCompatible(inferred, declared);
    }
  }];
}

#endif // EST_BASE_TD
