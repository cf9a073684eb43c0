//===- estc/compiler.h - Compiling a graph in process (JIT) -----*- C++ -*-===//
//
// estc::JitCompiler and estc::jitCompileGraph: a GraphDef compiled to native
// code in this process, as the same rt::CompiledModel an estc_add_model
// class is (docs/user-guide.md, "Native code, in process"). Includes LLVM's
// and MLIR's headers; link estc::estimator_jit (the installed package ships
// the compiler's headers with its jit component). The JIT
// Estimator(model_fn, ...) needs none of this (estc/estimator.h).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_PUBLIC_COMPILER_H
#define ESTC_PUBLIC_COMPILER_H

#include "compiler/Driver/GraphCompiler.h"

#endif // ESTC_PUBLIC_COMPILER_H
