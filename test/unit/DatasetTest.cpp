//===- DatasetTest.cpp - lib/Data's sources, transformations, state -----===//

#include "lib/Data/Dataset.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>
#include <thread>

using namespace estc;
using namespace estc::data;

namespace {

int64_t scalar(const Element &e) { return tensor(e).values<int64_t>().at(0); }

std::vector<int64_t> ints(const Dataset &ds) {
  std::vector<int64_t> out;
  for (const Element &e : ds)
    out.push_back(scalar(e));
  return out;
}

std::vector<int64_t> iota(int64_t a, int64_t b) {
  std::vector<int64_t> v(static_cast<size_t>(b - a));
  std::iota(v.begin(), v.end(), a);
  return v;
}

Element i64(std::vector<int64_t> shape, std::vector<int64_t> v) {
  return Element(TensorValue::of<int64_t>(std::move(shape), v));
}

/// Every element's encoding, so whole streams compare exactly.
std::vector<std::string> encoded(Iterator &it, size_t max = SIZE_MAX) {
  std::vector<std::string> out;
  while (out.size() < max) {
    std::optional<Element> e = it.next();
    if (!e)
      break;
    std::string b;
    encode_element(*e, b);
    out.push_back(std::move(b));
  }
  return out;
}

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    path = std::filesystem::temp_directory_path() /
           ("estc-dataset-" + std::to_string(::getpid()) + "-" +
            std::to_string(counter()++));
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string file(const std::string &name) const { return path / name; }
  static int &counter() {
    static int c = 0;
    return c;
  }
};

} // namespace

TEST(ElementTest, StructureAndEncodingRoundTrip) {
  SparseTensor sp = SparseTensor::make(
      {0, 1, 2, 0}, TensorValue::of_strings({2}, {"a", "bc"}), {3, 2});
  Element e = Element::tuple(
      {Element::dict({{"x", Element(TensorValue::of<float>({2}, {1, 2}))},
                      {"s", Element(sp)}}),
       i64({}, {7})});
  EXPECT_EQ(to_string(spec_of(e)), "({s: sparse STRING[3,2], x: F32[2]}, "
                                   "I64[])");
  std::string bytes;
  encode_element(e, bytes);
  size_t pos = 0;
  Element back = decode_element(bytes, pos, "test");
  EXPECT_EQ(pos, bytes.size());
  std::string again;
  encode_element(back, again);
  EXPECT_EQ(bytes, again);
  EXPECT_EQ(sparse(back[0]["s"]).values.strings[1], "bc");
  // Every truncation is an error, never a crash.
  for (size_t n = 0; n < bytes.size(); ++n) {
    size_t p = 0;
    EXPECT_THROW(decode_element(std::string_view(bytes).substr(0, n), p, "t"),
                 DataError)
        << n;
  }
  EXPECT_THROW(e[0]["nope"], std::invalid_argument);
}

TEST(ElementTest, SparseValidateAndDense) {
  SparseTensor sp = SparseTensor::make(
      {0, 1, 1, 0}, TensorValue::of<float>({2}, {5, 6}), {2, 2});
  TensorValue d = sp.to_dense();
  EXPECT_EQ(d.values<float>(), (std::vector<float>{0, 5, 6, 0}));
  SparseTensor bad =
      SparseTensor::make({0, 2}, TensorValue::of<float>({1}, {1}), {2, 2});
  try {
    bad.validate("feature 'ids'");
    FAIL();
  } catch (const DataError &e) {
    EXPECT_STREQ(e.what(), "feature 'ids': sparse index 2 of value 0 is "
                           "outside dimension 1 of size 2");
  }
}

TEST(DatasetTest, Range) {
  EXPECT_EQ(ints(Dataset::range(5)), iota(0, 5));
  EXPECT_EQ(ints(Dataset::range(2, 11, 3)), (std::vector<int64_t>{2, 5, 8}));
  EXPECT_EQ(ints(Dataset::range(5, 0, -2)), (std::vector<int64_t>{5, 3, 1}));
  EXPECT_EQ(Dataset::range(5, 0, -2).cardinality(), 3);
  EXPECT_TRUE(ints(Dataset::range(0)).empty());
  EXPECT_THROW(Dataset::range(0, 5, 0), std::invalid_argument);
}

TEST(DatasetTest, FromTensorSlicesDictTupleSparse) {
  Element e = Element::tuple(
      {Element::dict(
           {{"a", Element(TensorValue::of<float>({3, 2}, {1, 2, 3, 4, 5, 6}))},
            {"s", Element(SparseTensor::make(
                      {0, 0, 2, 1}, TensorValue::of<int64_t>({2}, {7, 8}),
                      {3, 4}))}}),
       Element(TensorValue::of_strings({3}, {"x", "y", "z"}))});
  std::vector<Element> got;
  for (const Element &x : Dataset::from_tensor_slices(e))
    got.push_back(x);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(tensor(got[1][0]["a"]).values<float>(), (std::vector<float>{3, 4}));
  EXPECT_EQ(tensor(got[2][1]).strings, (std::vector<std::string>{"z"}));
  EXPECT_EQ(sparse(got[0][0]["s"]).nnz(), 1);
  EXPECT_EQ(sparse(got[1][0]["s"]).nnz(), 0);
  EXPECT_EQ(sparse(got[2][0]["s"]).index_values(), (std::vector<int64_t>{1}));
  EXPECT_EQ(sparse(got[2][0]["s"]).dense_shape, (std::vector<int64_t>{4}));
  // Batching the slices gives the tensors back.
  Element again = stack_elements(got);
  std::string a, b;
  encode_element(e, a);
  encode_element(again, b);
  EXPECT_EQ(a, b);

  EXPECT_THROW(Dataset::from_tensor_slices(i64({}, {1})),
               std::invalid_argument);
  EXPECT_THROW(Dataset::from_tensor_slices(
                   Element::tuple({i64({2}, {1, 2}), i64({3}, {1, 2, 3})})),
               std::invalid_argument);
}

TEST(DatasetTest, GeneratorIsNotResumable) {
  auto ds = Dataset::from_generator(
      [] {
        auto n = std::make_shared<int64_t>(0);
        return [n]() -> std::optional<Element> {
          if (*n >= 3)
            return std::nullopt;
          return i64({}, {(*n)++});
        };
      },
      "counter");
  EXPECT_EQ(ints(ds), iota(0, 3));
  EXPECT_EQ(ints(ds), iota(0, 3)); // a fresh generator per iteration
  Iterator it = ds.make_iterator();
  EXPECT_THROW(it.save(), NotResumableError);
}

TEST(DatasetTest, ListFiles) {
  TempDir dir;
  for (const char *n : {"b.tfrecord", "a.tfrecord", "c.csv", "d.tfrecord"})
    std::ofstream(dir.file(n)) << "x";
  auto names = [](const Dataset &ds) {
    std::vector<std::string> out;
    for (const Element &e : ds)
      out.push_back(std::filesystem::path(tensor(e).strings.at(0)).filename());
    return out;
  };
  EXPECT_EQ(
      names(Dataset::list_files({dir.file("*.tfrecord")}, false)),
      (std::vector<std::string>{"a.tfrecord", "b.tfrecord", "d.tfrecord"}));
  auto s1 = names(Dataset::list_files({dir.file("*")}, true, 7));
  auto s2 = names(Dataset::list_files({dir.file("*")}, true, 7));
  EXPECT_EQ(s1, s2);
  std::vector<std::string> sorted = s1;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, (std::vector<std::string>{"a.tfrecord", "b.tfrecord",
                                              "c.csv", "d.tfrecord"}));
  try {
    Dataset::list_files({dir.file("*.parquet")});
    FAIL();
  } catch (const DataError &e) {
    EXPECT_NE(std::string(e.what()).find("no files match"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("*.parquet"), std::string::npos);
  }
}

TEST(DatasetTest, MapFilterTakeSkipShardEnumerate) {
  auto sq = [](Element e) { return i64({}, {scalar(e) * scalar(e)}); };
  EXPECT_EQ(ints(Dataset::range(5).map(sq)),
            (std::vector<int64_t>{0, 1, 4, 9, 16}));
  EXPECT_EQ(ints(Dataset::range(10).filter(
                [](const Element &e) { return scalar(e) % 3 == 0; })),
            (std::vector<int64_t>{0, 3, 6, 9}));
  EXPECT_EQ(ints(Dataset::range(10).skip(3).take(4)), iota(3, 7));
  EXPECT_EQ(ints(Dataset::range(10).take(-1)), iota(0, 10));
  EXPECT_EQ(ints(Dataset::range(10).skip(20)), std::vector<int64_t>{});
  EXPECT_EQ(ints(Dataset::range(10).shard(3, 1)),
            (std::vector<int64_t>{1, 4, 7}));
  EXPECT_EQ(Dataset::range(10).shard(3, 1).cardinality(), 3);
  EXPECT_EQ(Dataset::range(10).shard(3, 0).cardinality(), 4);
  EXPECT_THROW(Dataset::range(10).shard(3, 3), std::invalid_argument);
  std::vector<int64_t> idx;
  for (const Element &e : Dataset::range(3, 6).enumerate(10)) {
    idx.push_back(scalar(e[0]));
    idx.push_back(scalar(e[1]));
  }
  EXPECT_EQ(idx, (std::vector<int64_t>{10, 3, 11, 4, 12, 5}));
}

TEST(DatasetTest, ParallelMapKeepsOrderAndRaisesInPlace) {
  auto slow = [](Element e) {
    int64_t v = scalar(e);
    // Later elements finish first: order must still be the input's.
    std::this_thread::sleep_for(std::chrono::microseconds((50 - v % 50) * 20));
    return i64({}, {v * 2});
  };
  std::vector<int64_t> want;
  for (int64_t i = 0; i < 200; ++i)
    want.push_back(2 * i);
  EXPECT_EQ(ints(Dataset::range(200).map(slow, 4)), want);
  EXPECT_EQ(ints(Dataset::range(200).map(slow, AUTOTUNE)), want);
  std::vector<int64_t> any = ints(Dataset::range(200).map(slow, 4, false));
  std::sort(any.begin(), any.end());
  EXPECT_EQ(any, want);

  auto failOn7 = [](Element e) {
    if (scalar(e) == 7)
      throw DataError("record 7: bad");
    return e;
  };
  Iterator it = Dataset::range(10).map(failOn7, 3).make_iterator();
  for (int64_t i = 0; i < 7; ++i)
    EXPECT_EQ(scalar(*it.next()), i);
  EXPECT_THROW(it.next(), DataError);
  EXPECT_EQ(scalar(*it.next()), 8);
  // ignore_errors drops it and goes on.
  EXPECT_EQ(ints(Dataset::range(10).map(failOn7, 3).ignore_errors(0)),
            (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 8, 9}));
  EXPECT_EQ(ints(Dataset::range(10).map(failOn7).ignore_errors(0)),
            (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 8, 9}));
}

TEST(DatasetTest, ShuffleSemantics) {
  // A buffer of one keeps the order; a buffer of the whole data permutes.
  EXPECT_EQ(ints(Dataset::range(20).shuffle(1, 3)), iota(0, 20));
  std::vector<int64_t> a = ints(Dataset::range(100).shuffle(1000, 42));
  std::vector<int64_t> b = ints(Dataset::range(100).shuffle(1000, 42));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, iota(0, 100));
  std::vector<int64_t> s = a;
  std::sort(s.begin(), s.end());
  EXPECT_EQ(s, iota(0, 100));
  EXPECT_NE(ints(Dataset::range(100).shuffle(1000, 43)), a);
  // A buffer of k: element i comes out no earlier than position i - k + 1.
  std::vector<int64_t> w = ints(Dataset::range(200).shuffle(10, 5));
  for (size_t pos = 0; pos < w.size(); ++pos)
    EXPECT_LE(w[pos], static_cast<int64_t>(pos) + 9);
  // Each epoch its own order; without reshuffling, the same order.
  std::vector<int64_t> two = ints(Dataset::range(50).shuffle(50, 1).repeat(2));
  EXPECT_NE(std::vector<int64_t>(two.begin(), two.begin() + 50),
            std::vector<int64_t>(two.begin() + 50, two.end()));
  std::vector<int64_t> same =
      ints(Dataset::range(50).shuffle(50, 1, false).repeat(2));
  EXPECT_EQ(std::vector<int64_t>(same.begin(), same.begin() + 50),
            std::vector<int64_t>(same.begin() + 50, same.end()));
  // Same dataset object, iterated twice with reshuffling: two orders; a
  // new dataset with the same seed starts over.
  Dataset ds = Dataset::range(50).shuffle(50, 9);
  std::vector<int64_t> first = ints(ds), second = ints(ds);
  EXPECT_NE(first, second);
  EXPECT_EQ(ints(Dataset::range(50).shuffle(50, 9)), first);
  EXPECT_THROW(Dataset::range(3).shuffle(0), std::invalid_argument);
}

TEST(DatasetTest, RepeatEdgeCases) {
  EXPECT_EQ(ints(Dataset::range(3).repeat(2)),
            (std::vector<int64_t>{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(ints(Dataset::range(3).repeat(0)), std::vector<int64_t>{});
  // Repeating an empty dataset forever ends at once.
  EXPECT_EQ(ints(Dataset::range(0).repeat()), std::vector<int64_t>{});
  EXPECT_EQ(ints(Dataset::range(2).repeat().take(5)),
            (std::vector<int64_t>{0, 1, 0, 1, 0}));
  EXPECT_EQ(Dataset::range(2).repeat().cardinality(), INFINITE_CARDINALITY);
  EXPECT_EQ(Dataset::range(2).repeat(3).cardinality(), 6);
}

TEST(DatasetTest, BatchStacksAndKeepsThePartialBatch) {
  Element x =
      Element::dict({{"f", Element(TensorValue::of<float>(
                               {5, 2}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}))},
                     {"y", i64({5}, {0, 1, 2, 3, 4})}});
  std::vector<Element> batches;
  for (const Element &b : Dataset::from_tensor_slices(x).batch(2))
    batches.push_back(b);
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(tensor(batches[0]["f"]).shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(tensor(batches[2]["f"]).shape, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(tensor(batches[2]["y"]).values<int64_t>(),
            (std::vector<int64_t>{4}));
  EXPECT_EQ(Dataset::from_tensor_slices(x).batch(2, true).cardinality(), 2);
  int n = 0;
  for (const Element &b : Dataset::from_tensor_slices(x).batch(2, true)) {
    EXPECT_EQ(tensor(b["y"]).shape[0], 2);
    ++n;
  }
  EXPECT_EQ(n, 2);
  // Different shapes: batch refuses, naming the leaf.
  auto ragged = Dataset::range(1, 4).map([](Element e) {
    return Element(TensorValue::of<float>({scalar(e)},
                                          std::vector<float>(scalar(e), 1.f)));
  });
  try {
    Iterator it = ragged.batch(3).make_iterator();
    it.next();
    FAIL();
  } catch (const DataError &e) {
    EXPECT_NE(std::string(e.what()).find("padded_batch"), std::string::npos)
        << e.what();
  }
}

TEST(DatasetTest, BatchConcatenatesSparse) {
  auto ds = Dataset::range(1, 4).map([](Element e) {
    int64_t n = scalar(e);
    std::vector<int64_t> idx;
    for (int64_t i = 0; i < n; ++i)
      idx.push_back(i);
    return Element(SparseTensor::make(
        idx, TensorValue::of<int64_t>({n}, std::vector<int64_t>(n, n)), {n}));
  });
  Iterator it = ds.batch(3).make_iterator();
  Element b = *it.next();
  const SparseTensor &s = sparse(b);
  EXPECT_EQ(s.dense_shape, (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(s.index_values(),
            (std::vector<int64_t>{0, 0, 1, 0, 1, 1, 2, 0, 2, 1, 2, 2}));
  EXPECT_EQ(s.values.values<int64_t>(),
            (std::vector<int64_t>{1, 2, 2, 3, 3, 3}));
  // unbatch splits it back.
  std::vector<int64_t> nnz;
  for (const Element &r : ds.batch(3).unbatch())
    nnz.push_back(sparse(r).nnz());
  EXPECT_EQ(nnz, (std::vector<int64_t>{1, 2, 3}));
}

TEST(DatasetTest, PaddedBatch) {
  auto ds = Dataset::range(1, 4).map([](Element e) {
    int64_t n = scalar(e);
    return Element::tuple(
        {Element(TensorValue::of<int64_t>({n}, std::vector<int64_t>(n, n))),
         Element(TensorValue::of_strings({}, {"s"}))});
  });
  Iterator it = ds.padded_batch(3).make_iterator();
  Element b = *it.next();
  EXPECT_EQ(tensor(b[0]).shape, (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(tensor(b[0]).values<int64_t>(),
            (std::vector<int64_t>{1, 0, 0, 2, 2, 0, 3, 3, 3}));
  Dataset::Padding p;
  p.padded_shapes = Nest<std::vector<int64_t>>::tuple(
      {std::vector<int64_t>{4}, std::vector<int64_t>{}});
  p.padding_values = Element::tuple(
      {i64({}, {-1}), Element(TensorValue::of_strings({}, {"<pad>"}))});
  Iterator it2 = ds.padded_batch(2, p).make_iterator();
  Element b2 = *it2.next();
  EXPECT_EQ(tensor(b2[0]).values<int64_t>(),
            (std::vector<int64_t>{1, -1, -1, -1, 2, 2, -1, -1}));
  Element last = *it2.next();
  EXPECT_EQ(tensor(last[0]).shape, (std::vector<int64_t>{1, 4}));
  EXPECT_FALSE(it2.next());
  p.padded_shapes = Nest<std::vector<int64_t>>::tuple(
      {std::vector<int64_t>{2}, std::vector<int64_t>{}});
  Iterator it3 = ds.padded_batch(3, p).make_iterator();
  EXPECT_THROW(it3.next(), DataError);
}

TEST(DatasetTest, ZipConcatenate) {
  std::vector<int64_t> z;
  for (const Element &e :
       Dataset::zip({Dataset::range(3), Dataset::range(10, 20)})) {
    z.push_back(scalar(e[0]));
    z.push_back(scalar(e[1]));
  }
  EXPECT_EQ(z, (std::vector<int64_t>{0, 10, 1, 11, 2, 12}));
  EXPECT_EQ(
      Dataset::zip({Dataset::range(3), Dataset::range(10, 20)}).cardinality(),
      3);
  EXPECT_EQ(ints(Dataset::range(2).concatenate(Dataset::range(5, 7))),
            (std::vector<int64_t>{0, 1, 5, 6}));
}

TEST(DatasetTest, InterleaveOfUnequalInputs) {
  // Input n opens a dataset of n elements n*10, n*10+1, ...
  auto fn = [](const Element &e) {
    int64_t n = scalar(e);
    return Dataset::range(n * 10, n * 10 + n);
  };
  // TF 2.15 gives these (an exhausted slot is refilled on its next turn):
  // cycle 2, block 1 over inputs 1, 2, 3.
  std::vector<int64_t> want{10, 20, 21, 30, 31, 32};
  EXPECT_EQ(ints(Dataset::range(1, 4).interleave(fn, 2, 1)), want);
  EXPECT_EQ(ints(Dataset::range(1, 4).interleave(fn, 2, 1, 2)), want);
  // Block 2: two from each in turn.
  EXPECT_EQ(ints(Dataset::range(2, 4).interleave(fn, 2, 2)),
            (std::vector<int64_t>{20, 21, 30, 31, 32}));
  EXPECT_EQ(ints(Dataset::range(1, 4).flat_map(fn)),
            (std::vector<int64_t>{10, 20, 21, 30, 31, 32}));
  // Empty inputs in the cycle are skipped.
  EXPECT_EQ(ints(Dataset::range(0, 3).interleave(fn, 3, 1, AUTOTUNE)),
            (std::vector<int64_t>{10, 20, 21}));
}

TEST(DatasetTest, PrefetchAndCache) {
  EXPECT_EQ(ints(Dataset::range(100).prefetch(3)), iota(0, 100));
  EXPECT_EQ(ints(Dataset::range(100).prefetch(AUTOTUNE).prefetch(1)),
            iota(0, 100));

  auto calls = std::make_shared<std::atomic<int>>(0);
  Dataset cached = Dataset::range(10)
                       .map([calls](Element e) {
                         ++*calls;
                         return e;
                       })
                       .cache();
  EXPECT_EQ(ints(cached.repeat(3)), [] {
    std::vector<int64_t> v;
    for (int r = 0; r < 3; ++r)
      for (int64_t i = 0; i < 10; ++i)
        v.push_back(i);
    return v;
  }());
  EXPECT_EQ(calls->load(), 10);
  // A partial first pass caches nothing.
  *calls = 0;
  Dataset partial = Dataset::range(10)
                        .map([calls](Element e) {
                          ++*calls;
                          return e;
                        })
                        .cache();
  EXPECT_EQ(ints(partial.take(3)), iota(0, 3));
  EXPECT_EQ(ints(partial), iota(0, 10));
  EXPECT_EQ(ints(partial), iota(0, 10));
  EXPECT_EQ(calls->load(), 13);

  // The file cache outlives the dataset; a corrupt one is refused.
  TempDir dir;
  std::string file = dir.file("cache.bin");
  *calls = 0;
  auto make = [&] {
    return Dataset::range(5)
        .map([calls](Element e) {
          ++*calls;
          return e;
        })
        .cache(file);
  };
  EXPECT_EQ(ints(make()), iota(0, 5));
  EXPECT_EQ(ints(make()), iota(0, 5));
  EXPECT_EQ(calls->load(), 5);
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(30);
    f.put('\x7f');
  }
  try {
    ints(make());
    FAIL();
  } catch (const DataError &e) {
    EXPECT_NE(std::string(e.what()).find(file), std::string::npos);
  }
}

TEST(DatasetTest, IteratorStateRejectsCorruptAndForeignStates) {
  Dataset ds = Dataset::range(10).shuffle(4, 1);
  Iterator it = ds.make_iterator();
  it.next();
  std::string bytes = it.save().serialize();
  EXPECT_NO_THROW(IteratorState::parse(bytes));
  for (size_t i = 0; i < bytes.size(); i += 7) {
    std::string bad = bytes;
    bad[i] ^= 0x20;
    EXPECT_THROW(IteratorState::parse(bad), DataError) << i;
  }
  EXPECT_THROW(IteratorState::parse(bytes.substr(0, bytes.size() - 1)),
               DataError);
  Iterator other = Dataset::range(10).shuffle(4, 2).make_iterator();
  try {
    other.restore(IteratorState::parse(bytes));
    FAIL();
  } catch (const DataError &e) {
    EXPECT_NE(std::string(e.what()).find("another pipeline"),
              std::string::npos);
  }
}

/// Saves after k elements, restores into a fresh iterator of a freshly built
/// pipeline, and checks the rest equals the uninterrupted stream, for every k.
void expectResumesEverywhere(const std::function<Dataset()> &build) {
  Iterator full = build().make_iterator();
  std::vector<std::string> all = encoded(full);
  ASSERT_GT(all.size(), 2u);
  for (size_t k = 0; k <= all.size(); ++k) {
    Iterator first = build().make_iterator();
    std::vector<std::string> head = encoded(first, k);
    ASSERT_EQ(head.size(), k);
    std::string state = first.save().serialize();
    // The state is a function of the position, not of the threads' timing.
    Iterator twin = build().make_iterator();
    encoded(twin, k);
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    ASSERT_EQ(twin.save().serialize(), state) << "k=" << k;
    // The saved iterator itself goes on unchanged.
    std::vector<std::string> tail1 = encoded(first);
    Iterator second = build().make_iterator();
    second.restore(IteratorState::parse(state));
    std::vector<std::string> tail2 = encoded(second);
    std::vector<std::string> want(all.begin() + static_cast<long>(k),
                                  all.end());
    ASSERT_EQ(tail1, want) << "k=" << k;
    ASSERT_EQ(tail2, want) << "k=" << k;
  }
}

TEST(DatasetResumeTest, SequentialPipeline) {
  expectResumesEverywhere([] {
    return Dataset::range(30)
        .shuffle(7, 11)
        .repeat(2)
        .map([](Element e) { return Element::dict({{"x", e}}); })
        .filter([](const Element &e) { return scalar(e["x"]) % 5 != 0; })
        .enumerate()
        .batch(4)
        .unbatch()
        .skip(2)
        .take(50);
  });
}

TEST(DatasetResumeTest, ThreadedPipeline) {
  expectResumesEverywhere([] {
    auto fn = [](const Element &e) {
      int64_t n = scalar(e);
      return Dataset::range(n * 100, n * 100 + n % 4 + 1).shuffle(3, n);
    };
    return Dataset::range(12)
        .interleave(fn, 3, 2, 2)
        .map([](Element e) { return i64({1}, {scalar(e) + 1}); }, 3)
        .prefetch(4)
        .shuffle(5, 3)
        .batch(3)
        .prefetch(2);
  });
}

TEST(DatasetResumeTest, CacheZipConcatenate) {
  expectResumesEverywhere([] {
    return Dataset::zip({Dataset::range(8).cache(), Dataset::range(100, 120)})
        .concatenate(Dataset::zip({Dataset::range(3), Dataset::range(3)}))
        .repeat(2);
  });
}

TEST(DatasetResumeTest, DeterministicWhateverTheParallelism) {
  auto build = [](int64_t threads) {
    auto fn = [](const Element &e) {
      return Dataset::range(scalar(e) * 10, scalar(e) * 10 + 7);
    };
    return Dataset::range(20)
        .shuffle(8, 5)
        .interleave(fn, 4, 3, threads)
        .map([](Element e) { return e; }, threads == 0 ? 0 : threads)
        .shuffle(16, 6)
        .batch(5);
  };
  Iterator a = build(0).make_iterator(), b = build(2).make_iterator(),
           c = build(AUTOTUNE).make_iterator();
  std::vector<std::string> ea = encoded(a);
  EXPECT_EQ(ea, encoded(b));
  EXPECT_EQ(ea, encoded(c));
}

//===----------------------------------------------------------------------===//
// File sources
//===----------------------------------------------------------------------===//

#include "lib/Data/Example.h"
#include "lib/Data/InputStream.h"
#include "lib/Data/Readers.h"
#include "lib/Data/TFRecord.h"

namespace {

/// Writes files[i] with records "f<i>-r<j>" for j < counts[i].
std::vector<std::string> writeRecordFiles(const TempDir &dir,
                                          const std::vector<int> &counts,
                                          Compression c = Compression::None) {
  std::vector<std::string> files;
  for (size_t i = 0; i < counts.size(); ++i) {
    files.push_back(dir.file("part-" + std::to_string(i) + ".tfrecord"));
    TFRecordWriter w(files.back(), c);
    for (int j = 0; j < counts[i]; ++j)
      w.write("f" + std::to_string(i) + "-r" + std::to_string(j));
    w.close();
  }
  return files;
}

std::vector<std::string> strings(const Dataset &ds) {
  std::vector<std::string> out;
  for (const Element &e : ds)
    out.push_back(tensor(e).strings.at(0));
  return out;
}

} // namespace

TEST(FileDatasetTest, TFRecordFilesInTurnOrInterleaved) {
  TempDir dir;
  std::vector<std::string> files = writeRecordFiles(dir, {2, 0, 3});
  EXPECT_EQ(
      strings(TFRecordDataset(files)),
      (std::vector<std::string>{"f0-r0", "f0-r1", "f2-r0", "f2-r1", "f2-r2"}));
  // Two files at a time, one record from each in turn (TF's order).
  EXPECT_EQ(
      strings(TFRecordDataset(files, "", kDefaultReadBuffer, 2)),
      (std::vector<std::string>{"f0-r0", "f0-r1", "f2-r0", "f2-r1", "f2-r2"}));
  TempDir gzDir;
  std::vector<std::string> gz =
      writeRecordFiles(gzDir, {2, 2}, Compression::Gzip);
  EXPECT_EQ(strings(TFRecordDataset(gz, "GZIP", 16, 2)),
            (std::vector<std::string>{"f0-r0", "f1-r0", "f0-r1", "f1-r1"}));
  EXPECT_EQ(
      strings(TFRecordDataset(
          Dataset::list_files({gzDir.file("part-*.tfrecord")}, false), "GZIP")),
      strings(TFRecordDataset(gz, "GZIP")));
  EXPECT_THROW(TFRecordDataset(files, "LZ4"), DataError);
}

TEST(FileDatasetTest, CorruptRecordsAreNamedAndSkippable) {
  TempDir dir;
  std::vector<std::string> files = writeRecordFiles(dir, {4});
  // Flip a byte of record 1's data ("f0-r1" starts at 21 + 12).
  {
    std::fstream f(files[0], std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(21 + 12);
    f.put('X');
  }
  Iterator it = TFRecordDataset(files).make_iterator();
  EXPECT_EQ(tensor(*it.next()).strings[0], "f0-r0");
  try {
    it.next();
    FAIL();
  } catch (const DataError &e) {
    EXPECT_EQ(std::string(e.what()),
              files[0] + ": corrupt record at byte 21: data CRC mismatch");
  }
  EXPECT_EQ(tensor(*it.next()).strings[0], "f0-r2");
  EXPECT_EQ(strings(TFRecordDataset(files).ignore_errors(0)),
            (std::vector<std::string>{"f0-r0", "f0-r2", "f0-r3"}));
  // A truncated file: the error, then the file ends.
  std::filesystem::resize_file(files[0], 21 + 21 + 21 + 5);
  EXPECT_EQ(strings(TFRecordDataset(files).ignore_errors(0)),
            (std::vector<std::string>{"f0-r0", "f0-r2"}));
}

TEST(FileDatasetTest, ParsedShuffledPipelineResumes) {
  TempDir dir;
  std::vector<std::string> files;
  for (int f = 0; f < 3; ++f) {
    files.push_back(dir.file("ex-" + std::to_string(f) + ".tfrecord.gz"));
    TFRecordWriter w(files.back(), Compression::Gzip);
    for (int j = 0; j < 7 + f; ++j)
      w.write(ExampleBuilder()
                  .add_int64("id", {f * 100 + j})
                  .add_float("x", {static_cast<float>(j), 0.5f})
                  .add_bytes("tags", std::vector<std::string>(j % 3, "t"))
                  .serialize());
    w.close();
  }
  FeatureSpecs specs{{"id", FixedLenFeature{{}, DType::Int64, {}}},
                     {"x", FixedLenFeature{{2}, DType::Float32, {}}},
                     {"tags", VarLenFeature{DType::String}}};
  expectResumesEverywhere([&] {
    return TFRecordDataset(Dataset::list_files({dir.file("ex-*")}, true, 4),
                           "GZIP", 64, 2)
        .shuffle(6, 9)
        .batch(4)
        .map([specs](Element e) { return parse_example(tensor(e), specs); }, 2)
        .prefetch(2);
  });
}

TEST(FileDatasetTest, TextLinesAndCsvRecordsResume) {
  TempDir dir;
  std::string a = dir.file("a.csv"), b = dir.file("b.csv");
  std::ofstream(a) << "id,name,score\r\n1,\"x, y\",0.5\r\n2,,1.5\r\n3,z,\r\n";
  std::ofstream(b) << "id,name,score\n4,\"multi\nline\",2\n5,w,3\n";
  EXPECT_EQ(strings(TextLineDataset({a})),
            (std::vector<std::string>{"id,name,score", "1,\"x, y\",0.5",
                                      "2,,1.5", "3,z,"}));
  std::vector<ColumnDefault> defaults{ColumnDefault::required(DType::Int64),
                                      ColumnDefault::of("?"),
                                      ColumnDefault::of(-1.0f)};
  CsvOptions o;
  o.header = true;
  std::vector<std::string> names;
  std::vector<float> scores;
  for (const Element &e : CsvDataset({a, b}, defaults, o)) {
    names.push_back(tensor(e[1]).strings.at(0));
    scores.push_back(tensor(e[2]).values<float>().at(0));
  }
  EXPECT_EQ(names,
            (std::vector<std::string>{"x, y", "?", "z", "multi\nline", "w"}));
  EXPECT_EQ(scores, (std::vector<float>{0.5f, 1.5f, -1.f, 2.f, 3.f}));
  expectResumesEverywhere([&] {
    return CsvDataset(Dataset::list_files({dir.file("*.csv")}, true, 3),
                      defaults, o)
        .shuffle(3, 1)
        .batch(2);
  });
  expectResumesEverywhere(
      [&] { return TextLineDataset({a, b}, "", 7, 2).skip(1); });
}

TEST(FileDatasetTest, CsvErrorsNameFileLineAndColumn) {
  TempDir dir;
  std::string f = dir.file("bad.csv");
  std::ofstream(f) << "id,age\n1,20\n2,abc\n3,40\n";
  std::vector<ColumnDefault> defaults{ColumnDefault::required(DType::Int64),
                                      ColumnDefault::required(DType::Int64)};
  CsvOptions o;
  o.header = true;
  Iterator it = CsvDataset({f}, defaults, o).make_iterator();
  it.next();
  try {
    it.next();
    FAIL();
  } catch (const DataError &e) {
    std::string m = e.what();
    EXPECT_NE(m.find(f + ":3"), std::string::npos) << m;
    EXPECT_NE(m.find("abc"), std::string::npos) << m;
  }
  EXPECT_EQ(tensor((*it.next())[0]).values<int64_t>()[0], 3);
  int n = 0;
  for (const Element &e : CsvDataset({f}, defaults, o).ignore_errors(0)) {
    (void)e;
    ++n;
  }
  EXPECT_EQ(n, 2);
}

TEST(FileDatasetTest, MakeCsvDatasetInfersAndSplitsTheLabel) {
  TempDir dir;
  std::string f = dir.file("t.csv");
  std::ofstream(f) << "age,fare,sex,survived\n22,7.25,male,0\n38,71.2833,"
                      "female,1\n26,7.925,female,1\n";
  MakeCsvOptions o;
  o.label_name = "survived";
  o.num_epochs = 1;
  o.shuffle = false;
  std::vector<Element> batches;
  for (const Element &e : make_csv_dataset({dir.file("*.csv")}, 2, o))
    batches.push_back(e);
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(to_string(spec_of(batches[0])),
            "({age: I32[2], fare: F32[2], sex: STRING[2]}, I32[2])");
  EXPECT_EQ(tensor(batches[1][1]).values<int32_t>(), (std::vector<int32_t>{1}));
  o.label_name = "Survived";
  try {
    make_csv_dataset({f}, 2, o);
    FAIL();
  } catch (const DataError &e) {
    EXPECT_EQ(std::string(e.what()),
              "make_csv_dataset: label_name 'Survived' is not a column of the "
              "files (age, fare, sex, survived)");
  }
}

TEST(FileDatasetTest, TitanicThroughMakeCsvDataset) {
  const char *dir = std::getenv("ESTC_DATA_DIR");
  std::string base = dir ? dir : ESTC_DATASET_TEST_DATA_DIR;
  std::string train = base + "/titanic/train.csv";
  if (!std::filesystem::exists(train))
    GTEST_SKIP() << "no " << train;
  MakeCsvOptions o;
  o.label_name = "Survived";
  o.select_columns = {"Survived", "Pclass", "Sex", "Age", "Fare"};
  o.num_epochs = 1;
  o.shuffle_seed = 5;
  int64_t rows = 0;
  for (const Element &e : make_csv_dataset({train}, 64, o)) {
    EXPECT_EQ(tensor(e[0]["Sex"]).dtype, DType::String);
    EXPECT_EQ(tensor(e[0]["Age"]).dtype, DType::Float32);
    rows += tensor(e[1]).shape[0];
  }
  EXPECT_GT(rows, 500);
}

// make_csv_dataset reading one file at a time runs its rows through one
// fused stage (CsvBatchDataset); with ignore_errors it keeps the generic
// stages (CsvDataset, shuffle, repeat, batch). On clean files the two must
// give the same batches, draw for draw.
namespace {
std::string csvFixture(TempDir &dir) {
  const char *names[] = {"a.csv", "b.csv", "c.csv"};
  const char *cities[] = {"Paris", "Rome", "", "a-name-longer-than-sso",
                          "Oslo"};
  int row = 0;
  for (int f = 0; f < 3; ++f) {
    std::ofstream out(dir.file(names[f]));
    out << "id,score,city,flag,label\n";
    // c.csv has a header only.
    for (int i = 0; f < 2 && i < 23 + 9 * f; ++i, ++row)
      out << row << "," << (row % 7) * 0.5 << "," << cities[row % 5] << ","
          << (row % 3 == 0 ? "" : std::to_string(row % 2)) << "," << row % 2
          << "\n";
  }
  return dir.file("*.csv");
}

std::string renderElement(const Element &e) {
  std::string s;
  e.visit([&](const std::string &path, const Value &v) {
    const TensorValue &t = std::get<TensorValue>(v);
    s += path + "=";
    for (int64_t i = 0; i < t.num_elements(); ++i)
      s += (t.dtype == DType::String ? t.strings[static_cast<size_t>(i)]
                                     : std::to_string(t.element(i))) +
           ";";
  });
  return s;
}

std::vector<std::string> render(Iterator &it, size_t limit) {
  std::vector<std::string> out;
  while (out.size() < limit) {
    std::optional<Element> e = it.next();
    if (!e)
      break;
    out.push_back(renderElement(*e));
  }
  return out;
}

std::vector<std::string> render(const Dataset &d, size_t limit) {
  Iterator it(d);
  return render(it, limit);
}
} // namespace

TEST(FileDatasetTest, MakeCsvDatasetFusedStageMatchesTheGenericStages) {
  TempDir dir;
  std::string pattern = csvFixture(dir);
  for (bool shuffle : {false, true})
    for (std::optional<int64_t> epochs :
         {std::optional<int64_t>(1), std::optional<int64_t>(3),
          std::optional<int64_t>()})
      for (int64_t batch : {1, 7, 100})
        for (int64_t buffer : {1, 5, 1000}) {
          MakeCsvOptions o;
          o.column_defaults = {ColumnDefault::required(DType::Int64),
                               ColumnDefault::required(DType::Float32),
                               ColumnDefault::of("none"),
                               ColumnDefault::of(int32_t{-1}),
                               ColumnDefault::required(DType::Int64)};
          o.label_name = "label";
          o.select_columns = {"label", "city", "id", "flag", "score"};
          o.shuffle = shuffle;
          o.shuffle_buffer_size = buffer;
          o.shuffle_seed = 11;
          o.num_epochs = epochs;
          MakeCsvOptions generic = o;
          generic.ignore_errors = true;
          std::vector<std::string> fused =
              render(make_csv_dataset({pattern}, batch, o), 40);
          EXPECT_FALSE(fused.empty());
          EXPECT_EQ(fused,
                    render(make_csv_dataset({pattern}, batch, generic), 40))
              << "shuffle " << shuffle << ", epochs " << (epochs ? *epochs : -1)
              << ", batch " << batch << ", buffer " << buffer;
        }
}

TEST(FileDatasetTest, MakeCsvDatasetFusedStageResumes) {
  TempDir dir;
  std::string pattern = csvFixture(dir);
  MakeCsvOptions o;
  o.label_name = "label";
  o.shuffle_buffer_size = 10;
  o.shuffle_seed = 3;
  o.num_epochs = 4;
  Dataset d = make_csv_dataset({pattern}, 6, o);
  // 55 rows a pass, 4 passes, batches of 6.
  EXPECT_EQ(render(d, 1000).size(), 55u * 4 / 6 + 1);
  // Saved in the middle of passes and of files; each iterator draws its
  // own shuffles (reshuffle_each_iteration), so the resumed one must go on
  // as the one it was saved from.
  for (size_t k : {0, 1, 4, 9, 17, 30, 36}) {
    Iterator it(d);
    for (size_t i = 0; i < k; ++i)
      it.next();
    IteratorState state = IteratorState::parse(it.save().serialize());
    // The rest first: the dataset counts its iterations (a later pass of
    // `it` after `resumed` was made would draw the next iteration's).
    std::vector<std::string> expected = render(it, 1000);
    EXPECT_EQ(expected.size(), 37 - k);
    Iterator resumed(d);
    resumed.restore(state);
    EXPECT_EQ(render(resumed, 1000), expected) << "resumed after " << k;
  }
}

TEST(FileDatasetTest, MakeCsvDatasetFusedStageNamesABadRecord) {
  TempDir dir;
  std::string f = dir.file("bad.csv");
  std::ofstream(f) << "a,b\n1,2\n3,x\n5,6\n";
  MakeCsvOptions o;
  o.column_defaults = {ColumnDefault::required(DType::Int64),
                       ColumnDefault::required(DType::Int64)};
  o.shuffle = false;
  o.num_epochs = 1;
  Iterator it(make_csv_dataset({f}, 1, o));
  EXPECT_TRUE(it.next());
  try {
    it.next();
    FAIL() << "no error";
  } catch (const DataError &e) {
    EXPECT_NE(std::string(e.what()).find("bad.csv:3"), std::string::npos)
        << e.what();
  }
}

//===----------------------------------------------------------------------===//
// Regressions (review of the first version)
//===----------------------------------------------------------------------===//

TEST(DatasetRegressionTest, CacheFileIsNotOverwrittenAfterTheEnd) {
  TempDir dir;
  std::string file = dir.file("c.bin");
  // batch calls its input again after the end.
  int n = 0;
  for (const Element &e : Dataset::range(5).cache(file).batch(2)) {
    (void)e;
    ++n;
  }
  EXPECT_EQ(n, 3);
  EXPECT_EQ(ints(Dataset::range(99).take(0).cache(file)), iota(0, 5));
}

TEST(DatasetRegressionTest, MoveAssignEndsTheOldIteratorFirst) {
  Iterator it = Dataset::range(100)
                    .map([](Element e) { return e; }, 2)
                    .prefetch(4)
                    .make_iterator();
  it.next();
  it = Dataset::range(3).map([](Element e) { return e; }, 2).make_iterator();
  EXPECT_EQ(scalar(*it.next()), 0);
}

/// For pipelines whose stream differs per build (unseeded shuffles): the
/// rest after a restore into another build equals the saved iterator's own.
void expectResumesIntoAnotherBuild(const std::function<Dataset()> &build) {
  for (size_t k = 0; k < 12; ++k) {
    Iterator first = build().make_iterator();
    ASSERT_EQ(encoded(first, k).size(), k);
    std::string state = first.save().serialize();
    std::vector<std::string> rest = encoded(first);
    Iterator second = build().make_iterator();
    second.restore(IteratorState::parse(state));
    ASSERT_EQ(encoded(second), rest) << "k=" << k;
  }
}

TEST(DatasetRegressionTest, UnseededShufflesResumeInANewPipeline) {
  // No seed: each build draws its own; the state carries it.
  expectResumesIntoAnotherBuild(
      [] { return Dataset::range(20).shuffle(6).repeat(2).batch(3); });
  TempDir dir;
  for (int i = 0; i < 4; ++i)
    std::ofstream(dir.file("f" + std::to_string(i))) << "x";
  expectResumesIntoAnotherBuild(
      [&] { return Dataset::list_files({dir.file("f*")}).repeat(3); });
}

TEST(DatasetRegressionTest, ListFilesReshufflesEachEpoch) {
  TempDir dir;
  for (int i = 0; i < 8; ++i)
    std::ofstream(dir.file("f" + std::to_string(i))) << "x";
  std::vector<std::string> all;
  for (const Element &e :
       Dataset::list_files({dir.file("f*")}, true, 3).repeat(2))
    all.push_back(tensor(e).strings.at(0));
  ASSERT_EQ(all.size(), 16u);
  EXPECT_NE(std::vector<std::string>(all.begin(), all.begin() + 8),
            std::vector<std::string>(all.begin() + 8, all.end()));
}

TEST(DatasetRegressionTest, RestoredInMemoryCacheReplaysTheSameElements) {
  expectResumesEverywhere(
      [] { return Dataset::range(10).shuffle(10, 7).cache().repeat(3); });
}

TEST(DatasetRegressionTest, TakeCountsElementsNotErrors) {
  auto failOn1 = [](Element e) {
    if (scalar(e) == 1)
      throw DataError("bad 1");
    return e;
  };
  EXPECT_EQ(ints(Dataset::range(10).map(failOn1).take(3).ignore_errors(0)),
            (std::vector<int64_t>{0, 2, 3}));
}

TEST(DatasetRegressionTest, CardinalitiesAsTf) {
  Dataset unknown =
      Dataset::range(5).filter([](const Element &) { return true; });
  EXPECT_EQ(unknown.concatenate(Dataset::range(2).repeat()).cardinality(),
            INFINITE_CARDINALITY);
  EXPECT_EQ(unknown.concatenate(Dataset::range(2)).cardinality(),
            UNKNOWN_CARDINALITY);
  EXPECT_EQ(Dataset::zip({unknown, Dataset::range(2)}).cardinality(),
            UNKNOWN_CARDINALITY);
  EXPECT_EQ(Dataset::zip({Dataset::range(2).repeat(), Dataset::range(4)})
                .cardinality(),
            4);
}

TEST(DatasetRegressionTest, FiniteRepeatGoesOnOverAnEmptyPass) {
  // Pass 2 of 3 gives nothing (the filter keeps the odd passes' elements).
  auto pass = std::make_shared<int>(0);
  Dataset ds = Dataset::from_generator([pass] {
    int p = (*pass)++;
    auto n = std::make_shared<int>(0);
    return [p, n]() -> std::optional<Element> {
      if (p == 1 || *n >= 2)
        return std::nullopt;
      return i64({}, {p * 10 + (*n)++});
    };
  });
  EXPECT_EQ(ints(ds.repeat(3)), (std::vector<int64_t>{0, 1, 20, 21}));
}

TEST(DatasetRegressionTest, HugeBatchSizesAndBadShapesAreNotCrashes) {
  EXPECT_EQ(ints(Dataset::range(3).batch(int64_t(1) << 40).unbatch()),
            iota(0, 3));
  // A scalar element in unbatch is bad data, which ignore_errors drops.
  EXPECT_EQ(ints(Dataset::range(3).unbatch().ignore_errors(0)),
            std::vector<int64_t>{});
  Dataset::Padding p;
  auto sp = Dataset::range(2).map([](Element) {
    return Element(
        SparseTensor::make({0}, TensorValue::of<int64_t>({1}, {1}), {2}));
  });
  Iterator it = sp.padded_batch(2, p).make_iterator();
  EXPECT_THROW(it.next(), DataError);
  // A state whose element claims 2^40 rows of nothing is refused.
  std::string bytes = "L";
  bytes += static_cast<char>(DType::Int64);
  bytes += '\x02';
  for (char c : std::string("\x80\x80\x80\x80\x80\x80\x40", 6))
    bytes += c;
  bytes += '\x00';
  size_t pos = 0;
  EXPECT_THROW(decode_element(bytes, pos, "state"), DataError);
}

TEST(FileDatasetTest, ArgumentErrorsAreNamed) {
  TempDir dir;
  std::string f = dir.file("n.csv");
  std::ofstream(f) << "1,2\n";
  try {
    TFRecordDataset({f}, "", kDefaultReadBuffer, -5);
    FAIL();
  } catch (const std::invalid_argument &e) {
    EXPECT_STREQ(e.what(), "TFRecordDataset: num_parallel_reads must be 0, "
                           "positive or AUTOTUNE");
  }
  EXPECT_THROW(TextLineDataset({f}, "", 0), std::invalid_argument);
  MakeCsvOptions o;
  o.header = false;
  try {
    make_csv_dataset({f}, 2, o);
    FAIL();
  } catch (const std::invalid_argument &e) {
    EXPECT_STREQ(e.what(), "make_csv_dataset: column_names are required "
                           "when the files have no header");
  }
  EXPECT_THROW(make_csv_dataset({f}, 0, o), std::invalid_argument);
  o.column_names = {"a", "b"};
  o.num_parallel_reads = 0;
  EXPECT_THROW(make_csv_dataset({f}, 2, o), std::invalid_argument);
  o.num_parallel_reads = 1;
  o.select_columns = {"c"};
  try {
    make_csv_dataset({f}, 2, o);
    FAIL();
  } catch (const DataError &e) {
    EXPECT_STREQ(e.what(), "make_csv_dataset: select_columns entry 'c' is not "
                           "a column of the files (a, b)");
  }
}
