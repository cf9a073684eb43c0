//===- Batching.cpp - batch, padded_batch, unbatch, tensor slices -------===//
//
// Stacking: dense leaves gain a first dimension (all elements the same
// shape, or padded to a common one); sparse leaves are concatenated, each
// element's indices prefixed with its row in the batch, the dense shape
// [batch, largest of each dimension]. Unstacking is the inverse: rows of the
// first dimension, sparse values split by their first index.
//
//===----------------------------------------------------------------------===//

#include "lib/Data/Dataset.h"
#include "lib/Data/DatasetInternal.h"

#include <algorithm>
#include <cstring>

namespace estc {
namespace data {

using detail::DatasetImpl;
using detail::IteratorImpl;

namespace {

std::string at(const std::string &path) {
  return path.empty() ? "" : " at '" + path + "'";
}

size_t elementBytes(DType d) { return d == DType::String ? 0 : dtype_size(d); }

/// Copies tensor `src` into row `row` of `dst` (shape [B, padded...]),
/// placing src's elements at the same multi-index; the rest of the row is
/// left as it is (the padding). `rowElems`: elements per row of dst.
void copyIntoRow(const TensorValue &src, TensorValue &dst, int64_t row,
                 int64_t rowElems) {
  const std::vector<int64_t> &inner = src.shape;
  size_t esize = elementBytes(src.dtype);
  int64_t n = src.num_elements();
  // The common case, src as large as a row: one contiguous block.
  if (n == rowElems) {
    if (src.dtype == DType::String)
      std::copy(src.strings.begin(), src.strings.end(),
                dst.strings.begin() + row * rowElems);
    else if (n)
      std::memcpy(&dst.data[static_cast<size_t>(row * rowElems) * esize],
                  src.data.data(), static_cast<size_t>(n) * esize);
    return;
  }
  const int64_t *outInner = dst.shape.data() + 1;
  std::vector<int64_t> idx(inner.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t flat = 0;
    for (size_t k = 0; k < inner.size(); ++k)
      flat = flat * outInner[k] + idx[k];
    flat += row * rowElems;
    if (src.dtype == DType::String)
      dst.strings[flat] = src.strings[i];
    else
      std::memcpy(&dst.data[static_cast<size_t>(flat) * esize],
                  &src.data[static_cast<size_t>(i) * esize], esize);
    for (size_t k = inner.size(); k-- > 0;) {
      if (++idx[k] < inner[k])
        break;
      idx[k] = 0;
    }
  }
}

/// A [B, shape...] tensor filled with `pad` (a scalar of the dtype), or
/// zeros / empty strings.
TensorValue filled(DType dtype, std::vector<int64_t> shape,
                   const TensorValue *pad) {
  TensorValue t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  size_t n = static_cast<size_t>(t.num_elements());
  if (dtype == DType::String) {
    t.strings.assign(n, pad ? pad->strings.at(0) : std::string());
    return t;
  }
  size_t esize = dtype_size(dtype);
  t.data.assign(n * esize, '\0');
  if (pad)
    for (size_t i = 0; i < n; ++i)
      std::memcpy(&t.data[i * esize], pad->data.data(), esize);
  return t;
}

Value stackLeaf(const std::vector<const Value *> &values,
                const std::string &path, const std::vector<int64_t> *padTo,
                const TensorValue *padValue, bool pad) {
  const Value &first = *values[0];
  int64_t batch = static_cast<int64_t>(values.size());
  if (const auto *t0 = std::get_if<TensorValue>(&first)) {
    std::vector<int64_t> shape = t0->shape;
    for (size_t i = 0; i < values.size(); ++i) {
      const auto *t = std::get_if<TensorValue>(values[i]);
      if (!t || t->dtype != t0->dtype || t->shape.size() != shape.size())
        throw DataError("batch: element " + std::to_string(i) + at(path) +
                        " is " + spec_of(*values[i]).str() +
                        " but element 0 is " + t0->spec().str());
      for (size_t k = 0; k < shape.size(); ++k) {
        if (t->shape[k] == shape[k])
          continue;
        if (!pad)
          throw DataError("batch: element " + std::to_string(i) + at(path) +
                          " has shape " + t->spec().str() +
                          " but element 0 has " + t0->spec().str() +
                          " (padded_batch pads them)");
        shape[k] = std::max(shape[k], t->shape[k]);
      }
    }
    if (padTo) {
      if (padTo->size() != shape.size())
        throw DataError("padded_batch: padded shape of rank " +
                        std::to_string(padTo->size()) + at(path) +
                        " for elements of rank " +
                        std::to_string(shape.size()));
      for (size_t k = 0; k < shape.size(); ++k) {
        if ((*padTo)[k] < 0)
          continue;
        if (shape[k] > (*padTo)[k])
          throw DataError(
              "padded_batch: an element" + at(path) + " has dimension " +
              std::to_string(k) + " of " + std::to_string(shape[k]) +
              ", larger than its padded size " + std::to_string((*padTo)[k]));
        shape[k] = (*padTo)[k];
      }
    }
    if (padValue &&
        (padValue->dtype != t0->dtype || padValue->num_elements() != 1))
      throw std::invalid_argument("padded_batch: padding value" + at(path) +
                                  " must be a scalar " + dtype_name(t0->dtype));
    int64_t rowElems = 1;
    for (int64_t d : shape)
      rowElems *= d;
    std::vector<int64_t> outShape{batch};
    outShape.insert(outShape.end(), shape.begin(), shape.end());
    TensorValue out = filled(t0->dtype, std::move(outShape), padValue);
    for (int64_t i = 0; i < batch; ++i)
      copyIntoRow(std::get<TensorValue>(*values[i]), out, i, rowElems);
    return out;
  }
  // Sparse: concatenate with the row index prepended.
  if (pad)
    throw DataError("padded_batch: the value" + at(path) +
                    " is sparse; padded_batch pads dense values only (batch "
                    "concatenates sparse ones)");
  const auto &s0 = std::get<SparseTensor>(first);
  std::vector<int64_t> dense(s0.dense_shape);
  int64_t nnz = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    const auto *s = std::get_if<SparseTensor>(values[i]);
    if (!s || s->values.dtype != s0.values.dtype || s->rank() != s0.rank())
      throw DataError("batch: element " + std::to_string(i) + at(path) +
                      " is " + spec_of(*values[i]).str() +
                      " but element 0 is " + spec_of(first).str());
    for (size_t k = 0; k < dense.size(); ++k)
      dense[k] = std::max(dense[k], s->dense_shape[k]);
    nnz += s->nnz();
  }
  int64_t rank = s0.rank();
  std::vector<int64_t> indices;
  indices.reserve(static_cast<size_t>(nnz * (rank + 1)));
  TensorValue vals;
  vals.dtype = s0.values.dtype;
  vals.shape = {nnz};
  for (int64_t row = 0; row < batch; ++row) {
    const auto &s = std::get<SparseTensor>(*values[row]);
    std::vector<int64_t> idx = s.index_values();
    for (int64_t v = 0; v < s.nnz(); ++v) {
      indices.push_back(row);
      indices.insert(indices.end(), idx.begin() + v * rank,
                     idx.begin() + (v + 1) * rank);
    }
    if (vals.dtype == DType::String)
      vals.strings.insert(vals.strings.end(), s.values.strings.begin(),
                          s.values.strings.end());
    else
      vals.data += s.values.data;
  }
  dense.insert(dense.begin(), batch);
  return SparseTensor::make(std::move(indices), std::move(vals),
                            std::move(dense));
}

Element stackNested(const std::vector<const Element *> &elements,
                    const std::string &path,
                    const Nest<std::vector<int64_t>> *padTo,
                    const Element *padValues, bool pad) {
  const Element &first = *elements[0];
  for (size_t i = 1; i < elements.size(); ++i)
    if (!elements[i]->same_structure(first))
      throw DataError("batch: element " + std::to_string(i) + at(path) +
                      " has structure " + to_string(spec_of(*elements[i])) +
                      " but element 0 has " + to_string(spec_of(first)));
  auto child = [&](auto select, const std::string &sub,
                   const Nest<std::vector<int64_t>> *p, const Element *v) {
    std::vector<const Element *> parts;
    for (const Element *e : elements)
      parts.push_back(&select(*e));
    return stackNested(parts, path.empty() ? sub : path + "/" + sub, p, v, pad);
  };
  switch (first.kind()) {
  case Element::Kind::Leaf: {
    std::vector<const Value *> leaves;
    for (const Element *e : elements)
      leaves.push_back(&e->leaf());
    const std::vector<int64_t> *shape = padTo ? &padTo->leaf() : nullptr;
    const TensorValue *value = nullptr;
    if (padValues)
      value = &tensor(*padValues);
    return Element(stackLeaf(leaves, path, shape, value, pad));
  }
  case Element::Kind::Tuple: {
    std::vector<Element> items;
    for (size_t i = 0; i < first.items().size(); ++i)
      items.push_back(child(
          [i](const Element &e) -> const Element & { return e.items()[i]; },
          std::to_string(i), padTo ? &padTo->items().at(i) : nullptr,
          padValues ? &padValues->items().at(i) : nullptr));
    return Element::tuple(std::move(items));
  }
  case Element::Kind::Dict: {
    std::map<std::string, Element> fields;
    for (const auto &[k, v] : first.fields()) {
      (void)v;
      const std::string &key = k;
      fields.emplace(k, child(
                            [&key](const Element &e) -> const Element & {
                              return e.fields().at(key);
                            },
                            k, padTo ? &padTo->fields().at(k) : nullptr,
                            padValues ? &padValues->fields().at(k) : nullptr));
    }
    return Element::dict(std::move(fields));
  }
  }
  return first;
}

/// Row `row` of a leaf (its first dimension removed).
Value sliceLeaf(const Value &value, int64_t row, const std::string &path) {
  if (const auto *t = std::get_if<TensorValue>(&value)) {
    TensorValue out;
    out.dtype = t->dtype;
    out.shape.assign(t->shape.begin() + 1, t->shape.end());
    int64_t n = out.num_elements();
    if (t->dtype == DType::String)
      out.strings.assign(t->strings.begin() + row * n,
                         t->strings.begin() + (row + 1) * n);
    else {
      size_t esize = dtype_size(t->dtype);
      out.data.assign(t->data, static_cast<size_t>(row * n) * esize,
                      static_cast<size_t>(n) * esize);
    }
    return out;
  }
  const auto &s = std::get<SparseTensor>(value);
  int64_t rank = s.rank();
  if (rank < 1)
    throw std::invalid_argument("unbatch: a sparse scalar" + at(path));
  std::vector<int64_t> idx = s.index_values();
  std::vector<int64_t> outIdx;
  TensorValue vals;
  vals.dtype = s.values.dtype;
  size_t esize = elementBytes(vals.dtype);
  int64_t count = 0;
  for (int64_t v = 0; v < s.nnz(); ++v) {
    if (idx[v * rank] != row)
      continue;
    outIdx.insert(outIdx.end(), idx.begin() + v * rank + 1,
                  idx.begin() + (v + 1) * rank);
    if (vals.dtype == DType::String)
      vals.strings.push_back(s.values.strings[v]);
    else
      vals.data.append(s.values.data, static_cast<size_t>(v) * esize, esize);
    ++count;
  }
  vals.shape = {count};
  return SparseTensor::make(
      std::move(outIdx), std::move(vals),
      std::vector<int64_t>(s.dense_shape.begin() + 1, s.dense_shape.end()));
}

} // namespace

Element stack_elements(const std::vector<Element> &elements) {
  if (elements.empty())
    throw std::invalid_argument("stack_elements: no elements");
  std::vector<const Element *> ptrs;
  for (const Element &e : elements)
    ptrs.push_back(&e);
  return stackNested(ptrs, "", nullptr, nullptr, false);
}

Element detail::stack_padded(const std::vector<Element> &elements,
                             const Dataset::Padding &padding) {
  if (elements.empty())
    throw std::invalid_argument("stack_padded: no elements");
  std::vector<const Element *> ptrs;
  for (const Element &e : elements)
    ptrs.push_back(&e);
  return stackNested(
      ptrs, "", padding.padded_shapes ? &*padding.padded_shapes : nullptr,
      padding.padding_values ? &*padding.padding_values : nullptr, true);
}

std::vector<Element> unstack_element(const Element &element) {
  int64_t rows = -1;
  element.visit([&](const std::string &path, const Value &v) {
    ValueSpec s = spec_of(v);
    if (s.shape.empty())
      throw std::invalid_argument("slicing: the value" + at(path) +
                                  " is a scalar; it has no rows");
    if (rows >= 0 && s.shape[0] != rows)
      throw std::invalid_argument("slicing: the value" + at(path) + " has " +
                                  std::to_string(s.shape[0]) +
                                  " rows but another has " +
                                  std::to_string(rows));
    rows = s.shape[0];
  });
  std::vector<Element> out;
  for (int64_t r = 0; r < std::max<int64_t>(rows, 0); ++r)
    out.push_back(element.map([r](const std::string &path, const Value &v) {
      return sliceLeaf(v, r, path);
    }));
  return out;
}

namespace {

class BatchDataset : public DatasetImpl {
public:
  BatchDataset(std::shared_ptr<const DatasetImpl> in, int64_t batchSize,
               bool dropRemainder, std::optional<Dataset::Padding> padding)
      : input_(std::move(in)), batchSize_(batchSize),
        dropRemainder_(dropRemainder), padding_(std::move(padding)) {}
  std::string describe() const override {
    std::string s =
        input_->describe() + (padding_ ? ".padded_batch(" : ".batch(") +
        std::to_string(batchSize_) + (dropRemainder_ ? ",drop_remainder" : "");
    if (padding_ && padding_->padded_shapes)
      s += ",shapes=" +
           to_string(padding_->padded_shapes->map(
               [](const std::string &, const std::vector<int64_t> &shape) {
                 return ValueSpec{DType::Int64, shape, false};
               }));
    if (padding_ && padding_->padding_values)
      s += ",values=" + to_string(spec_of(*padding_->padding_values));
    return s + ")";
  }
  int64_t cardinality() const override {
    int64_t c = input_->cardinality();
    if (c < 0)
      return c;
    return dropRemainder_ ? c / batchSize_ : (c + batchSize_ - 1) / batchSize_;
  }
  std::unique_ptr<IteratorImpl>
  make_iterator(const std::string &prefix) const override {
    class It : public IteratorImpl {
    public:
      It(const std::string &p, const BatchDataset &d)
          : IteratorImpl(p), d_(d),
            in_(d.input_->make_iterator(
                p + (d.padding_ ? "/padded_batch" : "/batch"))) {}
      std::optional<Element> next() override {
        std::vector<Element> elements;
        elements.reserve(
            static_cast<size_t>(std::min<int64_t>(d_.batchSize_, 4096)));
        while (static_cast<int64_t>(elements.size()) < d_.batchSize_) {
          std::optional<Element> e = in_->next();
          if (!e)
            break;
          elements.push_back(std::move(*e));
        }
        if (elements.empty() ||
            (d_.dropRemainder_ &&
             static_cast<int64_t>(elements.size()) < d_.batchSize_))
          return std::nullopt;
        if (!d_.padding_)
          return stack_elements(elements);
        std::vector<const Element *> ptrs;
        for (const Element &e : elements)
          ptrs.push_back(&e);
        const Dataset::Padding &p = *d_.padding_;
        return stackNested(
            ptrs, "", p.padded_shapes ? &*p.padded_shapes : nullptr,
            p.padding_values ? &*p.padding_values : nullptr, true);
      }
      void save(IteratorState &s) override { in_->save(s); }
      void restore(const IteratorState &s) override { in_->restore(s); }

    private:
      const BatchDataset &d_;
      std::unique_ptr<IteratorImpl> in_;
    };
    return std::make_unique<It>(prefix, *this);
  }

private:
  std::shared_ptr<const DatasetImpl> input_;
  int64_t batchSize_;
  bool dropRemainder_;
  std::optional<Dataset::Padding> padding_;
};

class UnbatchDataset : public DatasetImpl {
public:
  explicit UnbatchDataset(std::shared_ptr<const DatasetImpl> in)
      : input_(std::move(in)) {}
  std::string describe() const override {
    return input_->describe() + ".unbatch()";
  }
  std::unique_ptr<IteratorImpl>
  make_iterator(const std::string &prefix) const override {
    class It : public IteratorImpl {
    public:
      It(const std::string &p, const UnbatchDataset &d)
          : IteratorImpl(p), in_(d.input_->make_iterator(p + "/unbatch")) {}
      std::optional<Element> next() override {
        while (pos_ >= rows_.size()) {
          std::optional<Element> e = in_->next();
          if (!e)
            return std::nullopt;
          try {
            rows_ = unstack_element(*e);
          } catch (const std::invalid_argument &err) {
            // In a pipeline, an element without rows is bad data.
            throw DataError(std::string("unbatch: ") + err.what());
          }
          pos_ = 0;
        }
        return std::move(rows_[pos_++]);
      }
      void save(IteratorState &s) override {
        std::vector<Element> rest(rows_.begin() + pos_, rows_.end());
        s.put_element(key("rows"), Element::tuple(std::move(rest)));
        in_->save(s);
      }
      void restore(const IteratorState &s) override {
        rows_ = s.get_tuple(key("rows"));
        pos_ = 0;
        in_->restore(s);
      }

    private:
      std::unique_ptr<IteratorImpl> in_;
      std::vector<Element> rows_;
      size_t pos_ = 0;
    };
    return std::make_unique<It>(prefix, *this);
  }

private:
  std::shared_ptr<const DatasetImpl> input_;
};

} // namespace

Dataset Dataset::batch(int64_t batch_size, bool drop_remainder) const {
  if (batch_size <= 0)
    throw std::invalid_argument("Dataset::batch: batch_size must be "
                                "positive, not " +
                                std::to_string(batch_size));
  return from_impl(std::make_shared<BatchDataset>(
      impl_, batch_size, drop_remainder, std::nullopt));
}

Dataset Dataset::padded_batch(int64_t batch_size, Padding padding,
                              bool drop_remainder) const {
  if (batch_size <= 0)
    throw std::invalid_argument("Dataset::padded_batch: batch_size must be "
                                "positive, not " +
                                std::to_string(batch_size));
  return from_impl(std::make_shared<BatchDataset>(
      impl_, batch_size, drop_remainder, std::move(padding)));
}

Dataset Dataset::unbatch() const {
  return from_impl(std::make_shared<UnbatchDataset>(impl_));
}

} // namespace data
} // namespace estc
