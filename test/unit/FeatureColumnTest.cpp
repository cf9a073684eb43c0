//===- FeatureColumnTest.cpp - Feature columns and their host half --------===//
//
// Names, arguments, parse specs and the Transformer's model inputs. The
// expected ids were computed by TF 2.15.1 (tensorflow-cpu) with the same
// columns on the same features:
//   from tensorflow.python.feature_column import feature_column_v2 as fcv2
//   cache = fcv2.FeatureTransformationCache(features)
//   column.get_sparse_tensors(cache, None).id_tensor
// with the features of rawFeatures() below, vocab.txt "apple\nbanana\ncherry\n"
// and ivocab.txt "10\n20\n30\n40\n". The ids here are those TF gives, less
// the negative ones (pruned, as safe_embedding_lookup_sparse prunes them).
// test/e2e/tf_feature_column_compat.py compares with TF itself.
//
//===----------------------------------------------------------------------===//

#include "lib/FeatureColumn/FeatureColumn.h"
#include "lib/Checkpoint/TensorBundle.h"
#include "lib/Data/Example.h"
#include "lib/Data/Hashing.h"
#include "lib/FeatureColumn/Transformer.h"
#include "test/unit/FileTesting.h"

#include <filesystem>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <utility>

using namespace estc;
using namespace estc::feature_column;
using estc::data::DataError;
using estc::testing::messageOf;

namespace {

using RowIds = std::vector<std::pair<int64_t, int64_t>>;

/// The features TF computed the ids of (see the file comment).
std::map<std::string, data::Element> rawFeatures() {
  std::map<std::string, data::Element> f;
  f.emplace("s", TensorValue::of_strings(
                     {3, 2}, {"apple", "", "kiwi", "cherry", "", ""}));
  f.emplace("sp",
            data::SparseTensor::make(
                {0, 0, 1, 0, 1, 1, 2, 0},
                TensorValue::of_strings({4}, {"apple", "", "zzz", "banana"}),
                {3, 2}));
  f.emplace("i", TensorValue::of<int64_t>({3, 2}, {3, -1, 7, 0, -1, -1}));
  f.emplace("age", TensorValue::of<float>({3, 1}, {17, 18, 65.5}));
  return f;
}

data::Element dict(std::map<std::string, data::Element> f) {
  return data::Element::dict(std::move(f));
}

/// (row, id) of a categorical model input; checks the four tensors agree.
RowIds rowIds(const ModelInputs &in, const std::string &name) {
  const TensorValue &ids = in.at(ids_key(name));
  const TensorValue &rows = in.at(rows_key(name));
  const TensorValue &lengths = in.at(row_lengths_key(name));
  EXPECT_EQ(ids.dtype, DType::Int64);
  EXPECT_EQ(ids.shape, rows.shape);
  std::vector<int64_t> i = ids.values<int64_t>(), r = rows.values<int64_t>();
  std::vector<int64_t> counted(static_cast<size_t>(lengths.shape.at(0)), 0);
  RowIds out;
  for (size_t k = 0; k < i.size(); ++k) {
    if (k > 0) {
      EXPECT_LE(r[k - 1], r[k]) << "rows must be non-decreasing";
    }
    ++counted.at(static_cast<size_t>(r[k]));
    out.emplace_back(r[k], i[k]);
  }
  EXPECT_EQ(counted, lengths.values<int64_t>());
  return out;
}

RowIds transformIds(const FeatureColumnPtr &column, const std::string &name,
                    std::map<std::string, data::Element> f = rawFeatures()) {
  return rowIds(Transformer({column}).transform(dict(std::move(f))), name);
}

class VocabFileTest : public estc::testing::FileTest {
protected:
  VocabFileTest() : FileTest("fc") {}
};

} // namespace

// --- Names, shapes, arguments
// -------------------------------------------------

TEST(FeatureColumnTest, NamesAsTf) {
  auto age = numeric_column("age");
  auto agb = bucketized_column(age, {18, 30, 50});
  auto sex = categorical_column_with_vocabulary_list("sex", {"m", "f"});
  auto ids = categorical_column_with_identity("ids", 7);
  EXPECT_EQ(age->name(), "age");
  EXPECT_EQ(agb->name(), "age_bucketized");
  EXPECT_EQ(crossed_column({agb, "sex"}, 50)->name(), "age_bucketized_X_sex");
  EXPECT_EQ(crossed_column({"sex", agb}, 50)->name(), "age_bucketized_X_sex");
  EXPECT_EQ(crossed_column({crossed_column({"s", "i"}, 10), "sp"}, 5)->name(),
            "i_X_s_X_sp");
  EXPECT_EQ(indicator_column(sex)->name(), "sex_indicator");
  EXPECT_EQ(embedding_column(sex, 3)->name(), "sex_embedding");
  EXPECT_EQ(weighted_categorical_column(ids, "wt")->name(),
            "ids_weighted_by_wt");
  EXPECT_EQ(embedding_column(weighted_categorical_column(ids, "wt"), 2)->name(),
            "ids_weighted_by_wt_embedding");
  auto a = categorical_column_with_vocabulary_list("a", {"x", "y", "z"});
  auto b = categorical_column_with_vocabulary_list("b", {"p", "q", "r"});
  auto shared = shared_embedding_columns({b, a}, 3);
  ASSERT_EQ(shared.size(), 2u);
  EXPECT_EQ(shared[0]->name(), "b_shared_embedding");
  EXPECT_EQ(shared[1]->name(), "a_shared_embedding");
  EXPECT_EQ(shared[0]->shared().collection_name, "a_b_shared_embedding");
  EXPECT_EQ(&shared[0]->shared(), &shared[1]->shared());
  EXPECT_EQ(shared_embedding_columns({a, b}, 3, "mean", {}, "mine")[0]
                ->shared()
                .collection_name,
            "mine");
}

TEST(FeatureColumnTest, ShapesAndBuckets) {
  auto two = numeric_column("two", {2});
  auto b = bucketized_column(two, {10, 30});
  EXPECT_EQ(b->variable_shape(), (Dims{2, 3}));
  EXPECT_EQ(b->num_buckets(), 6);
  EXPECT_EQ(b->num_elements(), 6);
  EXPECT_EQ(numeric_column("m", {2, 3})->num_elements(), 6);
  auto v = categorical_column_with_vocabulary_list("v", {"a", "b", "c"},
                                                   std::nullopt, -1, 4);
  EXPECT_EQ(v->num_buckets(), 7);
  EXPECT_EQ(v->dtype(), DType::String);
  EXPECT_EQ(categorical_column_with_vocabulary_list("n", {4, 5})->dtype(),
            DType::Int64);
  EXPECT_EQ(indicator_column(v)->variable_shape(), (Dims{7}));
  auto e = embedding_column(v, 5);
  EXPECT_EQ(e->variable_shape(), (Dims{5}));
  // TF's default initializer: truncated_normal(0, 1/sqrt(dimension)).
  EXPECT_EQ(e->initializer().type, truncated_normal_initializer().type);
  EXPECT_DOUBLE_EQ(e->initializer().floats.at("stddev"), 1 / std::sqrt(5.0));
  EXPECT_EQ(e->combiner(), "mean");
  EXPECT_EQ(crossed_column({"a", "b"}, 9)->hash_key(),
            data::kDefaultCrossHashKey);
  EXPECT_EQ(crossed_column({"a", "b"}, 9, 77)->hash_key(), 77u);
  EXPECT_EQ(weighted_categorical_column(v, "w")->num_buckets(), 7);
}

TEST(FeatureColumnTest, ArgumentErrorsNameTheColumn) {
  auto msg = [](auto fn) { return messageOf<std::invalid_argument>(fn); };
  auto v = categorical_column_with_vocabulary_list("v", {"a", "b"});
  auto h = categorical_column_with_hash_bucket("h", 10);
  auto n = numeric_column("n");
  EXPECT_NE(msg([] { numeric_column(""); }).find("key"), std::string::npos);
  EXPECT_NE(msg([] { numeric_column("x", {0}); }).find("'x'"),
            std::string::npos);
  EXPECT_NE(msg([] { numeric_column("x", {}); }), "");
  EXPECT_NE(msg([] { numeric_column("x", {1}, {}, DType::String); }), "");
  EXPECT_NE(msg([] { numeric_column("x", {2}, {1, 2, 3}); }).find("'x'"),
            std::string::npos);
  EXPECT_NE(msg([] { numeric_column("x", {1}, {0.5}, DType::Int64); }), "");
  EXPECT_NE(msg([&] { bucketized_column(nullptr, {1}); }), "");
  EXPECT_NE(msg([&] { bucketized_column(n, {}); }).find("'n_bucketized'"),
            std::string::npos);
  EXPECT_NE(msg([&] { bucketized_column(n, {2, 1}); }), "");
  EXPECT_NE(msg([&] { bucketized_column(n, {1, 1}); }), "");
  EXPECT_NE(msg([] { bucketized_column(numeric_column("m", {2, 2}), {1}); }),
            "");
  EXPECT_NE(msg([] { categorical_column_with_identity("i", 0); }).find("'i'"),
            std::string::npos);
  EXPECT_NE(msg([] { categorical_column_with_identity("i", 3, 3); }), "");
  EXPECT_NE(msg([] { categorical_column_with_identity("i", 3, -1); }), "");
  EXPECT_NE(msg([] { categorical_column_with_hash_bucket("h", 0); }), "");
  EXPECT_NE(
      msg([] { categorical_column_with_hash_bucket("h", 3, DType::Float32); }),
      "");
  EXPECT_NE(msg([] {
              categorical_column_with_vocabulary_list(
                  "v", std::vector<std::string>{});
            }),
            "");
  EXPECT_NE(msg([] {
              categorical_column_with_vocabulary_list("v", {"a", "a"});
            }).find("'v'"),
            std::string::npos);
  EXPECT_NE(msg([] {
              categorical_column_with_vocabulary_list("v", {"a"}, {}, 3, 2);
            }),
            "");
  EXPECT_NE(msg([] {
              categorical_column_with_vocabulary_list("v", {"a"}, {}, -1, -2);
            }),
            "");
  EXPECT_NE(msg([] {
              categorical_column_with_vocabulary_list("v", {"a"}, DType::Int64);
            }),
            "");
  EXPECT_NE(msg([] {
              categorical_column_with_vocabulary_list("v", {1}, DType::String);
            }),
            "");
  EXPECT_NE(msg([] { categorical_column_with_vocabulary_file("f", ""); }), "");
  EXPECT_NE(msg([] { crossed_column({"a", "b"}, 0); }), "");
  EXPECT_NE(msg([] { crossed_column({"a"}, 10); }), "");
  EXPECT_NE(msg([] { crossed_column({"a", ""}, 10); }), "");
  EXPECT_NE(msg([&] { crossed_column({"a", h}, 10); }).find("'h'"),
            std::string::npos);
  EXPECT_NE(msg([&] {
              crossed_column({"a", weighted_categorical_column(v, "w")}, 10);
            }).find("v_weighted_by_w"),
            std::string::npos);
  EXPECT_NE(msg([] { indicator_column(nullptr); }), "");
  EXPECT_NE(msg([&] { embedding_column(v, 0); }).find("'v_embedding'"),
            std::string::npos);
  EXPECT_NE(msg([&] { embedding_column(v, 2, "max"); }), "");
  EXPECT_NE(msg([&] { embedding_column(v, 2, "mean", {}, 0.0); }), "");
  EXPECT_NE(msg([&] { embedding_column(nullptr, 2); }), "");
  EXPECT_NE(msg([&] { weighted_categorical_column(v, ""); }), "");
  EXPECT_NE(msg([&] { weighted_categorical_column(v, "w", DType::String); }),
            "");
  EXPECT_NE(msg([&] { weighted_categorical_column(nullptr, "w"); }), "");
  auto other = categorical_column_with_vocabulary_list("o", {"a", "b", "c"});
  auto ident = categorical_column_with_identity("id", 2);
  EXPECT_NE(msg([&] { shared_embedding_columns({v, other}, 2); }).find("'o'"),
            std::string::npos);
  EXPECT_NE(msg([&] { shared_embedding_columns({v, ident}, 2); }), "");
  EXPECT_NE(msg([&] { shared_embedding_columns({}, 2); }), "");
  EXPECT_NE(msg([&] { shared_embedding_columns({v}, 0); }), "");
  EXPECT_NE(msg([&] { shared_embedding_columns({v}, 2, "avg"); }), "");
  EXPECT_NE(msg([&] { shared_embedding_columns({v, nullptr}, 2); }), "");
  // A weighted column shares with columns of its categorical's kind.
  EXPECT_EQ(
      shared_embedding_columns({weighted_categorical_column(ident, "w"),
                                categorical_column_with_identity("id2", 2)},
                               2)
          .size(),
      2u);
  EXPECT_NE(msg([] { sorted_by_name({}); }), "");
  EXPECT_NE(msg([&] { sorted_by_name({v, nullptr}); }), "");
  EXPECT_NE(msg([&] {
              sorted_by_name(
                  {v, categorical_column_with_vocabulary_list("v", {"z"})});
            }).find("'v'"),
            std::string::npos);
  auto sorted = sorted_by_name({v, n, h});
  EXPECT_EQ(sorted[0]->name(), "h");
  EXPECT_EQ(sorted[2]->name(), "v");
}

// --- make_parse_example_spec
// --------------------------------------------------

// embedding_column(ckpt_to_load_from, tensor_name_in_ckpt): the variable
// starts from the checkpoint's tensor (a TF checkpoint here).
TEST(FeatureColumnTest, EmbeddingFromCheckpoint) {
  auto errorOf = [](auto fn) -> std::string {
    try {
      fn();
    } catch (const std::exception &e) {
      return e.what();
    }
    return "(no error)";
  };
  std::string dir = (std::filesystem::temp_directory_path() /
                     ("estc-fc-ckpt-" + std::to_string(::getpid())))
                        .string();
  std::filesystem::create_directories(dir);
  std::string prefix = dir + "/model.ckpt-5";
  train::write_tensor_bundle(
      prefix,
      {{"old/emb", TensorValue::of<float>({3, 2}, {1, 2, 3, 4, 5, 6})},
       {"old/f64", TensorValue::of<double>({3, 2}, {0, 0, 0, 0, 0, 0})}});
  auto sex = categorical_column_with_vocabulary_list("sex", {"m", "f", "x"});
  auto e = embedding_column(sex, 2, "mean", {}, {}, true, prefix, "old/emb");
  EXPECT_EQ(e->initializer().type, "constant");
  EXPECT_EQ(e->initializer().values, (std::vector<double>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(errorOf([&] {
              embedding_column(sex, 2, "mean", {}, {}, true, prefix, "");
            }),
            "embedding_column: Must specify both `ckpt_to_load_from` and "
            "`tensor_name_in_ckpt` or none of them.");
  EXPECT_EQ(errorOf([&] {
              embedding_column(sex, 3, "mean", {}, {}, true, prefix, "old/emb");
            }),
            "embedding_column: tensor_name_in_ckpt 'old/emb' of " + prefix +
                " is F32[3,2], not the F32[3,3] of the embedding of 'sex'");
  EXPECT_EQ(errorOf([&] {
              embedding_column(sex, 2, "mean", {}, {}, true, prefix, "old/f64");
            }),
            "embedding_column: tensor_name_in_ckpt 'old/f64' of " + prefix +
                " is F64[3,2], not the F32[3,2] of the embedding of 'sex'");
  EXPECT_NE(errorOf([&] {
              embedding_column(sex, 2, "mean", {}, {}, true, prefix, "nope");
            }).find("nope"),
            std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(FeatureColumnTest, ParseExampleSpec) {
  auto age = numeric_column("age", {1}, {-1.0});
  auto ids = categorical_column_with_identity("ids", 7);
  data::FeatureSpecs specs = make_parse_example_spec(
      {bucketized_column(age, {1, 2}),
       indicator_column(
           categorical_column_with_vocabulary_list("sex", {"m", "f"})),
       embedding_column(weighted_categorical_column(ids, "wt"), 2),
       crossed_column({"occ", categorical_column_with_identity("n", 3)}, 10),
       categorical_column_with_hash_bucket("h", 5, DType::Int64)});
  ASSERT_EQ(specs.size(), 7u);
  const auto &fixed = std::get<data::FixedLenFeature>(specs.at("age"));
  EXPECT_EQ(fixed.shape, (Dims{1}));
  EXPECT_EQ(fixed.dtype, DType::Float32);
  ASSERT_TRUE(fixed.default_value.has_value());
  EXPECT_EQ(fixed.default_value->values<float>(), std::vector<float>{-1});
  EXPECT_EQ(std::get<data::VarLenFeature>(specs.at("sex")).dtype,
            DType::String);
  EXPECT_EQ(std::get<data::VarLenFeature>(specs.at("ids")).dtype, DType::Int64);
  EXPECT_EQ(std::get<data::VarLenFeature>(specs.at("wt")).dtype,
            DType::Float32);
  EXPECT_EQ(std::get<data::VarLenFeature>(specs.at("occ")).dtype,
            DType::String);
  EXPECT_EQ(std::get<data::VarLenFeature>(specs.at("n")).dtype, DType::Int64);
  EXPECT_EQ(std::get<data::VarLenFeature>(specs.at("h")).dtype, DType::Int64);
  // Without default_value a fixed feature is required.
  EXPECT_FALSE(std::get<data::FixedLenFeature>(
                   make_parse_example_spec({numeric_column("x", {2})}).at("x"))
                   .default_value.has_value());
  EXPECT_EQ(
      std::get<data::FixedLenFeature>(
          make_parse_example_spec({numeric_column("x", {2}, {3}, DType::Int64)})
              .at("x"))
          .default_value->values<int64_t>(),
      (std::vector<int64_t>{3, 3}));
  // The same spec twice is fine; different ones are an error.
  EXPECT_EQ(make_parse_example_spec({age, bucketized_column(age, {3})}).size(),
            1u);
  EXPECT_NE(
      messageOf<std::invalid_argument>([] {
        make_parse_example_spec(
            {numeric_column("x"), categorical_column_with_identity("x", 3)});
      }).find("'x'"),
      std::string::npos);
  // A weight key that the categorical column already parses.
  EXPECT_THROW(
      make_parse_example_spec({weighted_categorical_column(ids, "ids")}),
      std::invalid_argument);
}

// --- Host ids, as TF computes them
// ----------------------------------------------

TEST(FeatureColumnTest, HashBucketIdsAsTf) {
  // Dense: "" is missing (dropped); sparse: "" is a value.
  EXPECT_EQ(transformIds(categorical_column_with_hash_bucket("s", 100), "s"),
            (RowIds{{0, 1}, {1, 73}, {1, 71}}));
  EXPECT_EQ(transformIds(categorical_column_with_hash_bucket("sp", 100), "sp"),
            (RowIds{{0, 1}, {1, 63}, {1, 80}, {2, 56}}));
  // Integers hash as their decimal strings; -1 is missing in a dense tensor.
  EXPECT_EQ(
      transformIds(categorical_column_with_hash_bucket("i", 50, DType::Int64),
                   "i"),
      (RowIds{{0, 21}, {1, 38}, {1, 35}}));
}

TEST(FeatureColumnTest, VocabularyListIdsAsTf) {
  EXPECT_EQ(transformIds(categorical_column_with_vocabulary_list(
                             "s", {"apple", "banana", "cherry"}, {}, -1, 5),
                         "s"),
            (RowIds{{0, 0}, {1, 6}, {1, 2}}));
  // TF gives default_value 7 for "" and "zzz", outside [0, 3): an error
  // once the ids reach the model (TF's lookup fails); 2 is fine.
  EXPECT_NE(messageOf<DataError>([] {
              transformIds(categorical_column_with_vocabulary_list(
                               "sp", {"apple", "banana", "cherry"}, {}, 7),
                           "sp");
            }).find("id 7 at batch row 1 is outside [0, 3)"),
            std::string::npos);
  EXPECT_EQ(transformIds(categorical_column_with_vocabulary_list(
                             "sp", {"apple", "banana", "cherry"}, {}, 2),
                         "sp"),
            (RowIds{{0, 0}, {1, 2}, {1, 2}, {2, 1}}));
  // Default -1: OOV ids are pruned.
  EXPECT_EQ(transformIds(categorical_column_with_vocabulary_list(
                             "sp", {"apple", "banana", "cherry"}),
                         "sp"),
            (RowIds{{0, 0}, {2, 1}}));
  EXPECT_EQ(transformIds(categorical_column_with_vocabulary_list("i", {7, 3, 5},
                                                                 {}, -1, 2),
                         "i"),
            (RowIds{{0, 1}, {1, 0}, {1, 4}}));
}

TEST_F(VocabFileTest, VocabularyFileIdsAsTf) {
  std::string words = write("vocab.txt", "apple\nbanana\ncherry\n");
  std::string numbers = write("ivocab.txt", "10\n20\n30\n40\n");
  auto oov = categorical_column_with_vocabulary_file("sp", words, {},
                                                     DType::String, {}, 3);
  EXPECT_EQ(oov->vocabulary_size(), 3);
  EXPECT_EQ(oov->num_buckets(), 6);
  EXPECT_EQ(transformIds(oov, "sp"), (RowIds{{0, 0}, {1, 5}, {1, 3}, {2, 1}}));
  auto two =
      categorical_column_with_vocabulary_file("s", words, 2, DType::String, 9);
  EXPECT_EQ(two->num_buckets(), 2);
  // TF gives 9 (default_value) for kiwi and cherry, outside [0, 2): an
  // error once the ids reach the model.
  EXPECT_NE(
      messageOf<DataError>([&] { transformIds(two, "s"); }).find("batch row 1"),
      std::string::npos);
  EXPECT_EQ(transformIds(categorical_column_with_vocabulary_file(
                             "i", numbers, {}, DType::Int64, {}, 2),
                         "i"),
            (RowIds{{0, 5}, {1, 4}, {1, 5}}));
  EXPECT_THROW(categorical_column_with_vocabulary_file("x", path("missing")),
               DataError);
  // TF refuses empty lines among the keys it reads.
  std::string gap = write("gap.txt", "a\n\nb\n");
  EXPECT_NE(messageOf<DataError>([&] {
              categorical_column_with_vocabulary_file("x", gap);
            }).find("gap.txt:2: empty line"),
            std::string::npos);
  EXPECT_EQ(categorical_column_with_vocabulary_file("x", gap, 1)->num_buckets(),
            1);
  EXPECT_THROW(categorical_column_with_vocabulary_file("x", words, 5),
               DataError);
  EXPECT_THROW(categorical_column_with_vocabulary_file("x", words, 0),
               std::invalid_argument);
  EXPECT_THROW(categorical_column_with_vocabulary_file("x", words, {},
                                                       DType::String, 1, 2),
               std::invalid_argument);
  EXPECT_THROW(categorical_column_with_vocabulary_file("x", words, {},
                                                       DType::String, {}, -1),
               std::invalid_argument);
  EXPECT_THROW(
      categorical_column_with_vocabulary_file("x", words, {}, DType::Float32),
      std::invalid_argument);
}

TEST(FeatureColumnTest, IdentityIds) {
  // TF: [(0,0) 3, (1,0) 4, (1,1) 0] with default_value 4 (7 -> 4; -1 is
  // missing in a dense tensor).
  EXPECT_EQ(transformIds(categorical_column_with_identity("i", 5, 4), "i"),
            (RowIds{{0, 3}, {1, 4}, {1, 0}}));
  // Without default_value: negative ids are pruned, too large ones an error.
  std::map<std::string, data::Element> f;
  f.emplace("i", TensorValue::of<int32_t>({3}, {2, -3, 0}));
  EXPECT_EQ(transformIds(categorical_column_with_identity("i", 3), "i", f),
            (RowIds{{0, 2}, {2, 0}}));
  std::string m = messageOf<DataError>(
      [&] { transformIds(categorical_column_with_identity("i", 5), "i"); });
  EXPECT_NE(m.find("categorical_column_with_identity 'i'"), std::string::npos)
      << m;
  EXPECT_NE(m.find("id 7 at batch row 1"), std::string::npos) << m;
  // Identity ids are integers.
  EXPECT_NE(messageOf<DataError>([] {
              transformIds(categorical_column_with_identity("s", 5), "s");
            }).find("'s'"),
            std::string::npos);
}

TEST(FeatureColumnTest, CrossIdsAsTf) {
  // Raw keys: every value crossed, "" included (row 2: "" x "banana"),
  // the sparse input ("sp") before the dense one, as TF's op crosses them.
  EXPECT_EQ(transformIds(crossed_column({"s", "sp"}, 1000), "s_X_sp"),
            (RowIds{{0, 668},
                    {0, 330},
                    {1, 220},
                    {1, 787},
                    {1, 622},
                    {1, 170},
                    {2, 484},
                    {2, 484}}));
  // A bucketized column, a vocabulary column (its -1 ids crossed too) and
  // a raw int key, with a hash_key.
  auto age = bucketized_column(numeric_column("age"), {18, 30, 50});
  auto fruit = categorical_column_with_vocabulary_list(
      "sp", {"apple", "banana", "cherry"});
  EXPECT_EQ(transformIds(crossed_column({age, fruit, "i"}, 10000, 12345),
                         "age_bucketized_X_i_X_sp"),
            (RowIds{{0, 3397},
                    {0, 2237},
                    {1, 6857},
                    {1, 9604},
                    {1, 6857},
                    {1, 9604},
                    {2, 2225},
                    {2, 2225}}));
  EXPECT_EQ(
      transformIds(crossed_column({crossed_column({"s", "i"}, 100), "sp"}, 500),
                   "i_X_s_X_sp"),
      (RowIds{{0, 78},
              {0, 196},
              {0, 267},
              {0, 340},
              {1, 69},
              {1, 164},
              {1, 433},
              {1, 32},
              {1, 334},
              {1, 78},
              {1, 218},
              {1, 55},
              {2, 455},
              {2, 455},
              {2, 455},
              {2, 455}}));
  // A bucketized source of two elements: ids bucket + 3 * element.
  std::map<std::string, data::Element> f;
  f.emplace("two", TensorValue::of<float>({2, 2}, {1, 40, 30, 29.999f}));
  f.emplace("k", TensorValue::of_strings({2, 1}, {"a", "b"}));
  EXPECT_EQ(
      transformIds(
          crossed_column(
              {bucketized_column(numeric_column("two", {2}), {10, 30}), "k"},
              100),
          "k_X_two_bucketized", f),
      (RowIds{{0, 95}, {0, 62}, {1, 49}, {1, 65}}));
  // Float raw keys cannot be crossed.
  EXPECT_NE(messageOf<DataError>([] {
              transformIds(crossed_column({"s", "age"}, 10), "age_X_s");
            }).find("crossed_column 'age_X_s'"),
            std::string::npos);
}

TEST(FeatureColumnTest, WeightedIdsAndWeights) {
  auto ids = categorical_column_with_identity("i", 10);
  auto w = weighted_categorical_column(ids, "w");
  // Dense: the -1 id and the 0 weight are both missing (TF drops both).
  std::map<std::string, data::Element> f;
  f.emplace("i", TensorValue::of<int64_t>({2, 2}, {1, -1, 3, 7}));
  f.emplace("w", TensorValue::of<float>({2, 2}, {0.5f, 0, 2, 3}));
  ModelInputs in = Transformer({w}).transform(dict(f));
  EXPECT_EQ(rowIds(in, "i_weighted_by_w"), (RowIds{{0, 1}, {1, 3}, {1, 7}}));
  EXPECT_EQ(in.at("i_weighted_by_w/weights").values<float>(),
            (std::vector<float>{0.5f, 2, 3}));
  // Sparse weights at the ids' positions.
  std::map<std::string, data::Element> s;
  s.emplace("i", data::SparseTensor::make(
                     {0, 0, 0, 1, 2, 0},
                     TensorValue::of<int64_t>({3}, {4, 5, 6}), {3, 2}));
  s.emplace("w", data::SparseTensor::make(
                     {0, 0, 0, 1, 2, 0},
                     TensorValue::of<double>({3}, {1.5, -2, 0}), {3, 2}));
  in = Transformer({w}).transform(dict(s));
  EXPECT_EQ(rowIds(in, "i_weighted_by_w"), (RowIds{{0, 4}, {0, 5}, {2, 6}}));
  EXPECT_EQ(in.at("i_weighted_by_w/weights").values<float>(),
            (std::vector<float>{1.5f, -2, 0}));
  // Weights that do not line up: TF fails in the lookup; here a DataError.
  f["w"] = TensorValue::of<float>({2, 2}, {0.5f, 0, 0, 3});
  std::string m =
      messageOf<DataError>([&] { Transformer({w}).transform(dict(f)); });
  EXPECT_NE(m.find("'i_weighted_by_w'"), std::string::npos) << m;
  EXPECT_NE(m.find("batch row 1"), std::string::npos) << m;
  f["w"] = TensorValue::of<float>({2, 1}, {1, 2});
  EXPECT_THROW(Transformer({w}).transform(dict(f)), DataError);
  f["w"] = TensorValue::of_strings({2, 2}, {"a", "b", "c", "d"});
  EXPECT_THROW(Transformer({w}).transform(dict(f)), DataError);
  f.erase("w");
  EXPECT_NE(messageOf<DataError>([&] {
              Transformer({w}).transform(dict(f));
            }).find("feature 'w' is missing"),
            std::string::npos);
}

// --- Numeric inputs, specs, errors
// ----------------------------------------------

TEST(FeatureColumnTest, NumericInputs) {
  auto age = numeric_column("age");
  auto two = numeric_column("two", {2, 1});
  std::map<std::string, TensorValue> f;
  f["age"] = TensorValue::of<int64_t>({3}, {1, 2, 3});
  f["two"] = TensorValue::of<double>({3, 2}, {1, 2, 3, 4, 5, 6});
  f["unused"] = TensorValue::of_strings({1}, {"x"});
  ModelInputs in = Transformer({age, two}).transform(f);
  ASSERT_EQ(in.size(), 2u);
  EXPECT_EQ(in.at("age").shape, (Dims{3, 1}));
  EXPECT_EQ(in.at("age").values<float>(), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(in.at("two").shape, (Dims{3, 2, 1}));
  EXPECT_EQ(in.at("two").dtype, DType::Float32);
  // A bucketized column used directly is bucketized in the compiled step:
  // its input is the source's.
  in = Transformer({bucketized_column(age, {1.5})}).transform(f);
  EXPECT_EQ(in.size(), 1u);
  EXPECT_EQ(in.at("age").shape, (Dims{3, 1}));
  in = Transformer({embedding_column(bucketized_column(age, {1.5}), 2)})
           .transform(f);
  EXPECT_EQ(in.size(), 1u);

  auto bad = [&](std::map<std::string, TensorValue> g) {
    return messageOf<DataError>([&] { Transformer({age}).transform(g); });
  };
  EXPECT_NE(bad({{"age", TensorValue::of_strings({1}, {"3"})}})
                .find("numeric_column 'age'"),
            std::string::npos);
  EXPECT_NE(bad({{"age", TensorValue::of<float>({2, 2}, {1, 2, 3, 4})}})
                .find("2 values per example"),
            std::string::npos);
  EXPECT_NE(bad({{"age", TensorValue::of<float>({}, {1})}}).find("scalar"),
            std::string::npos);
  EXPECT_NE(bad({{"x", TensorValue::of<float>({1}, {1})}})
                .find("feature 'age' is missing"),
            std::string::npos);
  std::map<std::string, data::Element> sp;
  sp.emplace("age", data::SparseTensor::make(
                        {0, 0}, TensorValue::of<float>({1}, {1}), {1, 1}));
  EXPECT_NE(messageOf<DataError>([&] {
              Transformer({age}).transform(dict(sp));
            }).find("SparseTensor"),
            std::string::npos);
  // Features of different batch sizes.
  f["two"] = TensorValue::of<double>({2, 2}, {1, 2, 3, 4});
  EXPECT_NE(messageOf<DataError>([&] {
              Transformer({age, two}).transform(f);
            }).find("batch size"),
            std::string::npos);
  // Not a dict.
  EXPECT_THROW(Transformer({age}).transform(
                   data::Element(TensorValue::of<float>({1}, {1}))),
               DataError);
}

TEST(FeatureColumnTest, CategoricalInputErrors) {
  auto h = categorical_column_with_hash_bucket("h", 10);
  auto hi = categorical_column_with_hash_bucket("h", 10, DType::Int64);
  auto v = categorical_column_with_vocabulary_list("h", {1, 2});
  std::map<std::string, TensorValue> ints{
      {"h", TensorValue::of<int64_t>({2}, {1, 2})}};
  std::map<std::string, TensorValue> strs{
      {"h", TensorValue::of_strings({2}, {"a", "b"})}};
  std::map<std::string, TensorValue> floats{
      {"h", TensorValue::of<float>({2}, {1, 2})}};
  EXPECT_NE(messageOf<DataError>([&] {
              Transformer({h}).transform(ints);
            }).find("categorical_column_with_hash_bucket 'h'"),
            std::string::npos);
  EXPECT_THROW(Transformer({hi}).transform(strs), DataError);
  EXPECT_THROW(Transformer({hi}).transform(floats), DataError);
  EXPECT_THROW(Transformer({v}).transform(strs), DataError);
  EXPECT_EQ(rowIds(Transformer({v}).transform(ints), "h"),
            (RowIds{{0, 0}, {1, 1}}));
  // Sparse indices out of row-major order.
  std::map<std::string, data::Element> f;
  f.emplace(
      "h", data::SparseTensor::make(
               {1, 0, 0, 0}, TensorValue::of_strings({2}, {"a", "b"}), {2, 1}));
  EXPECT_NE(messageOf<DataError>([&] {
              Transformer({h}).transform(dict(f));
            }).find("row-major"),
            std::string::npos);
  f["h"] = data::SparseTensor::make({0, 5}, TensorValue::of_strings({1}, {"a"}),
                                    {2, 1});
  EXPECT_THROW(Transformer({h}).transform(dict(f)), DataError);
  // Rank-1 and rank-3 inputs: one value per position of a row.
  f["h"] = TensorValue::of_strings({2, 1, 2}, {"a", "b", "c", ""});
  EXPECT_EQ(rowIds(Transformer({h}).transform(dict(f)), "h").size(), 3u);
}

TEST(FeatureColumnTest, InputSpecsAndValuesInputs) {
  auto age = numeric_column("age", {2});
  auto sex = categorical_column_with_vocabulary_list("sex", {"m", "f"});
  auto ids = categorical_column_with_identity("ids", 7);
  auto cross = crossed_column({bucketized_column(age, {1}), sex}, 11);
  Transformer t({indicator_column(sex), bucketized_column(age, {3}), cross,
                 embedding_column(weighted_categorical_column(ids, "wt"), 2),
                 age, sex});
  std::vector<TensorSpec> specs = t.input_specs();
  std::vector<std::string> keys;
  for (const TensorSpec &s : specs)
    keys.push_back(s.key);
  EXPECT_EQ(keys,
            (std::vector<std::string>{
                "age", "age_bucketized_X_sex/ids",
                "age_bucketized_X_sex/row_lengths", "age_bucketized_X_sex/rows",
                "ids_weighted_by_wt/ids", "ids_weighted_by_wt/row_lengths",
                "ids_weighted_by_wt/rows", "ids_weighted_by_wt/weights",
                "sex/ids", "sex/row_lengths", "sex/rows"}));
  EXPECT_EQ(specs[0].shape, (Dims{-1, 2}));
  EXPECT_EQ(specs[0].dtype, DType::Float32);
  EXPECT_EQ(specs[1].shape, (Dims{-1}));
  EXPECT_EQ(specs[1].dtype, DType::Int64);
  EXPECT_EQ(specs[7].dtype, DType::Float32);
  EXPECT_EQ(t.values_inputs(),
            (std::set<std::string>{
                "age_bucketized_X_sex/ids", "age_bucketized_X_sex/rows",
                "ids_weighted_by_wt/ids", "ids_weighted_by_wt/rows",
                "ids_weighted_by_wt/weights", "sex/ids", "sex/rows"}));
  EXPECT_EQ(t.feature_keys(),
            (std::set<std::string>{"age", "ids", "sex", "wt"}));
  EXPECT_EQ(t.feature_columns().size(), 6u); // sex once

  // Every input of input_specs() comes out of transform().
  std::map<std::string, data::Element> f;
  f.emplace("age", TensorValue::of<float>({2, 2}, {0, 5, 2, 2}));
  f.emplace("sex", TensorValue::of_strings({2, 1}, {"f", "x"}));
  f.emplace("ids", TensorValue::of<int64_t>({2, 1}, {6, 1}));
  f.emplace("wt", TensorValue::of<float>({2, 1}, {2, 3}));
  ModelInputs in = t.transform(dict(f));
  EXPECT_EQ(in.size(), specs.size());
  for (const TensorSpec &s : specs) {
    EXPECT_EQ(s.values_dim, t.values_inputs().count(s.key) == 1) << s.key;
    ASSERT_TRUE(in.count(s.key)) << s.key;
    EXPECT_EQ(in.at(s.key).dtype, s.dtype) << s.key;
    EXPECT_EQ(in.at(s.key).shape.size(), s.shape.size()) << s.key;
  }
  EXPECT_EQ(rowIds(in, "sex"), (RowIds{{0, 1}}));
  EXPECT_EQ(in.at("sex/row_lengths").values<int64_t>(),
            (std::vector<int64_t>{1, 0}));
  // Two elements of age x one sex value per row.
  EXPECT_EQ(in.at("age_bucketized_X_sex/row_lengths").values<int64_t>(),
            (std::vector<int64_t>{2, 2}));
}

TEST(FeatureColumnTest, TransformerArgumentErrors) {
  auto msg = [](auto fn) { return messageOf<std::invalid_argument>(fn); };
  EXPECT_NE(msg([] { Transformer(FeatureColumns{}); }), "");
  EXPECT_NE(msg([] { Transformer({nullptr}); }), "");
  auto a = categorical_column_with_vocabulary_list("a", {"x"});
  auto a2 = categorical_column_with_hash_bucket("a", 3);
  EXPECT_NE(msg([&] { Transformer({a, a2}); }).find("'a'"), std::string::npos);
  EXPECT_NE(msg([&] {
              Transformer({indicator_column(a), embedding_column(a2, 2)});
            }).find("a/ids"),
            std::string::npos);
  EXPECT_NE(msg([] {
              Transformer({numeric_column("n"),
                           bucketized_column(numeric_column("n", {2}), {1})});
            }).find("'n'"),
            std::string::npos);
  auto scaled = numeric_column("x", {1}, {}, DType::Float32,
                               [](const Tensor &t) { return t * 2.0; });
  EXPECT_NE(msg([&] {
              Transformer(
                  {crossed_column({bucketized_column(scaled, {1}), "k"}, 10)});
            }).find("normalizer_fn"),
            std::string::npos);
  // Directly, a bucketized column of a normalized source is fine (compiled).
  EXPECT_EQ(Transformer({bucketized_column(scaled, {1})}).input_specs().size(),
            1u);
}

namespace {
/// Columns of kinds the library does not know.
struct ForeignColumn final : DenseColumn {
  std::string name() const override { return "foreign"; }
  data::FeatureSpecs parse_example_spec() const override { return {}; }
  Dims variable_shape() const override { return {1}; }
};
struct ForeignCategorical final : CategoricalColumn {
  std::string name() const override { return "foreign_ids"; }
  data::FeatureSpecs parse_example_spec() const override { return {}; }
  int64_t num_buckets() const override { return 3; }
};
} // namespace

TEST(FeatureColumnTest, EveryFactoryChecksItsKey) {
  EXPECT_THROW(categorical_column_with_identity("", 3), std::invalid_argument);
  EXPECT_THROW(categorical_column_with_hash_bucket("", 3),
               std::invalid_argument);
  EXPECT_THROW(categorical_column_with_vocabulary_list("", {"a"}),
               std::invalid_argument);
  EXPECT_THROW(categorical_column_with_vocabulary_file("", "v.txt"),
               std::invalid_argument);
  EXPECT_THROW(
      categorical_column_with_vocabulary_list("v", {"a"}, DType::Float32),
      std::invalid_argument);
  auto v = categorical_column_with_vocabulary_list("v", {"a", "b"});
  EXPECT_THROW(shared_embedding_columns({v}, 2, "mean", {}, "", -1.0),
               std::invalid_argument);
  EXPECT_THROW(SharedEmbeddingColumn(nullptr, nullptr, "mean", {}),
               std::invalid_argument);
  EXPECT_THROW(make_parse_example_spec({v, nullptr}), std::invalid_argument);
  // A null CrossKey column is no key.
  EXPECT_THROW(
      crossed_column({"a", std::shared_ptr<const CategoricalColumn>()}, 3),
      std::invalid_argument);
}

TEST(FeatureColumnTest, ForeignColumnsAndOddFeatures) {
  EXPECT_NE(messageOf<std::invalid_argument>([] {
              Transformer({std::make_shared<const ForeignColumn>()});
            }).find("'foreign'"),
            std::string::npos);
  Transformer t(
      {indicator_column(std::make_shared<const ForeignCategorical>())});
  EXPECT_NE(messageOf<std::invalid_argument>([&] {
              t.transform(std::map<std::string, TensorValue>{});
            }).find("'foreign_ids'"),
            std::string::npos);
  auto h = categorical_column_with_hash_bucket("h", 10);
  std::map<std::string, data::Element> f;
  f.emplace("h", data::Element::dict({}));
  EXPECT_NE(messageOf<DataError>([&] {
              Transformer({h}).transform(dict(f));
            }).find("not a tensor"),
            std::string::npos);
  f.erase("h");
  f.emplace("h",
            data::SparseTensor::make({}, TensorValue::of_strings({0}, {}), {}));
  EXPECT_NE(messageOf<DataError>([&] {
              Transformer({h}).transform(dict(f));
            }).find("sparse scalar"),
            std::string::npos);
  // A weighted bucketized column of a normalized source needs host
  // bucketizing too.
  auto scaled = numeric_column("x", {1}, {}, DType::Float32,
                               [](const Tensor &x) { return x * 2.0; });
  EXPECT_THROW(Transformer({weighted_categorical_column(
                   bucketized_column(scaled, {1}), "w")}),
               std::invalid_argument);
  // Without a normalizer it works: bucket ids with their weights.
  auto plain = weighted_categorical_column(
      bucketized_column(numeric_column("x"), {1}), "w");
  std::map<std::string, TensorValue> g = {
      {"x", TensorValue::of<float>({2}, {0, 5})},
      {"w", TensorValue::of<float>({2}, {0.5, 2})}};
  ModelInputs in = Transformer({plain}).transform(g);
  EXPECT_EQ(rowIds(in, "x_bucketized_weighted_by_w"), (RowIds{{0, 0}, {1, 1}}));
}

TEST(FeatureColumnTest, ParseExampleThenTransform) {
  auto age = numeric_column("age", {1}, {30.0});
  auto sex = categorical_column_with_vocabulary_list("sex", {"m", "f"});
  auto tags = categorical_column_with_hash_bucket("tags", 100);
  FeatureColumns columns = {age, indicator_column(sex),
                            embedding_column(tags, 3)};
  data::ExampleParser parser(make_parse_example_spec(columns));
  std::string a = data::ExampleBuilder()
                      .add_float("age", {41})
                      .add_bytes("sex", {"f"})
                      .add_bytes("tags", {"x", "", "y"})
                      .serialize();
  std::string b = data::ExampleBuilder().add_bytes("sex", {"q"}).serialize();
  ModelInputs in = Transformer(columns).transform(parser.parse_example({a, b}));
  EXPECT_EQ(in.at("age").values<float>(), (std::vector<float>{41, 30}));
  EXPECT_EQ(rowIds(in, "sex"), (RowIds{{0, 1}}));
  // A parsed VarLenFeature is sparse: "" is a value (hashed).
  std::vector<int64_t> tagIds =
      data::string_to_hash_bucket_fast(
          TensorValue::of_strings({3}, {"x", "", "y"}), 100)
          .values<int64_t>();
  EXPECT_EQ(rowIds(in, "tags"),
            (RowIds{{0, tagIds[0]}, {0, tagIds[1]}, {0, tagIds[2]}}));
  EXPECT_EQ(in.at("tags/row_lengths").values<int64_t>(),
            (std::vector<int64_t>{3, 0}));
}
