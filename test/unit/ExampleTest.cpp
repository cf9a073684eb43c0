//===- ExampleTest.cpp - tf.train.Example parsing against TF's semantics --===//
//
// Every spec kind with its defaults, shapes and errors, the protobuf
// corner cases the wire format allows (duplicate names, merged and
// unpacked lists, unknown fields, a Feature without a list), and random
// Examples parsed both by estc's parser and by protobuf's generated classes
// (the oracle), which must agree.
//
//===----------------------------------------------------------------------===//

#include "lib/Data/Example.h"
#include "lib/Data/example.pb.h"

#include "FileTesting.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

using namespace estc;
using namespace estc::data;

namespace {

template <typename F> std::string errorOf(F &&fn) {
  return estc::testing::messageOf<DataError>(fn);
}

template <typename F> std::string invalidArgumentOf(F &&fn) {
  return estc::testing::messageOf<std::invalid_argument>(fn);
}

// Wire-format pieces for records protobuf accepts but no builder writes.
std::string varint(uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
  return out;
}
std::string tag(int field, int wire) { return varint((field << 3) | wire); }
std::string delimited(int field, const std::string &payload) {
  return tag(field, 2) + varint(payload.size()) + payload;
}
std::string fixed32(float f) {
  std::string s(4, '\0');
  std::memcpy(s.data(), &f, 4);
  return s;
}
/// An Example with the given map entries (each key, then Feature bytes).
std::string
exampleOf(const std::vector<std::pair<std::string, std::string>> &entries) {
  std::string features;
  for (const auto &[key, feature] : entries)
    features += delimited(1, delimited(1, key) + delimited(2, feature));
  return delimited(1, features);
}
std::string floatList(const std::vector<float> &values) {
  std::string packed;
  for (float v : values)
    packed += fixed32(v);
  return delimited(2, delimited(1, packed));
}
std::string int64List(const std::vector<int64_t> &values) {
  std::string packed;
  for (int64_t v : values)
    packed += varint(static_cast<uint64_t>(v));
  return delimited(3, delimited(1, packed));
}
std::string bytesList(const std::vector<std::string> &values) {
  std::string list;
  for (const std::string &v : values)
    list += delimited(1, v);
  return delimited(1, list);
}

std::vector<std::string_view> views(const std::vector<std::string> &v) {
  return {v.begin(), v.end()};
}

TEST(ExampleTest, FixedLenFeaturesOfEveryDtypeAndShape) {
  std::vector<std::string> records;
  for (int i = 0; i < 3; ++i)
    records.push_back(ExampleBuilder()
                          .add_int64("age", {20 + i})
                          .add_float("px", {1.f * i, 2.f, 3.f, 4.5f})
                          .add_bytes("name", {"n" + std::to_string(i)})
                          .add_int64("unused", {1, 2, 3})
                          .serialize());
  FeatureSpecs specs = {
      {"age", FixedLenFeature{{}, DType::Int64, {}}},
      {"px", FixedLenFeature{{2, 2}, DType::Float32, {}}},
      {"name", FixedLenFeature{{1}, DType::String, {}}},
  };
  Element e = parse_example(views(records), specs);
  ASSERT_TRUE(e.is_dict());
  EXPECT_EQ(e.size(), 3u);
  const TensorValue &age = tensor(e["age"]);
  EXPECT_EQ(age.spec().str(), "I64[3]");
  EXPECT_EQ(age.values<int64_t>(), (std::vector<int64_t>{20, 21, 22}));
  const TensorValue &px = tensor(e["px"]);
  EXPECT_EQ(px.spec().str(), "F32[3,2,2]");
  EXPECT_EQ(px.values<float>(),
            (std::vector<float>{0, 2, 3, 4.5f, 1, 2, 3, 4.5f, 2, 2, 3, 4.5f}));
  const TensorValue &name = tensor(e["name"]);
  EXPECT_EQ(name.spec().str(), "STRING[3,1]");
  EXPECT_EQ(name.strings, (std::vector<std::string>{"n0", "n1", "n2"}));

  Element one = parse_single_example(records[1], specs);
  EXPECT_EQ(tensor(one["age"]).spec().str(), "I64[]");
  EXPECT_EQ(tensor(one["age"]).values<int64_t>(), std::vector<int64_t>{21});
  EXPECT_EQ(tensor(one["px"]).spec().str(), "F32[2,2]");
  EXPECT_EQ(tensor(one["name"]).strings, std::vector<std::string>{"n1"});
}

TEST(ExampleTest, DefaultsFillMissingFeatures) {
  std::vector<std::string> records = {
      ExampleBuilder().add_float("v", {1, 2, 3, 4}).serialize(),
      ExampleBuilder().serialize(), // no features at all
      ExampleBuilder().add_bytes("other", {"x"}).serialize(),
  };
  FeatureSpecs specs = {
      // A default of another shape with as many elements (TF reshapes it).
      {"v", FixedLenFeature{{2, 2},
                            DType::Float32,
                            TensorValue::of<float>({4}, {9, 8, 7, 6})}},
      {"s", FixedLenFeature{{},
                            DType::String,
                            TensorValue::of_strings({}, {"dflt"})}},
      {"i", FixedLenFeature{{2},
                            DType::Int64,
                            TensorValue::of<int64_t>({2}, {-1, -2})}},
  };
  Element e = parse_example(views(records), specs);
  EXPECT_EQ(tensor(e["v"]).values<float>(),
            (std::vector<float>{1, 2, 3, 4, 9, 8, 7, 6, 9, 8, 7, 6}));
  EXPECT_EQ(tensor(e["s"]).strings,
            (std::vector<std::string>{"dflt", "dflt", "dflt"}));
  EXPECT_EQ(tensor(e["i"]).values<int64_t>(),
            (std::vector<int64_t>{-1, -2, -1, -2, -1, -2}));
}

TEST(ExampleTest, MissingRequiredFeature) {
  std::vector<std::string> records = {
      ExampleBuilder().add_int64("age", {1}).serialize(),
      ExampleBuilder().add_int64("age", {2}).serialize(),
      ExampleBuilder().add_int64("other", {3}).serialize(),
  };
  FeatureSpecs specs = {{"age", FixedLenFeature{{}, DType::Int64, {}}}};
  EXPECT_EQ(errorOf([&] { parse_example(views(records), specs); }),
            "record 2: feature 'age' is required but missing (no "
            "default_value)");
}

TEST(ExampleTest, WrongType) {
  std::vector<std::string> records(
      3, ExampleBuilder().add_int64("age", {1}).serialize());
  records.push_back(ExampleBuilder().add_float("age", {1.5f}).serialize());
  FeatureSpecs specs = {{"age", FixedLenFeature{{}, DType::Int64, {}}}};
  EXPECT_EQ(errorOf([&] { parse_example(views(records), specs); }),
            "record 3: feature 'age' is a float_list, expected int64_list");
  FeatureSpecs var = {{"age", VarLenFeature{DType::String}}};
  EXPECT_EQ(errorOf([&] { parse_example(views(records), var); }),
            "record 0: feature 'age' is a int64_list, expected bytes_list");
  // An empty list of the wrong kind is the wrong kind too (as in TF).
  std::string empty = ExampleBuilder().add_float("age", {}).serialize();
  EXPECT_EQ(errorOf([&] { parse_single_example(empty, var); }),
            "record 0: feature 'age' is a float_list, expected bytes_list");
}

TEST(ExampleTest, WrongNumberOfValues) {
  std::vector<std::string> records = {
      ExampleBuilder().add_float("px", {1, 2, 3, 4, 5, 6}).serialize(),
      ExampleBuilder().add_float("px", {1, 2, 3, 4, 5}).serialize(),
  };
  FeatureSpecs specs = {{"px", FixedLenFeature{{2, 3}, DType::Float32, {}}}};
  EXPECT_EQ(errorOf([&] { parse_example(views(records), specs); }),
            "record 1: feature 'px' has 5 values, expected 6 for shape [2,3]");
  // A scalar wants exactly one value; an empty list is not missing.
  std::string none = ExampleBuilder().add_int64("k", {}).serialize();
  FeatureSpecs scalar = {
      {"k",
       FixedLenFeature{{}, DType::Int64, TensorValue::of<int64_t>({}, {7})}}};
  EXPECT_EQ(errorOf([&] { parse_single_example(none, scalar); }),
            "record 0: feature 'k' has 0 values, expected 1 for shape []");
}

TEST(ExampleTest, MalformedRecords) {
  std::vector<std::string> records = {
      ExampleBuilder().add_int64("a", {1}).serialize(),
      ExampleBuilder().add_int64("a", {1}).serialize(),
  };
  FeatureSpecs specs = {{"a", FixedLenFeature{{}, DType::Int64, {}}}};
  std::string good = records[1];
  records[1] = good.substr(0, good.size() - 1); // truncated
  EXPECT_EQ(errorOf([&] { parse_example(views(records), specs); }),
            "record 1: not a valid tf.train.Example (length past the end of "
            "its message at byte 1)");
  records[1] = "\x0a\x02\x0a"; // a Features longer than the record
  EXPECT_EQ(errorOf([&] { parse_example(views(records), specs); }),
            "record 1: not a valid tf.train.Example (length past the end of "
            "its message at byte 1)");
  records[1] = std::string("\x0c", 1); // end-group tag
  EXPECT_EQ(errorOf([&] { parse_example(views(records), specs); }),
            "record 1: not a valid tf.train.Example (end-group tag outside a "
            "group at byte 0)");
  // A packed float_list of 7 bytes, in a feature outside the spec: the
  // whole record must parse, as protobuf parses it.
  records[1] = good + exampleOf({{"b", delimited(2, delimited(1, "1234567"))}});
  EXPECT_EQ(errorOf([&] { parse_example(views(records), specs); }),
            "record 1: not a valid tf.train.Example (packed float_list length "
            "not a multiple of 4 at byte " +
                std::to_string(good.size() + 11) + ")");
  // Not one of them parses with protobuf either.
  proto::Example oracle;
  EXPECT_FALSE(oracle.ParseFromString(records[1]));
}

TEST(ExampleTest, VarLenFeatures) {
  std::vector<std::string> records = {
      ExampleBuilder().add_bytes("tags", {"a", "b"}).serialize(),
      ExampleBuilder().add_bytes("tags", {}).serialize(), // empty list
      ExampleBuilder().serialize(),                       // missing
      ExampleBuilder().add_bytes("tags", {"c", "", "e"}).serialize(),
  };
  FeatureSpecs specs = {{"tags", VarLenFeature{DType::String}},
                        {"ids", VarLenFeature{DType::Int64}}};
  Element e = parse_example(views(records), specs);
  const SparseTensor &tags = sparse(e["tags"]);
  EXPECT_EQ(tags.dense_shape, (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(tags.index_values(),
            (std::vector<int64_t>{0, 0, 0, 1, 3, 0, 3, 1, 3, 2}));
  EXPECT_EQ(tags.values.strings,
            (std::vector<std::string>{"a", "b", "c", "", "e"}));
  EXPECT_NO_THROW(tags.validate("tags"));
  // No record has ids: [B, 0], nothing stored.
  const SparseTensor &ids = sparse(e["ids"]);
  EXPECT_EQ(ids.dense_shape, (std::vector<int64_t>{4, 0}));
  EXPECT_EQ(ids.nnz(), 0);
  EXPECT_EQ(ids.indices.spec().str(), "I64[0,2]");
  EXPECT_EQ(ids.values.spec().str(), "I64[0]");

  Element one = parse_single_example(records[3], specs);
  const SparseTensor &t1 = sparse(one["tags"]);
  EXPECT_EQ(t1.dense_shape, std::vector<int64_t>{3});
  EXPECT_EQ(t1.indices.spec().str(), "I64[3,1]");
  EXPECT_EQ(t1.index_values(), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(sparse(one["ids"]).dense_shape, std::vector<int64_t>{0});
}

TEST(ExampleTest, FixedLenSequenceFeatures) {
  std::vector<std::string> records = {
      ExampleBuilder().add_float("xy", {1, 2, 3, 4}).serialize(),
      ExampleBuilder().serialize(),
      ExampleBuilder().add_float("xy", {5, 6}).serialize(),
  };
  FeatureSpecs specs = {
      {"xy", FixedLenSequenceFeature{
                 {2}, DType::Float32, true, TensorValue::of<float>({}, {-1})}}};
  Element e = parse_example(views(records), specs);
  const TensorValue &xy = tensor(e["xy"]);
  EXPECT_EQ(xy.spec().str(), "F32[3,2,2]");
  EXPECT_EQ(xy.values<float>(),
            (std::vector<float>{1, 2, 3, 4, -1, -1, -1, -1, 5, 6, -1, -1}));

  // Without a default: zeros, "" for strings.
  std::vector<std::string> words = {
      ExampleBuilder().add_bytes("w", {"a"}).serialize(),
      ExampleBuilder().add_bytes("w", {"b", "c", "d"}).serialize(),
  };
  FeatureSpecs wspec = {
      {"w", FixedLenSequenceFeature{{}, DType::String, true, {}}}};
  Element we = parse_example(views(words), wspec);
  const TensorValue &w = tensor(we["w"]);
  EXPECT_EQ(w.spec().str(), "STRING[2,3]");
  EXPECT_EQ(w.strings, (std::vector<std::string>{"a", "", "", "b", "c", "d"}));

  // allow_missing=false makes the feature required.
  FeatureSpecs required = {
      {"xy", FixedLenSequenceFeature{{2}, DType::Float32, false, {}}}};
  EXPECT_EQ(errorOf([&] { parse_example(views(records), required); }),
            "record 1: feature 'xy' is required but missing (allow_missing "
            "is false)");
  // Values that are not whole steps.
  std::vector<std::string> odd = {
      ExampleBuilder().add_float("xy", {1, 2, 3}).serialize()};
  EXPECT_EQ(errorOf([&] { parse_example(views(odd), specs); }),
            "record 0: feature 'xy' has 3 values, not a multiple of 2 (steps "
            "of shape [2])");
  // Single: [steps, shape...]; all missing: [B, 0, shape...].
  EXPECT_EQ(tensor(parse_single_example(records[0], specs)["xy"]).spec().str(),
            "F32[2,2]");
  std::vector<std::string> none = {ExampleBuilder().serialize()};
  EXPECT_EQ(tensor(parse_example(views(none), specs)["xy"]).spec().str(),
            "F32[1,0,2]");
}

TEST(ExampleTest, EmptyBatch) {
  FeatureSpecs specs = {
      {"a", FixedLenFeature{{3}, DType::Int64, {}}},
      {"b", VarLenFeature{DType::Float32}},
      {"c", FixedLenSequenceFeature{{2}, DType::String, true, {}}}};
  Element e = parse_example(std::vector<std::string_view>{}, specs);
  EXPECT_EQ(tensor(e["a"]).spec().str(), "I64[0,3]");
  EXPECT_EQ(sparse(e["b"]).dense_shape, (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(tensor(e["c"]).spec().str(), "STRING[0,0,2]");
}

TEST(ExampleTest, ProtobufMergeRules) {
  FeatureSpecs specs = {{"f", VarLenFeature{DType::Float32}}};
  auto values = [&](const std::string &record) {
    return sparse(parse_single_example(record, specs)["f"])
        .values.values<float>();
  };
  // A name given twice: the last entry is the map's value.
  EXPECT_EQ(
      values(exampleOf({{"f", floatList({1})}, {"f", floatList({2, 3})}})),
      (std::vector<float>{2, 3}));
  // Two Features messages merge (their entries, the last one winning).
  EXPECT_EQ(values(exampleOf({{"f", floatList({1})}}) +
                   exampleOf({{"g", floatList({9})}})),
            (std::vector<float>{1}));
  EXPECT_EQ(values(exampleOf({{"f", floatList({1})}}) +
                   exampleOf({{"f", floatList({4})}})),
            (std::vector<float>{4}));
  // Two float_list fields in one Feature: the lists append.
  EXPECT_EQ(values(exampleOf({{"f", floatList({1}) + floatList({2})}})),
            (std::vector<float>{1, 2}));
  // Another kind in between starts over (a oneof).
  EXPECT_EQ(values(exampleOf(
                {{"f", floatList({1}) + int64List({5}) + floatList({2})}})),
            (std::vector<float>{2}));
  FeatureSpecs words = {{"w", VarLenFeature{DType::String}}};
  EXPECT_EQ(sparse(parse_single_example(
                       exampleOf({{"w", bytesList({"a"}) + floatList({1}) +
                                            bytesList({"b"}) +
                                            bytesList({"c", ""})}}),
                       words)["w"])
                .values.strings,
            (std::vector<std::string>{"b", "c", ""}));
  // Unpacked floats, packed and unpacked mixed, unknown fields around.
  std::string unpacked = tag(1, 5) + fixed32(7) + delimited(1, fixed32(8)) +
                         tag(9, 0) + varint(300) + tag(1, 5) + fixed32(9);
  EXPECT_EQ(values(exampleOf({{"f", delimited(2, unpacked) + tag(7, 1) +
                                        std::string(8, 'x')}})),
            (std::vector<float>{7, 8, 9}));
  // An entry with the value before the key, and a value in two parts.
  std::string entry = delimited(2, floatList({1})) + delimited(1, "f") +
                      delimited(2, floatList({2}));
  EXPECT_EQ(values(delimited(1, delimited(1, entry))),
            (std::vector<float>{1, 2}));
  // A group (wire type 3) as an unknown field of the Example.
  EXPECT_EQ(values(tag(5, 3) + tag(1, 0) + varint(1) + tag(5, 4) +
                   exampleOf({{"f", floatList({6})}})),
            (std::vector<float>{6}));
  // Every one of these parses the same with protobuf.
  proto::Example oracle;
  ASSERT_TRUE(oracle.ParseFromString(
      exampleOf({{"f", floatList({1}) + int64List({5}) + floatList({2})}})));
  EXPECT_EQ(oracle.features().feature().at("f").float_list().value_size(), 1);
}

TEST(ExampleTest, ALaterEntryReplacesWhatAnEarlierOneDecoded) {
  // Values are decoded as soon as an entry ends; a later entry of the same
  // name must undo them, in the middle of a batch.
  FeatureSpecs specs = {
      {"fix", FixedLenFeature{{2},
                              DType::Int64,
                              TensorValue::of<int64_t>({2}, {-1, -1})}},
      {"var", VarLenFeature{DType::String}},
      {"seq", FixedLenSequenceFeature{{}, DType::Float32, true, {}}}};
  std::vector<std::string> records = {
      exampleOf({{"var", bytesList({"a", "b"})}, {"seq", floatList({1, 2})}}),
      exampleOf({{"fix", int64List({1, 2})},
                 {"var", bytesList({"x", "y", "z"})},
                 {"seq", floatList({3, 4, 5})},
                 {"fix", int64List({3, 4})},
                 {"var", bytesList({"w"})},
                 {"seq", ""}}), // the last "seq" has no list: missing
      exampleOf({{"var", bytesList({"c"})}, {"seq", floatList({6})}}),
  };
  Element e = parse_example(views(records), specs);
  EXPECT_EQ(tensor(e["fix"]).values<int64_t>(),
            (std::vector<int64_t>{-1, -1, 3, 4, -1, -1}));
  EXPECT_EQ(sparse(e["var"]).values.strings,
            (std::vector<std::string>{"a", "b", "w", "c"}));
  EXPECT_EQ(sparse(e["var"]).index_values(),
            (std::vector<int64_t>{0, 0, 0, 1, 1, 0, 2, 0}));
  EXPECT_EQ(tensor(e["seq"]).values<float>(),
            (std::vector<float>{1, 2, 0, 0, 6, 0}));
  // Only the last entry is held against the spec...
  std::string wrongFirst =
      exampleOf({{"fix", floatList({1, 2})}, {"fix", int64List({5, 6})}});
  EXPECT_EQ(
      tensor(parse_single_example(wrongFirst, specs)["fix"]).values<int64_t>(),
      (std::vector<int64_t>{5, 6}));
  // ...whatever the earlier ones were.
  std::string wrongLast =
      exampleOf({{"fix", int64List({5, 6})}, {"fix", int64List({7})}});
  EXPECT_EQ(errorOf([&] { parse_single_example(wrongLast, specs); }),
            "record 0: feature 'fix' has 1 values, expected 2 for shape [2]");
}

TEST(ExampleTest, FeatureWithoutAListIsMissing) {
  // TF skips a Feature whose oneof is not set: the default applies.
  std::string record = exampleOf({{"a", ""}, {"b", ""}});
  FeatureSpecs specs = {
      {"a",
       FixedLenFeature{{}, DType::Int64, TensorValue::of<int64_t>({}, {3})}},
      {"b", VarLenFeature{DType::Int64}}};
  Element e = parse_single_example(record, specs);
  EXPECT_EQ(tensor(e["a"]).values<int64_t>(), std::vector<int64_t>{3});
  EXPECT_EQ(sparse(e["b"]).nnz(), 0);
  FeatureSpecs required = {{"a", FixedLenFeature{{}, DType::Int64, {}}}};
  EXPECT_EQ(errorOf([&] { parse_single_example(record, required); }),
            "record 0: feature 'a' is required but missing (no default_value)");
}

TEST(ExampleTest, Int64Extremes) {
  std::vector<int64_t> v = {0, -1, INT64_MIN, INT64_MAX, 1 << 20, -300};
  std::string record = ExampleBuilder().add_int64("i", v).serialize();
  FeatureSpecs specs = {{"i", FixedLenFeature{{6}, DType::Int64, {}}}};
  EXPECT_EQ(tensor(parse_single_example(record, specs)["i"]).values<int64_t>(),
            v);
  // Unpacked varints too, one of them 10 bytes long with a padded end.
  std::string list =
      tag(1, 0) + varint(5) + tag(1, 0) +
      std::string("\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 10);
  FeatureSpecs two = {{"i", FixedLenFeature{{2}, DType::Int64, {}}}};
  EXPECT_EQ(tensor(parse_single_example(exampleOf({{"i", delimited(3, list)}}),
                                        two)["i"])
                .values<int64_t>(),
            (std::vector<int64_t>{5, -1}));
}

TEST(ExampleTest, SpecErrors) {
  std::string record = ExampleBuilder().serialize();
  EXPECT_EQ(invalidArgumentOf([&] {
              parse_single_example(record,
                                   {{"d", VarLenFeature{DType::Float64}}});
            }),
            "feature 'd': dtype F64 is not one of tf.train.Example's (F32, "
            "I64, STRING)");
  EXPECT_EQ(invalidArgumentOf([&] {
              parse_single_example(
                  record, {{"d", FixedLenFeature{{2, -1}, DType::Int64, {}}}});
            }),
            "feature 'd': shape [2,-1] has a negative dimension");
  EXPECT_EQ(
      invalidArgumentOf([&] {
        parse_single_example(
            record,
            {{"d", FixedLenFeature{{3},
                                   DType::Int64,
                                   TensorValue::of<int64_t>({2}, {1, 2})}}});
      }),
      "feature 'd': default_value I64[2] must have 3 elements (shape "
      "[3])");
  EXPECT_EQ(
      invalidArgumentOf([&] {
        parse_single_example(
            record,
            {{"d", FixedLenFeature{
                       {}, DType::Int64, TensorValue::of<float>({}, {1})}}});
      }),
      "feature 'd': default_value is F32[], the feature is I64");
  EXPECT_EQ(invalidArgumentOf([&] {
              parse_single_example(
                  record, {{"d", FixedLenSequenceFeature{
                                     {2},
                                     DType::Int64,
                                     true,
                                     TensorValue::of<int64_t>({2}, {1, 2})}}});
            }),
            "feature 'd': default_value I64[2] must have 1 elements (a scalar "
            "that pads the sequences)");
  EXPECT_EQ(invalidArgumentOf([&] {
              parse_single_example(record,
                                   {{"d", FixedLenSequenceFeature{
                                              {0}, DType::Int64, true, {}}}});
            }),
            "feature 'd': shape [0] of a FixedLenSequenceFeature has no "
            "elements");
  EXPECT_EQ(invalidArgumentOf([&] {
              parse_example(TensorValue::of<int64_t>({1}, {1}), FeatureSpecs{});
            }),
            "parse_example: serialized must be STRING[B], not I64[1]");
}

TEST(ExampleTest, StringTensorInputAndElementSpec) {
  TensorValue batch = TensorValue::of_strings(
      {2}, {ExampleBuilder().add_int64("a", {1, 2}).serialize(),
            ExampleBuilder().add_int64("a", {3}).serialize()});
  ExampleParser parser(
      {{"a", VarLenFeature{DType::Int64}},
       {"b", FixedLenFeature{{2},
                             DType::Float32,
                             TensorValue::of<float>({2}, {0, 0})}},
       {"c", FixedLenSequenceFeature{{3}, DType::String, true, {}}}});
  Element e = parser.parse_example(batch);
  EXPECT_EQ(sparse(e["a"]).values.values<int64_t>(),
            (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(
      to_string(parser.element_spec(true)),
      to_string(spec_of(e).map([](const std::string &, const ValueSpec &s) {
        ValueSpec v = s;
        v.shape[0] = -1;
        if (v.sparse || v.shape.size() > 2)
          v.shape[1] = -1;
        return v;
      })));
  EXPECT_EQ(to_string(parser.element_spec(false)),
            "{a: sparse I64[-1], b: F32[2], c: STRING[-1,3]}");
}

TEST(ExampleTest, BuilderReplacesAndIsDeterministic) {
  ExampleBuilder b;
  b.add_int64("z", {1}).add_float("a", {2}).add_int64("z", {5, 6});
  std::string bytes = b.serialize();
  ExampleBuilder copy = b;
  EXPECT_EQ(copy.serialize(), bytes);
  proto::Example parsed;
  ASSERT_TRUE(parsed.ParseFromString(bytes));
  EXPECT_EQ(parsed.features().feature().at("z").int64_list().value_size(), 2);
  // Sorted by name: "a" first.
  EXPECT_EQ(bytes.find("\x0a\x01"
                       "a"),
            4u);
  EXPECT_EQ(ExampleBuilder().serialize(), "");
}

/// A random Example: random names from a small set (so that spec features
/// are hit), kinds and counts; sometimes an empty Feature.
proto::Example randomExample(std::mt19937 &rng) {
  static const char *names[] = {"f", "i", "s", "v", "q", "x"};
  proto::Example ex;
  auto *map = ex.mutable_features()->mutable_feature();
  int n = static_cast<int>(rng() % 6);
  for (int k = 0; k < n; ++k) {
    proto::Feature &f = (*map)[names[rng() % 6]];
    f.Clear();
    int count = static_cast<int>(rng() % 5);
    switch (rng() % 4) {
    case 0:
      for (int j = 0; j < count; ++j)
        f.mutable_float_list()->add_value(
            static_cast<float>(static_cast<int>(rng() % 2000) - 1000) / 8);
      if (!count)
        f.mutable_float_list();
      break;
    case 1:
      for (int j = 0; j < count; ++j)
        f.mutable_int64_list()->add_value(
            static_cast<int64_t>(static_cast<uint64_t>(rng()) << (rng() % 30)) *
            (rng() % 2 ? -1 : 1));
      if (!count)
        f.mutable_int64_list();
      break;
    case 2:
      for (int j = 0; j < count; ++j)
        f.mutable_bytes_list()->add_value(
            std::string(rng() % 4, 'a' + rng() % 26));
      if (!count)
        f.mutable_bytes_list();
      break;
    default:
      break; // no list
    }
  }
  return ex;
}

TEST(ExampleTest, AgreesWithProtobufOnRandomExamples) {
  // VarLen of each kind: every value protobuf has, in order.
  FeatureSpecs specs = {{"f", VarLenFeature{DType::Float32}},
                        {"i", VarLenFeature{DType::Int64}},
                        {"s", VarLenFeature{DType::String}}};
  std::mt19937 rng(12);
  int checked = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    proto::Example ex = randomExample(rng);
    std::string bytes = ex.SerializeAsString();
    Element e;
    try {
      e = parse_single_example(bytes, specs);
    } catch (const DataError &err) {
      // Only a kind mismatch can fail here.
      EXPECT_NE(std::string(err.what()).find("expected"), std::string::npos)
          << err.what();
      continue;
    }
    const auto &map = ex.features().feature();
    auto has = [&](const char *name) {
      auto it = map.find(name);
      return it != map.end() &&
             it->second.kind_case() != proto::Feature::KIND_NOT_SET;
    };
    std::vector<float> fs;
    if (has("f"))
      fs.assign(map.at("f").float_list().value().begin(),
                map.at("f").float_list().value().end());
    EXPECT_EQ(sparse(e["f"]).values.values<float>(), fs);
    std::vector<int64_t> is;
    if (has("i"))
      is.assign(map.at("i").int64_list().value().begin(),
                map.at("i").int64_list().value().end());
    EXPECT_EQ(sparse(e["i"]).values.values<int64_t>(), is);
    std::vector<std::string> ss;
    if (has("s"))
      ss.assign(map.at("s").bytes_list().value().begin(),
                map.at("s").bytes_list().value().end());
    EXPECT_EQ(sparse(e["s"]).values.strings, ss);
    ++checked;
  }
  EXPECT_GT(checked, 500);
}

} // namespace
