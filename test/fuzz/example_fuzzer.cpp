//===- example_fuzzer.cpp - tf.train.Example: estc's parser vs protobuf ---===//
//
// A differential target: the input is one serialized Example, parsed by
// estc's wire-format parser (parse_single_example, lib/Data/Example.cpp)
// and by protobuf's generated class (proto::Example::ParseFromString), the
// oracle. They must agree:
//   - protobuf rejects it  <=>  estc throws "record 0: not a valid
//     tf.train.Example (...)", one line;
//   - protobuf reads it: estc returns exactly the values TF's semantics
//     give for protobuf's message (computed here from the message), or
//     exactly the error they give (wrong kind, wrong count, missing).
// Two fixed specs cover every kind: one without required features (so
// that values are compared), one with them (so that errors are).
//
//===----------------------------------------------------------------------===//

#include "test/fuzz/FuzzSupport.h"

#include "lib/Data/Example.h"
#include "lib/Data/example.pb.h"

#include <google/protobuf/stubs/logging.h>

#include <cstring>

using namespace estc;
using namespace estc::data;
using namespace estc::fuzz;

namespace {

const FeatureSpecs &optionalSpecs() {
  static const FeatureSpecs specs = {
      {"f", VarLenFeature{DType::Float32}},
      {"i", VarLenFeature{DType::Int64}},
      {"s", VarLenFeature{DType::String}},
      {"a", FixedLenFeature{{2},
                            DType::Float32,
                            TensorValue::of<float>({2}, {0.5f, -0.5f})}},
      {"c", FixedLenFeature{{1},
                            DType::String,
                            TensorValue::of_strings({1}, {"d"})}},
      {"q",
       FixedLenSequenceFeature{
           {2}, DType::Int64, true, TensorValue::of<int64_t>({}, {7})}},
  };
  return specs;
}

const FeatureSpecs &requiredSpecs() {
  static const FeatureSpecs specs = {
      {"b", FixedLenFeature{{}, DType::Int64, {}}},
      {"r", FixedLenSequenceFeature{{}, DType::Float32, false, {}}},
      {"w", FixedLenSequenceFeature{{}, DType::String, true, {}}},
  };
  return specs;
}

const char *kindName(proto::Feature::KindCase k) {
  switch (k) {
  case proto::Feature::kBytesList:
    return "bytes_list";
  case proto::Feature::kFloatList:
    return "float_list";
  case proto::Feature::kInt64List:
    return "int64_list";
  default:
    return "?";
  }
}

/// A feature's values as a rank-1 tensor of `dtype` (empty when absent).
TensorValue valuesOf(const proto::Feature *f, DType dtype) {
  TensorValue t;
  t.dtype = dtype;
  int64_t n = 0;
  if (dtype == DType::String) {
    if (f)
      t.strings.assign(f->bytes_list().value().begin(),
                       f->bytes_list().value().end());
    n = static_cast<int64_t>(t.strings.size());
  } else if (dtype == DType::Float32) {
    if (f) {
      const auto &v = f->float_list().value();
      t.data.assign(reinterpret_cast<const char *>(v.data()),
                    static_cast<size_t>(v.size()) * 4);
    }
    n = static_cast<int64_t>(t.data.size() / 4);
  } else {
    if (f) {
      const auto &v = f->int64_list().value();
      t.data.assign(reinterpret_cast<const char *>(v.data()),
                    static_cast<size_t>(v.size()) * 8);
    }
    n = static_cast<int64_t>(t.data.size() / 8);
  }
  t.shape = {n};
  return t;
}

proto::Feature::KindCase kindOf(DType dtype) {
  return dtype == DType::Float32 ? proto::Feature::kFloatList
         : dtype == DType::Int64 ? proto::Feature::kInt64List
                                 : proto::Feature::kBytesList;
}

/// What parse_single_example must give for protobuf's message: the
/// element, or the error message.
struct Expected {
  Element element;
  std::string error;
};

Expected expect(const proto::Example &ex, const FeatureSpecs &specs) {
  const auto &map = ex.features().feature();
  std::map<std::string, Element> fields;
  auto fail = [](const std::string &name, const std::string &what) {
    return Expected{Element(), "record 0: feature '" + name + "' " + what};
  };
  for (const auto &[name, spec] : specs) {
    auto it = map.find(name);
    const proto::Feature *f =
        it != map.end() &&
                it->second.kind_case() != proto::Feature::KIND_NOT_SET
            ? &it->second
            : nullptr;
    DType dtype = std::visit([](const auto &s) { return s.dtype; }, spec);
    if (f && f->kind_case() != kindOf(dtype))
      return fail(name, std::string("is a ") + kindName(f->kind_case()) +
                            ", expected " + kindName(kindOf(dtype)));
    TensorValue values = valuesOf(f, dtype);
    int64_t count = values.shape[0];
    if (const auto *fixed = std::get_if<FixedLenFeature>(&spec)) {
      int64_t stride = 1;
      for (int64_t d : fixed->shape)
        stride *= d;
      if (!f) {
        if (!fixed->default_value)
          return fail(name, "is required but missing (no default_value)");
        values = *fixed->default_value;
      } else if (count != stride) {
        return fail(name, "has " + std::to_string(count) +
                              " values, expected " + std::to_string(stride) +
                              " for shape " + shape_string(fixed->shape));
      }
      values.shape = fixed->shape;
      fields.emplace(name, Element(values));
    } else if (std::holds_alternative<VarLenFeature>(spec)) {
      std::vector<int64_t> idx(static_cast<size_t>(count));
      for (int64_t i = 0; i < count; ++i)
        idx[static_cast<size_t>(i)] = i;
      fields.emplace(name, Element(SparseTensor::make(idx, values, {count})));
    } else {
      const auto &seq = std::get<FixedLenSequenceFeature>(spec);
      int64_t stride = 1;
      for (int64_t d : seq.shape)
        stride *= d;
      if (!f && !seq.allow_missing)
        return fail(name, "is required but missing (allow_missing is false)");
      if (count % stride != 0)
        return fail(name, "has " + std::to_string(count) +
                              " values, not a multiple of " +
                              std::to_string(stride) + " (steps of shape " +
                              shape_string(seq.shape) + ")");
      values.shape = {count / stride};
      values.shape.insert(values.shape.end(), seq.shape.begin(),
                          seq.shape.end());
      fields.emplace(name, Element(values));
    }
  }
  return Expected{Element::dict(std::move(fields)), ""};
}

std::string encoded(const Element &e) {
  std::string out;
  encode_element(e, out);
  return out;
}

void checkOneLine(const std::string &message) {
  if (message.find_first_of("\n\r") != std::string::npos)
    die("error is not one line: " + message);
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  // proto2 strings are not UTF-8 checked, but debug builds log about them.
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view record = bytesOf(data, size);
  proto::Example oracle;
  bool valid = oracle.ParseFromArray(data, static_cast<int>(size));
  for (const FeatureSpecs *specs :
       {&optionalSpecs(), &requiredSpecs(),
        static_cast<const FeatureSpecs *>(nullptr)}) {
    static const FeatureSpecs kNone;
    const FeatureSpecs &s = specs ? *specs : kNone;
    Element got;
    std::string error;
    try {
      got = parse_single_example(record, s);
    } catch (const DataError &e) {
      error = e.what();
      checkOneLine(error);
    }
    bool malformed =
        error.rfind("record 0: not a valid tf.train.Example (", 0) == 0;
    if (!valid) {
      if (!malformed)
        die("protobuf rejects the record, estc " +
            (error.empty() ? std::string("parses it") : "says: " + error));
      continue;
    }
    if (malformed)
      die("protobuf parses the record, estc says: " + error);
    Expected want = expect(oracle, s);
    if (error != want.error)
      die("estc says '" + error + "', TF's semantics '" + want.error + "'");
    if (error.empty() && encoded(got) != encoded(want.element))
      die("estc's values differ from protobuf's");
  }
  return 0;
}
