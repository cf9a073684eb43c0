//===- CollectiveBufferization.h - est collectives to runtime calls -*- C++
//-*-===//
//
// Registers One-Shot Bufferize's model of est.all_reduce and est.all_gather
// (calls of runtime/Collective.h's functions on buffers).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_COMPILER_CODEGEN_COLLECTIVEBUFFERIZATION_H
#define ESTC_COMPILER_CODEGEN_COLLECTIVEBUFFERIZATION_H

#include "mlir/IR/DialectRegistry.h"

namespace mlir {
namespace est {

void registerCollectiveBufferization(DialectRegistry &registry);

} // namespace est
} // namespace mlir

#endif // ESTC_COMPILER_CODEGEN_COLLECTIVEBUFFERIZATION_H
