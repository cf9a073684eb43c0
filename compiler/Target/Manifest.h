//===- Manifest.h - What a compiled model looks like from outside ---------===//
//
// The manifest describes a compiled model for its callers: the module's
// variables (name, dtype, static shape, trainable, local, initializer) and, for
// every compiled function, its inputs and outputs by key ("features/x",
// "labels", "loss", "predictions/classes", "metrics/accuracy", ...) with
// dtype and shape, plus the arena formula (codegen-abi.md).
//
// It is extracted from the `est`-level module, before lowering, and written
// next to the object as NAME.manifest.json:
//
//   {
//     "format": "estc-manifest-1",
//     "name": "Mlp",
//     "variables": [
//       {"name": "dense/kernel", "dtype": "f32", "shape": [784, 256],
//        "trainable": true, "local": false, "initializer": "glorot_uniform",
//        "initializer_params": {"seed": 42}},
//       ...
//     ],
//     "functions": [
//       {"name": "predict",
//        "inputs": [{"key": "features/x", "dtype": "f32", "shape": [-1, 784]}],
//        "outputs": [{"key": "predictions/classes", "dtype": "i64",
//                     "shape": [-1]}, ...],
//        "arena": {"static": 0, "per_batch": 0}},
//       ...
//     ]
//   }
//
// A model compiled for CUDA also has `"device": "cuda", "gpu_arch": "sm_90"`
// after its name (absent: the CPU).
//
// Shapes use -1 for the batch dimension. Entry point `f` of model `Name` is
// `Name_f` (typed C interface) and `Name_f_packed` (void(void **)).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_COMPILER_TARGET_MANIFEST_H
#define ESTC_COMPILER_TARGET_MANIFEST_H

#include "mlir/IR/BuiltinOps.h"
#include "runtime/CompiledModel.h"
#include "runtime/format/ModelFormat.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace estc {

// The schema is runtime/format's (no LLVM), which reads and writes the
// file; this header adds what the compiler makes of a module.
using modelformat::CheckInfo;
using modelformat::FunctionInfo;
using modelformat::Manifest;
using modelformat::ModelSpecStorage;
using modelformat::TensorInfo;
using modelformat::toModelSpec;
using modelformat::VariableInfo;

/// Reads the manifest from an `est`-level module (est.variable symbols and
/// func.func signatures with {est.name} argument/result attributes). One
/// error line on unsupported types (e.g. dynamic non-batch dimensions).
llvm::Expected<Manifest> extractManifest(mlir::ModuleOp module,
                                         llvm::StringRef name);

/// Fills each function's arena formula from the lowered module's
/// `estc.arena = {f = array<i64: S, P>}` attribute (absent: left at 0).
llvm::Error readArenaSizes(mlir::ModuleOp llvmModule, Manifest &manifest);

/// Adds `<step>_loop` (e.g. `train_loop`), a multi-step loop of function
/// `step` (RunConfig::iterations_per_loop, docs/design/codegen-abi.md
/// "Multi-step loops"): step's inputs with a leading rt::kStepsDim (row block
/// i is step i's input), step's outputs (the last step's), its arena and
/// status slot. Call after readArenaSizes. One error line when `step` is
/// not compiled or has a sparse input (a number of values that differs from
/// step to step).
llvm::Error addStepLoop(Manifest &manifest, llvm::StringRef step);

/// Keeps only the named functions, in their manifest order.
void keepFunctions(Manifest &manifest, llvm::ArrayRef<std::string> names);

/// `name` with every character that cannot be in a C identifier replaced
/// by '_' ("features/x" -> "features_x").
std::string sanitizeIdentifier(llvm::StringRef name);

/// The C symbol of compiled function `function` of model `model`:
/// "<model>_<function>" (sanitized); the packed form adds "_packed".
std::string entrySymbol(llvm::StringRef model, llvm::StringRef function);
std::string packedEntrySymbol(llvm::StringRef model, llvm::StringRef function);

/// JSON text, deterministic (fixed key order, 2-space indent, final newline):
/// modelformat::writeManifest.
std::string toJson(const Manifest &manifest);
/// modelformat::readManifest; its FormatError as an llvm::Error.
llvm::Expected<Manifest> manifestFromJson(llvm::StringRef json);

} // namespace estc

#endif // ESTC_COMPILER_TARGET_MANIFEST_H
