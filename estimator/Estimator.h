//===- Estimator.h - tf.estimator.Estimator for compiled models ---------===//
//
// The Estimator runs a model's train / evaluate / predict loops around
// compiled step functions, with checkpoints, summaries, logging and hooks
// (estimator/SessionRunHook.h) as tf.estimator does. Two ways to get the
// compiled model, one interface:
//
//   JIT   Estimator(model_fn, config, params, warm_start_from)
//         calls model_fn for TRAIN, EVAL and PREDICT into one graph (the
//         placeholders from the first input_fn's element spec) and compiles
//         it in process (compiler/Driver/GraphCompiler.h). Compiled once per
//         Estimator: later train / evaluate / predict calls reuse it (and the
//         on-disk JIT cache makes a new process skip code generation). It
//         recompiles only when a hook's graph_fetches() asks for a tensor
//         not yet compiled as an output, or when the first call had no
//         labels (predict: PREDICT alone was built) and train or evaluate
//         follows; the variables keep their values. Link EstcEstimatorJit.
//
//   AOT   Estimator(std::make_unique<Mnist>(), config, warm_start_from)
//         runs a model estc compiled ahead of time (the class
//         estc_add_model generates; its graph, seed and input shapes are
//         fixed). A trainer using only this links EstcEstimator and the
//         runtime: no LLVM, no MLIR.
//
// Usage:
//   estimator::Estimator est(my_model_fn, estimator::RunConfig(o));
//   est.train(estimator::numpy_input_fn(x, y, {128, std::nullopt, true, 7}),
//             {.max_steps = 2000});
//   auto metrics = est.evaluate(eval_input_fn);      // {"accuracy", "loss",
//                                                    //  "global_step"}
//   est.evaluate(eval_input_fn, {.steps = 10, .name = "holdout"});
//
// The optional arguments are TF's keyword arguments, by the same names, in
// an options struct (TrainOptions, EvalOptions, ...) written with C++20
// designated initializers: {.steps = 10, .name = "holdout"} (the fields in
// declaration order; any may be left out).
//   for (const estimator::Prediction &p : est.predict(test_input_fn))
//     use(p.at("classes").values<int64_t>()[0]);
//
// Each call runs one MonitoredSession (estimator/MonitoredSession.h): hooks'
// begin(); restore the latest valid checkpoint of model_dir (a corrupt one
// is skipped with one warning line) or run the compiled @init and
// warm-start; hooks' after_create_session(); then per step: before_run,
// read a batch (none: stop, no after_run), run the compiled function,
// after_run; stop when a hook asks; hooks' end().
//
// train() installs, as TF's Estimator does, the hooks of estimator/Hooks.h
// that make up training (checkpoints and summaries on the chief only,
// RunConfig::is_chief()), in this order:
//   NanTensorHook("loss")      a NaN loss throws NanLossDuringTrainingError
//                              (first, unlike TF, so that a diverged step is
//                              never checkpointed)
//   CheckpointSaverHook        the state it starts from, then every
//                              save_checkpoints_steps / _secs, and the last
//                              step; keep_checkpoint_max, every_n_hours,
//                              checkpoint_format (TF's or safetensors); the
//                              saving listeners; none when a hook among the
//                              user's or the EstimatorSpec's is one (the
//                              listeners then go to it)
//   training_chief_hooks
//   StepCounterHook            "global_step/sec" every log_step_count_steps
//   SummarySaverHook           the "loss" scalar every save_summary_steps
//   the user's hooks
//   StopAtStepHook             steps / max_steps
//   LoggingTensorHook          "loss = 0.35, step = 200 (0.812 sec)" every
//                              log_step_count_steps
//   training_hooks
// and draws a progress bar on stderr when it is a terminal and the number
// of steps is known.
//
// Errors a user can cause (a wrong feature name, dtype or shape, an unknown
// predict key or fetch, steps and max_steps together, ...) throw
// std::invalid_argument with one line naming what is at fault; checkpoint
// problems throw train::CheckpointError.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_ESTIMATOR_ESTIMATOR_H
#define ESTC_ESTIMATOR_ESTIMATOR_H

#include "estimator/EstimatorSpec.h"
#include "estimator/Export.h"
#include "estimator/Input.h"
#include "estimator/RunConfig.h"
#include "estimator/SessionRunHook.h"
#include "estimator/WarmStart.h"
#include "lib/Checkpoint/Checkpoint.h"

#include <cstdint>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace estc {
namespace rt {
class CompiledModel;
} // namespace rt

namespace estimator {

class Estimator;

namespace detail {
class Backend;
class Runner;
/// train_and_evaluate on a ps task (Runner::serve_parameters).
void serveParameters(Estimator &estimator, const InputFn &input_fn);
} // namespace detail

/// CheckpointSaverListener (and ListenerPtr) are in SessionRunHook.h.
using Listeners = std::vector<ListenerPtr>;

/// evaluate()'s result: every metric, "loss" (TF's metrics.mean(loss): the
/// mean of the per-batch losses, each batch weighing one whatever its size,
/// in float32) and "global_step". A metric whose value
/// is not a scalar (the *_at_thresholds metrics, one value per threshold)
/// gives one result per element, "<name>/<i>" in row-major order (TF returns
/// an array; these are also the event-file scalar tags).
using EvalResults = std::map<std::string, double>;

/// One prediction: an example's (or with yield_single_examples = false, a
/// batch's) values by prediction key.
using Prediction = std::map<std::string, TensorValue>;

// The options structs: TF's keyword arguments by their names, for C++20
// designated initializers ({.steps = 10, .name = "holdout"}). Every member
// has a default member initializer, so that leaving members out does not
// warn (-Wmissing-field-initializers).

/// train()'s keyword arguments (tf.estimator.Estimator.train).
struct TrainOptions {
  Hooks hooks{};
  /// This many steps more than the latest checkpoint's global_step.
  std::optional<int64_t> steps{};
  /// Up to this global_step. Not both with `steps`.
  std::optional<int64_t> max_steps{};
  Listeners saving_listeners{};
};

/// evaluate()'s keyword arguments (tf.estimator.Estimator.evaluate).
struct EvalOptions {
  /// Batches to evaluate; unset: until the input runs out.
  std::optional<int64_t> steps{};
  Hooks hooks{};
  /// Default: the latest checkpoint.
  std::string checkpoint_path{};
  /// Results go to eval_dir(name).
  std::string name{};
};

/// evaluate_in_memory()'s: evaluate()'s but checkpoint_path (it reads none).
struct InMemoryEvalOptions {
  std::optional<int64_t> steps{};
  Hooks hooks{};
  std::string name{};
};

/// predict()'s keyword arguments (tf.estimator.Estimator.predict).
struct PredictOptions {
  /// A subset of the prediction keys; empty: all.
  std::vector<std::string> predict_keys{};
  Hooks hooks{};
  /// Default: the latest checkpoint.
  std::string checkpoint_path{};
  /// One element per example (batch dimension removed), or per batch.
  bool yield_single_examples = true;
};

/// export_saved_model()'s keyword arguments
/// (tf.estimator.Estimator.export_saved_model), and estc's `target`.
struct ExportOptions {
  /// Name in assets.extra/ -> source file.
  std::map<std::string, std::string> assets_extra{};
  /// saved_model.json indented for reading.
  bool as_text = false;
  /// Default: the latest checkpoint.
  std::string checkpoint_path{};
  /// PREDICT only (TRAIN and EVAL: std::invalid_argument).
  ModeKeys experimental_mode = ModeKeys::PREDICT;
  /// What model.so is compiled for.
  ExportTarget target{};
};

/// experimental_export_all_saved_models()'s: export_saved_model()'s but
/// experimental_mode (the modes are the map's keys).
struct ExportAllOptions {
  std::map<std::string, std::string> assets_extra{};
  bool as_text = false;
  std::string checkpoint_path{};
  ExportTarget target{};
};

class Estimator;

/// The lazy range predict() returns: each batch is read and run when the
/// iteration reaches it. Input iterator; iterate once. The Estimator must
/// outlive the range and not train or evaluate while it is iterated.
class Predictions {
public:
  class iterator {
  public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Prediction;
    using difference_type = std::ptrdiff_t;
    using pointer = const Prediction *;
    using reference = const Prediction &;

    iterator() = default;
    reference operator*() const;
    pointer operator->() const { return &**this; }
    iterator &operator++();
    /// Only comparisons with end() are meaningful.
    bool operator==(const iterator &other) const;
    bool operator!=(const iterator &other) const { return !(*this == other); }

  private:
    friend class Predictions;
    explicit iterator(Predictions *range) : range_(range) {}
    Predictions *range_ = nullptr;
  };

  Predictions(Predictions &&) noexcept;
  Predictions &operator=(Predictions &&) noexcept;
  ~Predictions();

  /// Starts the predict loop on the first call (hooks' begin, restore,
  /// after_create_session) and reads the first batch.
  iterator begin();
  iterator end() { return iterator(); }

private:
  friend class Estimator;
  struct State;
  explicit Predictions(std::unique_ptr<State> state);
  bool advance(); // false at the end
  std::unique_ptr<State> state_;
};

class Estimator {
public:
  /// JIT: compiles what `model_fn` builds (defined in EstcEstimatorJit).
  Estimator(ModelFn model_fn, RunConfig config = RunConfig(),
            Params params = {},
            std::optional<WarmStartSettings> warm_start_from = {});
  /// AOT: runs a model compiled by estc (the generated class). The model's
  /// graph seed is the one it was compiled with.
  explicit Estimator(std::unique_ptr<rt::CompiledModel> model,
                     RunConfig config = RunConfig(),
                     std::optional<WarmStartSettings> warm_start_from = {});
  /// Virtual: the canned estimators (estimator/Canned/Estimators.h) are
  /// Estimators, deleted through an Estimator pointer too.
  virtual ~Estimator();
  Estimator(const Estimator &) = delete;
  Estimator &operator=(const Estimator &) = delete;

  /// Trains (options: TrainOptions): `steps` more steps than the latest
  /// checkpoint's global_step, or up to global_step `max_steps` (nothing to
  /// do, with one log line, when the latest checkpoint is already there),
  /// or, with neither, until the input runs out or a hook requests a stop.
  /// Both: an error. `saving_listeners` are called around each checkpoint
  /// of the CheckpointSaverHook (the first among `hooks` and the
  /// EstimatorSpec's, which keeps them, as TF's does; else the built-in
  /// one); with neither that hook nor RunConfig checkpoints:
  /// std::invalid_argument. A NaN loss throws NanLossDuringTrainingError
  /// (Hooks.h).
  ///   est.train(input_fn, {.max_steps = 2000});
  Estimator &train(const InputFn &input_fn, const TrainOptions &options = {});

  /// Evaluates `checkpoint_path` (default: the latest checkpoint; none: the
  /// initialized model, with a log line) on `steps` batches (default: until
  /// the input runs out). The metrics' local state is reset first. Results
  /// are logged and written as event-file scalars under eval_dir(name).
  ///   est.evaluate(input_fn, {.steps = 10, .name = "holdout"});
  EvalResults evaluate(const InputFn &input_fn,
                       const EvalOptions &options = {});

  /// As evaluate(), on the variables as they are in memory now (no
  /// checkpoint read): from a hook inside train(), the training variables
  /// of this very step. For in-memory evaluator hooks.
  EvalResults evaluate_in_memory(const InputFn &input_fn,
                                 const InMemoryEvalOptions &options = {});

  /// Predictions, lazily: a range whose iteration reads and runs one batch
  /// at a time. `predict_keys`: a subset of the prediction keys (default
  /// all; an unknown key is an error, thrown here). `yield_single_examples`:
  /// one element per example (batch dimension removed) or per batch.
  ///   est.predict(input_fn, {.predict_keys = {"classes"}});
  Predictions predict(const InputFn &input_fn,
                      const PredictOptions &options = {});

  /// Installs the model's host half (estimator/Input.h): applied to every
  /// element of every input_fn from the next call on, and to predictions.
  /// Canned estimators install their feature columns' and head's; a custom
  /// model_fn over feature columns installs
  /// feature_column::make_host_transform(columns).
  void set_host_transform(std::shared_ptr<const HostTransform> transform);
  /// The installed host transform, or null.
  const HostTransform *host_transform() const;

  /// tf.estimator.Estimator.export_saved_model: writes the serving model
  /// of `checkpoint_path` (default: the latest checkpoint; none:
  /// std::invalid_argument) to export_dir_base/<timestamp>/ (written in a
  /// temporary folder and renamed when complete) and returns that path:
  /// the PREDICT function of model_fn on the receiver's features (through
  /// the host transform) compiled for `target` into model.so, the
  /// variables it reads, the signatures of export_outputs, the host
  /// transform and its vocabulary files (assets/), `assets_extra` (name in
  /// assets.extra/ -> source file) and saved_model.json
  /// (docs/design/saved-model.md). `as_text`: saved_model.json indented
  /// for reading (it is JSON either way). `experimental_mode`: PREDICT
  /// (TRAIN and EVAL are std::invalid_argument). Needs the model_fn (a JIT
  /// Estimator): an AOT Estimator throws std::invalid_argument. Loaded by
  /// serving::SavedModel (runtime/serving/SavedModel.h).
  ///   est.export_saved_model(dir, receiver_fn, {.as_text = true});
  std::string
  export_saved_model(const std::string &export_dir_base,
                     const ServingInputReceiverFn &serving_input_receiver_fn,
                     const ExportOptions &options = {});

  /// tf.estimator.Estimator.experimental_export_all_saved_models. estc
  /// exports the PREDICT mode (the serving model); TRAIN and EVAL in the
  /// map are std::invalid_argument, one line (their artifact is the
  /// checkpoint plus the model_fn). Returns export_saved_model's folder.
  std::string experimental_export_all_saved_models(
      const std::string &export_dir_base,
      const std::map<ModeKeys, ServingInputReceiverFn> &input_receiver_fn_map,
      const ExportAllOptions &options = {});

  /// The latest valid checkpoint's prefix in model_dir, or nullopt.
  std::optional<std::string> latest_checkpoint() const;
  /// The variables of the latest checkpoint (sorted by name), and one's
  /// value; std::invalid_argument when there is no checkpoint, or the name
  /// is not in it.
  std::vector<std::string> get_variable_names() const;
  TensorValue get_variable_value(const std::string &name) const;

  const std::string &model_dir() const { return config_.model_dir(); }
  /// model_dir/eval, or model_dir/eval_<name>.
  std::string eval_dir(const std::string &name = "") const;
  const RunConfig &config() const { return config_; }
  const Params &params() const { return params_; }

  /// How many times this Estimator compiled its model (JIT; 0 for AOT):
  /// the JIT cache's witness.
  int compile_count() const;

protected:
  /// train and evaluate take elements without labels too: model_fn reads
  /// its labels from the features whose key starts with `prefix`, which
  /// predict does not take (model_to_estimator's models with several
  /// outputs, estimator/KerasEstimator.h: "labels/"). JIT Estimators only.
  void set_labels_in_features(const std::string &prefix);

private:
  friend class Predictions;
  friend void detail::serveParameters(Estimator &estimator,
                                      const InputFn &input_fn);
  Estimator(std::unique_ptr<detail::Backend> backend, RunConfig config,
            Params params, std::optional<WarmStartSettings> warm_start_from);

  RunConfig config_;
  Params params_;
  std::optional<WarmStartSettings> warmStart_;
  std::unique_ptr<detail::Backend> backend_;
  std::unique_ptr<detail::Runner> runner_;
};

} // namespace estimator
} // namespace estc

#endif // ESTC_ESTIMATOR_ESTIMATOR_H
