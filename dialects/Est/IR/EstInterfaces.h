//===- EstInterfaces.h - est op interfaces ----------------------*- C++ -*-===//
#ifndef ESTC_DIALECTS_EST_IR_ESTINTERFACES_H
#define ESTC_DIALECTS_EST_IR_ESTINTERFACES_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/OpDefinition.h"

#include "dialects/Est/IR/EstInterfaces.h.inc"

namespace mlir {
namespace est {

/// Attaches the gradient rules (GradientOpInterface external models) to the
/// est ops; called by EstDialect::initialize.
void attachGradientInterfaces(MLIRContext &context);

} // namespace est
} // namespace mlir

#endif // ESTC_DIALECTS_EST_IR_ESTINTERFACES_H
