//===- CannedInternal.h - What the canned families' sources share --------===//
//
// Internal to estimator/Canned: the argument checks and the CannedModel
// assembly every family uses (Canned.cpp), and the logits builders that
// DNNLinearCombined shares with its parts, as TF's dnn_linear_combined.py
// imports them from linear.py (Linear.cpp) and dnn.py (Dnn.cpp). Not part
// of the API: include Estimators.h or a family's header.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_ESTIMATOR_CANNED_CANNEDINTERNAL_H
#define ESTC_ESTIMATOR_CANNED_CANNEDINTERNAL_H

#include "estimator/Canned/Canned.h"
#include "lib/Graph/Layers.h"
#include "lib/Graph/PartitionedVariables.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace estc {
namespace estimator {
namespace detail {

// --- Canned.cpp --------------------------------------------------------------

/// std::invalid_argument naming `who` for a null head.
void checkHead(const std::string &who, const std::shared_ptr<const Head> &h);
/// The head's weight column, for the host transform (SingleHead keeps it).
std::string weightColumnOf(const Head &head);
/// The CannedModel of `head` and `fn` over `columns`, with the columns' host
/// transform.
CannedModel makeModel(std::shared_ptr<const Head> head, ModelFn fn,
                      FeatureColumns columns);

// --- Linear.cpp --------------------------------------------------------------

/// TF's _linear_model_fn_builder_v2: the linear logits under "linear";
/// in TRAIN its summaries "bias" (a scalar for one unit, else a histogram)
/// and "fraction_of_zero_weights" (of every weight but the bias).
Tensor linearLogits(const TensorMap &features, const FeatureColumns &columns,
                    int64_t units, const std::string &sparse_combiner,
                    ModeKeys mode, const Partitioner &partitioner = nullptr);
/// The trainable variables whose names start with `scope` + "/".
std::vector<Variable> variablesUnder(Graph &g, const std::string &scope);
/// TF's _add_hidden_layer_summary (dnn.py; _add_layer_summary of
/// dnn_linear_combined.py): "<tag>/fraction_of_zero_values" and the
/// histogram "<tag>/activation" of `value`, in the current name scope.
void addLayerSummary(const Tensor &value, const std::string &tag);

// --- Dnn.cpp -----------------------------------------------------------------

/// TF's _dnn_model_fn_builder_v2: the DNN logits under "dnn", and the batch
/// norm updates of TRAIN; in TRAIN each hidden layer's and the logits'
/// summaries ("dnn/hiddenlayer_<i>/..." and "dnn/logits/...",
/// addLayerSummary).
Tensor dnnLogits(const TensorMap &features, const FeatureColumns &columns,
                 int64_t units, const std::vector<int64_t> &hidden_units,
                 const Activation &activation, std::optional<double> dropout,
                 bool batch_norm, ModeKeys mode,
                 const Partitioner &input_layer_partitioner = nullptr);
/// std::invalid_argument naming `who` for no or non-positive hidden units.
void checkHiddenUnits(const std::string &who,
                      const std::vector<int64_t> &hidden_units);
/// std::invalid_argument naming `who` for a dropout outside [0, 1).
void checkDropout(const std::string &who, std::optional<double> dropout);

} // namespace detail
} // namespace estimator
} // namespace estc

#endif // ESTC_ESTIMATOR_CANNED_CANNEDINTERNAL_H
