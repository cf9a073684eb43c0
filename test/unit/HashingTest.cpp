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
  EXPECT_EQ(sparse_cross_hashed({i64({3}), i64({5})}, 1000)
                .values.values<int64_t>(),
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
  Value sp = SparseTensor::make({0, 0, 0, 1},
                                TensorValue::of_strings({2}, {"a", "b"}),
                                {2, 2});
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
  EXPECT_THROW(sparse_cross_hashed({Value(TensorValue::of<float>({1, 1}, {1}))}),
               std::invalid_argument);
}
