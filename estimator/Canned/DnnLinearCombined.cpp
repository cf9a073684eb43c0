//===- DnnLinearCombined.cpp - TF 2.15's wide & deep model (no LLVM) -----===//
//
// TF's canned/dnn_linear_combined.py: _dnn_linear_combined_model_fn_v2 as
// dnn_linear_combined_model()'s CannedModel, from Linear.cpp's and Dnn.cpp's
// logits builders. The JIT classes are in EstimatorsJit.cpp.
//
//===----------------------------------------------------------------------===//

#include "estimator/Canned/DnnLinearCombined.h"

#include "estimator/Canned/CannedInternal.h"
#include "lib/Graph/Ops.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace estc {
namespace estimator {

namespace fc = feature_column;

using namespace detail;

CannedModel dnn_linear_combined_model(std::shared_ptr<const Head> head,
                                      DNNLinearCombinedOptions o) {
  const std::string who = "DNNLinearCombinedEstimator";
  checkHead(who, head);
  if (o.linear_feature_columns.empty() && o.dnn_feature_columns.empty())
    throw std::invalid_argument(who + ": Either linear_feature_columns or "
                                      "dnn_feature_columns must be defined.");
  if (!o.linear_feature_columns.empty())
    check_feature_columns(who, o.linear_feature_columns);
  if (!o.dnn_feature_columns.empty()) {
    check_feature_columns(who, o.dnn_feature_columns);
    if (o.dnn_hidden_units.empty())
      throw std::invalid_argument(who + ": dnn_hidden_units must be defined "
                                        "when dnn_feature_columns is "
                                        "specified.");
    checkHiddenUnits(who, o.dnn_hidden_units);
  }
  checkDropout(who, o.dnn_dropout);
  double linearLr =
      o.linear_feature_columns.empty()
          ? 0.005
          : std::min(0.005, 1.0 / std::sqrt(static_cast<double>(
                                      o.linear_feature_columns.size())));
  o.linear_optimizer.get(linearLr);
  o.dnn_optimizer.get(0.001);
  ModelFn fn = [head, o, linearLr](const TensorMap &features,
                                   const Tensor &labels, ModeKeys mode,
                                   const Params &, const RunConfig &) {
    Graph &g = get_default_graph();
    int64_t units = head->logits_dimension();
    Tensor dnn, linear;
    if (!o.dnn_feature_columns.empty())
      dnn = dnnLogits(features, o.dnn_feature_columns, units,
                      o.dnn_hidden_units, o.dnn_activation_fn, o.dnn_dropout,
                      o.batch_norm, mode, o.input_layer_partitioner);
    if (!o.linear_feature_columns.empty())
      linear =
          linearLogits(features, o.linear_feature_columns, units,
                       o.linear_sparse_combiner, mode, o.linear_partitioner);
    // dnn_linear_combined.py's _add_layer_summary(linear_logits, 'linear').
    if (linear.valid() && mode == ModeKeys::TRAIN)
      addLayerSummary(linear, "linear");
    Tensor logits = dnn.valid() && linear.valid() ? add(dnn, linear)
                    : dnn.valid()                 ? dnn
                                                  : linear;
    if (mode != ModeKeys::TRAIN)
      return head->create_estimator_spec(features, mode, logits, labels);
    // TF's _train_op_fn: each part's optimizer on its own variables, the
    // batch norm updates, one group.
    std::vector<Operation> updates = g.get_collection("update_ops");
    Head::TrainOpFn trainOpFn = [&](const Tensor &loss) {
      std::vector<Operation> ops;
      if (dnn.valid()) {
        ops.push_back(o.dnn_optimizer.get(0.001).minimize(
            loss, variablesUnder(g, "dnn")));
        ops.insert(ops.end(), updates.begin(), updates.end());
      }
      if (linear.valid()) {
        // TF 2.15: the dnn optimizer's iterations are global_step, the
        // linear one counts its own (<scope>/iter); of two optimizers of
        // one class the linear one's scope is "training/<class>_1".
        std::string scope = "training/" + o.linear_optimizer.keras_name();
        if (dnn.valid() &&
            o.linear_optimizer.keras_name() == o.dnn_optimizer.keras_name())
          scope += "_1";
        ops.push_back(o.linear_optimizer.get(linearLr, scope, dnn.valid())
                          .minimize(loss, variablesUnder(g, "linear")));
      }
      return ops.size() == 1 ? ops[0] : group(ops);
    };
    return head->create_estimator_spec(features, mode, logits, labels,
                                       std::nullopt, {}, trainOpFn);
  };
  FeatureColumns all = o.linear_feature_columns;
  for (const fc::FeatureColumnPtr &c : o.dnn_feature_columns) {
    bool seen = false;
    for (const fc::FeatureColumnPtr &l : all)
      seen |= l->name() == c->name();
    if (!seen)
      all.push_back(c);
  }
  return makeModel(std::move(head), std::move(fn), std::move(all));
}

} // namespace estimator
} // namespace estc
