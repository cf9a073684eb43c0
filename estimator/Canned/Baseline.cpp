//===- Baseline.cpp - TF 2.15's baseline canned model (no LLVM) ----------===//
//
// TF's canned/baseline.py: _baseline_model_fn_v2 as baseline_model()'s
// CannedModel, with its host transform (only the batch size reaches the
// model). The JIT classes are in EstimatorsJit.cpp.
//
//===----------------------------------------------------------------------===//

#include "estimator/Canned/Baseline.h"

#include "estimator/Canned/CannedInternal.h"
#include "lib/Graph/Ops.h"

#include <stdexcept>

namespace estc {
namespace estimator {

namespace fc = feature_column;

using namespace detail;

namespace {
/// The baseline's host transform: only the batch size reaches the model.
class BaselineTransform final : public HostTransform {
public:
  explicit BaselineTransform(std::shared_ptr<const Head> head)
      : head_(std::move(head)), weightColumn_(weightColumnOf(*head_)) {}

  Batch transform_input(const data::Element &element) const override {
    const data::Element &features =
        element.is_tuple() && element.size() > 0 ? element[0] : element;
    if (!features.is_dict() || features.fields().empty())
      throw std::invalid_argument("Baseline: features must be a non-empty "
                                  "dict (their batch size is the model's)");
    int64_t batch = -1;
    for (const auto &[key, value] : features.fields()) {
      if (!value.is_leaf())
        continue;
      const data::Value &leaf = value.leaf();
      int64_t n = -1;
      if (const auto *t = std::get_if<TensorValue>(&leaf))
        n = t->shape.empty() ? -1 : t->shape[0];
      else if (const auto *s = std::get_if<data::SparseTensor>(&leaf))
        n = s->dense_shape.empty() ? -1 : s->dense_shape[0];
      if (n >= 0) {
        batch = n;
        break;
      }
    }
    if (batch < 0)
      throw std::invalid_argument("Baseline: no feature has a batch dimension");
    Batch out;
    out.features[kBaselineBatchInput] = TensorValue::of<float>(
        {batch, 1}, std::vector<float>(static_cast<size_t>(batch), 0.0f));
    bool labeled = element.is_tuple() && element.size() == 2;
    if (!weightColumn_.empty()) {
      // Prediction input need not have the weights (PREDICT reads none).
      if (labeled || features.contains(weightColumn_)) {
        fc::Transformer weights({fc::numeric_column(weightColumn_)});
        fc::ModelInputs w = weights.transform(features);
        out.features[weightColumn_] = w.at(weightColumn_);
      } else {
        out.features[weightColumn_] = TensorValue::of<float>(
            {batch, 1}, std::vector<float>(static_cast<size_t>(batch), 1.0f));
      }
    }
    if (labeled)
      out.labels = head_labels(*head_, element[1].leaf());
    return out;
  }

  std::optional<ElementSpec> input_spec(bool with_labels) const override {
    ElementSpec spec;
    spec.features.push_back({kBaselineBatchInput, DType::Float32, {-1, 1}});
    if (!weightColumn_.empty())
      spec.features.push_back({weightColumn_, DType::Float32, {-1, 1}});
    if (with_labels)
      spec.labels = head_label_spec(*head_);
    return spec;
  }

  void transform_predictions(Features &predictions) const override {
    head_->complete_predictions(predictions);
  }

  std::optional<std::string> serving_config(const AddAssetFn &) const override {
    std::vector<std::string> ones;
    if (!weightColumn_.empty())
      ones.push_back(weightColumn_);
    return canned_serving_config("", ones, kBaselineBatchInput, head_.get());
  }

private:
  std::shared_ptr<const Head> head_;
  std::string weightColumn_;
};
} // namespace

CannedModel baseline_model(std::shared_ptr<const Head> head,
                           OptimizerSpec optimizer) {
  checkHead("BaselineEstimator", head);
  optimizer.get(0.3);
  ModelFn fn = [head, optimizer](const TensorMap &features,
                                 const Tensor &labels, ModeKeys mode,
                                 const Params &, const RunConfig &) {
    Graph &g = get_default_graph();
    Tensor logits;
    {
      Scope scope = g.name_scope("baseline");
      Variable bias =
          g.get_variable("bias", DType::Float32, {head->logits_dimension()},
                         zeros_initializer());
      // Every example gets the bias: [batch, 1] zeros + [d].
      logits = add(features.at(kBaselineBatchInput), g.read_variable(bias));
    }
    std::optional<train::Optimizer> opt;
    if (mode == ModeKeys::TRAIN)
      opt = optimizer.get(0.3);
    return head->create_estimator_spec(features, mode, logits, labels, opt);
  };
  CannedModel m;
  m.transform = std::make_shared<BaselineTransform>(head);
  m.head = std::move(head);
  m.model_fn = std::move(fn);
  return m;
}

} // namespace estimator
} // namespace estc
