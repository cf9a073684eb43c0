//===- Ops.cpp - The op library of the graph builder --------------------===//

#include "lib/Graph/Ops.h"

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

std::string formatNumber(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
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
            const std::string &name) {
  OpBuilder o(nullptr, op, name, base, {x});
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
Tensor sigmoid(const Tensor &x, const std::string &name) {
  return unary("sigmoid", "Sigmoid", Kind::Float, x, name);
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
/// A composite op's name scope: `name`, else `base`, made unique.
Scope compositeScope(Graph &g, const std::string &name, const char *base) {
  return g.name_scope(g.unique_layer_name(name.empty() ? base : name));
}

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
  if (combiner != "sum" && combiner != "mean" && combiner != "sqrtn")
    throw GraphError(std::string(op) +
                     ": combiner must be \"sum\", \"mean\" or \"sqrtn\", "
                     "got \"" +
                     combiner + "\"");
  if (std::isnan(max_norm) || std::isinf(max_norm))
    throw GraphError(std::string(op) + ": max_norm must be finite, got " +
                     formatNumber(max_norm));
  Graph &g = params.graph();
  checkSparseIds(op, ids, g);
  auto scope = compositeScope(g, name, "embedding_lookup");
  int64_t rank = params.rank();
  Tensor embeddings = gather(params, ids.ids);
  if (max_norm > 0)
    embeddings = clipRowsByNorm(embeddings, max_norm);
  if (!ids.weights.valid()) {
    // All weights 1: the divisor is the row's number of ids.
    Tensor sum = unsorted_segment_sum(embeddings, ids.rows, ids.row_lengths);
    if (combiner == "sum")
      return sum;
    Tensor count = maximum(cast(ids.row_lengths, params.dtype()), 1.0);
    if (combiner == "sqrtn")
      count = sqrt(count);
    return divide(sum, asColumn(count, rank));
  }
  Tensor w = ids.weights.dtype() == params.dtype()
                 ? ids.weights
                 : cast(ids.weights, params.dtype());
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
              const std::string &padding, const Dims &dilations,
              const std::string &name) {
  OpBuilder o(nullptr, "conv2d", name, "Conv2D", {input, filter});
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
                const std::string &padding, const std::string &name) {
  return pool("max_pool", "MaxPool", input, ksize, strides, padding, name);
}
Tensor avg_pool(const Tensor &input, const Dims &ksize, const Dims &strides,
                const std::string &padding, const std::string &name) {
  return pool("avg_pool", "AvgPool", input, ksize, strides, padding, name);
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
} // namespace nn

} // namespace estc
