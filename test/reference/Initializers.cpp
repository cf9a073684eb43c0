//===- Initializers.cpp - Reference variable initializers -----------------===//
//
// Evaluator::initialize_variables(): every variable's InitializerDef, the
// oracle for the compiled @init (compiler/Transforms/CreateInitFunction.cpp).
// Written from the TF definitions (tf.compat.v1 initializers, _compute_fans),
// not from the pass: the parameters (fans, limits, stddevs) in double, the
// random draws through lib/Random/Philox.h at counter 0 in float (double for
// f64 variables), like the est random ops.
//
//===----------------------------------------------------------------------===//

#include "test/reference/ReferenceEvaluator.h"

#include "lib/Random/Philox.h"

#include <cmath>
#include <stdexcept>

namespace estc {
namespace reference {

namespace g = ::estc::graph;

namespace {

[[noreturn]] void fail(const std::string &variable, const std::string &what) {
  throw std::runtime_error("reference: variable '" + variable +
                           "': initializer " + what);
}

double number(const g::InitializerDef &init, const std::string &key,
              double dflt) {
  auto it = init.attr().find(key);
  if (it == init.attr().end())
    return dflt;
  return it->second.has_f() ? it->second.f() : double(it->second.i());
}

std::string text(const g::InitializerDef &init, const std::string &key,
                 const std::string &dflt) {
  auto it = init.attr().find(key);
  return it == init.attr().end() ? dflt : it->second.s();
}

/// Integer and boolean values as the dtype holds them.
double cast(g::DataType dtype, double v) {
  if (dtype == g::DT_BOOL)
    return v != 0.0 ? 1.0 : 0.0;
  if (dtype == g::DT_INT32 || dtype == g::DT_INT64)
    return std::trunc(v);
  return v;
}

enum class Draw { Uniform, Normal, TruncatedNormal };

template <typename T>
void draw(Value &out, Draw kind, int64_t seed, double a, double b) {
  for (size_t i = 0; i < out.data.size(); ++i) {
    random::Block r = random::randomBits(seed, /*counter=*/0, i);
    T v = kind == Draw::Uniform  ? random::uniform<T>(r, T(a), T(b))
          : kind == Draw::Normal ? random::normal<T>(r, T(a), T(b))
                                 : random::truncatedNormal<T>(r, T(a), T(b));
    out.data[i] = double(v);
  }
}

Value initialValue(const g::VariableDef &var) {
  const g::InitializerDef &init = var.initializer();
  const std::string &type = init.type();
  std::vector<int64_t> shape(var.shape().dim().begin(),
                             var.shape().dim().end());
  int64_t count = 1;
  for (int64_t d : shape)
    count *= d;
  Value out(var.dtype(), shape, std::vector<double>(size_t(count), 0.0));

  if (type == "zeros" || type == "ones" || type == "constant") {
    double v = type == "ones"    ? 1.0
               : type == "zeros" ? 0.0
                                 : number(init, "value", 0);
    for (double &x : out.data)
      x = cast(var.dtype(), v);
    auto values = init.attr().find("values");
    if (values != init.attr().end()) {
      if (values->second.list().f_size() != count)
        fail(var.name(), "constant initializer has " +
                             std::to_string(values->second.list().f_size()) +
                             " values for " + std::to_string(count) +
                             " elements");
      for (int64_t i = 0; i < count; ++i)
        out.data[i] = cast(var.dtype(), values->second.list().f(i));
    }
    return out;
  }
  bool f64 = var.dtype() == g::DT_DOUBLE;
  if (!f64 && var.dtype() != g::DT_FLOAT && var.dtype() != g::DT_HALF &&
      var.dtype() != g::DT_BFLOAT16)
    fail(var.name(), "'" + type + "' needs a float variable");
  if (!init.attr().count("seed"))
    fail(var.name(), "'" + type + "' has no seed");
  int64_t seed = init.attr().at("seed").i();

  if (type == "orthogonal") {
    // TF's Orthogonal: QR (diag(R) > 0, i.e. Gram-Schmidt, here in double,
    // orthogonalizing twice as the compiled @init does) of a standard
    // normal [max(rows, cols), min(rows, cols)] matrix; Q or Q^T.
    if (shape.size() < 2)
      fail(var.name(), "'orthogonal' needs a rank >= 2 variable");
    int64_t rows = count / shape.back(), cols = shape.back();
    int64_t m = std::max(rows, cols), n = std::min(rows, cols);
    Value a(g::DT_FLOAT, {m, n}, std::vector<double>(size_t(m * n), 0.0));
    draw<float>(a, Draw::Normal, seed, 0.0, 1.0);
    std::vector<std::vector<double>> q; // rows, orthonormal
    for (int64_t j = 0; j < n; ++j) {
      std::vector<double> v(m);
      for (int64_t i = 0; i < m; ++i)
        v[i] = a.data[i * n + j];
      for (int pass = 0; pass < 2; ++pass) {
        std::vector<double> along(m, 0.0);
        for (const std::vector<double> &row : q) {
          double dot = 0;
          for (int64_t i = 0; i < m; ++i)
            dot += row[i] * v[i];
          for (int64_t i = 0; i < m; ++i)
            along[i] += row[i] * dot;
        }
        for (int64_t i = 0; i < m; ++i)
          v[i] -= along[i];
      }
      double norm = 0;
      for (double x : v)
        norm += x * x;
      for (double &x : v)
        x /= std::sqrt(norm);
      q.push_back(v);
    }
    double gain = number(init, "gain", 1.0);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        out.data[r * cols + c] =
            gain * (rows < cols ? q[r][c] : q[c][r]); // Q [n, m] or Q^T
    return out;
  }

  Draw kind;
  double a = 0.0, b = 0.0;
  if (type == "random_uniform") {
    kind = Draw::Uniform;
    a = number(init, "minval", -0.05);
    b = number(init, "maxval", 0.05);
  } else if (type == "random_normal" || type == "truncated_normal") {
    kind = type == "random_normal" ? Draw::Normal : Draw::TruncatedNormal;
    a = number(init, "mean", 0.0);
    b = number(init, "stddev", 1.0);
  } else if (type == "glorot_uniform" || type == "glorot_normal" ||
             type == "variance_scaling") {
    // TF's _compute_fans.
    double fanIn = 1, fanOut = 1;
    size_t rank = shape.size();
    if (rank == 1) {
      fanIn = fanOut = double(shape[0]);
    } else if (rank >= 2) {
      double receptive = 1;
      for (size_t d = 0; d + 2 < rank; ++d)
        receptive *= double(shape[d]);
      fanIn = double(shape[rank - 2]) * receptive;
      fanOut = double(shape[rank - 1]) * receptive;
    }
    double scale = 1.0;
    std::string mode = "fan_avg";
    std::string distribution =
        type == "glorot_uniform" ? "uniform" : "truncated_normal";
    if (type == "variance_scaling") {
      scale = number(init, "scale", 1.0);
      mode = text(init, "mode", "fan_in");
      distribution = text(init, "distribution", "truncated_normal");
    }
    double n = mode == "fan_in"    ? fanIn
               : mode == "fan_out" ? fanOut
                                   : (fanIn + fanOut) / 2;
    scale /= std::max(1.0, n);
    if (distribution == "uniform") {
      kind = Draw::Uniform;
      b = std::sqrt(3.0 * scale);
      a = -b;
    } else if (distribution == "untruncated_normal") {
      kind = Draw::Normal;
      b = std::sqrt(scale);
    } else {
      kind = Draw::TruncatedNormal;
      b = std::sqrt(scale) / .87962566103423978;
    }
  } else {
    fail(var.name(), "'" + type + "' is unknown");
  }
  if (f64)
    draw<double>(out, kind, seed, a, b);
  else
    draw<float>(out, kind, seed, a, b);
  return out;
}

} // namespace

void Evaluator::initialize_variables() {
  for (const g::VariableDef &var : graph_.variable())
    variables_[var.name()] = initialValue(var);
}

} // namespace reference
} // namespace estc
