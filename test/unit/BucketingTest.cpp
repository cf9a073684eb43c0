//===- BucketingTest.cpp - Dataset::bucket_by_sequence_length ------------===//
//
// The batches TF 2.15's bucket_by_sequence_length gave for the same inputs
// (printed by TF, written out below): their order, their padding to the
// batch's longest element or to the bucket boundary, the remainders in
// bucket order, drop_remainder, the pad_to_bucket_boundary error after the
// batches before it, the argument errors, and a position saved and restored
// in the middle. test/e2e/tf_sequence_compat.py compares random length
// distributions with TF itself.
//
//===----------------------------------------------------------------------===//

#include "lib/Data/Dataset.h"

#include "FileTesting.h"

#include <gtest/gtest.h>

using namespace estc;
using namespace estc::data;

namespace {

using Ints = std::vector<int64_t>;

/// Element i: I64[n] of 10*i + k, for the lengths n.
Dataset sequences(const Ints &lengths) {
  auto shared = std::make_shared<Ints>(lengths);
  return Dataset::range(static_cast<int64_t>(lengths.size()))
      .map([shared](Element e) {
        int64_t i = tensor(e).values<int64_t>()[0];
        Ints v;
        for (int64_t k = 0; k < (*shared)[static_cast<size_t>(i)]; ++k)
          v.push_back(10 * i + k);
        return Element(
            TensorValue::of<int64_t>({static_cast<int64_t>(v.size())}, v));
      });
}

int64_t length(const Element &e) { return tensor(e).shape.at(0); }

/// Each batch as its rows.
std::vector<std::vector<Ints>> rows(Iterator &it) {
  std::vector<std::vector<Ints>> out;
  while (std::optional<Element> b = it.next()) {
    const TensorValue &t = tensor(*b);
    Ints v = t.values<int64_t>();
    std::vector<Ints> batch;
    for (int64_t r = 0; r < t.shape[0]; ++r)
      batch.emplace_back(v.begin() + r * t.shape[1],
                         v.begin() + (r + 1) * t.shape[1]);
    out.push_back(batch);
  }
  return out;
}

const Ints kLengths{1, 2, 7, 3, 4, 6, 8, 9, 2, 3, 12, 1};

} // namespace

// TF: ds.bucket_by_sequence_length(lambda x: tf.shape(x)[0], [5, 10],
// [2, 2, 2]) over kLengths.
TEST(BucketingTest, BatchesAsTF) {
  Iterator it = sequences(kLengths)
                    .bucket_by_sequence_length(length, {5, 10}, {2, 2, 2})
                    .make_iterator();
  std::vector<std::vector<Ints>> want{
      {{0, 0}, {10, 11}},
      {{30, 31, 32, 0}, {40, 41, 42, 43}},
      {{20, 21, 22, 23, 24, 25, 26}, {50, 51, 52, 53, 54, 55, 0}},
      {{60, 61, 62, 63, 64, 65, 66, 67, 0},
       {70, 71, 72, 73, 74, 75, 76, 77, 78}},
      {{80, 81, 0}, {90, 91, 92}},
      {{110}},
      {{100, 101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111}}};
  EXPECT_EQ(rows(it), want);
  // drop_remainder: the last two (partial) batches go.
  Iterator dropped = sequences(kLengths)
                         .bucket_by_sequence_length(length, {5, 10}, {2, 2, 2},
                                                    {}, false, false, true)
                         .make_iterator();
  want.resize(5);
  EXPECT_EQ(rows(dropped), want);
}

// The same with pad_to_bucket_boundary: padded to 4 and 9; the last
// bucket's batch is TF's assertion error, after the batches before it.
TEST(BucketingTest, PadToBucketBoundary) {
  Dataset::Padding padding;
  padding.padded_shapes = Nest<Ints>(Ints{-1});
  Iterator it =
      sequences(kLengths)
          .bucket_by_sequence_length(length, {5, 10}, {2, 2, 2}, padding, true)
          .make_iterator();
  std::vector<std::vector<Ints>> want{
      {{0, 0, 0, 0}, {10, 11, 0, 0}},
      {{30, 31, 32, 0}, {40, 41, 42, 43}},
      {{20, 21, 22, 23, 24, 25, 26, 0, 0}, {50, 51, 52, 53, 54, 55, 0, 0, 0}},
      {{60, 61, 62, 63, 64, 65, 66, 67, 0},
       {70, 71, 72, 73, 74, 75, 76, 77, 78}},
      {{80, 81, 0, 0}, {90, 91, 92, 0}},
      {{110, 0, 0, 0}}};
  std::vector<std::vector<Ints>> got;
  std::string error = estc::testing::messageOf<DataError>([&] {
    while (std::optional<Element> b = it.next()) {
      const TensorValue &t = tensor(*b);
      Ints v = t.values<int64_t>();
      std::vector<Ints> batch;
      for (int64_t r = 0; r < t.shape[0]; ++r)
        batch.emplace_back(v.begin() + r * t.shape[1],
                           v.begin() + (r + 1) * t.shape[1]);
      got.push_back(batch);
    }
  });
  EXPECT_EQ(got, want);
  EXPECT_EQ(error, "bucket_by_sequence_length: bucket 2, the last, has "
                   "elements; with pad_to_bucket_boundary every element "
                   "length must be below the last bucket boundary (10)");
  // Padding values apply, and no_padding batches without padding.
  padding.padding_values = Element(TensorValue::of<int64_t>({}, Ints{-1}));
  Iterator pv =
      sequences({1, 3})
          .bucket_by_sequence_length(length, {5}, {2, 2}, padding, true)
          .make_iterator();
  EXPECT_EQ(rows(pv), (std::vector<std::vector<Ints>>{
                          {{0, -1, -1, -1}, {10, 11, 12, -1}}}));
  Iterator same = sequences({3, 3, 3})
                      .bucket_by_sequence_length(length, {5}, {2, 2}, {}, true,
                                                 /*no_padding=*/true)
                      .make_iterator();
  EXPECT_EQ(rows(same).size(), 2u);
  Iterator differ =
      sequences({3, 2})
          .bucket_by_sequence_length(length, {5}, {2, 2}, {}, false, true)
          .make_iterator();
  EXPECT_THROW(differ.next(), DataError);
}

TEST(BucketingTest, ArgumentErrors) {
  Dataset ds = sequences({1});
  EXPECT_EQ(estc::testing::messageOf<std::invalid_argument>(
                [&] { ds.bucket_by_sequence_length(length, {5, 10}, {2, 2}); }),
            "Dataset::bucket_by_sequence_length: len(bucket_batch_sizes) must "
            "equal len(bucket_boundaries) + 1, but bucket_batch_sizes has 2 "
            "and bucket_boundaries 2");
  EXPECT_EQ(estc::testing::messageOf<std::invalid_argument>(
                [&] { ds.bucket_by_sequence_length(length, {5}, {2, 0}); }),
            "Dataset::bucket_by_sequence_length: bucket_batch_sizes[1] is 0; "
            "a batch size must be at least 1");
  EXPECT_NE(estc::testing::messageOf<std::invalid_argument>([&] {
              ds.bucket_by_sequence_length(length, {5}, {2, 2}, {}, true);
            }).find("pad_to_bucket_boundary needs padded_shapes"),
            std::string::npos);
  EXPECT_THROW(ds.bucket_by_sequence_length(nullptr, {5}, {2, 2}),
               std::invalid_argument);
  // A length in no bucket: 2^31 - 1 (TF: an out-of-range batch size).
  Iterator huge =
      ds.bucket_by_sequence_length(
            [](const Element &) { return int64_t{INT32_MAX}; }, {5}, {2, 2})
          .make_iterator();
  EXPECT_EQ(estc::testing::messageOf<DataError>([&] { huge.next(); }),
            "bucket_by_sequence_length: element length 2147483647 is in no "
            "bucket (lengths must be at least -2^31 and below 2^31 - 1)");
}

// Boundaries that do not increase are TF's too: the first bucket whose
// bounds hold the length ([MIN,6), [6,3), [3,9), [9,MAX)).
TEST(BucketingTest, NonIncreasingBoundaries) {
  Iterator it = sequences({7, 4, 10, 8, 1, 12})
                    .bucket_by_sequence_length(length, {6, 3, 9}, {2, 2, 2, 2})
                    .make_iterator();
  std::vector<size_t> sizes;
  while (std::optional<Element> b = it.next())
    sizes.push_back(static_cast<size_t>(tensor(*b).shape[1]));
  // 7 and 8 (bucket 2), 4 and 1 (bucket 0), 10 and 12 (bucket 3).
  EXPECT_EQ(sizes, (std::vector<size_t>{8, 4, 12}));
}

TEST(BucketingTest, SaveAndRestoreInTheMiddle) {
  Dataset ds =
      sequences(kLengths).bucket_by_sequence_length(length, {5, 10}, {2, 2, 2});
  Iterator whole = ds.make_iterator();
  std::vector<std::vector<Ints>> all = rows(whole);
  for (size_t at = 0; at <= all.size(); ++at) {
    Iterator first = ds.make_iterator();
    for (size_t i = 0; i < at; ++i)
      first.next();
    IteratorState state = IteratorState::parse(first.save().serialize());
    Iterator second = ds.make_iterator();
    second.restore(state);
    std::vector<std::vector<Ints>> rest(
        all.begin() + static_cast<ptrdiff_t>(at), all.end());
    EXPECT_EQ(rows(second), rest) << "restored after " << at << " batches";
  }
}

// padded_batch pads each batch to its own longest element.
TEST(BucketingTest, PaddedBatchPadsToEachBatchsLongest) {
  Iterator it = sequences({1, 3, 2, 2, 5}).padded_batch(2).make_iterator();
  std::vector<int64_t> widths;
  while (std::optional<Element> b = it.next())
    widths.push_back(tensor(*b).shape[1]);
  EXPECT_EQ(widths, (Ints{3, 2, 5}));
}
