//===- estc/runtime.h - Compiled models -------------------------*- C++ -*-===//
//
// What a model compiled by estc runs on: rt::CompiledModel, the class the
// generated header derives from (docs/design/codegen-abi.md), and the CPU
// kernels' thread pool (estc_runtime_set_num_threads). Link estc::runtime.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_PUBLIC_RUNTIME_H
#define ESTC_PUBLIC_RUNTIME_H

#include "runtime/CompiledModel.h"
#include "runtime/cpu/Kernels.h"

#endif // ESTC_PUBLIC_RUNTIME_H
