//===- KerasEstimatorTest.cpp - model_to_estimator and its compile config -===//
//
// The compile-config mapping (estimator/KerasCompile.h) on the spellings
// tf.keras 2.15 (.keras, .h5) and Keras 3 write, each one-line refusal, and
// model_to_estimator on test/data/keras/tiny.keras (Dense + BatchNormal-
// ization, compiled with adam and mse): the first checkpoint, the feature
// checks at train time, writing back. The numbers against Keras are
// keras.tf_estimator_compat's (test/e2e/tf_keras_estimator_compat.py).
//
//===----------------------------------------------------------------------===//

#include "estimator/KerasEstimator.h"
#include "estimator/KerasCompile.h"
#include "lib/Checkpoint/Checkpoint.h"
#include "lib/Keras/KerasGraph.h"
#include "runtime/serving/SavedModel.h"
#include "test/unit/FileTesting.h"

#include <gtest/gtest.h>

#include <filesystem>

using namespace estc;
using namespace estc::estimator;
using estc::testing::messageOf;
using keras_compile::CompileConfig;
using keras_compile::parse_compile_config;

namespace {

/// A model whose only content is its compile config (what
/// parse_compile_config reads).
keras::KerasModel compiled(const std::string &json) {
  keras::KerasModel m;
  m.file = "m.keras";
  m.training_config.Parse(json.c_str());
  EXPECT_FALSE(m.training_config.HasParseError()) << json;
  return m;
}

std::string refusal(const std::string &json,
                    const std::vector<std::string> &outputs = {"out"}) {
  keras::KerasModel m = compiled(json);
  return messageOf<keras::KerasError>(
      [&] { parse_compile_config(m, outputs); });
}

const char *kAdamMse = R"({"optimizer": "adam", "loss": "mse"})";

TEST(KerasCompileTest, TfKeras215ArchiveSpelling) {
  keras::KerasModel m = compiled(R"({
    "optimizer": {"module": "keras.optimizers.experimental",
      "class_name": "SGD", "config": {"name": "SGD", "weight_decay": null,
      "clipnorm": 1.0, "global_clipnorm": null, "clipvalue": null,
      "use_ema": false, "ema_momentum": 0.99, "ema_overwrite_frequency": null,
      "jit_compile": false, "is_legacy_optimizer": false,
      "learning_rate": {"module": "keras.optimizers.schedules",
        "class_name": "ExponentialDecay", "config": {
        "initial_learning_rate": 0.1, "decay_steps": 10, "decay_rate": 0.9,
        "staircase": false, "name": null}, "registered_name": null},
      "momentum": 0.9, "nesterov": true}, "registered_name": null},
    "loss": {"module": "keras.losses",
      "class_name": "SparseCategoricalCrossentropy", "config": {
      "reduction": "auto", "name": "sparse_categorical_crossentropy",
      "from_logits": true, "ignore_class": null,
      "fn": "sparse_categorical_crossentropy"}, "registered_name": null},
    "metrics": ["accuracy", {"module": "keras.metrics", "class_name": "AUC",
      "config": {"name": "auc", "dtype": "float32", "num_thresholds": 200,
      "curve": "ROC", "summation_method": "interpolation",
      "multi_label": false, "num_labels": null, "label_weights": null,
      "from_logits": false}, "registered_name": null}],
    "loss_weights": [0.5], "weighted_metrics": null, "run_eagerly": null,
    "steps_per_execution": null, "jit_compile": null})");
  CompileConfig c = parse_compile_config(m, {"out"});
  EXPECT_EQ(c.optimizer.class_name, "SGD");
  EXPECT_EQ(c.optimizer.learning_rate.schedule, "ExponentialDecay");
  EXPECT_DOUBLE_EQ(c.optimizer.learning_rate.value, 0.1);
  EXPECT_DOUBLE_EQ(c.optimizer.learning_rate.args.at("decay_steps"), 10);
  EXPECT_DOUBLE_EQ(c.optimizer.args.at("momentum"), 0.9);
  EXPECT_TRUE(c.optimizer.flags.at("nesterov"));
  ASSERT_TRUE(c.optimizer.clipnorm.has_value());
  EXPECT_DOUBLE_EQ(*c.optimizer.clipnorm, 1.0);
  ASSERT_TRUE(c.losses[0].has_value());
  EXPECT_EQ(c.losses[0]->fn, "sparse_categorical_crossentropy");
  EXPECT_TRUE(c.losses[0]->from_logits);
  EXPECT_DOUBLE_EQ(c.loss_weights[0], 0.5);
  ASSERT_EQ(c.metrics[0].size(), 2u);
  EXPECT_EQ(c.metrics[0][0].kind, "accuracy");
  EXPECT_EQ(c.metrics[0][1].kind, "auc");
  EXPECT_EQ(c.metrics[0][1].name, "auc");
  // The optimizer builds.
  EXPECT_EQ(keras_compile::make_optimizer(c.optimizer).kind(), "keras_sgd");
}

TEST(KerasCompileTest, LegacyH5Spelling) {
  // tf.keras's training_config: "optimizer_config" with "Custom>", a
  // MeanMetricWrapper per string metric, per-output lists of metrics.
  keras::KerasModel m = compiled(R"({
    "loss": {"class_name": "BinaryCrossentropy", "config": {
      "reduction": "auto", "name": "binary_crossentropy",
      "from_logits": false, "label_smoothing": 0.1, "axis": -1,
      "fn": "binary_crossentropy"}},
    "metrics": [[{"class_name": "MeanMetricWrapper", "config": {
      "name": "acc", "dtype": "float32", "fn": "categorical_accuracy"}}]],
    "weighted_metrics": null, "loss_weights": null,
    "optimizer_config": {"class_name": "Custom>RMSprop", "config": {
      "name": "RMSprop", "weight_decay": null, "clipnorm": null,
      "global_clipnorm": null, "clipvalue": 0.5, "use_ema": false,
      "ema_momentum": 0.99, "ema_overwrite_frequency": 100,
      "jit_compile": true, "is_legacy_optimizer": false,
      "learning_rate": 0.01, "rho": 0.8, "momentum": 0.5,
      "epsilon": 1e-07, "centered": true}}})");
  CompileConfig c = parse_compile_config(m, {"p"});
  EXPECT_EQ(c.optimizer.class_name, "RMSprop");
  EXPECT_DOUBLE_EQ(c.optimizer.learning_rate.value, 0.01);
  EXPECT_DOUBLE_EQ(c.optimizer.args.at("rho"), 0.8);
  EXPECT_TRUE(c.optimizer.flags.at("centered"));
  EXPECT_DOUBLE_EQ(*c.optimizer.clipvalue, 0.5);
  EXPECT_EQ(c.losses[0]->fn, "binary_crossentropy");
  EXPECT_DOUBLE_EQ(c.losses[0]->label_smoothing, 0.1);
  // The function Keras resolved "acc" to when it saved the file, as Keras
  // loads it.
  ASSERT_EQ(c.metrics[0].size(), 1u);
  EXPECT_EQ(c.metrics[0][0].kind, "categorical_accuracy");
  EXPECT_EQ(c.metrics[0][0].name, "acc");
  EXPECT_EQ(keras_compile::make_optimizer(c.optimizer).kind(), "keras_rmsprop");
}

TEST(KerasCompileTest, Keras3SpellingAndPerOutputDicts) {
  keras::KerasModel m = compiled(R"({
    "optimizer": {"module": "keras.optimizers", "class_name": "AdamW",
      "config": {"name": "adamw", "learning_rate": {"module":
      "keras.optimizers.schedules", "class_name": "PiecewiseConstantDecay",
      "config": {"boundaries": [2, 5], "values": [0.1, 0.01, 0.001],
      "name": "PiecewiseConstant"}, "registered_name": null},
      "weight_decay": 0.01, "clipnorm": null, "global_clipnorm": 2.0,
      "clipvalue": null, "use_ema": false, "ema_momentum": 0.99,
      "ema_overwrite_frequency": null, "loss_scale_factor": null,
      "gradient_accumulation_steps": null, "beta_1": 0.9, "beta_2": 0.999,
      "epsilon": 1e-07, "amsgrad": false}, "registered_name": null},
    "loss": {"a": "sparse_categorical_crossentropy", "b": {"module":
      "keras.losses", "class_name": "Huber", "config": {"name": "huber_loss",
      "reduction": "sum_over_batch_size", "delta": 2.0}, "registered_name":
      null}},
    "loss_weights": {"a": 1.0, "b": 0.25},
    "metrics": {"a": ["accuracy"], "b": ["mae", {"module": "keras.metrics",
      "class_name": "RootMeanSquaredError", "config": {"name": "rmse",
      "dtype": "float32"}, "registered_name": null}]},
    "weighted_metrics": null, "run_eagerly": false,
    "steps_per_execution": 1, "jit_compile": false})");
  CompileConfig c = parse_compile_config(m, {"a", "b"});
  EXPECT_EQ(c.optimizer.class_name, "AdamW");
  EXPECT_EQ(c.optimizer.learning_rate.schedule, "PiecewiseConstantDecay");
  EXPECT_EQ(c.optimizer.learning_rate.values.size(), 3u);
  EXPECT_DOUBLE_EQ(c.optimizer.args.at("weight_decay"), 0.01);
  EXPECT_DOUBLE_EQ(*c.optimizer.global_clipnorm, 2.0);
  EXPECT_EQ(c.losses[1]->fn, "huber");
  EXPECT_DOUBLE_EQ(c.losses[1]->delta, 2.0);
  EXPECT_DOUBLE_EQ(c.loss_weights[1], 0.25);
  ASSERT_EQ(c.metrics[1].size(), 2u);
  EXPECT_EQ(c.metrics[1][0].kind, "mean_absolute_error");
  EXPECT_EQ(c.metrics[1][1].kind, "root_mean_squared_error");
  EXPECT_EQ(c.metrics[1][1].name, "rmse");
  EXPECT_EQ(keras_compile::make_optimizer(c.optimizer).kind(), "adamw");
}

TEST(KerasCompileTest, StringOptimizersTakeKerasDefaults) {
  keras::KerasModel m = compiled(R"({"optimizer": "sgd", "loss": "mse"})");
  CompileConfig c = parse_compile_config(m, {"out"});
  EXPECT_DOUBLE_EQ(c.optimizer.learning_rate.value, 0.01);
  EXPECT_DOUBLE_EQ(c.optimizer.args.at("momentum"), 0.0);
  keras::KerasModel a = compiled(kAdamMse);
  CompileConfig ca = parse_compile_config(a, {"out"});
  EXPECT_DOUBLE_EQ(ca.optimizer.learning_rate.value, 0.001);
  EXPECT_DOUBLE_EQ(ca.optimizer.args.at("epsilon"), 1e-7);
}

TEST(KerasCompileTest, Refusals) {
  keras::KerasModel none;
  none.file = "m.keras";
  EXPECT_EQ(messageOf<keras::KerasError>(
                [&] { parse_compile_config(none, {"out"}); }),
            "m.keras: compile config: the model was not compiled (no "
            "compile_config / training_config): model_to_estimator needs a "
            "model saved after model.compile(...), as TF's does");
  EXPECT_EQ(refusal(R"({"optimizer": {"class_name": "Lion", "config": {}},
                        "loss": "mse"})"),
            "m.keras: compile config: unknown optimizer \"Lion\" (SGD, Adam, "
            "AdamW, RMSprop, Adagrad, Adadelta, Adamax, Nadam, Ftrl)");
  EXPECT_EQ(refusal(R"({"optimizer": {"class_name": "SGD", "config":
                        {"weight_decay": 0.01}}, "loss": "mse"})"),
            "m.keras: compile config: optimizer SGD: weight_decay = 0.01 is "
            "not supported");
  EXPECT_EQ(refusal(R"({"optimizer": {"class_name": "Adam", "config":
                        {"use_ema": true}}, "loss": "mse"})"),
            "m.keras: compile config: optimizer Adam: use_ema = true is not "
            "supported");
  EXPECT_EQ(refusal(R"({"optimizer": {"class_name": "Nadam", "config":
                        {"is_legacy_optimizer": true}}, "loss": "mse"})"),
            "m.keras: compile config: optimizer Nadam: is_legacy_optimizer "
            "= true is not supported");
  EXPECT_EQ(refusal(R"({"optimizer": {"class_name": "Adam", "config":
                        {"foo": 1}}, "loss": "mse"})"),
            "m.keras: compile config: optimizer Adam: argument foo = 1 is "
            "not supported");
  EXPECT_EQ(refusal(R"({"optimizer": {"class_name": "Adam", "config":
                        {"clipnorm": 1.0, "clipvalue": 1.0}}, "loss": "mse"})"),
            "m.keras: compile config: optimizer Adam: only one of clipnorm, "
            "clipvalue and global_clipnorm may be set (Keras refuses more)");
  EXPECT_EQ(refusal(R"({"optimizer": {"class_name": "Adam", "config":
                        {"learning_rate": {"class_name": "Warmup",
                        "config": {}}}}, "loss": "mse"})"),
            "m.keras: compile config: unknown learning-rate schedule "
            "\"Warmup\" (ExponentialDecay, PiecewiseConstantDecay, "
            "PolynomialDecay, InverseTimeDecay, CosineDecay, "
            "CosineDecayRestarts)");
  EXPECT_EQ(refusal(R"({"optimizer": {"class_name": "Adam", "config":
                        {"learning_rate": {"class_name": "CosineDecay",
                        "config": {"initial_learning_rate": 0.1,
                        "decay_steps": 10, "warmup_target": 0.5}}}},
                        "loss": "mse"})"),
            "m.keras: compile config: learning-rate schedule CosineDecay: "
            "warmup_target = 0.5 is not supported");
  EXPECT_EQ(refusal(R"({"optimizer": "adam", "loss": "focal"})"),
            std::string("m.keras: compile config: loss of output \"out\": "
                        "unknown loss \"focal\" (sparse_categorical_"
                        "crossentropy, categorical_crossentropy, binary_"
                        "crossentropy, mse, mae, mape, msle, huber, hinge, "
                        "squared_hinge, kld, poisson, cosine_similarity, "
                        "log_cosh, or their classes)"));
  EXPECT_EQ(refusal(R"({"optimizer": "adam", "loss": {"class_name":
                        "MeanSquaredError", "config": {"reduction": "sum"}}})"),
            "m.keras: compile config: loss of output \"out\": reduction "
            "\"sum\" is not supported (Keras's fit reduces by "
            "sum_over_batch_size)");
  EXPECT_EQ(refusal(R"({"optimizer": "adam", "loss": {"x": "mse"}})"),
            "m.keras: compile config: loss for \"x\", which is not an "
            "output of the model");
  EXPECT_EQ(refusal(R"({"optimizer": "adam", "loss": ["mse", "mae"]})"),
            "m.keras: compile config: loss: a list of 2 for 1 outputs");
  EXPECT_EQ(refusal(R"({"optimizer": "adam", "loss": "mse"})", {}),
            "m.keras: compile config: no output has a loss");
  EXPECT_EQ(refusal(R"({"optimizer": "adam"})"),
            "m.keras: compile config: no loss: model_to_estimator needs a "
            "model compiled with a loss");
  EXPECT_EQ(refusal(R"({"loss": "mse"})"),
            "m.keras: compile config: no optimizer: model_to_estimator needs "
            "a compiled model");
  EXPECT_EQ(refusal(R"({"optimizer": "adam", "loss": "mse",
                        "metrics": ["top_k"]})"),
            "m.keras: compile config: metric of output \"out\": unknown "
            "metric \"top_k\" (accuracy, acc, binary_accuracy, "
            "categorical_accuracy, sparse_categorical_accuracy, AUC, "
            "Precision, Recall, RootMeanSquaredError, mse, mae, mape, msle, "
            "a loss function's name or metric class)");
  EXPECT_EQ(refusal(R"({"optimizer": "adam", "loss": "mse", "metrics":
                        [{"class_name": "Precision", "config": {"name": "p",
                        "top_k": 3}}]})"),
            "m.keras: compile config: metric of output \"out\" (Precision): "
            "top_k = 3 is not supported");
  EXPECT_EQ(refusal(R"({"optimizer": "adam", "loss": "mse",
                        "weighted_metrics": ["mae"]})"),
            "m.keras: compile config: weighted_metrics are not supported "
            "(TF's model_to_estimator does not convert them either)");
  EXPECT_EQ(refusal(R"({"optimizer": "adam", "loss": "mse",
                        "loss_weights": ["x"]})"),
            "m.keras: compile config: loss_weights of output \"out\" must "
            "be a number, got \"x\"");
}

#ifdef ESTC_KERAS_FIXTURES
class ModelToEstimatorTest : public estc::testing::FileTest {
protected:
  ModelToEstimatorTest() : FileTest("keras-estimator") {}
  std::string tiny() const {
    return std::string(ESTC_KERAS_FIXTURES) + "/tiny.keras";
  }
  KerasEstimatorOptions options() const {
    KerasEstimatorOptions o;
    o.model_dir = path("model");
    RunConfigOptions rc;
    rc.tf_random_seed = 1;
    rc.save_summary_steps = 0;
    o.config = RunConfig(rc);
    return o;
  }
  static InputFn input(Features x, std::optional<TensorValue> y) {
    return numpy_input_fn(std::move(x), std::move(y),
                          {.batch_size = 2, .num_epochs = 1});
  }
};

TEST_F(ModelToEstimatorTest, FirstCheckpointHoldsTheFilesWeights) {
  auto est = model_to_estimator(tiny(), options());
  EXPECT_EQ(est->input_names().size(), 1u);
  std::string prefix = path("model") + "/keras/keras_model.ckpt";
  train::CheckpointReader reader = train::load_checkpoint(prefix);
  keras::KerasModel m = keras::load_model(tiny());
  for (const auto &[name, value] : keras::variable_values(m))
    EXPECT_EQ(reader.get_tensor(name).data, value.data) << name;
  // A second Estimator over the same model_dir reuses it (TF's
  // _save_first_checkpoint).
  auto before =
      std::filesystem::last_write_time(train::checkpoint_file(prefix));
  auto again = model_to_estimator(tiny(), options());
  EXPECT_EQ(std::filesystem::last_write_time(train::checkpoint_file(prefix)),
            before);
}

TEST_F(ModelToEstimatorTest, TrainsEvaluatesAndWritesBack) {
  auto est = model_to_estimator(tiny(), options());
  std::string in = est->input_names()[0];
  Features x = {
      {in, TensorValue::of<float>({4, 3}, {0.1f, 0.2f, 0.3f, -1, 0.5f, 2, 1, 1,
                                           1, 0, -0.5f, 0.25f})}};
  TensorValue y = TensorValue::of<float>({4, 2}, {1, 0, 0, 1, 1, 1, 0, 0});
  est->train(input(x, y), {.steps = 2});
  EvalResults r = est->evaluate(input(x, y));
  EXPECT_TRUE(r.count("loss"));
  EXPECT_EQ(r.at("global_step"), 2);

  std::string out = path("tuned.keras");
  size_t n = est->save_keras_model(out);
  keras::KerasModel written = keras::load_model(out);
  EXPECT_EQ(n, written.weights().size());
  for (const auto &[name, value] : keras::variable_values(written))
    EXPECT_EQ(est->get_variable_value(name).data, value.data) << name;
  // The weights moved from the file's (Adam's first steps change every
  // trainable weight).
  keras::KerasModel original = keras::load_model(tiny());
  EXPECT_NE(keras::variable_values(original).at("dense/kernel").data,
            keras::variable_values(written).at("dense/kernel").data);
  // The same through the free function.
  EXPECT_EQ(save_keras_model(*est, tiny(), path("again.keras")), n);
}

TEST_F(ModelToEstimatorTest, ExportsAndServesAsAnyEstimator) {
  auto est = model_to_estimator(tiny(), options());
  std::string in = est->input_names()[0];
  std::string out = est->output_names()[0];
  Features x = {{in, TensorValue::of<float>({2, 3}, {1, 2, 3, -1, 0, 0.5f})}};
  TensorValue y = TensorValue::of<float>({2, 2}, {1, 0, 0, 1});
  est->train(input(x, y), {.steps = 1});
  std::string dir =
      est->export_saved_model(path("export"), est->serving_input_receiver_fn());
  auto served = serving::SavedModel::load(dir);
  serving::TensorMap got = served->run("serving_default", {{in, x.at(in)}});
  std::vector<float> want;
  for (const Prediction &p :
       est->predict(input(x, std::nullopt), {.yield_single_examples = false}))
    want = p.at(out).values<float>();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got.begin()->second.values<float>(), want);

  // export_outputs: one more signature, named by the output (TF's
  // export_output_cls(predictions[key])).
  KerasEstimatorOptions o = options();
  o.export_outputs = {{out, ExportOutput::Kind::Predict}};
  auto est2 = model_to_estimator(tiny(), o);
  std::string dir2 = est2->export_saved_model(
      path("export2"), est2->serving_input_receiver_fn());
  auto served2 = serving::SavedModel::load(dir2);
  EXPECT_TRUE(served2->signatures().count("serving_default"));
  ASSERT_TRUE(served2->signatures().count(out));
  serving::TensorMap got2 = served2->run(out, {{in, x.at(in)}});
  ASSERT_TRUE(got2.count("output"));
  EXPECT_EQ(got2.at("output").values<float>(), want);
}

TEST_F(ModelToEstimatorTest, FeatureRefusalsAtTrainTime) {
  auto est = model_to_estimator(tiny(), options());
  std::string in = est->input_names()[0];
  TensorValue y = TensorValue::of<float>({2, 2}, {1, 0, 0, 1});
  // Two features, none of them the input's.
  Features wrong = {
      {"a", TensorValue::of<float>({2, 3}, std::vector<float>(6))},
      {"b", TensorValue::of<float>({2, 3}, std::vector<float>(6))}};
  EXPECT_EQ(messageOf<std::invalid_argument>(
                [&] { est->train(input(wrong, y), {.steps = 1}); }),
            "model_to_estimator: the features lack the model's input \"" + in +
                "\" (inputs: " + in + "; features: a, b)");
  Features dtype = {
      {in, TensorValue::of<double>({2, 3}, std::vector<double>(6))}};
  EXPECT_EQ(messageOf<std::invalid_argument>(
                [&] { est->train(input(dtype, y), {.steps = 1}); }),
            "model_to_estimator: feature \"" + in +
                "\" is F64, the model's input takes F32");
  Features shape = {
      {in, TensorValue::of<float>({2, 4}, std::vector<float>(8))}};
  EXPECT_EQ(messageOf<std::invalid_argument>(
                [&] { est->train(input(shape, y), {.steps = 1}); }),
            "model_to_estimator: feature \"" + in +
                "\" has shape [?, 4], the model's input takes [?, 3]");
  // The lone feature of a one-input model, whatever its key (TF takes a
  // tensor).
  Features lone = {
      {"anything", TensorValue::of<float>({2, 3}, std::vector<float>(6))}};
  est->train(input(lone, y), {.steps = 1});
  EXPECT_EQ(est->get_variable_value("global_step").values<int64_t>()[0], 1);
}

// Several outputs: each output's labels are the feature "labels/<output>";
// train and evaluate take no labels tensor, predict no label features.
TEST_F(ModelToEstimatorTest, SeveralOutputsTakeTheirLabelsAsFeatures) {
  std::string two = std::string(ESTC_KERAS_FIXTURES) + "/two_outputs.keras";
  auto est = model_to_estimator(two, options());
  EXPECT_EQ(est->input_names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(est->output_names(), (std::vector<std::string>{"cls", "reg"}));
  Features x = {
      {"a", TensorValue::of<float>({2, 4}, {1, 2, 3, 4, -1, 0, 1, 0})},
      {"b", TensorValue::of<float>({2, 3}, {0.5f, 0, 1, 1, 1, -1})}};
  Features xy = x;
  xy["labels/cls"] = TensorValue::of<int64_t>({2}, {2, 0});
  xy["labels/reg"] = TensorValue::of<float>({2, 1}, {0.5f, -1});
  est->train(input(xy, std::nullopt), {.steps = 1});
  EvalResults r = est->evaluate(input(xy, std::nullopt));
  for (const char *key : {"loss", "cls_accuracy", "reg_mae", "global_step"})
    EXPECT_TRUE(r.count(key)) << key;
  int n = 0;
  for (const Prediction &p : est->predict(input(x, std::nullopt))) {
    EXPECT_EQ(p.at("cls").shape, (std::vector<int64_t>{3}));
    EXPECT_EQ(p.at("reg").shape, (std::vector<int64_t>{1}));
    ++n;
  }
  EXPECT_EQ(n, 2);
  // An output's labels missing.
  auto fresh = model_to_estimator(two, [&] {
    KerasEstimatorOptions o = options();
    o.model_dir = path("fresh");
    return o;
  }());
  Features partial = x;
  partial["labels/cls"] = xy.at("labels/cls");
  EXPECT_EQ(messageOf<std::invalid_argument>([&] {
              fresh->train(input(partial, std::nullopt), {.steps = 1});
            }),
            "model_to_estimator: the model has several outputs: the labels "
            "of output \"reg\" must be the feature \"labels/reg\"");
  // metric_names_map renames the output-prefixed names.
  KerasEstimatorOptions renamed = options();
  renamed.model_dir = path("renamed");
  renamed.metric_names_map = {{"cls_accuracy", "acc"}, {"reg_mae", "mae"}};
  auto est2 = model_to_estimator(two, renamed);
  EvalResults r2 = est2->evaluate(input(xy, std::nullopt));
  EXPECT_TRUE(r2.count("acc"));
  EXPECT_TRUE(r2.count("mae"));
  renamed.metric_names_map = {{"cls_accuracy", "acc"}};
  EXPECT_EQ(messageOf<std::invalid_argument>(
                [&] { model_to_estimator(two, renamed); }),
            "model_to_estimator: metric_names_map lacks the model's metric "
            "\"reg_mae\"");
}

TEST_F(ModelToEstimatorTest, OptionRefusals) {
  KerasEstimatorOptions o = options();
  o.checkpoint_format = "object";
  EXPECT_EQ(
      messageOf<std::invalid_argument>([&] { model_to_estimator(tiny(), o); }),
      "model_to_estimator: checkpoint_format must be \"checkpoint\" or "
      "\"saver\", got \"object\"");
  o = options();
  RunConfigOptions rc;
  rc.model_dir = path("other");
  o.config = RunConfig(rc);
  EXPECT_EQ(
      messageOf<std::invalid_argument>([&] { model_to_estimator(tiny(), o); }),
      "model_to_estimator: model_dir \"" + path("model") +
          "\" and config's model_dir \"" + path("other") +
          "\" differ (give one, or the same)");
  o = options();
  o.export_outputs = {{"nope", ExportOutput::Kind::Regression}};
  std::string outputs = keras::model_output_names(keras::load_model(tiny()))[0];
  EXPECT_EQ(
      messageOf<std::invalid_argument>([&] { model_to_estimator(tiny(), o); }),
      "model_to_estimator: export_outputs names \"nope\", which is not "
      "an output of the model (outputs: " +
          outputs + ")");
  o = options();
  o.metric_names_map = {{"accuracy", "acc"}};
  EXPECT_EQ(
      messageOf<std::invalid_argument>([&] { model_to_estimator(tiny(), o); }),
      "model_to_estimator: metric_names_map names \"accuracy\", which "
      "is not a metric of the model");
  // A weights-only file has no model config.
  EXPECT_NE(messageOf<keras::KerasError>([&] {
              model_to_estimator(std::string(ESTC_KERAS_FIXTURES) +
                                     "/tiny.weights.h5",
                                 options());
            }),
            "");
}
#endif

} // namespace
