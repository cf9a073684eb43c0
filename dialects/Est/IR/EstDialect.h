//===- EstDialect.h - The est dialect ---------------------------*- C++ -*-===//
//
// The `est` dialect: one operation per TF Estimator graph node kind
// (docs/ops.md). Operations and attributes are declared in EstOps.h.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_DIALECTS_EST_IR_ESTDIALECT_H
#define ESTC_DIALECTS_EST_IR_ESTDIALECT_H

#include "mlir/IR/Dialect.h"

#include "dialects/Est/IR/EstDialect.h.inc"

#endif // ESTC_DIALECTS_EST_IR_ESTDIALECT_H
