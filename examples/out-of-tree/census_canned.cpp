//===- census_canned.cpp - A canned estimator on a CSV, exported ----------===//
//
//   census_canned WORK_DIR
//
// A user's census trainer, as TF's wide & deep tutorial: feature columns
// (numeric, bucketized, vocabulary list, hash bucket, crossed, embedding,
// indicator), DNNLinearCombinedClassifier compiled in process,
// make_csv_dataset over CSV files it writes into WORK_DIR, evaluation, then
// export_saved_model (a parsing receiver, with a raw alternative) into
// WORK_DIR/export. It writes the Estimator's own predictions of the served
// rows (WORK_DIR/served.csv) to WORK_DIR/expected_predictions.txt, for
// census_serve, census_c_api and estc-serve to compare with. Exit 0 when
// accuracy is above 0.8 and the export exists; 1 otherwise, with one line.
//
//===----------------------------------------------------------------------===//

#include "Census.h"

#include "estc/estimator.h"

#include <cstdio>
#include <exception>
#include <fstream>
#include <iostream>

using namespace estc;
namespace fc = estc::feature_column;

namespace {

int run(const std::string &work) {
  if (!census::write_csv(work + "/train.csv", census::make_rows(3000, 1)) ||
      !census::write_csv(work + "/eval.csv", census::make_rows(1000, 2))) {
    std::cerr << "census_canned: cannot write the CSV files in " << work
              << "\n";
    return 1;
  }

  auto age = fc::numeric_column("age");
  auto hours = fc::numeric_column("hours");
  auto education = fc::categorical_column_with_vocabulary_list(
      "education",
      std::vector<std::string>{"HS-grad", "Bachelors", "Masters", "Doctorate"});
  auto occupation = fc::categorical_column_with_hash_bucket("occupation", 50);
  auto age_buckets = fc::bucketized_column(age, {30, 45, 60});
  auto hour_buckets = fc::bucketized_column(hours, {35});

  estimator::DNNLinearCombinedOptions o;
  o.linear_feature_columns = {
      age_buckets, hour_buckets, education, occupation,
      fc::crossed_column({fc::CrossKey(age_buckets), "education"}, 100)};
  o.dnn_feature_columns = {age, hours, fc::indicator_column(education),
                           fc::embedding_column(occupation, 4)};
  o.dnn_hidden_units = {16, 8};
  o.dnn_optimizer = estimator::OptimizerSpec("Adagrad", 0.05);
  estimator::ClassifierOptions head;
  head.label_vocabulary = {"<=50K", ">50K"};
  estimator::RunConfigOptions config;
  config.model_dir = work + "/model";
  config.tf_random_seed = 1;
  config.log_step_count_steps = 1000;
  estimator::DNNLinearCombinedClassifier model(o, head,
                                               estimator::RunConfig(config));

  auto input = [&work](const std::string &file, std::optional<int64_t> epochs) {
    return [file = work + "/" + file, epochs] {
      data::MakeCsvOptions csv;
      csv.label_name = "income";
      csv.num_epochs = epochs;
      csv.shuffle = false;
      return data::make_csv_dataset({file}, 50, csv);
    };
  };
  model.train(input("train.csv", std::nullopt), {.max_steps = 600});
  estimator::EvalResults metrics = model.evaluate(input("eval.csv", 1));
  double accuracy = metrics.at("accuracy");
  std::printf("census_canned: accuracy %.4f, auc %.4f, loss %.4f\n", accuracy,
              metrics.at("auc"), metrics.at("loss"));

  // Export: tf.Examples parsed with the columns' spec, and the raw features.
  estimator::ServingInputReceiverFn parsing =
      estimator::build_parsing_serving_input_receiver_fn(
          fc::make_parse_example_spec({age, hours, education, occupation}));
  estimator::ServingInputReceiverFn receiver = [parsing] {
    estimator::ServingInputReceiver r = parsing();
    estimator::ReceiverTensors raw;
    raw.tensors = {{"age", DType::Float32, {-1, 1}},
                   {"education", DType::String, {-1, 1}},
                   {"occupation", DType::String, {-1, 1}},
                   {"hours", DType::Float32, {-1, 1}}};
    r.receiver_tensors_alternatives["raw"] = raw;
    return r;
  };
  std::string exported = model.export_saved_model(work + "/export", receiver);
  std::printf("census_canned: exported %s\n", exported.c_str());

  // The Estimator's predictions of the rows the servers will be sent.
  std::vector<census::Row> rows =
      census::make_rows(census::kServedRows, census::kServedSeed);
  if (!census::write_csv(work + "/" + census::kServedFile, rows)) {
    std::cerr << "census_canned: cannot write " << census::kServedFile << "\n";
    return 1;
  }
  int64_t n = census::kServedRows;
  std::vector<float> ages, hourValues;
  std::vector<std::string> educations, occupations;
  for (const census::Row &r : rows) {
    ages.push_back(r.age);
    hourValues.push_back(r.hours);
    educations.push_back(r.education);
    occupations.push_back(r.occupation);
  }
  estimator::Features x = {
      {"age", TensorValue::of<float>({n, 1}, ages)},
      {"hours", TensorValue::of<float>({n, 1}, hourValues)},
      {"education", TensorValue::of_strings({n, 1}, educations)},
      {"occupation", TensorValue::of_strings({n, 1}, occupations)}};
  std::ofstream expected(work + "/" + census::kExpectedFile);
  for (const estimator::Prediction &p : model.predict(
           estimator::numpy_input_fn(x, std::nullopt, {n, 1, false, 0}))) {
    char line[64];
    std::snprintf(line, sizeof line, "%.9g %s\n",
                  p.at("probabilities").values<float>()[1],
                  p.at("classes").strings[0].c_str());
    expected << line;
  }
  if (!expected.flush()) {
    std::cerr << "census_canned: cannot write " << census::kExpectedFile
              << "\n";
    return 1;
  }
  if (accuracy < 0.8) {
    std::cerr << "census_canned: accuracy " << accuracy
              << " is not above 0.8\n";
    return 1;
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::cerr << "usage: census_canned WORK_DIR\n";
    return 2;
  }
  try {
    return run(argv[1]);
  } catch (const std::exception &e) {
    std::cerr << "census_canned: " << e.what() << "\n";
    return 1;
  }
}
