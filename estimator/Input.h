//===- Input.h - What an input_fn returns: a dataset of batches ---------===//
//
// An input_fn returns a Dataset: a one-pass sequence of Batches, each
// holding the features (name -> tensor, first dimension the batch) and the
// labels (absent for prediction). Its sources:
//
//   - a data::Dataset (lib/Data/Dataset.h, tf.data for C++) whose elements
//     are batches: a features dict, or a (features dict, labels) tuple, as
//     TF's Estimator takes them (converts implicitly);
//   - numpy_input_fn / Dataset::from_arrays: in-memory arrays cut into
//     batches of batch_size (the final batch may be partial), for num_epochs
//     passes (nullopt: forever), shuffled per epoch from a seed (a data
//     pipeline stage, so resumable too);
//   - Dataset::from_generator: any callable returning the next Batch or
//     nullopt at the end (not resumable).
//
// Resumption: train() saves the pipeline's position (data::IteratorState)
// with every checkpoint, as the tensor kInputStateTensor, and a restarted
// train() restores it, so the data stream continues where the checkpoint
// was taken. A pipeline that ran out is not saved (the next train() starts
// input_fn afresh, as TF's does); nor is one that cannot save its position
// (from_generator), which is logged once.
//
// The element spec (features' and labels' dtypes and shapes with the batch
// dimension -1) defines the JIT model's placeholders; a generator without a
// declared spec has it inferred from its first batch (which is kept, not
// lost).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_ESTIMATOR_INPUT_H
#define ESTC_ESTIMATOR_INPUT_H

#include "lib/Data/Dataset.h"
#include "lib/Graph/GraphBuilder.h"
#include "lib/Tensor/TensorValue.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

namespace estc {
namespace estimator {

/// Features by name; every tensor's first dimension is the batch (or, for
/// the keys of Batch::values_features, a number of sparse values).
using Features = std::map<std::string, TensorValue>;

/// One batch of examples.
struct Batch {
  Features features;
  std::optional<TensorValue> labels;
  /// Features whose first dimension is a number of values (the ids, rows
  /// and weights of a categorical feature column: docs/design/
  /// feature-columns.md), not the batch.
  std::set<std::string> values_features;
  /// Features whose second dimension is the run-time sequence length (a
  /// sequence feature column's padded ids or values: docs/
  /// feature-columns.md, "Sequence columns"), which varies by batch.
  std::set<std::string> sequence_features = {};
  /// The first dimension of the features (std::invalid_argument naming the
  /// tensor when a feature is a scalar or the features disagree).
  int64_t size() const;
};

/// The features' and labels' dtypes and shapes, batch dimension -1
/// (estc::InputSpec, as the graph builder takes it; labels keyed "labels").
using ElementSpec = InputSpec;

/// The element spec of one batch: its shapes with the first dimension -1
/// (values_dim for the values features).
ElementSpec element_spec_of(const Batch &batch);

/// The host half of a model: what runs on each batch before the compiled
/// step (feature columns: strings and sparse values to ids; heads: label
/// vocabularies) and on its predictions after it (class ids to class
/// names). Canned estimators install theirs; a custom model_fn over feature
/// columns installs feature_column::Transformer's with
/// Estimator::set_host_transform. One object serves train, evaluate,
/// predict and (issue 14) the exported serving model.
class HostTransform {
public:
  virtual ~HostTransform() = default;
  /// The model's inputs for one element of an input_fn: a features dict or
  /// a (features, labels) tuple; labels may be absent (predict). Bad data
  /// throws data::DataError naming the feature and the batch row.
  virtual Batch transform_input(const data::Element &element) const = 0;
  /// The model's input spec when known before any data (placeholders for
  /// export); nullopt: inferred from the first batch.
  virtual std::optional<ElementSpec> input_spec(bool with_labels) const {
    (void)with_labels;
    return std::nullopt;
  }
  /// The raw features transform_input reads to make a prediction's model
  /// inputs (feature keys); nullopt (the default): not known.
  /// export_saved_model refuses a receiver that lacks one of them.
  virtual std::optional<std::set<std::string>> feature_keys() const {
    return std::nullopt;
  }
  /// Rewrites one batch of predictions (key -> tensor, batch first) in
  /// place, e.g. adds string `classes` from `class_ids`. Default: none.
  virtual void transform_predictions(Features &predictions) const {
    (void)predictions;
  }
  /// Returns the name a file is kept under in an export's assets/.
  using AddAssetFn = std::function<std::string(const std::string &path)>;
  /// This transform as data for an export: the JSON object of
  /// saved_model.json's "transform" (docs/design/saved-model.md), files it
  /// reads registered with `add_asset`. nullopt (the default): it cannot be
  /// exported, and export_saved_model says so.
  virtual std::optional<std::string>
  serving_config(const AddAssetFn &add_asset) const {
    (void)add_asset;
    return std::nullopt;
  }
};

class Dataset;
/// input_fn: called once per train / evaluate / predict call.
using InputFn = std::function<Dataset()>;

/// The checkpoint tensor holding the input pipeline's position (I64: the
/// byte count, then the bytes of data::IteratorState::serialize, packed
/// little-endian).
constexpr const char *kInputStateTensor = "_estc_input_pipeline_state";
/// Packs bytes into such a tensor and back (DataError for a malformed one).
TensorValue pack_bytes(const std::string &bytes);
std::string unpack_bytes(const TensorValue &tensor);

/// Converts a data pipeline's element to a Batch: a features dict, or a
/// (features dict, labels tensor) tuple. std::invalid_argument naming the
/// feature for what a model cannot take without a HostTransform (sparse
/// and string features: they reach the model through feature columns).
Batch to_batch(const data::Element &element);
/// A Batch as an element: (features dict, labels) or the features dict.
data::Element to_element(const Batch &batch);

/// What an input_fn returns: batches until nullopt. Move-only; cheap to
/// move.
class Dataset {
public:
  using Generator = std::function<std::optional<Batch>()>;

  /// The batches of a data pipeline (to_batch of each element).
  Dataset(data::Dataset dataset); // NOLINT: implicit, as input_fns return one

  /// Batches from `next` until it returns nullopt. `spec`: the element spec
  /// (inferred from the first batch when absent).
  static Dataset from_generator(Generator next,
                                std::optional<ElementSpec> spec = {});

  /// Options of from_arrays / numpy_input_fn.
  struct ArrayOptions {
    int64_t batch_size = 128;
    /// Passes over the data; nullopt repeats forever.
    std::optional<int64_t> num_epochs = 1;
    /// Shuffles every epoch (a permutation from `seed` and the epoch, the
    /// same on every platform).
    bool shuffle = false;
    uint64_t seed = 0;
  };
  /// Batches of the rows of `x` (every feature's first dimension is the
  /// number of examples) and `y`. Batches run across epoch boundaries; only
  /// the very last batch may be partial. std::invalid_argument for no
  /// features, disagreeing first dimensions, batch_size < 1, num_epochs < 1.
  static Dataset from_arrays(Features x, std::optional<TensorValue> y,
                             const ArrayOptions &options);

  Dataset(Dataset &&) noexcept;
  Dataset &operator=(Dataset &&) noexcept;
  ~Dataset();

  /// Every num_shards-th batch, from the index-th (tf.data's shard, on the
  /// batches): a replica's share of the input under
  /// MultiWorkerMirroredStrategy. Before any next(); std::invalid_argument
  /// for num_shards < 1 or index outside [0, num_shards).
  Dataset shard(int64_t num_shards, int64_t index) &&;

  /// tf.data's map on the batches: each element, a (features dict, labels)
  /// tuple or a features dict, through `fn` (on `num_parallel_calls`
  /// threads; 0: the caller's). Preprocessing an input_fn does per batch,
  /// e.g. images kept as bytes and scaled to floats (a quarter of the
  /// memory of keeping floats). A pipeline's position still saves and
  /// restores; in-memory arrays lose next_rows() (their batches are
  /// gathered, then mapped). Before any next(); std::logic_error for a
  /// from_generator Dataset (no pipeline) or one already read.
  Dataset map(data::Dataset::MapFn fn, int64_t num_parallel_calls = 0) &&;

  /// Applies `transform` to every element from now on (before any next()):
  /// the Estimator installs its HostTransform here.
  void set_transform(std::shared_ptr<const HostTransform> transform);

  /// The next batch, or nullopt when the input is exhausted.
  std::optional<Batch> next();
  /// In-memory arrays read straight into a consumer's buffers (the
  /// Estimator's input path for from_arrays / numpy_input_fn, which then
  /// gathers no Batch per step): the arrays themselves, or null when this
  /// dataset is of another kind, has a transform, or holds a batch that
  /// element_spec() read ahead. While it is not null, next_rows() may stand
  /// in for next().
  const Batch *arrays() const;
  /// The rows of arrays() that next() would have gathered into the next
  /// batch, in order, into `rows` (left empty: the input ran out); the
  /// position moves on as next() moves it. std::logic_error when arrays()
  /// is null.
  void next_rows(std::vector<int64_t> &rows);
  /// The element spec (may read and keep the first batch); nullopt for an
  /// empty dataset without a declared spec.
  std::optional<ElementSpec> element_spec();

  /// The position after the batches next() gave, serialized; nullopt when
  /// the dataset cannot save it (a generator) or ran out. `why` (optional)
  /// says which.
  std::optional<std::string> save_state(std::string *why = nullptr);
  /// Continues from a position save_state gave (of a dataset with the same
  /// pipeline). On failure (another pipeline, a corrupt state), returns
  /// false with the reason in `why` and leaves the dataset as it was.
  bool restore_state(const std::string &state, std::string *why = nullptr);

private:
  friend InputFn numpy_input_fn(Features, std::optional<TensorValue>,
                                const ArrayOptions &);
  static Dataset fromSharedArrays(std::shared_ptr<const Batch> arrays,
                                  const ArrayOptions &options);
  struct State;
  explicit Dataset(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

/// tf.compat.v1.estimator.inputs.numpy_input_fn: an input_fn over in-memory
/// arrays (each call starts a fresh pass with the same shuffling).
InputFn numpy_input_fn(Features x, std::optional<TensorValue> y,
                       const Dataset::ArrayOptions &options);

} // namespace estimator
} // namespace estc

#endif // ESTC_ESTIMATOR_INPUT_H
