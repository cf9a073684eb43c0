//===- Ops.cpp - The op library of the graph builder --------------------===//

#include "lib/Graph/Ops.h"

#include "lib/Graph/EmbeddingCombiner.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <utility>

namespace estc {

namespace {

// Builds one node: checks the inputs, formats errors as
//   <op> '<node>': inputs 'a' [?,784] and 'b' [100,256]: <problem>
// and adds the node with the inferred dtype and shape.
class OpBuilder {
public:
  OpBuilder(Graph *graph, std::string op, const std::string &name,
            const char *defaultName, std::vector<Tensor> inputs)
      : graph_(graph), op_(std::move(op)), inputs_(std::move(inputs)) {
    for (size_t i = 0; i < inputs_.size(); ++i) {
      const Tensor &t = inputs_[i];
      if (!t.valid())
        throw GraphError(op_ + ": input " + std::to_string(i) +
                         " is an empty Tensor");
      if (!graph_)
        graph_ = &t.graph();
      else if (&t.graph() != graph_)
        throw GraphError(op_ + ": input '" + t.name() +
                         "' belongs to another graph");
    }
    if (!graph_)
      throw GraphError(op_ + ": no graph");
    base_ = name.empty() ? defaultName : name;
    node_ = graph_->unique_node_name(base_);
    for (const Tensor &t : inputs_)
      if (!t.has_value())
        fail("node '" + t.name() + "' (" + t.op() + ") has no value");
  }

  Graph &graph() const { return *graph_; }
  const std::string &node() const { return node_; }
  const Tensor &in(size_t i) const { return inputs_[i]; }

  [[noreturn]] void fail(const std::string &problem) const {
    std::string msg = op_ + " '" + node_ + "'";
    if (!inputs_.empty()) {
      msg += inputs_.size() == 1 ? ": input " : ": inputs ";
      for (size_t i = 0; i < inputs_.size(); ++i) {
        if (i)
          msg += i + 1 == inputs_.size() ? " and " : ", ";
        msg += "'" + inputs_[i].name() + "' " +
               (inputs_[i].has_value() ? shape::toString(inputs_[i].shape())
                                       : std::string("(no value)"));
      }
    }
    throw GraphError(msg + ": " + problem);
  }

  Dims check(const shape::ShapeOr &s) const {
    if (!s)
      fail(s.message());
    return *s;
  }

  void requireFloat(size_t i) const {
    if (!is_floating(in(i).dtype()))
      fail("'" + in(i).name() + "' must be a float tensor, got " +
           to_string(in(i).dtype()));
  }
  void requireNumeric(size_t i) const {
    DType d = in(i).dtype();
    if (!is_floating(d) && !is_integer(d))
      fail("'" + in(i).name() + "' must be a float or integer tensor, got " +
           to_string(d));
  }
  void requireInteger(size_t i) const {
    if (!is_integer(in(i).dtype()))
      fail("'" + in(i).name() + "' must be an i32 or i64 tensor, got " +
           to_string(in(i).dtype()));
  }
  void requireBool(size_t i) const {
    if (in(i).dtype() != DType::Bool)
      fail("'" + in(i).name() + "' must be an i1 (bool) tensor, got " +
           to_string(in(i).dtype()));
  }
  void requireSameDType(size_t i, size_t j) const {
    if (in(i).dtype() != in(j).dtype())
      fail("operands have different element types " + to_string(in(i).dtype()) +
           " and " + to_string(in(j).dtype()) +
           " (use cast; there is no implicit promotion)");
  }
  /// Whether `format` is the channels-first `first` (else `last`); any
  /// other value is an error.
  bool channelsFirst(const std::string &format, const char *last,
                     const char *first) const {
    if (format == last)
      return false;
    if (format != first)
      fail("data_format must be \"" + std::string(last) + "\" or \"" + first +
           "\", got \"" + format + "\"");
    if (in(0).rank() != 4)
      fail("input must be " + std::string(first) + " (rank 4)");
    return true;
  }
  shape::Padding padding(const std::string &p) const {
    auto parsed = shape::parsePadding(p);
    if (!parsed)
      fail("padding must be \"SAME\" or \"VALID\", got \"" + p + "\"");
    return *parsed;
  }

  Tensor finish(DType dtype, const Dims &shape, const Attrs &attrs = {}) {
    // Ops built while checking (none today) could have taken the name.
    if (graph_->has_node(node_))
      node_ = graph_->unique_node_name(base_);
    return graph_->add_node(node_, op_, inputs_, attrs, dtype, shape);
  }

private:
  Graph *graph_;
  std::string op_;
  std::vector<Tensor> inputs_;
  std::string base_;
  std::string node_;
};

/// A composite op's name scope: `name`, else `base`, made unique.
Scope compositeScope(Graph &g, const std::string &name, const char *base) {
  return g.name_scope(g.unique_layer_name(name.empty() ? base : name));
}

std::string formatNumber(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

/// Checks that `t` (argument `what` of composite `op`) is a tensor with a
/// value of a float (or, with `allowInt`, integer) dtype.
void requireTensorOf(const char *op, const char *what, const Tensor &t,
                     bool allowInt) {
  std::string where = std::string(op) + ": " + what;
  if (!t.valid())
    throw GraphError(where + " is an empty Tensor");
  if (!t.has_value())
    throw GraphError(where + " '" + t.name() + "' (" + t.op() +
                     ") has no value");
  if (!is_floating(t.dtype()) && !(allowInt && is_integer(t.dtype())))
    throw GraphError(where + " '" + t.name() + "' must be a " +
                     (allowInt ? "float or integer" : "float") +
                     " tensor, got " + to_string(t.dtype()));
}
void requireFloatTensor(const char *op, const char *what, const Tensor &t) {
  requireTensorOf(op, what, t, false);
}
void requireFloatOrInt(const char *op, const char *what, const Tensor &t) {
  requireTensorOf(op, what, t, true);
}

/// The tensor of `operand`; a number becomes a scalar constant of `like`'s
/// dtype (the other operand's), as TF converts a Python scalar.
Tensor tensorOf(const char *op, const char *base, const Operand &operand,
                const Operand &like, const std::string &name) {
  if (!operand.is_number())
    return operand.tensor();
  if (like.is_number())
    throw GraphError(std::string(op) +
                     ": needs a tensor operand, got the "
                     "numbers " +
                     formatNumber(operand.number()) + " and " +
                     formatNumber(like.number()));
  const Tensor &t = like.tensor();
  OpBuilder o(nullptr, op, name, base, {t}); // t must be a tensor with a value
  double v = operand.number();
  DType d = t.dtype();
  bool integral = v == std::trunc(v);
  bool fits = true;
  if (d == DType::Int32)
    fits = integral && v >= std::numeric_limits<int32_t>::min() &&
           v <= std::numeric_limits<int32_t>::max();
  else if (d == DType::Int64)
    fits = integral && std::fabs(v) <= 9.2e18;
  else if (d == DType::Bool)
    fits = v == 0.0 || v == 1.0;
  if (!fits)
    o.fail("the number " + formatNumber(v) + " is not representable as " +
           to_string(d) + ", the dtype of '" + t.name() +
           "' (no implicit promotion: cast the tensor)");
  return t.graph().constant(v, d);
}

/// Both operands as tensors (a number: a constant like the other one).
std::pair<Tensor, Tensor> tensorsOf(const char *op, const char *base,
                                    const Operand &a, const Operand &b,
                                    const std::string &name) {
  Tensor ta = tensorOf(op, base, a, b, name);
  Tensor tb = tensorOf(op, base, b, a, name);
  return {ta, tb};
}

Tensor binary(const char *op, const char *base, const Operand &x,
              const Operand &y, const std::string &name) {
  auto [a, b] = tensorsOf(op, base, x, y, name);
  OpBuilder o(nullptr, op, name, base, {a, b});
  o.requireNumeric(0);
  o.requireSameDType(0, 1);
  return o.finish(a.dtype(), o.check(shape::broadcast(a.shape(), b.shape())));
}

Tensor compare(const char *op, const char *base, const Operand &x,
               const Operand &y, const std::string &name) {
  auto [a, b] = tensorsOf(op, base, x, y, name);
  OpBuilder o(nullptr, op, name, base, {a, b});
  o.requireSameDType(0, 1);
  return o.finish(DType::Bool, o.check(shape::broadcast(a.shape(), b.shape())));
}

Tensor logicalBinary(const char *op, const char *base, const Operand &x,
                     const Operand &y, const std::string &name) {
  auto [a, b] = tensorsOf(op, base, x, y, name);
  OpBuilder o(nullptr, op, name, base, {a, b});
  o.requireBool(0);
  o.requireBool(1);
  return o.finish(DType::Bool, o.check(shape::broadcast(a.shape(), b.shape())));
}

enum class Kind { Float, Numeric };

Tensor unary(const char *op, const char *base, Kind kind, const Tensor &x,
             const std::string &name) {
  OpBuilder o(nullptr, op, name, base, {x});
  if (kind == Kind::Float)
    o.requireFloat(0);
  else
    o.requireNumeric(0);
  return o.finish(x.dtype(), x.shape());
}

Tensor reduction(const char *op, const char *base, const Tensor &x,
                 const std::optional<Dims> &axes, bool keepDims,
                 const std::string &name) {
  OpBuilder o(nullptr, op, name, base, {x});
  if (std::string(op) == "reduce_prod" || std::string(op) == "reduce_sum" ||
      std::string(op) == "reduce_mean")
    o.requireNumeric(0);
  Dims out = o.check(shape::reduce(x.shape(), axes, keepDims));
  Attrs attrs;
  if (axes)
    attrs.push_back({"axes", attr_list(*axes)});
  attrs.push_back({"keep_dims", attr_b(keepDims)});
  return o.finish(x.dtype(), out, attrs);
}

Tensor argReduce(const char *op, const char *base, const Tensor &x,
                 int64_t axis, DType outputType, const std::string &name) {
  OpBuilder o(nullptr, op, name, base, {x});
  o.requireNumeric(0);
  if (!is_integer(outputType))
    o.fail("output_type must be i32 or i64, got " + to_string(outputType));
  Dims out = o.check(shape::argReduce(x.shape(), axis));
  return o.finish(
      outputType, out,
      {{"axis", attr_i(axis)}, {"output_type", attr_type(outputType)}});
}

Tensor pool(const char *op, const char *base, const Tensor &x,
            const Dims &ksize, const Dims &strides, const std::string &padding,
            const std::string &dataFormat, const std::string &name) {
  OpBuilder o(nullptr, op, name, base, {x});
  if (o.channelsFirst(dataFormat, "NHWC", "NCHW"))
    return transpose(pool(op, base, transpose(x, {0, 2, 3, 1}), ksize, strides,
                          padding, "NHWC", name),
                     {0, 3, 1, 2});
  o.requireFloat(0);
  Dims out =
      o.check(shape::pool2d(x.shape(), ksize, strides, o.padding(padding)));
  return o.finish(x.dtype(), out,
                  {{"ksize", attr_list(ksize)},
                   {"strides", attr_list(strides)},
                   {"padding", attr_s(padding)}});
}

Tensor randomOp(const char *op, const char *base, Graph &g, const Dims &shape,
                DType dtype, const char *p1, double v1, const char *p2,
                double v2, std::optional<int64_t> seed,
                const std::string &name) {
  Tensor counter = g.global_step();
  OpBuilder o(&g, op, name, base, {counter});
  if (!is_floating(dtype))
    o.fail("dtype must be a float type, got " + to_string(dtype));
  if (!shape::isFullyKnown(shape))
    o.fail("shape " + shape::toString(shape) + " must be fully known");
  std::string mode = g.mode() ? std::string(mode_key(*g.mode())) + "/" : "";
  std::string key = o.node().substr(mode.size());
  return o.finish(dtype, shape,
                  {{"shape", attr_list(shape)},
                   {"dtype", attr_type(dtype)},
                   {"seed", attr_i(g.derive_seed(key, seed))},
                   {p1, attr_f(v1)},
                   {p2, attr_f(v2)}});
}
} // namespace

// --- Elementwise -------------------------------------------------------------

Tensor add(const Operand &a, const Operand &b, const std::string &name) {
  return binary("add", "Add", a, b, name);
}
Tensor subtract(const Operand &a, const Operand &b, const std::string &name) {
  return binary("sub", "Sub", a, b, name);
}
Tensor multiply(const Operand &a, const Operand &b, const std::string &name) {
  return binary("mul", "Mul", a, b, name);
}
Tensor divide(const Operand &a, const Operand &b, const std::string &name) {
  return binary("div", "Div", a, b, name);
}
Tensor pow(const Operand &a, const Operand &b, const std::string &name) {
  return binary("pow", "Pow", a, b, name);
}
Tensor maximum(const Operand &a, const Operand &b, const std::string &name) {
  return binary("maximum", "Maximum", a, b, name);
}
Tensor minimum(const Operand &a, const Operand &b, const std::string &name) {
  return binary("minimum", "Minimum", a, b, name);
}

Tensor negative(const Tensor &x, const std::string &name) {
  return unary("neg", "Neg", Kind::Numeric, x, name);
}
Tensor abs(const Tensor &x, const std::string &name) {
  return unary("abs", "Abs", Kind::Numeric, x, name);
}
Tensor square(const Tensor &x, const std::string &name) {
  return unary("square", "Square", Kind::Numeric, x, name);
}
Tensor exp(const Tensor &x, const std::string &name) {
  return unary("exp", "Exp", Kind::Float, x, name);
}
Tensor log(const Tensor &x, const std::string &name) {
  return unary("log", "Log", Kind::Float, x, name);
}
Tensor sqrt(const Tensor &x, const std::string &name) {
  return unary("sqrt", "Sqrt", Kind::Float, x, name);
}
Tensor rsqrt(const Tensor &x, const std::string &name) {
  return unary("rsqrt", "Rsqrt", Kind::Float, x, name);
}
Tensor tanh(const Tensor &x, const std::string &name) {
  return unary("tanh", "Tanh", Kind::Float, x, name);
}
Tensor sin(const Tensor &x, const std::string &name) {
  return unary("sin", "Sin", Kind::Float, x, name);
}
Tensor cos(const Tensor &x, const std::string &name) {
  return unary("cos", "Cos", Kind::Float, x, name);
}
Tensor floor(const Tensor &x, const std::string &name) {
  return unary("floor", "Floor", Kind::Float, x, name);
}
Tensor ceil(const Tensor &x, const std::string &name) {
  return unary("ceil", "Ceil", Kind::Float, x, name);
}
Tensor round(const Tensor &x, const std::string &name) {
  return unary("round", "Round", Kind::Numeric, x, name);
}
Tensor sign(const Tensor &x, const std::string &name) {
  return unary("sign", "Sign", Kind::Numeric, x, name);
}
Tensor erf(const Tensor &x, const std::string &name) {
  return unary("erf", "Erf", Kind::Float, x, name);
}
Tensor log1p(const Tensor &x, const std::string &name) {
  return unary("log1p", "Log1p", Kind::Float, x, name);
}
Tensor expm1(const Tensor &x, const std::string &name) {
  return unary("expm1", "Expm1", Kind::Float, x, name);
}
Tensor sigmoid(const Tensor &x, const std::string &name) {
  return unary("sigmoid", "Sigmoid", Kind::Float, x, name);
}

Tensor clip_by_value(const Tensor &t, const Operand &clip_value_min,
                     const Operand &clip_value_max, const std::string &name) {
  requireFloatOrInt("clip_by_value", "t", t);
  if (clip_value_min.is_number() && clip_value_max.is_number() &&
      clip_value_min.number() > clip_value_max.number())
    throw GraphError("clip_by_value: clip_value_min " +
                     formatNumber(clip_value_min.number()) +
                     " is greater than clip_value_max " +
                     formatNumber(clip_value_max.number()));
  auto scope = compositeScope(t.graph(), name, "clip_by_value");
  Tensor upper = minimum(t, clip_value_max);
  Tensor clipped = maximum(upper, clip_value_min);
  if (clipped.shape().size() != t.shape().size() ||
      !shape::isCompatible(clipped.shape(), t.shape()))
    throw GraphError("clip_by_value: clip values broadcast t '" + t.name() +
                     "' " + shape::toString(t.shape()) + " to " +
                     shape::toString(clipped.shape()) +
                     " (they must broadcast to t's shape)");
  return clipped;
}

Tensor equal(const Operand &a, const Operand &b, const std::string &name) {
  return compare("equal", "Equal", a, b, name);
}
Tensor not_equal(const Operand &a, const Operand &b, const std::string &name) {
  return compare("not_equal", "NotEqual", a, b, name);
}
Tensor less(const Operand &a, const Operand &b, const std::string &name) {
  return compare("less", "Less", a, b, name);
}
Tensor less_equal(const Operand &a, const Operand &b, const std::string &name) {
  return compare("less_equal", "LessEqual", a, b, name);
}
Tensor greater(const Operand &a, const Operand &b, const std::string &name) {
  return compare("greater", "Greater", a, b, name);
}
Tensor greater_equal(const Operand &a, const Operand &b,
                     const std::string &name) {
  return compare("greater_equal", "GreaterEqual", a, b, name);
}
Tensor logical_and(const Operand &a, const Operand &b,
                   const std::string &name) {
  return logicalBinary("logical_and", "LogicalAnd", a, b, name);
}
Tensor logical_or(const Operand &a, const Operand &b, const std::string &name) {
  return logicalBinary("logical_or", "LogicalOr", a, b, name);
}
Tensor logical_not(const Tensor &x, const std::string &name) {
  OpBuilder o(nullptr, "logical_not", name, "LogicalNot", {x});
  o.requireBool(0);
  return o.finish(DType::Bool, x.shape());
}

Tensor where(const Tensor &cond, const Operand &x, const Operand &y,
             const std::string &name) {
  auto [on_true, on_false] = tensorsOf("select", "Select", x, y, name);
  OpBuilder o(nullptr, "select", name, "Select", {cond, on_true, on_false});
  o.requireBool(0);
  o.requireSameDType(1, 2);
  Dims out = o.check(
      shape::broadcast({cond.shape(), on_true.shape(), on_false.shape()}));
  return o.finish(on_true.dtype(), out);
}

Tensor cast(const Tensor &x, DType dtype, const std::string &name) {
  OpBuilder o(nullptr, "cast", name, "Cast", {x});
  if (dtype == DType::Invalid)
    o.fail("invalid target dtype");
  return o.finish(dtype, x.shape(), {{"dtype", attr_type(dtype)}});
}

// --- Linear algebra ----------------------------------------------------------

Tensor matmul(const Tensor &a, const Tensor &b, bool transpose_a,
              bool transpose_b, const std::string &name) {
  OpBuilder o(nullptr, "matmul", name, "MatMul", {a, b});
  o.requireNumeric(0);
  o.requireSameDType(0, 1);
  Dims out =
      o.check(shape::matmul(a.shape(), b.shape(), transpose_a, transpose_b));
  return o.finish(a.dtype(), out,
                  {{"transpose_a", attr_b(transpose_a)},
                   {"transpose_b", attr_b(transpose_b)}});
}

// --- Reductions --------------------------------------------------------------

Tensor reduce_sum(const Tensor &x, std::optional<Dims> axes, bool keep_dims,
                  const std::string &name) {
  return reduction("reduce_sum", "Sum", x, axes, keep_dims, name);
}
Tensor reduce_mean(const Tensor &x, std::optional<Dims> axes, bool keep_dims,
                   const std::string &name) {
  return reduction("reduce_mean", "Mean", x, axes, keep_dims, name);
}
Tensor reduce_max(const Tensor &x, std::optional<Dims> axes, bool keep_dims,
                  const std::string &name) {
  return reduction("reduce_max", "Max", x, axes, keep_dims, name);
}
Tensor reduce_min(const Tensor &x, std::optional<Dims> axes, bool keep_dims,
                  const std::string &name) {
  return reduction("reduce_min", "Min", x, axes, keep_dims, name);
}
Tensor reduce_prod(const Tensor &x, std::optional<Dims> axes, bool keep_dims,
                   const std::string &name) {
  return reduction("reduce_prod", "Prod", x, axes, keep_dims, name);
}
Tensor argmax(const Tensor &x, int64_t axis, DType output_type,
              const std::string &name) {
  return argReduce("argmax", "ArgMax", x, axis, output_type, name);
}
Tensor argmin(const Tensor &x, int64_t axis, DType output_type,
              const std::string &name) {
  return argReduce("argmin", "ArgMin", x, axis, output_type, name);
}

namespace {
Tensor cumulative(const char *op, const char *base, const Tensor &x,
                  int64_t axis, bool exclusive, bool reverse,
                  const std::string &name) {
  OpBuilder o(nullptr, op, name, base, {x});
  o.requireNumeric(0);
  if (!shape::normalizeAxis(axis, x.rank()))
    o.fail("axis " + std::to_string(axis) + " is out of range for rank " +
           std::to_string(x.rank()));
  return o.finish(x.dtype(), x.shape(),
                  {{"axis", attr_i(axis)},
                   {"exclusive", attr_b(exclusive)},
                   {"reverse", attr_b(reverse)}});
}
} // namespace

Tensor cumsum(const Tensor &x, int64_t axis, bool exclusive, bool reverse,
              const std::string &name) {
  return cumulative("cumsum", "Cumsum", x, axis, exclusive, reverse, name);
}
Tensor cumprod(const Tensor &x, int64_t axis, bool exclusive, bool reverse,
               const std::string &name) {
  return cumulative("cumprod", "Cumprod", x, axis, exclusive, reverse, name);
}

// --- Shapes ------------------------------------------------------------------

Tensor reshape(const Tensor &x, const Dims &shape, const std::string &name) {
  OpBuilder o(nullptr, "reshape", name, "Reshape", {x});
  Dims out = o.check(shape::reshape(x.shape(), shape));
  return o.finish(x.dtype(), out, {{"shape", attr_list(shape)}});
}

Tensor transpose(const Tensor &x, const Dims &perm, const std::string &name) {
  OpBuilder o(nullptr, "transpose", name, "Transpose", {x});
  Dims out = o.check(shape::transpose(x.shape(), perm));
  return o.finish(x.dtype(), out, {{"perm", attr_list(perm)}});
}

Tensor concat(const std::vector<Tensor> &values, int64_t axis,
              const std::string &name) {
  if (values.empty())
    throw GraphError("concat: needs at least one input");
  OpBuilder o(nullptr, "concat", name, "Concat", values);
  std::vector<Dims> shapes;
  for (size_t i = 0; i < values.size(); ++i) {
    o.requireSameDType(0, i);
    shapes.push_back(values[i].shape());
  }
  Dims out = o.check(shape::concat(shapes, axis));
  return o.finish(values[0].dtype(), out, {{"axis", attr_i(axis)}});
}

Tensor slice(const Tensor &x, const Dims &begin, const Dims &size,
             const std::string &name) {
  OpBuilder o(nullptr, "slice", name, "Slice", {x});
  Dims out = o.check(shape::slice(x.shape(), begin, size));
  return o.finish(x.dtype(), out,
                  {{"begin", attr_list(begin)}, {"size", attr_list(size)}});
}

Tensor pad(const Tensor &x, const Dims &paddings, double constant_value,
           const std::string &name) {
  OpBuilder o(nullptr, "pad", name, "Pad", {x});
  Dims out = o.check(shape::pad(x.shape(), paddings));
  return o.finish(x.dtype(), out,
                  {{"paddings", attr_list(paddings)},
                   {"constant_value", attr_f(constant_value)}});
}

Tensor broadcast_to(const Tensor &x, const Dims &shape,
                    const std::string &name) {
  OpBuilder o(nullptr, "broadcast_to", name, "BroadcastTo", {x});
  Dims out = o.check(shape::broadcastTo(x.shape(), shape));
  return o.finish(x.dtype(), out, {{"shape", attr_list(shape)}});
}

Tensor squeeze(const Tensor &x, std::optional<Dims> axes,
               const std::string &name) {
  OpBuilder o(nullptr, "squeeze", name, "Squeeze", {x});
  Dims out = o.check(shape::squeeze(x.shape(), axes));
  Attrs attrs;
  if (axes)
    attrs.push_back({"axes", attr_list(*axes)});
  return o.finish(x.dtype(), out, attrs);
}

Tensor expand_dims(const Tensor &x, int64_t axis, const std::string &name) {
  OpBuilder o(nullptr, "expand_dims", name, "ExpandDims", {x});
  Dims out = o.check(shape::expandDims(x.shape(), axis));
  return o.finish(x.dtype(), out, {{"axis", attr_i(axis)}});
}

// --- Indexing ----------------------------------------------------------------

Tensor reverse(const Tensor &tensor, const Dims &axis,
               const std::string &name) {
  OpBuilder o(nullptr, "reverse", name, "ReverseV2", {tensor});
  Dims out = o.check(shape::reverse(tensor.shape(), axis));
  return o.finish(tensor.dtype(), out, {{"axes", attr_list(axis)}});
}

Tensor shape_of(const Tensor &input, DType out_type, const std::string &name) {
  OpBuilder o(nullptr, "shape", name, "Shape", {input});
  if (out_type != DType::Int32 && out_type != DType::Int64)
    o.fail("out_type must be i32 or i64, got " + to_string(out_type));
  return o.finish(out_type, {input.rank()},
                  {{"out_type", attr_type(out_type)}});
}

Tensor gather(const Tensor &params, const Tensor &indices, int64_t axis,
              const std::string &name) {
  OpBuilder o(nullptr, "gather", name, "Gather", {params, indices});
  o.requireInteger(1);
  Dims out = o.check(shape::gather(params.shape(), indices.shape(), axis));
  return o.finish(params.dtype(), out, {{"axis", attr_i(axis)}});
}

namespace {
Tensor scatter(const char *mode, const char *base, const Tensor &ref,
               const Tensor &indices, const Tensor &updates,
               const std::string &name) {
  OpBuilder o(nullptr, "scatter", name, base, {ref, indices, updates});
  o.requireInteger(1);
  if (ref.dtype() != updates.dtype())
    o.fail("ref and updates must have one dtype, got " +
           to_string(ref.dtype()) + " and " + to_string(updates.dtype()));
  Dims out =
      o.check(shape::scatter(ref.shape(), indices.shape(), updates.shape()));
  return o.finish(ref.dtype(), out, {{"mode", attr_s(mode)}});
}
} // namespace

Tensor scatter_add(const Tensor &ref, const Tensor &indices,
                   const Tensor &updates, const std::string &name) {
  return scatter("add", "ScatterAdd", ref, indices, updates, name);
}

Tensor scatter_update(const Tensor &ref, const Tensor &indices,
                      const Tensor &updates, const std::string &name) {
  return scatter("update", "ScatterUpdate", ref, indices, updates, name);
}

Tensor scatter_min(const Tensor &ref, const Tensor &indices,
                   const Tensor &updates, const std::string &name) {
  return scatter("min", "ScatterMin", ref, indices, updates, name);
}

Tensor scatter_max(const Tensor &ref, const Tensor &indices,
                   const Tensor &updates, const std::string &name) {
  return scatter("max", "ScatterMax", ref, indices, updates, name);
}

Tensor check_range(const Tensor &x, int64_t lower, int64_t upper,
                   const std::string &what, const std::string &name) {
  OpBuilder o(nullptr, "check_range", name, "CheckRange", {x});
  o.requireInteger(0);
  if (lower >= upper)
    o.fail("range [" + std::to_string(lower) + ", " + std::to_string(upper) +
           ") is empty");
  return o.finish(x.dtype(), x.shape(),
                  {{"lower", attr_i(lower)},
                   {"upper", attr_i(upper)},
                   {"what", attr_s(what)}});
}

Tensor one_hot(const Tensor &indices, int64_t depth, double on_value,
               double off_value, int64_t axis, DType dtype,
               const std::string &name) {
  OpBuilder o(nullptr, "one_hot", name, "OneHot", {indices});
  o.requireInteger(0);
  if (dtype == DType::Invalid || dtype == DType::Bool)
    o.fail("dtype must be a float or integer type, got " + to_string(dtype));
  Dims out = o.check(shape::oneHot(indices.shape(), depth, axis));
  return o.finish(dtype, out,
                  {{"depth", attr_i(depth)},
                   {"on_value", attr_f(on_value)},
                   {"off_value", attr_f(off_value)},
                   {"axis", attr_i(axis)},
                   {"dtype", attr_type(dtype)}});
}

Tensor sequence_mask(const Tensor &lengths, const Tensor &maxlen_like,
                     int64_t axis, const std::string &name) {
  OpBuilder o(nullptr, "sequence_mask", name, "SequenceMask",
              {lengths, maxlen_like});
  o.requireInteger(0);
  Dims like = maxlen_like.shape();
  std::optional<int64_t> a = shape::normalizeAxis(axis, like.size());
  if (!a)
    o.fail("axis " + std::to_string(axis) + " is out of range for rank " +
           std::to_string(like.size()));
  Dims out = lengths.shape();
  out.push_back(like[*a]);
  return o.finish(DType::Bool, out, {{"axis", attr_i(axis)}});
}

Tensor sequence_mask(const Tensor &lengths, int64_t maxlen,
                     const std::string &name) {
  OpBuilder o(nullptr, "sequence_mask", name, "SequenceMask", {lengths});
  o.requireInteger(0);
  if (maxlen < 0)
    o.fail("maxlen must be >= 0, got " + std::to_string(maxlen));
  Dims out = lengths.shape();
  out.push_back(maxlen);
  return o.finish(DType::Bool, out, {{"maxlen", attr_i(maxlen)}});
}

Tensor reverse_sequence(const Tensor &x, const Tensor &lengths,
                        int64_t seq_axis, int64_t batch_axis,
                        const std::string &name) {
  OpBuilder o(nullptr, "reverse_sequence", name, "ReverseSequence",
              {x, lengths});
  o.requireInteger(1);
  Dims s = x.shape();
  std::optional<int64_t> seq = shape::normalizeAxis(seq_axis, s.size());
  std::optional<int64_t> batch = shape::normalizeAxis(batch_axis, s.size());
  if (!seq || !batch || *seq == *batch)
    o.fail("seq_axis " + std::to_string(seq_axis) + " and batch_axis " +
           std::to_string(batch_axis) + " must be distinct axes of the input");
  Dims l = lengths.shape();
  if (l.size() != 1)
    o.fail("lengths must have rank 1");
  if (l[0] >= 0 && s[*batch] >= 0 && l[0] != s[*batch])
    o.fail("lengths has " + std::to_string(l[0]) + " entries for a batch of " +
           std::to_string(s[*batch]));
  return o.finish(
      x.dtype(), s,
      {{"seq_axis", attr_i(seq_axis)}, {"batch_axis", attr_i(batch_axis)}});
}

// --- Sorting ---------------------------------------------------------------

namespace {
/// The argsort node: `k` = -1 sorts the whole axis.
Tensor argsortNode(const Tensor &values, int64_t axis,
                   const std::string &direction, int64_t k,
                   const std::string &name, const char *base) {
  OpBuilder o(nullptr, "argsort", name, base, {values});
  o.requireNumeric(0);
  if (direction != "ASCENDING" && direction != "DESCENDING")
    o.fail("direction must be \"ASCENDING\" or \"DESCENDING\", got \"" +
           direction + "\"");
  Dims out = o.check(shape::argsort(values.shape(), axis, k));
  return o.finish(DType::Int32, out,
                  {{"axis", attr_i(axis)},
                   {"direction", attr_s(direction)},
                   {"k", attr_i(k)}});
}
} // namespace

Tensor argsort(const Tensor &values, int64_t axis, const std::string &direction,
               bool stable, const std::string &name) {
  (void)stable; // always stable
  return argsortNode(values, axis, direction, -1, name, "argsort");
}

Tensor take_along_axis(const Tensor &arr, const Tensor &indices, int64_t axis,
                       const std::string &name) {
  OpBuilder o(nullptr, "take_along_axis", name, "TakeAlongAxis",
              {arr, indices});
  o.requireInteger(1);
  Dims out = o.check(shape::takeAlongAxis(arr.shape(), indices.shape(), axis));
  return o.finish(arr.dtype(), out, {{"axis", attr_i(axis)}});
}

Tensor scatter_along_axis(const Tensor &ref, const Tensor &indices,
                          const Tensor &updates, int64_t axis,
                          const std::string &name) {
  OpBuilder o(nullptr, "scatter_along_axis", name, "ScatterAlongAxis",
              {ref, indices, updates});
  o.requireNumeric(0);
  o.requireInteger(1);
  o.requireSameDType(0, 2);
  o.check(shape::scatterAlongAxis(ref.shape(), indices.shape(), updates.shape(),
                                  axis));
  return o.finish(ref.dtype(), ref.shape(), {{"axis", attr_i(axis)}});
}

Tensor sort(const Tensor &values, int64_t axis, const std::string &direction,
            const std::string &name) {
  if (!values.valid())
    throw GraphError("sort: values is an empty Tensor");
  auto scope = compositeScope(values.graph(), name, "sort");
  Tensor order = argsortNode(values, axis, direction, -1, "", "argsort");
  return take_along_axis(values, order, axis, "values");
}

TopK top_k(const Tensor &input, int64_t k, bool sorted,
           const std::string &name) {
  (void)sorted; // the sorted order is also a valid unsorted one
  if (!input.valid())
    throw GraphError("top_k: input is an empty Tensor");
  auto scope = compositeScope(input.graph(), name, "top_k");
  TopK out;
  out.indices = argsortNode(input, -1, "DESCENDING", k, "", "indices");
  out.values = take_along_axis(input, out.indices, -1, "values");
  return out;
}

// --- Segments, buckets and sparse ids ---------------------------------------

Tensor unsorted_segment_sum(const Tensor &data, const Tensor &segment_ids,
                            const Tensor &num_segments_like,
                            const std::string &name) {
  OpBuilder o(nullptr, "unsorted_segment_sum", name, "UnsortedSegmentSum",
              {data, segment_ids, num_segments_like});
  o.requireNumeric(0);
  o.requireInteger(1);
  Dims out = o.check(shape::unsortedSegmentSum(
      data.shape(), segment_ids.shape(), num_segments_like.shape()));
  return o.finish(data.dtype(), out);
}

namespace {
/// `v` [k] reshaped to [k, 1, ...] of rank `rank`, to scale rows.
Tensor asColumn(Tensor v, int64_t rank) {
  for (int64_t d = 1; d < rank; ++d)
    v = expand_dims(v, -1);
  return v;
}

/// The segment sums divided by max(count, 1) (mean) or its square root
/// (sqrt_n), count the number of ids of each segment, as TF's
/// unsorted_segment_mean / _sqrt_n.
Tensor segmentNormalized(const char *op, const char *base, bool sqrtN,
                         const Tensor &data, const Tensor &segmentIds,
                         const Tensor &like, const std::string &name) {
  if (!data.valid())
    throw GraphError(std::string(op) + ": data is an empty Tensor");
  if (!data.has_value() || !is_floating(data.dtype()))
    throw GraphError(std::string(op) + ": data '" + data.name() +
                     "' must be a float tensor, got " +
                     to_string(data.dtype()));
  Graph &g = data.graph();
  auto scope = compositeScope(g, name, base);
  Tensor sum = unsorted_segment_sum(data, segmentIds, like);
  Tensor count = unsorted_segment_sum(ones_like(segmentIds, data.dtype()),
                                      segmentIds, like, "count");
  count = maximum(count, 1.0);
  if (sqrtN)
    count = sqrt(count);
  return divide(sum, asColumn(count, data.rank()));
}

/// Checks the tensors of `ids` (the ids, rows and row_lengths integer
/// vectors, weights an optional float vector) and that they belong to
/// `graph`.
void checkSparseIds(const char *op, const SparseIds &ids, const Graph &graph) {
  auto check = [&](const Tensor &t, const char *field, bool isFloat) {
    std::string where = std::string(op) + ": SparseIds." + field;
    if (!t.valid())
      throw GraphError(where + " is an empty Tensor");
    if (&t.graph() != &graph)
      throw GraphError(where + " '" + t.name() + "' belongs to another graph");
    bool kind = t.has_value() &&
                (isFloat ? is_floating(t.dtype()) : is_integer(t.dtype()));
    if (!kind || t.rank() != 1)
      throw GraphError(where + " '" + t.name() + "' must be a rank-1 " +
                       (isFloat ? "float" : "i32 or i64") + " tensor, got " +
                       (t.has_value() ? to_string(t.dtype()) + " " +
                                            shape::toString(t.shape())
                                      : std::string("no value")));
  };
  check(ids.ids, "ids", false);
  check(ids.rows, "rows", false);
  check(ids.row_lengths, "row_lengths", false);
  if (ids.weights.valid())
    check(ids.weights, "weights", true);
}

/// tf.clip_by_norm of each row of `e` (the norm over all but dim 0), with
/// TF's guard against the infinite gradient of sqrt at 0.
Tensor clipRowsByNorm(const Tensor &e, double clipNorm) {
  Graph &g = e.graph();
  auto scope = g.name_scope(g.unique_layer_name("clip_by_norm"));
  Dims axes;
  for (int64_t d = 1; d < e.rank(); ++d)
    axes.push_back(d);
  Tensor l2sum = reduce_sum(square(e), axes, /*keep_dims=*/true);
  Tensor positive = greater(l2sum, 0.0);
  Tensor l2norm = where(positive, sqrt(where(positive, l2sum, 1.0)), l2sum);
  return divide(multiply(e, clipNorm), maximum(l2norm, clipNorm));
}
} // namespace

Tensor segment_mean(const Tensor &data, const Tensor &segment_ids,
                    const Tensor &num_segments_like, const std::string &name) {
  return segmentNormalized("segment_mean", "UnsortedSegmentMean", false, data,
                           segment_ids, num_segments_like, name);
}

Tensor segment_sqrt_n(const Tensor &data, const Tensor &segment_ids,
                      const Tensor &num_segments_like,
                      const std::string &name) {
  return segmentNormalized("segment_sqrt_n", "UnsortedSegmentSqrtN", true, data,
                           segment_ids, num_segments_like, name);
}

Tensor bucketize(const Tensor &x, const std::vector<double> &boundaries,
                 const std::string &name) {
  OpBuilder o(nullptr, "bucketize", name, "Bucketize", {x});
  o.requireNumeric(0);
  graph::AttrValue list;
  list.mutable_list();
  for (size_t i = 0; i < boundaries.size(); ++i) {
    if (std::isnan(boundaries[i]))
      o.fail("boundary " + std::to_string(i) + " is NaN");
    if (i > 0 && boundaries[i] < boundaries[i - 1])
      o.fail("boundaries must be sorted ascending, but boundary " +
             std::to_string(i) + " (" + formatNumber(boundaries[i]) +
             ") < boundary " + std::to_string(i - 1) + " (" +
             formatNumber(boundaries[i - 1]) + ")");
    list.mutable_list()->add_f(boundaries[i]);
  }
  return o.finish(DType::Int64, x.shape(), {{"boundaries", list}});
}

namespace detail {
Tensor
combineSparseEmbeddings(const char *op, Graph &g, DType dtype, int64_t rank,
                        const std::function<Tensor(const Tensor &)> &lookup,
                        const SparseIds &ids, const std::string &combiner,
                        double max_norm, const std::string &name) {
  if (combiner != "sum" && combiner != "mean" && combiner != "sqrtn")
    throw GraphError(std::string(op) +
                     ": combiner must be \"sum\", \"mean\" or \"sqrtn\", "
                     "got \"" +
                     combiner + "\"");
  if (std::isnan(max_norm) || std::isinf(max_norm))
    throw GraphError(std::string(op) + ": max_norm must be finite, got " +
                     formatNumber(max_norm));
  checkSparseIds(op, ids, g);
  auto scope = compositeScope(g, name, "embedding_lookup");
  Tensor embeddings = lookup(ids.ids);
  if (max_norm > 0)
    embeddings = clipRowsByNorm(embeddings, max_norm);
  if (!ids.weights.valid()) {
    // All weights 1: the divisor is the row's number of ids.
    Tensor sum = unsorted_segment_sum(embeddings, ids.rows, ids.row_lengths);
    if (combiner == "sum")
      return sum;
    Tensor count = maximum(cast(ids.row_lengths, dtype), 1.0);
    if (combiner == "sqrtn")
      count = sqrt(count);
    return divide(sum, asColumn(count, rank));
  }
  Tensor w =
      ids.weights.dtype() == dtype ? ids.weights : cast(ids.weights, dtype);
  // TF prunes the ids of weight <= 0 for mean and sqrtn (not for sum): a
  // weight of 0 adds nothing to either sum.
  if (combiner != "sum")
    w = where(greater(w, 0.0), w, 0.0);
  Tensor sum = unsorted_segment_sum(multiply(embeddings, asColumn(w, rank)),
                                    ids.rows, ids.row_lengths);
  if (combiner == "sum")
    return sum;
  Tensor divisor = unsorted_segment_sum(combiner == "mean" ? w : square(w),
                                        ids.rows, ids.row_lengths);
  if (combiner == "sqrtn")
    divisor = sqrt(divisor);
  // TF's div_no_nan: a row without (unpruned) ids has sum 0 and divisor 0.
  divisor = where(greater(divisor, 0.0), divisor, 1.0);
  return divide(sum, asColumn(divisor, rank));
}
} // namespace detail

Tensor safe_embedding_lookup_sparse(const Tensor &params, const SparseIds &ids,
                                    const std::string &combiner,
                                    double max_norm, const std::string &name) {
  const char *op = "safe_embedding_lookup_sparse";
  if (!params.valid())
    throw GraphError(std::string(op) + ": params is an empty Tensor");
  // Rank 2 only: TF's own lookup fails on higher-rank params (the select
  // that zeroes empty rows).
  if (!params.has_value() || !is_floating(params.dtype()) || params.rank() != 2)
    throw GraphError(std::string(op) + ": params '" + params.name() +
                     "' must be a float matrix [vocab, dim], got " +
                     (params.has_value() ? to_string(params.dtype()) + " " +
                                               shape::toString(params.shape())
                                         : std::string("no value")));
  return detail::combineSparseEmbeddings(
      op, params.graph(), params.dtype(), params.rank(),
      [&](const Tensor &rowIds) { return gather(params, rowIds); }, ids,
      combiner, max_norm, name);
}

Tensor sparse_to_indicator(const SparseIds &ids, int64_t depth,
                           const std::string &name) {
  const char *op = "sparse_to_indicator";
  if (!ids.ids.valid())
    throw GraphError(std::string(op) + ": SparseIds.ids is an empty Tensor");
  Graph &g = ids.ids.graph();
  checkSparseIds(op, ids, g);
  if (depth < 1)
    throw GraphError(std::string(op) + ": depth must be positive, got " +
                     std::to_string(depth));
  auto scope = compositeScope(g, name, "SparseToIndicator");
  Tensor hot = one_hot(ids.ids, depth, 1.0, 0.0, -1, DType::Float32);
  if (ids.weights.valid()) {
    Tensor w = ids.weights.dtype() == DType::Float32
                   ? ids.weights
                   : cast(ids.weights, DType::Float32);
    hot = multiply(hot, expand_dims(w, -1));
  }
  return unsorted_segment_sum(hot, ids.rows, ids.row_lengths);
}

// --- Misc --------------------------------------------------------------------

Tensor stop_gradient(const Tensor &x, const std::string &name) {
  OpBuilder o(nullptr, "stop_gradient", name, "StopGradient", {x});
  return o.finish(x.dtype(), x.shape());
}

namespace {
// zeros_like / ones_like, then a cast when another dtype is asked for.
Tensor fillLike(const char *op, const char *base, const Tensor &x, DType dtype,
                const std::string &name) {
  OpBuilder o(nullptr, op, name, base, {x});
  Tensor filled = o.finish(x.dtype(), x.shape());
  return dtype == DType::Invalid || dtype == x.dtype() ? filled
                                                       : cast(filled, dtype);
}
} // namespace

Tensor zeros_like(const Tensor &x, DType dtype, const std::string &name) {
  return fillLike("zeros_like", "ZerosLike", x, dtype, name);
}

Tensor ones_like(const Tensor &x, DType dtype, const std::string &name) {
  return fillLike("ones_like", "OnesLike", x, dtype, name);
}

Operation assign(const Variable &variable, const Tensor &value,
                 const std::string &name) {
  Graph &g = variable.graph();
  OpBuilder o(&g, "assign_variable", name, "Assign", {value});
  if (value.dtype() != variable.dtype())
    o.fail("value type " + to_string(value.dtype()) +
           " does not match variable '" + variable.name() + "' of type " +
           to_string(variable.dtype()));
  Dims vshape = variable.shape();
  shape::ShapeOr s = shape::broadcastTo(value.shape(), vshape);
  if (!s || value.rank() != static_cast<int64_t>(vshape.size()))
    o.fail("value shape does not match variable '" + variable.name() + "' " +
           shape::toString(vshape));
  return o.finish(DType::Invalid, {}, {{"variable", attr_s(variable.name())}});
}

Operation assign_add(const Variable &variable, const Tensor &value,
                     const std::string &name) {
  Graph &g = variable.graph();
  auto scope =
      g.name_scope(g.unique_layer_name(name.empty() ? "AssignAdd" : name));
  return assign(variable, add(variable.read(), value));
}

Operation group(const std::vector<Operation> &ops, const std::string &name) {
  if (ops.empty())
    throw GraphError("group: needs at least one operation");
  Graph *graph = nullptr;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (!ops[i].valid())
      throw GraphError("group: operation " + std::to_string(i) +
                       " is an empty Operation");
    if (!graph)
      graph = &ops[i].graph();
    else if (&ops[i].graph() != graph)
      throw GraphError("group: operation '" + ops[i].name() +
                       "' belongs to another graph");
  }
  std::string node =
      graph->unique_node_name(name.empty() ? "group_deps" : name);
  return graph->add_node(node, "group", ops, {}, DType::Invalid, {});
}

// --- Random ------------------------------------------------------------------

Tensor random_uniform(Graph &g, const Dims &shape, DType dtype, double minval,
                      double maxval, std::optional<int64_t> seed,
                      const std::string &name) {
  return randomOp("random_uniform", "RandomUniform", g, shape, dtype, "minval",
                  minval, "maxval", maxval, seed, name);
}
Tensor random_normal(Graph &g, const Dims &shape, DType dtype, double mean,
                     double stddev, std::optional<int64_t> seed,
                     const std::string &name) {
  return randomOp("random_normal", "RandomNormal", g, shape, dtype, "mean",
                  mean, "stddev", stddev, seed, name);
}
Tensor truncated_normal(Graph &g, const Dims &shape, DType dtype, double mean,
                        double stddev, std::optional<int64_t> seed,
                        const std::string &name) {
  return randomOp("truncated_normal", "TruncatedNormal", g, shape, dtype,
                  "mean", mean, "stddev", stddev, seed, name);
}

SampledValues log_uniform_candidate_sampler(const Tensor &true_classes,
                                            int64_t num_true,
                                            int64_t num_sampled, bool unique,
                                            int64_t range_max,
                                            std::optional<int64_t> seed,
                                            const std::string &name) {
  const char *op = "log_uniform_candidate_sampler";
  std::string at = std::string(op) + ": true_classes";
  if (!true_classes.valid())
    throw GraphError(at + " is an empty Tensor");
  if (!true_classes.has_value() || !is_integer(true_classes.dtype()) ||
      true_classes.rank() != 2)
    throw GraphError(at + " '" + true_classes.name() +
                     "' must be a rank-2 i32 or i64 tensor [batch, "
                     "num_true], got " +
                     (true_classes.has_value()
                          ? to_string(true_classes.dtype()) + " " +
                                shape::toString(true_classes.shape())
                          : std::string("no value")));
  if (num_true < 1 || num_sampled < 1 || range_max < 1)
    throw GraphError(std::string(op) +
                     ": num_true, num_sampled and range_max must be >= 1, "
                     "got " +
                     std::to_string(num_true) + ", " +
                     std::to_string(num_sampled) + " and " +
                     std::to_string(range_max));
  if (int64_t n = true_classes.shape()[1];
      n != shape::kUnknownDim && n != num_true)
    throw GraphError(at + " '" + true_classes.name() + "' " +
                     shape::toString(true_classes.shape()) + " has " +
                     std::to_string(n) + " classes per row, num_true is " +
                     std::to_string(num_true));
  if (unique && num_sampled > range_max)
    throw GraphError(
        std::string(op) + ": cannot sample " + std::to_string(num_sampled) +
        " unique candidates from range_max " + std::to_string(range_max));
  Graph &g = true_classes.graph();
  auto scope = compositeScope(g, name, "LogUniformCandidateSampler");
  const int64_t s = num_sampled;
  const int64_t draws = unique ? 4 * s + 128 : s;
  const double logRange = std::log1p(static_cast<double>(range_max));
  // TF's LogUniformSampler::Sample: floor(exp(u log(range + 1))) - 1.
  Tensor u = random_uniform(g, {draws}, DType::Float64, 0.0, 1.0, seed);
  Tensor values = cast(minimum(estc::floor(estc::exp(u * logRange)) - 1.0,
                               static_cast<double>(range_max - 1)),
                       DType::Int64, "values");
  Tensor sampled, tries;
  if (unique) {
    // The first s distinct values in draw order: a draw is new when no
    // earlier draw equals it; its rank among the new ones is an exclusive
    // cumsum; `tries` counts the draws up to the one completing the set.
    std::vector<double> positions(draws);
    for (int64_t i = 0; i < draws; ++i)
      positions[i] = static_cast<double>(i);
    Tensor order = g.constant(positions, {draws}, DType::Int64);
    // before[i, j]: draw j precedes draw i.
    Tensor before = less(expand_dims(order, 0), expand_dims(order, 1));
    Tensor repeat = reduce_max(
        cast(logical_and(equal(expand_dims(values, 1), expand_dims(values, 0)),
                         before),
             DType::Int64),
        Dims{1});
    Tensor isNew = subtract(1, repeat);
    Tensor rank = cumsum(isNew, 0, /*exclusive=*/true);
    Tensor distinct = check_range(reduce_sum(isNew), s, draws + 1,
                                  "distinct sampled classes");
    std::vector<double> slots(s);
    for (int64_t k = 0; k < s; ++k)
      slots[k] = static_cast<double>(k);
    // Both results read the checked count (min(distinct, s) is s once the
    // check passed), so the check runs whichever of them is used.
    Tensor limit = minimum(distinct, s);
    Tensor taken = less(rank, limit);
    Tensor slot =
        logical_and(logical_and(equal(expand_dims(rank, 1),
                                      g.constant(slots, {1, s}, DType::Int64)),
                                expand_dims(taken, 1)),
                    equal(expand_dims(isNew, 1), 1));
    sampled = reduce_sum(cast(slot, DType::Int64) * expand_dims(values, 1),
                         Dims{0}, false, "sampled_candidates");
    tries = reduce_sum(cast(taken, DType::Float64));
  } else {
    sampled = values;
    tries = g.constant(static_cast<double>(s), DType::Float64);
  }
  // TF's ExpectedCountHelper of P(c) = log1p(1 / (c + 1)) / log(range + 1).
  auto expected = [&](const Tensor &classes, const std::string &what) {
    Tensor c = cast(classes, DType::Float64);
    Tensor p = estc::log1p(1.0 / (c + 1.0)) * (1.0 / logRange);
    Tensor once = p * static_cast<double>(s);
    Tensor count =
        unique ? where(equal(tries, static_cast<double>(s)), once,
                       negative(estc::expm1(tries * estc::log1p(negative(p)))))
               : once;
    return cast(count, DType::Float32, what);
  };
  SampledValues out;
  out.sampled_candidates = sampled;
  out.true_expected_count = expected(true_classes, "true_expected_count");
  out.sampled_expected_count = expected(sampled, "sampled_expected_count");
  return out;
}

// --- nn ----------------------------------------------------------------------

namespace nn {
Tensor relu(const Tensor &x, const std::string &name) {
  return unary("relu", "Relu", Kind::Float, x, name);
}
Tensor relu6(const Tensor &x, const std::string &name) {
  return unary("relu6", "Relu6", Kind::Float, x, name);
}
Tensor elu(const Tensor &x, const std::string &name) {
  return unary("elu", "Elu", Kind::Float, x, name);
}
Tensor softplus(const Tensor &x, const std::string &name) {
  return unary("softplus", "Softplus", Kind::Float, x, name);
}
Tensor sigmoid(const Tensor &x, const std::string &name) {
  return estc::sigmoid(x, name);
}
Tensor tanh(const Tensor &x, const std::string &name) {
  return estc::tanh(x, name);
}

namespace {
Tensor softmaxLike(const char *op, const char *base, const Tensor &logits,
                   int64_t axis, const std::string &name) {
  OpBuilder o(nullptr, op, name, base, {logits});
  o.requireFloat(0);
  if (!shape::normalizeAxis(axis, logits.rank()))
    o.fail("axis " + std::to_string(axis) + " is out of range for rank " +
           std::to_string(logits.rank()));
  return o.finish(logits.dtype(), logits.shape(), {{"axis", attr_i(axis)}});
}
} // namespace

Tensor softmax(const Tensor &logits, int64_t axis, const std::string &name) {
  return softmaxLike("softmax", "Softmax", logits, axis, name);
}
Tensor log_softmax(const Tensor &logits, int64_t axis,
                   const std::string &name) {
  return softmaxLike("log_softmax", "LogSoftmax", logits, axis, name);
}

Tensor conv2d(const Tensor &input, const Tensor &filter, const Dims &strides,
              const std::string &padding, const std::string &data_format,
              const Dims &dilations, const std::string &name) {
  OpBuilder o(nullptr, "conv2d", name, "Conv2D", {input, filter});
  if (o.channelsFirst(data_format, "NHWC", "NCHW"))
    return transpose(conv2d(transpose(input, {0, 2, 3, 1}), filter, strides,
                            padding, "NHWC", dilations, name),
                     {0, 3, 1, 2});
  o.requireFloat(0);
  o.requireSameDType(0, 1);
  Dims out = o.check(shape::conv2d(input.shape(), filter.shape(), strides,
                                   dilations, o.padding(padding)));
  return o.finish(input.dtype(), out,
                  {{"strides", attr_list(strides)},
                   {"dilations", attr_list(dilations)},
                   {"padding", attr_s(padding)}});
}

Tensor max_pool(const Tensor &input, const Dims &ksize, const Dims &strides,
                const std::string &padding, const std::string &data_format,
                const std::string &name) {
  return pool("max_pool", "MaxPool", input, ksize, strides, padding,
              data_format, name);
}
Tensor avg_pool(const Tensor &input, const Dims &ksize, const Dims &strides,
                const std::string &padding, const std::string &data_format,
                const std::string &name) {
  return pool("avg_pool", "AvgPool", input, ksize, strides, padding,
              data_format, name);
}

Tensor conv2d_backprop_input(const Tensor &grad_output, const Tensor &filter,
                             const Dims &input_size, const Dims &strides,
                             const std::string &padding, const Dims &dilations,
                             const std::string &name) {
  OpBuilder o(nullptr, "conv2d_backprop_input", name, "Conv2DBackpropInput",
              {grad_output, filter});
  o.requireFloat(0);
  o.requireSameDType(0, 1);
  Dims out = o.check(shape::conv2dBackpropInput(
      grad_output.shape(), filter.shape(), input_size, strides, dilations,
      o.padding(padding)));
  return o.finish(grad_output.dtype(), out,
                  {{"input_size", attr_list(input_size)},
                   {"strides", attr_list(strides)},
                   {"dilations", attr_list(dilations)},
                   {"padding", attr_s(padding)}});
}

Tensor conv2d_backprop_filter(const Tensor &input, const Tensor &grad_output,
                              const Dims &filter_size, const Dims &strides,
                              const std::string &padding, const Dims &dilations,
                              const std::string &name) {
  OpBuilder o(nullptr, "conv2d_backprop_filter", name, "Conv2DBackpropFilter",
              {input, grad_output});
  o.requireFloat(0);
  o.requireSameDType(0, 1);
  Dims out = o.check(shape::conv2dBackpropFilter(
      input.shape(), grad_output.shape(), filter_size, strides, dilations,
      o.padding(padding)));
  return o.finish(input.dtype(), out,
                  {{"filter_size", attr_list(filter_size)},
                   {"strides", attr_list(strides)},
                   {"dilations", attr_list(dilations)},
                   {"padding", attr_s(padding)}});
}

Tensor depthwise_conv2d_native(const Tensor &input, const Tensor &filter,
                               const Dims &strides, const std::string &padding,
                               const Dims &dilations, const std::string &name) {
  OpBuilder o(nullptr, "depthwise_conv2d", name, "DepthwiseConv2dNative",
              {input, filter});
  o.requireFloat(0);
  o.requireSameDType(0, 1);
  Dims out = o.check(shape::depthwiseConv2d(
      input.shape(), filter.shape(), strides, dilations, o.padding(padding)));
  return o.finish(input.dtype(), out,
                  {{"strides", attr_list(strides)},
                   {"dilations", attr_list(dilations)},
                   {"padding", attr_s(padding)}});
}

Tensor depthwise_conv2d_backprop_input(
    const Tensor &grad_output, const Tensor &filter, const Dims &input_size,
    const Dims &strides, const std::string &padding, const Dims &dilations,
    const std::string &name) {
  OpBuilder o(nullptr, "depthwise_conv2d_backprop_input", name,
              "DepthwiseConv2dNativeBackpropInput", {grad_output, filter});
  o.requireFloat(0);
  o.requireSameDType(0, 1);
  Dims out = o.check(shape::depthwiseConv2dBackpropInput(
      grad_output.shape(), filter.shape(), input_size, strides, dilations,
      o.padding(padding)));
  return o.finish(grad_output.dtype(), out,
                  {{"input_size", attr_list(input_size)},
                   {"strides", attr_list(strides)},
                   {"dilations", attr_list(dilations)},
                   {"padding", attr_s(padding)}});
}

Tensor depthwise_conv2d_backprop_filter(
    const Tensor &input, const Tensor &grad_output, const Dims &filter_size,
    const Dims &strides, const std::string &padding, const Dims &dilations,
    const std::string &name) {
  OpBuilder o(nullptr, "depthwise_conv2d_backprop_filter", name,
              "DepthwiseConv2dNativeBackpropFilter", {input, grad_output});
  o.requireFloat(0);
  o.requireSameDType(0, 1);
  Dims out = o.check(shape::depthwiseConv2dBackpropFilter(
      input.shape(), grad_output.shape(), filter_size, strides, dilations,
      o.padding(padding)));
  return o.finish(input.dtype(), out,
                  {{"filter_size", attr_list(filter_size)},
                   {"strides", attr_list(strides)},
                   {"dilations", attr_list(dilations)},
                   {"padding", attr_s(padding)}});
}

Tensor max_pool_grad(const Tensor &input, const Tensor &grad_output,
                     const Dims &ksize, const Dims &strides,
                     const std::string &padding, const std::string &name) {
  OpBuilder o(nullptr, "max_pool_grad", name, "MaxPoolGrad",
              {input, grad_output});
  o.requireFloat(0);
  o.requireSameDType(0, 1);
  Dims out = o.check(shape::maxPoolGrad(input.shape(), grad_output.shape(),
                                        ksize, strides, o.padding(padding)));
  return o.finish(input.dtype(), out,
                  {{"ksize", attr_list(ksize)},
                   {"strides", attr_list(strides)},
                   {"padding", attr_s(padding)}});
}

Tensor avg_pool_grad(const Tensor &grad_output, const Dims &input_size,
                     const Dims &ksize, const Dims &strides,
                     const std::string &padding, const std::string &name) {
  OpBuilder o(nullptr, "avg_pool_grad", name, "AvgPoolGrad", {grad_output});
  o.requireFloat(0);
  Dims out = o.check(shape::avgPoolGrad(grad_output.shape(), input_size, ksize,
                                        strides, o.padding(padding)));
  return o.finish(grad_output.dtype(), out,
                  {{"input_size", attr_list(input_size)},
                   {"ksize", attr_list(ksize)},
                   {"strides", attr_list(strides)},
                   {"padding", attr_s(padding)}});
}

FusedBatchNorm fused_batch_norm(const Tensor &x, const Tensor &scale,
                                const Tensor &offset, double epsilon,
                                const std::string &data_format,
                                const std::string &name) {
  OpBuilder o(nullptr, "fused_batch_norm", name, "FusedBatchNormV3",
              {x, scale, offset});
  o.requireFloat(0);
  o.requireSameDType(0, 1);
  o.requireSameDType(0, 2);
  int64_t rank;
  bool channelsLast;
  if (data_format == "NHWC" || data_format == "NCHW") {
    rank = 4;
    channelsLast = data_format == "NHWC";
  } else if (data_format == "NDHWC" || data_format == "NCDHW") {
    rank = 5;
    channelsLast = data_format == "NDHWC";
  } else {
    o.fail("data_format must be \"NHWC\", \"NCHW\", \"NDHWC\" or "
           "\"NCDHW\", got \"" +
           data_format + "\"");
  }
  if (x.rank() != rank)
    o.fail("x must have rank " + std::to_string(rank) + " for data_format \"" +
           data_format + "\"");
  if (!(epsilon >= 0.0)) {
    std::ostringstream os;
    os << "epsilon must be >= 0, got " << epsilon;
    o.fail(os.str());
  }
  int64_t axis = channelsLast ? rank - 1 : 1;
  Dims c =
      o.check(shape::batchNorm(x.shape(), scale.shape(), offset.shape(), axis));
  Tensor node =
      o.finish(DType::Invalid, {},
               {{"axis", attr_i(axis)}, {"epsilon", attr_f(epsilon)}});
  Graph &g = x.graph();
  auto output = [&](int64_t index, const Dims &shape) {
    return g.add_node(g.unique_node_name("output"), "output", {node},
                      {{"index", attr_i(index)}}, x.dtype(), shape);
  };
  return {output(0, x.shape()), output(1, c), output(2, c)};
}

Tensor bias_add(const Tensor &value, const Tensor &bias,
                const std::string &name) {
  if (bias.valid() && bias.has_value() && bias.rank() != 1)
    throw GraphError(
        "bias_add '" +
        value.graph().unique_node_name(name.empty() ? "BiasAdd" : name) +
        "': bias '" + bias.name() + "' must have rank 1, got " +
        shape::toString(bias.shape()));
  return binary("add", "BiasAdd", value, bias, name);
}

Tensor softmax_cross_entropy_with_logits(const Tensor &labels,
                                         const Tensor &logits,
                                         const std::string &name) {
  OpBuilder o(nullptr, "softmax_cross_entropy", name, "SoftmaxCrossEntropy",
              {logits, labels});
  o.requireFloat(0);
  o.requireSameDType(0, 1);
  Dims out =
      o.check(shape::softmaxCrossEntropy(logits.shape(), labels.shape()));
  return o.finish(logits.dtype(), out);
}

Tensor sparse_softmax_cross_entropy_with_logits(const Tensor &labels,
                                                const Tensor &logits,
                                                const std::string &name) {
  OpBuilder o(nullptr, "sparse_softmax_cross_entropy", name,
              "SparseSoftmaxCrossEntropy", {logits, labels});
  o.requireFloat(0);
  o.requireInteger(1);
  Dims out =
      o.check(shape::sparseSoftmaxCrossEntropy(logits.shape(), labels.shape()));
  return o.finish(logits.dtype(), out);
}

Tensor sigmoid_cross_entropy_with_logits(const Tensor &labels,
                                         const Tensor &logits,
                                         const std::string &name) {
  OpBuilder o(nullptr, "sigmoid_cross_entropy", name, "SigmoidCrossEntropy",
              {logits, labels});
  o.requireFloat(0);
  o.requireSameDType(0, 1);
  if (logits.rank() != labels.rank())
    o.fail("labels must have the shape of logits");
  Dims out = o.check(shape::broadcast(logits.shape(), labels.shape()));
  return o.finish(logits.dtype(), out);
}

Tensor dropout(const Tensor &x, double rate, std::optional<int64_t> seed,
               const std::string &name) {
  Graph &g = x.graph();
  Tensor counter = g.global_step();
  OpBuilder o(&g, "dropout", name, "Dropout", {x, counter});
  o.requireFloat(0);
  if (!(rate >= 0.0 && rate < 1.0)) {
    std::ostringstream os;
    os << "rate must be in [0, 1), got " << rate;
    o.fail(os.str());
  }
  std::string mode = g.mode() ? std::string(mode_key(*g.mode())) + "/" : "";
  std::string key = o.node().substr(mode.size());
  return o.finish(
      x.dtype(), x.shape(),
      {{"rate", attr_f(rate)}, {"seed", attr_i(g.derive_seed(key, seed))}});
}
// --- Activations and losses built from elementwise ops --------------------

Tensor leaky_relu(const Tensor &features, double alpha,
                  const std::string &name) {
  requireFloatOrInt("leaky_relu", "features", features);
  auto scope = compositeScope(features.graph(), name, "LeakyRelu");
  // As TF, integers are cast to f32 first.
  Tensor x =
      is_integer(features.dtype()) ? cast(features, DType::Float32) : features;
  // TF's LeakyRelu kernel, any alpha: x > 0 ? x : alpha x.
  return where(greater(x, 0.0), x, x * alpha);
}

Tensor selu(const Tensor &features, const std::string &name) {
  requireFloatTensor("selu", "features", features);
  auto scope = compositeScope(features.graph(), name, "Selu");
  constexpr double kAlpha = 1.6732632423543772848170429916717;
  constexpr double kScale = 1.0507009873554804934193349852946;
  // elu, not expm1, on the negative side: its gradient stays finite where
  // the positive branch is chosen.
  return multiply(
      where(greater(features, 0.0), features, elu(features) * kAlpha), kScale);
}

Tensor gelu(const Tensor &features, bool approximate, const std::string &name) {
  requireFloatTensor("gelu", "features", features);
  auto scope = compositeScope(features.graph(), name, "Gelu");
  const Tensor &x = features;
  Tensor inner;
  if (approximate) {
    Tensor cube = x * x * x;
    inner = estc::tanh((x + cube * 0.044715) * 0.7978845608028654);
  } else {
    inner = erf(x * (1.0 / 1.4142135623730951));
  }
  return x * 0.5 * (inner + 1.0);
}

Tensor silu(const Tensor &features, double beta, const std::string &name) {
  requireFloatTensor("silu", "features", features);
  auto scope = compositeScope(features.graph(), name, "silu");
  return features * estc::sigmoid(beta == 1.0 ? features : features * beta);
}
Tensor swish(const Tensor &features, double beta, const std::string &name) {
  return silu(features, beta, name);
}

Tensor softsign(const Tensor &features, const std::string &name) {
  requireFloatTensor("softsign", "features", features);
  auto scope = compositeScope(features.graph(), name, "Softsign");
  return features / (estc::abs(features) + 1.0);
}

Tensor l2_normalize(const Tensor &x, std::optional<Dims> axis, double epsilon,
                    const std::string &name) {
  requireFloatTensor("l2_normalize", "x", x);
  if (!(epsilon >= 0))
    throw GraphError("l2_normalize: epsilon must be >= 0, got " +
                     formatNumber(epsilon));
  auto scope = compositeScope(x.graph(), name, "l2_normalize");
  Tensor sum = reduce_sum(square(x), axis, /*keep_dims=*/true);
  return x * rsqrt(maximum(sum, epsilon));
}

Tensor zero_fraction(const Tensor &value, const std::string &name) {
  requireFloatOrInt("zero_fraction", "value", value);
  auto scope = compositeScope(value.graph(), name, "zero_fraction");
  // TF's: the zeros counted in an integer (int32 below 2^31 elements), cast
  // to float32 and divided by the size as float32 (an empty tensor: NaN).
  Tensor zeros =
      cast(reduce_sum(cast(equal(value, 0.0), DType::Int32)), DType::Float32);
  int64_t n = shape::numElements(value.shape());
  Tensor count =
      n != shape::kUnknownDim
          ? value.graph().constant(static_cast<double>(n))
          : cast(reduce_prod(shape_of(value, DType::Int64)), DType::Float32);
  return zeros / count;
}

Moments moments(const Tensor &x, const Dims &axes, bool keepdims,
                const std::string &name) {
  requireFloatTensor("moments", "x", x);
  auto scope = compositeScope(x.graph(), name, "moments");
  Tensor mean = reduce_mean(x, axes, /*keep_dims=*/true, "mean");
  Tensor variance = reduce_mean(square(x - stop_gradient(mean)), axes,
                                /*keep_dims=*/true, "variance");
  if (!keepdims && !axes.empty()) {
    mean = squeeze(mean, axes);
    variance = squeeze(variance, axes);
  }
  return {mean, variance};
}

namespace {
/// Checks that the two operands of a loss have compatible shapes (TF's
/// assert_is_compatible_with) and the same float dtype.
void requireSameShape(const char *op, const char *aWhat, const Tensor &a,
                      const char *bWhat, const Tensor &b) {
  requireFloatTensor(op, aWhat, a);
  requireFloatTensor(op, bWhat, b);
  if (!shape::isCompatible(a.shape(), b.shape()))
    throw GraphError(std::string(op) + ": " + aWhat + " '" + a.name() + "' " +
                     shape::toString(a.shape()) + " and " + bWhat + " '" +
                     b.name() + "' " + shape::toString(b.shape()) +
                     " must have the same shape");
  if (a.dtype() != b.dtype())
    throw GraphError(std::string(op) + ": " + aWhat + " '" + a.name() +
                     "' is " + to_string(a.dtype()) + " but " + bWhat + " '" +
                     b.name() + "' is " + to_string(b.dtype()));
}
} // namespace

Tensor log_poisson_loss(const Tensor &targets, const Tensor &log_input,
                        bool compute_full_loss, const std::string &name) {
  requireSameShape("log_poisson_loss", "targets", targets, "log_input",
                   log_input);
  auto scope = compositeScope(targets.graph(), name, "log_poisson_loss");
  Tensor result = estc::exp(log_input) - log_input * targets;
  if (!compute_full_loss)
    return result;
  // Stirling's approximation of log(targets!), where targets > 1.
  constexpr double kTwoPi = 6.283185307179586;
  Tensor stirling = targets * estc::log(targets) - targets +
                    estc::log(targets * kTwoPi) * 0.5;
  Tensor small =
      logical_and(greater_equal(targets, 0.0), less_equal(targets, 1.0));
  return result + where(small, zeros_like(targets), stirling);
}

Tensor weighted_cross_entropy_with_logits(const Tensor &labels,
                                          const Tensor &logits,
                                          const Operand &pos_weight,
                                          const std::string &name) {
  requireSameShape("weighted_cross_entropy_with_logits", "labels", labels,
                   "logits", logits);
  auto scope = compositeScope(labels.graph(), name, "logistic_loss");
  Tensor w = pos_weight.is_number()
                 ? labels.graph().constant(pos_weight.number(), labels.dtype())
                 : pos_weight.tensor();
  Tensor logWeight = (w - 1.0) * labels + 1.0;
  return (1.0 - labels) * logits +
         logWeight * (estc::log1p(estc::exp(negative(estc::abs(logits)))) +
                      relu(negative(logits)));
}

Tensor sampled_softmax_loss(const Tensor &weights, const Tensor &biases,
                            const Tensor &labels, const Tensor &inputs,
                            int64_t num_sampled, int64_t num_classes,
                            int64_t num_true,
                            const std::optional<SampledValues> &sampled_values,
                            bool remove_accidental_hits,
                            std::optional<int64_t> seed,
                            const std::string &name) {
  const char *op = "sampled_softmax_loss";
  requireFloatTensor(op, "weights", weights);
  requireFloatTensor(op, "biases", biases);
  requireFloatTensor(op, "inputs", inputs);
  auto fail = [&](const std::string &problem) {
    throw GraphError(std::string(op) + ": " + problem);
  };
  auto describe = [](const char *what, const Tensor &t) {
    return std::string(what) + " '" + t.name() + "' " +
           shape::toString(t.shape());
  };
  if (weights.rank() != 2 || biases.rank() != 1 || inputs.rank() != 2)
    fail(describe("weights", weights) + ", " + describe("biases", biases) +
         " and " + describe("inputs", inputs) +
         " must be [num_classes, dim], [num_classes] and [batch, dim]");
  if (weights.dtype() != biases.dtype() || weights.dtype() != inputs.dtype())
    fail("weights, biases and inputs must have one dtype, got " +
         to_string(weights.dtype()) + ", " + to_string(biases.dtype()) +
         " and " + to_string(inputs.dtype()));
  if (!shape::isCompatible({weights.shape()[1]}, {inputs.shape()[1]}))
    fail(describe("weights", weights) + " and " + describe("inputs", inputs) +
         " differ in dim");
  if (!labels.valid() || !labels.has_value() || !is_integer(labels.dtype()) ||
      labels.rank() != 2)
    fail("labels must be a rank-2 i32 or i64 tensor [batch, num_true]" +
         (labels.valid() && labels.has_value()
              ? ", got " + to_string(labels.dtype()) + " " +
                    describe("", labels).substr(1)
              : std::string()));
  if (num_true < 1 || num_sampled < 1 || num_classes < 1)
    fail("num_true, num_sampled and num_classes must be >= 1, got " +
         std::to_string(num_true) + ", " + std::to_string(num_sampled) +
         " and " + std::to_string(num_classes));
  if (int64_t n = labels.shape()[1]; n != shape::kUnknownDim && n != num_true)
    fail(describe("labels", labels) + " has " + std::to_string(n) +
         " classes per row, num_true is " + std::to_string(num_true));
  Graph &g = weights.graph();
  auto scope = compositeScope(g, name, op);
  Tensor labels64 =
      labels.dtype() == DType::Int64 ? labels : cast(labels, DType::Int64);
  Tensor labelsFlat = reshape(labels64, {-1});
  SampledValues sv =
      sampled_values
          ? *sampled_values
          : log_uniform_candidate_sampler(labels64, num_true, num_sampled, true,
                                          num_classes, seed);
  if (!sv.sampled_candidates.valid() || !sv.true_expected_count.valid() ||
      !sv.sampled_expected_count.valid())
    fail("sampled_values has an empty Tensor");
  Tensor sampled = stop_gradient(sv.sampled_candidates);
  if (!is_integer(sampled.dtype()) || sampled.rank() != 1)
    fail("sampled_values.sampled_candidates must be a rank-1 i32 or i64 "
         "tensor, got " +
         describe("", sampled).substr(1));
  if (sampled.dtype() != DType::Int64)
    sampled = cast(sampled, DType::Int64);
  DType dtype = weights.dtype();
  auto asDtype = [&](const Tensor &t) {
    return t.dtype() == dtype ? t : cast(t, dtype);
  };
  Tensor trueExpected = asDtype(stop_gradient(sv.true_expected_count));
  Tensor sampledExpected = asDtype(stop_gradient(sv.sampled_expected_count));
  int64_t dim = weights.shape()[1];
  // The true classes' logits: row-wise dots with their weights.
  Tensor trueW = gather(weights, labelsFlat);
  Tensor trueB = gather(biases, labelsFlat);
  Tensor trueLogits =
      reduce_sum(expand_dims(inputs, 1) * reshape(trueW, {-1, num_true, dim}),
                 Dims{2}) +
      reshape(trueB, {-1, num_true});
  // The sampled classes' logits: one matmul.
  Tensor sampledLogits = matmul(inputs, gather(weights, sampled), false, true) +
                         gather(biases, sampled);
  if (remove_accidental_hits) {
    Tensor hit = reduce_max(
        cast(equal(expand_dims(labels64, 2), reshape(sampled, {1, 1, -1})),
             DType::Int32),
        Dims{1});
    sampledLogits = where(
        greater(hit, 0),
        sampledLogits + -static_cast<double>(std::numeric_limits<float>::max()),
        sampledLogits);
  }
  trueLogits = trueLogits - estc::log(trueExpected);
  sampledLogits = sampledLogits - estc::log(sampledExpected);
  Tensor logits = concat({trueLogits, sampledLogits}, 1);
  Tensor targets = stop_gradient(concat(
      {ones_like(trueLogits) * (1.0 / num_true), zeros_like(sampledLogits)},
      1));
  return softmax_cross_entropy_with_logits(targets, logits);
}

Tensor in_top_k(const Tensor &targets, const Tensor &predictions, int64_t k,
                const std::string &name) {
  OpBuilder o(nullptr, "in_top_k", name, "in_top_k", {targets, predictions});
  o.requireInteger(0);
  o.requireFloat(1);
  Dims t = targets.shape(), p = predictions.shape();
  if (t.size() != 1 || p.size() != 2)
    o.fail("targets must have rank 1 and predictions rank 2");
  if (t[0] >= 0 && p[0] >= 0 && t[0] != p[0])
    o.fail("targets has " + std::to_string(t[0]) + " entries for a batch of " +
           std::to_string(p[0]));
  if (p[1] < 0)
    o.fail("predictions need a static number of classes");
  auto scope = compositeScope(o.graph(), name, "in_top_k");
  // The target's prediction, then how many are strictly larger; a target
  // outside [0, classes) (clamped by take_along_axis) or a row with a NaN
  // or infinity is never in.
  Tensor target = take_along_axis(
      predictions, expand_dims(cast(targets, DType::Int32), -1), -1, "target");
  Tensor larger = reduce_sum(cast(greater(predictions, target), DType::Int32),
                             Dims{1}, false, "larger");
  double largest = predictions.dtype() == DType::Float64
                       ? std::numeric_limits<double>::max()
                       : std::numeric_limits<float>::max();
  Tensor finite = less_equal(abs(predictions), largest, "finite");
  Tensor rowFinite =
      equal(reduce_sum(cast(logical_not(finite), DType::Int32), Dims{1}), 0);
  Tensor inRange = logical_and(greater_equal(targets, 0),
                               less(targets, static_cast<double>(p[1])));
  return logical_and(
      logical_and(less(larger, static_cast<double>(k)), rowFinite), inRange,
      "in_top_k");
}

Tensor dropout(const Tensor &x, double rate, const Dims &noise_shape,
               std::optional<int64_t> seed, const std::string &name) {
  if (!x.has_value() || static_cast<int64_t>(noise_shape.size()) != x.rank())
    throw GraphError("dropout: input '" + x.name() + "' " +
                     (x.has_value() ? shape::toString(x.shape())
                                    : std::string("(no value)")) +
                     ": noise_shape " + shape::toString(noise_shape) +
                     " must have the input's rank");
  Dims begin(noise_shape.size(), 0), size;
  bool whole = true;
  for (size_t i = 0; i < noise_shape.size(); ++i) {
    int64_t n = noise_shape[i], d = x.shape()[i];
    if (n != -1 && n != 1 && n != d)
      throw GraphError("dropout: input '" + x.name() + "' " +
                       shape::toString(x.shape()) + ": noise_shape " +
                       shape::toString(noise_shape) +
                       " must have 1 or the input's size in each dim (-1: "
                       "the input's)");
    bool one = n == 1 && d != 1;
    whole = whole && !one;
    size.push_back(one ? 1 : -1);
  }
  if (whole)
    return dropout(x, rate, seed, name);
  // The kept-and-scaled mask drawn at the noise shape, broadcast over x.
  Tensor mask = dropout(ones_like(slice(x, begin, size)), rate, seed, name);
  return multiply(x, mask);
}

Tensor layer_norm(const Tensor &x, const Tensor &gamma, const Tensor &beta,
                  int64_t begin_norm_axis, int64_t begin_params_axis,
                  double epsilon, const std::string &name) {
  OpBuilder o(nullptr, "layer_norm", name, "LayerNorm", {x, gamma, beta});
  o.requireFloat(0);
  o.requireSameDType(0, 1);
  o.requireSameDType(0, 2);
  if (!(epsilon >= 0.0)) {
    std::ostringstream os;
    os << "epsilon must be >= 0, got " << epsilon;
    o.fail(os.str());
  }
  Dims out = o.check(shape::layerNorm(x.shape(), gamma.shape(), beta.shape(),
                                      begin_norm_axis, begin_params_axis));
  return o.finish(x.dtype(), out,
                  {{"begin_norm_axis", attr_i(begin_norm_axis)},
                   {"begin_params_axis", attr_i(begin_params_axis)},
                   {"epsilon", attr_f(epsilon)}});
}

namespace {
Tensor attentionSoftmax(std::vector<Tensor> inputs, double scale, bool causal,
                        const std::string &name) {
  bool hasMask = inputs.size() == 2;
  OpBuilder o(nullptr, "attention_softmax", name, "AttentionSoftmax",
              std::move(inputs));
  o.requireFloat(0);
  std::optional<Dims> mask;
  if (hasMask) {
    if (o.in(1).dtype() != DType::Bool && o.in(1).dtype() != o.in(0).dtype())
      o.fail("the mask must be bool (true = attend) or an additive mask of "
             "the logits' dtype, got " +
             to_string(o.in(1).dtype()));
    mask = o.in(1).shape();
  }
  if (!std::isfinite(scale)) {
    std::ostringstream os;
    os << "scale must be finite, got " << scale;
    o.fail(os.str());
  }
  Dims out = o.check(shape::attentionSoftmax(o.in(0).shape(), mask));
  return o.finish(o.in(0).dtype(), out,
                  {{"scale", attr_f(scale)}, {"causal", attr_b(causal)}});
}
} // namespace

Tensor attention_softmax(const Tensor &logits, double scale, bool causal,
                         const std::string &name) {
  return attentionSoftmax({logits}, scale, causal, name);
}

Tensor attention_softmax(const Tensor &logits, const Tensor &mask, double scale,
                         bool causal, const std::string &name) {
  return attentionSoftmax({logits, mask}, scale, causal, name);
}

Tensor scaled_dot_product_attention(const Tensor &query, const Tensor &key,
                                    const Tensor &value,
                                    const std::optional<Tensor> &mask,
                                    bool causal, std::optional<double> scale,
                                    const std::string &name) {
  Graph &g = query.graph();
  auto s = g.name_scope(name.empty() ? g.unique_layer_name("attention") : name);
  int64_t depth = query.has_value() && query.rank() >= 1 ? query.shape().back()
                                                         : shape::kUnknownDim;
  if (!scale && depth == shape::kUnknownDim)
    throw GraphError("scaled_dot_product_attention: query '" + query.name() +
                     "' " + shape::toString(query.shape()) +
                     ": the last dimension must be known (or give scale)");
  double sc = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(depth));
  Tensor logits = matmul(query, key, false, true, "scores");
  Tensor weights = mask ? attention_softmax(logits, *mask, sc, causal)
                        : attention_softmax(logits, sc, causal);
  return matmul(weights, value, false, false, "output");
}

} // namespace nn

namespace activations {
Tensor hard_sigmoid(const Tensor &x, const std::string &name) {
  requireFloatTensor("hard_sigmoid", "x", x);
  auto scope = compositeScope(x.graph(), name, "hard_sigmoid");
  return clip_by_value(x * 0.2 + 0.5, 0.0, 1.0);
}
} // namespace activations

namespace image {

namespace {
Tensor resizeNode(const Tensor &images, const Dims &size,
                  const std::string &method, bool alignCorners,
                  bool halfPixelCenters, const std::string &name,
                  const char *base) {
  OpBuilder o(nullptr, "resize_images", name, base, {images});
  o.requireNumeric(0);
  if (method != "bilinear" && method != "nearest")
    o.fail("method must be \"bilinear\" or \"nearest\", got \"" + method +
           "\"");
  if (method == "bilinear")
    o.requireFloat(0);
  if (alignCorners && halfPixelCenters)
    o.fail("align_corners and half_pixel_centers cannot both be true");
  Dims out = o.check(shape::resizeImages(images.shape(), size));
  return o.finish(images.dtype(), out,
                  {{"size", attr_list(size)},
                   {"method", attr_s(method)},
                   {"align_corners", attr_b(alignCorners)},
                   {"half_pixel_centers", attr_b(halfPixelCenters)}});
}

/// TF's ScaleAndTranslate weights with the triangle kernel and antialiasing
/// (scale_and_translate_op.cc, ComputeSpansCore), the resize of one
/// dimension from `in` to `out` as a dense [in, out] matrix: column o holds
/// output o's normalized weights of the input positions of its span.
/// Computed in f32, as TF computes them.
std::vector<double> antialiasWeights(int64_t in, int64_t out) {
  float scale = static_cast<float>(out) / static_cast<float>(in);
  float invScale = 1.0f / scale;
  float kernelScale = std::max(invScale, 1.0f);
  float oneOverKernelScale = 1.0f / kernelScale;
  std::vector<double> w(static_cast<size_t>(in * out), 0.0);
  for (int64_t o = 0; o < out; ++o) {
    float sample = (static_cast<float>(o) + 0.5f) * invScale;
    if (sample < 0 || sample > static_cast<float>(in))
      continue;
    int64_t start =
        static_cast<int64_t>(std::ceil(sample - kernelScale - 0.5f));
    int64_t end = static_cast<int64_t>(std::floor(sample + kernelScale - 0.5f));
    start = std::clamp<int64_t>(start, 0, in - 1);
    end = std::clamp<int64_t>(end, 0, in - 1) + 1;
    std::vector<float> weights;
    float total = 0.0f;
    for (int64_t i = start; i < end; ++i) {
      float pos = std::abs((static_cast<float>(i) + 0.5f - sample) *
                           oneOverKernelScale);
      float weight = pos < 1.0f ? 1.0f - pos : 0.0f;
      total += weight;
      weights.push_back(weight);
    }
    if (std::abs(total) < 1000.0f * std::numeric_limits<float>::min())
      continue;
    float oneOverTotal = 1.0f / total;
    for (int64_t i = start; i < end; ++i)
      w[static_cast<size_t>(i * out + o)] = weights[i - start] * oneOverTotal;
  }
  return w;
}

/// An antialiased bilinear resize of NHWC f32 `x` to `size` (TF 2's
/// tf.image.resize with antialias=True: ScaleAndTranslate with the triangle
/// kernel), as two products with constant weight matrices: along H, then W.
Tensor antialiasResize(const Tensor &x, int64_t h, int64_t w,
                       const Dims &size) {
  Graph &g = x.graph();
  Tensor wy = g.constant(antialiasWeights(h, size[0]), {h, size[0]},
                         DType::Float32, "height_weights");
  Tensor wx = g.constant(antialiasWeights(w, size[1]), {w, size[1]},
                         DType::Float32, "width_weights");
  // [N,H,W,C] -> [N,W,C,H] x [H,h] -> [N,W,C,h] -> [N,h,W,C].
  Tensor y = transpose(matmul(transpose(x, {0, 2, 3, 1}), wy), {0, 3, 1, 2});
  // [N,h,W,C] -> [N,h,C,W] x [W,w] -> [N,h,C,w] -> [N,h,w,C].
  return transpose(matmul(transpose(y, {0, 1, 3, 2}), wx), {0, 1, 3, 2});
}

/// Bilinear resizing of any numeric images: float32, as TF's.
Tensor asFloat32(const Tensor &images) {
  return images.dtype() == DType::Float32 ? images
                                          : cast(images, DType::Float32);
}
} // namespace

Tensor resize(const Tensor &images, const Dims &size, const std::string &method,
              bool preserve_aspect_ratio, bool antialias,
              const std::string &name) {
  OpBuilder o(nullptr, "resize", name, "resize", {images});
  Dims s = images.shape();
  if (s.size() != 3 && s.size() != 4)
    o.fail("images must be [batch, height, width, channels] or [height, "
           "width, channels]");
  if (size.size() != 2 || size[0] < 1 || size[1] < 1)
    o.fail("size must be [new_height, new_width], both >= 1, got " +
           shape::toString(size));
  if (method != "bilinear" && method != "nearest")
    o.fail("method must be \"bilinear\" or \"nearest\", got \"" + method +
           "\"");
  bool batched = s.size() == 4;
  int64_t h = s[batched ? 1 : 0], w = s[batched ? 2 : 1];
  if (h < 0 || w < 0)
    o.fail("images need a static height and width");
  Dims target = size;
  if (preserve_aspect_ratio) {
    // TF: the smaller scale factor (f32), sides rounded half to even.
    float factor =
        std::min(static_cast<float>(size[0]) / static_cast<float>(h),
                 static_cast<float>(size[1]) / static_cast<float>(w));
    target = {static_cast<int64_t>(std::nearbyint(factor * h)),
              static_cast<int64_t>(std::nearbyint(factor * w))};
    target[0] = std::max<int64_t>(target[0], 1);
    target[1] = std::max<int64_t>(target[1], 1);
  }
  auto scope = compositeScope(o.graph(), name, "resize");
  Tensor x = batched ? images : expand_dims(images, 0);
  if (method == "bilinear")
    x = asFloat32(x);
  Tensor y = antialias && method == "bilinear"
                 ? antialiasResize(x, h, w, target)
                 : resizeNode(x, target, method, false, true, "", "resize");
  return batched ? y : squeeze(y, Dims{0});
}

Tensor resize_bilinear(const Tensor &images, const Dims &size,
                       bool align_corners, bool half_pixel_centers,
                       const std::string &name) {
  if (!images.valid())
    throw GraphError("resize_bilinear: images is an empty Tensor");
  Tensor x = images.has_value() ? asFloat32(images) : images;
  return resizeNode(x, size, "bilinear", align_corners, half_pixel_centers,
                    name, "ResizeBilinear");
}

Tensor resize_nearest_neighbor(const Tensor &images, const Dims &size,
                               bool align_corners, bool half_pixel_centers,
                               const std::string &name) {
  return resizeNode(images, size, "nearest", align_corners, half_pixel_centers,
                    name, "ResizeNearestNeighbor");
}

Tensor resize_grad(const Tensor &grad_output, const Dims &input_size,
                   const std::string &method, bool align_corners,
                   bool half_pixel_centers, const std::string &name) {
  OpBuilder o(nullptr, "resize_images_grad", name, "ResizeGrad", {grad_output});
  o.requireFloat(0);
  if (method != "bilinear" && method != "nearest")
    o.fail("method must be \"bilinear\" or \"nearest\", got \"" + method +
           "\"");
  Dims out = o.check(shape::resizeImagesGrad(grad_output.shape(), input_size));
  return o.finish(grad_output.dtype(), out,
                  {{"input_size", attr_list(input_size)},
                   {"method", attr_s(method)},
                   {"align_corners", attr_b(align_corners)},
                   {"half_pixel_centers", attr_b(half_pixel_centers)}});
}

} // namespace image

} // namespace estc
