//===- Rnn.h - RNNClassifier, RNNEstimator -------------------------------===//
//
// TF 2.15's canned/rnn.py (tf.estimator.experimental.RNNClassifier and
// RNNEstimator): SequenceFeatures over the sequence columns
// ("sequence_features/<column>_embedding/embedding_weights"), the context
// columns' DenseFeatures ("dense_features/...") repeated at every step
// after the sequence's features, a Keras RNN over the steps masked by the
// sequence lengths, and a dense "logits" layer on its last output:
//
//   units {n}        rnn_model/rnn/<cell>_cell/{kernel,recurrent_kernel,bias}
//   units {n, m...}  rnn_model/rnn/stacked_rnn_cells/<cell>_cell[_k]/...
//                    (Keras's StackedRNNCells; here one layer after the
//                    other, every one but the last returning sequences,
//                    which computes the same)
//   logits           rnn_model/logits/{kernel,bias}
//
// cell_type "simple_rnn" (TF's default), "lstm" or "gru" (Keras's cells:
// GRU with reset_after). A named optimizer gets TF's rnn defaults:
// learning rate 0.05 and clipnorm 5.0 (each gradient clipped by its own
// norm); an optimizer object is used as given. rnn_model() gives the
// CannedModel (Canned.h; no LLVM); the classes are JIT Estimators
// (EstcCannedJit).
//
// Not here: rnn_cell_fn (give units and cell_type), return_sequences
// (TF's needs its SequentialHeadWrapper; refused with one line, as TF's
// RNNEstimator refuses a head that is not sequential).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_ESTIMATOR_CANNED_RNN_H
#define ESTC_ESTIMATOR_CANNED_RNN_H

#include "estimator/Canned/CannedEstimator.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace estc {
namespace estimator {

struct RNNOptions {
  /// Dense columns given to the RNN at every step (not sequence columns).
  FeatureColumns context_feature_columns;
  /// The units of each stacked layer.
  std::vector<int64_t> units;
  std::string cell_type = "simple_rnn";
  bool return_sequences = false;
  OptimizerSpec optimizer = "Adagrad";
};

CannedModel rnn_model(std::shared_ptr<const Head> head,
                      FeatureColumns sequence_feature_columns,
                      RNNOptions options);

class RNNEstimator : public CannedEstimator {
public:
  RNNEstimator(std::shared_ptr<const Head> head,
               FeatureColumns sequence_feature_columns, RNNOptions options,
               RunConfig config = RunConfig(),
               std::optional<WarmStartSettings> warm_start_from = {});
};

/// TF's RNNClassifier head arguments plus `sequence_mask` (the feature
/// key of the mask of return_sequences).
struct RNNClassifierOptions : ClassifierOptions {
  std::string sequence_mask = "sequence_mask";
};

class RNNClassifier : public RNNEstimator {
public:
  RNNClassifier(FeatureColumns sequence_feature_columns, RNNOptions options,
                RNNClassifierOptions head = {}, RunConfig config = RunConfig(),
                std::optional<WarmStartSettings> warm_start_from = {});
};

} // namespace estimator
} // namespace estc

#endif // ESTC_ESTIMATOR_CANNED_RNN_H
