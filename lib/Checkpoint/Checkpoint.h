//===- Checkpoint.h - Checkpoints in a model_dir (tf.train for C++) -----===//
//
// A checkpoint holds every variable of a model (weights, optimizer slots,
// global_step) as named, typed tensors in one safetensors file; the text file
// `checkpoint` in model_dir (TF's CheckpointState) lists the ones kept. The
// exact layout is docs/checkpoint-format.md. In short, for global step 200:
//
//   model_dir/checkpoint                  the state: model_checkpoint_path:
//                                         "model.ckpt-200", ...
//   model_dir/model.ckpt-200.safetensors  the tensors, CRC32C per tensor
//
// The tensors are estc::TensorValues (lib/Tensor/TensorValue.h), their
// dtypes stored under their safetensors names ("F32", ..., "BF16").
//
// Names mirror tf.train: Saver, CheckpointState, get_checkpoint_state,
// update_checkpoint_state, latest_checkpoint, load_checkpoint (a
// CheckpointReader), list_variables, load_variable. Every problem a user's
// files can cause throws CheckpointError, one line naming the file (and the
// tensor, when one is at fault). Files are written crash-safely: a process
// killed at any moment leaves the previous checkpoint and state valid.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_CHECKPOINT_CHECKPOINT_H
#define ESTC_LIB_CHECKPOINT_CHECKPOINT_H

#include "lib/Support/FileError.h"
#include "lib/Tensor/TensorValue.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace estc {
namespace train {

/// A corrupt, truncated or missing checkpoint or state file, or a variable
/// that does not match: what() is one line "<file>: <problem>".
class CheckpointError : public FileError {
public:
  using FileError::FileError;
};

/// A checkpoint file whose bytes are wrong (TF's DataLossError): a bad or
/// truncated header, a tensor past the end of the file, a CRC32C mismatch.
/// The other CheckpointErrors are files that cannot be opened or read (an
/// I/O error), a missing tensor, a bad state file.
class DataLossError : public CheckpointError {
public:
  using CheckpointError::CheckpointError;
};

/// Variables by name, as saved and restored.
using VariableMap = std::map<std::string, TensorValue>;

/// The checkpoint file format version, in the header's __metadata__.
constexpr const char *kCheckpointFormat = "estc-checkpoint-1";
/// A checkpoint with prefix P is the file P + kCheckpointSuffix.
constexpr const char *kCheckpointSuffix = ".safetensors";
/// The state file in model_dir.
constexpr const char *kCheckpointStateFile = "checkpoint";

/// The checkpoint file for a prefix ("dir/model.ckpt-200" ->
/// "dir/model.ckpt-200.safetensors"); a path that already ends in the suffix
/// is returned as is. A prefix that names a TF checkpoint (its
/// "dir/model.ckpt-200.index" exists, its .safetensors does not) gives the
/// index file, which every reader here accepts (lib/Checkpoint/
/// TensorBundle.h).
std::string checkpoint_file(const std::string &prefix);

/// The bytes of a checkpoint file holding `variables` at `global_step`.
std::string serialize_checkpoint(const VariableMap &variables,
                                 int64_t global_step);

/// Writes one checkpoint file crash-safely (temporary file, fsync, rename,
/// fsync of the directory). Does not touch the state file; see Saver.
void write_checkpoint(const std::string &file, const VariableMap &variables,
                      int64_t global_step);

class TensorBundleReader;

/// Reads one checkpoint file (tf.train.load_checkpoint). The constructor
/// reads and checks the header: well-formed JSON, known dtypes, sizes equal
/// to dtype size times elements, offsets in bounds, contiguous and without
/// overlap, the file not truncated, a CRC32C for every tensor. Tensor reads
/// verify the tensor's CRC32C.
///
/// A TF checkpoint (tensor bundle: P.index and P.data-*-of-*) is read the
/// same way (lib/Checkpoint/TensorBundle.h): variables() lists its tensors
/// of the dtypes estc has (TF's other dtypes, int8 and the like, are left
/// out; estc-ckpt lists them), global_step() is its "global_step" tensor (0
/// when it has none) and metadata() is {"format": "tensor-bundle-v2"}.
class CheckpointReader {
public:
  /// `path` is a checkpoint file or its prefix (kCheckpointSuffix added
  /// when `path` itself does not exist); a TF checkpoint's prefix or .index
  /// file; or a prefix + kCheckpointSuffix that does not exist where the
  /// prefix is a TF checkpoint.
  explicit CheckpointReader(const std::string &path);

  /// True when the checkpoint is a TF tensor bundle.
  bool is_tensor_bundle() const { return bundle_ != nullptr; }
  /// The TF checkpoint's reader (every tensor, with TF's dtypes); null for
  /// a safetensors checkpoint.
  const TensorBundleReader *tensor_bundle() const { return bundle_.get(); }

  /// The file read.
  const std::string &path() const { return path_; }
  int64_t global_step() const { return globalStep_; }
  /// The header's __metadata__ (format, global_step, crc32c/<name>, ...).
  const std::map<std::string, std::string> &metadata() const {
    return metadata_;
  }
  /// Every tensor's dtype and shape, by name.
  const std::map<std::string, VariableSpec> &variables() const {
    return specs_;
  }
  bool has_tensor(const std::string &name) const {
    return specs_.count(name) != 0;
  }
  /// One tensor, CRC-checked; CheckpointError naming the file and tensor
  /// when it is unknown, unreadable or corrupt.
  TensorValue get_tensor(const std::string &name) const;
  /// Every tensor, CRC-checked.
  VariableMap read_all() const;
  /// Reads and CRC-checks every tensor without keeping them.
  void verify() const;

private:
  struct Entry {
    uint64_t begin = 0, end = 0; // relative to the data section
    uint32_t crc = 0;
  };
  std::string path_;
  std::shared_ptr<const TensorBundleReader> bundle_;
  uint64_t dataStart_ = 0;
  int64_t globalStep_ = 0;
  std::map<std::string, std::string> metadata_;
  std::map<std::string, VariableSpec> specs_;
  std::map<std::string, Entry> entries_;
};

/// TF's CheckpointState: the contents of model_dir/checkpoint. Paths are
/// prefixes (no kCheckpointSuffix), relative to model_dir or absolute.
struct CheckpointState {
  std::string model_checkpoint_path;
  std::vector<std::string> all_model_checkpoint_paths; // oldest first
  std::vector<double> all_model_checkpoint_timestamps; // seconds since epoch
  double last_preserved_timestamp = 0;
};

/// The state in model_dir/checkpoint; nullopt when there is none;
/// CheckpointError when it is not a valid CheckpointState text file.
std::optional<CheckpointState>
get_checkpoint_state(const std::string &model_dir);

/// Writes model_dir/checkpoint crash-safely.
void update_checkpoint_state(const std::string &model_dir,
                             const CheckpointState &state);

/// Receives one-line warnings ("<file>: <problem>; ...").
using WarningSink = std::function<void(const std::string &)>;
/// Prints "estc: warning: <line>" to stderr.
void print_warning(const std::string &line);

/// The prefix ("model_dir/model.ckpt-200") of the newest valid checkpoint:
/// the state file's checkpoints newest first, then (when the state file is
/// missing or corrupt, or none of its checkpoints is valid) the
/// model.ckpt-<step>.safetensors files in model_dir by step. A candidate is
/// valid when its header checks and every tensor's CRC32C matches; each
/// invalid one is reported to `warn` and skipped. nullopt when model_dir has
/// no checkpoint at all; CheckpointError when it has some but none is valid
/// (training must not silently start over). Each call checks afresh; a
/// reader that asks again and again uses a CheckpointIndex.
std::optional<std::string>
latest_checkpoint(const std::string &model_dir,
                  const WarningSink &warn = print_warning);

/// A restored checkpoint.
struct RestoredCheckpoint {
  std::string path; // the prefix, as latest_checkpoint returns it
  int64_t global_step = 0;
  VariableMap variables;
};

/// Restores the newest valid checkpoint in model_dir (the candidates and
/// warnings of latest_checkpoint, reading each file once); nullopt when
/// model_dir has no checkpoint, CheckpointError when none is valid.
std::optional<RestoredCheckpoint>
restore_latest(const std::string &model_dir,
               const WarningSink &warn = print_warning);

/// The checkpoints of one model_dir as one long-lived reader (an Estimator)
/// sees them: latest() and restore() are latest_checkpoint and
/// restore_latest, and the index remembers its verdict on every file it
/// checked, by the file's identity (device, inode, size, modification
/// time). So a file is checked once, and a corrupt or unreadable one (or a
/// corrupt state file) is reported to `warn` once, however often the
/// reader asks, until the file changes. latest() trusts a file it found
/// valid; restore() reads and CRC-checks the file it restores every time,
/// and a file that fails then is reported and skipped like the others.
class CheckpointIndex {
public:
  explicit CheckpointIndex(std::string model_dir,
                           WarningSink warn = print_warning);
  CheckpointIndex(const CheckpointIndex &) = delete;
  CheckpointIndex &operator=(const CheckpointIndex &) = delete;

  std::optional<std::string> latest();
  std::optional<RestoredCheckpoint> restore();
  const std::string &model_dir() const { return modelDir_; }

private:
  /// What identifies one version of a file; all zero for a missing file.
  struct FileId {
    uint64_t device = 0, inode = 0, size = 0;
    int64_t mtimeNs = 0;
    bool operator==(const FileId &o) const {
      return device == o.device && inode == o.inode && size == o.size &&
             mtimeNs == o.mtimeNs;
    }
  };
  static FileId idOf(const std::string &path);
  template <typename F>
  std::optional<std::string> firstValid(bool trustValid, F tryOne);
  std::vector<std::string> candidates();

  struct Verdict {
    FileId id;
    bool valid = false;
  };
  std::string modelDir_;
  WarningSink warn_;
  std::map<std::string, Verdict> verdicts_; // by checkpoint file
  std::optional<FileId> corruptState_;      // the state file last reported
  std::mutex mutex_;
};

/// A checkpoint file from a file, a prefix or a model_dir (its latest valid
/// checkpoint); CheckpointError when there is none.
std::string resolve_checkpoint(const std::string &ckpt_dir_or_file,
                               const WarningSink &warn = print_warning);

/// tf.train.load_checkpoint / list_variables / load_variable.
CheckpointReader load_checkpoint(const std::string &ckpt_dir_or_file);
std::map<std::string, VariableSpec>
list_variables(const std::string &ckpt_dir_or_file);
TensorValue load_variable(const std::string &ckpt_dir_or_file,
                          const std::string &name);

/// The file format of the checkpoints a Saver writes.
enum class CheckpointFormat {
  /// The format of the newest checkpoint the state file lists, so that a
  /// model_dir stays in one format (a TF Estimator's is continued in TF's);
  /// Safetensors for a model_dir without checkpoints.
  Auto,
  /// One file, P.safetensors (docs/checkpoint-format.md).
  Safetensors,
  /// TF's tensor bundle, P.index and P.data-0000K-of-0000N
  /// (TensorBundle.h): what TF's Saver, tf.train.Checkpoint and a TF
  /// Estimator read.
  TensorBundle,
};

/// Saver options; the defaults are tf.estimator.RunConfig's.
struct SaverOptions {
  /// Checkpoints listed in the state file and kept on disk
  /// (keep_checkpoint_max); 0 keeps all of them.
  int max_to_keep = 5;
  /// Of the checkpoints that fall out of the last max_to_keep, one per this
  /// many hours is kept on disk (no longer listed), like TF's Saver.
  double keep_checkpoint_every_n_hours = 10000;
  /// File prefix inside model_dir.
  std::string prefix = "model.ckpt";
  /// Seconds since the epoch (wall clock when empty); tests inject one.
  std::function<double()> clock = nullptr;
  /// The format of the checkpoints written.
  CheckpointFormat format = CheckpointFormat::Auto;
  /// Data files of a TensorBundle checkpoint (TF's Saver(sharded=True)).
  int num_shards = 1;
  /// fsync each checkpoint's files and the directory before the state file
  /// lists it: the checkpoint survives an OS crash or a power loss. false:
  /// written and renamed only, as TF's Saver (a killed process loses
  /// nothing; the OS writes the bytes back later), which saves at the speed
  /// of memory rather than of the disk (docs/results.md, "Checkpoints").
  /// The state file is always synced.
  bool sync = true;
};

/// Saves checkpoints into model_dir and keeps the state file and the
/// number of checkpoints as SaverOptions says (tf.train.Saver). One Saver
/// per model_dir at a time.
class Saver {
public:
  /// Creates model_dir, removes temporary files a killed writer left, and
  /// takes over the checkpoints the state file lists (none when it is
  /// corrupt: the next save rewrites it, and deletes none of the files it
  /// listed; the readers of model_dir report it).
  explicit Saver(std::string model_dir, SaverOptions options = {});

  /// Writes model.ckpt-<global_step> (with an I64 scalar "global_step"
  /// when `variables` has none) in format(), then the state file, then
  /// deletes the checkpoints that are no longer kept (in either format).
  /// Returns the prefix path. When a write fails (CheckpointError "<file>:
  /// cannot write: <strerror>"), model_dir is left as it was: the previous
  /// state, and no new file it does not list.
  std::string save(const VariableMap &variables, int64_t global_step);

  /// A sharded save (TF's Saver(sharded=True) over several tasks, each
  /// writing what it holds): `write_parts(parts, sync)` writes the bundles
  /// parts[0..num_parts) (lib/Checkpoint/TensorBundle.h,
  /// bundle_part_prefix: one data file each, fsynced when `sync`), then
  /// they are merged into model.ckpt-<global_step> (merge_tensor_bundles)
  /// and the state file and the kept checkpoints are updated as by save().
  /// The format must be TensorBundle (std::invalid_argument otherwise).
  /// When write_parts throws or the merge fails, model_dir is left as it
  /// was (the parts removed) and the exception propagates.
  std::string
  save_sharded(int64_t global_step, int num_parts,
               const std::function<void(const std::vector<std::string> &parts,
                                        bool sync)> &write_parts);

  /// The prefixes (relative to model_dir) the state file lists, oldest first.
  std::vector<std::string> last_checkpoints() const;
  const std::string &model_dir() const { return modelDir_; }
  /// The format save() writes (never Auto: resolved by the constructor).
  CheckpointFormat format() const { return format_; }

private:
  double now() const;
  bool isListed(const std::string &rel) const;
  /// After the files of model_dir/`rel` are written: the state file, then
  /// the checkpoints no longer kept deleted. `removeNew` removes the new
  /// files when the state cannot be written.
  std::string commit(const std::string &rel, bool bundle, bool listed,
                     const std::function<void()> &removeNew);
  std::string modelDir_;
  SaverOptions options_;
  CheckpointFormat format_ = CheckpointFormat::Safetensors;
  std::vector<std::pair<std::string, double>> last_; // prefix, timestamp
  double lastPreserved_ = 0;
};

} // namespace train
} // namespace estc

#endif // ESTC_LIB_CHECKPOINT_CHECKPOINT_H
