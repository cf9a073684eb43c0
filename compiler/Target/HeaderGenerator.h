//===- HeaderGenerator.h - The C++ header of an AOT-compiled model --------===//
//
// Writes NAME.h for `estc --emit=obj|lib --name NAME`: a class NAME deriving
// from estc::rt::CompiledModel (runtime/CompiledModel.h) with the model's
// metadata as constexpr tables, typed accessors for every variable and for
// every function's inputs and outputs, and one method per compiled function.
// The text depends only on the manifest (no host, path or time), so it can
// be checked against a golden file. The layout is documented at the top of
// every generated header.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_COMPILER_TARGET_HEADERGENERATOR_H
#define ESTC_COMPILER_TARGET_HEADERGENERATOR_H

#include "compiler/Target/Manifest.h"

#include <string>

namespace estc {

/// The header text for `manifest` (class name = manifest.name).
std::string generateHeader(const Manifest &manifest);

} // namespace estc

#endif // ESTC_COMPILER_TARGET_HEADERGENERATOR_H
