//===- EstimatorBackend.h - Where an Estimator's compiled model comes from
//
// Internal to the Estimator (estimator/Estimator.h). A Backend owns the
// compiled model the loops run: the AOT backend one generated class, the JIT
// backend (EstcEstimatorJit) the graph model_fn builds, compiled in process.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_ESTIMATOR_ESTIMATORBACKEND_H
#define ESTC_ESTIMATOR_ESTIMATORBACKEND_H

#include "estimator/EstimatorSpec.h"
#include "estimator/Export.h"
#include "estimator/Input.h"

#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace estc {
namespace rt {
class CompiledModel;
} // namespace rt

namespace estimator {
namespace detail {

/// Makes `graph` the default graph (get_default_graph()) while it lives.
class DefaultGraphScope {
public:
  explicit DefaultGraphScope(Graph &graph);
  ~DefaultGraphScope();
  DefaultGraphScope(const DefaultGraphScope &) = delete;
  DefaultGraphScope &operator=(const DefaultGraphScope &) = delete;

private:
  Graph *previous_;
};

/// The serving function of an export, compiled ahead of time
/// (Backend::compile_serving).
struct ServingCode {
  /// Position-independent object defining
  /// `<kServingModelName>_<function>_packed`.
  std::string object;
  /// The compiled model's manifest (compiler/Target/Manifest.h's JSON).
  std::string manifest_json;
  /// "predict" (or "eval").
  std::string function;
  /// What the code was generated for (LLVM names; features sorted).
  std::string triple, cpu;
  std::vector<std::string> features;
  /// model_fn's export outputs, each output alias mapped to the compiled
  /// output key holding it ("predictions/probabilities", ...).
  std::map<std::string, ExportOutput::Kind> output_kinds;
  std::map<std::string, std::map<std::string, std::string>> output_sources;
  /// Every prediction key (PredictOutput of the predictions, TF's default
  /// when model_fn gives no export_outputs).
  std::vector<std::string> prediction_keys;
  /// The spec's scaffold.saver_var_list (checkpoint name -> variable): the
  /// export reads these variables from their checkpoint names.
  std::map<std::string, std::string> saver_var_list;
};

/// The symbol prefix of an exported model's entry points.
constexpr const char *kServingModelName = "estc_saved_model";

class Backend {
public:
  virtual ~Backend() = default;

  /// Makes the model able to run `mode` on inputs of `spec` (the JIT builds
  /// its graph from the first spec it sees: all modes when the spec has
  /// labels, else PREDICT alone until one does). Throws what model_fn or
  /// the spec validation throws.
  virtual void prepare(ModeKeys mode, const ElementSpec &spec) = 0;

  /// The EstimatorSpec model_fn returned for `mode` (for its hooks); null
  /// for AOT models or a mode not built.
  virtual const EstimatorSpec *spec(ModeKeys mode) const {
    (void)mode;
    return nullptr;
  }

  /// The summaries model_fn defined for `mode` (lib/Graph/Summaries.h),
  /// which the model's `train_summaries` computes; none for AOT models.
  virtual std::vector<graph::SummaryDef> summaries(ModeKeys mode) const {
    (void)mode;
    return {};
  }

  /// The compiled model, with `graph_fetches` (node names without the mode
  /// prefix) compiled as outputs "tensors/<name>" of `mode`'s function. The
  /// JIT recompiles when one is new (carrying the variables' values over);
  /// AOT models have only their outputs (std::invalid_argument).
  virtual rt::CompiledModel &
  model(ModeKeys mode, const std::vector<std::string> &graph_fetches) = 0;

  /// The compiled model as it is (prepare() first); null before.
  virtual rt::CompiledModel *current() = 0;

  virtual int compile_count() const { return 0; }

  /// Labels as features: train and evaluate without labels too, model_fn
  /// taking its labels from the features whose key starts with `prefix`
  /// (model_to_estimator's models with several outputs: "labels/"), which
  /// PREDICT does not take. The JIT then builds every mode from the first
  /// TRAIN or EVAL spec; AOT models ignore it.
  virtual void set_labels_in_features(const std::string &prefix) {
    (void)prefix;
  }

  /// Compiles `mode`'s function (PREDICT) of model_fn on `inputs` for
  /// `target` into an object (export_saved_model). AOT backends have no
  /// model_fn: std::invalid_argument.
  virtual ServingCode compile_serving(ModeKeys mode, const InputSpec &inputs,
                                      const ExportTarget &target) {
    (void)mode, (void)inputs, (void)target;
    throw std::invalid_argument(
        "Estimator.export_saved_model: needs the model_fn (an Estimator "
        "built from model_fn, a JIT Estimator); this one runs a model "
        "compiled ahead of time");
  }

  /// The Estimator's config and params (model_fn gets them); set before any
  /// other call.
  void bind(const RunConfig &config, const Params &params) {
    config_ = &config;
    params_ = &params;
  }
  /// While set (during train()), model() must not recompile: the loop holds
  /// the model.
  bool locked = false;

protected:
  const RunConfig *config_ = nullptr;
  const Params *params_ = nullptr;
};

std::unique_ptr<Backend>
makeAotBackend(std::unique_ptr<rt::CompiledModel> model);
/// Defined in EstcEstimatorJit.
std::unique_ptr<Backend> makeJitBackend(ModelFn model_fn);

} // namespace detail
} // namespace estimator
} // namespace estc

#endif // ESTC_ESTIMATOR_ESTIMATORBACKEND_H
