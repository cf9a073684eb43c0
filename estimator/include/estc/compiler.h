//===- estc/compiler.h - Compiling a graph in process (JIT) -----*- C++ -*-===//
//
// estc::JitCompiler and estc::jitCompileGraph: a GraphDef compiled to native
// code in this process, as the same rt::CompiledModel an estc_add_model
// class is (docs/user-guide.md, "Native code, in process"). Includes LLVM's
// and MLIR's headers; link EstCompiler. In the build tree only: an installed
// package does not ship the compiler's headers. The JIT
// Estimator(model_fn, ...) needs none of this (estc/estimator.h).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_PUBLIC_COMPILER_H
#define ESTC_PUBLIC_COMPILER_H

#include "compiler/Driver/GraphCompiler.h"

#endif // ESTC_PUBLIC_COMPILER_H
