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
#include "estimator/Input.h"

#include <memory>
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

  /// The compiled model, with `graph_fetches` (node names without the mode
  /// prefix) compiled as outputs "tensors/<name>" of `mode`'s function. The
  /// JIT recompiles when one is new (carrying the variables' values over);
  /// AOT models have only their outputs (std::invalid_argument).
  virtual rt::CompiledModel &
  model(ModeKeys mode, const std::vector<std::string> &graph_fetches) = 0;

  /// The compiled model as it is (prepare() first); null before.
  virtual rt::CompiledModel *current() = 0;

  virtual int compile_count() const { return 0; }

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
