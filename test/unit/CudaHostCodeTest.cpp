//===- CudaHostCodeTest.cpp - A CUDA model's host code, without a GPU ----===//
//
// The host half of the seed MLP compiled with --target=cuda (linked here as
// MlpCuda.o) run against a recording stand-in for the runtime's CUDA ABI
// (docs/design/gpu.md: mgpu* and estc_cuda_*), with every buffer in memory
// the process cannot touch (PROT_NONE). It checks what can be checked
// without a GPU: the constructors load one fatbin per kernel module before
// main, every step launches its kernels with 256-thread (or one-thread)
// blocks and a positive grid, the kernels are found by name, and the host
// code never reads or writes a buffer (it would fault). What the kernels
// compute needs a GPU (test/gpu).
//
//===----------------------------------------------------------------------===//

#include "compiler/Target/Manifest.h"

#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

#include <sys/mman.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace {

/// What the constructors saw: constant-initialized, since the object's
/// constructors run before this file's dynamic initializers.
struct Loads {
  int modulesLoaded;
  int modulesUnloaded;
  int badModules; // loaded data that is not a fatbin
};
Loads loads = {0, 0, 0}; // an aggregate: no dynamic initialization

/// What the steps saw.
struct Recorded {
  std::vector<std::string> functions;
  int launches = 0;
  int badLaunches = 0;
  int matmuls = 0;
  const char *lowest = nullptr; // the inaccessible "device memory"
  const char *highest = nullptr;
  int foreignPointers = 0; // kernel arguments outside it
};
Recorded recorded;

} // namespace

// The stand-in: the functions the compiled host code calls.
extern "C" {
void *mgpuModuleLoad(void *data, uint64_t size) {
  ++loads.modulesLoaded;
  uint32_t magic = 0;
  if (size >= 4)
    std::memcpy(&magic, data, 4);
  if (magic != 0xBA55ED50u)
    ++loads.badModules;
  return data;
}
void mgpuModuleUnload(void *) { ++loads.modulesUnloaded; }
void *mgpuModuleGetFunction(void *module, const char *name) {
  recorded.functions.push_back(name);
  return module;
}
void *mgpuStreamCreate() { return &recorded; }
void mgpuStreamSynchronize(void *) {}
void mgpuStreamDestroy(void *) {}
void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t sharedMemory, void *stream,
                      void **params, void **extra, size_t numParams) {
  ++recorded.launches;
  // 256 threads a block, or 1024 for a block sum (est-gpu-map-loops).
  bool ok = function && gridX >= 1 && gridY == 1 && gridZ == 1 &&
            (blockX == 256 || blockX == 1024 || (blockX == 1 && gridX == 1)) &&
            blockY == 1 && blockZ == 1 && sharedMemory == 0 &&
            stream == &recorded && extra == nullptr &&
            (numParams == 0 || params != nullptr);
  if (!ok)
    ++recorded.badLaunches;
}
/// A memref descriptor's first two fields.
struct DescriptorHead {
  const char *allocated;
  const char *aligned;
};
void _mlir_ciface_estc_cuda_matmul_f32(DescriptorHead *a, DescriptorHead *b,
                                       DescriptorHead *c, int64_t, int64_t) {
  ++recorded.matmuls;
  for (DescriptorHead *d : {a, b, c})
    if (d->aligned < recorded.lowest || d->aligned >= recorded.highest)
      ++recorded.foreignPointers;
}
} // extern "C"

namespace {

using Entry = void (*)(void **);
} // namespace

extern "C" {
void MlpCuda_init_packed(void **);
void MlpCuda_train_packed(void **);
void MlpCuda_eval_packed(void **);
void MlpCuda_predict_packed(void **);
}

namespace {

/// Descriptors of every argument of one function at `batch`, all pointing
/// into `region` (PROT_NONE), distinct and 256-byte aligned.
class Arguments {
public:
  Arguments(const estc::Manifest &manifest, const estc::FunctionInfo &f,
            int64_t batch, char *region, size_t regionSize) {
    size_t used = 0;
    auto add = [&](std::vector<int64_t> shape, int64_t elementBytes) {
      int64_t elements = 1;
      for (int64_t &d : shape) {
        if (d < 0)
          d = batch;
        elements *= d;
      }
      char *data = region + used;
      used += (static_cast<size_t>(elements * elementBytes) + 255) / 256 * 256;
      EXPECT_LE(used, regionSize);
      std::vector<int64_t> descriptor = {reinterpret_cast<int64_t>(data),
                                         reinterpret_cast<int64_t>(data), 0};
      descriptor.insert(descriptor.end(), shape.begin(), shape.end());
      int64_t stride = 1;
      std::vector<int64_t> strides(shape.size());
      for (size_t i = shape.size(); i-- > 0;) {
        strides[i] = stride;
        stride *= shape[i];
      }
      descriptor.insert(descriptor.end(), strides.begin(), strides.end());
      descriptors.push_back(std::move(descriptor));
    };
    add({f.arenaStatic + f.arenaPerBatch * batch}, 1);
    for (const estc::VariableInfo &v : manifest.variables)
      add(v.shape, static_cast<int64_t>(estc::rt::dtypeBytes(v.dtype)));
    for (const estc::TensorInfo &t : f.inputs)
      add(t.shape, static_cast<int64_t>(estc::rt::dtypeBytes(t.dtype)));
    for (const estc::TensorInfo &t : f.outputs)
      add(t.shape, static_cast<int64_t>(estc::rt::dtypeBytes(t.dtype)));
    for (std::vector<int64_t> &d : descriptors)
      pointers.push_back(d.data());
  }
  void **data() { return pointers.data(); }

private:
  std::vector<std::vector<int64_t>> descriptors;
  std::vector<void *> pointers;
};

TEST(CudaHostCode, LaunchesKernelsWithoutTouchingBuffers) {
  // Constructors ran before main: one fatbin module for all the kernels
  // (est-gpu-merge-kernel-modules).
  EXPECT_EQ(loads.modulesLoaded, 1);
  EXPECT_EQ(loads.badModules, 0);
  EXPECT_EQ(loads.modulesUnloaded, 0);

  auto json = llvm::MemoryBuffer::getFile(ESTC_MLP_CUDA_MANIFEST);
  ASSERT_TRUE(static_cast<bool>(json)) << ESTC_MLP_CUDA_MANIFEST;
  llvm::Expected<estc::Manifest> manifest =
      estc::manifestFromJson((*json)->getBuffer());
  ASSERT_TRUE(static_cast<bool>(manifest))
      << llvm::toString(manifest.takeError());
  EXPECT_EQ(manifest->device, estc::rt::Device::Cuda);

  // "Device memory": readable by nothing on the host.
  const size_t regionSize = size_t(64) << 20;
  void *mapped = mmap(nullptr, regionSize, PROT_NONE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  ASSERT_NE(mapped, MAP_FAILED);
  char *region = static_cast<char *>(mapped);
  recorded.lowest = region;
  recorded.highest = region + regionSize;

  const std::map<std::string, Entry> entries = {
      {"init", MlpCuda_init_packed},
      {"train", MlpCuda_train_packed},
      {"eval", MlpCuda_eval_packed},
      {"predict", MlpCuda_predict_packed}};
  for (const auto &[name, entry] : entries) {
    SCOPED_TRACE(name);
    const estc::FunctionInfo *f = manifest->findFunction(name);
    ASSERT_NE(f, nullptr);
    for (int64_t batch : {1, 3, 300}) {
      int launches = recorded.launches;
      Arguments arguments(*manifest, *f, batch, region, regionSize);
      entry(arguments.data());
      EXPECT_GT(recorded.launches, launches) << "batch " << batch;
    }
  }
  EXPECT_EQ(recorded.badLaunches, 0);
  EXPECT_GT(recorded.matmuls, 0);
  EXPECT_EQ(recorded.foreignPointers, 0);
  ASSERT_FALSE(recorded.functions.empty());
  for (const std::string &name : recorded.functions)
    EXPECT_NE(name.find("_kernel"), std::string::npos) << name;
  munmap(mapped, regionSize);
}

} // namespace
