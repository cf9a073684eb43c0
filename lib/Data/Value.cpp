//===- Value.cpp - Values and elements of input pipelines ---------------===//

#include "lib/Data/Value.h"
#include "lib/Data/DatasetInternal.h"

#include <cstdio>
#include <cstring>

namespace estc {
namespace data {

std::string detail::printable(std::string_view s) {
  std::string out;
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "\\x%02X", u);
      out += hex;
    } else {
      out += c;
    }
  }
  return out;
}

SparseTensor SparseTensor::make(std::vector<int64_t> indices,
                                TensorValue values,
                                std::vector<int64_t> dense_shape) {
  int64_t rank = static_cast<int64_t>(dense_shape.size());
  int64_t nnz = values.num_elements();
  if (values.shape.size() != 1 ||
      static_cast<int64_t>(indices.size()) != nnz * rank)
    throw std::invalid_argument(
        "SparseTensor::make: " + std::to_string(indices.size()) +
        " index numbers for " + values.spec().str() + " values of rank " +
        std::to_string(rank));
  SparseTensor s;
  s.indices = TensorValue::of<int64_t>({nnz, rank}, indices);
  s.values = std::move(values);
  s.dense_shape = std::move(dense_shape);
  return s;
}

void SparseTensor::validate(const std::string &what) const {
  int64_t r = rank();
  if (indices.dtype != DType::Int64 || indices.shape.size() != 2 ||
      indices.shape[1] != r || values.shape.size() != 1 ||
      values.shape[0] != indices.shape[0])
    throw DataError(what + ": sparse tensor with indices " +
                    indices.spec().str() + ", values " + values.spec().str() +
                    " and rank " + std::to_string(r) + " is malformed");
  std::vector<int64_t> idx = index_values();
  for (size_t i = 0; i < idx.size(); ++i) {
    int64_t d = dense_shape[i % static_cast<size_t>(r)];
    if (idx[i] < 0 || idx[i] >= d)
      throw DataError(what + ": sparse index " + std::to_string(idx[i]) +
                      " of value " + std::to_string(i / r) +
                      " is outside dimension " +
                      std::to_string(i % static_cast<size_t>(r)) + " of size " +
                      std::to_string(d));
  }
}

TensorValue SparseTensor::to_dense() const {
  validate("SparseTensor::to_dense");
  TensorValue out;
  out.dtype = values.dtype;
  out.shape = dense_shape;
  int64_t n = out.num_elements();
  if (out.dtype == DType::String)
    out.strings.assign(static_cast<size_t>(n), "");
  else
    out.data.assign(static_cast<size_t>(n) * dtype_size(out.dtype), '\0');
  std::vector<int64_t> idx = index_values();
  int64_t r = rank();
  size_t esize = out.dtype == DType::String ? 0 : dtype_size(out.dtype);
  for (int64_t v = 0; v < nnz(); ++v) {
    int64_t flat = 0;
    for (int64_t k = 0; k < r; ++k)
      flat = flat * dense_shape[k] + idx[v * r + k];
    if (out.dtype == DType::String)
      out.strings[flat] = values.strings[v];
    else
      std::memcpy(&out.data[flat * esize], &values.data[v * esize], esize);
  }
  return out;
}

std::string ValueSpec::str() const {
  return (sparse ? "sparse " : "") + VariableSpec{dtype, shape}.str();
}

ValueSpec spec_of(const Value &value) {
  if (const auto *t = std::get_if<TensorValue>(&value))
    return {t->dtype, t->shape, false};
  const auto &s = std::get<SparseTensor>(value);
  return {s.values.dtype, s.dense_shape, true};
}

DType dtype_of(const Value &value) {
  if (const auto *t = std::get_if<TensorValue>(&value))
    return t->dtype;
  return std::get<SparseTensor>(value).values.dtype;
}

const TensorValue &tensor(const Element &leaf) {
  const auto *t = std::get_if<TensorValue>(&leaf.leaf());
  if (!t)
    throw std::invalid_argument("element: a sparse value where a dense "
                                "tensor was expected");
  return *t;
}

const SparseTensor &sparse(const Element &leaf) {
  const auto *s = std::get_if<SparseTensor>(&leaf.leaf());
  if (!s)
    throw std::invalid_argument("element: a dense value where a sparse "
                                "tensor was expected");
  return *s;
}

ElementSpec spec_of(const Element &element) {
  return element.map(
      [](const std::string &, const Value &v) { return spec_of(v); });
}

namespace {
ElementSpec compatible(const ElementSpec &a, const ElementSpec &b,
                       const std::string &path) {
  auto fail = [&](const std::string &why) -> ElementSpec {
    throw std::invalid_argument("element spec" +
                                (path.empty() ? "" : " at '" + path + "'") +
                                ": " + why);
  };
  if (!a.same_structure(b))
    return fail("structures differ: " + to_string(a) + " vs " + to_string(b));
  switch (a.kind()) {
  case ElementSpec::Kind::Leaf: {
    const ValueSpec &x = a.leaf(), &y = b.leaf();
    if (x.dtype != y.dtype || x.sparse != y.sparse ||
        x.shape.size() != y.shape.size())
      return fail(x.str() + " vs " + y.str());
    ValueSpec out = x;
    for (size_t i = 0; i < out.shape.size(); ++i)
      if (x.shape[i] != y.shape[i])
        out.shape[i] = -1;
    return out;
  }
  case ElementSpec::Kind::Tuple: {
    std::vector<ElementSpec> items;
    for (size_t i = 0; i < a.items().size(); ++i)
      items.push_back(
          compatible(a.items()[i], b.items()[i],
                     path + (path.empty() ? "" : "/") + std::to_string(i)));
    return ElementSpec::tuple(std::move(items));
  }
  case ElementSpec::Kind::Dict: {
    std::map<std::string, ElementSpec> fields;
    for (const auto &[k, v] : a.fields())
      fields.emplace(k, compatible(v, b.fields().at(k),
                                   path + (path.empty() ? "" : "/") + k));
    return ElementSpec::dict(std::move(fields));
  }
  }
  return a;
}
} // namespace

ElementSpec most_specific_compatible(const ElementSpec &a,
                                     const ElementSpec &b) {
  return compatible(a, b, "");
}

std::string to_string(const ElementSpec &spec) {
  switch (spec.kind()) {
  case ElementSpec::Kind::Leaf:
    return spec.leaf().str();
  case ElementSpec::Kind::Tuple: {
    std::string s = "(";
    for (size_t i = 0; i < spec.items().size(); ++i)
      s += (i ? ", " : "") + to_string(spec.items()[i]);
    return s + (spec.items().size() == 1 ? ",)" : ")");
  }
  case ElementSpec::Kind::Dict: {
    std::string s = "{";
    bool first = true;
    for (const auto &[k, v] : spec.fields()) {
      s += (first ? "" : ", ") + k + ": " + to_string(v);
      first = false;
    }
    return s + "}";
  }
  }
  return "";
}

//===----------------------------------------------------------------------===//
// Binary encoding: a tag byte ('L' dense leaf, 'S' sparse leaf, 'T' tuple,
// 'D' dict), then for T/D a varint count (D: each key as varint length +
// bytes before its element); a dense tensor is dtype byte, varint rank,
// zigzag-free varint dims, then the raw data (numeric) or each string as
// varint length + bytes.
//===----------------------------------------------------------------------===//

namespace {
void putVarint(std::string &out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

struct Decoder {
  std::string_view bytes;
  size_t &pos;
  const std::string &what;

  [[noreturn]] void fail(const std::string &why) const {
    throw DataError(what + ": corrupt element encoding at byte " +
                    std::to_string(pos) + ": " + why);
  }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos >= bytes.size())
        fail("truncated number");
      auto b = static_cast<uint8_t>(bytes[pos++]);
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80))
        return v;
    }
    fail("number longer than 10 bytes");
  }
  uint8_t byte() {
    if (pos >= bytes.size())
      fail("truncated");
    return static_cast<uint8_t>(bytes[pos++]);
  }
  std::string_view take(uint64_t n) {
    if (n > bytes.size() - pos)
      fail("a length of " + std::to_string(n) + " runs past the end");
    std::string_view s = bytes.substr(pos, n);
    pos += n;
    return s;
  }
};

void encodeTensor(const TensorValue &t, std::string &out) {
  out.push_back(static_cast<char>(t.dtype));
  putVarint(out, t.shape.size());
  for (int64_t d : t.shape)
    putVarint(out, static_cast<uint64_t>(d));
  if (t.dtype == DType::String) {
    for (const std::string &s : t.strings) {
      putVarint(out, s.size());
      out += s;
    }
  } else {
    out += t.data;
  }
}

TensorValue decodeTensor(Decoder &d) {
  uint8_t dt = d.byte();
  if (dt < static_cast<uint8_t>(DType::Float32) ||
      dt > static_cast<uint8_t>(DType::String))
    d.fail("unknown dtype " + std::to_string(dt));
  auto dtype = static_cast<DType>(dt);
  uint64_t rank = d.varint();
  if (rank > 32)
    d.fail("rank " + std::to_string(rank));
  std::vector<int64_t> shape;
  uint64_t n = 1;
  for (uint64_t i = 0; i < rank; ++i) {
    uint64_t dim = d.varint();
    // Every dimension bounded (a zero elsewhere must not let one be huge:
    // unbatch makes a row per index of the first).
    if (dim > (uint64_t(1) << 31) || (dim && n > (uint64_t(1) << 40) / dim))
      d.fail("dimension " + std::to_string(dim) + " too large");
    n *= dim;
    shape.push_back(static_cast<int64_t>(dim));
  }
  if (dtype == DType::String) {
    if (n > d.bytes.size() - d.pos)
      d.fail(std::to_string(n) + " strings in " +
             std::to_string(d.bytes.size() - d.pos) + " bytes");
    std::vector<std::string> strings;
    strings.reserve(n);
    for (uint64_t i = 0; i < n; ++i)
      strings.emplace_back(d.take(d.varint()));
    return TensorValue::of_strings(std::move(shape), std::move(strings));
  }
  uint64_t size = dtype_size(dtype);
  if (n > (d.bytes.size() - d.pos) / size)
    d.fail("tensor data runs past the end");
  return TensorValue::from_bytes(dtype, std::move(shape),
                                 std::string(d.take(n * size)));
}

Element decode(Decoder &d, int depth) {
  if (depth > 64)
    d.fail("nested deeper than 64");
  switch (d.byte()) {
  case 'L':
    return Element(decodeTensor(d));
  case 'S': {
    SparseTensor s;
    s.indices = decodeTensor(d);
    s.values = decodeTensor(d);
    uint64_t rank = d.varint();
    if (rank > 32)
      d.fail("sparse rank " + std::to_string(rank));
    for (uint64_t i = 0; i < rank; ++i) {
      uint64_t dim = d.varint();
      if (dim > (uint64_t(1) << 31))
        d.fail("sparse dimension " + std::to_string(dim) + " too large");
      s.dense_shape.push_back(static_cast<int64_t>(dim));
    }
    s.validate(d.what);
    return Element(std::move(s));
  }
  case 'T': {
    uint64_t n = d.varint();
    if (n > d.bytes.size() - d.pos)
      d.fail("tuple of " + std::to_string(n) + " items");
    std::vector<Element> items;
    for (uint64_t i = 0; i < n; ++i)
      items.push_back(decode(d, depth + 1));
    return Element::tuple(std::move(items));
  }
  case 'D': {
    uint64_t n = d.varint();
    if (n > d.bytes.size() - d.pos)
      d.fail("dict of " + std::to_string(n) + " fields");
    std::map<std::string, Element> fields;
    for (uint64_t i = 0; i < n; ++i) {
      std::string key(d.take(d.varint()));
      fields[key] = decode(d, depth + 1);
    }
    return Element::dict(std::move(fields));
  }
  default:
    --d.pos;
    d.fail("unknown tag");
  }
}
} // namespace

void encode_element(const Element &e, std::string &out) {
  switch (e.kind()) {
  case Element::Kind::Leaf:
    if (const auto *t = std::get_if<TensorValue>(&e.leaf())) {
      out.push_back('L');
      encodeTensor(*t, out);
    } else {
      const auto &s = std::get<SparseTensor>(e.leaf());
      out.push_back('S');
      encodeTensor(s.indices, out);
      encodeTensor(s.values, out);
      putVarint(out, s.dense_shape.size());
      for (int64_t d : s.dense_shape)
        putVarint(out, static_cast<uint64_t>(d));
    }
    return;
  case Element::Kind::Tuple:
    out.push_back('T');
    putVarint(out, e.items().size());
    for (const Element &i : e.items())
      encode_element(i, out);
    return;
  case Element::Kind::Dict:
    out.push_back('D');
    putVarint(out, e.fields().size());
    for (const auto &[k, v] : e.fields()) {
      putVarint(out, k.size());
      out += k;
      encode_element(v, out);
    }
    return;
  }
}

Element decode_element(std::string_view bytes, size_t &pos,
                       const std::string &what) {
  Decoder d{bytes, pos, what};
  return decode(d, 0);
}

} // namespace data
} // namespace estc
