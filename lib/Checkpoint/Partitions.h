//===- Partitions.h - Partitioned variables in TF checkpoints -----------===//
//
// TF's Saver writes the parts "<name>/part_<i>" of a partitioned variable
// (lib/Graph/PartitionedVariables.h) as slices of one tensor "<name>" of the
// full shape (its SaveSliceInfo: full name, full shape, each part's offset),
// and an optimizer's slot of a part, "<name>/part_<i>/<slot>", as a slice of
// "<name>/<slot>" (TF's slot_creator). estc's models carry no slice info, so
// it is recovered from the names and shapes: the variables "<X>/part_0" ...
// "<X>/part_<n-1>" (all of them, each of one dtype and rank >= 1, their
// shapes equal but along one axis) are the slices of "<X>" along that axis
// in order. Parts of equal shapes are taken as slices along axis 0 (TF's
// embedding partitioning; a variable split evenly along another axis is
// saved as if along axis 0: not yet recoverable).
//
// The tensor-bundle writers (write_tensor_bundle, Saver in the bundle
// format) write the slices; the safetensors format keeps the parts under
// their own names. Restoring a model's parts from a checkpoint that holds
// only "<X>" (TF's, or estc's bundle) cuts them out of it (slice_of).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_CHECKPOINT_PARTITIONS_H
#define ESTC_LIB_CHECKPOINT_PARTITIONS_H

#include "lib/Checkpoint/TensorBundle.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace estc {
namespace train {

/// Where one part lies in its full tensor.
struct PartLayout {
  std::string full_name;           // "emb" (or "emb/Adagrad" for a slot)
  std::vector<int64_t> full_shape; // the full tensor's shape
  TensorSlice slice;               // the part's start and length per dim
};

/// "<X>/part_<i>[/<slot>]" -> ("<X>[/<slot>]", i); nullopt for other names.
std::optional<std::pair<std::string, int64_t>>
parse_part_name(const std::string &name);

/// The layout of every variable of `specs` that is a part of a complete
/// partitioned variable (file comment), by variable name.
std::map<std::string, PartLayout>
partition_layouts(const std::map<std::string, VariableSpec> &specs);

/// The part `layout` of `full` (whose shape must be layout.full_shape:
/// CheckpointError naming `what` otherwise).
TensorValue slice_of(const TensorValue &full, const PartLayout &layout,
                     const std::string &what);

/// Where a TF checkpoint stores the part "<X>/part_<i>[/<slot>]" when it
/// holds "<X>[/<slot>]" as slices: that name and its i-th slice in the
/// order of their starts. nullopt when `name` is no part's name, or the
/// checkpoint has no "<X>[/<slot>]" stored in more than i slices.
/// TensorBundleReader::read_into (or get_slice) reads that slice alone: a
/// ps task restoring its parts of a table never holds the table.
std::optional<std::pair<std::string, TensorSlice>>
stored_part(const TensorBundleReader &reader, const std::string &name);

/// Adds `variables` to `writer`: the parts of partitioned variables as
/// slices of their full tensors, every other variable as itself.
void add_variables(
    BundleWriter &writer,
    const std::vector<std::pair<const std::string *, const TensorValue *>>
        &refs);

} // namespace train
} // namespace estc

#endif // ESTC_LIB_CHECKPOINT_PARTITIONS_H
