//===- ArrayOps.cpp - tf's array ops, einsum and batch matmul -----------===//

#include "lib/Graph/ArrayOps.h"

#include "lib/Graph/Ops.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <sstream>

namespace estc {

namespace {

std::string str(int64_t v) { return std::to_string(v); }

std::string number(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

/// A composite op: checks its inputs, opens its name scope (`name`, else
/// TF's op name, made unique) and formats its errors as
///   <op> '<scope>': inputs 'a' [2,3] and 'b' [3,4]: <problem>
class Composite {
public:
  Composite(const char *op, const char *base, const std::string &name,
            const std::vector<Tensor> &inputs)
      : op_(op), inputs_(inputs) {
    for (size_t i = 0; i < inputs_.size(); ++i) {
      const Tensor &t = inputs_[i];
      if (!t.valid())
        throw GraphError(op_ + ": input " + str(static_cast<int64_t>(i)) +
                         " is an empty Tensor");
      if (!graph_)
        graph_ = &t.graph();
      else if (&t.graph() != graph_)
        throw GraphError(op_ + ": input '" + t.name() +
                         "' belongs to another graph");
      if (!t.has_value())
        throw GraphError(op_ + ": node '" + t.name() + "' (" + t.op() +
                         ") has no value");
    }
    std::string scope = graph_->unique_layer_name(name.empty() ? base : name);
    scopeName_ = graph_->unique_node_name(scope);
    scope_.emplace(graph_->name_scope(scope));
  }

  Graph &graph() const { return *graph_; }

  [[noreturn]] void fail(const std::string &problem) const {
    std::string msg = op_ + " '" + scopeName_ + "'";
    if (!inputs_.empty()) {
      msg += inputs_.size() == 1 ? ": input " : ": inputs ";
      for (size_t i = 0; i < inputs_.size(); ++i) {
        if (i)
          msg += i + 1 == inputs_.size() ? " and " : ", ";
        msg += "'" + inputs_[i].name() + "' " +
               shape::toString(inputs_[i].shape());
      }
    }
    throw GraphError(msg + ": " + problem);
  }

  int64_t axis(int64_t axis, int64_t rank) const {
    std::optional<int64_t> a = shape::normalizeAxis(axis, rank);
    if (!a)
      fail("axis " + str(axis) + " is out of range for rank " + str(rank));
    return *a;
  }

  void requireInteger(const Tensor &t, const char *what) const {
    if (!is_integer(t.dtype()))
      fail(std::string(what) + " must be an i32 or i64 tensor, got " +
           to_string(t.dtype()));
  }

private:
  std::string op_;
  std::vector<Tensor> inputs_;
  Graph *graph_ = nullptr;
  std::string scopeName_;
  std::optional<Scope> scope_;
};

int64_t product(const Dims &dims, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i)
    p *= dims[i];
  return p;
}

/// Slices [begin, begin + size) of `value` along `axis` (-1: to the end).
Tensor sliceAlong(const Tensor &value, int64_t axis, int64_t begin,
                  int64_t size) {
  Dims b(value.rank(), 0), s(value.rank(), -1);
  b[axis] = begin;
  s[axis] = size;
  return slice(value, b, s);
}

std::vector<Tensor> splitSizes(const Tensor &value, const Dims &sizes,
                               int64_t axis) {
  std::vector<Tensor> out;
  int64_t begin = 0;
  for (int64_t s : sizes) {
    out.push_back(sliceAlong(value, axis, begin, s));
    begin += s;
  }
  return out;
}

} // namespace

// --- tile, stack, unstack, split -------------------------------------------

Tensor tile(const Tensor &input, const Dims &multiples,
            const std::string &name) {
  Composite c("tile", "Tile", name, {input});
  Dims s = input.shape();
  if (multiples.size() != s.size())
    c.fail("multiples has " + str(static_cast<int64_t>(multiples.size())) +
           " entries for a rank-" + str(input.rank()) + " input");
  int dynamic = 0;
  bool repeats = false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (multiples[i] < 1)
      c.fail("multiples[" + str(static_cast<int64_t>(i)) + "] is " +
             str(multiples[i]) +
             ": must be >= 1 (empty tensors are not supported)");
    dynamic += s[i] < 0;
    repeats |= multiples[i] > 1;
  }
  if (!repeats)
    return input;
  if (dynamic > 1)
    c.fail("at most one dimension may be known only at run time");
  // [d0, d1] -> [1, d0, 1, d1] -> broadcast [m0, d0, m1, d1] -> [m0 d0, m1 d1].
  Dims expanded, target, out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (multiples[i] > 1) {
      expanded.push_back(1);
      target.push_back(multiples[i]);
    }
    expanded.push_back(s[i]);
    target.push_back(s[i]);
    out.push_back(s[i] < 0 ? -1 : s[i] * multiples[i]);
  }
  return reshape(broadcast_to(reshape(input, expanded), target), out);
}

Tensor stack(const std::vector<Tensor> &values, int64_t axis,
             const std::string &name) {
  if (values.empty())
    throw GraphError("stack: needs at least one value");
  Composite c("stack", "stack", name, values);
  Dims s0 = values[0].shape();
  int64_t a = c.axis(axis, values[0].rank() + 1);
  for (size_t i = 1; i < values.size(); ++i) {
    if (values[i].dtype() != values[0].dtype())
      c.fail("values 0 and " + str(static_cast<int64_t>(i)) +
             " have different dtypes " + to_string(values[0].dtype()) +
             " and " + to_string(values[i].dtype()));
    if (!shape::isCompatible(s0, values[i].shape()))
      c.fail("values 0 and " + str(static_cast<int64_t>(i)) +
             " have different shapes " + shape::toString(s0) + " and " +
             shape::toString(values[i].shape()));
  }
  std::vector<Tensor> parts;
  for (const Tensor &v : values)
    parts.push_back(expand_dims(v, a));
  return parts.size() == 1 ? parts[0] : concat(parts, a);
}

std::vector<Tensor> unstack(const Tensor &value, int64_t axis,
                            const std::string &name) {
  Composite c("unstack", "unstack", name, {value});
  int64_t a = c.axis(axis, value.rank());
  int64_t n = value.shape()[a];
  if (n < 0)
    c.fail("dimension " + str(a) +
           " is known only at run time: unstack needs its size");
  std::vector<Tensor> out;
  for (int64_t i = 0; i < n; ++i)
    out.push_back(squeeze(sliceAlong(value, a, i, 1), Dims{a}));
  return out;
}

std::vector<Tensor> split(const Tensor &value, int64_t num_or_size_splits,
                          int64_t axis, const std::string &name) {
  Composite c("split", "split", name, {value});
  int64_t a = c.axis(axis, value.rank());
  int64_t n = value.shape()[a];
  if (num_or_size_splits < 1)
    c.fail("num_or_size_splits must be >= 1, got " + str(num_or_size_splits));
  if (n < 0)
    c.fail("dimension " + str(a) +
           " is known only at run time: split needs its size");
  if (n % num_or_size_splits)
    c.fail("dimension " + str(a) + " of size " + str(n) +
           " does not split into " + str(num_or_size_splits) + " equal parts");
  return splitSizes(value, Dims(num_or_size_splits, n / num_or_size_splits), a);
}

std::vector<Tensor> split(const Tensor &value, const Dims &size_splits,
                          int64_t axis, const std::string &name) {
  Composite c("split", "split", name, {value});
  int64_t a = c.axis(axis, value.rank());
  int64_t n = value.shape()[a];
  if (size_splits.empty())
    c.fail("size_splits is empty");
  if (n < 0)
    c.fail("dimension " + str(a) +
           " is known only at run time: split needs its size");
  Dims sizes = size_splits;
  int64_t sum = 0, rest = -1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == -1 && rest < 0) {
      rest = static_cast<int64_t>(i);
      continue;
    }
    if (sizes[i] < 1)
      c.fail("size_splits[" + str(static_cast<int64_t>(i)) + "] is " +
             str(sizes[i]) +
             ": sizes must be >= 1 (one may be -1: the rest; empty tensors "
             "are not supported)");
    sum += sizes[i];
  }
  std::string listed = "[";
  for (size_t i = 0; i < size_splits.size(); ++i)
    listed += (i ? "," : "") + str(size_splits[i]);
  listed += "]";
  if (rest >= 0) {
    if (sum >= n)
      c.fail("size_splits " + listed + " leave nothing for the -1 of " +
             "dimension " + str(a) + " of size " + str(n));
    sizes[rest] = n - sum;
  } else if (sum != n) {
    c.fail("size_splits " + listed + " add up to " + str(sum) +
           ", not to dimension " + str(a) + " of size " + str(n));
  }
  return splitSizes(value, sizes, a);
}

// --- range, size -------------------------------------------------------------

Tensor range(Graph &graph, double start, double limit, double delta,
             DType dtype, const std::string &name) {
  std::string what = "range(" + number(start) + ", " + number(limit) + ", " +
                     number(delta) + ")";
  if (!is_integer(dtype) && !is_floating(dtype))
    throw GraphError(what + ": dtype must be numeric, got " + to_string(dtype));
  if (delta == 0)
    throw GraphError(what + ": delta must not be 0");
  if (delta > 0 ? start > limit : start < limit)
    throw GraphError(
        what + ": requires start " + std::string(delta > 0 ? "<=" : ">=") +
        " limit when delta is " + (delta > 0 ? "positive" : "negative"));
  std::vector<double> values;
  if (is_integer(dtype)) {
    for (double v : {start, limit, delta})
      if (v != std::trunc(v))
        throw GraphError(what + ": " + number(v) + " is not an integer but " +
                         "dtype is " + to_string(dtype));
    auto s = static_cast<int64_t>(start), l = static_cast<int64_t>(limit),
         d = static_cast<int64_t>(delta);
    int64_t n = (std::llabs(l - s) + std::llabs(d) - 1) / std::llabs(d);
    for (int64_t i = 0; i < n; ++i)
      values.push_back(static_cast<double>(s + i * d));
  } else if (dtype == DType::Float64) {
    // As TF's kernel: the size from the dtype's arithmetic, each value the
    // previous one plus delta.
    auto n = static_cast<int64_t>(std::ceil(std::abs((limit - start) / delta)));
    double v = start;
    for (int64_t i = 0; i < n; ++i, v += delta)
      values.push_back(v);
  } else {
    auto s = static_cast<float>(start), l = static_cast<float>(limit),
         d = static_cast<float>(delta);
    auto n = static_cast<int64_t>(std::ceil(std::abs((l - s) / d)));
    float v = s;
    for (int64_t i = 0; i < n; ++i, v += d)
      values.push_back(v);
  }
  if (values.empty())
    throw GraphError(what + ": the range is empty (empty tensors are not "
                            "supported)");
  return graph.constant(values, {static_cast<int64_t>(values.size())}, dtype,
                        name.empty() ? "range" : name);
}

Tensor range(Graph &graph, double limit, DType dtype, const std::string &name) {
  return range(graph, 0.0, limit, 1.0, dtype, name);
}

Tensor size(const Tensor &input, DType out_type, const std::string &name) {
  Composite c("size", "Size", name, {input});
  if (out_type != DType::Int32 && out_type != DType::Int64)
    c.fail("out_type must be i32 or i64, got " + to_string(out_type));
  int64_t n = shape::numElements(input.shape());
  if (n >= 0)
    return c.graph().constant(static_cast<double>(n), out_type);
  return reduce_prod(shape_of(input, out_type));
}

// --- strided_slice
// -------------------------------------------------------------

Tensor strided_slice(const Tensor &input, const Dims &begin, const Dims &end,
                     const Dims &strides, int64_t begin_mask, int64_t end_mask,
                     int64_t ellipsis_mask, int64_t new_axis_mask,
                     int64_t shrink_axis_mask, const std::string &name) {
  Composite c("strided_slice", "StridedSlice", name, {input});
  Dims st = strides.empty() ? Dims(begin.size(), 1) : strides;
  size_t n = begin.size();
  if (end.size() != n || st.size() != n)
    c.fail("begin, end and strides must have one length, got " +
           str(static_cast<int64_t>(n)) + ", " +
           str(static_cast<int64_t>(end.size())) + " and " +
           str(static_cast<int64_t>(st.size())));
  if (n > 62)
    c.fail("at most 62 slice entries are supported");
  int64_t all = (int64_t(1) << n) - 1;
  int64_t ellipsis = ellipsis_mask & all;
  if (ellipsis & (ellipsis - 1))
    c.fail("ellipsis_mask " + str(ellipsis_mask) +
           " has more than one bit set: multiple ellipses in slice spec are "
           "not allowed");

  // The sparse spec (TF's StridedSliceSparseSpec): an implicit ellipsis at
  // the end when there is none.
  Dims sb = begin, se = end, ss = st;
  size_t sparse = n;
  if (!ellipsis) {
    ellipsis = int64_t(1) << n;
    sb.push_back(0);
    se.push_back(0);
    ss.push_back(1);
    ++sparse;
  }
  size_t ellipsisAt = 0;
  while (!(ellipsis & (int64_t(1) << ellipsisAt)))
    ++ellipsisAt;
  int64_t addAfterEllipsis = 0;
  for (size_t i = ellipsisAt + 1; i < n; ++i)
    addAfterEllipsis += (new_axis_mask >> i) & 1;

  // The dense spec: one entry per input dimension (TF's BuildDenseSpec).
  struct DenseDim {
    int64_t begin = 0, end = 0, stride = 1;
    bool beginMasked = true, endMasked = true, shrink = false;
  };
  const int64_t rank = input.rank();
  std::vector<DenseDim> dense(rank);
  constexpr int64_t kNewAxis = -1, kShrinkAxis = -2;
  Dims layout; // per output position: a dense dim, or kNewAxis / kShrinkAxis
  int64_t full = 0;
  for (size_t i = 0; i < sparse; ++i) {
    int64_t bit = int64_t(1) << i;
    if (ellipsis & bit) {
      int64_t next = std::min(
          rank - static_cast<int64_t>(sparse - i) + 1 + addAfterEllipsis, rank);
      for (; full < next; ++full)
        layout.push_back(full);
    } else if (new_axis_mask & bit) {
      layout.push_back(kNewAxis);
    } else {
      if (full == rank)
        c.fail("slice entry " + str(static_cast<int64_t>(i)) +
               " is past the input's " + str(rank) + " dimensions");
      DenseDim &d = dense[full];
      d.begin = sb[i];
      d.end = se[i];
      d.stride = ss[i];
      d.beginMasked = begin_mask & bit;
      d.endMasked = end_mask & bit;
      d.shrink = shrink_axis_mask & bit;
      layout.push_back(d.shrink ? kShrinkAxis : full);
      ++full;
    }
  }

  // Each dimension as (begin, size, stride) of the input (size -1: to the
  // end of a run-time dimension), as TF's ValidateStridedSliceOp.
  Dims shape = input.shape();
  Dims starts(rank), sizes(rank), steps(rank);
  for (int64_t d = 0; d < rank; ++d) {
    const DenseDim &dd = dense[d];
    int64_t dim = shape[d];
    std::string which = "dimension " + str(d);
    if (dd.stride == 0)
      c.fail("stride of " + which + " is 0");
    if (dd.shrink) {
      if (dd.stride < 0)
        c.fail("only stride 1 is allowed on a shrunk (indexed) " + which);
      int64_t x = dd.begin;
      if (dim < 0) {
        if (x < 0)
          c.fail(which + " is known only at run time: index " + str(x) +
                 " from its end needs its size");
      } else {
        x = x < 0 ? x + dim : x;
        if (x < 0 || x >= dim)
          c.fail("index " + str(dd.begin) + " is out of bounds for " + which +
                 " of size " + str(dim));
      }
      starts[d] = x;
      sizes[d] = 1;
      steps[d] = 1;
      continue;
    }
    if (dim < 0) {
      bool fullRange = dd.beginMasked && dd.endMasked;
      if (fullRange && (dd.stride == 1 || dd.stride == -1)) {
        starts[d] = 0;
        sizes[d] = -1;
        steps[d] = dd.stride;
      } else if (dd.stride == 1 && dd.endMasked && dd.begin >= 0) {
        starts[d] = dd.begin;
        sizes[d] = -1;
        steps[d] = 1;
      } else {
        c.fail(which +
               " is known only at run time: it takes a full range (stride 1 "
               "or -1), a stride-1 range from begin >= 0 to the end, or an "
               "index >= 0");
      }
      continue;
    }
    int64_t lower = dd.stride > 0 ? 0 : -1;
    int64_t upper = dd.stride > 0 ? dim : dim - 1;
    auto canonical = [&](int64_t x, bool masked, bool isBegin) {
      if (masked)
        return (dd.stride > 0) == isBegin ? lower : upper;
      int64_t fwd = x < 0 ? dim + x : x;
      return std::clamp(fwd, lower, upper);
    };
    int64_t b = canonical(dd.begin, dd.beginMasked, true);
    int64_t e = canonical(dd.end, dd.endMasked, false);
    int64_t len = e - b;
    int64_t count = 0;
    if (len != 0 && (len < 0) == (dd.stride < 0))
      count = len / dd.stride + (len % dd.stride != 0);
    if (count == 0)
      c.fail("the slice of " + which +
             " is empty (empty tensors are not supported)");
    starts[d] = b;
    sizes[d] = count;
    steps[d] = dd.stride;
  }

  Tensor t = input;
  Dims reversed;
  for (int64_t d = 0; d < rank; ++d)
    if (steps[d] < 0) {
      reversed.push_back(d);
      if (shape[d] >= 0)
        starts[d] = shape[d] - 1 - starts[d];
      steps[d] = -steps[d];
    }
  if (!reversed.empty())
    t = reverse(t, reversed);
  Dims sliceBegin(rank), sliceSize(rank);
  bool sliced = false;
  for (int64_t d = 0; d < rank; ++d) {
    sliceBegin[d] = starts[d];
    sliceSize[d] = sizes[d] < 0 ? -1 : (sizes[d] - 1) * steps[d] + 1;
    sliced |=
        starts[d] != 0 || (sliceSize[d] != -1 && sliceSize[d] != shape[d]);
  }
  if (sliced)
    t = slice(t, sliceBegin, sliceSize);
  for (int64_t d = 0; d < rank; ++d) {
    if (steps[d] == 1)
      continue;
    std::vector<double> picks;
    for (int64_t i = 0; i < sizes[d]; ++i)
      picks.push_back(static_cast<double>(i * steps[d]));
    t = gather(t, c.graph().constant(picks, {sizes[d]}, DType::Int64, "stride"),
               d);
  }
  Dims shrunk;
  for (int64_t d = 0; d < rank; ++d)
    if (dense[d].shrink)
      shrunk.push_back(d);
  if (!shrunk.empty())
    t = squeeze(t, shrunk);
  int64_t position = 0;
  for (int64_t entry : layout) {
    if (entry == kShrinkAxis)
      continue;
    if (entry == kNewAxis)
      t = expand_dims(t, position);
    ++position;
  }
  return t;
}

Tensor getitem(const Tensor &input, const std::vector<SliceIndex> &spec,
               const std::string &name) {
  // As TF's _slice_helper: each entry one bit of the masks.
  Dims begin, end, strides;
  int64_t beginMask = 0, endMask = 0, ellipsisMask = 0, newAxisMask = 0,
          shrinkMask = 0;
  for (size_t i = 0; i < spec.size(); ++i) {
    int64_t bit = int64_t(1) << std::min<size_t>(i, 62);
    int64_t b = 0, e = 0, s = 1;
    if (const auto *index = std::get_if<int64_t>(&spec[i])) {
      b = *index;
      e = *index + 1;
      shrinkMask |= bit;
    } else if (const auto *range = std::get_if<Slice>(&spec[i])) {
      b = range->start.value_or(0);
      e = range->stop.value_or(0);
      s = range->step;
      if (!range->start)
        beginMask |= bit;
      if (!range->stop)
        endMask |= bit;
    } else if (std::holds_alternative<NewAxis>(spec[i])) {
      newAxisMask |= bit;
    } else {
      ellipsisMask |= bit;
    }
    begin.push_back(b);
    end.push_back(e);
    strides.push_back(s);
  }
  return strided_slice(input, begin, end, strides, beginMask, endMask,
                       ellipsisMask, newAxisMask, shrinkMask, name);
}

// --- gather_nd, scatter_nd, tensor_scatter_nd_* ------------------------------

namespace {

/// Component k of `indices` [..., K], checked to be in [0, dim) at run time,
/// times `stride`.
Tensor indexComponent(const Tensor &indices, int64_t k, int64_t dim,
                      int64_t stride) {
  int64_t last = indices.rank() - 1;
  Tensor comp = squeeze(sliceAlong(indices, last, k, 1), Dims{last});
  if (dim >= 0)
    comp = check_range(comp, 0, dim, "index");
  return stride == 1 ? comp : multiply(comp, static_cast<double>(stride));
}

/// The flat row index of each index tuple of `indices` [..., K] into the
/// first `batch + K` dims of `shape` (static) collapsed into one: the
/// tuple's components plus, for the first `batch` dims of `indices`, its
/// position along them.
Tensor flatIndex(Graph &g, const Tensor &indices, const Dims &shape,
                 int64_t batch, int64_t k) {
  Dims strides(batch + k, 1);
  for (int64_t j = batch + k - 2; j >= 0; --j)
    strides[j] = strides[j + 1] * shape[j + 1];
  Tensor flat;
  for (int64_t j = 0; j < k; ++j) {
    Tensor comp =
        indexComponent(indices, j, shape[batch + j], strides[batch + j]);
    flat = j == 0 ? comp : add(flat, comp);
  }
  int64_t outRank = indices.rank() - 1;
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<double> offsets;
    for (int64_t i = 0; i < shape[b]; ++i)
      offsets.push_back(static_cast<double>(i * strides[b]));
    Dims at(outRank, 1);
    at[b] = shape[b];
    flat = add(flat, g.constant(offsets, at, indices.dtype(), "batch_offset"));
  }
  return flat;
}

/// `shape` with its first `k` dims collapsed into one; nullopt when more
/// than one of the others is known at run time only.
std::optional<Dims> collapsedLeading(const Dims &shape, int64_t k) {
  Dims out = {product(shape, 0, k)};
  int dynamic = 0;
  for (size_t i = k; i < shape.size(); ++i) {
    out.push_back(shape[i]);
    dynamic += shape[i] < 0;
  }
  if (dynamic > 1)
    return std::nullopt;
  return out;
}

/// The checks every *_nd op shares: indices [..., K] with K static, >= 1,
/// and at most `limit`; returns K.
int64_t indexDepth(const Composite &c, const Tensor &indices, int64_t limit,
                   const char *into) {
  c.requireInteger(indices, "indices");
  Dims is = indices.shape();
  if (is.empty())
    c.fail("indices must have rank >= 1 (the last dimension is the index "
           "depth)");
  int64_t k = is.back();
  if (k < 1)
    c.fail("the last dimension of indices (the index depth) must be static "
           "and >= 1");
  if (k > limit)
    c.fail("indices index " + str(k) + " dimensions, but " + into + " has " +
           str(limit));
  return k;
}

/// A scatter (`mode`) of `updates` at `indices` [..., K] into `ref`.
Tensor scatterNd(const Composite &c, const char *mode, const Tensor &ref,
                 const Tensor &indices, const Tensor &updates,
                 const char *refWhat) {
  Dims rs = ref.shape(), is = indices.shape(), us = updates.shape();
  int64_t k = indexDepth(c, indices, ref.rank(), refWhat);
  if (updates.dtype() != ref.dtype())
    c.fail(std::string("updates must have the dtype of the ") + refWhat + ", " +
           to_string(ref.dtype()) + ", got " + to_string(updates.dtype()));
  Dims expected(is.begin(), is.end() - 1);
  expected.insert(expected.end(), rs.begin() + k, rs.end());
  if (!shape::isCompatible(us, expected))
    c.fail("updates must have shape indices[:-1] + " + std::string(refWhat) +
           "[" + str(k) + ":] = " + shape::toString(expected) + ", got " +
           shape::toString(us));
  auto scatterMode = [&](const Tensor &r, const Tensor &i) {
    std::string m = mode;
    if (m == "add")
      return scatter_add(r, i, updates);
    if (m == "update")
      return scatter_update(r, i, updates);
    if (m == "min")
      return scatter_min(r, i, updates);
    return scatter_max(r, i, updates);
  };
  if (k == 1)
    return scatterMode(ref, indexComponent(indices, 0, rs[0], 1));
  for (int64_t j = 0; j < k; ++j)
    if (rs[j] < 0)
      c.fail(std::string("dimension ") + str(j) + " of the " + refWhat +
             " is known only at run time: an index depth > 1 needs the "
             "indexed dimensions' sizes");
  std::optional<Dims> flat = collapsedLeading(rs, k);
  if (!flat)
    c.fail(std::string("more than one dimension of the ") + refWhat +
           " past the indexed ones is known only at run time");
  Tensor r =
      scatterMode(reshape(ref, *flat), flatIndex(c.graph(), indices, rs, 0, k));
  return reshape(r, rs);
}

Tensor tensorScatterNd(const char *op, const char *base, const char *mode,
                       const Tensor &tensor, const Tensor &indices,
                       Tensor updates, bool negate, const std::string &name) {
  Composite c(op, base, name, {tensor, indices, updates});
  if (negate) {
    if (!is_floating(updates.dtype()) && !is_integer(updates.dtype()))
      c.fail("updates must be numeric, got " + to_string(updates.dtype()));
    updates = negative(updates);
  }
  return scatterNd(c, mode, tensor, indices, updates, "tensor");
}

} // namespace

Tensor gather_nd(const Tensor &params, const Tensor &indices,
                 int64_t batch_dims, const std::string &name) {
  Composite c("gather_nd", "GatherNd", name, {params, indices});
  Dims ps = params.shape(), is = indices.shape();
  if (batch_dims < 0 || batch_dims >= indices.rank() ||
      batch_dims > params.rank())
    c.fail("batch_dims " + str(batch_dims) +
           " must be in [0, rank(indices) - 1] and at most rank(params)");
  int64_t k = indexDepth(c, indices, params.rank() - batch_dims, "params");
  if (batch_dims + k > params.rank())
    c.fail("indices index " + str(k) + " dimensions after " + str(batch_dims) +
           " batch dimensions, but params has rank " + str(params.rank()));
  if (batch_dims == 0 && k == 1)
    return gather(params, indexComponent(indices, 0, ps[0], 1), 0);
  for (int64_t b = 0; b < batch_dims; ++b) {
    if (ps[b] >= 0 && is[b] >= 0 && ps[b] != is[b])
      c.fail("batch dimension " + str(b) + " is " + str(ps[b]) +
             " in params and " + str(is[b]) + " in indices");
  }
  for (int64_t j = 0; j < batch_dims + k; ++j)
    if (ps[j] < 0)
      c.fail("dimension " + str(j) +
             " of params is known only at run time: the batch and indexed "
             "dimensions must be static (but for one index into dimension 0)");
  std::optional<Dims> flat = collapsedLeading(ps, batch_dims + k);
  if (!flat)
    c.fail("more than one dimension of params past the indexed ones is known "
           "only at run time");
  return gather(reshape(params, *flat),
                flatIndex(c.graph(), indices, ps, batch_dims, k), 0);
}

Tensor scatter_nd(const Tensor &indices, const Tensor &updates,
                  const Dims &shape, const std::string &name) {
  Composite c("scatter_nd", "ScatterNd", name, {indices, updates});
  for (int64_t d : shape)
    if (d < 1)
      c.fail("shape " + shape::toString(shape) +
             " must be static with every dimension >= 1");
  if (!is_floating(updates.dtype()) && !is_integer(updates.dtype()))
    c.fail("updates must be numeric, got " + to_string(updates.dtype()));
  Tensor zeros = c.graph().constant({0.0}, shape, updates.dtype(), "zeros");
  return scatterNd(c, "add", zeros, indices, updates, "shape");
}

Tensor tensor_scatter_nd_update(const Tensor &tensor, const Tensor &indices,
                                const Tensor &updates,
                                const std::string &name) {
  return tensorScatterNd("tensor_scatter_nd_update", "TensorScatterUpdate",
                         "update", tensor, indices, updates, false, name);
}
Tensor tensor_scatter_nd_add(const Tensor &tensor, const Tensor &indices,
                             const Tensor &updates, const std::string &name) {
  return tensorScatterNd("tensor_scatter_nd_add", "TensorScatterAdd", "add",
                         tensor, indices, updates, false, name);
}
Tensor tensor_scatter_nd_sub(const Tensor &tensor, const Tensor &indices,
                             const Tensor &updates, const std::string &name) {
  return tensorScatterNd("tensor_scatter_nd_sub", "TensorScatterSub", "add",
                         tensor, indices, updates, true, name);
}
Tensor tensor_scatter_nd_min(const Tensor &tensor, const Tensor &indices,
                             const Tensor &updates, const std::string &name) {
  return tensorScatterNd("tensor_scatter_nd_min", "TensorScatterMin", "min",
                         tensor, indices, updates, false, name);
}
Tensor tensor_scatter_nd_max(const Tensor &tensor, const Tensor &indices,
                             const Tensor &updates, const std::string &name) {
  return tensorScatterNd("tensor_scatter_nd_max", "TensorScatterMax", "max",
                         tensor, indices, updates, false, name);
}

// --- einsum ----------------------------------------------------------------

namespace {

/// Labels are letters (their char code) or, for the dimensions an ellipsis
/// stands for, kEllipsis + k, k counted so that broadcasting aligns them
/// from the right.
constexpr int kEllipsis = 1000;
using Labels = std::vector<int>;

std::string labelName(int l) {
  if (l >= kEllipsis)
    return "... dimension " + str(l - kEllipsis);
  return std::string(1, static_cast<char>(l));
}

/// One term of an equation: its letters, and where its ellipsis is (-1:
/// none).
struct Term {
  std::vector<int> letters;
  int ellipsisAt = -1;
};

struct Equation {
  std::vector<Term> inputs;
  std::optional<Term> output;
};

Equation parseEquation(const Composite &c, const std::string &equation,
                       const std::string &where) {
  auto fail = [&](const std::string &problem) {
    c.fail(where + ": " + problem);
  };
  std::string e;
  for (char ch : equation)
    if (ch != ' ')
      e += ch;
  size_t arrow = e.find("->");
  if (arrow != std::string::npos &&
      e.find("->", arrow + 2) != std::string::npos)
    fail("more than one '->'");
  auto parseTerm = [&](const std::string &text, const std::string &what) {
    Term t;
    for (size_t i = 0; i < text.size(); ++i) {
      char ch = text[i];
      if (ch == '.') {
        if (text.compare(i, 3, "...") != 0)
          fail("a '.' in " + what + " that is not part of '...'");
        if (t.ellipsisAt >= 0)
          fail("more than one '...' in " + what);
        t.ellipsisAt = static_cast<int>(t.letters.size());
        i += 2;
      } else if (std::isalpha(static_cast<unsigned char>(ch))) {
        t.letters.push_back(ch);
      } else {
        fail(std::string("invalid character '") + ch + "' in " + what);
      }
    }
    return t;
  };
  Equation eq;
  std::string lhs = e.substr(0, arrow);
  size_t start = 0;
  for (int i = 0;; ++i) {
    size_t comma = lhs.find(',', start);
    eq.inputs.push_back(parseTerm(lhs.substr(start, comma - start),
                                  "operand " + str(i) + "'s term"));
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  if (arrow != std::string::npos)
    eq.output = parseTerm(e.substr(arrow + 2), "the output");
  return eq;
}

bool contains(const Labels &labels, int l) {
  return std::find(labels.begin(), labels.end(), l) != labels.end();
}

/// `x` (dims labelled `from`) transposed to the order `to` (a permutation).
Tensor permute(const Tensor &x, const Labels &from, const Labels &to) {
  if (from == to)
    return x;
  Dims perm;
  for (int l : to)
    perm.push_back(std::find(from.begin(), from.end(), l) - from.begin());
  return transpose(x, perm);
}

/// Sums `x`'s dims whose labels are not in `keep`; updates `labels`.
Tensor sumOut(const Tensor &x, Labels &labels, const Labels &keep) {
  Dims axes;
  Labels kept;
  for (size_t i = 0; i < labels.size(); ++i) {
    if (contains(keep, labels[i]))
      kept.push_back(labels[i]);
    else
      axes.push_back(static_cast<int64_t>(i));
  }
  labels = kept;
  return axes.empty() ? x : reduce_sum(x, axes);
}

/// Brings `x` [batch..., rest...] (nb batch dims) to rank nb + 2 with its
/// rest grouped as [prod(first), prod(second)] (`counts` dims each): a
/// no-op, expand_dims for empty groups, or a reshape (nullopt when that
/// reshape would need two run-time sizes).
std::optional<Tensor> grouped(const Tensor &x, int64_t nb, int64_t first,
                              int64_t second, bool build) {
  Dims s = x.shape();
  if (first == 1 && second == 1)
    return x;
  if (first <= 1 && second <= 1) {
    if (!build)
      return Tensor();
    Tensor t = x;
    if (first == 0)
      t = expand_dims(t, nb);
    if (second == 0)
      t = expand_dims(t, nb + 1);
    return t;
  }
  Dims target(s.begin(), s.begin() + nb);
  auto group = [&](int64_t from, int64_t count) {
    int64_t p = 1;
    for (int64_t i = from; i < from + count; ++i)
      p = s[i] < 0 || p < 0 ? -1 : p * s[i];
    target.push_back(p);
  };
  group(nb, first);
  group(nb + first, second);
  if (std::count(target.begin(), target.end(), -1) > 1)
    return std::nullopt;
  return build ? reshape(x, target) : Tensor();
}

/// A and B (dims labelled la, lb) contracted to the labels `out`: one
/// (batch) matmul between transposes and reshapes, or, where a reshape
/// would need two run-time sizes, a broadcast multiply and a reduce_sum.
Tensor contract(Tensor a, Labels la, Tensor b, Labels lb, const Labels &out) {
  // Indices of one operand only and not in the output: summed first.
  Labels keepA = out, keepB = out;
  keepA.insert(keepA.end(), lb.begin(), lb.end());
  keepB.insert(keepB.end(), la.begin(), la.end());
  a = sumOut(a, la, keepA);
  b = sumOut(b, lb, keepB);
  Labels batch, contr, freeA, freeB;
  for (int l : la) {
    if (contains(lb, l))
      (contains(out, l) ? batch : contr).push_back(l);
    else
      freeA.push_back(l);
  }
  for (int l : lb)
    if (!contains(la, l))
      freeB.push_back(l);
  auto cat = [](std::initializer_list<const Labels *> parts) {
    Labels r;
    for (const Labels *p : parts)
      r.insert(r.end(), p->begin(), p->end());
    return r;
  };
  auto nb = static_cast<int64_t>(batch.size());
  auto nfa = static_cast<int64_t>(freeA.size()),
       nc = static_cast<int64_t>(contr.size()),
       nfb = static_cast<int64_t>(freeB.size());
  bool ta = la == cat({&batch, &contr, &freeA}) &&
            la != cat({&batch, &freeA, &contr});
  bool tb = lb == cat({&batch, &freeB, &contr}) &&
            lb != cat({&batch, &contr, &freeB});
  Labels orderA =
      ta ? cat({&batch, &contr, &freeA}) : cat({&batch, &freeA, &contr});
  Labels orderB =
      tb ? cat({&batch, &freeB, &contr}) : cat({&batch, &contr, &freeB});
  Tensor pa = permute(a, la, orderA), pb = permute(b, lb, orderB);
  // [free..., K] x [K, N] (a projection): est.matmul takes any number of
  // leading (run-time) dims as rows, no reshape needed.
  if (nb == 0 && nc == 1 && nfb == 1 && nfa >= 1 && !ta)
    return permute(matmul(pa, pb, false, tb), cat({&freeA, &freeB}), out);
  // The matmul's result [batch..., M, N] back to [batch..., freeA, freeB]:
  // its static sizes (the batch dims broadcast).
  Dims outDims;
  for (int64_t i = 0; i < nb; ++i) {
    int64_t x = pa.shape()[i], y = pb.shape()[i];
    outDims.push_back(x == 1 ? y : y == 1 ? x : (x < 0 ? y : x));
  }
  for (int64_t i = 0; i < nfa; ++i)
    outDims.push_back(pa.shape()[ta ? nb + nc + i : nb + i]);
  for (int64_t i = 0; i < nfb; ++i)
    outDims.push_back(pb.shape()[tb ? nb + i : nb + nc + i]);
  bool outReshape = !(nfa == 1 && nfb == 1);
  bool outFits = !outReshape ||
                 std::count(outDims.begin(), outDims.end(), -1) <= 1 ||
                 (nfa <= 1 && nfb <= 1);
  if (grouped(pa, nb, ta ? nc : nfa, ta ? nfa : nc, false) &&
      grouped(pb, nb, tb ? nfb : nc, tb ? nc : nfb, false) && outFits) {
    Tensor ga = *grouped(pa, nb, ta ? nc : nfa, ta ? nfa : nc, true);
    Tensor gb = *grouped(pb, nb, tb ? nfb : nc, tb ? nc : nfb, true);
    Tensor r = matmul(ga, gb, ta, tb);
    if (outReshape) {
      if (nfa <= 1 && nfb <= 1) {
        Dims axes;
        if (nfa == 0)
          axes.push_back(nb);
        if (nfb == 0)
          axes.push_back(nb + 1);
        r = squeeze(r, axes);
      } else {
        r = reshape(r, outDims);
      }
    }
    return permute(r, cat({&batch, &freeA, &freeB}), out);
  }
  if (nc <= 1) {
    // No reshape: the free indices but the last of each side become batch
    // dims that the other side broadcasts (size 1):
    //   A [batch, headA, 1.., M, K] x B [batch, 1.., headB, K, N]
    //   -> [batch, headA, headB, M, N]
    // (an empty M, K or N is a size-1 dim).
    Labels headA(freeA.begin(), freeA.end() - (nfa ? 1 : 0));
    Labels headB(freeB.begin(), freeB.end() - (nfb ? 1 : 0));
    Labels lastA(freeA.end() - (nfa ? 1 : 0), freeA.end());
    Labels lastB(freeB.end() - (nfb ? 1 : 0), freeB.end());
    auto ha = static_cast<int64_t>(headA.size()),
         hb = static_cast<int64_t>(headB.size());
    Tensor ba = permute(a, la, cat({&batch, &headA, &lastA, &contr}));
    for (int64_t i = 0; i < hb; ++i)
      ba = expand_dims(ba, nb + ha);
    if (nfa == 0)
      ba = expand_dims(ba, nb + ha + hb);
    if (nc == 0)
      ba = expand_dims(ba, ba.rank());
    Tensor bb = permute(b, lb, cat({&batch, &headB, &contr, &lastB}));
    for (int64_t i = 0; i < ha; ++i)
      bb = expand_dims(bb, nb);
    if (nc == 0)
      bb = expand_dims(bb, nb + ha + hb);
    if (nfb == 0)
      bb = expand_dims(bb, bb.rank());
    Tensor r = matmul(ba, bb);
    Dims unit;
    if (nfa == 0)
      unit.push_back(nb + ha + hb);
    if (nfb == 0)
      unit.push_back(nb + ha + hb + 1);
    if (!unit.empty())
      r = squeeze(r, unit);
    return permute(r, cat({&batch, &headA, &headB, &lastA, &lastB}), out);
  }
  // Broadcast multiply over [batch, freeA, freeB, contr] and sum contr.
  Labels all = cat({&batch, &freeA, &freeB, &contr});
  auto spread = [&](Tensor x, const Labels &lx) {
    Labels order;
    for (int l : all)
      if (contains(lx, l))
        order.push_back(l);
    x = permute(x, lx, order);
    for (size_t i = 0; i < all.size(); ++i)
      if (!contains(lx, all[i]))
        x = expand_dims(x, static_cast<int64_t>(i));
    return x;
  };
  Tensor prod = multiply(spread(a, la), spread(b, lb));
  Dims axes;
  for (int64_t i = 0; i < nc; ++i)
    axes.push_back(nb + nfa + nfb + i);
  if (!axes.empty())
    prod = reduce_sum(prod, axes);
  return permute(prod, cat({&batch, &freeA, &freeB}), out);
}

/// The diagonal of `x`'s dims `a` < `b` (both labelled l = labels[a]): the
/// other dims in order, then l (TF's einsum of a repeated index). Built as
/// a transpose of a and b to the end, a reshape merging them, and a strided
/// slice with stride n + 1 (exact, and its gradient scatters back onto the
/// diagonal). Updates `labels`. A size that is not known, or two that
/// differ, fail with one line.
Tensor diagonal(const Composite &c, const std::string &where, const Tensor &x,
                Labels &labels, size_t a, size_t b, size_t operand) {
  Dims s = x.shape();
  std::string which = "index '" + labelName(labels[a]) +
                      "' repeated in operand " +
                      str(static_cast<int64_t>(operand));
  if (s[a] < 0 || s[b] < 0)
    c.fail(where + ": " + which + " needs a known size, got " +
           shape::toString(s));
  if (s[a] != s[b])
    c.fail(where + ": " + which + " has sizes " + str(s[a]) + " and " +
           str(s[b]));
  int64_t n = s[a];
  Dims perm, rest;
  Labels restLabels;
  int64_t unknown = 0;
  for (size_t d = 0; d < s.size(); ++d)
    if (d != a && d != b) {
      perm.push_back(static_cast<int64_t>(d));
      rest.push_back(s[d]);
      restLabels.push_back(labels[d]);
      unknown += s[d] < 0;
    }
  if (unknown > 1)
    c.fail(where + ": " + which + ": the operand's other dims " +
           shape::toString(rest) + " have more than one run-time size");
  perm.push_back(static_cast<int64_t>(a));
  perm.push_back(static_cast<int64_t>(b));
  Tensor t = x;
  bool identity = true;
  for (size_t d = 0; d < perm.size(); ++d)
    identity = identity && perm[d] == static_cast<int64_t>(d);
  if (!identity)
    t = transpose(t, perm);
  Dims merged = rest;
  for (int64_t &d : merged)
    d = d < 0 ? -1 : d;
  merged.push_back(n * n);
  t = reshape(t, merged);
  auto rank = static_cast<int64_t>(merged.size());
  Dims begin(rank, 0), end(rank, 0), strides(rank, 1);
  end.back() = n * n;
  strides.back() = n + 1;
  int64_t allButLast = (int64_t(1) << (rank - 1)) - 1;
  t = strided_slice(t, begin, end, strides, allButLast, allButLast);
  restLabels.push_back(labels[a]);
  labels = restLabels;
  return t;
}

} // namespace

Tensor einsum(const std::string &equation, const std::vector<Tensor> &inputs,
              const std::string &name) {
  if (inputs.empty())
    throw GraphError("einsum: equation '" + equation +
                     "': needs at least one input");
  Composite c("einsum", "Einsum", name, inputs);
  std::string where = "equation '" + equation + "'";
  auto fail = [&](const std::string &problem) {
    c.fail(where + ": " + problem);
  };
  Equation eq = parseEquation(c, equation, where);
  if (eq.inputs.size() != inputs.size())
    fail("has " + str(static_cast<int64_t>(eq.inputs.size())) +
         " operand terms for " + str(static_cast<int64_t>(inputs.size())) +
         " inputs");
  for (size_t i = 1; i < inputs.size(); ++i)
    if (inputs[i].dtype() != inputs[0].dtype())
      fail("operands have different element types " +
           to_string(inputs[0].dtype()) + " and " +
           to_string(inputs[i].dtype()));
  if (!is_floating(inputs[0].dtype()) && !is_integer(inputs[0].dtype()))
    fail("operands must be numeric, got " + to_string(inputs[0].dtype()));

  // Each operand's labels, the ellipsis expanded (aligned from the right).
  int64_t ellipsisRank = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Term &t = eq.inputs[i];
    auto named = static_cast<int64_t>(t.letters.size());
    int64_t rank = inputs[i].rank();
    std::string which = "operand " + str(static_cast<int64_t>(i));
    if (t.ellipsisAt < 0 ? rank != named : rank < named)
      fail(which + " has rank " + str(rank) + " but its term names " +
           str(named) + " dimensions" + (t.ellipsisAt < 0 ? "" : " or more"));
    if (t.ellipsisAt >= 0)
      ellipsisRank = std::max(ellipsisRank, rank - named);
  }
  std::vector<Tensor> operands = inputs;
  std::vector<Labels> labels;
  std::map<int, int64_t> sizes;
  std::map<int, size_t> firstOperand;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Term &t = eq.inputs[i];
    Labels l;
    int64_t ell = inputs[i].rank() - static_cast<int64_t>(t.letters.size());
    for (size_t j = 0; j <= t.letters.size(); ++j) {
      if (static_cast<int>(j) == t.ellipsisAt)
        for (int64_t k = 0; k < ell; ++k)
          l.push_back(kEllipsis + static_cast<int>(ellipsisRank - ell + k));
      if (j < t.letters.size())
        l.push_back(t.letters[j]);
    }
    // An index repeated within the operand (ii, bii, iij): its diagonal,
    // one pair of dims at a time.
    for (size_t a = 0; a < l.size(); ++a)
      for (size_t b = a + 1; b < l.size(); ++b)
        if (l[a] == l[b]) {
          operands[i] = diagonal(c, where, operands[i], l, a, b, i);
          b = a; // l lost dim b; look for another repeat of l[a]
        }
    Dims s = operands[i].shape();
    for (size_t d = 0; d < l.size(); ++d) {
      int label = l[d];
      int64_t n = s[d];
      auto it = sizes.find(label);
      if (it == sizes.end()) {
        sizes[label] = n;
        firstOperand[label] = i;
        continue;
      }
      int64_t m = it->second;
      bool ellipsis = label >= kEllipsis;
      if (m >= 0 && n >= 0 && m != n && !(ellipsis && (m == 1 || n == 1)))
        fail((ellipsis ? "the '...' dimensions do not broadcast: "
                       : "index '" + labelName(label) + "' is ") +
             str(m) + " in operand " + str(firstOperand[label]) + " and " +
             str(n) + " in operand " + str(static_cast<int64_t>(i)));
      if (m < 0 || m == 1)
        it->second = n;
    }
    labels.push_back(l);
  }

  // The output's labels: explicit, or the letters that appear once, sorted,
  // after the ellipsis dims.
  Labels out;
  Labels ellipsisLabels;
  for (int64_t k = 0; k < ellipsisRank; ++k)
    ellipsisLabels.push_back(kEllipsis + static_cast<int>(k));
  if (eq.output) {
    const Term &t = *eq.output;
    for (size_t j = 0; j <= t.letters.size(); ++j) {
      if (static_cast<int>(j) == t.ellipsisAt)
        out.insert(out.end(), ellipsisLabels.begin(), ellipsisLabels.end());
      if (j < t.letters.size()) {
        int l = t.letters[j];
        if (!sizes.count(l))
          fail("output index '" + labelName(l) + "' appears in no operand");
        if (contains(out, l))
          fail("output index '" + labelName(l) + "' is repeated");
        out.push_back(l);
      }
    }
    if (t.ellipsisAt < 0 && ellipsisRank > 0)
      fail("the operands have '...' dimensions but the output does not");
  } else {
    out = ellipsisLabels;
    std::map<int, int> counts;
    for (const Term &t : eq.inputs)
      for (int l : t.letters)
        ++counts[l];
    for (const auto &[l, n] : counts)
      if (n == 1)
        out.push_back(l);
  }

  // Contract left to right; each step keeps the labels used later.
  Tensor acc = operands[0];
  Labels accLabels = labels[0];
  for (size_t i = 1; i < inputs.size(); ++i) {
    Labels keep = out;
    for (size_t j = i + 1; j < inputs.size(); ++j)
      keep.insert(keep.end(), labels[j].begin(), labels[j].end());
    Labels stepOut;
    for (const Labels *ls : {&accLabels, &labels[i]})
      for (int l : *ls)
        if (contains(keep, l) && !contains(stepOut, l))
          stepOut.push_back(l);
    if (i + 1 == inputs.size())
      stepOut = out;
    acc = contract(acc, accLabels, operands[i], labels[i], stepOut);
    accLabels = stepOut;
  }
  if (inputs.size() == 1) {
    acc = sumOut(acc, accLabels, out);
    acc = permute(acc, accLabels, out);
  }
  return acc;
}

namespace linalg {
Tensor matmul(const Tensor &a, const Tensor &b, bool transpose_a,
              bool transpose_b, const std::string &name) {
  return estc::matmul(a, b, transpose_a, transpose_b, name);
}
Tensor einsum(const std::string &equation, const std::vector<Tensor> &inputs,
              const std::string &name) {
  return estc::einsum(equation, inputs, name);
}
} // namespace linalg

} // namespace estc
