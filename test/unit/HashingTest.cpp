//===- HashingTest.cpp - TF's string hashing and hashed crosses ----------===//
//
// The expected values were computed by TF 2.15.1 (tensorflow-cpu from PyPI):
//   tf.strings.to_hash_bucket_fast(['a', 'hello', '', 'b'], 1000)
//   tf.sparse.cross_hashed([tf.constant([['a']]), tf.constant([['d']])], 1000)
//   tf.sparse.cross_hashed([tf.constant([[3]], tf.int64),
//                           tf.constant([[5]], tf.int64)], 1000)
//   tf.sparse.cross_hashed([tf.constant([['a', 'b']]),
//                           tf.constant([[7]], tf.int64)], num_buckets=0)
// test/e2e/tf_hashing_compat.py compares with TF itself on random inputs.
//
//===----------------------------------------------------------------------===//

#include "lib/Data/Hashing.h"

#include <gtest/gtest.h>

using namespace estc;
using namespace estc::data;

TEST(HashingTest, HashBucketsAsTf) {
  TensorValue s = TensorValue::of_strings({2, 2}, {"a", "hello", "", "b"});
  TensorValue ids = string_to_hash_bucket_fast(s, 1000);
  EXPECT_EQ(ids.shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(ids.values<int64_t>(), (std::vector<int64_t>{939, 296, 263, 822}));
  EXPECT_THROW(string_to_hash_bucket_fast(s, 0), std::invalid_argument);
  EXPECT_THROW(
      string_to_hash_bucket_fast(TensorValue::of<int64_t>({1}, {1}), 10),
      std::invalid_argument);
}

TEST(HashingTest, CrossesAsTf) {
  auto str = [](std::vector<std::string> v) {
    auto n = static_cast<int64_t>(v.size());
    return Value(TensorValue::of_strings({1, n}, std::move(v)));
  };
  auto i64 = [](std::vector<int64_t> v) {
    auto n = static_cast<int64_t>(v.size());
    return Value(TensorValue::of<int64_t>({1, n}, v));
  };
  EXPECT_EQ(sparse_cross_hashed({str({"a"}), str({"d"})}, 1000)
                .values.values<int64_t>(),
            (std::vector<int64_t>{182}));
  EXPECT_EQ(
      sparse_cross_hashed({i64({3}), i64({5})}, 1000).values.values<int64_t>(),
      (std::vector<int64_t>{412}));
  SparseTensor two = sparse_cross_hashed({str({"a", "b"}), i64({7})});
  EXPECT_EQ(two.values.values<int64_t>(),
            (std::vector<int64_t>{3509787333349122856, 443223928722139976}));
  EXPECT_EQ(two.index_values(), (std::vector<int64_t>{0, 0, 0, 1}));
  EXPECT_EQ(two.dense_shape, (std::vector<int64_t>{1, 2}));
}

TEST(HashingTest, CrossOrderEmptyRowsAndErrors) {
  // Row 0: {a, b} x {x, y}: a-x, a-y, b-x, b-y (the last input fastest);
  // row 1 has no value in the first input: no crosses.
  Value sp = SparseTensor::make(
      {0, 0, 0, 1}, TensorValue::of_strings({2}, {"a", "b"}), {2, 2});
  Value dense = TensorValue::of_strings({2, 2}, {"x", "y", "z", "w"});
  SparseTensor c = sparse_cross_hashed({sp, dense}, 0);
  ASSERT_EQ(c.nnz(), 4);
  EXPECT_EQ(c.dense_shape, (std::vector<int64_t>{2, 4}));
  auto h = [](const char *a, const char *b) {
    uint64_t v = fingerprint_cat64(
        fingerprint_cat64(kDefaultCrossHashKey, fingerprint64(a)),
        fingerprint64(b));
    return static_cast<int64_t>(v % uint64_t(INT64_MAX));
  };
  EXPECT_EQ(c.values.values<int64_t>(),
            (std::vector<int64_t>{h("a", "x"), h("a", "y"), h("b", "x"),
                                  h("b", "y")}));
  EXPECT_THROW(sparse_cross_hashed({}), std::invalid_argument);
  EXPECT_THROW(sparse_cross_hashed({sp}, -1), std::invalid_argument);
  Value oneRow = TensorValue::of_strings({1, 1}, {"q"});
  EXPECT_THROW(sparse_cross_hashed({sp, oneRow}), DataError);
  EXPECT_THROW(
      sparse_cross_hashed({Value(TensorValue::of<float>({1, 1}, {1}))}),
      std::invalid_argument);
}

//===----------------------------------------------------------------------===//
// Vocabularies. Expected ids from TF 2.15.1:
//   lookup_ops.index_table_from_tensor(['a','b','c'], num_oov_buckets=5)
//       .lookup(['a','c','zz','hello',''])                  -> [0 2 5 4 6]
//   lookup_ops.index_table_from_tensor([10,20,30], num_oov_buckets=7,
//       dtype=tf.int64).lookup([20,99,-5])                   -> [1 7 3]
//   lookup_ops.index_table_from_tensor(['a','b'], default_value=-3)
//       .lookup(['b','q'])                                   -> [1 -3]
//===----------------------------------------------------------------------===//

#include "lib/Data/Vocabulary.h"

#include <cstdio>
#include <fstream>

TEST(VocabularyTest, IdsAsTf) {
  VocabularyLookup s({"a", "b", "c"}, 5);
  EXPECT_EQ(
      s.lookup(TensorValue::of_strings({5}, {"a", "c", "zz", "hello", ""}))
          .values<int64_t>(),
      (std::vector<int64_t>{0, 2, 5, 4, 6}));
  EXPECT_EQ(s.num_ids(), 8);
  VocabularyLookup i = VocabularyLookup::of_ints({10, 20, 30}, 7);
  EXPECT_EQ(
      i.lookup(TensorValue::of<int64_t>({3}, {20, 99, -5})).values<int64_t>(),
      (std::vector<int64_t>{1, 7, 3}));
  VocabularyLookup d(std::vector<std::string>{"a", "b"}, 0, -3);
  EXPECT_EQ(
      d.lookup(TensorValue::of_strings({2}, {"b", "q"})).values<int64_t>(),
      (std::vector<int64_t>{1, -3}));
  EXPECT_THROW(VocabularyLookup(std::vector<std::string>{"a", "a"}),
               std::invalid_argument);
  EXPECT_THROW(VocabularyLookup(std::vector<std::string>{"a"}, 2, 5),
               std::invalid_argument);
  EXPECT_THROW(s.lookup(TensorValue::of<int64_t>({1}, {1})),
               std::invalid_argument);
  // One key at a time, as lookup() gives them.
  EXPECT_EQ(s.id_of(std::string("c")), 2);
  EXPECT_EQ(s.id_of(std::string("hello")), 4);
  EXPECT_EQ(i.id_of(int64_t{99}), 7);
  EXPECT_EQ(d.id_of(std::string("q")), -3);
}

TEST(VocabularyTest, FromFile) {
  std::string path = ::testing::TempDir() + "/estc-vocab.txt";
  std::ofstream(path) << "a\r\nb\nc\nd\n";
  VocabularyLookup v = VocabularyLookup::from_file(path, 3, 5);
  EXPECT_EQ(v.lookup(TensorValue::of_strings({3}, {"a", "c", "zz"}))
                .values<int64_t>(),
            (std::vector<int64_t>{0, 2, 5}));
  EXPECT_EQ(v.lookup(TensorValue::of_strings({1}, {"d"})).values<int64_t>()[0],
            3 + static_cast<int64_t>(fingerprint64("d") % 5));
  try {
    VocabularyLookup::from_file(path, 9);
    FAIL();
  } catch (const DataError &e) {
    EXPECT_EQ(std::string(e.what()),
              path + ": vocabulary_size 9 but the file has 4 lines");
  }
  std::ofstream(path) << "x\ny\nx\n";
  try {
    VocabularyLookup::from_file(path);
    FAIL();
  } catch (const DataError &e) {
    EXPECT_EQ(std::string(e.what()), path + ":3: duplicate vocabulary key 'x'");
  }
  std::ofstream(path) << "1\n2\nthree\n";
  EXPECT_THROW(VocabularyLookup::from_file(path, -1, 0, -1, true), DataError);
  std::remove(path.c_str());
}

TEST(HashingTest, CrossOfRowHashesAsSparseCrossHashed) {
  // The sparse input's indices are not in row-major order: its row 1
  // value comes first; crosses take each row's values in tensor order.
  Value sp =
      SparseTensor::make({1, 0, 0, 0, 0, 1},
                         TensorValue::of_strings({3}, {"c", "a", "b"}), {3, 2});
  Value dense = TensorValue::of<int64_t>({3, 1}, {5, 6, 7});
  SparseTensor want = sparse_cross_hashed({sp, dense}, 50);
  std::vector<CrossInput> inputs(2);
  inputs[0].offsets = {0, 2, 3, 3};
  inputs[0].hashes = {fingerprint64("a"), fingerprint64("b"),
                      fingerprint64("c")};
  inputs[1].offsets = {0, 1, 2, 3};
  inputs[1].hashes = {5, 6, 7};
  std::vector<int64_t> rows, cols, ids;
  EXPECT_EQ(cross_hashed(inputs, 3, 50, kDefaultCrossHashKey, rows, cols, ids),
            want.dense_shape[1]);
  EXPECT_EQ(ids, want.values.values<int64_t>());
  std::vector<int64_t> indices;
  for (size_t i = 0; i < rows.size(); ++i) {
    indices.push_back(rows[i]);
    indices.push_back(cols[i]);
  }
  EXPECT_EQ(indices, want.index_values());
  EXPECT_EQ(rows, (std::vector<int64_t>{0, 0, 1}));
  // An input with another number of rows.
  inputs[1].offsets = {0, 1, 2};
  try {
    cross_hashed(inputs, 3, 50, kDefaultCrossHashKey, rows, cols, ids);
    FAIL() << "no error";
  } catch (const std::invalid_argument &e) {
    EXPECT_STREQ(e.what(), "cross_hashed: input 1 has 2 rows, not 3");
  }
}
