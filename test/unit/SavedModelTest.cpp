//===- SavedModelTest.cpp - export_saved_model -> SavedModel::load -> run ===//
//
// Real exports (a custom model_fn with a raw receiver, a LinearClassifier
// with a parsing receiver and a raw alternative), loaded by
// serving::SavedModel and run: outputs equal to Estimator::predict,
// signatures as TF builds them, concurrent callers, and every refusal of a
// bad export or a bad request as one line.
//
//===----------------------------------------------------------------------===//

#include "runtime/serving/SavedModel.h"
#include "lib/Support/FileIO.h"
#include "test/serving/TestExports.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <thread>

namespace estc {
namespace serving_test {
namespace {

namespace fs = std::filesystem;
using serving::SavedModel;
using tiny::errorOf;

// The JIT cache is the user's (ESTC_CACHE_DIR or ~/.cache/estc), not one
// per process: ctest runs every case in a process of its own, and each
// exports the same two models, so all but the first hit the cache.

/// One folder for the whole suite: the exports are made once.
class SavedModelTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    root_ = fs::temp_directory_path() /
            ("estc-savedmodel-test-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    tinyExport_ = export_tiny((root_ / "tiny_model").string(),
                              (root_ / "tiny").string(), tiny_);
    linearExport_ = export_linear((root_ / "linear_model").string(),
                                  (root_ / "linear").string(), linear_);
  }
  static void TearDownTestSuite() {
    tiny_.reset();
    linear_.reset();
    if (!std::getenv("ESTC_KEEP_TEST_EXPORTS"))
      fs::remove_all(root_);
  }

  /// A copy of an export to break.
  static std::string copyOf(const std::string &exported,
                            const std::string &name) {
    fs::path to = root_ / name;
    fs::remove_all(to);
    fs::copy(exported, to, fs::copy_options::recursive);
    return to.string();
  }
  static void edit(const std::string &dir, const std::string &from,
                   const std::string &to) {
    std::string path = dir + "/saved_model.json";
    std::string text = fileio::readFile(path);
    size_t at = text.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    text.replace(at, from.size(), to);
    std::ofstream(path, std::ios::trunc) << text;
  }

  static fs::path root_;
  static std::unique_ptr<Estimator> tiny_, linear_;
  static std::string tinyExport_, linearExport_;
};
fs::path SavedModelTest::root_;
std::unique_ptr<Estimator> SavedModelTest::tiny_, SavedModelTest::linear_;
std::string SavedModelTest::tinyExport_, SavedModelTest::linearExport_;

template <typename M> std::vector<std::string> keysOf(const M &m) {
  std::vector<std::string> out;
  for (const auto &[k, v] : m)
    out.push_back(k);
  return out;
}

TEST_F(SavedModelTest, ExportFolderLayout) {
  fs::path dir(tinyExport_);
  EXPECT_EQ(dir.parent_path(), root_ / "tiny");
  std::string name = dir.filename().string();
  EXPECT_TRUE(std::all_of(name.begin(), name.end(), ::isdigit)) << name;
  for (const char *f :
       {"saved_model.json", "model.so", "variables.safetensors"})
    EXPECT_TRUE(fs::exists(dir / f)) << f;
  EXPECT_FALSE(fs::exists(dir / "model.o"));
  // No temporary folder is left.
  for (const auto &e : fs::directory_iterator(root_ / "tiny"))
    EXPECT_EQ(e.path().filename().string().rfind("temp-", 0),
              std::string::npos);
  // The linear export copies nothing (a vocabulary list) but has a transform.
  std::string json = fileio::readFile(linearExport_ + "/saved_model.json");
  EXPECT_NE(json.find("\"transform\""), std::string::npos);
  EXPECT_NE(json.find("\"class_names\":[\"no\",\"yes\"]"), std::string::npos);
  // A second export of the same checkpoint gets a later timestamp.
  std::string again = tiny_->export_saved_model(
      (root_ / "tiny").string(),
      build_raw_serving_input_receiver_fn({{"x", DType::Float32, {-1, 4}}}));
  EXPECT_GT(fs::path(again).filename().string(), name);
  auto versions = serving::list_versions((root_ / "tiny").string());
  ASSERT_EQ(versions.size(), 2u);
  EXPECT_EQ(versions[1].second, again);
  fs::remove_all(again);
}

TEST_F(SavedModelTest, AssetsExtraTextAndAllModes) {
  std::string readme = (root_ / "README.txt").string();
  std::ofstream(readme) << "how to call this model\n";
  ServingInputReceiverFn raw =
      build_raw_serving_input_receiver_fn({{"x", DType::Float32, {-1, 4}}});
  std::string dir = tiny_->export_saved_model(
      (root_ / "extra").string(), raw,
      {.assets_extra = {{"docs/README.txt", readme}}, .as_text = true});
  EXPECT_EQ(fileio::readFile(dir + "/assets.extra/docs/README.txt"),
            "how to call this model\n");
  std::string json = fileio::readFile(dir + "/saved_model.json");
  EXPECT_NE(json.find("\n  \"format\": \"estc-saved-model-1\""),
            std::string::npos);
  EXPECT_EQ(SavedModel::load(dir)->global_step(), 30);
  EXPECT_EQ(errorOf([&] {
              tiny_->export_saved_model(
                  (root_ / "extra").string(), raw,
                  {.assets_extra = {{"../escape", readme}}});
            }),
            "Estimator.export_saved_model: assets_extra name '../escape' "
            "must be a relative path inside assets.extra");

  std::string all = tiny_->experimental_export_all_saved_models(
      (root_ / "all").string(), {{ModeKeys::PREDICT, raw}});
  EXPECT_NO_THROW(SavedModel::load(all));
  EXPECT_EQ(errorOf([&] {
              tiny_->experimental_export_all_saved_models(
                  (root_ / "all").string(),
                  {{ModeKeys::PREDICT, raw}, {ModeKeys::EVAL, raw}});
            }),
            "Estimator.export_saved_model: experimental_export_all_saved_"
            "models: mode eval is not exported (estc exports PREDICT; a "
            "TRAIN or EVAL artifact is the checkpoint plus the model_fn)");
}

TEST_F(SavedModelTest, CustomModelFnEqualsPredict) {
  auto model = SavedModel::load(tinyExport_);
  EXPECT_EQ(model->global_step(), 30);
  ASSERT_EQ(model->signatures().size(), 1u);
  const serving::SignatureDef &sig = model->signature("serving_default");
  EXPECT_EQ(sig.method_name, serving::kPredictMethodName);
  ASSERT_EQ(sig.inputs.count("x"), 1u);
  EXPECT_EQ(sig.inputs.at("x").shape, (std::vector<int64_t>{-1, 4}));
  EXPECT_EQ(sig.outputs.at("probabilities").dtype, DType::Float32);
  EXPECT_EQ(sig.outputs.at("probabilities").shape,
            (std::vector<int64_t>{-1, 3}));
  EXPECT_EQ(sig.outputs.at("classes").dtype, DType::Int64);

  tiny::Data d = tiny::makeData(50, 9);
  serving::TensorMap out = model->run("serving_default", {{"x", d.x.at("x")}});
  std::vector<Prediction> expected;
  for (const Prediction &p :
       tiny_->predict(numpy_input_fn(d.x, std::nullopt, {50, 1, false, 0}),
                      {.yield_single_examples = false}))
    expected.push_back(p);
  ASSERT_EQ(expected.size(), 1u);
  EXPECT_EQ(out.at("probabilities").shape, (std::vector<int64_t>{50, 3}));
  EXPECT_EQ(out.at("probabilities").data, expected[0].at("probabilities").data);
  EXPECT_EQ(out.at("classes").data, expected[0].at("classes").data);

  // Output filter; a batch of one; JSON-style I64 numbers converted.
  serving::TensorMap one = model->run(
      "serving_default",
      {{"x", TensorValue::of<int64_t>({1, 4}, {1, 0, 0, 0})}}, {"classes"});
  EXPECT_EQ(keysOf(one), (std::vector<std::string>{"classes"}));
}

TEST_F(SavedModelTest, ConcurrentCallersGetTheirOwnAnswers) {
  auto model = SavedModel::load(tinyExport_);
  std::vector<tiny::Data> inputs;
  std::vector<serving::TensorMap> expected;
  for (int t = 0; t < 8; ++t) {
    inputs.push_back(tiny::makeData(1 + 7 * t, 100 + t));
    expected.push_back(
        model->run("serving_default", {{"x", inputs.back().x.at("x")}}));
  }
  std::vector<int> mismatches(8, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        serving::TensorMap out =
            model->run("serving_default", {{"x", inputs[t].x.at("x")}});
        mismatches[t] += out.at("probabilities").data !=
                         expected[t].at("probabilities").data;
      }
    });
  for (std::thread &t : threads)
    t.join();
  for (int t = 0; t < 8; ++t)
    EXPECT_EQ(mismatches[t], 0) << "thread " << t;
  EXPECT_GT(model->variable_bytes(), 0);
}

TEST_F(SavedModelTest, CannedParsingReceiverClassifiesExamples) {
  auto model = SavedModel::load(linearExport_);
  std::vector<std::string> names;
  for (const auto &[name, sig] : model->signatures())
    names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"classification", "predict",
                                             "raw:predict", "regression",
                                             "serving_default"}));
  const serving::SignatureDef &cls = model->signature("serving_default");
  EXPECT_EQ(cls.method_name, serving::kClassifyMethodName);
  EXPECT_EQ(keysOf(cls.inputs), (std::vector<std::string>{"inputs"}));
  EXPECT_EQ(cls.inputs.at("inputs").name, "examples");
  EXPECT_EQ(cls.inputs.at("inputs").dtype, DType::String);
  EXPECT_EQ(cls.outputs.at("classes").dtype, DType::String);
  EXPECT_EQ(model->signature("regression").method_name,
            serving::kRegressMethodName);
  EXPECT_EQ(keysOf(model->signature("predict").inputs),
            (std::vector<std::string>{"examples"}));
  EXPECT_EQ(keysOf(model->signature("raw:predict").inputs),
            (std::vector<std::string>{"color", "x1", "x2"}));

  LinearData d = linear_data(40, 5);
  std::vector<std::string> examples = linear_examples(d, 0, 40);
  TensorValue serialized = TensorValue::of_strings({40}, examples);
  serving::TensorMap classified =
      model->run("serving_default", {{"inputs", serialized}});
  serving::TensorMap predicted =
      model->run("predict", {{"examples", serialized}});
  serving::TensorMap raw = model->run(
      "raw:predict",
      {{"x1", d.x.at("x1")}, {"x2", d.x.at("x2")}, {"color", d.x.at("color")}});
  serving::TensorMap regressed =
      model->run("regression", {{"inputs", serialized}});

  std::vector<Prediction> expected;
  for (const Prediction &p :
       linear_->predict(numpy_input_fn(d.x, std::nullopt, {40, 1, false, 0}),
                        {.yield_single_examples = false}))
    expected.push_back(p);
  ASSERT_EQ(expected.size(), 1u);
  const Prediction &e = expected[0];
  EXPECT_EQ(classified.at("scores").data, e.at("probabilities").data);
  EXPECT_EQ(classified.at("classes").shape, (std::vector<int64_t>{40, 2}));
  EXPECT_EQ(classified.at("classes").strings[0], "no");
  EXPECT_EQ(classified.at("classes").strings[1], "yes");
  EXPECT_EQ(regressed.at("outputs").data, e.at("logistic").data);
  for (const char *key : {"logits", "probabilities", "class_ids"}) {
    EXPECT_EQ(predicted.at(key).data, e.at(key).data) << key;
    EXPECT_EQ(raw.at(key).data, e.at(key).data) << key;
  }
  EXPECT_EQ(predicted.at("classes").strings, e.at("classes").strings);
  EXPECT_EQ(raw.at("all_classes").strings, e.at("all_classes").strings);
}

TEST_F(SavedModelTest, BadRequestsAreOneLine) {
  auto model = SavedModel::load(tinyExport_);
  auto x = [](std::vector<int64_t> shape) {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return TensorValue::of<float>(shape, std::vector<float>(n, 0.5f));
  };
  EXPECT_EQ(errorOf([&] { model->run("nope", {{"x", x({1, 4})}}); }),
            "Serving signature name: \"nope\" not found in signature def");
  EXPECT_EQ(errorOf([&] { model->run("serving_default", {}); }),
            "signature 'serving_default' needs input 'x'");
  EXPECT_EQ(errorOf([&] {
              model->run("serving_default",
                         {{"x", x({1, 4})}, {"y", x({1, 4})}});
            }),
            "input 'y' is not an input of signature 'serving_default'");
  EXPECT_EQ(errorOf([&] { model->run("serving_default", {{"x", x({2, 5})}}); }),
            "input 'x' has shape [2,5], the signature takes [-1,4]");
  EXPECT_EQ(errorOf([&] { model->run("serving_default", {{"x", x({0, 4})}}); }),
            "signature 'serving_default': the batch is empty");
  EXPECT_EQ(errorOf([&] {
              model->run("serving_default",
                         {{"x", TensorValue::of_strings(
                                    {1, 4}, {"a", "b", "c", "d"})}});
            }),
            "input 'x' must be F32, got STRING");
  EXPECT_EQ(errorOf([&] {
              model->run("serving_default", {{"x", x({1, 4})}}, {"logits"});
            }),
            "output 'logits' is not an output of signature 'serving_default'");

  auto linear = SavedModel::load(linearExport_);
  EXPECT_NE(errorOf([&] {
              linear->run("serving_default",
                          {{"inputs", TensorValue::of_strings(
                                          {1}, {std::string("\x0a\xff", 2)})}});
            }).find("xample"),
            std::string::npos);
  // A color outside the vocabulary is the OOV id (-1): TF's default_value.
  std::string unknown = data::ExampleBuilder()
                            .add_float("x1", {0.5f})
                            .add_float("x2", {0.5f})
                            .add_bytes("color", {"purple"})
                            .serialize();
  EXPECT_EQ(linear
                ->run("serving_default",
                      {{"inputs", TensorValue::of_strings({1}, {unknown})}})
                .at("scores")
                .shape,
            (std::vector<int64_t>{1, 2}));
  std::string missing =
      data::ExampleBuilder().add_float("x1", {0.5f}).serialize();
  EXPECT_NE(errorOf([&] {
              linear->run(
                  "serving_default",
                  {{"inputs", TensorValue::of_strings({1}, {missing})}});
            }).find("x2"),
            std::string::npos);
}

TEST_F(SavedModelTest, BadExportsAreRefusedWithOneLine) {
  auto loadError = [](const std::string &dir) {
    try {
      SavedModel::load(dir);
    } catch (const serving::LoadError &e) {
      std::string what = e.what();
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
      return what;
    }
    return std::string("(loaded)");
  };
  std::string prefix = "SavedModel ";
  EXPECT_EQ(loadError((root_ / "nowhere").string()).rfind(prefix, 0), 0u);
  EXPECT_NE(loadError((root_ / "nowhere").string())
                .find("cannot read saved_model.json"),
            std::string::npos);

  std::string d = copyOf(tinyExport_, "bad-json");
  std::ofstream(d + "/saved_model.json", std::ios::trunc) << "{\"format\": ";
  EXPECT_NE(loadError(d).find("saved_model.json is not JSON"),
            std::string::npos);

  d = copyOf(tinyExport_, "bad-format");
  edit(d, "estc-saved-model-1", "estc-saved-model-9");
  EXPECT_NE(loadError(d).find("format 'estc-saved-model-9' is not "
                              "estc-saved-model-1"),
            std::string::npos);

  // A line break in a quoted field is escaped: the error stays one line.
  d = copyOf(tinyExport_, "format-with-a-line-break");
  edit(d, "estc-saved-model-1", "estc\\nsaved");
  EXPECT_NE(loadError(d).find("format 'estc\\nsaved' is not "
                              "estc-saved-model-1"),
            std::string::npos);

  d = copyOf(tinyExport_, "no-library");
  fs::remove(d + "/model.so");
  EXPECT_NE(loadError(d).find("the library model.so is missing"),
            std::string::npos);

  d = copyOf(tinyExport_, "bad-library");
  std::ofstream(d + "/model.so", std::ios::trunc) << "not an ELF file";
  EXPECT_NE(loadError(d).find("cannot load model.so"), std::string::npos);

  d = copyOf(tinyExport_, "truncated-variables");
  fs::resize_file(d + "/variables.safetensors",
                  fs::file_size(d + "/variables.safetensors") - 8);
  EXPECT_NE(loadError(d).find("variables.safetensors"), std::string::npos);

  d = copyOf(tinyExport_, "other-arch");
  edit(d, "\"arch\":\"x86_64\"", "\"arch\":\"riscv64\"");
  EXPECT_NE(loadError(d).find("compiled for riscv64"), std::string::npos);

  d = copyOf(tinyExport_, "bad-signature");
  edit(d, "\"source\":\"predictions/classes\"",
       "\"source\":\"predictions/nothing\"");
  EXPECT_NE(loadError(d).find("'predictions/nothing' is not an output"),
            std::string::npos);

  d = copyOf(tinyExport_, "bad-field");
  edit(d, "\"global_step\":", "\"global_step\":\"x\",\"was\":");
  EXPECT_NE(loadError(d).find("saved_model.json.global_step is not an "
                              "integer"),
            std::string::npos);
}

TEST_F(SavedModelTest, MissingCpuFeaturesAreRefused) {
  // A feature this CPU lacks, from the loader's table.
  std::string lacking;
  for (const char *f : {"avx512fp16", "avx512vp2intersect", "avx512bf16",
                        "avx512vbmi2", "avx512f", "sse4a", "avx2"}) {
    std::string probe = copyOf(tinyExport_, std::string("cpu-") + f);
    edit(probe, "\"features\":[", std::string("\"features\":[\"") + f + "\",");
    try {
      SavedModel::load(probe);
    } catch (const serving::LoadError &e) {
      lacking = f;
      EXPECT_NE(std::string(e.what()).find(std::string("this CPU lacks ") + f),
                std::string::npos)
          << e.what();
      serving::LoadOptions skip;
      skip.skip_cpu_check = true;
      EXPECT_NO_THROW(SavedModel::load(probe, skip));
      break;
    }
  }
  if (lacking.empty())
    GTEST_SKIP() << "this CPU has every probed feature";
}

TEST_F(SavedModelTest, ExportErrors) {
  EXPECT_EQ(errorOf([&] {
              tiny_->export_saved_model((root_ / "x").string(),
                                        build_raw_serving_input_receiver_fn(
                                            {{"x", DType::Float32, {-1, 4}}}),
                                        {.experimental_mode = ModeKeys::TRAIN});
            }),
            "Estimator.export_saved_model: experimental_mode TRAIN is not "
            "exported (a training job needs the model_fn and a checkpoint, "
            "not an export)");
  Estimator fresh(tiny::classifier_fn,
                  quietConfig((root_ / "untrained").string()));
  EXPECT_EQ(errorOf([&] {
              fresh.export_saved_model((root_ / "x").string(),
                                       build_raw_serving_input_receiver_fn(
                                           {{"x", DType::Float32, {-1, 4}}}));
            }),
            "Estimator.export_saved_model: Couldn't find trained model at " +
                (root_ / "untrained").string() + ".");
  EXPECT_NE(errorOf([&] {
              tiny_->export_saved_model((root_ / "x").string(),
                                        build_raw_serving_input_receiver_fn(
                                            {{"x", DType::Float32, {-1, 5}}}));
            }).find("Estimator.export_saved_model: "),
            std::string::npos);
  EXPECT_EQ(errorOf([&] {
              tiny_->export_saved_model((root_ / "x").string(),
                                        build_raw_serving_input_receiver_fn(
                                            {{"x", DType::String, {-1, 4}}}));
            }),
            "Estimator.export_saved_model: receiver tensor 'x' is a string: "
            "strings reach a model through feature columns "
            "(Estimator::set_host_transform)");
  EXPECT_EQ(errorOf([&] {
              ServingInputReceiver r;
              r.tensors = {{"a", DType::Float32, {-1}},
                           {"a", DType::Float32, {-1}}};
              r.validate();
            }),
            "ServingInputReceiver: receiver tensor 'a' is given twice");
  // The linker cannot run: one line, and no folder.
  ::setenv("ESTC_LINKER", "/nonexistent/ld", 1);
  std::string linkError = errorOf([&] {
    tiny_->export_saved_model(
        (root_ / "x").string(),
        build_raw_serving_input_receiver_fn({{"x", DType::Float32, {-1, 4}}}));
  });
  ::unsetenv("ESTC_LINKER");
  EXPECT_EQ(linkError.rfind("Estimator.export_saved_model: cannot run the "
                            "linker '/nonexistent/ld'",
                            0),
            0u)
      << linkError;
  EXPECT_EQ(linkError.find('\n'), std::string::npos);
  // Nothing is left behind by a failed export.
  EXPECT_FALSE(fs::exists(root_ / "x") && !fs::is_empty(root_ / "x"));
}

// A receiver that lacks a feature the model reads is refused at export time,
// as TF's export fails when model_fn meets the receiver's features, before
// anything is compiled or written: one line naming the receiver and what it
// lacks. (Before, such an export was written and could never answer: every
// request failed with "feature 'color' is missing from the batch".)
TEST_F(SavedModelTest, ReceiverWithoutAFeatureTheModelReadsIsRefused) {
  // The canned model's columns read x1, x2 and color (a wide & deep
  // model's parse spec made from its dnn columns alone lacks the linear
  // ones the same way).
  data::FeatureSpecs spec = fc::make_parse_example_spec(linear_columns());
  spec.erase("color");
  fs::path base = root_ / "lacking";
  EXPECT_EQ(errorOf([&] {
              linear_->export_saved_model(
                  base.string(), build_parsing_serving_input_receiver_fn(spec));
            }),
            "Estimator.export_saved_model: the serving input receiver does "
            "not provide the features the model reads: color (it parses x1, "
            "x2)");
  // An alternative that lacks one is refused the same way.
  ServingInputReceiverFn rawWithoutX2 = [] {
    ServingInputReceiver r = build_parsing_serving_input_receiver_fn(
        fc::make_parse_example_spec(linear_columns()))();
    ReceiverTensors raw;
    raw.tensors = {{"x1", DType::Float32, {-1, 1}},
                   {"color", DType::String, {-1, 1}}};
    r.receiver_tensors_alternatives["raw"] = raw;
    return r;
  };
  EXPECT_EQ(errorOf([&] {
              linear_->export_saved_model(base.string(), rawWithoutX2);
            }),
            "Estimator.export_saved_model: receiver_tensors_alternatives "
            "'raw' does not provide the features the model reads: x2 (it "
            "takes color, x1)");
  // Without a host transform, every alternative must give the features
  // the serving function is compiled for (the main receiver's).
  ServingInputReceiverFn tinyAlt = [] {
    ServingInputReceiver r =
        build_raw_serving_input_receiver_fn({{"x", DType::Float32, {-1, 4}}})();
    ReceiverTensors other;
    other.tensors = {{"y", DType::Float32, {-1, 4}}};
    r.receiver_tensors_alternatives["other"] = other;
    return r;
  };
  EXPECT_EQ(errorOf([&] { tiny_->export_saved_model(base.string(), tinyAlt); }),
            "Estimator.export_saved_model: receiver_tensors_alternatives "
            "'other' does not provide the features the model reads: x (it "
            "takes y)");
  // Nothing was written.
  EXPECT_FALSE(fs::exists(base));
}

/// Raw features of every kind the canned estimators' columns read: x1, x2
/// F32, color / city / size strings, id I64; labels 0/1 (as F32 for
/// regressors).
struct MixedData {
  Features x;
  TensorValue classes, values;
  std::vector<std::string> examples;
};
MixedData mixedData(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  const char *colors[] = {"red", "green", "blue", "mauve"};
  const char *cities[] = {"paris", "oslo", "lima", "pune", "kyiv"};
  const char *sizes[] = {"small", "large", "huge"};
  std::vector<float> x1(n), x2(n), value(n);
  std::vector<std::string> color(n), city(n), size(n);
  std::vector<int64_t> id(n), cls(n);
  MixedData d;
  for (int64_t i = 0; i < n; ++i) {
    x1[i] = u(rng);
    x2[i] = u(rng);
    color[i] = colors[rng() % 4];
    city[i] = cities[rng() % 5];
    size[i] = sizes[rng() % 3];
    id[i] = static_cast<int64_t>(rng() % 5);
    value[i] = x1[i] - x2[i] + (color[i] == "red" ? 1.0f : 0.0f);
    cls[i] = value[i] > 0;
    d.examples.push_back(data::ExampleBuilder()
                             .add_float("x1", {x1[i]})
                             .add_float("x2", {x2[i]})
                             .add_bytes("color", {color[i]})
                             .add_bytes("city", {city[i]})
                             .add_bytes("size", {size[i]})
                             .add_int64("id", {id[i]})
                             .serialize());
  }
  d.x = {{"x1", TensorValue::of<float>({n, 1}, x1)},
         {"x2", TensorValue::of<float>({n, 1}, x2)},
         {"color", TensorValue::of_strings({n, 1}, color)},
         {"city", TensorValue::of_strings({n, 1}, city)},
         {"size", TensorValue::of_strings({n, 1}, size)},
         {"id", TensorValue::of<int64_t>({n, 1}, id)}};
  d.classes = TensorValue::of<int64_t>({n}, cls);
  d.values = TensorValue::of<float>({n}, value);
  return d;
}

TEST_F(SavedModelTest, EveryCannedEstimatorServesWhatItPredicts) {
  std::string vocab = (root_ / "sizes.txt").string();
  std::ofstream(vocab) << "small\nlarge\n";
  auto x1 = fc::numeric_column("x1");
  auto x2 = fc::bucketized_column(fc::numeric_column("x2"), {-0.5, 0, 0.5});
  auto color = fc::categorical_column_with_vocabulary_list(
      "color", {"red", "green", "blue"}, {}, -1, 1);
  auto city = fc::categorical_column_with_hash_bucket("city", 16);
  auto size = fc::categorical_column_with_vocabulary_file("size", vocab);
  auto id = fc::categorical_column_with_identity("id", 5);
  fc::FeatureColumns wide = {
      x1,
      x2,
      color,
      city,
      size,
      id,
      fc::crossed_column({fc::CrossKey(color), fc::CrossKey(x2)}, 32)};
  fc::FeatureColumns deep = {
      x1, fc::embedding_column(city, 3), fc::indicator_column(color),
      fc::indicator_column(size), fc::embedding_column(id, 2, "sqrtn")};
  fc::FeatureColumns all = wide;
  all.insert(all.end(), deep.begin(), deep.end());

  DNNOptions dnn;
  dnn.hidden_units = {8, 4};
  DNNLinearCombinedOptions combined;
  combined.linear_feature_columns = wide;
  combined.dnn_feature_columns = deep;
  combined.dnn_hidden_units = {6};
  struct Case {
    std::string name;
    std::function<std::unique_ptr<Estimator>(RunConfig)> make;
    fc::FeatureColumns columns;
    bool classifier;
  };
  std::vector<Case> cases = {
      {"LinearClassifier",
       [&](RunConfig c) {
         return std::make_unique<LinearClassifier>(wide, ClassifierOptions(),
                                                   LinearOptions(), c);
       },
       wide, true},
      {"LinearRegressor",
       [&](RunConfig c) {
         return std::make_unique<LinearRegressor>(wide, RegressorOptions(),
                                                  LinearOptions(), c);
       },
       wide, false},
      {"DNNClassifier",
       [&](RunConfig c) {
         ClassifierOptions h;
         h.n_classes = 3;
         return std::make_unique<DNNClassifier>(deep, dnn, h, c);
       },
       deep, true},
      {"DNNRegressor",
       [&](RunConfig c) {
         return std::make_unique<DNNRegressor>(deep, dnn, RegressorOptions(),
                                               c);
       },
       deep, false},
      {"DNNLinearCombinedClassifier",
       [&](RunConfig c) {
         return std::make_unique<DNNLinearCombinedClassifier>(
             combined, ClassifierOptions(), c);
       },
       all, true},
      {"DNNLinearCombinedRegressor",
       [&](RunConfig c) {
         return std::make_unique<DNNLinearCombinedRegressor>(
             combined, RegressorOptions(), c);
       },
       all, false},
      {"BaselineClassifier",
       [&](RunConfig c) {
         return std::make_unique<BaselineClassifier>(ClassifierOptions(),
                                                     "Ftrl", c);
       },
       {x1},
       true},
      {"BaselineRegressor",
       [&](RunConfig c) {
         return std::make_unique<BaselineRegressor>(RegressorOptions(), "Ftrl",
                                                    c);
       },
       {x1},
       false},
  };
  MixedData train = mixedData(200, 3), test = mixedData(30, 4);
  for (const Case &c : cases) {
    SCOPED_TRACE(c.name);
    std::unique_ptr<Estimator> est =
        c.make(quietConfig((root_ / ("canned-" + c.name)).string()));
    est->train(numpy_input_fn(train.x,
                              c.classifier ? train.classes : train.values,
                              {32, std::nullopt, true, 7}),
               {.steps = 20});
    data::FeatureSpecs spec = fc::make_parse_example_spec(c.columns);
    ServingInputReceiverFn fn = [&] {
      ServingInputReceiver r = build_parsing_serving_input_receiver_fn(spec)();
      ReceiverTensors raw;
      for (const auto &[key, value] : test.x)
        if (spec.count(key))
          raw.tensors.push_back({key, value.dtype, {-1, 1}});
      r.receiver_tensors_alternatives["raw"] = raw;
      return r;
    };
    std::string dir =
        est->export_saved_model((root_ / ("export-" + c.name)).string(), fn);
    auto model = SavedModel::load(dir);
    // The vocabulary file travels with the export.
    EXPECT_EQ(fs::exists(fs::path(dir) / "assets" / "0_sizes.txt"),
              spec.count("size") == 1);

    serving::TensorMap rawInputs;
    for (const auto &[key, value] : test.x)
      if (spec.count(key))
        rawInputs[key] = value;
    serving::TensorMap parsed = model->run(
        "predict",
        {{"examples", TensorValue::of_strings({30}, test.examples)}});
    serving::TensorMap raw = model->run("raw:predict", rawInputs);
    std::vector<Prediction> expected;
    for (const Prediction &p :
         est->predict(numpy_input_fn(test.x, std::nullopt, {30, 1, false, 0}),
                      {.yield_single_examples = false}))
      expected.push_back(p);
    ASSERT_EQ(expected.size(), 1u);
    EXPECT_EQ(keysOf(parsed), keysOf(expected[0]));
    for (const auto &[key, value] : expected[0]) {
      SCOPED_TRACE(key);
      ASSERT_TRUE(parsed.count(key));
      EXPECT_EQ(parsed.at(key).shape, value.shape);
      EXPECT_EQ(parsed.at(key).data, value.data);
      EXPECT_EQ(parsed.at(key).strings, value.strings);
      EXPECT_EQ(raw.at(key).data, value.data);
      EXPECT_EQ(raw.at(key).strings, value.strings);
    }
    // Classifiers classify and regress tf.Examples; regressors regress.
    TensorValue examples = TensorValue::of_strings({30}, test.examples);
    if (c.classifier) {
      serving::TensorMap cls =
          model->run("serving_default", {{"inputs", examples}});
      EXPECT_EQ(cls.at("scores").data, expected[0].at("probabilities").data);
    } else {
      serving::TensorMap reg =
          model->run("serving_default", {{"inputs", examples}});
      EXPECT_EQ(reg.at("outputs").data, expected[0].at("predictions").data);
    }
  }
}

} // namespace
} // namespace serving_test
} // namespace estc
