//===- FeatureColumnHostTransformTest.cpp - Columns as the Estimator's host half
//
// make_host_transform: elements of an input_fn's dataset (raw strings and
// ids) become Batches of model inputs through estimator::Dataset's
// set_transform, the way the Estimator applies it; specs and errors.
//
//===----------------------------------------------------------------------===//

#include "estimator/FeatureColumnTransform.h"
#include "lib/Data/Dataset.h"
#include "test/unit/FileTesting.h"

#include <gtest/gtest.h>

using namespace estc;
using namespace estc::feature_column;
using estc::data::DataError;
using estc::testing::messageOf;

namespace {

FeatureColumns columns() {
  auto sex = categorical_column_with_vocabulary_list("sex", {"m", "f"});
  return {numeric_column("age"), indicator_column(sex),
          embedding_column(weighted_categorical_column(
                               categorical_column_with_identity("ids", 5), "w"),
                           2)};
}

/// Four examples: (features, label).
data::Dataset examples() {
  std::map<std::string, data::Element> f;
  f.emplace("age", TensorValue::of<float>({4}, {20, 30, 40, 50}));
  f.emplace("sex", TensorValue::of_strings({4}, {"m", "f", "x", "f"}));
  f.emplace("ids",
            TensorValue::of<int64_t>({4, 2}, {1, 2, 3, -1, -1, -1, 4, 4}));
  f.emplace("w", TensorValue::of<float>({4, 2}, {1, 2, 3, 0, 0, 0, 5, 6}));
  return data::Dataset::from_tensor_slices(
      data::Element::tuple({data::Element::dict(std::move(f)),
                            TensorValue::of<int64_t>({4}, {0, 1, 1, 0})}));
}

} // namespace

TEST(FeatureColumnHostTransformTest, BatchesOfModelInputs) {
  estimator::Dataset input(examples().batch(3));
  input.set_transform(make_host_transform(columns()));
  std::optional<estimator::ElementSpec> spec = input.element_spec();
  ASSERT_TRUE(spec.has_value());
  std::map<std::string, bool> valuesDim;
  for (const TensorSpec &s : spec->features)
    valuesDim[s.key] = s.values_dim;
  EXPECT_EQ(valuesDim, (std::map<std::string, bool>{
                           {"age", false},
                           {"ids_weighted_by_w/ids", true},
                           {"ids_weighted_by_w/row_lengths", false},
                           {"ids_weighted_by_w/rows", true},
                           {"ids_weighted_by_w/weights", true},
                           {"sex/ids", true},
                           {"sex/row_lengths", false},
                           {"sex/rows", true}}));
  ASSERT_TRUE(spec->labels.has_value());

  std::optional<estimator::Batch> b = input.next();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->size(), 3); // the batch, not the 4 ids
  EXPECT_EQ(b->features.at("ids_weighted_by_w/ids").values<int64_t>(),
            (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(b->features.at("ids_weighted_by_w/weights").values<float>(),
            (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(b->features.at("sex/ids").values<int64_t>(),
            (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(b->labels->values<int64_t>(), (std::vector<int64_t>{0, 1, 1}));
  b = input.next();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->size(), 1);
  EXPECT_EQ(b->features.at("ids_weighted_by_w/ids").values<int64_t>(),
            (std::vector<int64_t>{4, 4}));
  EXPECT_FALSE(input.next().has_value());
}

TEST(FeatureColumnHostTransformTest, SpecsBeforeData) {
  auto t = make_host_transform(columns());
  std::optional<estimator::ElementSpec> spec = t->input_spec(false);
  ASSERT_TRUE(spec.has_value());
  EXPECT_EQ(spec->features.size(), t->transformer().input_specs().size());
  EXPECT_FALSE(spec->labels.has_value());
  // Labels: only when their spec is known.
  EXPECT_FALSE(t->input_spec(true).has_value());
  auto withLabels = make_host_transform(
      columns(), TensorSpec{"y", DType::Int64, {-1}, false});
  spec = withLabels->input_spec(true);
  ASSERT_TRUE(spec && spec->labels);
  EXPECT_EQ(spec->labels->key, "labels");
  EXPECT_EQ(spec->labels->dtype, DType::Int64);
}

TEST(FeatureColumnHostTransformTest, Errors) {
  auto t = make_host_transform(columns());
  EXPECT_THROW(t->transform_input(TensorValue::of<float>({1}, {1})), DataError);
  EXPECT_THROW(t->transform_input(
                   data::Element::tuple({TensorValue::of<float>({1}, {1}),
                                         TensorValue::of<float>({1}, {1})})),
               DataError);
  std::map<std::string, data::Element> f;
  f.emplace("age", TensorValue::of<float>({1}, {20}));
  f.emplace("sex", TensorValue::of_strings({1}, {"m"}));
  f.emplace("ids", TensorValue::of<int64_t>({1}, {1}));
  f.emplace("w", TensorValue::of<float>({1}, {1}));
  data::Element sparseLabels = data::Element::tuple(
      {data::Element::dict(f),
       data::SparseTensor::make({0}, TensorValue::of<int64_t>({1}, {1}), {1})});
  EXPECT_NE(messageOf<DataError>([&] {
              t->transform_input(sparseLabels);
            }).find("SparseTensor"),
            std::string::npos);
  // The Transformer's own errors come through.
  f.erase("w");
  EXPECT_NE(messageOf<DataError>([&] {
              t->transform_input(data::Element::dict(f));
            }).find("feature 'w' is missing"),
            std::string::npos);
  // A dict alone: no labels.
  f.emplace("w", TensorValue::of<float>({1}, {1}));
  EXPECT_FALSE(t->transform_input(data::Element::dict(f)).labels.has_value());
}
