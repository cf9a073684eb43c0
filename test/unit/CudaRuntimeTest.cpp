//===- CudaRuntimeTest.cpp - The CUDA runtime: errors, kernels, models ----===//
//
// Two halves:
//   - everywhere (CI has no GPU): EstcRuntime and this test NEED no CUDA
//     library; without a driver (ESTC_CUDA_DRIVER pointed at a file that does
//     not exist), with the toolkit's stub libcuda.so (which loads, and whose
//     cuInit fails), and for each mgpu* entry point and kernel, the one line
//     a user gets; module registration touches no CUDA. A driver is loaded
//     once per process, so each of these runs in a child process (gtest's
//     "threadsafe" death tests re-execute this binary).
//   - on a GPU (skipped with "SKIP: no CUDA device" elsewhere): the cuBLAS
//     matmuls and cuDNN convolutions against the CPU kernels on random data,
//     a hand-written PTX module loaded through the mgpu ABI, and
//     CUDA-device CompiledModels over hand-written specs whose entry points
//     are C++ functions calling that ABI and the kernels, as compiled code
//     does: variables and their host mirrors, bound buffers, run-time
//     checks, recorded CUDA errors, and CUDA graph capture and replay.
// No LLVM: the GPU machine runs this binary as built here.
//
//===----------------------------------------------------------------------===//
#include "runtime/CompiledModel.h"
#include "runtime/cpu/Kernels.h"
#include "runtime/cuda/Cuda.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <dlfcn.h>
#include <elf.h>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

using namespace estc::rt;

namespace {

// --- Helpers -----------------------------------------------------------------

/// The DT_NEEDED entries of an ELF64 file.
std::vector<std::string> neededLibraries(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
  std::vector<std::string> needed;
  if (bytes.size() < sizeof(Elf64_Ehdr))
    return needed;
  Elf64_Ehdr eh;
  std::memcpy(&eh, bytes.data(), sizeof eh);
  for (int i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh;
    std::memcpy(&sh, bytes.data() + eh.e_shoff + i * eh.e_shentsize, sizeof sh);
    if (sh.sh_type != SHT_DYNAMIC)
      continue;
    Elf64_Shdr strtab;
    std::memcpy(&strtab,
                bytes.data() + eh.e_shoff + sh.sh_link * eh.e_shentsize,
                sizeof strtab);
    for (size_t off = 0; off + sizeof(Elf64_Dyn) <= sh.sh_size;
         off += sizeof(Elf64_Dyn)) {
      Elf64_Dyn dyn;
      std::memcpy(&dyn, bytes.data() + sh.sh_offset + off, sizeof dyn);
      if (dyn.d_tag == DT_NEEDED)
        needed.emplace_back(bytes.data() + strtab.sh_offset + dyn.d_un.d_val);
    }
  }
  return needed;
}

/// Runs `body` in a fresh process (with `driver` as $ESTC_CUDA_DRIVER) and
/// expects it to throw a one-line DeviceError matching `pattern`.
#define EXPECT_DEVICE_ERROR(driver, body, pattern)                             \
  do {                                                                         \
    GTEST_FLAG_SET(death_test_style, "threadsafe");                            \
    EXPECT_EXIT(                                                               \
        {                                                                      \
          setenv("ESTC_CUDA_DRIVER", driver, 1);                               \
          try {                                                                \
            body;                                                              \
          } catch (const DeviceError &e) {                                     \
            std::fprintf(stderr, "%s\n", e.what());                            \
            std::exit(std::strchr(e.what(), '\n') ? 2 : 0);                    \
          }                                                                    \
          std::exit(1);                                                        \
        },                                                                     \
        ::testing::ExitedWithCode(0), pattern);                                \
  } while (0)

/// Runs `body` in a fresh process and expects it to stop the process with
/// one line on stderr matching `pattern`.
#define EXPECT_ABORT_LINE(driver, body, pattern)                               \
  do {                                                                         \
    GTEST_FLAG_SET(death_test_style, "threadsafe");                            \
    EXPECT_DEATH(                                                              \
        {                                                                      \
          setenv("ESTC_CUDA_DRIVER", driver, 1);                               \
          body;                                                                \
        },                                                                     \
        pattern);                                                              \
  } while (0)

constexpr const char *kNoDriver = "/nonexistent/libcuda.so.1";

std::string stubDriver() {
  const char *root = std::getenv("ESTC_CUDA_PATH");
  return std::string(root && *root ? root : "/usr/local/cuda") +
         "/lib64/stubs/libcuda.so";
}

bool fileExists(const std::string &path) { return std::ifstream(path).good(); }

/// The number of CUDA devices, or 0 (with the reason in `why`).
int deviceCount(std::string &why) {
  try {
    return cuda_device_count();
  } catch (const DeviceError &e) {
    why = e.what();
    return 0;
  }
}

#define REQUIRE_CUDA_DEVICE()                                                  \
  do {                                                                         \
    std::string why;                                                           \
    if (deviceCount(why) == 0)                                                 \
      GTEST_SKIP() << "SKIP: no CUDA device (" << why << ")";                  \
  } while (0)

/// A hand-written ModelSpec of one function (plus variables and checks),
/// with storage for every table it points at.
class TestSpec {
public:
  struct Tensor {
    std::string key;
    DType dtype;
    std::vector<int64_t> shape;
  };
  struct Variable {
    std::string name;
    std::vector<int64_t> shape;
    bool local;
  };

  TestSpec(std::string name, Device device, std::vector<Tensor> inputs,
           std::vector<Tensor> outputs, std::vector<Variable> variables = {},
           bool hasChecks = false)
      : name_(std::move(name)), inputs_(std::move(inputs)),
        outputs_(std::move(outputs)), variables_(std::move(variables)) {
    for (const Tensor &t : inputs_)
      inputSpecs_.push_back(
          {t.key.c_str(), t.dtype, int32_t(t.shape.size()), t.shape.data()});
    for (const Tensor &t : outputs_)
      outputSpecs_.push_back(
          {t.key.c_str(), t.dtype, int32_t(t.shape.size()), t.shape.data()});
    for (const Variable &v : variables_)
      variableSpecs_.push_back({v.name.c_str(), DType::F32,
                                int32_t(v.shape.size()), v.shape.data(), true,
                                v.local});
    // With checks, the status slot is the arena's first 64 bytes.
    function_ = {"step",
                 int32_t(inputSpecs_.size()),
                 inputSpecs_.data(),
                 int32_t(outputSpecs_.size()),
                 outputSpecs_.data(),
                 hasChecks ? 64 : 0,
                 0,
                 hasChecks,
                 0,
                 0};
    spec_ = {name_.c_str(),
             int32_t(variableSpecs_.size()),
             variableSpecs_.data(),
             1,
             &function_,
             hasChecks ? 1 : 0,
             &check_,
             device};
  }
  const ModelSpec &spec() const { return spec_; }

private:
  std::string name_;
  std::vector<Tensor> inputs_, outputs_;
  std::vector<Variable> variables_;
  std::vector<TensorSpec> inputSpecs_, outputSpecs_;
  std::vector<VariableSpec> variableSpecs_;
  FunctionSpec function_{};
  const int64_t checkShape_[1] = {kBatchDim};
  CheckSpec check_{"labels", "label", 0, 10, 1, checkShape_};
  ModelSpec spec_{};
};

void noOp(void **) {}
const EntryPoint kNoOp[] = {noOp};

std::vector<float> randomFloats(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(rng);
  return v;
}

// --- Everywhere: linking and the errors without a GPU
// -------------------------

TEST(CudaRuntime, LinksNoCudaLibrary) {
  Dl_info info{};
  ASSERT_NE(dladdr(reinterpret_cast<void *>(&cuda_built), &info), 0);
  for (std::string file :
       {std::string(info.dli_fname), std::string("/proc/self/exe")}) {
    std::vector<std::string> needed = neededLibraries(file);
    ASSERT_FALSE(needed.empty()) << file;
    for (const std::string &lib : needed)
      for (const char *cuda : {"libcuda", "libcudart", "libcublas", "libcudnn",
                               "libLLVM", "libMLIR"})
        EXPECT_EQ(lib.find(cuda), std::string::npos)
            << file << " NEEDs " << lib;
  }
}

TEST(CudaRuntime, DeviceSelection) {
  EXPECT_EQ(get_cuda_device(), 0);
  set_cuda_device(3);
  EXPECT_EQ(get_cuda_device(), 3);
  set_cuda_device(0);
  try {
    set_cuda_device(-1);
    FAIL() << "set_cuda_device(-1) did not throw";
  } catch (const std::invalid_argument &e) {
    EXPECT_STREQ(e.what(),
                 "set_cuda_device(-1): a CUDA device index is 0 or more");
  }
  static_assert(std::is_base_of_v<std::runtime_error, DeviceError>);
}

TEST(CudaRuntime, ModuleRegistrationTouchesNoCuda) {
  // What a CUDA model's global constructors and destructors do: on a
  // machine without a driver this must neither fail nor load anything.
  static const char kImage[] = "not even an image";
  void *module = mgpuModuleLoad(const_cast<char *>(kImage), sizeof kImage);
  void *jit = mgpuModuleLoadJIT(const_cast<char *>(kImage), 2);
  EXPECT_NE(module, nullptr);
  EXPECT_NE(jit, nullptr);
  if (cuda_built()) {
    EXPECT_EQ(mgpuStreamCreate(), nullptr); // outside a run: default stream
    mgpuStreamDestroy(nullptr);
  }
  mgpuModuleUnload(module);
  mgpuModuleUnload(jit);
}

TEST(CudaRuntime, ModelWithoutDriver) {
  if (!cuda_built())
    GTEST_SKIP() << "SKIP: this runtime was built without CUDA";
  TestSpec t("Tiny", Device::Cuda, {{"x", DType::F32, {4}}},
             {{"y", DType::F32, {4}}});
  EXPECT_DEVICE_ERROR(kNoDriver, CompiledModel model(t.spec(), kNoOp),
                      "^estc runtime: model 'Tiny' is compiled for CUDA, but "
                      "/nonexistent/libcuda.so.1 \\(\\$ESTC_CUDA_DRIVER\\) "
                      "cannot be loaded \\(.*\\): this machine has no NVIDIA "
                      "driver\n$");
  // The shared-variables constructor, and the device queries.
  float v[4] = {};
  void *vars[] = {v};
  EXPECT_DEVICE_ERROR(kNoDriver, CompiledModel model(t.spec(), kNoOp, vars),
                      "model 'Tiny' is compiled for CUDA, but .* no NVIDIA "
                      "driver\n$");
  EXPECT_DEVICE_ERROR(kNoDriver, cuda_device_count(),
                      "^estc runtime: /nonexistent/libcuda.so.1 .*cannot be "
                      "loaded .*: this machine has no NVIDIA driver\n$");
  EXPECT_DEVICE_ERROR(kNoDriver, cuda_device_arch(0),
                      "^estc runtime: /nonexistent/libcuda.so.1 .*cannot be "
                      "loaded .*: this machine has no NVIDIA driver\n$");
  // Without the variable, the driver's own name, where there is none.
  void *real = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (real) {
    dlclose(real);
    return;
  }
  EXPECT_DEVICE_ERROR("", CompiledModel model(t.spec(), kNoOp),
                      "^estc runtime: model 'Tiny' is compiled for CUDA, but "
                      "libcuda.so.1 cannot be loaded \\(.*\\): this machine "
                      "has no NVIDIA driver\n$");
}

TEST(CudaRuntime, StubDriver) {
  if (!cuda_built())
    GTEST_SKIP() << "SKIP: this runtime was built without CUDA";
  std::string stub = stubDriver();
  if (!fileExists(stub))
    GTEST_SKIP() << "SKIP: no " << stub;
  TestSpec t("Tiny", Device::Cuda, {}, {{"y", DType::F32, {4}}});
  EXPECT_DEVICE_ERROR(stub.c_str(), CompiledModel model(t.spec(), kNoOp),
                      "^estc runtime: model 'Tiny' is compiled for CUDA, but "
                      "the CUDA driver cannot start \\(cuInit: "
                      "CUDA_ERROR_STUB_LIBRARY\\): .*stubs/libcuda.so is the "
                      "CUDA toolkit's stub, not an NVIDIA driver\n$");
}

TEST(CudaRuntime, BuiltWithoutCuda) {
  if (cuda_built())
    GTEST_SKIP() << "SKIP: this runtime was built with CUDA";
  TestSpec t("Tiny", Device::Cuda, {}, {{"y", DType::F32, {4}}});
  EXPECT_DEVICE_ERROR("", CompiledModel model(t.spec(), kNoOp),
                      "^estc runtime: model 'Tiny' is compiled for CUDA, but "
                      "this estc runtime was built without CUDA\n$");
  EXPECT_ABORT_LINE("", mgpuStreamCreate(),
                    "estc runtime: this estc runtime was built without CUDA");
}

TEST(CudaRuntime, EntryPointsWithoutDriver) {
  if (!cuda_built())
    GTEST_SKIP() << "SKIP: this runtime was built without CUDA";
  // Outside CompiledModel::run the C entry points cannot throw through
  // compiled code: one line, then abort.
  const char *kLine =
      "estc runtime: /nonexistent/libcuda.so.1 \\(\\$ESTC_CUDA_DRIVER\\) "
      "cannot be loaded \\(.*\\): this machine has no NVIDIA driver\n";
  static const char kImage[] = "image";
  EXPECT_ABORT_LINE(
      kNoDriver,
      mgpuModuleGetFunction(
          mgpuModuleLoad(const_cast<char *>(kImage), sizeof kImage), "k"),
      kLine);
  EXPECT_ABORT_LINE(kNoDriver, mgpuStreamSynchronize(nullptr), kLine);
  int dummy = 0;
  EXPECT_ABORT_LINE(kNoDriver,
                    mgpuLaunchKernel(&dummy, 1, 1, 1, 1, 1, 1, 0, nullptr,
                                     nullptr, nullptr, 0),
                    kLine);
  float data[4] = {};
  MemRef<float, 3> m3 = makeRowMajor<float, 3>(data, {1, 2, 2});
  MemRef<double, 3> d3 =
      makeRowMajor<double, 3>(reinterpret_cast<double *>(data), {1, 1, 2});
  MemRef<float, 4> m4 = makeRowMajor<float, 4>(data, {1, 2, 2, 1});
  MemRef<float, 4> f4 = makeRowMajor<float, 4>(data, {1, 1, 1, 1});
  EXPECT_ABORT_LINE(
      kNoDriver, _mlir_ciface_estc_cuda_matmul_f32(&m3, &m3, &m3, 0, 0), kLine);
  EXPECT_ABORT_LINE(
      kNoDriver, _mlir_ciface_estc_cuda_matmul_f64(&d3, &d3, &d3, 0, 1), kLine);
  EXPECT_ABORT_LINE(kNoDriver,
                    _mlir_ciface_estc_cuda_conv2d_nhwc_hwio_f32(
                        &m4, &f4, &m4, 1, 1, 1, 1, 0, 0),
                    kLine);
  EXPECT_ABORT_LINE(kNoDriver,
                    _mlir_ciface_estc_cuda_conv2d_backprop_input_f32(
                        &f4, &m4, &m4, 1, 1, 1, 1, 0, 0),
                    kLine);
  EXPECT_ABORT_LINE(kNoDriver,
                    _mlir_ciface_estc_cuda_conv2d_backprop_filter_f32(
                        &m4, &m4, &f4, 1, 1, 1, 1, 0, 0),
                    kLine);
}

TEST(CudaRuntime, LibrariesLoadWithoutDriver) {
  if (!cuda_built())
    GTEST_SKIP() << "SKIP: this runtime was built without CUDA";
  // cuBLAS and cuDNN open without a driver: every entry point the kernels
  // use must resolve in the installed versions.
  std::string versions;
  try {
    versions = cuda_library_versions();
  } catch (const DeviceError &e) {
    std::string what = e.what();
    EXPECT_NE(what.find("cannot be loaded"), std::string::npos) << what;
    GTEST_SKIP() << "SKIP: " << what;
  }
  EXPECT_NE(versions.find("cuBLAS 13."), std::string::npos) << versions;
  EXPECT_NE(versions.find("cuDNN 9"), std::string::npos) << versions;
}

TEST(CudaRuntime, ProfileReportWithNothingProfiled) {
  // Nothing profiled (no CUDA run in this test): the report says so, and
  // making it needs no driver.
  cuda_profile_reset();
  const std::string nothing = "estc CUDA profile: no CUDA work profiled\n";
  EXPECT_EQ(cuda_profile_report(), nothing);
  bool was = cuda_profiling();
  set_cuda_profiling(true);
  EXPECT_TRUE(cuda_profiling());
  EXPECT_EQ(cuda_profile_report(), nothing);
  set_cuda_profiling(false);
  EXPECT_FALSE(cuda_profiling());
  set_cuda_profiling(was);
}

TEST(CudaRuntime, ProfilingSwitchFromEnvironment) {
  // $ESTC_CUDA_PROFILE is read once, when the runtime is loaded: a fresh
  // process (gtest's threadsafe death tests re-execute this binary) sees it.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  setenv("ESTC_CUDA_PROFILE", "1", 1);
  EXPECT_EXIT(std::exit(cuda_profiling() ? 0 : 1), ::testing::ExitedWithCode(0),
              "");
  setenv("ESTC_CUDA_PROFILE", "0", 1);
  EXPECT_EXIT(std::exit(cuda_profiling() ? 1 : 0), ::testing::ExitedWithCode(0),
              "");
  unsetenv("ESTC_CUDA_PROFILE");
}

// --- On a GPU: kernels against the CPU's ------------------------------------

struct MatmulCase {
  int64_t batch, m, k, n, ba, bb;
  bool ta, tb;
};
MatmulCase gMatmul;

template <typename T> void cudaMatmulEntry(void **args);
template <> void cudaMatmulEntry<float>(void **args) {
  _mlir_ciface_estc_cuda_matmul_f32(static_cast<MemRef<float, 3> *>(args[1]),
                                    static_cast<MemRef<float, 3> *>(args[2]),
                                    static_cast<MemRef<float, 3> *>(args[3]),
                                    gMatmul.ta, gMatmul.tb);
}
template <> void cudaMatmulEntry<double>(void **args) {
  _mlir_ciface_estc_cuda_matmul_f64(static_cast<MemRef<double, 3> *>(args[1]),
                                    static_cast<MemRef<double, 3> *>(args[2]),
                                    static_cast<MemRef<double, 3> *>(args[3]),
                                    gMatmul.ta, gMatmul.tb);
}

template <typename T> void checkMatmul(const MatmulCase &c) {
  gMatmul = c;
  DType dtype = sizeof(T) == 4 ? DType::F32 : DType::F64;
  std::vector<int64_t> aShape = c.ta ? std::vector<int64_t>{c.ba, c.k, c.m}
                                     : std::vector<int64_t>{c.ba, c.m, c.k};
  std::vector<int64_t> bShape = c.tb ? std::vector<int64_t>{c.bb, c.n, c.k}
                                     : std::vector<int64_t>{c.bb, c.k, c.n};
  TestSpec t("CudaMatmul", Device::Cuda,
             {{"a", dtype, aShape}, {"b", dtype, bShape}},
             {{"c", dtype, {c.batch, c.m, c.n}}});
  static const EntryPoint entries[] = {cudaMatmulEntry<T>};
  CompiledModel model(t.spec(), entries);
  std::vector<float> ra = randomFloats(size_t(c.ba * c.m * c.k), 1);
  std::vector<float> rb = randomFloats(size_t(c.bb * c.k * c.n), 2);
  std::vector<T> a(ra.begin(), ra.end()), b(rb.begin(), rb.end());
  std::memcpy(model.input_data(0, 0), a.data(), a.size() * sizeof(T));
  std::memcpy(model.input_data(0, 1), b.data(), b.size() * sizeof(T));
  model.run(0);
  std::vector<T> got(size_t(c.batch * c.m * c.n));
  std::memcpy(got.data(), model.output_data(0, 0), got.size() * sizeof(T));

  std::vector<T> want(got.size(), T(-1));
  MemRef<T, 3> ma =
      makeRowMajor<T, 3>(a.data(), {aShape[0], aShape[1], aShape[2]});
  MemRef<T, 3> mb =
      makeRowMajor<T, 3>(b.data(), {bShape[0], bShape[1], bShape[2]});
  MemRef<T, 3> mc = makeRowMajor<T, 3>(want.data(), {c.batch, c.m, c.n});
  if constexpr (sizeof(T) == 4)
    _mlir_ciface_estc_matmul_f32(&ma, &mb, &mc, c.ta, c.tb);
  else
    _mlir_ciface_estc_matmul_f64(&ma, &mb, &mc, c.ta, c.tb);
  double tolerance = sizeof(T) == 4 ? 1e-5 : 1e-12;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tolerance * double(c.k + 1))
        << "element " << i << " of batch " << c.batch << " m " << c.m << " k "
        << c.k << " n " << c.n << " ta " << c.ta << " tb " << c.tb;
  // Deterministic: the same bits again (the third run is a graph capture,
  // the fourth a replay).
  for (int run = 0; run < 3; ++run) {
    model.run(0);
    ASSERT_EQ(std::memcmp(got.data(), model.output_data(0, 0),
                          got.size() * sizeof(T)),
              0)
        << "run " << run + 2;
  }
}

TEST(CudaRuntimeGpu, MatmulAgainstCpu) {
  REQUIRE_CUDA_DEVICE();
  for (MatmulCase c : std::vector<MatmulCase>{
           {1, 5, 7, 3, 1, 1, false, false},
           {3, 17, 33, 9, 3, 3, false, false},
           {3, 17, 33, 9, 3, 3, true, false},
           {3, 17, 33, 9, 3, 3, false, true},
           {4, 16, 8, 31, 1, 4, true, true},  // A broadcast
           {4, 16, 8, 31, 4, 1, false, true}, // B broadcast
           {2, 3, 0, 5, 2, 2, false, false},  // empty sum: zeros
       }) {
    SCOPED_TRACE(testing::Message() << "f32 case batch " << c.batch);
    checkMatmul<float>(c);
  }
  checkMatmul<double>({2, 9, 13, 6, 2, 1, true, false});
}

TEST(CudaRuntimeGpu, MatmulShapeErrorIsRecorded) {
  REQUIRE_CUDA_DEVICE();
  gMatmul = {1, 2, 3, 4, 1, 1, false, false};
  // A's K (5) is not B's K (3): a compiler bug, reported by run().
  TestSpec t("BadMatmul", Device::Cuda,
             {{"a", DType::F32, {1, 2, 5}}, {"b", DType::F32, {1, 3, 4}}},
             {{"c", DType::F32, {1, 2, 4}}});
  static const EntryPoint entries[] = {cudaMatmulEntry<float>};
  CompiledModel model(t.spec(), entries);
  try {
    model.run(0);
    FAIL() << "no error";
  } catch (const DeviceError &e) {
    EXPECT_STREQ(e.what(), "estc runtime: model 'BadMatmul' on cuda:0: "
                           "estc_cuda_matmul_f32: shapes [1,2,5] x [1,3,4] -> "
                           "[1,2,4] do not agree");
  }
}

struct ConvCase {
  int64_t n, h, w, c, kh, kw, o, strideH, strideW, dilationH, dilationW, padTop,
      padLeft;
  int64_t oh() const {
    return (h + 2 * padTop - dilationH * (kh - 1) - 1) / strideH + 1;
  }
  int64_t ow() const {
    return (w + 2 * padLeft - dilationW * (kw - 1) - 1) / strideW + 1;
  }
};
ConvCase gConv;

#define CONV_ARGS                                                              \
  gConv.strideH, gConv.strideW, gConv.dilationH, gConv.dilationW,              \
      gConv.padTop, gConv.padLeft
void convForwardEntry(void **args) {
  _mlir_ciface_estc_cuda_conv2d_nhwc_hwio_f32(
      static_cast<MemRef<float, 4> *>(args[1]),
      static_cast<MemRef<float, 4> *>(args[2]),
      static_cast<MemRef<float, 4> *>(args[3]), CONV_ARGS);
}
void convBackpropInputEntry(void **args) {
  _mlir_ciface_estc_cuda_conv2d_backprop_input_f32(
      static_cast<MemRef<float, 4> *>(args[1]),
      static_cast<MemRef<float, 4> *>(args[2]),
      static_cast<MemRef<float, 4> *>(args[3]), CONV_ARGS);
}
void convBackpropFilterEntry(void **args) {
  _mlir_ciface_estc_cuda_conv2d_backprop_filter_f32(
      static_cast<MemRef<float, 4> *>(args[1]),
      static_cast<MemRef<float, 4> *>(args[2]),
      static_cast<MemRef<float, 4> *>(args[3]), CONV_ARGS);
}

/// Runs a two-input, one-output CUDA model around `entry` and returns the
/// output.
std::vector<float> runCudaConv(EntryPoint entry, const std::vector<int64_t> &s0,
                               const std::vector<float> &in0,
                               const std::vector<int64_t> &s1,
                               const std::vector<float> &in1,
                               const std::vector<int64_t> &outShape) {
  TestSpec t("CudaConv", Device::Cuda,
             {{"x0", DType::F32, s0}, {"x1", DType::F32, s1}},
             {{"y", DType::F32, outShape}});
  const EntryPoint entries[] = {entry};
  CompiledModel model(t.spec(), entries);
  std::memcpy(model.input_data(0, 0), in0.data(), in0.size() * 4);
  std::memcpy(model.input_data(0, 1), in1.data(), in1.size() * 4);
  model.run(0);
  int64_t n = 1;
  for (int64_t d : outShape)
    n *= d;
  std::vector<float> out(size_t(n), 0.f);
  std::memcpy(out.data(), model.output_data(0, 0), out.size() * 4);
  for (int run = 0; run < 3; ++run) {
    model.run(0);
    EXPECT_EQ(std::memcmp(out.data(), model.output_data(0, 0), out.size() * 4),
              0)
        << "not deterministic at run " << run + 2;
  }
  return out;
}

void expectClose(const std::vector<float> &got, const std::vector<float> &want,
                 double tolerance, const char *what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tolerance) << what << " element " << i;
}

TEST(CudaRuntimeGpu, ConvolutionsAgainstCpu) {
  REQUIRE_CUDA_DEVICE();
  for (ConvCase c : std::vector<ConvCase>{
           {2, 9, 8, 3, 3, 2, 4, 1, 1, 1, 1, 1, 0},
           {2, 9, 8, 3, 3, 2, 4, 2, 2, 2, 2, 2, 1},
           {3, 12, 12, 5, 5, 5, 7, 1, 1, 1, 1, 2, 2}, // SAME, odd filter
           {1, 6, 6, 2, 3, 3, 3, 2, 2, 1, 1, 0, 0}, // VALID, stride drops a row
       }) {
    SCOPED_TRACE(testing::Message()
                 << "conv " << c.h << "x" << c.w << " k " << c.kh << "x" << c.kw
                 << " stride " << c.strideH << " dilation " << c.dilationH);
    gConv = c;
    std::vector<int64_t> xs = {c.n, c.h, c.w, c.c}, ws = {c.kh, c.kw, c.c, c.o},
                         ys = {c.n, c.oh(), c.ow(), c.o};
    std::vector<float> x = randomFloats(size_t(c.n * c.h * c.w * c.c), 3);
    std::vector<float> w = randomFloats(size_t(c.kh * c.kw * c.c * c.o), 4);
    std::vector<float> dy =
        randomFloats(size_t(c.n * c.oh() * c.ow() * c.o), 5);
    double tolerance = 1e-5 * double(c.kh * c.kw * std::max(c.c, c.o) + 1);

    std::vector<float> y(dy.size()), dx(x.size()), dw(w.size());
    MemRef<float, 4> mx =
        makeRowMajor<float, 4>(x.data(), {xs[0], xs[1], xs[2], xs[3]});
    MemRef<float, 4> mw =
        makeRowMajor<float, 4>(w.data(), {ws[0], ws[1], ws[2], ws[3]});
    MemRef<float, 4> mdy =
        makeRowMajor<float, 4>(dy.data(), {ys[0], ys[1], ys[2], ys[3]});
    MemRef<float, 4> my =
        makeRowMajor<float, 4>(y.data(), {ys[0], ys[1], ys[2], ys[3]});
    MemRef<float, 4> mdx =
        makeRowMajor<float, 4>(dx.data(), {xs[0], xs[1], xs[2], xs[3]});
    MemRef<float, 4> mdw =
        makeRowMajor<float, 4>(dw.data(), {ws[0], ws[1], ws[2], ws[3]});
    _mlir_ciface_estc_conv2d_nhwc_hwio_f32(&mx, &mw, &my, CONV_ARGS);
    _mlir_ciface_estc_conv2d_backprop_input_f32(&mw, &mdy, &mdx, CONV_ARGS);
    _mlir_ciface_estc_conv2d_backprop_filter_f32(&mx, &mdy, &mdw, CONV_ARGS);

    expectClose(runCudaConv(convForwardEntry, xs, x, ws, w, ys), y, tolerance,
                "forward");
    expectClose(runCudaConv(convBackpropInputEntry, ws, w, ys, dy, xs), dx,
                tolerance, "backprop input");
    expectClose(runCudaConv(convBackpropFilterEntry, xs, x, ys, dy, ws), dw,
                tolerance * double(c.n * c.oh() * c.ow()) / double(c.kh * c.kw),
                "backprop filter");
  }
}

TEST(CudaRuntimeGpu, AsymmetricPaddingIsRefused) {
  REQUIRE_CUDA_DEVICE();
  // TF SAME with stride 2 on an even size pads 0 above and 1 below: cuDNN
  // cannot, and the compiler keeps such a convolution as a loop nest. The
  // kernel reports the output it was given does not match.
  gConv = {1, 6, 6, 1, 2, 2, 1, 2, 2, 1, 1, 0, 0};
  TestSpec t("Asym", Device::Cuda,
             {{"x", DType::F32, {1, 6, 6, 1}}, {"w", DType::F32, {2, 2, 1, 1}}},
             {{"y", DType::F32, {1, 4, 4, 1}}});
  static const EntryPoint entries[] = {convForwardEntry};
  CompiledModel model(t.spec(), entries);
  try {
    model.run(0);
    FAIL() << "no error";
  } catch (const DeviceError &e) {
    EXPECT_NE(std::string(e.what()).find(
                  "estc_cuda_conv2d_nhwc_hwio_f32: output [1,4,4,1] is not "
                  "the [1,3,3,1]"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("cuDNN pads symmetrically"),
              std::string::npos)
        << e.what();
  }
}

// --- On a GPU: the mgpu ABI and CompiledModel ------------------------------

// Hand-written PTX, JIT-compiled by the driver: add_one (y = x + 1),
// accumulate (v += x), check_negative (status words when x[0] < 0).
const char kPtx[] = R"(
.version 7.0
.target sm_75
.address_size 64

.visible .entry add_one(.param .u64 x, .param .u64 y, .param .u64 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<10>;
  .reg .f32 %f<3>;
  ld.param.u64 %rd1, [x];
  ld.param.u64 %rd2, [y];
  ld.param.u64 %rd3, [n];
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mul.wide.u32 %rd4, %r1, %r2;
  cvt.u64.u32 %rd5, %r3;
  add.u64 %rd4, %rd4, %rd5;
  setp.ge.u64 %p1, %rd4, %rd3;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  shl.b64 %rd6, %rd4, 2;
  add.u64 %rd7, %rd1, %rd6;
  ld.global.f32 %f1, [%rd7];
  add.f32 %f2, %f1, 0f3F800000;
  add.u64 %rd8, %rd2, %rd6;
  st.global.f32 [%rd8], %f2;
DONE:
  ret;
}

.visible .entry accumulate(.param .u64 v, .param .u64 x, .param .u64 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<10>;
  .reg .f32 %f<4>;
  ld.param.u64 %rd1, [v];
  ld.param.u64 %rd2, [x];
  ld.param.u64 %rd3, [n];
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mul.wide.u32 %rd4, %r1, %r2;
  cvt.u64.u32 %rd5, %r3;
  add.u64 %rd4, %rd4, %rd5;
  setp.ge.u64 %p1, %rd4, %rd3;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  shl.b64 %rd6, %rd4, 2;
  add.u64 %rd7, %rd1, %rd6;
  add.u64 %rd8, %rd2, %rd6;
  ld.global.f32 %f1, [%rd7];
  ld.global.f32 %f2, [%rd8];
  add.f32 %f3, %f1, %f2;
  st.global.f32 [%rd7], %f3;
DONE:
  ret;
}

.visible .entry check_negative(.param .u64 x, .param .u64 status)
{
  .reg .pred %p<2>;
  .reg .b64 %rd<6>;
  .reg .f32 %f<2>;
  ld.param.u64 %rd1, [x];
  ld.param.u64 %rd2, [status];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  ld.global.f32 %f1, [%rd1];
  setp.ge.f32 %p1, %f1, 0f00000000;
  @%p1 bra DONE;
  cvt.rzi.s64.f32 %rd3, %f1;
  mov.u64 %rd4, 1;
  st.global.u64 [%rd2], %rd4;
  mov.u64 %rd5, 0;
  st.global.u64 [%rd2+8], %rd5;
  st.global.u64 [%rd2+16], %rd3;
DONE:
  ret;
}
)";

// Registered from a global constructor, as compiled objects do (which is
// also why this binary starts on machines without a driver).
void *const gPtxModule = mgpuModuleLoadJIT(const_cast<char *>(kPtx), 3);

/// The device address of a descriptor's first element (descriptors are
/// {allocated, aligned, offset, sizes..., strides...} in int64 words).
void *deviceAddress(void *descriptor, size_t elementBytes) {
  auto *d = static_cast<int64_t *>(descriptor);
  return reinterpret_cast<void *>(d[1] + d[2] * int64_t(elementBytes));
}
int64_t size0(void *descriptor) {
  return static_cast<int64_t *>(descriptor)[3];
}

/// Launches `kernel` over n threads with two pointers and n, as generated
/// host code does: GetFunction, StreamCreate, LaunchKernel, Synchronize,
/// Destroy.
void launch(const char *kernel, void *p0, void *p1, int64_t n) {
  void *fn = mgpuModuleGetFunction(gPtxModule, kernel);
  void *stream = mgpuStreamCreate();
  uint64_t count = uint64_t(n);
  void *params[] = {&p0, &p1, &count};
  mgpuLaunchKernel(fn, (n + 255) / 256, 1, 1, 256, 1, 1, 0, stream, params,
                   nullptr, 3);
  mgpuStreamSynchronize(stream);
  mgpuStreamDestroy(stream);
}

/// args: arena, v [8], m [8] (local), x [batch], y [batch]:
/// v += x[:8], m += x[:8], y = x + 1.
void ptxStepEntry(void **args) {
  void *v = deviceAddress(args[1], 4), *m = deviceAddress(args[2], 4);
  void *x = deviceAddress(args[3], 4), *y = deviceAddress(args[4], 4);
  int64_t batch = size0(args[3]);
  launch("accumulate", v, x, std::min<int64_t>(batch, 8));
  launch("accumulate", m, x, std::min<int64_t>(batch, 8));
  launch("add_one", x, y, batch);
}

TestSpec ptxSpec() {
  return TestSpec("PtxModel", Device::Cuda, {{"x", DType::F32, {kBatchDim}}},
                  {{"y", DType::F32, {kBatchDim}}},
                  {{"v", {8}, false}, {"m", {8}, true}});
}

TEST(CudaRuntimeGpu, PtxModuleThroughCompiledModel) {
  REQUIRE_CUDA_DEVICE();
  TestSpec t = ptxSpec();
  static const EntryPoint entries[] = {ptxStepEntry};
  for (const char *graphs : {"1", "0"}) {
    SCOPED_TRACE(std::string("ESTC_CUDA_GRAPHS=") + graphs);
    setenv("ESTC_CUDA_GRAPHS", graphs, 1);
    CompiledModel model(t.spec(), entries);
    unsetenv("ESTC_CUDA_GRAPHS");
    // Initial values through the host mirror (as a checkpoint restore).
    auto *v = static_cast<float *>(model.variable_data(0));
    for (int i = 0; i < 8; ++i)
      v[i] = float(i);
    std::vector<float> wantV(8), wantM(8, 0.f);
    for (int i = 0; i < 8; ++i)
      wantV[i] = float(i);
    // Six runs at one batch (capture at the third, replays after), then
    // two at another: fresh inputs must reach every run.
    for (int run = 0; run < 8; ++run) {
      int64_t batch = run < 6 ? 8 : 5;
      if (run == 0 || run == 6)
        model.set_batch(batch);
      auto *x = static_cast<float *>(model.input_data(0, 0));
      for (int64_t i = 0; i < batch; ++i)
        x[i] = float(run * 10 + i);
      model.run(0);
      auto *y = static_cast<const float *>(model.output_data(0, 0));
      for (int64_t i = 0; i < batch; ++i) {
        ASSERT_EQ(y[i], float(run * 10 + i) + 1.f) << "run " << run;
        wantV[i] += float(run * 10 + i);
        wantM[i] += float(run * 10 + i);
      }
    }
    v = static_cast<float *>(model.variable_data(0));
    auto *m = static_cast<float *>(model.variable_data(1));
    for (int i = 0; i < 8; ++i) {
      EXPECT_EQ(v[i], wantV[i]) << i;
      EXPECT_EQ(m[i], wantM[i]) << i;
    }
    // A write through the mirror is uploaded before the next step; local
    // variables are zeroed by reset_local_variables.
    v[0] = 100.f;
    model.reset_local_variables();
    auto *x = static_cast<float *>(model.input_data(0, 0));
    for (int i = 0; i < 5; ++i)
      x[i] = 1.f;
    model.run(0);
    v = static_cast<float *>(model.variable_data(0));
    m = static_cast<float *>(model.variable_data(1));
    EXPECT_EQ(v[0], 101.f);
    EXPECT_EQ(v[7], wantV[7]);
    EXPECT_EQ(m[0], 1.f);
    EXPECT_EQ(m[7], 0.f);

    // Bound caller buffers (pageable memory) go through pinned staging.
    std::vector<float> in = {3, 4, 5, 6, 7}, out(5, 0.f);
    model.bind_input(0, 0, in.data(), {5});
    model.bind_output(0, 0, out.data(), {5});
    for (int run = 0; run < 4; ++run) {
      in[0] = float(run);
      model.run(0);
      EXPECT_EQ(out[0], float(run) + 1.f) << "bound, run " << run;
      EXPECT_EQ(out[4], 8.f);
    }
  }
}

TEST(CudaRuntimeGpu, SharedVariables) {
  REQUIRE_CUDA_DEVICE();
  TestSpec t = ptxSpec();
  static const EntryPoint entries[] = {ptxStepEntry};
  alignas(64) float v[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  alignas(64) float m[8] = {};
  void *vars[] = {v, m};
  CompiledModel model(t.spec(), entries, vars);
  model.set_batch(2);
  auto *x = static_cast<float *>(model.input_data(0, 0));
  x[0] = 10;
  x[1] = 20;
  model.run(0);
  EXPECT_EQ(model.variable_data(0), static_cast<void *>(v));
  EXPECT_EQ(v[0], 11.f);
  EXPECT_EQ(v[1], 22.f);
  EXPECT_EQ(v[2], 3.f);
}

/// args: arena (status slot at 0), x [batch]; fails check 0 when x[0] < 0.
void checkEntry(void **args) {
  launch("check_negative", deviceAddress(args[1], 4), deviceAddress(args[0], 1),
         1);
}

TEST(CudaRuntimeGpu, RunTimeChecksThroughGraphs) {
  REQUIRE_CUDA_DEVICE();
  TestSpec t("Checked", Device::Cuda, {{"x", DType::F32, {kBatchDim}}}, {}, {},
             /*hasChecks=*/true);
  static const EntryPoint entries[] = {checkEntry};
  CompiledModel model(t.spec(), entries);
  model.set_batch(4);
  auto *x = static_cast<float *>(model.input_data(0, 0));
  // Runs 1-3 pass (3 captures), 4 fails (a replay), 5 passes again: the
  // replayed step clears the status word.
  for (int run = 0; run < 6; ++run) {
    bool bad = run == 3;
    x[0] = bad ? -3.f : 1.f;
    if (!bad) {
      EXPECT_NO_THROW(model.run(0)) << "run " << run;
      continue;
    }
    try {
      model.run(0);
      ADD_FAILURE() << "run " << run << " did not fail its check";
    } catch (const InvalidArgumentError &e) {
      EXPECT_STREQ(
          e.what(),
          "node 'labels' : label -3 at batch row 0 is outside [0, 10)");
    }
  }
}

void missingKernelEntry(void **args) {
  launch("no_such_kernel", deviceAddress(args[1], 4), nullptr, 1);
}

TEST(CudaRuntimeGpu, CudaErrorsAreThrownAfterTheStep) {
  REQUIRE_CUDA_DEVICE();
  TestSpec t("Broken", Device::Cuda, {{"x", DType::F32, {4}}}, {});
  static const EntryPoint entries[] = {missingKernelEntry};
  CompiledModel model(t.spec(), entries);
  for (int run = 0; run < 2; ++run) {
    try {
      model.run(0);
      ADD_FAILURE() << "no error";
    } catch (const DeviceError &e) {
      EXPECT_STREQ(e.what(),
                   "estc runtime: model 'Broken' on cuda:0: "
                   "cuModuleGetFunction: CUDA_ERROR_NOT_FOUND (named symbol "
                   "not found) for kernel 'no_such_kernel'");
    }
  }
}

TEST(CudaRuntimeGpu, DeviceOutOfRange) {
  REQUIRE_CUDA_DEVICE();
  std::string why;
  int count = deviceCount(why);
  // What the JIT compiles for: the device's compute capability.
  std::string arch = cuda_device_arch(0);
  EXPECT_TRUE(arch.size() > 3 && arch.compare(0, 3, "sm_") == 0 &&
              arch.find_first_not_of("0123456789", 3) == std::string::npos)
      << arch;
  try {
    cuda_device_arch(count);
    ADD_FAILURE() << "no error";
  } catch (const DeviceError &e) {
    EXPECT_NE(std::string(e.what()).find(" does not exist ("),
              std::string::npos)
        << e.what();
  }
  set_cuda_device(count);
  TestSpec t("Tiny", Device::Cuda, {}, {{"y", DType::F32, {4}}});
  try {
    CompiledModel model(t.spec(), kNoOp);
    ADD_FAILURE() << "no error";
  } catch (const DeviceError &e) {
    std::string want = "estc runtime: model 'Tiny' is compiled for CUDA, but "
                       "device cuda:" +
                       std::to_string(count) + " does not exist (" +
                       std::to_string(count) +
                       (count == 1 ? " device)" : " devices)");
    EXPECT_EQ(e.what(), want);
  }
  set_cuda_device(0);
}

TEST(CudaRuntimeGpu, KernelsOutsideARun) {
  REQUIRE_CUDA_DEVICE();
  // A kernel called by hand (no CompiledModel) runs on the default stream of
  // the current context; a bad shape there stops the process with one line.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  float host[4] = {};
  MemRef<float, 3> a = makeRowMajor<float, 3>(host, {1, 2, 2});
  MemRef<float, 3> b = makeRowMajor<float, 3>(host, {1, 3, 2});
  EXPECT_DEATH(_mlir_ciface_estc_cuda_matmul_f32(&a, &b, &a, 0, 0),
               "^estc runtime: estc_cuda_matmul_f32: shapes \\[1,2,2\\] x "
               "\\[1,3,2\\] -> \\[1,2,2\\] do not agree\n$");
}

// --- On a GPU: the profiler
// ---------------------------------------------------

/// args: arena, x [2,9,8,3], w [3,3,3,4], dy [2,9,8,4], a [2,5,7], b [2,7,3],
/// y [2,9,8,4], dx [2,9,8,3], dw [3,3,3,4], c [2,5,3], z [16]: each kind of
/// kernel once, and add_one (z = a[:16] + 1) launched through the mgpu ABI.
void profiledStepEntry(void **args) {
  auto m4 = [&](int i) { return static_cast<MemRef<float, 4> *>(args[i]); };
  auto m3 = [&](int i) { return static_cast<MemRef<float, 3> *>(args[i]); };
  _mlir_ciface_estc_cuda_conv2d_nhwc_hwio_f32(m4(1), m4(2), m4(6), CONV_ARGS);
  _mlir_ciface_estc_cuda_conv2d_backprop_input_f32(m4(2), m4(3), m4(7),
                                                   CONV_ARGS);
  _mlir_ciface_estc_cuda_conv2d_backprop_filter_f32(m4(1), m4(3), m4(8),
                                                    CONV_ARGS);
  _mlir_ciface_estc_cuda_matmul_f32(m3(4), m3(5), m3(9), 0, 0);
  launch("add_one", deviceAddress(args[4], 4), deviceAddress(args[10], 4), 16);
}

/// A report's rows: name -> calls (and their percentages' sum).
std::map<std::string, int64_t> profileRows(const std::string &report,
                                           double &percentSum) {
  static const std::regex row(
      "^ *([0-9.]+) +([0-9]+) +([0-9.]+) +([0-9.]+)% +(.*)$");
  std::map<std::string, int64_t> rows;
  percentSum = 0;
  std::istringstream in(report);
  std::string line;
  std::smatch m;
  while (std::getline(in, line))
    if (std::regex_match(line, m, row)) {
      rows[m[5]] = std::stoll(m[2]);
      percentSum += std::stod(m[4]);
    }
  return rows;
}

/// The calls of the one row whose name starts with `prefix` (-1: none, -2:
/// several).
int64_t callsOf(const std::map<std::string, int64_t> &rows,
                const std::string &prefix) {
  int64_t calls = -1;
  for (const auto &[name, n] : rows)
    if (name.compare(0, prefix.size(), prefix) == 0)
      calls = calls == -1 ? n : -2;
  return calls;
}

TEST(CudaRuntimeGpu, ProfileNamesEveryKernel) {
  REQUIRE_CUDA_DEVICE();
  gConv = {2, 9, 8, 3, 3, 3, 4, 1, 1, 1, 1, 1, 1}; // SAME, 3x3
  TestSpec t("Profiled", Device::Cuda,
             {{"x", DType::F32, {2, 9, 8, 3}},
              {"w", DType::F32, {3, 3, 3, 4}},
              {"dy", DType::F32, {2, 9, 8, 4}},
              {"a", DType::F32, {2, 5, 7}},
              {"b", DType::F32, {2, 7, 3}}},
             {{"y", DType::F32, {2, 9, 8, 4}},
              {"dx", DType::F32, {2, 9, 8, 3}},
              {"dw", DType::F32, {3, 3, 3, 4}},
              {"c", DType::F32, {2, 5, 3}},
              {"z", DType::F32, {16}}});
  static const EntryPoint entries[] = {profiledStepEntry};
  CompiledModel model(t.spec(), entries);
  auto *a = static_cast<float *>(model.input_data(0, 3));
  for (int i = 0; i < 70; ++i)
    a[i] = float(i);

  // Four profiled runs: no graph (the third and fourth would otherwise be
  // a capture and a replay, calling no entry point), every call timed.
  bool was = cuda_profiling();
  cuda_profile_reset();
  set_cuda_profiling(true);
  for (int run = 0; run < 4; ++run)
    model.run(0);
  set_cuda_profiling(false);
  model.run(0); // not profiled
  set_cuda_profiling(was);
  EXPECT_EQ(static_cast<const float *>(model.output_data(0, 4))[15], 16.f);

  std::string report = cuda_profile_report();
  SCOPED_TRACE(report);
  EXPECT_EQ(report.rfind("estc CUDA profile: 4 steps, ", 0), 0u);
  EXPECT_NE(report.find(" in the 17 kinds of work below; "), std::string::npos);
  double percentSum = 0;
  std::map<std::string, int64_t> rows = profileRows(report, percentSum);
  EXPECT_EQ(rows.size(), 17u);
  EXPECT_NEAR(percentSum, 100.0, 0.2);
  EXPECT_EQ(callsOf(rows, "cudnn conv fwd NHWC x[2,9,8,3] w[3,3,3,4] "
                          "y[2,9,8,4] pad 1x1 algo "),
            4);
  EXPECT_EQ(callsOf(rows, "cudnn conv bwd data NHWC dy[2,9,8,4] w[3,3,3,4] "
                          "dx[2,9,8,3] pad 1x1 algo "),
            4);
  EXPECT_EQ(callsOf(rows, "cudnn conv bwd filter NHWC x[2,9,8,3] "
                          "dy[2,9,8,4] dw[3,3,3,4] pad 1x1 algo "),
            4);
  EXPECT_EQ(rows["geam transpose filter HWIO [3,3,3,4] -> KRSC"], 8);
  EXPECT_EQ(rows["geam transpose filter grad KRSC -> HWIO [3,3,3,4]"], 4);
  EXPECT_EQ(rows["cublas matmul f32 5x3x7 batch 2"], 4);
  EXPECT_EQ(rows["add_one grid 1x1x1 block 256x1x1"], 4);
  EXPECT_EQ(rows["copy input 'x' host->device 1728 bytes"], 4);
  EXPECT_EQ(rows["copy input 'b' host->device 168 bytes"], 4);
  EXPECT_EQ(rows["copy output 'z' device->host 64 bytes"], 4);

  // The same report is printed on stderr at exit.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        cuda_profile_reset();
        set_cuda_profiling(true);
        model.run(0);
        std::exit(0);
      },
      ::testing::ExitedWithCode(0),
      "estc CUDA profile: 1 step, .*add_one grid 1x1x1 block 256x1x1");

  cuda_profile_reset();
  EXPECT_EQ(cuda_profile_report(),
            "estc CUDA profile: no CUDA work profiled\n");
}

} // namespace
