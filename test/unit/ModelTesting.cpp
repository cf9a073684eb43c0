//===- ModelTesting.cpp - Shared helpers for compiled-model tests -------===//

#include "test/unit/ModelTesting.h"

#include "compiler/Driver/GraphCompiler.h"

#include "llvm/Support/FileSystem.h"

#include <cmath>

namespace estc {
namespace testing {

namespace g = graph;

Dims concrete(const Dims &shape, int64_t batch) {
  Dims out = shape;
  for (int64_t &d : out)
    if (d < 0)
      d = batch;
  return out;
}

Value randomValue(const Feature &f, int64_t batch, std::mt19937 &rng) {
  Dims shape = concrete(f.shape, batch);
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  std::vector<double> data(n);
  for (double &v : data) {
    if (f.dtype == DType::Float32 || f.dtype == DType::Float64) {
      v = std::uniform_real_distribution<double>(f.lo, f.hi)(rng);
      if (f.dtype == DType::Float32)
        v = static_cast<float>(v);
    } else if (f.dtype == DType::Bool) {
      v = std::uniform_int_distribution<int>(0, 1)(rng);
    } else {
      v = std::uniform_int_distribution<int64_t>(
          static_cast<int64_t>(f.lo), static_cast<int64_t>(f.hi))(rng);
    }
  }
  return Value(to_proto(f.dtype), shape, data);
}

void store(const Value &value, void *buffer) {
  for (size_t i = 0; i < value.data.size(); ++i) {
    double v = value.data[i];
    switch (value.dtype) {
    case g::DT_FLOAT:
      static_cast<float *>(buffer)[i] = static_cast<float>(v);
      break;
    case g::DT_DOUBLE:
      static_cast<double *>(buffer)[i] = v;
      break;
    case g::DT_INT32:
      static_cast<int32_t *>(buffer)[i] = static_cast<int32_t>(v);
      break;
    case g::DT_INT64:
      static_cast<int64_t *>(buffer)[i] = static_cast<int64_t>(v);
      break;
    case g::DT_BOOL:
      static_cast<int8_t *>(buffer)[i] = v != 0;
      break;
    default:
      FAIL() << "unsupported dtype";
    }
  }
}

double load(g::DataType dtype, const void *buffer, size_t i) {
  switch (dtype) {
  case g::DT_FLOAT:
    return static_cast<const float *>(buffer)[i];
  case g::DT_DOUBLE:
    return static_cast<const double *>(buffer)[i];
  case g::DT_INT32:
    return static_cast<const int32_t *>(buffer)[i];
  case g::DT_INT64:
    return static_cast<const int64_t *>(buffer)[i];
  case g::DT_BOOL:
    return static_cast<const int8_t *>(buffer)[i];
  default:
    return std::nan("");
  }
}

std::map<std::string, Value> randomVariables(const g::GraphDef &graph) {
  std::map<std::string, Value> vars;
  std::mt19937 rng(99);
  for (const g::VariableDef &v : graph.variable()) {
    Dims shape(v.shape().dim().begin(), v.shape().dim().end());
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    std::vector<double> data(n);
    for (double &x : data)
      x = v.dtype() == g::DT_INT64
              ? 3
              : static_cast<float>(
                    std::uniform_real_distribution<double>(-0.2, 0.2)(rng));
    vars.emplace(v.name(), Value(v.dtype(), shape, data));
  }
  return vars;
}

::testing::AssertionResult outputMatches(const Value &want, const void *got,
                                         double tolerance) {
  for (size_t i = 0; i < want.data.size(); ++i) {
    double w = want.data[i], v = load(want.dtype, got, i);
    bool ok = std::isnan(w) ? std::isnan(v)
              : std::isinf(w)
                  ? v == w
                  : std::fabs(v - w) <= tolerance * std::max(1.0, std::fabs(w));
    if (!ok)
      return ::testing::AssertionFailure()
             << "element " << i << " of " << want.data.size() << ": compiled "
             << v << ", reference " << w;
  }
  return ::testing::AssertionSuccess();
}

std::unique_ptr<JitModel> jitCompileForTest(const g::GraphDef &graph,
                                            llvm::StringRef name,
                                            JitOptions options,
                                            bool warningsFail) {
  static const std::string processCacheDir = [] {
    llvm::SmallString<128> dir;
    llvm::sys::fs::createUniqueDirectory("estc-test-cache", dir);
    return std::string(dir);
  }();
  if (options.cacheDir.empty())
    options.cacheDir = processCacheDir;
  JitCompiler jit(options);
  auto model = jitCompileGraph(jit, graph, name, [&](llvm::StringRef w) {
    if (warningsFail)
      ADD_FAILURE() << "warning: " << w.str();
  });
  if (!model) {
    ADD_FAILURE() << llvm::toString(model.takeError());
    return nullptr;
  }
  return std::move(*model);
}

} // namespace testing
} // namespace estc
