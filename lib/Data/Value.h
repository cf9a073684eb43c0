//===- Value.h - What an input pipeline carries: values and elements ----===//
//
// The values of estc's input pipeline (lib/Data, tf.data for C++):
//
//   - a dense tensor is a TensorValue (any numeric DType, or String);
//   - a SparseTensor is TF's: indices [nnz, rank] (I64), values [nnz] and
//     dense_shape [rank], indices in row-major order;
//   - an element is a nested structure of them, as tf.nest has it: a leaf
//     (one value), a tuple or a dict (keys sorted, as tf.nest sorts them).
//     An Estimator input_fn's elements are (features dict, labels) tuples
//     or a features dict alone.
//
// Nest<Leaf> is the structure; Element (values) and ElementSpec (their
// dtypes and shapes) are its two instances.
//
// Every problem with the data itself throws DataError (lib/Data/Idx.h's:
// one line naming the file, record or feature and what is wrong); misuse
// of the API (wrong structure kind, out-of-range index) throws
// std::invalid_argument.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_DATA_VALUE_H
#define ESTC_LIB_DATA_VALUE_H

#include "lib/Data/Idx.h"
#include "lib/Tensor/TensorValue.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace estc {
namespace data {

/// tf.sparse.SparseTensor: the nonzero values of a tensor of dense_shape.
struct SparseTensor {
  TensorValue indices; // I64 [nnz, rank]
  TensorValue values;  // [nnz]
  std::vector<int64_t> dense_shape;

  int64_t nnz() const { return values.num_elements(); }
  int64_t rank() const { return static_cast<int64_t>(dense_shape.size()); }
  /// From row-major indices (nnz * rank numbers) and values.
  /// std::invalid_argument when the sizes disagree.
  static SparseTensor make(std::vector<int64_t> indices, TensorValue values,
                           std::vector<int64_t> dense_shape);
  /// The index numbers, row-major (nnz * rank).
  std::vector<int64_t> index_values() const {
    return indices.values<int64_t>();
  }
  /// Throws DataError "<what>: ..." unless indices are I64 [nnz, rank],
  /// values are [nnz], and every index lies within dense_shape.
  void validate(const std::string &what) const;
  /// The dense tensor (zeros / empty strings elsewhere).
  TensorValue to_dense() const;
};

/// One value of an element.
using Value = std::variant<TensorValue, SparseTensor>;

/// The dtype and shape of a value (-1: a dimension that varies between
/// elements), and whether it is sparse.
struct ValueSpec {
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;
  bool sparse = false;

  /// "F32[-1,784]", "sparse I64[-1,-1]".
  std::string str() const;
  bool operator==(const ValueSpec &o) const {
    return dtype == o.dtype && shape == o.shape && sparse == o.sparse;
  }
  bool operator!=(const ValueSpec &o) const { return !(*this == o); }
};

/// The spec of one value (its exact shape).
ValueSpec spec_of(const Value &value);
/// The DType of a value.
DType dtype_of(const Value &value);

/// A nested structure as tf.nest has it: a leaf, a tuple or a dict.
template <typename LeafT> class Nest {
public:
  using LeafType = LeafT;
  enum class Kind { Leaf, Tuple, Dict };

  /// The empty tuple.
  Nest() : kind_(Kind::Tuple) {}
  /// A leaf.
  Nest(LeafT leaf) // NOLINT: implicit, as a value is an element
      : kind_(Kind::Leaf), leaf_(std::make_shared<LeafT>(std::move(leaf))) {}
  template <typename T, typename = std::enable_if_t<
                            std::is_constructible_v<LeafT, T> &&
                            !std::is_same_v<std::decay_t<T>, Nest> &&
                            !std::is_same_v<std::decay_t<T>,
                                            LeafT>>>
  Nest(T &&value) // NOLINT: implicit, TensorValue -> Element
      : Nest(LeafT(std::forward<T>(value))) {}

  static Nest tuple(std::vector<Nest> items) {
    Nest n;
    n.items_ = std::move(items);
    return n;
  }
  static Nest dict(std::map<std::string, Nest> fields) {
    Nest n;
    n.kind_ = Kind::Dict;
    n.fields_ = std::move(fields);
    return n;
  }

  Kind kind() const { return kind_; }
  bool is_leaf() const { return kind_ == Kind::Leaf; }
  bool is_tuple() const { return kind_ == Kind::Tuple; }
  bool is_dict() const { return kind_ == Kind::Dict; }

  /// The leaf (std::invalid_argument for a tuple or dict).
  const LeafT &leaf() const {
    requireKind(Kind::Leaf, "leaf");
    return *leaf_;
  }
  LeafT &leaf() {
    requireKind(Kind::Leaf, "leaf");
    if (leaf_.use_count() > 1) // copy on write
      leaf_ = std::make_shared<LeafT>(*leaf_);
    return *leaf_;
  }
  /// A tuple's items.
  const std::vector<Nest> &items() const {
    requireKind(Kind::Tuple, "tuple");
    return items_;
  }
  std::vector<Nest> &items() {
    requireKind(Kind::Tuple, "tuple");
    return items_;
  }
  /// A dict's fields.
  const std::map<std::string, Nest> &fields() const {
    requireKind(Kind::Dict, "dict");
    return fields_;
  }
  std::map<std::string, Nest> &fields() {
    requireKind(Kind::Dict, "dict");
    return fields_;
  }
  /// Number of items or fields; 1 for a leaf.
  size_t size() const {
    return kind_ == Kind::Leaf    ? 1
           : kind_ == Kind::Tuple ? items_.size()
                                  : fields_.size();
  }
  /// A tuple's item i.
  const Nest &operator[](size_t i) const {
    const std::vector<Nest> &v = items();
    if (i >= v.size())
      throw std::invalid_argument("element: tuple index " + std::to_string(i) +
                                  " out of range (" + std::to_string(v.size()) +
                                  " items)");
    return v[i];
  }
  /// A dict's field `key` (std::invalid_argument naming the key and the
  /// keys there are).
  const Nest &operator[](const std::string &key) const {
    const std::map<std::string, Nest> &f = fields();
    auto it = f.find(key);
    if (it == f.end()) {
      std::string keys;
      for (const auto &[k, v] : f)
        keys += (keys.empty() ? "" : ", ") + k;
      throw std::invalid_argument("element: no field '" + key +
                                  "' (fields: " + keys + ")");
    }
    return it->second;
  }
  /// (An int overload, so that e[0] is not taken for a null key.)
  const Nest &operator[](int i) const {
    if (i < 0)
      throw std::invalid_argument("element: negative tuple index");
    return (*this)[static_cast<size_t>(i)];
  }
  const Nest &operator[](const char *key) const {
    return (*this)[std::string(key)];
  }
  bool contains(const std::string &key) const {
    return kind_ == Kind::Dict && fields_.count(key) != 0;
  }

  /// The leaves in tf.nest.flatten order (tuples in order, dict keys
  /// sorted), each with its path ("", "0", "features/age").
  void visit(
      const std::function<void(const std::string &path, const LeafT &leaf)> &fn,
      const std::string &path = "") const {
    switch (kind_) {
    case Kind::Leaf:
      fn(path, *leaf_);
      return;
    case Kind::Tuple:
      for (size_t i = 0; i < items_.size(); ++i)
        items_[i].visit(fn, join(path, std::to_string(i)));
      return;
    case Kind::Dict:
      for (const auto &[k, v] : fields_)
        v.visit(fn, join(path, k));
      return;
    }
  }
  std::vector<const LeafT *> flatten() const {
    std::vector<const LeafT *> out;
    visit([&](const std::string &, const LeafT &l) { out.push_back(&l); });
    return out;
  }
  /// The same structure with fn applied to every leaf (fn gets the path).
  template <typename Fn>
  auto map(Fn &&fn, const std::string &path = "") const
      -> Nest<std::decay_t<decltype(fn(path, std::declval<const LeafT &>()))>> {
    using Out = Nest<std::decay_t<decltype(fn(path, *leaf_))>>;
    switch (kind_) {
    case Kind::Leaf:
      return Out(fn(path, *leaf_));
    case Kind::Tuple: {
      std::vector<Out> items;
      items.reserve(items_.size());
      for (size_t i = 0; i < items_.size(); ++i)
        items.push_back(items_[i].map(fn, join(path, std::to_string(i))));
      return Out::tuple(std::move(items));
    }
    case Kind::Dict: {
      std::map<std::string, Out> fields;
      for (const auto &[k, v] : fields_)
        fields.emplace(k, v.map(fn, join(path, k)));
      return Out::dict(std::move(fields));
    }
    }
    return Out();
  }
  /// Whether `o` has the same structure (kinds, tuple lengths, dict keys).
  template <typename L> bool same_structure(const Nest<L> &o) const {
    if (static_cast<int>(kind_) != static_cast<int>(o.kind()))
      return false;
    if (kind_ == Kind::Tuple) {
      if (items_.size() != o.items().size())
        return false;
      for (size_t i = 0; i < items_.size(); ++i)
        if (!items_[i].same_structure(o.items()[i]))
          return false;
    } else if (kind_ == Kind::Dict) {
      if (fields_.size() != o.fields().size())
        return false;
      auto it = o.fields().begin();
      for (const auto &[k, v] : fields_) {
        if (k != it->first || !v.same_structure(it->second))
          return false;
        ++it;
      }
    }
    return true;
  }

private:
  static std::string join(const std::string &a, const std::string &b) {
    return a.empty() ? b : a + "/" + b;
  }
  void requireKind(Kind k, const char *want) const {
    if (kind_ != k)
      throw std::invalid_argument(std::string("element: not a ") + want +
                                  " but a " + kindName());
  }
  const char *kindName() const {
    return kind_ == Kind::Leaf    ? "leaf"
           : kind_ == Kind::Tuple ? "tuple"
                                  : "dict";
  }

  Kind kind_;
  std::shared_ptr<LeafT> leaf_;
  std::vector<Nest> items_;
  std::map<std::string, Nest> fields_;
};

/// An element of a dataset.
using Element = Nest<Value>;
/// An element's structure with each value's spec.
using ElementSpec = Nest<ValueSpec>;

/// The dense tensor at a leaf (std::invalid_argument when sparse).
const TensorValue &tensor(const Element &leaf);
/// The sparse tensor at a leaf (std::invalid_argument when dense).
const SparseTensor &sparse(const Element &leaf);

/// The spec of every leaf (exact shapes).
ElementSpec spec_of(const Element &element);
/// `a` with every dimension where `b` differs set to -1 (std::invalid_argument
/// when dtypes, ranks, sparseness or structure differ).
ElementSpec most_specific_compatible(const ElementSpec &a,
                                     const ElementSpec &b);
/// "{age: F32[], name: STRING[]}", "(F32[-1,784], I32[-1])".
std::string to_string(const ElementSpec &spec);

/// Appends the element's binary encoding to `out` (the iterator state and
/// cache files use it; docs/input-pipeline.md has the format).
void encode_element(const Element &element, std::string &out);
/// Decodes one element at `pos` (advanced past it); DataError naming `what`
/// for bytes that are not an element encoding.
Element decode_element(std::string_view bytes, size_t &pos,
                       const std::string &what);

} // namespace data
} // namespace estc

#endif // ESTC_LIB_DATA_VALUE_H
