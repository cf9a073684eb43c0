//===- SequenceExample.cpp - tf.train.SequenceExample: parsing, building -===//
//
// Each record is read into example.proto's generated SequenceExample (one
// message per parse call, reused from record to record), then every spec
// feature is looked up in its map and its values appended to the feature's
// column: context FixedLen features straight into their [B, shape...]
// output, the others into a flat value column with counts per record (and
// per step), from which the dense or sparse output is laid out once the
// batch is read. A record is checked completely before the next one, and
// outputs are built only after the whole batch has parsed, so an error
// leaves nothing behind.
//
// protobuf's parser rather than a wire-format scanner (Example.cpp's) keeps
// this file small and its acceptance exactly protobuf's; sequence records
// are few and large next to the per-record cost of building the message.
//
//===----------------------------------------------------------------------===//

#include "lib/Data/SequenceExample.h"
#include "lib/Data/DatasetInternal.h"

#include "lib/Data/example.pb.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <stdexcept>

namespace estc {
namespace data {

namespace {

using KindCase = proto::Feature::KindCase;

KindCase kindOf(DType dtype) {
  switch (dtype) {
  case DType::Float32:
    return proto::Feature::kFloatList;
  case DType::Int64:
    return proto::Feature::kInt64List;
  default:
    return proto::Feature::kBytesList;
  }
}

const char *kindName(KindCase kind) {
  switch (kind) {
  case proto::Feature::kBytesList:
    return "bytes_list";
  case proto::Feature::kFloatList:
    return "float_list";
  case proto::Feature::kInt64List:
    return "int64_list";
  case proto::Feature::KIND_NOT_SET:
    break;
  }
  return "feature without a list";
}

/// Values in a Feature (none when no list is set).
int64_t countOf(const proto::Feature &f) {
  switch (f.kind_case()) {
  case proto::Feature::kBytesList:
    return f.bytes_list().value_size();
  case proto::Feature::kFloatList:
    return f.float_list().value_size();
  case proto::Feature::kInt64List:
    return f.int64_list().value_size();
  case proto::Feature::KIND_NOT_SET:
    break;
  }
  return 0;
}

/// Appends a Feature's values (of the column's kind, or none) to a
/// numeric column `data` or a string column `strings`.
void appendValues(const proto::Feature &f, std::string &data,
                  std::vector<std::string> &strings) {
  switch (f.kind_case()) {
  case proto::Feature::kBytesList:
    strings.insert(strings.end(), f.bytes_list().value().begin(),
                   f.bytes_list().value().end());
    return;
  case proto::Feature::kFloatList: {
    const auto &v = f.float_list().value();
    data.append(reinterpret_cast<const char *>(v.data()),
                static_cast<size_t>(v.size()) * sizeof(float));
    return;
  }
  case proto::Feature::kInt64List: {
    const auto &v = f.int64_list().value();
    data.append(reinterpret_cast<const char *>(v.data()),
                static_cast<size_t>(v.size()) * sizeof(int64_t));
    return;
  }
  case proto::Feature::KIND_NOT_SET:
    return;
  }
}

enum class SpecKind { Fixed, Var, Sequence };

/// One spec feature, checked.
struct Feature {
  std::string name;
  bool context = false; // a context feature, else a feature list
  SpecKind spec = SpecKind::Fixed;
  DType dtype = DType::Float32;
  KindCase kind = proto::Feature::kFloatList;
  std::vector<int64_t> shape;
  int64_t stride = 1; // elements of `shape`
  bool allowMissing = false;
  std::optional<TensorValue> defaultValue;

  std::string what() const {
    return (context ? "context feature '" : "feature list '") +
           detail::printable(name) + "'";
  }
};

/// One feature's values while a batch is read.
struct SequenceColumn {
  TensorValue dense;                // context FixedLen: [B, shape...]
  std::string data;                 // the other kinds' numeric values
  std::vector<std::string> strings; // ... or string values
  std::vector<int64_t> counts;      // per record: values (Var) or steps
  std::vector<int64_t> stepCounts;  // sequence Var: values per step
};

[[noreturn]] void recordError(size_t r, const Feature &f,
                              const std::string &what) {
  throw DataError("record " + std::to_string(r) + ": " + f.what() + " " + what);
}

std::string expected(const Feature &f) {
  return ", expected " + std::to_string(f.stride) + " for shape " +
         shape_string(f.shape);
}

void checkKind(size_t r, const Feature &f, const proto::Feature &value,
               const std::string &where) {
  KindCase kind = value.kind_case();
  if (kind != proto::Feature::KIND_NOT_SET && kind != f.kind)
    recordError(r, f,
                where + "is a " + kindName(kind) + ", expected " +
                    kindName(f.kind));
}

/// Writes the default value, or the values of a FixedLen context feature,
/// into row r of its dense output.
void putRow(const Feature &f, SequenceColumn &col, size_t r,
            const std::string &data, const std::vector<std::string> &strings) {
  size_t at = r * static_cast<size_t>(f.stride);
  if (f.dtype == DType::String)
    std::copy(strings.begin(), strings.end(),
              col.dense.strings.begin() + static_cast<ptrdiff_t>(at));
  else if (!data.empty())
    std::memcpy(col.dense.data.data() + at * dtype_size(f.dtype), data.data(),
                data.size());
}

void readContext(const Feature &f, SequenceColumn &col,
                 const proto::Features &ctx, size_t r) {
  auto it = ctx.feature().find(f.name);
  if (it == ctx.feature().end()) {
    if (f.spec == SpecKind::Var) {
      col.counts[r] = 0;
      return;
    }
    if (!f.defaultValue)
      recordError(r, f, "is required but missing (no default_value)");
    putRow(f, col, r, f.defaultValue->data, f.defaultValue->strings);
    return;
  }
  const proto::Feature &value = it->second;
  checkKind(r, f, value, "");
  int64_t count = countOf(value);
  if (f.spec == SpecKind::Var) {
    col.counts[r] = count;
    appendValues(value, col.data, col.strings);
    return;
  }
  if (count != f.stride)
    recordError(r, f, "has " + std::to_string(count) + " values" + expected(f));
  std::string data;
  std::vector<std::string> strings;
  appendValues(value, data, strings);
  putRow(f, col, r, data, strings);
}

void readFeatureList(const Feature &f, SequenceColumn &col,
                     const proto::FeatureLists &lists, size_t r) {
  auto it = lists.feature_list().find(f.name);
  if (it == lists.feature_list().end()) {
    if (f.spec == SpecKind::Sequence && !f.allowMissing)
      recordError(r, f, "is required but missing (allow_missing is false)");
    col.counts[r] = 0;
    return;
  }
  const auto &steps = it->second.feature();
  col.counts[r] = steps.size();
  for (int t = 0; t < steps.size(); ++t) {
    const proto::Feature &step = steps[t];
    checkKind(r, f, step, "step " + std::to_string(t) + " ");
    int64_t count = countOf(step);
    if (f.spec == SpecKind::Sequence && count != f.stride)
      recordError(r, f,
                  "step " + std::to_string(t) + " has " +
                      std::to_string(count) + " values" + expected(f));
    if (f.spec == SpecKind::Var)
      col.stepCounts.push_back(count);
    appendValues(step, col.data, col.strings);
  }
}

TensorValue valuesTensor(DType dtype, SequenceColumn &col) {
  TensorValue t;
  t.dtype = dtype;
  if (dtype == DType::String) {
    t.shape = {static_cast<int64_t>(col.strings.size())};
    t.strings = std::move(col.strings);
  } else {
    t.shape = {static_cast<int64_t>(col.data.size() / dtype_size(dtype))};
    t.data = std::move(col.data);
  }
  return t;
}

/// The output of a feature from its column, for a batch of `batch`.
Value finish(const Feature &f, SequenceColumn &col, size_t batch) {
  const auto b = static_cast<int64_t>(batch);
  if (f.context && f.spec == SpecKind::Fixed)
    return std::move(col.dense);
  if (f.context) { // VarLen: (record, i)
    int64_t width = 0;
    std::vector<int64_t> indices;
    for (int64_t row = 0; row < b; ++row) {
      int64_t n = col.counts[static_cast<size_t>(row)];
      width = std::max(width, n);
      for (int64_t i = 0; i < n; ++i) {
        indices.push_back(row);
        indices.push_back(i);
      }
    }
    return SparseTensor::make(std::move(indices), valuesTensor(f.dtype, col),
                              {b, width});
  }
  int64_t steps = 0;
  for (int64_t c : col.counts)
    steps = std::max(steps, c);
  if (f.spec == SpecKind::Var) { // (record, step, i)
    int64_t width = 0;
    std::vector<int64_t> indices;
    size_t k = 0; // index into stepCounts
    for (int64_t row = 0; row < b; ++row)
      for (int64_t t = 0; t < col.counts[static_cast<size_t>(row)]; ++t) {
        int64_t n = col.stepCounts[k++];
        width = std::max(width, n);
        for (int64_t i = 0; i < n; ++i) {
          indices.push_back(row);
          indices.push_back(t);
          indices.push_back(i);
        }
      }
    return SparseTensor::make(std::move(indices), valuesTensor(f.dtype, col),
                              {b, steps, width});
  }
  // FixedLenSequence: [B, steps, shape...], padded with 0 or "".
  TensorValue t;
  t.dtype = f.dtype;
  t.shape = {b, steps};
  t.shape.insert(t.shape.end(), f.shape.begin(), f.shape.end());
  size_t rowElems = static_cast<size_t>(steps * f.stride);
  size_t es = f.dtype == DType::String ? 0 : dtype_size(f.dtype);
  if (es)
    t.data.assign(batch * rowElems * es, '\0');
  else
    t.strings.resize(batch * rowElems);
  size_t from = 0; // elements of the column consumed
  for (size_t row = 0; row < batch; ++row) {
    size_t n = static_cast<size_t>(col.counts[row] * f.stride);
    size_t at = row * rowElems;
    if (es && n)
      std::memcpy(t.data.data() + at * es, col.data.data() + from * es, n * es);
    else if (!es)
      std::move(col.strings.begin() + static_cast<ptrdiff_t>(from),
                col.strings.begin() + static_cast<ptrdiff_t>(from + n),
                t.strings.begin() + static_cast<ptrdiff_t>(at));
    from += n;
  }
  return t;
}

/// A value of a batch of one without its batch dimension.
Value unbatched(Value v) {
  if (auto *t = std::get_if<TensorValue>(&v)) {
    t->shape.erase(t->shape.begin());
    return v;
  }
  auto &s = std::get<SparseTensor>(v);
  int64_t rank = s.rank();
  std::vector<int64_t> idx = s.index_values(), out;
  out.reserve(idx.size() / static_cast<size_t>(rank) *
              static_cast<size_t>(rank - 1));
  for (size_t k = 0; k < idx.size(); ++k)
    if (k % static_cast<size_t>(rank) != 0)
      out.push_back(idx[k]);
  std::vector<int64_t> dense(s.dense_shape.begin() + 1, s.dense_shape.end());
  return SparseTensor::make(std::move(out), std::move(s.values),
                            std::move(dense));
}

std::invalid_argument specError(const std::string &name,
                                const std::string &what) {
  return std::invalid_argument("feature '" + detail::printable(name) +
                               "': " + what);
}

Feature compile(const std::string &name, const FeatureSpec &spec,
                bool context) {
  Feature f;
  f.name = name;
  f.context = context;
  if (const auto *fixed = std::get_if<FixedLenFeature>(&spec)) {
    if (!context)
      throw specError(name, "a FixedLenFeature is not a sequence feature "
                            "(FixedLenSequenceFeature or VarLenFeature)");
    f.spec = SpecKind::Fixed;
    f.dtype = fixed->dtype;
    f.shape = fixed->shape;
    f.defaultValue = fixed->default_value;
  } else if (const auto *var = std::get_if<VarLenFeature>(&spec)) {
    f.spec = SpecKind::Var;
    f.dtype = var->dtype;
  } else {
    const auto &seq = std::get<FixedLenSequenceFeature>(spec);
    if (context)
      throw specError(name, "a FixedLenSequenceFeature is not a context "
                            "feature (FixedLenFeature or VarLenFeature)");
    if (seq.default_value)
      throw specError(name, "a sequence feature takes no default_value "
                            "(lists are padded with 0 or \"\")");
    f.spec = SpecKind::Sequence;
    f.dtype = seq.dtype;
    f.shape = seq.shape;
    f.allowMissing = seq.allow_missing;
  }
  f.kind = kindOf(f.dtype);
  f.stride = 1;
  for (int64_t d : f.shape)
    f.stride *= d; // checked by ExampleParser's constructor
  return f;
}

} // namespace

// --- SequenceExampleParser ---------------------------------------------------

struct SequenceExampleParser::Impl {
  FeatureSpecs contextSpecs, sequenceSpecs;
  std::vector<Feature> context, sequence; // in name order

  /// One column per feature of `context` then `sequence`.
  std::vector<SequenceColumn>
  parse(const std::vector<std::string_view> &records) const;
};

std::vector<SequenceColumn> SequenceExampleParser::Impl::parse(
    const std::vector<std::string_view> &records) const {
  const size_t batch = records.size();
  std::vector<SequenceColumn> cols(context.size() + sequence.size());
  for (size_t i = 0; i < context.size(); ++i) {
    const Feature &f = context[i];
    if (f.spec == SpecKind::Fixed) {
      TensorValue &d = cols[i].dense;
      d.dtype = f.dtype;
      d.shape = {static_cast<int64_t>(batch)};
      d.shape.insert(d.shape.end(), f.shape.begin(), f.shape.end());
      size_t n = batch * static_cast<size_t>(f.stride);
      if (f.dtype == DType::String)
        d.strings.resize(n);
      else
        d.data.resize(n * dtype_size(f.dtype));
    }
  }
  for (SequenceColumn &c : cols)
    c.counts.resize(batch);
  proto::SequenceExample message;
  for (size_t r = 0; r < batch; ++r) {
    std::string_view bytes = records[r];
    if (bytes.size() > static_cast<size_t>(INT_MAX) ||
        !message.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
      throw DataError("record " + std::to_string(r) +
                      ": not a valid tf.train.SequenceExample");
    for (size_t i = 0; i < context.size(); ++i)
      readContext(context[i], cols[i], message.context(), r);
    for (size_t i = 0; i < sequence.size(); ++i)
      readFeatureList(sequence[i], cols[context.size() + i],
                      message.feature_lists(), r);
  }
  return cols;
}

SequenceExampleParser::SequenceExampleParser(FeatureSpecs context_features,
                                             FeatureSpecs sequence_features)
    : impl_(std::make_unique<Impl>()) {
  if (context_features.empty() && sequence_features.empty())
    throw std::invalid_argument(
        "parse_sequence_example: context_features and sequence_features are "
        "both empty; at least one must have features");
  for (const auto &[name, spec] : context_features)
    impl_->context.push_back(compile(name, spec, true));
  for (const auto &[name, spec] : sequence_features)
    impl_->sequence.push_back(compile(name, spec, false));
  // dtypes, shapes and default values as parse_example checks them.
  ExampleParser checkContext(context_features);
  ExampleParser checkSequence(sequence_features);
  impl_->contextSpecs = std::move(context_features);
  impl_->sequenceSpecs = std::move(sequence_features);
}

SequenceExampleParser::~SequenceExampleParser() = default;
SequenceExampleParser::SequenceExampleParser(
    SequenceExampleParser &&) noexcept = default;
SequenceExampleParser &
SequenceExampleParser::operator=(SequenceExampleParser &&) noexcept = default;

const FeatureSpecs &SequenceExampleParser::context_features() const {
  return impl_->contextSpecs;
}
const FeatureSpecs &SequenceExampleParser::sequence_features() const {
  return impl_->sequenceSpecs;
}

Element SequenceExampleParser::parse_sequence_example(
    const std::vector<std::string_view> &serialized) const {
  std::vector<SequenceColumn> cols = impl_->parse(serialized);
  const size_t batch = serialized.size();
  std::map<std::string, Element> context, lists, lengths;
  for (size_t i = 0; i < impl_->context.size(); ++i)
    context.emplace(impl_->context[i].name,
                    Element(finish(impl_->context[i], cols[i], batch)));
  for (size_t i = 0; i < impl_->sequence.size(); ++i) {
    const Feature &f = impl_->sequence[i];
    SequenceColumn &col = cols[impl_->context.size() + i];
    if (f.spec == SpecKind::Sequence)
      lengths.emplace(f.name, Element(TensorValue::of<int64_t>(
                                  {static_cast<int64_t>(batch)}, col.counts)));
    lists.emplace(f.name, Element(finish(f, col, batch)));
  }
  return Element::tuple({Element::dict(std::move(context)),
                         Element::dict(std::move(lists)),
                         Element::dict(std::move(lengths))});
}

Element SequenceExampleParser::parse_sequence_example(
    const TensorValue &serialized) const {
  if (serialized.dtype != DType::String || serialized.shape.size() != 1 ||
      static_cast<int64_t>(serialized.strings.size()) != serialized.shape[0])
    throw std::invalid_argument(
        "parse_sequence_example: serialized must be STRING[B], not " +
        serialized.spec().str());
  std::vector<std::string_view> views(serialized.strings.begin(),
                                      serialized.strings.end());
  return parse_sequence_example(views);
}

Element SequenceExampleParser::parse_single_sequence_example(
    std::string_view serialized) const {
  Element batched = parse_sequence_example({serialized});
  auto strip = [](const std::string &, const Value &v) { return unbatched(v); };
  return Element::tuple({batched[0].map(strip), batched[1].map(strip)});
}

ElementSpec SequenceExampleParser::element_spec(bool batched) const {
  auto specOf = [batched](const Feature &f) {
    ValueSpec s;
    s.dtype = f.dtype;
    if (batched)
      s.shape.push_back(-1);
    if (!f.context)
      s.shape.push_back(-1); // steps
    if (f.spec == SpecKind::Var) {
      s.sparse = true;
      s.shape.push_back(-1);
    } else {
      s.shape.insert(s.shape.end(), f.shape.begin(), f.shape.end());
    }
    return ElementSpec(s);
  };
  std::map<std::string, ElementSpec> context, lists, lengths;
  for (const Feature &f : impl_->context)
    context.emplace(f.name, specOf(f));
  for (const Feature &f : impl_->sequence) {
    lists.emplace(f.name, specOf(f));
    if (f.spec == SpecKind::Sequence)
      lengths.emplace(f.name, ElementSpec(ValueSpec{DType::Int64, {-1}}));
  }
  std::vector<ElementSpec> parts{ElementSpec::dict(std::move(context)),
                                 ElementSpec::dict(std::move(lists))};
  if (batched)
    parts.push_back(ElementSpec::dict(std::move(lengths)));
  return ElementSpec::tuple(std::move(parts));
}

Element parse_sequence_example(const std::vector<std::string_view> &serialized,
                               const FeatureSpecs &context_features,
                               const FeatureSpecs &sequence_features) {
  return SequenceExampleParser(context_features, sequence_features)
      .parse_sequence_example(serialized);
}

Element parse_single_sequence_example(std::string_view serialized,
                                      const FeatureSpecs &context_features,
                                      const FeatureSpecs &sequence_features) {
  return SequenceExampleParser(context_features, sequence_features)
      .parse_single_sequence_example(serialized);
}

// --- SequenceExampleBuilder --------------------------------------------------

SequenceExampleBuilder::SequenceExampleBuilder()
    : message_(std::make_unique<proto::SequenceExample>()) {}
SequenceExampleBuilder::~SequenceExampleBuilder() = default;
SequenceExampleBuilder::SequenceExampleBuilder(
    const SequenceExampleBuilder &other)
    : message_(std::make_unique<proto::SequenceExample>(*other.message_)) {}
SequenceExampleBuilder &
SequenceExampleBuilder::operator=(const SequenceExampleBuilder &other) {
  *message_ = *other.message_;
  return *this;
}

namespace {

proto::Feature &contextFeature(proto::SequenceExample &m,
                               const std::string &name) {
  proto::Feature &f = (*m.mutable_context()->mutable_feature())[name];
  f.Clear();
  return f;
}

proto::FeatureList &featureList(proto::SequenceExample &m,
                                const std::string &name) {
  proto::FeatureList &l =
      (*m.mutable_feature_lists()->mutable_feature_list())[name];
  l.Clear();
  return l;
}

void setValues(proto::Feature &f, const std::vector<float> &v) {
  f.mutable_float_list()->mutable_value()->Add(v.begin(), v.end());
}
void setValues(proto::Feature &f, const std::vector<int64_t> &v) {
  f.mutable_int64_list()->mutable_value()->Add(v.begin(), v.end());
}
void setValues(proto::Feature &f, const std::vector<std::string> &v) {
  for (const std::string &s : v)
    f.mutable_bytes_list()->add_value(s);
}

template <typename T>
void addSteps(proto::FeatureList &list, const std::vector<std::vector<T>> &s) {
  for (const std::vector<T> &step : s)
    setValues(*list.add_feature(), step);
}

} // namespace

SequenceExampleBuilder &
SequenceExampleBuilder::add_context_float(const std::string &name,
                                          std::vector<float> values) {
  setValues(contextFeature(*message_, name), values);
  return *this;
}
SequenceExampleBuilder &
SequenceExampleBuilder::add_context_int64(const std::string &name,
                                          std::vector<int64_t> values) {
  setValues(contextFeature(*message_, name), values);
  return *this;
}
SequenceExampleBuilder &
SequenceExampleBuilder::add_context_bytes(const std::string &name,
                                          std::vector<std::string> values) {
  setValues(contextFeature(*message_, name), values);
  return *this;
}
SequenceExampleBuilder &SequenceExampleBuilder::add_feature_list_float(
    const std::string &name, const std::vector<std::vector<float>> &steps) {
  addSteps(featureList(*message_, name), steps);
  return *this;
}
SequenceExampleBuilder &SequenceExampleBuilder::add_feature_list_int64(
    const std::string &name, const std::vector<std::vector<int64_t>> &steps) {
  addSteps(featureList(*message_, name), steps);
  return *this;
}
SequenceExampleBuilder &SequenceExampleBuilder::add_feature_list_bytes(
    const std::string &name,
    const std::vector<std::vector<std::string>> &steps) {
  addSteps(featureList(*message_, name), steps);
  return *this;
}

std::string SequenceExampleBuilder::serialize() const {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    message_->SerializeToCodedStream(&coded);
  }
  return out;
}

} // namespace data
} // namespace estc
