//===- CensusTable.h - The census-like table of the canned benchmarks -----===//
//
// What bench/canned_bench.cpp and bench/serving_bench.cpp share about the
// table bench/make_census_table.py writes: its vocabularies, its columns
// with their CSV types, and tf_canned_bench.py's WIDE and DEEP feature
// columns over it (one set of objects, so the two lists share columns as
// TF's do).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_BENCH_CENSUSTABLE_H
#define ESTC_BENCH_CENSUSTABLE_H

#include "estimator/Canned/Estimators.h"
#include "lib/Data/Readers.h"
#include "lib/FeatureColumn/FeatureColumn.h"

#include <string>
#include <utility>
#include <vector>

namespace estc {
namespace bench {

namespace fc = estc::feature_column;

// make_census_table.py's vocabularies, in its order.
inline const std::vector<std::string> kWorkclass = {
    "Private",   "Self-emp-not-inc", "Self-emp-inc", "Federal-gov",
    "Local-gov", "State-gov",        "Without-pay",  "Never-worked"};
inline const std::vector<std::string> kEducation = {
    "Preschool", "1st-4th",      "5th-6th",     "7th-8th",
    "9th",       "10th",         "11th",        "12th",
    "HS-grad",   "Some-college", "Assoc-voc",   "Assoc-acdm",
    "Bachelors", "Masters",      "Prof-school", "Doctorate"};
inline const std::vector<std::string> kMaritalStatus = {"Married-civ-spouse",
                                                        "Divorced",
                                                        "Married-spouse-absent",
                                                        "Never-married",
                                                        "Separated",
                                                        "Married-AF-spouse",
                                                        "Widowed"};
inline const std::vector<std::string> kRelationship = {
    "Husband",   "Not-in-family", "Wife",
    "Own-child", "Unmarried",     "Other-relative"};
inline const std::vector<std::string> kGender = {"Female", "Male"};

/// make_census_table.py's columns, in file order, with their CSV types.
inline const std::vector<std::pair<std::string, DType>> kHeader = {
    {"age", DType::Int64},
    {"workclass", DType::String},
    {"education", DType::String},
    {"education_num", DType::Int64},
    {"marital_status", DType::String},
    {"occupation", DType::String},
    {"relationship", DType::String},
    {"gender", DType::String},
    {"capital_gain", DType::Float32},
    {"capital_loss", DType::Float32},
    {"hours_per_week", DType::Int64},
    {"native_country", DType::String},
    {"zip_code", DType::String},
    {"label", DType::Int64}};

/// tf_canned_bench.py's WIDE and DEEP column lists (one set of objects).
struct CensusColumns {
  fc::FeatureColumns wide, deep;
};

inline CensusColumns censusColumns() {
  std::vector<fc::CategoricalColumnPtr> vocab = {
      fc::categorical_column_with_vocabulary_list("workclass", kWorkclass),
      fc::categorical_column_with_vocabulary_list("education", kEducation),
      fc::categorical_column_with_vocabulary_list("marital_status",
                                                  kMaritalStatus),
      fc::categorical_column_with_vocabulary_list("relationship",
                                                  kRelationship),
      fc::categorical_column_with_vocabulary_list("gender", kGender)};
  std::vector<fc::CategoricalColumnPtr> hashed = {
      fc::categorical_column_with_hash_bucket("occupation", 100),
      fc::categorical_column_with_hash_bucket("native_country", 100),
      fc::categorical_column_with_hash_bucket("zip_code", 1000)};
  auto age = fc::numeric_column("age");
  auto educationNum = fc::numeric_column("education_num");
  auto capitalGain = fc::numeric_column("capital_gain");
  auto capitalLoss = fc::numeric_column("capital_loss");
  auto hours = fc::numeric_column("hours_per_week");
  auto ageBuckets =
      fc::bucketized_column(age, {18, 25, 30, 35, 40, 45, 50, 55, 60, 65});
  CensusColumns c;
  for (const fc::CategoricalColumnPtr &v : vocab)
    c.wide.push_back(v);
  for (const fc::CategoricalColumnPtr &h : hashed)
    c.wide.push_back(h);
  c.wide.push_back(ageBuckets);
  c.wide.push_back(fc::crossed_column({"education", "occupation"}, 1000));
  c.wide.push_back(fc::crossed_column(
      {fc::CrossKey(ageBuckets), "education", "occupation"}, 1000));
  c.wide.insert(c.wide.end(), {educationNum, capitalGain, capitalLoss, hours});
  c.deep = {age, educationNum, capitalGain, capitalLoss, hours};
  for (const fc::CategoricalColumnPtr &v : vocab)
    c.deep.push_back(fc::indicator_column(v));
  for (const fc::CategoricalColumnPtr &h : hashed)
    c.deep.push_back(fc::embedding_column(h, 8));
  return c;
}

/// The table's CSV file as tf_canned_bench.py reads it: batches of `batch`,
/// shuffled (a buffer of 10000, `seed`) and repeated when `training`, one
/// pass otherwise.
inline data::Dataset censusDataset(const std::string &file, bool training,
                                   uint64_t seed, int64_t batch) {
  data::MakeCsvOptions o;
  for (const auto &[name, dtype] : kHeader)
    o.column_defaults.push_back(data::ColumnDefault::required(dtype));
  o.label_name = "label";
  if (!training)
    o.num_epochs = 1;
  o.shuffle = training;
  o.shuffle_buffer_size = 10000;
  o.shuffle_seed = seed;
  o.num_parallel_reads = 1;
  return data::make_csv_dataset({file}, batch, o);
}

/// tf_canned_bench.py's DNNLinearCombinedClassifier: the wide columns with
/// FTRL (0.2), the deep ones through 100-50 with Adagrad (0.05).
inline estimator::CannedModel censusWideDeep() {
  CensusColumns c = censusColumns();
  estimator::DNNLinearCombinedOptions o;
  o.linear_feature_columns = c.wide;
  o.dnn_feature_columns = c.deep;
  o.dnn_hidden_units = {100, 50};
  o.linear_optimizer = estimator::OptimizerSpec("Ftrl", 0.2);
  o.dnn_optimizer = estimator::OptimizerSpec("Adagrad", 0.05);
  return estimator::dnn_linear_combined_model(
      estimator::classifier_head(estimator::ClassifierOptions{}), o);
}

} // namespace bench
} // namespace estc

#endif // ESTC_BENCH_CENSUSTABLE_H
