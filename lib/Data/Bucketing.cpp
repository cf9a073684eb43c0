//===- Bucketing.cpp - bucket_by_sequence_length --------------------------===//
//
// tf.data.Dataset.bucket_by_sequence_length as TF 2.15 builds it: a
// group_by_window whose key is the element's bucket and whose window is
// that bucket's batch size, each window reduced by padded_batch (or batch).
// The iterator keeps one group of pending elements per bucket; an element
// that fills its group makes the next batch at once, and when the input
// ends the partial groups are batched in bucket order (TF's groups are a
// std::map by key, flushed from its first entry). The pending groups are
// the whole state: save() writes each as a tuple of elements.
//
// pad_to_bucket_boundary checks the bucket when its batch is made, as TF's
// assert_less runs in the reduce function: a group of the last bucket is a
// DataError when it would be batched, even when drop_remainder would then
// drop it. The group is gone after the error, so the iteration can go on
// (under ignore_errors, TF's iterator would retry it for ever).
//
//===----------------------------------------------------------------------===//

#include "lib/Data/Dataset.h"
#include "lib/Data/DatasetInternal.h"

#include <climits>
#include <map>
#include <stdexcept>

namespace estc {
namespace data {

using detail::DatasetImpl;
using detail::IteratorImpl;

namespace {

std::string listString(const std::vector<int64_t> &v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

class BucketDataset : public DatasetImpl {
public:
  BucketDataset(std::shared_ptr<const DatasetImpl> in, Dataset::LengthFn fn,
                std::vector<int64_t> boundaries,
                std::vector<int64_t> batchSizes, Dataset::Padding padding,
                bool padToBoundary, bool noPadding, bool dropRemainder)
      : input_(std::move(in)), lengthFn_(std::move(fn)),
        boundaries_(std::move(boundaries)), batchSizes_(std::move(batchSizes)),
        padding_(std::move(padding)), padToBoundary_(padToBoundary),
        noPadding_(noPadding), dropRemainder_(dropRemainder) {}

  std::string describe() const override {
    std::string s = input_->describe() + ".bucket_by_sequence_length(" +
                    listString(boundaries_) + "," + listString(batchSizes_);
    if (padToBoundary_)
      s += ",pad_to_bucket_boundary";
    if (noPadding_)
      s += ",no_padding";
    if (dropRemainder_)
      s += ",drop_remainder";
    if (padding_.padded_shapes)
      s += ",shapes=" +
           to_string(padding_.padded_shapes->map(
               [](const std::string &, const std::vector<int64_t> &shape) {
                 return ValueSpec{DType::Int64, shape, false};
               }));
    if (padding_.padding_values)
      s += ",values=" + to_string(spec_of(*padding_.padding_values));
    return s + ")";
  }

  /// The first bucket whose bounds hold `length` (TF's reduce_min over
  /// where(lower <= length < upper)).
  size_t bucketOf(int64_t length) const {
    for (size_t b = 0; b < batchSizes_.size(); ++b) {
      int64_t lower = b == 0 ? INT32_MIN : boundaries_[b - 1];
      int64_t upper = b == boundaries_.size() ? INT32_MAX : boundaries_[b];
      if (lower <= length && length < upper)
        return b;
    }
    throw DataError("bucket_by_sequence_length: element length " +
                    std::to_string(length) +
                    " is in no bucket (lengths must be at least -2^31 and "
                    "below 2^31 - 1)");
  }

  /// pad_to_bucket_boundary's check, before bucket b is batched (TF's
  /// assert_less in the reduce function).
  void checkBoundary(size_t b) const {
    if (padToBoundary_ && !noPadding_ && b + 1 == batchSizes_.size())
      throw DataError(
          "bucket_by_sequence_length: bucket " + std::to_string(b) +
          ", the last, has elements; with pad_to_bucket_boundary every "
          "element length must be below the last bucket boundary" +
          (boundaries_.empty()
               ? std::string(" (there is none)")
               : " (" + std::to_string(boundaries_.back()) + ")"));
  }

  /// Bucket b's batch of `group`.
  Element batch(size_t b, const std::vector<Element> &group) const {
    if (noPadding_)
      return stack_elements(group);
    if (!padToBoundary_)
      return detail::stack_padded(group, padding_);
    checkBoundary(b);
    int64_t fill = boundaries_[b] - 1;
    Dataset::Padding p;
    p.padding_values = padding_.padding_values;
    p.padded_shapes = padding_.padded_shapes->map(
        [fill](const std::string &, const std::vector<int64_t> &shape) {
          std::vector<int64_t> out = shape;
          for (int64_t &d : out)
            if (d == -1)
              d = fill;
          return out;
        });
    return detail::stack_padded(group, p);
  }

  std::unique_ptr<IteratorImpl>
  make_iterator(const std::string &prefix) const override {
    class It : public IteratorImpl {
    public:
      It(const std::string &p, const BucketDataset &d)
          : IteratorImpl(p), d_(d),
            in_(d.input_->make_iterator(p + "/bucket_by_sequence_length")) {}

      std::optional<Element> next() override {
        if (!inputEnded_) {
          while (std::optional<Element> e = in_->next()) {
            size_t b = d_.bucketOf(d_.lengthFn_(*e));
            std::vector<Element> &group = groups_[b];
            group.push_back(std::move(*e));
            if (static_cast<int64_t>(group.size()) == d_.batchSizes_[b])
              return flush(b);
          }
          inputEnded_ = true;
        }
        while (!groups_.empty()) {
          size_t b = groups_.begin()->first;
          bool partial = static_cast<int64_t>(groups_.begin()->second.size()) <
                         d_.batchSizes_[b];
          if (!(partial && d_.dropRemainder_))
            return flush(b);
          // Dropped, but TF's reduce function (and its check) runs first.
          d_.checkBoundary(b);
          groups_.erase(b);
        }
        return std::nullopt;
      }

      void save(IteratorState &s) override {
        for (size_t b = 0; b < d_.batchSizes_.size(); ++b) {
          auto it = groups_.find(b);
          s.put_element(key(("bucket_" + std::to_string(b)).c_str()),
                        Element::tuple(it == groups_.end()
                                           ? std::vector<Element>()
                                           : it->second));
        }
        in_->save(s);
      }

      void restore(const IteratorState &s) override {
        groups_.clear();
        for (size_t b = 0; b < d_.batchSizes_.size(); ++b) {
          std::string name = "bucket_" + std::to_string(b);
          std::vector<Element> group = s.get_tuple(key(name.c_str()));
          if (static_cast<int64_t>(group.size()) >= d_.batchSizes_[b])
            throw DataError("bucket_by_sequence_length: the saved " + name +
                            " holds " + std::to_string(group.size()) +
                            " elements, a batch is " +
                            std::to_string(d_.batchSizes_[b]));
          if (!group.empty())
            groups_[b] = std::move(group);
        }
        in_->restore(s);
      }

    private:
      /// Takes bucket b's group out and batches it.
      std::optional<Element> flush(size_t b) {
        std::vector<Element> group = std::move(groups_[b]);
        groups_.erase(b);
        return d_.batch(b, group);
      }

      const BucketDataset &d_;
      std::unique_ptr<IteratorImpl> in_;
      std::map<size_t, std::vector<Element>> groups_; // by bucket, non-empty
      bool inputEnded_ = false;
    };
    return std::make_unique<It>(prefix, *this);
  }

private:
  std::shared_ptr<const DatasetImpl> input_;
  Dataset::LengthFn lengthFn_;
  std::vector<int64_t> boundaries_, batchSizes_;
  Dataset::Padding padding_;
  bool padToBoundary_, noPadding_, dropRemainder_;
};

} // namespace

Dataset Dataset::bucket_by_sequence_length(
    LengthFn element_length_func, std::vector<int64_t> bucket_boundaries,
    std::vector<int64_t> bucket_batch_sizes, Padding padding,
    bool pad_to_bucket_boundary, bool no_padding, bool drop_remainder) const {
  const char *what = "Dataset::bucket_by_sequence_length: ";
  if (!element_length_func)
    throw std::invalid_argument(std::string(what) +
                                "element_length_func is empty");
  if (bucket_batch_sizes.size() != bucket_boundaries.size() + 1)
    throw std::invalid_argument(
        std::string(what) + "len(bucket_batch_sizes) must equal " +
        "len(bucket_boundaries) + 1, but bucket_batch_sizes has " +
        std::to_string(bucket_batch_sizes.size()) + " and bucket_boundaries " +
        std::to_string(bucket_boundaries.size()));
  for (size_t b = 0; b < bucket_batch_sizes.size(); ++b)
    if (bucket_batch_sizes[b] < 1)
      throw std::invalid_argument(std::string(what) + "bucket_batch_sizes[" +
                                  std::to_string(b) + "] is " +
                                  std::to_string(bucket_batch_sizes[b]) +
                                  "; a batch size must be at least 1");
  if (pad_to_bucket_boundary && !no_padding && !padding.padded_shapes)
    throw std::invalid_argument(
        std::string(what) +
        "pad_to_bucket_boundary needs padded_shapes, with -1 for the "
        "dimensions padded to the bucket boundary (TF's unknown dimensions; "
        "e.g. a parser's element_spec(false) shapes)");
  return from_impl(std::make_shared<BucketDataset>(
      impl_, std::move(element_length_func), std::move(bucket_boundaries),
      std::move(bucket_batch_sizes), std::move(padding), pad_to_bucket_boundary,
      no_padding, drop_remainder));
}

} // namespace data
} // namespace estc
