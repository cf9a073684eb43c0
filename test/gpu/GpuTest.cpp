//===- GpuTest.cpp - The CUDA target against the CPU target --------------===//
//
// The GPU machine's test (docs/design/gpu.md, "Tests"): the same graphs
// compiled ahead of time for the CPU and for CUDA (test/gpu/CMakeLists.txt),
// run through rt::CompiledModel's public API only, so this binary links no
// LLVM: the generated models, estc::runtime and gtest.
//
//   AllOps.*            every op of docs/ops.md (all_ops_graph.cpp): CUDA
//                       against CPU at batches 1, 3 and 17 on identical
//                       random inputs and variables, each prediction within
//                       its group's tolerance (AllOps.h)
//   Training.*          the seed MLP and ConvNet's @train (forward,
//                       backward, Adam): from identical variables, every
//                       variable after 1 and after 10 steps
//   Determinism.*       two CUDA runs bit-identical (incl. CUDA-graph replay)
//   RuntimeChecks.*     a label out of range on CUDA: rt::InvalidArgumentError,
//                       no variable changed
//   Device.*            the one-line rt::DeviceError without a GPU, and for
//                       a device that does not exist
//
// Every case that needs a GPU skips visibly ("SKIP: no CUDA device") when
// the driver reports none (test/gpu/CudaProbe.h).
//
//===----------------------------------------------------------------------===//

#include "test/gpu/AllOps.h"
#include "test/gpu/CudaProbe.h"

#include "AllOpsCpu.h"
#include "AllOpsCuda.h"
#include "ConvNetCpu.h"
#include "ConvNetCuda.h"
#include "MlpCpu.h"
#include "MlpCuda.h"

#include "runtime/CompiledModel.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace estc {
namespace {

using Bytes = std::vector<char>;

#define REQUIRE_CUDA_DEVICE()                                                  \
  do {                                                                         \
    if (gpu_test::probeCuda().devices == 0)                                    \
      GTEST_SKIP() << "SKIP: no CUDA device (" << gpu_test::probeCuda().reason \
                   << ")";                                                     \
  } while (false)

//===----------------------------------------------------------------------===//
// Buffers
//===----------------------------------------------------------------------===//

int64_t elementsOf(const rt::TensorSpec &t, int64_t batch) {
  return rt::numElements(t.rank, t.shape, batch);
}

/// `n` random elements of `dtype`: floats uniform in [lo, hi), integers in
/// [lo, hi], booleans 0 or 1.
Bytes randomBytes(rt::DType dtype, int64_t n, double lo, double hi,
                  std::mt19937 &rng) {
  Bytes bytes(n * rt::dtypeBytes(dtype));
  std::uniform_real_distribution<double> real(lo, hi);
  std::uniform_int_distribution<int64_t> integer(static_cast<int64_t>(lo),
                                                 static_cast<int64_t>(hi));
  for (int64_t i = 0; i < n; ++i) {
    switch (dtype) {
    case rt::DType::F32:
      reinterpret_cast<float *>(bytes.data())[i] =
          static_cast<float>(real(rng));
      break;
    case rt::DType::F64:
      reinterpret_cast<double *>(bytes.data())[i] = real(rng);
      break;
    case rt::DType::I8:
      reinterpret_cast<int8_t *>(bytes.data())[i] =
          static_cast<int8_t>(integer(rng));
      break;
    case rt::DType::I32:
      reinterpret_cast<int32_t *>(bytes.data())[i] =
          static_cast<int32_t>(integer(rng));
      break;
    case rt::DType::I64:
      reinterpret_cast<int64_t *>(bytes.data())[i] = integer(rng);
      break;
    case rt::DType::Bool:
      reinterpret_cast<uint8_t *>(bytes.data())[i] =
          static_cast<uint8_t>(rng() & 1);
      break;
    }
  }
  return bytes;
}

double elementAt(rt::DType dtype, const void *data, int64_t i) {
  switch (dtype) {
  case rt::DType::F32:
    return static_cast<const float *>(data)[i];
  case rt::DType::F64:
    return static_cast<const double *>(data)[i];
  case rt::DType::I8:
    return static_cast<const int8_t *>(data)[i];
  case rt::DType::I32:
    return static_cast<const int32_t *>(data)[i];
  case rt::DType::I64:
    return static_cast<double>(static_cast<const int64_t *>(data)[i]);
  case rt::DType::Bool:
    return static_cast<const uint8_t *>(data)[i];
  }
  return 0;
}

bool isFloat(rt::DType dtype) {
  return dtype == rt::DType::F32 || dtype == rt::DType::F64;
}

/// CUDA against CPU, `n` elements of `dtype`: integers and booleans equal;
/// floats NaN where NaN, the same infinity, otherwise |gpu - cpu| <=
/// tolerance * max(1, |cpu|) (tolerance 0: equal values).
::testing::AssertionResult matches(rt::DType dtype, const void *cpu,
                                   const void *gpu, int64_t n,
                                   double tolerance) {
  int64_t bad = 0, first = -1;
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    double w = elementAt(dtype, cpu, i), v = elementAt(dtype, gpu, i);
    bool ok;
    if (!isFloat(dtype))
      ok = v == w;
    else if (std::isnan(w) || std::isnan(v))
      ok = std::isnan(w) && std::isnan(v);
    else if (std::isinf(w) || std::isinf(v))
      ok = v == w;
    else {
      double err = std::fabs(v - w) / std::max(1.0, std::fabs(w));
      worst = std::max(worst, err);
      ok = tolerance == 0 ? v == w : err <= tolerance;
    }
    if (!ok && bad++ == 0)
      first = i;
  }
  if (bad == 0)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << bad << " of " << n << " elements differ; first: element " << first
         << ": gpu " << elementAt(dtype, gpu, first) << ", cpu "
         << elementAt(dtype, cpu, first) << "; largest relative error " << worst
         << " (tolerance " << tolerance << ")";
}

/// Copies every variable of `from` into `to` (the same graph's variables,
/// in the same order).
void copyVariables(rt::CompiledModel &from, rt::CompiledModel &to) {
  ASSERT_EQ(from.spec().numVariables, to.spec().numVariables);
  for (int v = 0; v < from.spec().numVariables; ++v) {
    ASSERT_STREQ(from.spec().variables[v].name, to.spec().variables[v].name);
    std::memcpy(to.variable_data(v), from.variable_data(v),
                from.variable_bytes(v));
  }
}

std::vector<Bytes> snapshotVariables(rt::CompiledModel &model) {
  std::vector<Bytes> all;
  for (int v = 0; v < model.spec().numVariables; ++v) {
    const char *data = static_cast<const char *>(model.variable_data(v));
    all.emplace_back(data, data + model.variable_bytes(v));
  }
  return all;
}

/// Random values for every variable (floats in [-1, 1), integers in
/// [0, 100]: the global_step counter of the random ops), written into both
/// models.
void setRandomVariables(rt::CompiledModel &cpu, rt::CompiledModel &gpu,
                        uint32_t seed) {
  std::mt19937 rng(seed);
  const rt::ModelSpec &spec = cpu.spec();
  for (int v = 0; v < spec.numVariables; ++v) {
    const rt::VariableSpec &var = spec.variables[v];
    int64_t n = rt::numElements(var.rank, var.shape, 0);
    Bytes bytes = isFloat(var.dtype) ? randomBytes(var.dtype, n, -1, 1, rng)
                                     : randomBytes(var.dtype, n, 0, 100, rng);
    std::memcpy(cpu.variable_data(v), bytes.data(), bytes.size());
    std::memcpy(gpu.variable_data(gpu.variable_index(var.name)), bytes.data(),
                bytes.size());
  }
}

//===----------------------------------------------------------------------===//
// AllOps: every op, CUDA against CPU
//===----------------------------------------------------------------------===//

const gpu_test::FeatureDef &featureOf(const std::string &inputKey) {
  for (const gpu_test::FeatureDef &f : gpu_test::kAllOpsFeatures)
    if (inputKey == std::string("features/") + f.key)
      return f;
  throw std::invalid_argument("the all-ops graph has no feature '" + inputKey +
                              "' in AllOps.h");
}

/// Fills every input of `function` with random values of its feature's
/// range, the same bytes in each model.
void setRandomInputs(const std::vector<rt::CompiledModel *> &models,
                     int function, int64_t batch, std::mt19937 &rng) {
  const rt::FunctionSpec &fn = models[0]->spec().functions[function];
  for (int i = 0; i < fn.numInputs; ++i) {
    const rt::TensorSpec &t = fn.inputs[i];
    const gpu_test::FeatureDef &f = featureOf(t.key);
    Bytes bytes = randomBytes(t.dtype, elementsOf(t, batch), f.lo, f.hi, rng);
    for (rt::CompiledModel *model : models)
      std::memcpy(model->input_data(function, i), bytes.data(), bytes.size());
  }
}

TEST(AllOps, GraphHasEveryGroupAndKnownTolerances) {
  AllOpsCpu cpu;
  const rt::FunctionSpec &predict =
      cpu.spec().functions[cpu.function_index("predict")];
  int groups[3] = {0, 0, 0};
  for (int o = 0; o < predict.numOutputs; ++o) {
    double tolerance = gpu_test::allOpsTolerance(predict.outputs[o].key);
    ASSERT_GE(tolerance, 0) << predict.outputs[o].key;
    ++groups[tolerance == 0 ? 0 : tolerance < 5e-5 ? 1 : 2];
  }
  EXPECT_GT(groups[0], 0);
  EXPECT_GT(groups[1], 0);
  EXPECT_GT(groups[2], 0);
  EXPECT_GE(predict.numOutputs, 100) << "the all-ops graph lost predictions";
}

/// The CPU model alone (runs on every machine): random inputs of the
/// declared ranges pass the graph's run-time checks, and a few predictions
/// equal what the host computes from the same inputs and variables.
TEST(AllOps, CpuModelRunsOnRandomInputs) {
  AllOpsCpu cpu, twin;
  setRandomVariables(cpu, twin, 1);
  int predict = cpu.function_index("predict");
  std::mt19937 rng(2);
  for (int64_t batch : {1, 3, 17}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    cpu.set_batch(batch);
    setRandomInputs({&cpu}, predict, batch, rng);
    ASSERT_NO_THROW(cpu.run(predict));
    const float *x = static_cast<const float *>(
        cpu.input_data(predict, cpu.input_index(predict, "features/x")));
    const int64_t *ids = static_cast<const int64_t *>(
        cpu.input_data(predict, cpu.input_index(predict, "features/ids")));
    const float *relu = static_cast<const float *>(cpu.output_data(
        predict, cpu.output_index(predict, "predictions/exact_relu")));
    for (int64_t i = 0; i < batch * 17; ++i)
      ASSERT_EQ(relu[i], std::max(x[i], 0.0f)) << "element " << i;
    const float *table = static_cast<const float *>(
        cpu.variable_data(cpu.variable_index("table")));
    const float *gathered = static_cast<const float *>(cpu.output_data(
        predict, cpu.output_index(predict, "predictions/exact_gather")));
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t c = 0; c < 4; ++c)
        ASSERT_EQ(gathered[b * 4 + c], table[ids[b] * 4 + c])
            << "row " << b << " column " << c;
  }
}

TEST(AllOps, CudaMatchesCpu) {
  REQUIRE_CUDA_DEVICE();
  AllOpsCpu cpu;
  AllOpsCuda gpu;
  setRandomVariables(cpu, gpu, 1);
  int predict = cpu.function_index("predict");
  ASSERT_EQ(predict, gpu.function_index("predict"));
  const rt::FunctionSpec &fn = cpu.spec().functions[predict];
  std::mt19937 rng(3);
  for (int64_t batch : {1, 3, 17}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    cpu.set_batch(batch);
    gpu.set_batch(batch);
    setRandomInputs({&cpu, &gpu}, predict, batch, rng);
    cpu.run(predict);
    gpu.run(predict);
    for (int o = 0; o < fn.numOutputs; ++o) {
      const rt::TensorSpec &t = fn.outputs[o];
      EXPECT_TRUE(
          matches(t.dtype, cpu.output_data(predict, o),
                  gpu.output_data(predict, gpu.output_index(predict, t.key)),
                  elementsOf(t, batch), gpu_test::allOpsTolerance(t.key)))
          << t.key;
    }
  }
}

//===----------------------------------------------------------------------===//
// Training: the seed models' @train, CUDA against CPU
//===----------------------------------------------------------------------===//

/// A training batch: x uniform in [0, 1) (image-like), labels
/// (i * 7 + step) % 10.
void setTrainBatch(const std::vector<rt::CompiledModel *> &models,
                   int64_t batch, int step, std::mt19937 &rng) {
  rt::CompiledModel &first = *models[0];
  int train = first.function_index("train");
  const rt::TensorSpec &x = first.spec()
                                .functions[train]
                                .inputs[first.input_index(train, "features/x")];
  Bytes images = randomBytes(x.dtype, elementsOf(x, batch), 0, 1, rng);
  std::vector<int64_t> labels(batch);
  for (int64_t i = 0; i < batch; ++i)
    labels[i] = (i * 7 + step) % 10;
  for (rt::CompiledModel *m : models) {
    m->set_batch(batch);
    std::memcpy(m->input_data(train, m->input_index(train, "features/x")),
                images.data(), images.size());
    std::memcpy(m->input_data(train, m->input_index(train, "labels")),
                labels.data(), labels.size() * sizeof(int64_t));
  }
}

float lossOf(rt::CompiledModel &m) {
  int train = m.function_index("train");
  return *static_cast<const float *>(
      m.output_data(train, m.output_index(train, "loss")));
}

/// The bound on CUDA's variables after `steps` steps, against the CPU's,
/// per variable: |gpu - cpu| <= atol + rtol * |cpu - initial| (the move
/// the CPU's optimizer made) for all but `outliers` elements. Adam moves
/// an element by about the learning rate whatever its gradient's size, so
/// an isolated gradient element within rounding of zero whose sign differs
/// between the two moves one element the other way: a few such outliers
/// are allowed, a systematic difference is not.
struct TrainingBound {
  double atol, rtol;
  double outlierFraction; // of a variable's elements, at least 1
};

::testing::AssertionResult withinBound(rt::CompiledModel &cpu,
                                       rt::CompiledModel &gpu,
                                       const std::vector<Bytes> &initial,
                                       const TrainingBound &bound) {
  std::ostringstream failures;
  for (int v = 0; v < cpu.spec().numVariables; ++v) {
    const rt::VariableSpec &var = cpu.spec().variables[v];
    int64_t n = rt::numElements(var.rank, var.shape, 0);
    const void *c = cpu.variable_data(v), *g = gpu.variable_data(v);
    if (!isFloat(var.dtype)) {
      if (std::memcmp(c, g, cpu.variable_bytes(v)) != 0)
        failures << "\n  " << var.name << ": integer values differ";
      continue;
    }
    int64_t outliers = 0, worstAt = -1;
    double worst = 0;
    for (int64_t i = 0; i < n; ++i) {
      double want = elementAt(var.dtype, c, i),
             got = elementAt(var.dtype, g, i);
      double moved =
          std::fabs(want - elementAt(var.dtype, initial[v].data(), i));
      double allowed = bound.atol + bound.rtol * moved;
      double err = std::fabs(got - want);
      if (!(err <= allowed)) { // NaN fails
        ++outliers;
        if (!(err <= worst)) {
          worst = err;
          worstAt = i;
        }
      }
    }
    int64_t maxOutliers =
        std::max<int64_t>(1, static_cast<int64_t>(bound.outlierFraction * n));
    if (outliers > maxOutliers)
      failures << "\n  " << var.name << ": " << outliers << " of " << n
               << " elements outside the bound (at most " << maxOutliers
               << "); worst: element " << worstAt << ", gpu "
               << elementAt(var.dtype, g, worstAt) << ", cpu "
               << elementAt(var.dtype, c, worstAt);
  }
  if (failures.str().empty())
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << failures.str();
}

/// From the CPU's @init (copied to the CUDA model), 10 steps on identical
/// batches: the losses within 1e-4 (step 1) and 1e-3 (later steps,
/// relative), every variable within TrainingBound after step 1 (atol 1e-6,
/// rtol 1e-3, 0.01% outliers) and after step 10 (atol 1e-5, rtol 1e-2,
/// 0.1% outliers); global_step exactly 10.
void checkTraining(rt::CompiledModel &cpu, rt::CompiledModel &gpu,
                   int64_t batch) {
  cpu.run(cpu.function_index("init"));
  copyVariables(cpu, gpu);
  std::vector<Bytes> initial = snapshotVariables(cpu);
  std::mt19937 rng(4);
  for (int step = 1; step <= 10; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    setTrainBatch({&cpu, &gpu}, batch, step, rng);
    cpu.run("train");
    gpu.run("train");
    float want = lossOf(cpu), got = lossOf(gpu);
    double tolerance = step == 1 ? 1e-4 : 1e-3;
    EXPECT_LE(std::fabs(got - want),
              tolerance * std::max(1.0f, std::fabs(want)))
        << "loss: gpu " << got << ", cpu " << want;
    if (step == 1) {
      EXPECT_TRUE(withinBound(cpu, gpu, initial, {1e-6, 1e-3, 1e-4}));
    }
  }
  EXPECT_TRUE(withinBound(cpu, gpu, initial, {1e-5, 1e-2, 1e-3}));
  int step = cpu.variable_index("global_step");
  EXPECT_EQ(*static_cast<const int64_t *>(gpu.variable_data(step)), 10);
}

TEST(Training, MlpCudaMatchesCpu) {
  REQUIRE_CUDA_DEVICE();
  MlpCpu cpu;
  MlpCuda gpu;
  checkTraining(cpu, gpu, 64);
}

TEST(Training, ConvNetCudaMatchesCpu) {
  REQUIRE_CUDA_DEVICE();
  ConvNetCpu cpu;
  ConvNetCuda gpu;
  checkTraining(cpu, gpu, 32);
}

/// The CUDA @init (Philox on the GPU) gives the CPU's initial values.
TEST(Training, CudaInitMatchesCpu) {
  REQUIRE_CUDA_DEVICE();
  ConvNetCpu cpu;
  ConvNetCuda gpu;
  cpu.run("init");
  gpu.run("init");
  for (int v = 0; v < cpu.spec().numVariables; ++v) {
    const rt::VariableSpec &var = cpu.spec().variables[v];
    EXPECT_TRUE(matches(var.dtype, cpu.variable_data(v), gpu.variable_data(v),
                        rt::numElements(var.rank, var.shape, 0), 1e-5))
        << var.name;
  }
}

//===----------------------------------------------------------------------===//
// Determinism
//===----------------------------------------------------------------------===//

/// The all-ops predictions on CUDA: four runs of one model (the third and
/// fourth replay the captured CUDA graph) and a second model, bit for bit.
TEST(Determinism, AllOpsRunsAreBitIdentical) {
  REQUIRE_CUDA_DEVICE();
  AllOpsCuda first, second;
  setRandomVariables(first, second, 5);
  int predict = first.function_index("predict");
  const rt::FunctionSpec &fn = first.spec().functions[predict];
  const int64_t batch = 17;
  first.set_batch(batch);
  second.set_batch(batch);
  std::mt19937 rng(6);
  setRandomInputs({&first, &second}, predict, batch, rng);
  std::vector<Bytes> reference;
  for (int run = 0; run < 4; ++run) {
    first.run(predict);
    for (int o = 0; o < fn.numOutputs; ++o) {
      const char *out =
          static_cast<const char *>(first.output_data(predict, o));
      Bytes bytes(out, out + elementsOf(fn.outputs[o], batch) *
                                 rt::dtypeBytes(fn.outputs[o].dtype));
      if (run == 0)
        reference.push_back(bytes);
      else
        EXPECT_TRUE(bytes == reference[o])
            << fn.outputs[o].key << " differs in run " << run + 1;
    }
  }
  second.run(predict);
  for (int o = 0; o < fn.numOutputs; ++o)
    EXPECT_EQ(std::memcmp(second.output_data(predict, o), reference[o].data(),
                          reference[o].size()),
              0)
        << fn.outputs[o].key << " differs between two models";
}

/// Two ConvNets (convolution gradients through cuDNN, dropout, max-pool
/// gradients, Adam) trained 5 steps on CUDA from the same variables and
/// batches: identical losses and variables, bit for bit.
TEST(Determinism, ConvNetTrainingIsBitIdentical) {
  REQUIRE_CUDA_DEVICE();
  ConvNetCuda first, second;
  first.run("init");
  copyVariables(first, second);
  std::mt19937 rng(7);
  for (int step = 1; step <= 5; ++step) {
    setTrainBatch({&first, &second}, 48, step, rng);
    first.run("train");
    second.run("train");
    float a = lossOf(first), b = lossOf(second);
    EXPECT_EQ(std::memcmp(&a, &b, sizeof a), 0)
        << "step " << step << ": losses " << a << " and " << b;
  }
  std::vector<Bytes> one = snapshotVariables(first),
                     two = snapshotVariables(second);
  for (int v = 0; v < first.spec().numVariables; ++v)
    EXPECT_TRUE(one[v] == two[v]) << first.spec().variables[v].name;
}

//===----------------------------------------------------------------------===//
// Run-time checks and device errors
//===----------------------------------------------------------------------===//

/// A label outside [0, 10) on CUDA: the same one-line InvalidArgumentError
/// as on the CPU, no variable changed (read back from the device), and the
/// model trains on afterwards.
TEST(RuntimeChecks, LabelOutOfRangeOnCudaChangesNoVariable) {
  REQUIRE_CUDA_DEVICE();
  MlpCpu cpu;
  MlpCuda gpu;
  cpu.run("init");
  copyVariables(cpu, gpu);
  std::mt19937 rng(8);
  setTrainBatch({&cpu, &gpu}, 5, 1, rng);
  int train = gpu.function_index("train");
  for (rt::CompiledModel *m : {static_cast<rt::CompiledModel *>(&cpu),
                               static_cast<rt::CompiledModel *>(&gpu)})
    static_cast<int64_t *>(
        m->input_data(train, m->input_index(train, "labels")))[2] = 10;
  std::vector<Bytes> before = snapshotVariables(gpu);
  std::string cpuError, gpuError;
  try {
    cpu.run(train);
  } catch (const rt::InvalidArgumentError &e) {
    cpuError = e.what();
  }
  try {
    gpu.run(train);
    FAIL() << "no InvalidArgumentError on CUDA";
  } catch (const rt::InvalidArgumentError &e) {
    gpuError = e.what();
  }
  EXPECT_NE(gpuError.find("label 10 at batch row 2 is outside [0, 10)"),
            std::string::npos)
      << gpuError;
  EXPECT_EQ(gpuError.find('\n'), std::string::npos) << gpuError;
  EXPECT_EQ(gpuError, cpuError);
  std::vector<Bytes> after = snapshotVariables(gpu);
  for (int v = 0; v < gpu.spec().numVariables; ++v)
    EXPECT_TRUE(before[v] == after[v])
        << gpu.spec().variables[v].name << " changed in a failed step";
  // A good batch trains: the failed check does not stick.
  static_cast<int64_t *>(
      gpu.input_data(train, gpu.input_index(train, "labels")))[2] = 3;
  ASSERT_NO_THROW(gpu.run(train));
  EXPECT_EQ(*static_cast<const int64_t *>(
                gpu.variable_data(gpu.variable_index("global_step"))),
            1);
}

/// On a machine without a GPU (this is the case that runs in CI): a CUDA
/// model fails with one line naming the model and what is missing.
TEST(Device, CudaModelWithoutGpuIsOneLineDeviceError) {
  if (gpu_test::probeCuda().devices > 0)
    GTEST_SKIP() << "SKIP: this machine has a CUDA device (the error without "
                    "one is checked on machines without a GPU)";
  std::string message;
  try {
    MlpCuda model;
    model.set_batch(4);
    model.run("init");
    model.run("predict");
    FAIL() << "a CUDA model ran without a GPU";
  } catch (const rt::DeviceError &e) {
    message = e.what();
  }
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_NE(message.find("model 'MlpCuda' is compiled for CUDA"),
            std::string::npos)
      << message;
  // The CPU model of the same graph runs here.
  MlpCpu cpu;
  EXPECT_NO_THROW(cpu.run("init"));
}

/// A device index past the last: one line naming it and the count.
TEST(Device, MissingDeviceIsOneLineDeviceError) {
  REQUIRE_CUDA_DEVICE();
  int count = gpu_test::probeCuda().devices;
  rt::set_cuda_device(count);
  std::string message;
  try {
    MlpCuda model;
    model.run("init");
  } catch (const rt::DeviceError &e) {
    message = e.what();
  }
  rt::set_cuda_device(0);
  EXPECT_NE(
      message.find("device cuda:" + std::to_string(count) + " does not exist"),
      std::string::npos)
      << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  MlpCuda model; // device 0 again
  EXPECT_NO_THROW(model.run("init"));
}

} // namespace
} // namespace estc
