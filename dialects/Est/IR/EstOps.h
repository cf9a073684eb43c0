//===- EstOps.h - est dialect operations and attributes ---------*- C++ -*-===//
#ifndef ESTC_DIALECTS_EST_IR_ESTOPS_H
#define ESTC_DIALECTS_EST_IR_ESTOPS_H

#include "dialects/Est/IR/EstDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir {
namespace est {

/// The state of all `est.variable`s: read by `est.read_variable`, written by
/// `est.assign_variable` and `est.minimize`.
struct VariableResource : public SideEffects::Resource::Base<VariableResource> {
  StringRef getName() final { return "est.variables"; }
};

/// The replica group the collectives of a data-parallel step talk to
/// (`est.all_reduce`, `est.all_gather`).
struct CollectiveResource
    : public SideEffects::Resource::Base<CollectiveResource> {
  StringRef getName() final { return "est.collectives"; }
};

/// The parameter-server tasks a ps worker's step pulls rows from and pushes
/// gradients to (`est.ps_pull_rows`, `est.ps_push`).
struct ParameterServerResource
    : public SideEffects::Resource::Base<ParameterServerResource> {
  StringRef getName() final { return "est.parameter_servers"; }
};

/// Relaxed result-type compatibility of every est op: each declared type has
/// the inferred element type and rank, and each declared dimension equals the
/// inferred one or is dynamic.
bool areRelaxedCompatible(TypeRange inferred, TypeRange declared);

/// Re-infers the result types of `block`'s ops in order, so static
/// dimensions flow from its arguments to its results; a control-flow op's
/// region arguments are refined from its operands, its regions inferred,
/// then its results from what they yield. Fails when an op's inference
/// does.
LogicalResult inferShapes(Block &block);

/// Deletes a block not (yet) in a region whose ops may use each other and
/// values outside it: a control-flow body built and then given up.
void eraseDetachedBlock(Block *block);

/// The terminator of the control-flow ops' regions (declared before them).
class YieldOp;

} // namespace est
} // namespace mlir

#define GET_ATTRDEF_CLASSES
#include "dialects/Est/IR/EstAttrs.h.inc"

#define GET_OP_CLASSES
#include "dialects/Est/IR/EstOps.h.inc"

#endif // ESTC_DIALECTS_EST_IR_ESTOPS_H
