//===- SequenceExampleTest.cpp - tf.train.SequenceExample parsing --------===//
//
// parse_sequence_example and parse_single_sequence_example on records made
// by SequenceExampleBuilder, against the outputs TF 2.15 gave for the same
// records (the values below were printed by tf.io.parse_sequence_example):
// shapes, padding, lengths, sparse indices of both ranks, the empty cases,
// every error with its exact message, and the specs TF refuses.
// test/e2e/tf_sequence_compat.py compares random records with TF itself.
//
//===----------------------------------------------------------------------===//

#include "lib/Data/SequenceExample.h"
#include "lib/Data/example.pb.h"

#include "FileTesting.h"

#include <gtest/gtest.h>

using namespace estc;
using namespace estc::data;

namespace {

template <typename F> std::string errorOf(F &&fn) {
  return estc::testing::messageOf<DataError>(fn);
}

template <typename F> std::string invalidArgumentOf(F &&fn) {
  return estc::testing::messageOf<std::invalid_argument>(fn);
}

using Steps = std::vector<std::vector<int64_t>>;
using Ints = std::vector<int64_t>;

const FeatureSpecs kNone;

/// A SequenceExample whose feature list `name` has the given int64 steps.
std::string intList(const std::string &name, const Steps &steps) {
  return SequenceExampleBuilder()
      .add_feature_list_int64(name, steps)
      .serialize();
}

/// A Feature message with no list set, as a step or a context value.
std::string withEmptyFeature(bool context, const std::string &name,
                             int stepsBefore) {
  proto::SequenceExample m;
  if (context) {
    (*m.mutable_context()->mutable_feature())[name];
  } else {
    auto &list = (*m.mutable_feature_lists()->mutable_feature_list())[name];
    for (int i = 0; i < stepsBefore; ++i) {
      auto *values = list.add_feature()->mutable_int64_list();
      values->add_value(7);
      values->add_value(7);
    }
    list.add_feature();
  }
  return m.SerializeAsString();
}

} // namespace

TEST(SequenceExampleTest, DenseSequencesPaddedWithLengths) {
  FeatureSpecs seq{{"a", FixedLenSequenceFeature{{2}, DType::Int64, true, {}}}};
  std::string missing = SequenceExampleBuilder().serialize();
  std::string two = intList("a", {{1, 2}, {3, 4}});
  Element e = parse_sequence_example({missing, two}, kNone, seq);
  ASSERT_EQ(e.items().size(), 3u);
  EXPECT_TRUE(e[0].fields().empty());
  const TensorValue &a = tensor(e[1]["a"]);
  EXPECT_EQ(a.shape, (Ints{2, 2, 2}));
  EXPECT_EQ(a.values<int64_t>(), (Ints{0, 0, 0, 0, 1, 2, 3, 4}));
  EXPECT_EQ(tensor(e[2]["a"]).values<int64_t>(), (Ints{0, 2}));

  Element single = parse_single_sequence_example(two, kNone, seq);
  ASSERT_EQ(single.items().size(), 2u);
  EXPECT_EQ(tensor(single[1]["a"]).shape, (Ints{2, 2}));
  EXPECT_EQ(tensor(single[1]["a"]).values<int64_t>(), (Ints{1, 2, 3, 4}));
  EXPECT_EQ(
      tensor(parse_single_sequence_example(missing, kNone, seq)[1]["a"]).shape,
      (Ints{0, 2}));
  // A present list of no steps: [1, 0, 2], length 0, also when required.
  seq["a"] = FixedLenSequenceFeature{{2}, DType::Int64, false, {}};
  Element none = parse_sequence_example({intList("a", {})}, kNone, seq);
  EXPECT_EQ(tensor(none[1]["a"]).shape, (Ints{1, 0, 2}));
  EXPECT_EQ(tensor(none[2]["a"]).values<int64_t>(), (Ints{0}));
}

TEST(SequenceExampleTest, StringsFloatsAndStepShapes) {
  FeatureSpecs seq{
      {"s", FixedLenSequenceFeature{{}, DType::String, false, {}}},
      {"g", FixedLenSequenceFeature{{2, 3}, DType::Float32, true, {}}}};
  std::string r0 = SequenceExampleBuilder()
                       .add_feature_list_bytes("s", {{"x"}})
                       .add_feature_list_float("g", {{1, 2, 3, 4, 5, 6}})
                       .serialize();
  std::string r1 = SequenceExampleBuilder()
                       .add_feature_list_bytes("s", {{"y"}, {"z"}})
                       .serialize();
  Element e = parse_sequence_example({r0, r1}, kNone, seq);
  const TensorValue &s = tensor(e[1]["s"]);
  EXPECT_EQ(s.shape, (Ints{2, 2}));
  EXPECT_EQ(s.strings, (std::vector<std::string>{"x", "", "y", "z"}));
  const TensorValue &g = tensor(e[1]["g"]);
  EXPECT_EQ(g.shape, (Ints{2, 1, 2, 3}));
  EXPECT_EQ(g.values<float>(),
            (std::vector<float>{1, 2, 3, 4, 5, 6, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(tensor(e[2]["s"]).values<int64_t>(), (Ints{1, 2}));
  EXPECT_EQ(tensor(e[2]["g"]).values<int64_t>(), (Ints{1, 0}));
}

TEST(SequenceExampleTest, VarLenSequencesAreRank3Sparse) {
  FeatureSpecs seq{{"v", VarLenFeature{DType::Int64}}};
  // Steps [1,2,3], [], (no list), [4]; then [5]. TF: indices (b, step, i),
  // dense_shape [2, 4, 3].
  proto::SequenceExample m;
  auto &list = (*m.mutable_feature_lists()->mutable_feature_list())["v"];
  list.add_feature()->mutable_int64_list()->mutable_value()->Add(1);
  list.mutable_feature(0)->mutable_int64_list()->add_value(2);
  list.mutable_feature(0)->mutable_int64_list()->add_value(3);
  list.add_feature()->mutable_int64_list();
  list.add_feature();
  list.add_feature()->mutable_int64_list()->add_value(4);
  std::string r0 = m.SerializeAsString();
  std::string r1 = intList("v", {{5}});
  Element e = parse_sequence_example({r0, r1}, kNone, seq);
  const SparseTensor &v = sparse(e[1]["v"]);
  EXPECT_EQ(v.index_values(),
            (Ints{0, 0, 0, 0, 0, 1, 0, 0, 2, 0, 3, 0, 1, 0, 0}));
  EXPECT_EQ(v.values.values<int64_t>(), (Ints{1, 2, 3, 4, 5}));
  EXPECT_EQ(v.dense_shape, (Ints{2, 4, 3}));
  EXPECT_TRUE(e[2].fields().empty()); // lengths: dense features only

  Element single = parse_single_sequence_example(r0, kNone, seq);
  const SparseTensor &one = sparse(single[1]["v"]);
  EXPECT_EQ(one.index_values(), (Ints{0, 0, 0, 1, 0, 2, 3, 0}));
  EXPECT_EQ(one.dense_shape, (Ints{4, 3}));

  // Missing everywhere: [2, 0, 0] and, single, [0, 0].
  std::string empty = SequenceExampleBuilder().serialize();
  EXPECT_EQ(sparse(parse_sequence_example({empty, empty}, kNone, seq)[1]["v"])
                .dense_shape,
            (Ints{2, 0, 0}));
  Element missing = parse_single_sequence_example(empty, kNone, seq);
  const SparseTensor &none = sparse(missing[1]["v"]);
  EXPECT_EQ(none.dense_shape, (Ints{0, 0}));
  EXPECT_EQ(none.indices.shape, (Ints{0, 2}));
}

TEST(SequenceExampleTest, ContextAsParseExample) {
  FeatureSpecs ctx{
      {"c", FixedLenFeature{{2},
                            DType::Int64,
                            TensorValue::of<int64_t>({2}, Ints{7, 8})}},
      {"w", VarLenFeature{DType::String}},
      {"f", FixedLenFeature{{}, DType::Float32, {}}}};
  std::string r0 = SequenceExampleBuilder()
                       .add_context_float("f", {1.5f})
                       .add_context_bytes("w", {"a", "b"})
                       .serialize();
  std::string r1 = SequenceExampleBuilder()
                       .add_context_float("f", {-2})
                       .add_context_int64("c", {1, 2})
                       .serialize();
  Element e = parse_sequence_example({r0, r1}, ctx, kNone);
  EXPECT_EQ(tensor(e[0]["c"]).shape, (Ints{2, 2}));
  EXPECT_EQ(tensor(e[0]["c"]).values<int64_t>(), (Ints{7, 8, 1, 2}));
  EXPECT_EQ(tensor(e[0]["f"]).values<float>(), (std::vector<float>{1.5, -2}));
  const SparseTensor &w = sparse(e[0]["w"]);
  EXPECT_EQ(w.index_values(), (Ints{0, 0, 0, 1}));
  EXPECT_EQ(w.dense_shape, (Ints{2, 2}));
  Element one = parse_single_sequence_example(r0, ctx, kNone);
  EXPECT_EQ(tensor(one[0]["c"]).shape, (Ints{2}));
  EXPECT_EQ(tensor(one[0]["f"]).shape, (Ints{}));
  EXPECT_EQ(sparse(one[0]["w"]).index_values(), (Ints{0, 1}));
  EXPECT_EQ(sparse(one[0]["w"]).dense_shape, (Ints{2}));
}

TEST(SequenceExampleTest, SameNameInContextAndFeatureLists) {
  FeatureSpecs ctx{{"a", FixedLenFeature{{}, DType::Int64, {}}}};
  FeatureSpecs seq{
      {"a", FixedLenSequenceFeature{{2}, DType::Int64, false, {}}}};
  std::string r = SequenceExampleBuilder()
                      .add_context_int64("a", {3})
                      .add_feature_list_int64("a", {{1, 2}})
                      .serialize();
  Element e = parse_sequence_example({r}, ctx, seq);
  EXPECT_EQ(tensor(e[0]["a"]).values<int64_t>(), (Ints{3}));
  EXPECT_EQ(tensor(e[1]["a"]).values<int64_t>(), (Ints{1, 2}));
}

TEST(SequenceExampleTest, EmptyBatch) {
  FeatureSpecs ctx{{"c", VarLenFeature{DType::Int64}}};
  FeatureSpecs seq{{"a", FixedLenSequenceFeature{{2}, DType::Int64, true, {}}}};
  SequenceExampleParser parser(ctx, seq);
  Element e = parser.parse_sequence_example(std::vector<std::string_view>{});
  EXPECT_EQ(sparse(e[0]["c"]).dense_shape, (Ints{0, 0}));
  EXPECT_EQ(tensor(e[1]["a"]).shape, (Ints{0, 0, 2}));
  EXPECT_EQ(tensor(e[2]["a"]).shape, (Ints{0}));
  ElementSpec batched = parser.element_spec(true);
  ASSERT_EQ(batched.items().size(), 3u);
  EXPECT_EQ(batched[0]["c"].leaf(), (ValueSpec{DType::Int64, {-1, -1}, true}));
  EXPECT_EQ(batched[1]["a"].leaf(), (ValueSpec{DType::Int64, {-1, -1, 2}}));
  EXPECT_EQ(batched[2]["a"].leaf(), (ValueSpec{DType::Int64, {-1}}));
  ElementSpec single = parser.element_spec(false);
  ASSERT_EQ(single.items().size(), 2u);
  EXPECT_EQ(single[0]["c"].leaf(), (ValueSpec{DType::Int64, {-1}, true}));
  EXPECT_EQ(single[1]["a"].leaf(), (ValueSpec{DType::Int64, {-1, 2}}));
}

// One test per error TF raises, each in record 1 of a batch whose record 0
// is good; the messages are exact.
TEST(SequenceExampleTest, DataErrors) {
  FeatureSpecs ctx{{"c", FixedLenFeature{{}, DType::Int64, {}}}};
  FeatureSpecs seq{
      {"s", FixedLenSequenceFeature{{2}, DType::Int64, false, {}}}};
  SequenceExampleParser parser(ctx, seq);
  auto good = [] {
    return SequenceExampleBuilder()
        .add_context_int64("c", {1})
        .add_feature_list_int64("s", {{1, 2}});
  };
  auto fails = [&](const std::string &bad) {
    return errorOf(
        [&] { parser.parse_sequence_example({good().serialize(), bad}); });
  };
  EXPECT_EQ(fails(good().add_context_float("c", {1}).serialize()),
            "record 1: context feature 'c' is a float_list, expected "
            "int64_list");
  EXPECT_EQ(fails(SequenceExampleBuilder()
                      .add_feature_list_int64("s", {{1, 2}})
                      .serialize()),
            "record 1: context feature 'c' is required but missing (no "
            "default_value)");
  EXPECT_EQ(fails(good().add_context_int64("c", {1, 2}).serialize()),
            "record 1: context feature 'c' has 2 values, expected 1 for shape "
            "[]");
  EXPECT_EQ(
      fails(SequenceExampleBuilder().add_context_int64("c", {1}).serialize()),
      "record 1: feature list 's' is required but missing "
      "(allow_missing is false)");
  EXPECT_EQ(fails(good().add_feature_list_float("s", {{1, 2}}).serialize()),
            "record 1: feature list 's' step 0 is a float_list, expected "
            "int64_list");
  EXPECT_EQ(
      fails(good().add_feature_list_int64("s", {{1, 2}, {3}}).serialize()),
      "record 1: feature list 's' step 1 has 1 values, expected 2 for "
      "shape [2]");
  EXPECT_EQ(fails("\x0a\x05"
                  "ab"),
            "record 1: not a valid tf.train.SequenceExample");
  // A step without a list has no values (not another kind).
  EXPECT_EQ(errorOf([&] {
              parser.parse_single_sequence_example(
                  withEmptyFeature(false, "s", 1));
            }),
            "record 0: context feature 'c' is required but missing (no "
            "default_value)");
  FeatureSpecs seqOnly = seq;
  EXPECT_EQ(errorOf([&] {
              parse_single_sequence_example(withEmptyFeature(false, "s", 1),
                                            kNone, seqOnly);
            }),
            "record 0: feature list 's' step 1 has 0 values, expected 2 for "
            "shape [2]");
  // An empty list of another kind is still the wrong kind (VarLen too).
  FeatureSpecs var{{"v", VarLenFeature{DType::Int64}}};
  EXPECT_EQ(errorOf([&] {
              parse_single_sequence_example(
                  SequenceExampleBuilder()
                      .add_feature_list_float("v", {{}})
                      .serialize(),
                  kNone, var);
            }),
            "record 0: feature list 'v' step 0 is a float_list, expected "
            "int64_list");
  // A context Feature without a list is present with no values: TF's
  // sequence kernel refuses it even with a default (parse_example would
  // take the default).
  FeatureSpecs withDefault{
      {"c", FixedLenFeature{
                {}, DType::Int64, TensorValue::of<int64_t>({}, Ints{5})}}};
  EXPECT_EQ(errorOf([&] {
              parse_single_sequence_example(withEmptyFeature(true, "c", 0),
                                            withDefault, kNone);
            }),
            "record 0: context feature 'c' has 0 values, expected 1 for "
            "shape []");
  // A name with a newline stays one line.
  FeatureSpecs odd{
      {"a\nb", FixedLenSequenceFeature{{}, DType::Int64, false, {}}}};
  std::string message = errorOf([&] {
    parse_single_sequence_example(SequenceExampleBuilder().serialize(), kNone,
                                  odd);
  });
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_NE(message.find("feature list 'a"), std::string::npos) << message;
}

TEST(SequenceExampleTest, SpecErrors) {
  FeatureSpecs fixed{{"f", FixedLenFeature{{}, DType::Int64, {}}}};
  FeatureSpecs seq{{"s", FixedLenSequenceFeature{{}, DType::Int64, true, {}}}};
  EXPECT_EQ(invalidArgumentOf([] { SequenceExampleParser(kNone, kNone); }),
            "parse_sequence_example: context_features and sequence_features "
            "are both empty; at least one must have features");
  EXPECT_EQ(invalidArgumentOf([&] { SequenceExampleParser(kNone, fixed); }),
            "feature 'f': a FixedLenFeature is not a sequence feature "
            "(FixedLenSequenceFeature or VarLenFeature)");
  EXPECT_EQ(invalidArgumentOf([&] { SequenceExampleParser(seq, kNone); }),
            "feature 's': a FixedLenSequenceFeature is not a context feature "
            "(FixedLenFeature or VarLenFeature)");
  FeatureSpecs withDefault{
      {"s",
       FixedLenSequenceFeature{
           {}, DType::Int64, true, TensorValue::of<int64_t>({}, Ints{1})}}};
  EXPECT_EQ(
      invalidArgumentOf([&] { SequenceExampleParser(kNone, withDefault); }),
      "feature 's': a sequence feature takes no default_value (lists "
      "are padded with 0 or \"\")");
  FeatureSpecs noElements{
      {"s", FixedLenSequenceFeature{{0}, DType::Int64, true, {}}}};
  EXPECT_NE(
      invalidArgumentOf([&] { SequenceExampleParser(kNone, noElements); }), "");
  FeatureSpecs badDtype{{"s", VarLenFeature{DType::Int32}}};
  EXPECT_NE(invalidArgumentOf([&] {
              SequenceExampleParser(kNone, badDtype);
            }).find("feature 's': dtype"),
            std::string::npos);
  FeatureSpecs badDefault{
      {"c", FixedLenFeature{
                {2}, DType::Int64, TensorValue::of<int64_t>({}, Ints{1})}}};
  EXPECT_NE(
      invalidArgumentOf([&] { SequenceExampleParser(badDefault, kNone); }), "");
}

TEST(SequenceExampleTest, BuilderWritesTheProtoMessage) {
  std::string bytes = SequenceExampleBuilder()
                          .add_context_bytes("k", {"v"})
                          .add_feature_list_float("f", {{1}, {2, 3}})
                          .serialize();
  proto::SequenceExample m;
  ASSERT_TRUE(m.ParseFromString(bytes));
  EXPECT_EQ(m.context().feature().at("k").bytes_list().value(0), "v");
  const auto &steps = m.feature_lists().feature_list().at("f").feature();
  ASSERT_EQ(steps.size(), 2);
  EXPECT_EQ(steps[1].float_list().value(1), 3.0f);
  // Field numbers as TF's: context 1, feature_lists 2.
  EXPECT_EQ(static_cast<unsigned char>(bytes[0]), (1 << 3) | 2);
}
