//===- TensorBundle.h - TF's tensor bundle (V2 checkpoint) format --------===//
//
// A TF checkpoint with prefix P ("model_dir/model.ckpt-200") is
//
//   P.index                     a sorted string table (lib/Checkpoint/Table.h)
//                               of key -> protobuf: "" -> BundleHeaderProto
//                               (num_shards, endianness, version), each
//                               tensor's name -> BundleEntryProto (dtype,
//                               shape, shard_id, offset, size, masked CRC32C,
//                               slices)
//   P.data-00000-of-00002       the tensors' bytes, shard by shard
//   P.data-00001-of-00002
//
// as tf.compat.v1.train.Saver, tf.train.Checkpoint and TF's Estimator write
// it (tensorflow/core/util/tensor_bundle). A tensor is its elements in
// row-major order, little-endian; a string tensor is the varint64 lengths of
// its elements, the masked CRC32C of those lengths (each as a uint32), then
// the bytes. A partitioned variable (tf.compat.v1.fixed_size_partitioner) is
// an entry with its full dtype and shape and a list of slices, each slice
// stored as an entry of its own under an OrderedCode key; the reader
// assembles the full tensor. The proto messages: tensor_bundle.proto.
// docs/checkpoint-format.md has the layout byte by byte.
//
// Readers open the data files and read a tensor with pread when it is asked
// for (a numeric one straight into its buffer): a reader's memory is the
// tensors it reads, never the files. Every problem with the bytes is a
// DataLossError, one line naming the file and the tensor (bad footer or
// magic number, a block CRC32C mismatch, a tensor CRC32C mismatch, a data
// file shorter than its entries, an unknown dtype); a missing shard or
// index is a CheckpointError (lib/Checkpoint/Checkpoint.h).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_CHECKPOINT_TENSORBUNDLE_H
#define ESTC_LIB_CHECKPOINT_TENSORBUNDLE_H

#include "lib/Checkpoint/Checkpoint.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace estc {
namespace train {

/// A bundle with prefix P has the index file P + kBundleIndexSuffix.
constexpr const char *kBundleIndexSuffix = ".index";

/// "P.index".
std::string bundle_index_file(const std::string &prefix);
/// "P.data-0000K-of-0000N" (TF's DataFilename).
std::string bundle_data_file(const std::string &prefix, int shard,
                             int num_shards);
/// True when P.index exists (a TF checkpoint's prefix).
bool is_tensor_bundle(const std::string &prefix);
/// The prefix of an index file name ("m/model.ckpt-200.index" ->
/// "m/model.ckpt-200"); nullopt for a name without the suffix.
std::optional<std::string> bundle_prefix_of(const std::string &path);

/// TF's DataType number of a DType (DT_FLOAT = 1, ..., DT_STRING = 7,
/// DT_INT64 = 9, DT_BOOL = 10, DT_BFLOAT16 = 14, DT_HALF = 19).
int tf_dtype_number(DType dtype);
/// The DType of a TF DataType number; nullopt for the ones estc has no
/// DType for (int8, uint8, int16, complex64, ...).
std::optional<DType> dtype_from_tf_number(int tf_dtype);
/// TF's name of a DataType number ("float32", "int8", "string",
/// "DT_<n>" for a number TF does not define).
std::string tf_dtype_number_name(int tf_dtype);

/// TF's TensorSlice: per dimension a start and a length, -1 for the whole
/// dimension (TensorSlice::kFullExtent).
struct TensorSlice {
  std::vector<int64_t> start;
  std::vector<int64_t> length;
};

/// The table key of a slice of a partitioned tensor (TF's
/// checkpoint::EncodeTensorNameSlice: OrderedCode of 0, the name, the rank
/// and each dimension's start and length).
std::string encode_tensor_name_slice(const std::string &name,
                                     const TensorSlice &slice);

/// Options of BundleWriter.
struct BundleWriterOptions {
  /// Data files to spread the tensors over (a sharded save: each tensor
  /// whole in one of them, the shards balanced by bytes).
  int num_shards = 1;
  /// fsync the data files, the index and the directory (a checkpoint that
  /// survives an OS crash or a power loss); false: rename only, as TF's
  /// BundleWriter (survives a killed process).
  bool sync = true;
};

/// Writes one TF checkpoint (TF's BundleWriter): add() appends each tensor
/// to a temporary data file as it comes (through an 8 MiB buffer: no copy
/// of the checkpoint in memory); finish() fsyncs and renames the data
/// files, then writes the index crash-safely (temporary file, fsync,
/// rename, fsync of the directory; without the fsyncs when
/// BundleWriterOptions::sync is false), so a reader that finds P.index
/// finds the data files complete. A writer destroyed unfinished, or whose write
/// failed, removes what it wrote.
class BundleWriter {
public:
  explicit BundleWriter(std::string prefix, BundleWriterOptions options = {});
  ~BundleWriter();
  BundleWriter(const BundleWriter &) = delete;
  BundleWriter &operator=(const BundleWriter &) = delete;
  /// A tensor under `key` (not "", not twice); std::invalid_argument
  /// otherwise, or for a tensor whose bytes do not match its spec;
  /// CheckpointError "<data file>: cannot write: ..." when its bytes cannot
  /// be written (the writer is failed then: nothing of it is left).
  void add(const std::string &key, const TensorValue &value);
  /// A numeric tensor from its row-major bytes (no TensorValue: a ps task
  /// writes its variables where they live, without a copy).
  void add(const std::string &key, DType dtype,
           const std::vector<int64_t> &shape, std::string_view bytes);
  /// One slice of a partitioned tensor of `full_shape` (TF's AddSlice): the
  /// slices of one key must agree on dtype and full shape.
  void add_slice(const std::string &full_key,
                 const std::vector<int64_t> &full_shape,
                 const TensorSlice &slice, const TensorValue &value);
  /// Writes the files; CheckpointError "<file>: cannot write: ..." on
  /// failure. The writer is finished afterwards.
  void finish();

private:
  struct Partitioned {
    DType dtype = DType::Invalid;
    std::vector<int64_t> shape;
    std::vector<TensorSlice> slices;
  };
  /// One data file being written.
  struct Shard {
    std::string file, temp;
    int fd = -1;
    uint64_t size = 0;  // bytes added, written or buffered
    std::string buffer; // not yet written
  };
  void checkNew(const std::string &key, DType dtype,
                const std::vector<int64_t> &shape) const;
  Shard &smallestShard();
  void addEntry(const std::string &key, DType dtype,
                const std::vector<int64_t> &shape, const Shard &shard,
                uint64_t offset, uint32_t crc);
  void append(Shard &shard, std::string_view bytes);
  void flush(Shard &shard);
  [[noreturn]] void fail(const Shard &shard, const std::string &why);
  void cleanUp();

  std::string prefix_;
  BundleWriterOptions options_;
  std::vector<Shard> shards_;
  std::map<std::string, std::string> entries_; // key -> BundleEntryProto bytes
  std::map<std::string, Partitioned> partitioned_;
  bool finished_ = false;
};

/// Writes `variables` as the TF checkpoint `prefix`.
void write_tensor_bundle(const std::string &prefix,
                         const VariableMap &variables,
                         const BundleWriterOptions &options = {});

/// A sharded save's parts live in "P" + kBundlePartsDirSuffix until they
/// are merged into P (TF's "<prefix>_temp" directory).
constexpr const char *kBundlePartsDirSuffix = "_temp";

/// Part `part` of `num_parts` of a sharded save of the checkpoint `prefix`:
/// "P_temp/part-0000K-of-0000N", a bundle of one data file that one task
/// (a ps task, the chief) writes with BundleWriter.
std::string bundle_part_prefix(const std::string &prefix, int part,
                               int num_parts);

/// TF's MergeV2Checkpoints: the bundles `parts` (one data file each, as
/// bundle_part_prefix names them) become the checkpoint `prefix`, part k's
/// data file renamed (not copied) to P.data-0000K-of-0000N and their
/// entries merged into one P.index, written crash-safely last (fsynced
/// with `sync`). The parts of partitioned variables ("<X>/part_<i>",
/// complete over all parts, each task having saved its own under their
/// names) become slices of "<X>" (Partitions.h), as one process's Saver
/// writes them; a tensor several parts hold whole (state every task keeps)
/// is the first part's. The parts' indexes and directory are removed
/// afterwards. CheckpointError naming the file: a part missing or corrupt,
/// a tensor in two parts with different dtypes or shapes, a failed rename
/// or write (the data files are then moved back: nothing of P is left).
void merge_tensor_bundles(const std::vector<std::string> &parts,
                          const std::string &prefix, bool sync = true);

/// Reads one TF checkpoint (TF's BundleReader). The constructor reads and
/// checks the index (every block's CRC32C, the header, every entry) and maps
/// the data files, checking that each holds its entries' bytes; tensor
/// reads check the tensor's CRC32C.
class TensorBundleReader {
public:
  /// A tensor as the index lists it.
  struct TensorInfo {
    int tf_dtype = 0;           // TF's DataType number
    std::vector<int64_t> shape; // the full shape
    size_t num_slices = 0;      // > 0 for a partitioned variable
  };

  /// `prefix` is the checkpoint's prefix (or its .index file).
  explicit TensorBundleReader(const std::string &prefix);
  ~TensorBundleReader();
  TensorBundleReader(const TensorBundleReader &) = delete;
  TensorBundleReader &operator=(const TensorBundleReader &) = delete;

  const std::string &prefix() const { return prefix_; }
  const std::string &index_file() const { return indexFile_; }
  int num_shards() const { return numShards_; }
  /// Every tensor by name (not the slices' own entries).
  const std::map<std::string, TensorInfo> &tensors() const { return tensors_; }
  bool has_tensor(const std::string &name) const {
    return tensors_.count(name) != 0;
  }
  /// One tensor (a partitioned one assembled from its slices),
  /// CRC-checked; CheckpointError naming the file and the tensor when it is
  /// unknown, has a dtype estc has no DType for, or is corrupt.
  TensorValue get_tensor(const std::string &name) const;
  /// Reads and CRC-checks every tensor without keeping them (tensors of
  /// dtypes estc has no DType for are CRC-checked as bytes; a partitioned
  /// one slice by slice, never whole).
  void verify() const;
  /// The slices a partitioned tensor is stored as, in the index's order
  /// (empty for a tensor stored whole); CheckpointError when unknown.
  std::vector<TensorSlice> slices_of(const std::string &name) const;
  /// One stored slice of a partitioned tensor, read alone and CRC-checked
  /// (a ps task restoring its part of a table: never the whole table);
  /// CheckpointError when `name` has no such slice.
  TensorValue get_slice(const std::string &name,
                        const TensorSlice &slice) const;
  /// A numeric tensor stored whole, or with `slice` one stored slice of a
  /// partitioned one, read straight into `out` (its exact bytes) and
  /// CRC-checked: a restore into a model's own buffers, no copy held.
  /// CheckpointError naming the tensor when it is not of `dtype` and
  /// `shape` or not stored so.
  void read_into(const std::string &name, DType dtype,
                 const std::vector<int64_t> &shape, char *out,
                 const TensorSlice *slice = nullptr) const;

private:
  struct Entry {
    int dtype = 0;
    std::vector<int64_t> shape;
    int shard = 0;
    uint64_t offset = 0, size = 0;
    uint32_t maskedCrc = 0;
    std::vector<TensorSlice> slices;
  };
  struct Mapping;
  const Entry &entry(const std::string &key, const std::string &name) const;
  std::string bytesOf(const Entry &e, const std::string &name) const;
  TensorValue readWhole(const Entry &e, const std::string &name,
                        DType dtype) const;
  /// The entry of the stored slice `slice` of partitioned tensor `name`;
  /// CheckpointError when it has no such slice, DataLossError when the
  /// slice's entry disagrees with its tensor's.
  const Entry &sliceEntry(const std::string &name,
                          const TensorSlice &slice) const;
  /// Reads a numeric entry's bytes into `out` (or, null, through an 8 MiB
  /// buffer) and checks its CRC32C.
  void readBytes(const Entry &e, const std::string &name, char *out) const;
  /// A partitioned tensor from its slices, each checked; with !keep the
  /// slices are read and checked one at a time and nothing is returned.
  TensorValue assemble(const Entry &e, const std::string &name, DType dtype,
                       bool keep = true) const;

  std::string prefix_, indexFile_;
  int numShards_ = 0;
  std::map<std::string, Entry> entries_; // every key but the header
  std::map<std::string, TensorInfo> tensors_;
  std::vector<std::unique_ptr<Mapping>> shards_;
};

/// The key of an object-based checkpoint's object graph.
constexpr const char *kObjectGraphKey = "_CHECKPOINTABLE_OBJECT_GRAPH";

/// The object graph of an object-based checkpoint (tf.train.Checkpoint,
/// Keras; TF's TrackableObjectGraph), read from its string tensor
/// kObjectGraphKey: tensors found by object path, as tf.train.Checkpoint
/// finds them, whichever path the saving program named them by.
class ObjectGraph {
public:
  /// CheckpointError naming the checkpoint when it has no object graph
  /// (a name-based checkpoint), DataLossError when it does not parse or
  /// refers to nodes it does not have.
  explicit ObjectGraph(const TensorBundleReader &reader);

  /// The checkpoint key of attribute `attribute` of the object at `path`
  /// (the local names of the edges from the root: "model/layer_with_weights-
  /// 0/kernel"; "" is the root); nullopt when the graph has no such object
  /// or the object no such attribute.
  std::optional<std::string>
  checkpoint_key(const std::string &path,
                 const std::string &attribute = "VARIABLE_VALUE") const;
  /// The checkpoint key of the slot `slot_name` ("m", "v", "accumulator")
  /// that the optimizer at `optimizer_path` keeps for the variable at
  /// `variable_path`; nullopt when there is none.
  std::optional<std::string>
  slot_checkpoint_key(const std::string &variable_path,
                      const std::string &optimizer_path,
                      const std::string &slot_name) const;
  /// Every object with a VARIABLE_VALUE by its shortest path (breadth
  /// first, children in order; an object reachable by several paths once):
  /// path -> checkpoint key.
  std::map<std::string, std::string> variables() const;

private:
  struct Node {
    std::vector<std::pair<std::string, int>> children; // local name, node
    std::map<std::string, std::string> attributes;     // name -> key
    struct Slot {
      int variable = 0;
      std::string name;
      int node = 0;
    };
    std::vector<Slot> slots;
  };
  std::optional<int> find(const std::string &path) const;
  std::vector<Node> nodes_;
};

} // namespace train
} // namespace estc

#endif // ESTC_LIB_CHECKPOINT_TENSORBUNDLE_H
