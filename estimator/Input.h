//===- Input.h - What an input_fn returns: a dataset of batches ---------===//
//
// An input_fn returns a Dataset: a one-pass sequence of Batches, each
// holding the features (name -> tensor, first dimension the batch) and the
// labels (absent for prediction). Two sources for now (the input-pipeline
// library is a later issue):
//
//   - numpy_input_fn / Dataset::from_arrays: in-memory arrays cut into
//     batches of batch_size (the final batch may be partial), for num_epochs
//     passes (nullopt: forever), shuffled per epoch from a seed;
//   - Dataset::from_generator: any callable returning the next Batch or
//     nullopt at the end.
//
// The element spec (features' and labels' dtypes and shapes with the batch
// dimension -1) defines the JIT model's placeholders; a generator without a
// declared spec has it inferred from its first batch (which is kept, not
// lost).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_ESTIMATOR_INPUT_H
#define ESTC_ESTIMATOR_INPUT_H

#include "lib/Graph/GraphBuilder.h"
#include "lib/Tensor/TensorValue.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace estc {
namespace estimator {

/// Features by name; every tensor's first dimension is the batch.
using Features = std::map<std::string, TensorValue>;

/// One batch of examples.
struct Batch {
  Features features;
  std::optional<TensorValue> labels;
  /// The first dimension of the features (std::invalid_argument naming the
  /// tensor when a feature is a scalar or the features disagree).
  int64_t size() const;
};

/// The features' and labels' dtypes and shapes, batch dimension -1
/// (estc::InputSpec, as the graph builder takes it; labels keyed "labels").
using ElementSpec = InputSpec;

/// The element spec of one batch: its shapes with the first dimension -1.
ElementSpec element_spec_of(const Batch &batch);

class Dataset;
/// input_fn: called once per train / evaluate / predict call.
using InputFn = std::function<Dataset()>;

/// tf.data.Dataset, reduced to what the Estimator needs: next() until
/// nullopt. Move-only; cheap to move.
class Dataset {
public:
  using Generator = std::function<std::optional<Batch>()>;

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

  /// The next batch, or nullopt when the input is exhausted.
  std::optional<Batch> next();
  /// The element spec (may read and keep the first batch); nullopt for an
  /// empty dataset without a declared spec.
  std::optional<ElementSpec> element_spec();

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
