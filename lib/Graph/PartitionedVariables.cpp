//===- PartitionedVariables.cpp - TF's partitioned variables ------------===//
//
// The partitioners follow tensorflow/python/ops/partitioned_variables.py,
// the slicing variable_scope._get_partitioned_variable / _iter_slices, the
// lookup embedding_ops._embedding_lookup_and_transform (TF 2.15).
//
//===----------------------------------------------------------------------===//
#include "lib/Graph/PartitionedVariables.h"

#include "lib/Graph/EmbeddingCombiner.h"
#include "lib/Graph/Ops.h"

#include <cmath>
#include <stdexcept>

namespace estc {

namespace {

std::string dimsStr(const Dims &d) { return shape::toString(d); }

/// The size in bytes of one element as TF's partitioners count it.
int64_t elementBytes(DType dtype, int64_t bytesPerString) {
  if (dtype == DType::String)
    return bytesPerString;
  return static_cast<int64_t>(dtype_size(dtype));
}

/// `axis` of `shape` for partitioner `what`: in range, or a GraphError.
void checkAxis(const std::string &what, const Dims &shape, int64_t axis) {
  if (shape.empty())
    throw GraphError(what + ": cannot partition a scalar variable");
  if (axis < 0 || axis >= static_cast<int64_t>(shape.size()))
    throw GraphError(what + ": cannot partition a variable along axis " +
                     std::to_string(axis) + " when its shape is only " +
                     dimsStr(shape));
}

} // namespace

Partitioner fixed_size_partitioner(int64_t num_shards, int64_t axis) {
  if (num_shards < 1)
    throw std::invalid_argument(
        "fixed_size_partitioner: num_shards must be at least 1, got " +
        std::to_string(num_shards));
  return [num_shards, axis](const Dims &shape, DType) {
    checkAxis("fixed_size_partitioner", shape, axis);
    std::vector<int64_t> parts(shape.size(), 1);
    parts[axis] = std::min(num_shards, shape[axis]);
    return parts;
  };
}

Partitioner min_max_variable_partitioner(int64_t max_partitions, int64_t axis,
                                         int64_t min_slice_size,
                                         int64_t bytes_per_string_element) {
  if (min_slice_size < 1)
    throw std::invalid_argument(
        "min_max_variable_partitioner: min_slice_size must be at least 1, "
        "got " +
        std::to_string(min_slice_size));
  return [=](const Dims &shape, DType dtype) {
    checkAxis("min_max_variable_partitioner", shape, axis);
    double bytes =
        static_cast<double>(shape::numElements(shape)) *
        static_cast<double>(elementBytes(dtype, bytes_per_string_element));
    double wanted = std::ceil(bytes / static_cast<double>(min_slice_size));
    int64_t n =
        std::min({shape[axis], max_partitions, static_cast<int64_t>(wanted)});
    std::vector<int64_t> parts(shape.size(), 1);
    parts[axis] = std::max<int64_t>(1, n);
    return parts;
  };
}

Partitioner variable_axis_size_partitioner(int64_t max_shard_bytes,
                                           int64_t axis,
                                           int64_t bytes_per_string_element,
                                           std::optional<int64_t> max_shards) {
  const char *what = "variable_axis_size_partitioner";
  if (max_shard_bytes < 1 || bytes_per_string_element < 1)
    throw std::invalid_argument(
        std::string(what) +
        ": max_shard_bytes and bytes_per_string_element must be at least 1, "
        "got " +
        std::to_string(max_shard_bytes) + " and " +
        std::to_string(bytes_per_string_element));
  // As TF (`if max_shards and max_shards < 1`): 0 is no limit.
  if (max_shards && *max_shards < 0)
    throw std::invalid_argument(std::string(what) +
                                ": max_shards must be at least 1, got " +
                                std::to_string(*max_shards));
  return [=](const Dims &shape, DType dtype) {
    checkAxis(what, shape, axis);
    std::vector<int64_t> parts(shape.size(), 1);
    if (shape[axis] == 0)
      return parts;
    // As TF: bytes of one slice along the axis, in floating point.
    double sliceBytes =
        static_cast<double>(shape::numElements(shape)) /
        static_cast<double>(shape[axis]) *
        static_cast<double>(elementBytes(dtype, bytes_per_string_element));
    double perShard = std::max(
        1.0, std::floor(static_cast<double>(max_shard_bytes) / sliceBytes));
    int64_t n = static_cast<int64_t>(
        std::ceil(static_cast<double>(shape[axis]) / perShard));
    if (max_shards && *max_shards > 0)
      n = std::min(n, *max_shards);
    parts[axis] = n;
    return parts;
  };
}

PartitionSlicing slice_partitions(const Dims &shape,
                                  const std::vector<int64_t> &partitions,
                                  const std::string &what) {
  if (partitions.size() != shape.size())
    throw GraphError(what + ": the partitioner returned " +
                     std::to_string(partitions.size()) +
                     " partition counts for a variable of shape " +
                     dimsStr(shape));
  PartitionSlicing out;
  int64_t count = 1;
  bool found = false;
  for (size_t i = 0; i < partitions.size(); ++i) {
    if (partitions[i] < 1)
      throw GraphError(
          what + ": the partitioner returned " + std::to_string(partitions[i]) +
          " partitions for dimension " + std::to_string(i) + " (at least 1)");
    if (partitions[i] == 1)
      continue;
    if (found)
      throw GraphError(what +
                       ": can only partition a variable along one "
                       "dimension, the partitioner asked for " +
                       dimsStr(Dims(partitions.begin(), partitions.end())));
    found = true;
    out.axis = static_cast<int64_t>(i);
    count = partitions[i];
  }
  int64_t size = shape[out.axis];
  if (count > size)
    throw GraphError(what + ": " + std::to_string(count) +
                     " partitions along axis " + std::to_string(out.axis) +
                     " of shape " + dimsStr(shape) + " (at most " +
                     std::to_string(size) + ")");
  // A compiled model's variables carry no slice info: the saver tells the
  // axis of the parts of a TF-format checkpoint from where their shapes
  // differ, which equal parts along another axis than 0 do not show.
  if (out.axis != 0 && count > 1 && size % count == 0)
    throw GraphError(what + ": " + std::to_string(count) +
                     " equal partitions along axis " +
                     std::to_string(out.axis) + " of shape " + dimsStr(shape) +
                     " are not supported yet (their TF checkpoint slices "
                     "would be written along axis 0): partition along axis 0, "
                     "or into a count that does not divide " +
                     std::to_string(size));
  int64_t offset = 0;
  for (int64_t i = 0; i < count; ++i) {
    Dims part = shape;
    part[out.axis] = size / count + (i < size % count ? 1 : 0);
    out.offsets.push_back(offset);
    out.shapes.push_back(part);
    offset += part[out.axis];
  }
  return out;
}

PartitionedVariable::PartitionedVariable(std::string name, DType dtype,
                                         Dims shape, int64_t axis,
                                         std::vector<Variable> parts,
                                         std::vector<int64_t> offsets)
    : name_(std::move(name)), dtype_(dtype), shape_(std::move(shape)),
      axis_(axis), parts_(std::move(parts)), offsets_(std::move(offsets)) {}

Tensor PartitionedVariable::as_tensor() const {
  if (parts_.empty())
    throw GraphError("PartitionedVariable: an empty handle");
  if (parts_.size() == 1)
    return parts_[0].read();
  std::vector<Tensor> reads;
  for (const Variable &v : parts_)
    reads.push_back(v.read());
  // TF's name: "<name>/ConcatPartitions/concat", outside the name scopes.
  auto root = parts_[0].graph().root_name_scope();
  return concat(reads, axis_, name_ + "/ConcatPartitions/concat");
}

namespace {

/// The initializer of one part of a variable of `full` shape: the slice of
/// a constant list, the variance-scaling family as the plain distribution
/// of the full shape's fans (TF passes partition_info.full_shape to
/// _compute_fans), any other as is.
Initializer partInitializer(const Initializer &init, const Dims &full,
                            const Dims &part, int64_t axis, int64_t offset,
                            const std::string &what) {
  if (init.type == "orthogonal")
    throw GraphError(what + ": an orthogonal initializer of a partitioned "
                            "variable is not yet supported");
  if (!init.values.empty()) {
    if (static_cast<int64_t>(init.values.size()) != shape::numElements(full))
      throw GraphError(what + ": constant initializer has " +
                       std::to_string(init.values.size()) +
                       " values for shape " + dimsStr(full));
    // Row-major: outer x axis x inner.
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < axis; ++i)
      outer *= full[i];
    for (size_t i = static_cast<size_t>(axis) + 1; i < full.size(); ++i)
      inner *= full[i];
    Initializer out = init;
    out.values.clear();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t a = 0; a < part[axis]; ++a)
        for (int64_t k = 0; k < inner; ++k)
          out.values.push_back(init.values[static_cast<size_t>(
              (o * full[axis] + offset + a) * inner + k)]);
    return out;
  }
  bool glorotU = init.type == "glorot_uniform";
  bool glorotN = init.type == "glorot_normal";
  if (!glorotU && !glorotN && init.type != "variance_scaling")
    return init;
  double scale = 1.0;
  std::string mode = "fan_avg",
              distribution = glorotU ? "uniform" : "truncated_normal";
  if (init.type == "variance_scaling") {
    if (auto it = init.floats.find("scale"); it != init.floats.end())
      scale = it->second;
    mode = "fan_in";
    if (auto it = init.strings.find("mode"); it != init.strings.end())
      mode = it->second;
    if (auto it = init.strings.find("distribution"); it != init.strings.end())
      distribution = it->second;
  }
  // TF's _compute_fans of the full shape.
  double fanIn = 1, fanOut = 1;
  if (full.size() == 1) {
    fanIn = fanOut = static_cast<double>(full[0]);
  } else if (full.size() >= 2) {
    double receptive = 1;
    for (size_t i = 0; i + 2 < full.size(); ++i)
      receptive *= static_cast<double>(full[i]);
    fanIn = static_cast<double>(full[full.size() - 2]) * receptive;
    fanOut = static_cast<double>(full.back()) * receptive;
  }
  double n = mode == "fan_in"    ? fanIn
             : mode == "fan_out" ? fanOut
                                 : (fanIn + fanOut) / 2.0;
  scale /= std::max(1.0, n);
  if (distribution == "uniform") {
    double limit = std::sqrt(3.0 * scale);
    return random_uniform_initializer(-limit, limit, init.seed);
  }
  if (distribution == "untruncated_normal")
    return random_normal_initializer(0.0, std::sqrt(scale), init.seed);
  // truncated_normal (and v1's "normal"): TF's correction for the
  // truncation at two standard deviations.
  return truncated_normal_initializer(
      0.0, std::sqrt(scale) / 0.87962566103423978, init.seed);
}

} // namespace

PartitionedVariable get_variable(Graph &graph, const std::string &name,
                                 DType dtype, const Dims &shape,
                                 const Partitioner &partitioner,
                                 const Initializer &initializer, bool trainable,
                                 bool reuse) {
  std::string scope = graph.current_scope();
  std::string full = scope.empty() ? name : scope + "/" + name;
  std::string what = "get_variable '" + full + "'";
  if (!partitioner)
    throw GraphError(what + ": an empty partitioner");
  if (!shape::isFullyKnown(shape))
    throw GraphError(what + ": variable shape " + dimsStr(shape) +
                     " must be fully known");
  if (shape.empty())
    throw GraphError(what + ": a partitioner was given for a scalar variable");
  std::vector<int64_t> partitions;
  try {
    partitions = partitioner(shape, dtype);
  } catch (const GraphError &e) {
    throw GraphError(what + ": " + e.what());
  }
  PartitionSlicing slicing = slice_partitions(shape, partitions, what);
  std::vector<Variable> parts;
  for (size_t i = 0; i < slicing.shapes.size(); ++i) {
    Initializer init = partInitializer(initializer, shape, slicing.shapes[i],
                                       slicing.axis, slicing.offsets[i], what);
    parts.push_back(graph.get_variable(name + "/part_" + std::to_string(i),
                                       dtype, slicing.shapes[i], init,
                                       trainable, reuse));
  }
  return PartitionedVariable(full, dtype, shape, slicing.axis, std::move(parts),
                             std::move(slicing.offsets));
}

namespace nn {

Tensor embedding_lookup(const PartitionedVariable &params, const Tensor &ids,
                        const std::string &partition_strategy,
                        const std::string &name) {
  const char *op = "embedding_lookup";
  if (!params.valid())
    throw GraphError(std::string(op) + ": params is an empty "
                                       "PartitionedVariable");
  if (partition_strategy != "mod" && partition_strategy != "div")
    throw GraphError(std::string(op) + " '" + params.name() +
                     "': partition_strategy must be \"mod\" or \"div\", "
                     "got \"" +
                     partition_strategy + "\"");
  if (params.axis() != 0)
    throw GraphError(std::string(op) + " '" + params.name() +
                     "': the variable is partitioned along axis " +
                     std::to_string(params.axis()) +
                     "; a lookup needs its parts along axis 0");
  if (!ids.valid() || !ids.has_value() ||
      (ids.dtype() != DType::Int64 && ids.dtype() != DType::Int32))
    throw GraphError(std::string(op) + " '" + params.name() +
                     "': ids must be an int32 or int64 tensor");
  Graph &g = ids.graph();
  auto scope = g.name_scope(name.empty() ? "embedding_lookup" : name);
  const std::vector<Variable> &parts = params.parts();
  int64_t np = static_cast<int64_t>(parts.size());
  if (np == 1)
    return gather(parts[0].read(), ids);
  int64_t vocab = params.shape()[0];
  Tensor flat = ids.dtype() == DType::Int64 ? ids : cast(ids, DType::Int64);
  flat = check_range(flat, 0, vocab, "id");
  // Which part each id goes to and its row there (ids are >= 0: integer
  // division truncates as TF's floor division does).
  Tensor part, row;
  if (partition_strategy == "mod") {
    row = divide(flat, static_cast<double>(np));
    part = subtract(flat, multiply(row, static_cast<double>(np)));
  } else {
    int64_t perPart = vocab / np, extras = vocab % np;
    // TF: max(id // (perPart + 1), (id - extras) // perPart); the first
    // `extras` parts hold perPart + 1 ids.
    Tensor inExtras = less(flat, static_cast<double>(extras * (perPart + 1)));
    Tensor shifted = subtract(flat, static_cast<double>(extras));
    Tensor big = divide(flat, static_cast<double>(perPart + 1));
    Tensor small = divide(maximum(shifted, 0.0), static_cast<double>(perPart));
    part = where(inExtras, big, small);
    Tensor bigRow =
        subtract(flat, multiply(big, static_cast<double>(perPart + 1)));
    Tensor smallRow = subtract(maximum(shifted, 0.0),
                               multiply(small, static_cast<double>(perPart)));
    row = where(inExtras, bigRow, smallRow);
  }
  Tensor result;
  for (int64_t p = 0; p < np; ++p) {
    Tensor mine = equal(part, static_cast<double>(p));
    // An id of another part reads (and gives a zero gradient to) a row
    // this part's own ids touch anyway: the largest of them, else row 0.
    Tensor fallback = reduce_max(where(mine, row, 0.0));
    Tensor local = where(mine, row, fallback);
    Tensor rows = gather(parts[p].read(), local);
    Tensor mask = cast(mine, params.dtype());
    for (size_t d = 1; d < params.shape().size(); ++d)
      mask = expand_dims(mask, -1);
    Tensor masked = multiply(rows, mask);
    result = result.valid() ? add(result, masked) : masked;
  }
  return result;
}

} // namespace nn

Tensor safe_embedding_lookup_sparse(const PartitionedVariable &params,
                                    const SparseIds &ids,
                                    const std::string &combiner,
                                    double max_norm,
                                    const std::string &partition_strategy,
                                    const std::string &name) {
  const char *op = "safe_embedding_lookup_sparse";
  if (!params.valid())
    throw GraphError(std::string(op) + ": params is an empty "
                                       "PartitionedVariable");
  if (!is_floating(params.dtype()) || params.shape().size() != 2)
    throw GraphError(std::string(op) + ": params '" + params.name() +
                     "' must be a float matrix [vocab, dim], got " +
                     to_string(params.dtype()) + " " + dimsStr(params.shape()));
  Graph &g = params.parts()[0].graph();
  return detail::combineSparseEmbeddings(
      op, g, params.dtype(), 2,
      [&](const Tensor &rowIds) {
        return nn::embedding_lookup(params, rowIds, partition_strategy);
      },
      ids, combiner, max_norm, name);
}

} // namespace estc
