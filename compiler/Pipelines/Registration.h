//===- Registration.h - Dialects and passes the compiler uses -----------===//
//
// One place that registers every dialect (with its external interface models,
// e.g. bufferization) and every pass the estc pipeline uses, shared by the
// `estc` driver and `estc-opt`.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_COMPILER_PIPELINES_REGISTRATION_H
#define ESTC_COMPILER_PIPELINES_REGISTRATION_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace estc {

/// est plus the upstream dialects the pipeline lowers through.
void registerCompilerDialects(mlir::DialectRegistry &registry);

/// est passes, upstream passes used by the pipeline, and pipeline stages.
void registerCompilerPasses();

} // namespace estc

#endif // ESTC_COMPILER_PIPELINES_REGISTRATION_H
