//===- PartitionedVariables.h - TF's partitioned variables --------------===//
//
// tf.compat.v1's partitioned variables for the graph builder: the
// partitioners (tf.compat.v1.fixed_size_partitioner,
// min_max_variable_partitioner, variable_axis_size_partitioner), get_variable
// with a partitioner, which creates the parts "<name>/part_<i>" as TF does,
// and embedding_lookup over the parts with TF's partition strategies "mod"
// and "div".
//
//   estc::PartitionedVariable emb = estc::get_variable(
//       g, "emb", estc::DType::Float32, {10, 4},
//       estc::fixed_size_partitioner(3), estc::zeros_initializer());
//   // emb/part_0 [4, 4], emb/part_1 [3, 4], emb/part_2 [3, 4]
//   estc::Tensor rows = estc::nn::embedding_lookup(emb, ids, "div");
//   estc::Tensor full = emb.as_tensor(); // concat of the parts, [10, 4]
//
// Slicing (TF's variable_scope._iter_slices): a partitioner returns one
// number of partitions per dimension, at most one of them above 1; n parts
// along `axis` of a dimension of size d get d / n elements each, the first
// d % n one more. Each part is initialized as TF initializes it: the
// initializer is called for the part's shape (a constant, zeros or ones
// trivially; random initializers draw per part, with the part's own derived
// seed unless the initializer has one; the variance-scaling family computes
// its fans from the full shape, as TF's partition_info does).
//
// Checkpoints: TF's Saver writes the parts as slices of "<name>"
// (lib/Checkpoint/Partitions.h, which recognizes the part names), so
// tf.train.load_checkpoint(dir).get_tensor("<name>") is the full tensor.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_GRAPH_PARTITIONEDVARIABLES_H
#define ESTC_LIB_GRAPH_PARTITIONEDVARIABLES_H

#include "lib/Graph/GraphBuilder.h"
#include "lib/Graph/Ops.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace estc {

/// TF's partitioner: the full shape and dtype of a variable -> the number of
/// partitions of each dimension. Errors (a scalar variable, an axis out of
/// range) are GraphErrors naming the partitioner.
using Partitioner =
    std::function<std::vector<int64_t>(const Dims &shape, DType dtype)>;

/// tf.compat.v1.fixed_size_partitioner: min(num_shards, shape[axis]) parts
/// along `axis`. num_shards < 1 is std::invalid_argument.
Partitioner fixed_size_partitioner(int64_t num_shards, int64_t axis = 0);
/// tf.compat.v1.min_max_variable_partitioner: as many parts along `axis` as
/// keep every part at least `min_slice_size` bytes, at most max_partitions
/// (and shape[axis]), at least 1: max(1, min(shape[axis], max_partitions,
/// ceil(bytes / min_slice_size))). A string element counts
/// `bytes_per_string_element` bytes.
Partitioner min_max_variable_partitioner(int64_t max_partitions = 1,
                                         int64_t axis = 0,
                                         int64_t min_slice_size = 256 << 10,
                                         int64_t bytes_per_string_element = 16);
/// tf.compat.v1.variable_axis_size_partitioner: parts along `axis` of at
/// most `max_shard_bytes` each (at least one slice of the axis per part):
/// ceil(shape[axis] / max(1, floor(max_shard_bytes / slice_bytes))), at
/// most max_shards (0, as TF's falsy 0: no limit). max_shard_bytes or
/// bytes_per_string_element < 1, or max_shards < 0, is
/// std::invalid_argument.
Partitioner variable_axis_size_partitioner(
    int64_t max_shard_bytes, int64_t axis = 0,
    int64_t bytes_per_string_element = 16,
    std::optional<int64_t> max_shards = std::nullopt);

/// TF's slicing of `shape` into the partitions a partitioner returned: the
/// axis (the one dimension with more than one partition; 0 when none has)
/// and each part's offset along it and shape. GraphError naming `what` for
/// a partition list of the wrong rank, a zero or negative count, or more
/// than one partitioned dimension.
struct PartitionSlicing {
  int64_t axis = 0;
  std::vector<int64_t> offsets; // along axis, one per part
  std::vector<Dims> shapes;     // one per part
};
PartitionSlicing slice_partitions(const Dims &shape,
                                  const std::vector<int64_t> &partitions,
                                  const std::string &what);

/// TF's PartitionedVariable: the parts of one variable. Used as a Tensor it
/// is the concatenation of the parts' values along the axis (tf.concat, TF's
/// PartitionedVariable.as_tensor / _concat): dense uses such as matmul
/// see the full variable, and their gradients reach every part.
class PartitionedVariable {
public:
  PartitionedVariable() = default;
  PartitionedVariable(std::string name, DType dtype, Dims shape, int64_t axis,
                      std::vector<Variable> parts,
                      std::vector<int64_t> offsets);

  bool valid() const { return !parts_.empty(); }
  /// The full name ("emb"); the parts are "<name>/part_<i>".
  const std::string &name() const { return name_; }
  DType dtype() const { return dtype_; }
  /// The full shape.
  const Dims &shape() const { return shape_; }
  /// The partitioned axis.
  int64_t axis() const { return axis_; }
  /// The parts in order (TF's list(partitioned_variable)).
  const std::vector<Variable> &parts() const { return parts_; }
  /// Part i's offset along axis().
  int64_t offset(size_t i) const { return offsets_.at(i); }
  /// The full value in the current mode: the parts' reads concatenated
  /// along axis() (the read itself when there is one part).
  Tensor as_tensor() const;
  operator Tensor() const { return as_tensor(); }

private:
  std::string name_;
  DType dtype_ = DType::Invalid;
  Dims shape_;
  int64_t axis_ = 0;
  std::vector<Variable> parts_;
  std::vector<int64_t> offsets_;
};

/// tf.compat.v1.get_variable(..., partitioner=): creates (or, as
/// Graph::get_variable, shares) the parts "<scope>/<name>/part_<i>" of the
/// variable of full shape `shape`, sliced as `partitioner` says, each
/// initialized as TF initializes it (file comment). A scalar variable is a
/// GraphError; so is an orthogonal initializer (not yet supported for
/// parts).
PartitionedVariable
get_variable(Graph &graph, const std::string &name, DType dtype,
             const Dims &shape, const Partitioner &partitioner,
             const Initializer &initializer = glorot_uniform_initializer(),
             bool trainable = true, bool reuse = false);

namespace nn {
/// tf.nn.embedding_lookup(params, ids, partition_strategy) over the parts of
/// a variable partitioned along axis 0: ids (I64, any shape) -> ids.shape +
/// shape[1:]. "mod": id goes to part id % n, row id / n; "div": the ids are
/// split into n contiguous ranges, the first (vocab % n) of vocab / n + 1
/// ids, the others of vocab / n (TF's rule, the partitioners' slicing). An
/// id outside [0, vocab) stops the step with rt::InvalidArgumentError
/// (check_range). The gradient of each part is sparse (a gather of its
/// read), so the sparse optimizer updates touch only the rows looked up
/// (and, in a part no id of the batch goes to, its row 0 with a zero
/// gradient).
Tensor embedding_lookup(const PartitionedVariable &params, const Tensor &ids,
                        const std::string &partition_strategy = "mod",
                        const std::string &name = "");
} // namespace nn

/// tf.nn.safe_embedding_lookup_sparse over the parts of a float variable
/// [vocab, dim] partitioned along axis 0: as the one-tensor
/// safe_embedding_lookup_sparse (lib/Graph/Ops.h), each id's embedding
/// looked up with nn::embedding_lookup's `partition_strategy` (TF's
/// default there is "div").
Tensor safe_embedding_lookup_sparse(
    const PartitionedVariable &params, const SparseIds &ids,
    const std::string &combiner = "mean", double max_norm = 0,
    const std::string &partition_strategy = "div",
    const std::string &name = "");

} // namespace estc

#endif // ESTC_LIB_GRAPH_PARTITIONEDVARIABLES_H
