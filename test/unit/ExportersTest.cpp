//===- ExportersTest.cpp - LatestExporter, BestExporter, FinalExporter --===//
//
// The exporters of estimator/Exporters.h under train_and_evaluate with the
// real JIT Estimator (the tiny classifier of TinyClassifier.h): every test
// runs real exports and checks the folders on disk — which export versions
// exist, which checkpoint each one holds (saved_model.json's global_step),
// what train_and_evaluate returned — against TF 2.15's rules: LatestExporter
// exports after every evaluation and keeps the newest exports_to_keep;
// BestExporter exports on its first call, then only better evaluations, and
// reads the best so far from the event files of a model_dir it has not seen;
// FinalExporter only when the evaluation reached max_steps.
//
//===----------------------------------------------------------------------===//

#include "TinyClassifier.h"

#include "estimator/Estimator.h"
#include "estimator/Export.h"
#include "estimator/Exporters.h"
#include "estimator/Logging.h"
#include "estimator/Training.h"
#include "lib/Summary/Summary.h"
#include "lib/Support/FileIO.h"

#include <gtest/gtest.h>
#include <rapidjson/document.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

namespace estc {
namespace estimator {
namespace {

namespace fs = std::filesystem;

using namespace tiny;

// The JIT cache is the user's (ESTC_CACHE_DIR or ~/.cache/estc): ctest runs
// every case in a process of its own, all compiling the same model.

ServingInputReceiverFn rawReceiver() {
  return build_raw_serving_input_receiver_fn(
      {TensorSpec{"x", DType::Float32, {-1, 4}}});
}

/// makeData(n, 2) with every label moved to the next class: a model that
/// learns the true classes gets a high loss on it.
InputFn wrongLabelsInput(int64_t n = 128, int64_t batch = 64) {
  Data d = makeData(n, 2);
  std::vector<int64_t> ys(n);
  for (int64_t i = 0; i < n; ++i)
    ys[i] = (static_cast<int64_t>(d.y.element(i)) + 1) % 3;
  return numpy_input_fn(d.x, TensorValue::of<int64_t>({n}, ys),
                        {batch, 1, false, 0});
}

/// Calls `fns` in turn, one per evaluation.
InputFn inTurn(std::vector<InputFn> fns) {
  auto calls = std::make_shared<size_t>(0);
  return [fns, calls] { return fns[(*calls)++ % fns.size()](); };
}

class ExportersTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("estc-exporters-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override {
    SummaryWriterCache::clear();
    fs::remove_all(dir_);
  }
  RunConfig config(const std::string &name = "model") {
    RunConfigOptions o;
    o.model_dir = (dir_ / name).string();
    o.tf_random_seed = 42;
    o.save_checkpoints_steps = 10;
    o.log_step_count_steps = 100;
    o.save_summary_steps = 0;
    return RunConfig::from_tf_config("", o);
  }
  EvalSpec evalSpec(std::vector<ExporterPtr> exporters,
                    InputFn input = evalInput(128)) {
    EvalSpec e;
    e.input_fn = std::move(input);
    e.steps = 2;
    e.throttle_secs = 0;
    e.exporters = std::move(exporters);
    return e;
  }
  /// The export versions (10-digit folder names) in `base`, ascending.
  static std::vector<std::string> versions(const fs::path &base) {
    std::vector<std::string> out;
    if (!fs::exists(base))
      return out;
    for (const auto &entry : fs::directory_iterator(base)) {
      std::string name = entry.path().filename().string();
      if (name.size() == 10 &&
          name.find_first_not_of("0123456789") == std::string::npos)
        out.push_back(name);
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  /// The global step of the checkpoint an export holds (saved_model.json).
  static int64_t stepOf(const fs::path &exportDir) {
    std::ifstream in(exportDir / "saved_model.json");
    std::stringstream text;
    text << in.rdbuf();
    rapidjson::Document doc;
    doc.Parse(text.str().c_str());
    if (doc.HasParseError() || !doc.IsObject() || !doc.HasMember("global_step"))
      return -1;
    return doc["global_step"].GetInt64();
  }
  /// The global steps of the exports in `base`, in version order.
  static std::vector<int64_t> exportedSteps(const fs::path &base) {
    std::vector<int64_t> steps;
    for (const std::string &v : versions(base))
      steps.push_back(stepOf(base / v));
    return steps;
  }
  /// The evaluations' losses in `evalDir`, by global step.
  static std::map<int64_t, double> losses(const std::string &evalDir) {
    std::map<int64_t, double> out;
    for (const std::string &file : summary::list_event_files(evalDir))
      for (const summary::Event &event : summary::read_events(file))
        for (const auto &value : event.summary().value())
          if (value.tag() == "loss")
            out[event.step()] = value.simple_value();
    return out;
  }

  fs::path dir_;
  std::vector<std::string> logs_;
  ScopedLogSink sink_{[this](const std::string &l) { logs_.push_back(l); }};
};

//===----------------------------------------------------------------------===//
// LatestExporter
//===----------------------------------------------------------------------===//

TEST_F(ExportersTest, LatestExporterExportsEveryEvaluationAndKeepsTheNewest) {
  Estimator est(classifier_fn, config());
  fs::path base = fs::path(est.model_dir()) / "export" / "latest";
  // What was there before: an old version (GC'd with the others), and
  // names that are not versions (never touched).
  fs::create_directories(base / "0000000001");
  fs::create_directories(base / "123");
  fs::create_directories(base / "temp-1234567890");
  std::ofstream(base / "notes.txt") << "kept";
  auto latest = std::make_shared<LatestExporter>(
      "latest", rawReceiver(), std::map<std::string, std::string>{}, false, 2);
  auto [result, exports] =
      train_and_evaluate(est, TrainSpec{trainInput(), 40}, evalSpec({latest}));
  EXPECT_EQ(result.at("global_step"), 40);
  // Evaluations at 10, 20, 30, 40: four exports, the newest two kept.
  std::vector<std::string> kept = versions(base);
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(exportedSteps(base), (std::vector<int64_t>{30, 40}));
  EXPECT_EQ(exports, std::vector<std::string>{(base / kept[1]).string()});
  EXPECT_TRUE(fs::exists(base / "123"));
  EXPECT_TRUE(fs::exists(base / "temp-1234567890"));
  EXPECT_TRUE(fs::exists(base / "notes.txt"));
}

TEST_F(ExportersTest, LatestExporterExportsWithinOneSecondKeepTheNewest) {
  // An evaluation every step: several exports in one second get the next
  // free seconds as versions; after garbage collection the newest export
  // must still be the one kept (versions grow with every export).
  RunConfigOptions every;
  every.save_checkpoints_steps = 1;
  Estimator est(classifier_fn, config().replace(every));
  auto latest = std::make_shared<LatestExporter>(
      "latest", rawReceiver(), std::map<std::string, std::string>{}, false, 1);
  EvalSpec eval = evalSpec({latest});
  eval.steps = 1;
  auto [result, exports] =
      train_and_evaluate(est, TrainSpec{trainInput(), 6}, eval);
  fs::path base = fs::path(est.model_dir()) / "export" / "latest";
  EXPECT_EQ(exportedSteps(base), std::vector<int64_t>{6});
  ASSERT_EQ(exports.size(), 1u);
  EXPECT_TRUE(fs::exists(fs::path(exports[0]) / "saved_model.json"))
      << exports[0];
}

TEST_F(ExportersTest, LatestExporterWithoutExportsToKeepKeepsAll) {
  Estimator est(classifier_fn, config());
  auto latest = std::make_shared<LatestExporter>(
      "all", rawReceiver(), std::map<std::string, std::string>{}, false,
      std::nullopt);
  train_and_evaluate(est, TrainSpec{trainInput(), 40}, evalSpec({latest}));
  EXPECT_EQ(exportedSteps(fs::path(est.model_dir()) / "export" / "all"),
            (std::vector<int64_t>{10, 20, 30, 40}));
}

//===----------------------------------------------------------------------===//
// BestExporter
//===----------------------------------------------------------------------===//

TEST_F(ExportersTest, BestExporterSkipsWorseEvaluations) {
  Estimator est(classifier_fn, config());
  fs::path base = fs::path(est.model_dir()) / "export" / "best_exporter";
  auto best = std::make_shared<BestExporter>("best_exporter", rawReceiver());
  // Evaluations alternate between the true labels and wrong ones: the
  // wrong ones (20, 40) have a higher loss than any true one.
  EvalSpec eval =
      evalSpec({best}, inTurn({evalInput(128), wrongLabelsInput(),
                               evalInput(128), wrongLabelsInput()}));
  auto [result, exports] =
      train_and_evaluate(est, TrainSpec{trainInput(), 40}, eval);
  std::map<int64_t, double> loss = losses(est.eval_dir());
  ASSERT_EQ(loss.size(), 4u);
  ASSERT_LT(loss[30], loss[10]); // it learned
  ASSERT_GT(loss[20], loss[10]);
  ASSERT_GT(loss[40], loss[30]);
  EXPECT_EQ(exportedSteps(base), (std::vector<int64_t>{10, 30}));
  // The last evaluation exported nothing.
  EXPECT_EQ(exports, std::vector<std::string>{""});
  int performed = 0;
  for (const std::string &l : logs_)
    performed += l == "Performing best model export.";
  EXPECT_EQ(performed, 2);
}

TEST_F(ExportersTest, BestExporterGarbageCollectsAsLatestExporter) {
  Estimator est(classifier_fn, config());
  auto best = std::make_shared<BestExporter>(
      "best", rawReceiver(), "eval/*.tfevents.*", loss_smaller,
      std::map<std::string, std::string>{}, false, 1);
  auto [result, exports] =
      train_and_evaluate(est, TrainSpec{trainInput(), 40}, evalSpec({best}));
  fs::path base = fs::path(est.model_dir()) / "export" / "best";
  std::map<int64_t, double> loss = losses(est.eval_dir());
  // Which evaluations beat every earlier one, by TF's rule.
  int64_t lastBest = 10;
  for (const auto &[step, value] : loss)
    if (value < loss[lastBest])
      lastBest = step;
  EXPECT_EQ(exportedSteps(base), std::vector<int64_t>{lastBest});
  EXPECT_EQ(exports.size(), 1u);
}

TEST_F(ExportersTest, BestExporterRestartedExportsItsFirstEvaluation) {
  // A first job: the best evaluation so far is at step 10 or later.
  {
    Estimator est(classifier_fn, config());
    auto best = std::make_shared<BestExporter>("best", rawReceiver());
    train_and_evaluate(est, TrainSpec{trainInput(), 20}, evalSpec({best}));
  }
  SummaryWriterCache::clear();
  fs::path base = dir_ / "model" / "export" / "best";
  std::vector<std::string> before = versions(base);
  ASSERT_FALSE(before.empty());
  // The restarted job evaluates worse models (wrong labels) at 30 and 40.
  // As TF 2.15, a new BestExporter exports its first evaluation whatever
  // the event files say (there is always an export from this job), then
  // compares with it.
  Estimator est(classifier_fn, config());
  auto best = std::make_shared<BestExporter>("best", rawReceiver());
  EvalSpec eval =
      evalSpec({best}, inTurn({wrongLabelsInput(), evalInput(128)}));
  train_and_evaluate(est, TrainSpec{trainInput(), 40}, eval);
  std::map<int64_t, double> loss = losses(est.eval_dir());
  ASSERT_GT(loss[30], loss[20]);
  ASSERT_LT(loss[40], loss[30]);
  bool loaded = false;
  for (const std::string &l : logs_)
    loaded |= l == "Loading best metric from event files.";
  EXPECT_TRUE(loaded);
  std::vector<int64_t> expected;
  for (const std::string &v : before)
    expected.push_back(stepOf(base / v));
  expected.push_back(30); // worse than the first job's best
  expected.push_back(40); // better than 30
  EXPECT_EQ(exportedSteps(base), expected);
}

TEST_F(ExportersTest, BestExporterReadsTheEventFilesOfANewModelDir) {
  // Estimator `b` has been evaluated before (10, 20), on the true labels.
  {
    Estimator b(classifier_fn, config("b"));
    train_and_evaluate(b, TrainSpec{trainInput(), 20},
                       evalSpec({}, evalInput(128)));
  }
  SummaryWriterCache::clear();
  // One exporter exports for `a`, then for `b`: b's model_dir is new to it,
  // so b's event files set the bar, and b's evaluation on wrong labels is
  // not exported; the next better one is.
  auto best = std::make_shared<BestExporter>("best", rawReceiver());
  Estimator a(classifier_fn, config("a"));
  train_and_evaluate(a, TrainSpec{trainInput(), 10}, evalSpec({best}));
  EXPECT_EQ(exportedSteps(dir_ / "a" / "export" / "best"),
            std::vector<int64_t>{10});
  Estimator b(classifier_fn, config("b"));
  std::string bEval = b.eval_dir();
  auto [result, exports] = train_and_evaluate(
      b, TrainSpec{trainInput(), 40},
      evalSpec({best}, inTurn({wrongLabelsInput(), evalInput(128)})));
  std::map<int64_t, double> loss = losses(bEval);
  ASSERT_EQ(loss.size(), 4u);
  ASSERT_GT(loss[30], loss[20]); // 30: wrong labels
  // 30 is worse than b's best (10, 20): not exported; 40 beats it (the
  // tiny model still learns).
  ASSERT_LT(loss[40], std::min(loss[10], loss[20]));
  EXPECT_EQ(exportedSteps(dir_ / "b" / "export" / "best"),
            std::vector<int64_t>{40});
  EXPECT_EQ(exports.size(), 1u);
  EXPECT_FALSE(exports[0].empty());
}

TEST_F(ExportersTest, BestExporterEventFileWithoutLossIsAnError) {
  // An evaluation event without "loss" in the eval folder: TF's
  // _loss_smaller raises while reading the best result back.
  Estimator est(classifier_fn, config());
  {
    summary::SummaryWriter w(est.eval_dir());
    w.add_scalars({{"loss", 0.5}, {"accuracy", 0.5}}, 5);
    w.add_scalars({{"accuracy", 0.75}}, 6);
  }
  auto best = std::make_shared<BestExporter>("best", rawReceiver());
  EXPECT_EQ(errorOf([&] {
              train_and_evaluate(est, TrainSpec{trainInput(), 10},
                                 evalSpec({best}));
            }),
            "current_eval_result cannot be empty or no loss is found in it.");
  // Without an event_file_pattern nothing is read: it exports.
  auto noEvents = std::make_shared<BestExporter>("best", rawReceiver(), "");
  train_and_evaluate(est, TrainSpec{trainInput(), 20}, evalSpec({noEvents}));
  EXPECT_EQ(exportedSteps(fs::path(est.model_dir()) / "export" / "best"),
            std::vector<int64_t>{20});
}

TEST_F(ExportersTest, BestExporterCustomCompareFn) {
  // Higher loss is "better": every evaluation after the first that raises
  // the loss is exported.
  Estimator est(classifier_fn, config());
  auto best = std::make_shared<BestExporter>(
      "worst", rawReceiver(), "eval/*.tfevents.*",
      [](const EvalResults &best_eval_result,
         const EvalResults &current_eval_result) {
        return current_eval_result.at("loss") > best_eval_result.at("loss");
      },
      std::map<std::string, std::string>{}, false, std::nullopt);
  EvalSpec eval =
      evalSpec({best}, inTurn({evalInput(128), wrongLabelsInput()}));
  train_and_evaluate(est, TrainSpec{trainInput(), 40}, eval);
  std::map<int64_t, double> loss = losses(est.eval_dir());
  std::vector<int64_t> expected = {10};
  double top = loss[10];
  for (const auto &[step, value] : loss)
    if (value > top) {
      top = value;
      expected.push_back(step);
    }
  EXPECT_GE(expected.size(), 2u); // 20, wrong labels, beats 10
  EXPECT_EQ(exportedSteps(fs::path(est.model_dir()) / "export" / "worst"),
            expected);
}

//===----------------------------------------------------------------------===//
// FinalExporter
//===----------------------------------------------------------------------===//

TEST_F(ExportersTest, FinalExporterOnlyAtMaxSteps) {
  Estimator est(classifier_fn, config());
  auto latest = std::make_shared<LatestExporter>("latest", rawReceiver());
  auto finalExporter = std::make_shared<FinalExporter>("final", rawReceiver());
  auto [result, exports] = train_and_evaluate(
      est, TrainSpec{trainInput(), 40}, evalSpec({latest, finalExporter}));
  fs::path base = fs::path(est.model_dir()) / "export";
  EXPECT_EQ(exportedSteps(base / "latest"),
            (std::vector<int64_t>{10, 20, 30, 40}));
  std::vector<std::string> finals = versions(base / "final");
  ASSERT_EQ(finals.size(), 1u);
  EXPECT_EQ(stepOf(base / "final" / finals[0]), 40);
  // TF's export_results: the last evaluation's, in EvalSpec order.
  std::vector<std::string> latests = versions(base / "latest");
  EXPECT_EQ(exports, (std::vector<std::string>{
                         (base / "latest" / latests.back()).string(),
                         (base / "final" / finals[0]).string()}));
}

TEST_F(ExportersTest, FinalExporterNeverExportsWithoutMaxSteps) {
  // TF: is_the_final_export is always false when TrainSpec.max_steps is
  // None, even at the end of the input.
  Estimator est(classifier_fn, config());
  auto finalExporter = std::make_shared<FinalExporter>("final", rawReceiver());
  auto [result, exports] = train_and_evaluate(
      est, TrainSpec{trainInput(256, 32, 2)}, evalSpec({finalExporter}));
  EXPECT_EQ(result.at("global_step"), 16);
  EXPECT_EQ(exports, std::vector<std::string>{""});
  EXPECT_FALSE(fs::exists(fs::path(est.model_dir()) / "export" / "final"));
}

TEST_F(ExportersTest, EveryNStepsExportsOnceAtTheEnd) {
  Estimator est(classifier_fn, config());
  auto latest = std::make_shared<LatestExporter>("latest", rawReceiver());
  auto finalExporter = std::make_shared<FinalExporter>("final", rawReceiver());
  EvalSpec eval = evalSpec({latest, finalExporter});
  eval.every_n_steps = 15;
  auto [result, exports] =
      train_and_evaluate(est, TrainSpec{trainInput(), 40}, eval);
  fs::path base = fs::path(est.model_dir()) / "export";
  EXPECT_EQ(exportedSteps(base / "latest"), std::vector<int64_t>{40});
  EXPECT_EQ(exportedSteps(base / "final"), std::vector<int64_t>{40});
  EXPECT_EQ(exports.size(), 2u);
}

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

TEST_F(ExportersTest, BadArgumentsAreOneLine) {
  using Assets = std::map<std::string, std::string>;
  EXPECT_EQ(
      errorOf([] { LatestExporter("l", rawReceiver(), Assets{}, false, 0); }),
      "LatestExporter: `exports_to_keep`, if provided, must be positive "
      "number, got 0");
  EXPECT_EQ(
      errorOf([] { LatestExporter("l", rawReceiver(), Assets{}, false, -3); }),
      "LatestExporter: `exports_to_keep`, if provided, must be positive "
      "number, got -3");
  EXPECT_EQ(errorOf([] { LatestExporter("l", nullptr); }),
            "LatestExporter: serving_input_receiver_fn is empty");
  EXPECT_EQ(errorOf([] {
              BestExporter("b", rawReceiver(), "eval/*", loss_smaller, Assets{},
                           false, 0);
            }),
            "BestExporter: `exports_to_keep`, if provided, must be a positive "
            "number. Got 0");
  EXPECT_EQ(
      errorOf([] { BestExporter("b", rawReceiver(), "eval/*", nullptr); }),
      "BestExporter: `compare_fn` must not be None.");
  EXPECT_EQ(errorOf([] { BestExporter(); }),
            "BestExporter: serving_input_receiver_fn is empty");
  EXPECT_EQ(errorOf([] { FinalExporter("f", nullptr); }),
            "FinalExporter: serving_input_receiver_fn is empty");
  EXPECT_EQ(errorOf([] { loss_smaller({{"accuracy", 1}}, {{"loss", 1}}); }),
            "best_eval_result cannot be empty or no loss is found in it.");
  EXPECT_EQ(errorOf([] { loss_smaller({{"loss", 1}}, {}); }),
            "current_eval_result cannot be empty or no loss is found in it.");
  EXPECT_TRUE(loss_smaller({{"loss", 2}}, {{"loss", 1}}));
  EXPECT_FALSE(loss_smaller({{"loss", 1}}, {{"loss", 1}}));

  // Names are checked by train_and_evaluate, as TF's EvalSpec does.
  Estimator est(classifier_fn, config());
  auto unnamed = std::make_shared<LatestExporter>("", rawReceiver());
  auto named = std::make_shared<FinalExporter>("f", rawReceiver());
  EXPECT_EQ(errorOf([&] {
              train_and_evaluate(est, TrainSpec{trainInput(), 10},
                                 evalSpec({named, unnamed}));
            }),
            "train_and_evaluate: An Exporter cannot have a name that is "
            "`None` or empty. All exporter names: ['f', '']");
  auto slash = std::make_shared<LatestExporter>("a/b", rawReceiver());
  EXPECT_EQ(errorOf([&] {
              train_and_evaluate(est, TrainSpec{trainInput(), 10},
                                 evalSpec({slash}));
            }),
            "train_and_evaluate: exporter name 'a/b' must be a directory name");
  EXPECT_FALSE(fs::exists(dir_ / "model" / "checkpoint")); // nothing ran
}

} // namespace
} // namespace estimator
} // namespace estc
