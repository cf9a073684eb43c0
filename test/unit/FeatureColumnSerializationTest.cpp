//===- FeatureColumnSerializationTest.cpp - Columns and specs as JSON ----===//
//
// lib/FeatureColumn/Serialization.h: every column kind written and read
// back gives a Transformer with the same model inputs as the original's on
// random batches (strings, OOV values, missing values, weights, crosses);
// vocabulary files go through add_asset / asset_path; parse specs round
// trip and parse the same records the same; every malformed input is one
// std::invalid_argument line naming the column and the field.
//
//===----------------------------------------------------------------------===//

#include "lib/Data/Example.h"
#include "lib/FeatureColumn/Serialization.h"
#include "lib/FeatureColumn/Transformer.h"
#include "test/unit/FileTesting.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>

using namespace estc;
using namespace estc::feature_column;
using estc::testing::messageOf;

namespace {

class FeatureColumnSerializationTest : public estc::testing::FileTest {
protected:
  FeatureColumnSerializationTest() : FileTest("fcjson") {}
};

std::string identity(const std::string &s) { return s; }

bool sameTensor(const TensorValue &a, const TensorValue &b) {
  return a.dtype == b.dtype && a.shape == b.shape && a.data == b.data &&
         a.strings == b.strings;
}

void expectSameInputs(const ModelInputs &a, const ModelInputs &b) {
  ASSERT_EQ(a.size(), b.size());
  for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib) {
    ASSERT_EQ(ia->first, ib->first);
    EXPECT_TRUE(sameTensor(ia->second, ib->second)) << ia->first;
  }
}

void expectSameSpecs(const std::vector<TensorSpec> &a,
                     const std::vector<TensorSpec> &b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].key, b[i].key);
    EXPECT_EQ(a[i].dtype, b[i].dtype) << a[i].key;
    EXPECT_EQ(a[i].shape, b[i].shape) << a[i].key;
    EXPECT_EQ(a[i].values_dim, b[i].values_dim) << a[i].key;
  }
}

std::vector<std::string> names(const FeatureColumns &cs) {
  std::vector<std::string> out;
  for (const FeatureColumnPtr &c : cs)
    out.push_back(c->name());
  return out;
}

/// Random raw features of `batch` rows for the columns of allColumns().
data::Element randomBatch(std::mt19937 &rng, int64_t batch) {
  auto pick = [&](const std::vector<std::string> &from) {
    return from[std::uniform_int_distribution<size_t>(0, from.size() - 1)(rng)];
  };
  auto uniform = [&](double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng);
  };
  auto integer = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  // Strings with OOV values and "" (missing in a dense tensor).
  auto strings = [&](const std::vector<std::string> &from, int64_t width) {
    std::vector<std::string> v;
    for (int64_t i = 0; i < batch * width; ++i)
      v.push_back(pick(from));
    return TensorValue::of_strings({batch, width}, v);
  };
  auto ints = [&](int64_t lo, int64_t hi, int64_t width) {
    std::vector<int64_t> v;
    for (int64_t i = 0; i < batch * width; ++i)
      v.push_back(integer(lo, hi));
    return TensorValue::of<int64_t>({batch, width}, v);
  };
  auto floats = [&](double lo, double hi, int64_t width) {
    std::vector<float> v;
    for (int64_t i = 0; i < batch * width; ++i)
      v.push_back(static_cast<float>(uniform(lo, hi)));
    return TensorValue::of<float>({batch, width}, v);
  };
  // A SparseTensor with 0..3 values per row.
  auto sparse = [&](auto value) {
    std::vector<int64_t> indices;
    int64_t width = 0;
    using T = decltype(value());
    std::vector<T> values;
    for (int64_t r = 0; r < batch; ++r) {
      int64_t n = integer(0, 3);
      width = std::max(width, n);
      for (int64_t j = 0; j < n; ++j) {
        indices.insert(indices.end(), {r, j});
        values.push_back(value());
      }
    }
    return data::SparseTensor::make(
        indices,
        TensorValue::of<T>({static_cast<int64_t>(values.size())}, values),
        {batch, width});
  };
  std::map<std::string, data::Element> f;
  f.emplace("age", floats(0, 90, 1));
  f.emplace("height", floats(1, 2, 2));
  f.emplace("item", ints(-1, 12, 2));
  f.emplace("item3", sparse([&] { return integer(0, 20); }));
  f.emplace("city", strings({"paris", "rome", "oslo", "", "lima"}, 1));
  f.emplace("zip", sparse([&] { return integer(10000, 10010); }));
  TensorValue color = strings({"red", "green", "blue", "pink", ""}, 3);
  // A weight at each value, none (0) where the value is missing ("").
  std::vector<float> weights;
  for (const std::string &s : color.strings)
    weights.push_back(s.empty() ? 0.0f : static_cast<float>(uniform(0.5, 2)));
  f.emplace("color", color);
  f.emplace("color_w", TensorValue::of<float>({batch, 3}, weights));
  f.emplace("code", ints(-1, 40, 2));
  f.emplace("fruit", sparse([&] {
              return pick({"apple", "banana", "cherry", "kiwi", ""});
            }));
  f.emplace("ifruit", ints(-1, 42, 1));
  return data::Element::dict(std::move(f));
}

/// Every column kind, nested and shared as models use them.
FeatureColumns allColumns(const std::string &vocab, const std::string &ivocab) {
  auto age = numeric_column("age", {1}, {-1.5});
  auto height = numeric_column("height", {2}, {1.25, 1.75}, DType::Float32,
                               [](const Tensor &x) { return x; });
  auto ageB = bucketized_column(age, {18, 30.5, 50});
  auto item = categorical_column_with_identity("item", 10, 0);
  auto item3 = categorical_column_with_identity("item3", 10, 9);
  auto city = categorical_column_with_hash_bucket("city", 50);
  auto zip = categorical_column_with_hash_bucket("zip", 20, DType::Int64);
  auto color = categorical_column_with_vocabulary_list(
      "color", {"red", "green", "blue"}, std::nullopt, -1, 2);
  auto code = categorical_column_with_vocabulary_list(
      "code", VocabularyList{int64_t(10), int64_t(20), int64_t(30)},
      DType::Int64, 1);
  auto fruit = categorical_column_with_vocabulary_file("fruit", vocab, {},
                                                       DType::String, {}, 1);
  auto ifruit = categorical_column_with_vocabulary_file("ifruit", ivocab, 3,
                                                        DType::Int64, 0);
  auto cross = crossed_column({"city", ageB, color}, 100);
  auto cross2 = crossed_column({cross, "fruit", code}, 37, 7);
  auto weighted = weighted_categorical_column(color, "color_w");
  auto shared =
      shared_embedding_columns({item, item3}, 3, "sqrtn", {}, "", 1.5, false);
  return {age,
          height,
          ageB,
          indicator_column(color),
          embedding_column(color, 4),
          embedding_column(fruit, 2, "sum", {}, 2.0, false),
          indicator_column(ifruit),
          indicator_column(weighted),
          shared[0],
          shared[1],
          indicator_column(cross),
          embedding_column(cross2, 5, "mean"),
          indicator_column(code),
          indicator_column(zip),
          embedding_column(city, 3)};
}

void expectSameTransformer(const FeatureColumns &original,
                           const FeatureColumns &read) {
  EXPECT_EQ(names(read), names(original));
  // What the graph half sizes its variables by.
  for (size_t i = 0; i < read.size(); ++i) {
    if (auto d = std::dynamic_pointer_cast<const DenseColumn>(original[i])) {
      auto r = std::dynamic_pointer_cast<const DenseColumn>(read[i]);
      ASSERT_TRUE(r) << d->name();
      EXPECT_EQ(r->variable_shape(), d->variable_shape()) << d->name();
    }
    if (auto c =
            std::dynamic_pointer_cast<const CategoricalColumn>(original[i])) {
      auto r = std::dynamic_pointer_cast<const CategoricalColumn>(read[i]);
      ASSERT_TRUE(r) << c->name();
      EXPECT_EQ(r->num_buckets(), c->num_buckets()) << c->name();
    }
  }
  Transformer a(original), b(read);
  expectSameSpecs(b.input_specs(), a.input_specs());
  EXPECT_EQ(b.values_inputs(), a.values_inputs());
  EXPECT_EQ(b.feature_keys(), a.feature_keys());
  EXPECT_EQ(parse_spec_to_json(make_parse_example_spec(read)),
            parse_spec_to_json(make_parse_example_spec(original)));
  std::mt19937 rng(14);
  for (int i = 0; i < 20; ++i) {
    data::Element batch = randomBatch(rng, 1 + i % 7);
    expectSameInputs(b.transform(batch), a.transform(batch));
  }
}

TEST_F(FeatureColumnSerializationTest, EveryKindRoundTrips) {
  std::string vocab = write("fruit.txt", "apple\nbanana\ncherry\n");
  std::string ivocab = write("ifruit.txt", "42\n7\n13\n99\n");
  FeatureColumns original = allColumns(vocab, ivocab);
  std::string json = feature_columns_to_json(original, identity);
  FeatureColumns read = feature_columns_from_json(json, identity);
  expectSameTransformer(original, read);
  // Written again, the columns read back give the same text, less the
  // normalizer_fn they no longer have.
  std::string noNormalizer = json;
  const std::string mark = ",\"normalizer_fn\":true";
  ASSERT_NE(noNormalizer.find(mark), std::string::npos);
  noNormalizer.erase(noNormalizer.find(mark), mark.size());
  EXPECT_EQ(feature_columns_to_json(read, identity), noNormalizer);

  // A column object used twice is one object again (the Transformer
  // refuses two different columns of one name).
  auto indicator = std::dynamic_pointer_cast<const IndicatorColumn>(read[3]);
  auto embedding = std::dynamic_pointer_cast<const EmbeddingColumn>(read[4]);
  ASSERT_TRUE(indicator && embedding);
  EXPECT_EQ(indicator->categorical_column(), embedding->categorical_column());
  EXPECT_NE(json.find("{\"ref\":"), std::string::npos);

  // The graph-only closure is marked, and the column read back has none.
  EXPECT_NE(json.find("\"normalizer_fn\":true"), std::string::npos);
  auto height = std::dynamic_pointer_cast<const NumericColumn>(read[1]);
  ASSERT_TRUE(height);
  EXPECT_FALSE(height->normalizer_fn());
  EXPECT_EQ(height->default_value(), (std::vector<double>{1.25, 1.75}));

  // Shared embeddings share their state again.
  auto s0 = std::dynamic_pointer_cast<const SharedEmbeddingColumn>(read[8]);
  auto s1 = std::dynamic_pointer_cast<const SharedEmbeddingColumn>(read[9]);
  ASSERT_TRUE(s0 && s1);
  EXPECT_EQ(&s0->shared(), &s1->shared());
  EXPECT_EQ(s0->shared().collection_name, "item_item3_shared_embedding");
  EXPECT_EQ(s0->shared().dimension, 3);
  EXPECT_FALSE(s0->shared().trainable);
  EXPECT_EQ(s0->combiner(), "sqrtn");
  EXPECT_EQ(s0->max_norm(), std::optional<double>(1.5));
  auto e = std::dynamic_pointer_cast<const EmbeddingColumn>(read[5]);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->dimension(), 2);
  EXPECT_EQ(e->combiner(), "sum");
  EXPECT_EQ(e->max_norm(), std::optional<double>(2.0));
  EXPECT_FALSE(e->trainable());
}

TEST_F(FeatureColumnSerializationTest, ExactNumbers) {
  // Doubles keep every bit, infinities included; hash keys all 64 bits.
  auto x = numeric_column("x", {3}, {0.1, -1e-300, 1.0 / 3}, DType::Float64);
  auto b = bucketized_column(numeric_column("y"),
                             {-INFINITY, 0.1f, 3.4028234663852886e38});
  auto c = crossed_column({"a", "b"}, (int64_t(1) << 40), UINT64_MAX);
  FeatureColumns original{x, b, c};
  std::string json = feature_columns_to_json(original, identity);
  FeatureColumns read = feature_columns_from_json(json, identity);
  EXPECT_EQ(
      std::dynamic_pointer_cast<const NumericColumn>(read[0])->default_value(),
      x->default_value());
  EXPECT_EQ(
      std::dynamic_pointer_cast<const BucketizedColumn>(read[1])->boundaries(),
      b->boundaries());
  EXPECT_EQ(std::dynamic_pointer_cast<const CrossedColumn>(read[2])->hash_key(),
            UINT64_MAX);
  EXPECT_EQ(feature_columns_to_json(read, identity), json);
}

TEST_F(FeatureColumnSerializationTest, ZeroDigitsWithALargeExponentAreZero) {
  // "0e221" and "0.00e-400" are zeros (RapidJSON 1.1.0 normalized a zero
  // significand, undefined behaviour: cmake/EstcRapidJSON.cmake).
  FeatureColumns read = feature_columns_from_json(
      R"([{"kind":"bucketized_column","source_column":{"kind":"numeric_column","key":"a","shape":[1],"dtype":"F32"},"boundaries":[0e221,1,2.00e0]}])",
      identity);
  EXPECT_EQ(
      std::dynamic_pointer_cast<const BucketizedColumn>(read[0])->boundaries(),
      (std::vector<double>{0.0, 1.0, 2.0}));
}

TEST_F(FeatureColumnSerializationTest, VocabularyFilesAreAssets) {
  std::string vocab = write("fruit.txt", "apple\nbanana\ncherry\n");
  std::string ivocab = write("ifruit.txt", "42\n7\n13\n99\n");
  FeatureColumns original = allColumns(vocab, ivocab);
  std::filesystem::path assets = dir_ / "export" / "assets";
  std::filesystem::create_directories(assets);
  std::vector<std::string> added;
  std::string json =
      feature_columns_to_json(original, [&](const std::string &path) {
        std::string name = std::to_string(added.size()) + "_" +
                           std::filesystem::path(path).filename().string();
        std::filesystem::copy_file(path, assets / name);
        added.push_back(path);
        return name;
      });
  EXPECT_EQ(added, (std::vector<std::string>{vocab, ivocab}));
  EXPECT_NE(json.find("\"vocabulary_file\":\"0_fruit.txt\""),
            std::string::npos);
  EXPECT_EQ(json.find(dir_.string()), std::string::npos);
  // The originals are gone: the columns read back read the export's copies.
  std::filesystem::remove(vocab);
  std::filesystem::remove(ivocab);
  std::vector<std::string> asked;
  FeatureColumns read =
      feature_columns_from_json(json, [&](const std::string &name) {
        asked.push_back(name);
        return (assets / name).string();
      });
  EXPECT_EQ(asked, (std::vector<std::string>{"0_fruit.txt", "1_ifruit.txt"}));
  auto fruit = std::dynamic_pointer_cast<const EmbeddingColumn>(read[5]);
  ASSERT_TRUE(fruit);
  EXPECT_EQ(std::dynamic_pointer_cast<const VocabularyFileCategoricalColumn>(
                fruit->categorical_column())
                ->vocabulary_file(),
            (assets / "0_fruit.txt").string());
  // The Transformers agree (the original's vocabularies were read when it
  // was built).
  expectSameTransformer(original, read);

  // An asset that is missing is one line naming the column.
  std::filesystem::remove(assets / "1_ifruit.txt");
  std::string msg = messageOf<std::invalid_argument>([&] {
    feature_columns_from_json(json, [&](const std::string &name) {
      return (assets / name).string();
    });
  });
  EXPECT_EQ(msg.rfind("feature_columns[6].categorical_column "
                      "(categorical_column_with_vocabulary_file 'ifruit'): ",
                      0),
            0u)
      << msg;
  EXPECT_NE(msg.find("1_ifruit.txt"), std::string::npos) << msg;
}

// --- Parse specs ------------------------------------------------------------

bool sameOptional(const std::optional<TensorValue> &a,
                  const std::optional<TensorValue> &b) {
  return a.has_value() == b.has_value() && (!a || sameTensor(*a, *b));
}

void expectSameSpecs(const data::FeatureSpecs &a, const data::FeatureSpecs &b) {
  ASSERT_EQ(a.size(), b.size());
  for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib) {
    ASSERT_EQ(ia->first, ib->first);
    ASSERT_EQ(ia->second.index(), ib->second.index()) << ia->first;
    if (const auto *f = std::get_if<data::FixedLenFeature>(&ia->second)) {
      const auto &g = std::get<data::FixedLenFeature>(ib->second);
      EXPECT_EQ(f->shape, g.shape);
      EXPECT_EQ(f->dtype, g.dtype);
      EXPECT_TRUE(sameOptional(f->default_value, g.default_value)) << ia->first;
    } else if (const auto *v = std::get_if<data::VarLenFeature>(&ia->second)) {
      EXPECT_EQ(v->dtype, std::get<data::VarLenFeature>(ib->second).dtype);
    } else {
      const auto &s = std::get<data::FixedLenSequenceFeature>(ia->second);
      const auto &t = std::get<data::FixedLenSequenceFeature>(ib->second);
      EXPECT_EQ(s.shape, t.shape);
      EXPECT_EQ(s.dtype, t.dtype);
      EXPECT_EQ(s.allow_missing, t.allow_missing);
      EXPECT_TRUE(sameOptional(s.default_value, t.default_value)) << ia->first;
    }
  }
}

TEST_F(FeatureColumnSerializationTest, ParseSpecRoundTrips) {
  std::string vocab = write("fruit.txt", "apple\nbanana\ncherry\n");
  std::string ivocab = write("ifruit.txt", "42\n7\n13\n99\n");
  data::FeatureSpecs specs = make_parse_example_spec(allColumns(vocab, ivocab));
  specs["name"] = data::FixedLenFeature{
      {2}, DType::String, TensorValue::of_strings({2}, {"a\"b", "\n\xff"})};
  specs["steps"] = data::FixedLenSequenceFeature{
      {2}, DType::Float32, true, TensorValue::of<float>({}, {0.5f})};
  specs["ids"] = data::FixedLenSequenceFeature{{}, DType::Int64, true, {}};
  specs["big"] = data::FixedLenFeature{
      {1}, DType::Int64, TensorValue::of<int64_t>({1}, {INT64_MIN})};
  std::string json = parse_spec_to_json(specs);
  data::FeatureSpecs read = parse_spec_from_json(json);
  expectSameSpecs(read, specs);
  EXPECT_EQ(parse_spec_to_json(read), json);

  // Every dtype of a default value keeps its values.
  data::FeatureSpecs odd;
  odd["f64"] = data::FixedLenFeature{
      {2}, DType::Float64, TensorValue::of<double>({2}, {0.1, -2.5e-310})};
  odd["i32"] = data::FixedLenFeature{
      {1}, DType::Int32, TensorValue::of<int32_t>({1, 1}, {INT32_MIN})};
  odd["b"] = data::FixedLenFeature{
      {2}, DType::Bool, TensorValue::of<bool>({2}, {true, false})};
  odd["h"] = data::FixedLenFeature{
      {1},
      DType::Float16,
      TensorValue::from_bytes(DType::Float16, {1}, std::string("\x00\x3c", 2))};
  odd["nan"] = data::FixedLenFeature{
      {2}, DType::Float32, TensorValue::of<float>({2}, {NAN, -INFINITY})};
  data::FeatureSpecs oddRead = parse_spec_from_json(parse_spec_to_json(odd));
  expectSameSpecs(oddRead, odd);

  // Parsing the same records with both specs gives the same tensors.
  std::vector<std::string> records;
  for (int r = 0; r < 6; ++r) {
    data::ExampleBuilder b;
    b.add_float("age", {static_cast<float>(r * 9)});
    if (r % 2)
      b.add_float("height", {1.5f, 1.7f});
    b.add_int64("item", {r, r + 5});
    b.add_bytes("color", {"red", "pink"});
    if (r % 3)
      b.add_bytes("name", {"x", "y"});
    b.add_float("steps", std::vector<float>(static_cast<size_t>(2 * (r % 3)),
                                            static_cast<float>(r)));
    b.add_int64("ids", std::vector<int64_t>(static_cast<size_t>(r), 4));
    records.push_back(b.serialize());
  }
  std::vector<std::string_view> views(records.begin(), records.end());
  {
    data::Element a = data::parse_example(views, specs);
    data::Element b = data::parse_example(views, read);
    ASSERT_EQ(a.fields().size(), b.fields().size());
    for (auto ia = a.fields().begin(), ib = b.fields().begin();
         ia != a.fields().end(); ++ia, ++ib) {
      ASSERT_EQ(ia->first, ib->first);
      const data::Value &va = ia->second.leaf(), &vb = ib->second.leaf();
      ASSERT_EQ(va.index(), vb.index()) << ia->first;
      if (const auto *t = std::get_if<TensorValue>(&va)) {
        EXPECT_TRUE(sameTensor(*t, std::get<TensorValue>(vb))) << ia->first;
      } else {
        const auto &x = std::get<data::SparseTensor>(va);
        const auto &y = std::get<data::SparseTensor>(vb);
        EXPECT_TRUE(sameTensor(x.indices, y.indices)) << ia->first;
        EXPECT_TRUE(sameTensor(x.values, y.values)) << ia->first;
        EXPECT_EQ(x.dense_shape, y.dense_shape) << ia->first;
      }
    }
  }
}

// --- Errors -----------------------------------------------------------------

std::string columnsError(const std::string &json) {
  std::string msg = messageOf<std::invalid_argument>(
      [&] { feature_columns_from_json(json, identity); });
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  return msg;
}

std::string specError(const std::string &json) {
  std::string msg =
      messageOf<std::invalid_argument>([&] { parse_spec_from_json(json); });
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  return msg;
}

TEST(FeatureColumnSerializationErrors, Columns) {
  const std::string num =
      R"({"kind":"numeric_column","key":"age","shape":[1],"dtype":"F32"})";
  EXPECT_EQ(columnsError("[1,"),
            "feature_columns: not valid JSON at byte 3: Invalid value.");
  EXPECT_EQ(columnsError("{}"), "feature_columns: must be a JSON array");
  // NaN and Inf take no fraction or exponent (RapidJSON 1.1.0 parsed one,
  // reading before its buffer: cmake/EstcRapidJSON.cmake).
  EXPECT_EQ(columnsError("[Infe0]"),
            "feature_columns: not valid JSON at byte 4: Missing a comma or "
            "']' after an array element.");
  EXPECT_EQ(columnsError("[-Inf.5]"),
            "feature_columns: not valid JSON at byte 5: Missing a comma or "
            "']' after an array element.");
  EXPECT_EQ(columnsError("[NaN.2e2]"),
            "feature_columns: not valid JSON at byte 4: Missing a comma or "
            "']' after an array element.");
  EXPECT_EQ(columnsError("[" + num + ", 3]"),
            "feature_columns[1]: must be a JSON object");
  EXPECT_EQ(columnsError(R"([{"key":"a"}])"),
            "feature_columns[0]: missing field 'kind'");
  EXPECT_EQ(columnsError(R"([{"kind":"magic_column"}])"),
            "feature_columns[0]: field 'kind': unknown kind 'magic_column'");
  EXPECT_EQ(
      columnsError(
          R"([{"kind":"numeric_column","key":"age","shape":[1],"dtype":"F32","colour":1}])"),
      "feature_columns[0]: unknown field 'colour'");
  EXPECT_EQ(
      columnsError(R"([{"kind":"numeric_column","key":"age","key":"b"}])"),
      "feature_columns[0]: field 'key' appears twice");
  EXPECT_EQ(columnsError(R"([{"kind":"numeric_column","key":7}])"),
            "feature_columns[0]: field 'key': must be a string");
  EXPECT_EQ(
      columnsError(
          R"([{"kind":"numeric_column","key":"age","shape":[1],"dtype":"F33"}])"),
      "feature_columns[0] (numeric_column 'age'): field 'dtype': unknown "
      "dtype 'F33' (F32, F64, I32, I64, BOOL, F16, BF16 or STRING)");
  EXPECT_EQ(
      columnsError(
          R"([{"kind":"numeric_column","key":"age","shape":[-1],"dtype":"F32"}])"),
      "feature_columns[0] (numeric_column 'age'): field 'shape': -1 is "
      "outside [1, 16777216]");
  EXPECT_EQ(
      columnsError(
          R"([{"kind":"numeric_column","key":"age","shape":[4096,4096,2],"dtype":"F32"}])"),
      "feature_columns[0] (numeric_column 'age'): field 'shape': more than "
      "16777216 elements");
  EXPECT_EQ(
      columnsError(
          R"([{"kind":"numeric_column","key":"age","shape":[1],"dtype":"I32","default_value":[1e10]}])"),
      "feature_columns[0] (numeric_column 'age'): field 'default_value': "
      "1e+10 does not fit dtype I32");
  EXPECT_EQ(
      columnsError(
          R"([{"kind":"numeric_column","key":"age","shape":[2],"dtype":"F32","default_value":[1,2,3]}])"),
      "feature_columns[0] (numeric_column 'age'): field 'default_value': 3 "
      "values, expected 2 for shape [2]");
  // The constructors' own checks, under the column's place.
  EXPECT_EQ(
      columnsError(
          R"([{"kind":"numeric_column","key":"age","shape":[1],"dtype":"I64","default_value":[1.5]}])"),
      "feature_columns[0] (numeric_column 'age'): numeric_column 'age': "
      "default_value 1.500000 is not an integer of dtype int64");
  EXPECT_EQ(
      columnsError(
          R"([{"kind":"categorical_column_with_hash_bucket","key":"c","hash_bucket_size":1099511627777,"dtype":"STRING"}])"),
      "feature_columns[0] (categorical_column_with_hash_bucket 'c'): field "
      "'hash_bucket_size': 1099511627777 is outside [1, 1099511627776]");
  EXPECT_EQ(
      columnsError(
          R"([{"kind":"categorical_column_with_identity","key":"i","num_buckets":2.5}])"),
      "feature_columns[0] (categorical_column_with_identity 'i'): field "
      "'num_buckets': must be an integer");
  EXPECT_EQ(
      columnsError(
          R"([{"kind":"categorical_column_with_vocabulary_list","key":"v","vocabulary_list":["a",1],"dtype":"STRING","default_value":-1,"num_oov_buckets":0}])"),
      "feature_columns[0] (categorical_column_with_vocabulary_list 'v'): "
      "field 'vocabulary_list': must be all strings or all integers");
  EXPECT_EQ(
      columnsError(
          R"([{"kind":"categorical_column_with_vocabulary_list","key":"v","vocabulary_list":["a","a"],"dtype":"STRING","default_value":-1,"num_oov_buckets":0}])")
          .rfind("feature_columns[0] (categorical_column_with_vocabulary_list "
                 "'v'): categorical_column_with_vocabulary_list 'v': ",
                 0),
      0u);
  EXPECT_EQ(columnsError(R"([{"kind":"indicator_column"}])"),
            "feature_columns[0] (indicator_column): missing field "
            "'categorical_column'");
  EXPECT_EQ(columnsError("[{\"kind\":\"indicator_column\","
                         "\"categorical_column\":" +
                         num + "}]"),
            "feature_columns[0].categorical_column: 'age' is not a "
            "categorical column");
  EXPECT_EQ(columnsError(R"([{"ref":0}])"),
            "feature_columns[0]: field 'ref': must be the number of a column "
            "written before (0..-1)");
  EXPECT_EQ(columnsError("[" + num + R"(,{"ref":0,"kind":"x"}])"),
            "feature_columns[1]: unknown field 'kind'");
  EXPECT_EQ(
      columnsError(
          R"([{"kind":"bucketized_column","source_column":{"kind":"numeric_column","key":"a","shape":[1],"dtype":"F32"},"boundaries":[1e300]}])"),
      "feature_columns[0] (bucketized_column): field 'boundaries': "
      "1e+300 is outside float32's range");
  EXPECT_EQ(
      columnsError(
          R"([{"kind":"crossed_column","keys":["a","b"],"hash_bucket_size":5,"hash_key":-1}])"),
      "feature_columns[0] (crossed_column): field 'hash_key': must be an "
      "unsigned 64-bit integer");
  EXPECT_EQ(
      columnsError(
          R"([{"kind":"crossed_column","keys":["a"],"hash_bucket_size":5,"hash_key":1}])"),
      "feature_columns[0] (crossed_column): crossed_column: keys must be a "
      "list with length > 1, not 1");
  // A key with a newline stays one line.
  EXPECT_EQ(
      columnsError(
          R"([{"kind":"numeric_column","key":"a\nb","shape":[1],"dtype":"X"}])"),
      "feature_columns[0] (numeric_column 'a\\x0ab'): field 'dtype': "
      "unknown dtype 'X' (F32, F64, I32, I64, BOOL, F16, BF16 or "
      "STRING)");
  EXPECT_EQ(
      columnsError(
          R"([{"kind":"categorical_column_with_vocabulary_file","key":"f","vocabulary_file":"/nonexistent/v.txt","vocabulary_size":3,"dtype":"STRING","default_value":-1,"num_oov_buckets":1}])")
          .rfind("feature_columns[0] (categorical_column_with_vocabulary_file "
                 "'f'): ",
                 0),
      0u);

  // Nesting: deep chains, and refs that would expand exponentially.
  std::string deep = "{\"kind\":\"categorical_column_with_identity\","
                     "\"key\":\"i\",\"num_buckets\":3}";
  for (int i = 0; i < 40; ++i)
    deep = "{\"kind\":\"weighted_categorical_column\",\"categorical_column\":" +
           deep + ",\"weight_feature_key\":\"w\",\"dtype\":\"F32\"}";
  EXPECT_NE(columnsError("[" + deep + "]")
                .find("columns nested deeper than "
                      "32"),
            std::string::npos);
  std::string doubling = "[" + num +
                         ",{\"kind\":\"categorical_column_with_"
                         "identity\",\"key\":\"i\","
                         "\"num_buckets\":3}";
  // Column 1 is the identity; each cross crosses the previous one twice.
  for (int i = 0; i < 12; ++i)
    doubling += ",{\"kind\":\"crossed_column\",\"keys\":[{\"ref\":" +
                std::to_string(i + 1) + "},{\"ref\":" + std::to_string(i + 1) +
                "}],\"hash_bucket_size\":5,\"hash_key\":1}";
  EXPECT_EQ(columnsError(doubling + "]"),
            "feature_columns[12] (crossed_column): field 'keys': more than "
            "1024 keys crossed");
}

TEST(FeatureColumnSerializationErrors, SharedAndNormalized) {
  const std::string item =
      R"({"kind":"categorical_column_with_identity","key":"i","num_buckets":3})";
  const std::string item4 =
      R"({"kind":"categorical_column_with_identity","key":"j","num_buckets":4})";
  auto shared = [](const std::string &cat, const std::string &more) {
    return R"({"kind":"shared_embedding_column","categorical_column":)" + cat +
           R"(,"shared_embedding_collection_name":"s","combiner":"mean")" +
           more + "}";
  };
  EXPECT_EQ(columnsError("[" + shared(item, "") + "]"),
            "feature_columns[0] (shared_embedding_column): missing field "
            "'dimension'");
  EXPECT_EQ(columnsError("[" +
                         shared(item, R"(,"dimension":2,"trainable":true)") +
                         "," + shared(item4, "") + "]"),
            "feature_columns[1] (shared_embedding_column): field "
            "'categorical_column': has 4 buckets, the collection 3");
  EXPECT_EQ(columnsError("[" +
                         shared(item, R"(,"dimension":2,"trainable":true)") +
                         "," + shared(item, R"(,"dimension":3)") + "]"),
            "feature_columns[1] (shared_embedding_column): field 'dimension': "
            "differs from the collection's");
  EXPECT_EQ(
      columnsError(
          "[" +
          shared(item, R"(,"dimension":2,"trainable":true,"combiner":"max")") +
          "]"),
      "feature_columns[0]: field 'combiner' appears twice");

  // A bucketized column of a normalized source cannot be crossed: the
  // Transformer would bucketize the raw value without the normalizer_fn.
  const std::string normalized =
      R"({"kind":"bucketized_column","source_column":{"kind":"numeric_column","key":"a","shape":[1],"dtype":"F32","normalizer_fn":true},"boundaries":[1]})";
  EXPECT_EQ(columnsError(R"([{"kind":"crossed_column","keys":["b",)" +
                         normalized +
                         R"(],"hash_bucket_size":5,"hash_key":1}])"),
            "feature_columns[0] (crossed_column): 'a_bucketized' is "
            "bucketized on the host here, but its source had a normalizer_fn, "
            "which runs compiled and is not kept");
  // ... and the writer refuses it too (so does the Transformer).
  auto a = numeric_column("a", {1}, {}, DType::Float32,
                          [](const Tensor &x) { return x; });
  auto x = crossed_column({"b", bucketized_column(a, {1})}, 5);
  EXPECT_EQ(messageOf<std::invalid_argument>(
                [&] { feature_columns_to_json({x}, identity); }),
            "feature_columns_to_json: 'a_bucketized_X_b' needs the ids of "
            "'a_bucketized' on the host, but its source has a normalizer_fn "
            "(which runs compiled; the Transformer refuses it too)");
  EXPECT_THROW(Transformer({x}), std::invalid_argument);
  // Used directly, a normalized bucketized column is written and read.
  FeatureColumns direct{bucketized_column(a, {1})};
  FeatureColumns read = feature_columns_from_json(
      feature_columns_to_json(direct, identity), identity);
  EXPECT_EQ(names(read), names(direct));
}

TEST(FeatureColumnSerializationErrors, ParseSpecs) {
  EXPECT_EQ(specError("[]"), "parse_spec: must be a JSON object");
  EXPECT_EQ(specError("{\"a\":"),
            "parse_spec: not valid JSON at byte 5: Invalid value.");
  EXPECT_EQ(
      specError(
          R"({"a":{"kind":"VarLenFeature","dtype":"F32"},"a":{"kind":"VarLenFeature","dtype":"F32"}})"),
      "parse_spec['a']: the feature appears twice");
  EXPECT_EQ(specError(R"({"a":{"kind":"DenseFeature"}})"),
            "parse_spec['a']: field 'kind': unknown kind 'DenseFeature' "
            "(FixedLenFeature, VarLenFeature or FixedLenSequenceFeature)");
  EXPECT_EQ(
      specError(R"({"a":{"kind":"VarLenFeature","dtype":"F32","shape":[]}})"),
      "parse_spec['a']: a VarLenFeature has only a dtype");
  EXPECT_EQ(
      specError(
          R"({"a":{"kind":"FixedLenFeature","shape":[2],"dtype":"F32","default_value":{"dtype":"F32","shape":[2],"values":[1]}}})"),
      "parse_spec['a'].default_value: field 'values': 1 values for "
      "shape [2]");
  EXPECT_EQ(
      specError(
          R"({"a":{"kind":"FixedLenFeature","shape":[1],"dtype":"F32","default_value":{"dtype":"F32","shape":[1],"values":[1e39]}}})"),
      "parse_spec['a'].default_value: field 'values': "
      "1e+39 is outside float32's range");
  EXPECT_EQ(
      specError(
          R"({"a":{"kind":"FixedLenFeature","shape":[1],"dtype":"I64","default_value":{"dtype":"I32","shape":[1],"values":[3000000000]}}})"),
      "parse_spec['a'].default_value: field 'values': 3000000000 is "
      "outside [-2147483648, 2147483647]");
  EXPECT_EQ(
      specError(
          R"({"a":{"kind":"FixedLenFeature","shape":[1],"dtype":"STRING","default_value":{"dtype":"STRING","shape":[1],"values":[1]}}})"),
      "parse_spec['a'].default_value: field 'values': must be strings");
  EXPECT_EQ(
      specError(
          R"({"a":{"kind":"FixedLenFeature","shape":[1],"dtype":"INVALID"}})"),
      "parse_spec['a']: field 'dtype': unknown dtype 'INVALID' (F32, "
      "F64, I32, I64, BOOL, F16, BF16 or STRING)");
  EXPECT_EQ(
      specError(
          R"({"a":{"kind":"FixedLenSequenceFeature","shape":[],"dtype":"F32"}})"),
      "parse_spec['a']: missing field 'allow_missing'");
  EXPECT_EQ(
      specError(
          R"({"a":{"kind":"FixedLenFeature","shape":[-1],"dtype":"F32"}})"),
      "parse_spec['a']: field 'shape': -1 is outside [0, 16777216]");
  EXPECT_EQ(
      specError(
          R"({"a":{"kind":"FixedLenFeature","shape":[16777216,2],"dtype":"F32"}})"),
      "parse_spec['a']: field 'shape': more than 16777216 elements");
}

} // namespace
