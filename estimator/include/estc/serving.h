//===- estc/serving.h - Loading and running an exported model ---*- C++ -*-===//
//
// serving::SavedModel: loads what export_saved_model wrote and runs its
// signatures (docs/serving.md). Link estc::saved_model; no LLVM.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_PUBLIC_SERVING_H
#define ESTC_PUBLIC_SERVING_H

#include "runtime/serving/SavedModel.h"

#endif // ESTC_PUBLIC_SERVING_H
