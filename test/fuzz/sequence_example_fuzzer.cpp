//===- sequence_example_fuzzer.cpp - tf.train.SequenceExample parsing ----===//
//
// The input is one or two serialized SequenceExamples: byte 0 is the length
// of the first (0xff, or more than there is: the rest is one record), the
// rest the records. They are parsed as a batch (parse_sequence_example)
// and one by one (parse_single_sequence_example), with a spec of optional
// features of every kind and dtype and one of required features, and must
// agree:
//   - only DataError, one line, naming "record <i>: ";
//   - protobuf rejects a record  <=>  estc says "record <i>: not a valid
//     tf.train.SequenceExample" (the first bad record's index);
//   - the batch fails exactly when a record fails alone, with that
//     record's error (the first one);
//   - otherwise each record's row of the batch is its single parse:
//     context values equal, a dense sequence its steps then padding (0 or
//     ""), lengths its step count (the FeatureList's size in protobuf's
//     message), sparse values its single's indices under its row, every
//     SparseTensor valid.
//
//===----------------------------------------------------------------------===//

#include "test/fuzz/FuzzSupport.h"

#include "lib/Data/Dataset.h"
#include "lib/Data/SequenceExample.h"
#include "lib/Data/example.pb.h"

#include <google/protobuf/stubs/logging.h>

#include <cstring>

using namespace estc;
using namespace estc::data;
using namespace estc::fuzz;

namespace {

struct Specs {
  FeatureSpecs context, sequence;
};

const Specs &optionalSpecs() {
  static const Specs specs{
      {{"c", FixedLenFeature{{2},
                             DType::Float32,
                             TensorValue::of<float>({2}, {0.5f, -0.5f})}},
       {"d",
        FixedLenFeature{{}, DType::String, TensorValue::of_strings({}, {"d"})}},
       {"v", VarLenFeature{DType::Int64}}},
      {{"q", FixedLenSequenceFeature{{2}, DType::Int64, true, {}}},
       {"w", FixedLenSequenceFeature{{}, DType::String, true, {}}},
       {"f", VarLenFeature{DType::Float32}},
       {"s", VarLenFeature{DType::String}}}};
  return specs;
}

const Specs &requiredSpecs() {
  static const Specs specs{
      {{"b", FixedLenFeature{{}, DType::Int64, {}}}},
      {{"r", FixedLenSequenceFeature{{}, DType::Float32, false, {}}},
       {"i", VarLenFeature{DType::Int64}}}};
  return specs;
}

std::string encoded(const Element &e) {
  std::string out;
  encode_element(e, out);
  return out;
}

/// The result of a parse: the element, or the DataError's message.
struct Parsed {
  Element element;
  std::string error;
};

template <typename F> Parsed attempt(F &&parse) {
  try {
    return Parsed{parse(), ""};
  } catch (const DataError &e) {
    std::string message = e.what();
    if (message.find_first_of("\n\r") != std::string::npos)
      die("error is not one line: " + message);
    return Parsed{Element(), message};
  }
}

/// `message` with its "record <from>: " prefix made "record <to>: ".
std::string renumbered(const std::string &message, size_t to) {
  size_t colon = message.find(": ");
  if (message.rfind("record ", 0) != 0 || colon == std::string::npos)
    die("error does not name its record: " + message);
  return "record " + std::to_string(to) + message.substr(colon);
}

/// Elements [0, n) of a dense tensor (n <= its count), as a tensor [n].
TensorValue prefix(const TensorValue &t, int64_t n) {
  TensorValue out;
  out.dtype = t.dtype;
  out.shape = {n};
  if (t.dtype == DType::String)
    out.strings.assign(t.strings.begin(), t.strings.begin() + n);
  else
    out.data = t.data.substr(0, static_cast<size_t>(n) * dtype_size(t.dtype));
  return out;
}

bool isPadding(const TensorValue &t, int64_t from) {
  if (t.dtype == DType::String) {
    for (size_t i = static_cast<size_t>(from); i < t.strings.size(); ++i)
      if (!t.strings[i].empty())
        return false;
    return true;
  }
  for (size_t i = static_cast<size_t>(from) * dtype_size(t.dtype);
       i < t.data.size(); ++i)
    if (t.data[i] != 0)
      return false;
  return true;
}

/// Row `row` of the batch (context or feature_lists, unstacked) against the
/// record's single parse.
void checkRow(const Element &batchRow, const Element &single,
              const Element &lengths, int64_t row,
              const proto::SequenceExample &message, bool lists) {
  for (const auto &[name, value] : single.fields()) {
    const Value &b = batchRow[name].leaf();
    const Value &s = value.leaf();
    if (const auto *st = std::get_if<SparseTensor>(&s)) {
      const SparseTensor &bt = std::get<SparseTensor>(b);
      if (bt.index_values() != st->index_values() ||
          encoded(Element(bt.values)) != encoded(Element(st->values)))
        die("feature '" + name + "': the batch's row " + std::to_string(row) +
            " is not its single parse");
      for (size_t k = 0; k < st->dense_shape.size(); ++k)
        if (st->dense_shape[k] > bt.dense_shape[k])
          die("feature '" + name + "': the batch's dense_shape is smaller");
      continue;
    }
    const TensorValue &dt = std::get<TensorValue>(s);
    const TensorValue &bt = std::get<TensorValue>(b);
    if (!lists) {
      if (encoded(Element(dt)) != encoded(Element(bt)))
        die("context feature '" + name + "': the batch's row " +
            std::to_string(row) + " is not its single parse");
      continue;
    }
    int64_t steps = dt.shape.at(0);
    const auto &map = message.feature_lists().feature_list();
    auto it = map.find(name);
    int64_t want = it == map.end() ? 0 : it->second.feature_size();
    int64_t length =
        tensor(lengths[name]).values<int64_t>().at(static_cast<size_t>(row));
    if (steps != want || length != want)
      die("feature list '" + name + "': " + std::to_string(steps) +
          " steps alone, length " + std::to_string(length) + " in the batch, " +
          std::to_string(want) + " in protobuf's message");
    int64_t n = dt.num_elements();
    if (encoded(Element(prefix(bt, n))) != encoded(Element(prefix(dt, n))) ||
        !isPadding(bt, n))
      die("feature list '" + name + "': the batch's row " +
          std::to_string(row) + " is not its steps then padding");
  }
}

void checkSparse(const Element &e) {
  e.visit([](const std::string &path, const Value &v) {
    if (const auto *s = std::get_if<SparseTensor>(&v)) {
      try {
        s->validate(path);
      } catch (const DataError &err) {
        die(std::string("invalid SparseTensor: ") + err.what());
      }
    }
  });
}

void check(const std::vector<std::string_view> &records, const Specs &specs) {
  SequenceExampleParser parser(specs.context, specs.sequence);
  std::vector<Parsed> singles;
  std::vector<proto::SequenceExample> messages(records.size());
  std::string firstError;
  for (size_t i = 0; i < records.size(); ++i) {
    singles.push_back(attempt(
        [&] { return parser.parse_single_sequence_example(records[i]); }));
    bool valid = messages[i].ParseFromArray(
        records[i].data(), static_cast<int>(records[i].size()));
    const std::string &error = singles.back().error;
    bool malformed = error == "record 0: not a valid tf.train.SequenceExample";
    if (valid == malformed)
      die(std::string("protobuf ") + (valid ? "parses" : "rejects") +
          " record " + std::to_string(i) +
          ", estc says: " + (error.empty() ? "nothing" : error));
    if (!error.empty() && error.rfind("record 0: ", 0) != 0)
      die("a single parse's error names another record: " + error);
    if (!error.empty() && firstError.empty())
      firstError = renumbered(error, i);
    if (error.empty())
      checkSparse(singles.back().element);
  }
  Parsed batch =
      attempt([&] { return parser.parse_sequence_example(records); });
  if (batch.error != firstError)
    die("the batch says '" + batch.error + "', its records alone '" +
        firstError + "'");
  if (!batch.error.empty())
    return;
  checkSparse(batch.element);
  std::vector<Element> context = unstack_element(batch.element[0]);
  std::vector<Element> lists = unstack_element(batch.element[1]);
  for (size_t i = 0; i < records.size(); ++i) {
    const Element &single = singles[i].element;
    int64_t row = static_cast<int64_t>(i);
    if (!context.empty())
      checkRow(context[i], single[0], batch.element[2], row, messages[i],
               false);
    if (!lists.empty())
      checkRow(lists[i], single[1], batch.element[2], row, messages[i], true);
  }
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  // proto2 strings are not UTF-8 checked, but debug builds log about them.
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  std::string_view rest = bytesOf(data + 1, size - 1);
  std::vector<std::string_view> records;
  if (data[0] == 0xff || data[0] > rest.size()) {
    records.push_back(rest);
  } else {
    records.push_back(rest.substr(0, data[0]));
    records.push_back(rest.substr(data[0]));
  }
  check(records, optionalSpecs());
  check(records, requiredSpecs());
  return 0;
}
