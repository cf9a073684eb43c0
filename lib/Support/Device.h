//===- Device.h - Where compiled code runs ----------------------*- C++ -*-===//
//
// The one Device of estc: the compiler's target (compiler/Pipelines), the
// manifest and the runtime's ModelSpec (runtime/CompiledModel.h, as
// rt::Device) all name this enum. Header-only, no dependencies.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_SUPPORT_DEVICE_H
#define ESTC_LIB_SUPPORT_DEVICE_H

#include <cstdint>

namespace estc {

/// What a model's compiled code runs on (docs/design/gpu.md): the host CPU,
/// or a CUDA GPU, where its variables and arena are device memory. The
/// values are part of the generated header's ABI (ModelSpec::device).
enum class Device : int32_t { Cpu, Cuda };

} // namespace estc

#endif // ESTC_LIB_SUPPORT_DEVICE_H
