//===- Example.cpp - tf.train.Example: parsing and building -----------===//
//
// The parser makes one pass over each record, checking all of it as
// protobuf's parser checks it (tags, varints, lengths within their
// message, wire types, groups, nesting depth, packed lengths) and
// following protobuf's merge rules: a map entry seen again replaces the
// earlier one; a Feature's list fields of one kind append, a field of
// another kind starts over (oneof); repeated Features messages merge.
// When the map entry of a spec feature is complete, its list is checked
// (counted) and, if it fits the spec, decoded straight into the output
// column; a later entry of the same name undoes that. After the pass, each
// spec feature's final entry (or its absence) is settled against the spec:
// defaults, or the errors of a wrong kind, count or a missing feature.
//
// Only a record that scans is settled, so "not a valid tf.train.Example"
// is exactly protobuf's ParseFromString failing, and every other error is
// about a record protobuf reads.
//
//===----------------------------------------------------------------------===//

#include "lib/Data/Example.h"
#include "lib/Data/DatasetInternal.h"

#include "lib/Data/example.pb.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstring>
#include <functional>
#include <stdexcept>

namespace estc {
namespace data {

namespace {

using Byte = unsigned char;

/// The fields of Feature's oneof, by number.
enum Kind : uint8_t { kNone = 0, kBytes = 1, kFloat = 2, kInt64 = 3 };

const char *kindName(Kind kind) {
  switch (kind) {
  case kBytes:
    return "bytes_list";
  case kFloat:
    return "float_list";
  case kInt64:
    return "int64_list";
  case kNone:
    break;
  }
  return "feature without a list";
}

/// protobuf's default recursion limit (io::CodedInputStream): messages
/// and groups nested deeper than this do not parse.
constexpr int kRecursionLimit = 100;

// Tags of the fields the parser reads (field number << 3 | wire type).
constexpr uint32_t kLengthDelimited1 = (1 << 3) | 2; // features, entry, key..
constexpr uint32_t kEntryValue = (2 << 3) | 2;
constexpr uint32_t kInt64Varint = (1 << 3) | 0;
constexpr uint32_t kFloatFixed32 = (1 << 3) | 5;

// --- The wire format ------------------------------------------------------

/// A record that is not a valid Example: what is wrong, and where.
struct Malformed {
  const char *what;
  const Byte *at;
};

[[noreturn]] void malformed(const char *what, const Byte *at) {
  throw Malformed{what, at};
}

struct Span {
  const Byte *begin;
  const Byte *end;
};

/// Appends {begin, end} member by member: GCC builds a Span argument on
/// the stack with two 8-byte stores and copies it with one 16-byte load,
/// which cannot be forwarded from the stores (a stall that was a quarter
/// of the parse time).
inline void append(std::vector<Span> &spans, const Byte *begin,
                   const Byte *end) {
  spans.emplace_back();
  spans.back().begin = begin;
  spans.back().end = end;
}

/// A varint of at most MaxBytes bytes, bits beyond T's dropped (as
/// protobuf does); the slow path of readTag and readVarint.
template <typename T, int MaxBytes>
[[gnu::noinline]] T readVarSlow(const Byte *&p, const Byte *end,
                                const char *truncated, const char *tooLong) {
  const Byte *start = p;
  T v = 0;
  for (int i = 0; i < MaxBytes; ++i) {
    if (p == end)
      malformed(truncated, start);
    Byte b = *p++;
    v |= static_cast<T>(b & 0x7f) << (7 * i);
    if (b < 0x80)
      return v;
  }
  malformed(tooLong, start);
}

/// A tag: at most 5 bytes, bits beyond 32 dropped (as protobuf does).
[[gnu::always_inline]] inline uint32_t readTag(const Byte *&p,
                                               const Byte *end) {
  if (p < end && *p < 0x80)
    return *p++;
  return readVarSlow<uint32_t, 5>(p, end, "truncated tag",
                                  "tag longer than 5 bytes");
}

/// A varint of at most 10 bytes (bits beyond 64 dropped).
[[gnu::always_inline]] inline uint64_t readVarint(const Byte *&p,
                                                  const Byte *end) {
  if (p < end && *p < 0x80)
    return *p++;
  return readVarSlow<uint64_t, 10>(p, end, "truncated varint",
                                   "varint longer than 10 bytes");
}

[[gnu::noinline]] size_t readSizeSlow(const Byte *&p, const Byte *end) {
  const Byte *start = p;
  uint32_t v = 0;
  for (int i = 0;; ++i) {
    if (p == end)
      malformed("truncated length", start);
    Byte b = *p++;
    if (i == 4 && b >= 8)
      malformed("length of 2 GiB or more", start);
    v |= static_cast<uint32_t>(b & 0x7f) << (7 * i);
    if (b < 0x80)
      break;
  }
  if (v > static_cast<size_t>(end - p))
    malformed("length past the end of its message", start);
  return v;
}

/// The length of a length-delimited field: at most 5 bytes, below 2 GiB,
/// within the enclosing message.
[[gnu::always_inline]] inline size_t readSize(const Byte *&p, const Byte *end) {
  if (p < end && *p < 0x80 && *p <= end - p - 1)
    return *p++;
  return readSizeSlow(p, end);
}

inline void need(const Byte *p, const Byte *end, size_t n, const Byte *at) {
  if (static_cast<size_t>(end - p) < n)
    malformed("truncated fixed-size field", at);
}

/// Tag 0 or an end-group tag where a field must start.
inline void checkFieldTag(uint32_t tag, const Byte *at) {
  if (tag == 0)
    malformed("tag 0", at);
  if ((tag & 7) == 4)
    malformed("end-group tag outside a group", at);
}

void skipGroup(uint32_t field, const Byte *&p, const Byte *end, int depth,
               const Byte *at);

/// Skips a field the parser does not read (protobuf keeps it as an
/// unknown field); `depth`: of the message the field is in.
void skipField(uint32_t tag, const Byte *at, const Byte *&p, const Byte *end,
               int depth) {
  if ((tag >> 3) == 0)
    malformed("field number 0", at);
  switch (tag & 7) {
  case 0:
    readVarint(p, end);
    return;
  case 1:
    need(p, end, 8, at);
    p += 8;
    return;
  case 2:
    p += readSize(p, end);
    return;
  case 3:
    skipGroup(tag >> 3, p, end, depth, at);
    return;
  case 5:
    need(p, end, 4, at);
    p += 4;
    return;
  default:
    malformed("invalid wire type", at);
  }
}

void skipGroup(uint32_t field, const Byte *&p, const Byte *end, int depth,
               const Byte *at) {
  if (depth - 1 < 0)
    malformed("nested more than 100 deep", at);
  while (p < end) {
    const Byte *tagAt = p;
    uint32_t tag = readTag(p, end);
    if (tag == 0)
      malformed("tag 0", tagAt);
    if ((tag & 7) == 4) {
      if ((tag >> 3) != field)
        malformed("end-group tag of another group", tagAt);
      return;
    }
    skipField(tag, tagAt, p, end, depth - 1);
  }
  malformed("group without its end-group tag", at);
}

/// Checks a packed int64_list's varints; returns how many there are.
/// Eight bytes at a time: a varint ends at each byte below 0x80, and no
/// varint may have more than 9 bytes with the high bit set before its end.
uint64_t countPackedVarints(const Byte *p, const Byte *end) {
  constexpr uint64_t kHigh = 0x8080808080808080ull;
  uint64_t count = 0;
  int run = 0; // bytes of the varint so far, all with the high bit set
  for (; end - p >= 8; p += 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    uint64_t stops = ~w & kHigh; // the last bytes of varints
    if (stops == 0) {
      run += 8;
      if (run >= 10)
        malformed("varint longer than 10 bytes", p + 8 - run);
      continue;
    }
    // Little-endian: the word's first bytes are its low ones.
    int lead = __builtin_ctzll(stops) / 8;
    if (run + lead >= 10)
      malformed("varint longer than 10 bytes", p - run);
    count += static_cast<uint64_t>(__builtin_popcountll(stops));
    run = __builtin_clzll(stops) / 8;
  }
  for (; p < end; ++p) {
    if (*p < 0x80) {
      ++count;
      run = 0;
    } else if (++run == 10) {
      malformed("varint longer than 10 bytes", p - 9);
    }
  }
  if (run)
    malformed("truncated varint", end - run);
  return count;
}

/// Checks a BytesList, FloatList or Int64List message (depth: its own);
/// returns its number of values.
uint64_t checkList(Kind kind, Span list, int depth) {
  const Byte *p = list.begin, *end = list.end;
  if (depth < 0)
    malformed("nested more than 100 deep", p);
  uint64_t count = 0;
  while (p < end) {
    const Byte *at = p;
    uint32_t tag = readTag(p, end);
    if (tag == kLengthDelimited1) {
      size_t n = readSize(p, end);
      if (kind == kBytes)
        ++count;
      else if (kind == kFloat) {
        if (n % 4 != 0)
          malformed("packed float_list length not a multiple of 4", at);
        count += n / 4;
      } else {
        count += countPackedVarints(p, p + n);
      }
      p += n;
      continue;
    }
    if (kind == kFloat && tag == kFloatFixed32) {
      need(p, end, 4, at);
      p += 4;
      ++count;
      continue;
    }
    if (kind == kInt64 && tag == kInt64Varint) {
      readVarint(p, end);
      ++count;
      continue;
    }
    checkFieldTag(tag, at);
    skipField(tag, at, p, end, depth);
  }
  return count;
}

// --- Decoding checked lists -------------------------------------------------

/// Writes a checked FloatList's values to `out` (little-endian floats, as
/// on the wire); returns the end.
char *decodeFloats(Span list, char *out) {
  const Byte *p = list.begin, *end = list.end;
  while (p < end) {
    const Byte *at = p;
    uint32_t tag = readTag(p, end);
    if (tag == kLengthDelimited1) {
      size_t n = readSize(p, end);
      std::memcpy(out, p, n);
      out += n;
      p += n;
    } else if (tag == kFloatFixed32) {
      std::memcpy(out, p, 4);
      out += 4;
      p += 4;
    } else {
      skipField(tag, at, p, end, kRecursionLimit);
    }
  }
  return out;
}

inline char *putInt64(char *out, uint64_t v) {
  std::memcpy(out, &v, 8);
  return out + 8;
}

/// Decodes checked packed varints.
char *decodePackedVarints(const Byte *p, const Byte *end, char *out) {
  while (p < end) {
    uint64_t v = *p++;
    if (v >= 0x80) {
      v &= 0x7f;
      for (int shift = 7;; shift += 7) {
        Byte b = *p++;
        if (shift < 64)
          v |= static_cast<uint64_t>(b & 0x7f) << shift;
        if (b < 0x80)
          break;
      }
    }
    out = putInt64(out, v);
  }
  return out;
}

char *decodeInt64s(Span list, char *out) {
  const Byte *p = list.begin, *end = list.end;
  while (p < end) {
    const Byte *at = p;
    uint32_t tag = readTag(p, end);
    if (tag == kLengthDelimited1) {
      size_t n = readSize(p, end);
      out = decodePackedVarints(p, p + n, out);
      p += n;
    } else if (tag == kInt64Varint) {
      out = putInt64(out, readVarint(p, end));
    } else {
      skipField(tag, at, p, end, kRecursionLimit);
    }
  }
  return out;
}

std::string *decodeBytes(Span list, std::string *out) {
  const Byte *p = list.begin, *end = list.end;
  while (p < end) {
    const Byte *at = p;
    uint32_t tag = readTag(p, end);
    if (tag == kLengthDelimited1) {
      size_t n = readSize(p, end);
      out->assign(reinterpret_cast<const char *>(p), n);
      ++out;
      p += n;
    } else {
      skipField(tag, at, p, end, kRecursionLimit);
    }
  }
  return out;
}

// --- The spec ----------------------------------------------------------------

enum class SpecKind { Fixed, Var, Sequence };

struct Feature {
  std::string name;
  SpecKind spec = SpecKind::Fixed;
  DType dtype = DType::Float32;
  Kind kind = kFloat;
  std::vector<int64_t> shape;
  int64_t stride = 1; // elements of `shape`
  bool allowMissing = false;
  std::optional<TensorValue> defaultValue;
};

Kind kindOf(DType dtype, const std::string &name) {
  switch (dtype) {
  case DType::Float32:
    return kFloat;
  case DType::Int64:
    return kInt64;
  case DType::String:
    return kBytes;
  default:
    throw std::invalid_argument(
        "feature '" + detail::printable(name) + "': dtype " +
        dtype_name(dtype) +
        " is not one of tf.train.Example's (F32, I64, STRING)");
  }
}

int64_t checkedElements(const std::vector<int64_t> &shape,
                        const std::string &name) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      throw std::invalid_argument("feature '" + detail::printable(name) +
                                  "': shape " + shape_string(shape) +
                                  " has a negative dimension");
    if (__builtin_mul_overflow(n, d, &n) || n > (int64_t{1} << 40))
      throw std::invalid_argument("feature '" + detail::printable(name) +
                                  "': shape " + shape_string(shape) +
                                  " is too large");
  }
  return n;
}

void checkDefault(const Feature &f, int64_t want, const char *what) {
  const TensorValue &d = *f.defaultValue;
  if (d.dtype != f.dtype)
    throw std::invalid_argument("feature '" + detail::printable(f.name) +
                                "': default_value is " + d.spec().str() +
                                ", the feature is " + dtype_name(f.dtype));
  int64_t have =
      d.dtype == DType::String
          ? static_cast<int64_t>(d.strings.size())
          : static_cast<int64_t>(d.data.size() / dtype_size(d.dtype));
  if (have != d.num_elements() || have != want)
    throw std::invalid_argument("feature '" + detail::printable(f.name) +
                                "': default_value " + d.spec().str() +
                                " must have " + std::to_string(want) +
                                " elements (" + what + ")");
}

Feature compile(const std::string &name, const FeatureSpec &spec) {
  Feature f;
  f.name = name;
  if (const auto *fixed = std::get_if<FixedLenFeature>(&spec)) {
    f.spec = SpecKind::Fixed;
    f.dtype = fixed->dtype;
    f.shape = fixed->shape;
    f.defaultValue = fixed->default_value;
  } else if (const auto *var = std::get_if<VarLenFeature>(&spec)) {
    f.spec = SpecKind::Var;
    f.dtype = var->dtype;
  } else {
    const auto &seq = std::get<FixedLenSequenceFeature>(spec);
    f.spec = SpecKind::Sequence;
    f.dtype = seq.dtype;
    f.shape = seq.shape;
    f.allowMissing = seq.allow_missing;
    f.defaultValue = seq.default_value;
  }
  f.kind = kindOf(f.dtype, name);
  f.stride = checkedElements(f.shape, name);
  if (f.spec == SpecKind::Sequence && f.stride == 0)
    throw std::invalid_argument(
        "feature '" + detail::printable(name) + "': shape " +
        shape_string(f.shape) +
        " of a FixedLenSequenceFeature has no elements");
  if (f.defaultValue) {
    if (f.spec == SpecKind::Fixed)
      checkDefault(f, f.stride, ("shape " + shape_string(f.shape)).c_str());
    else
      checkDefault(f, 1, "a scalar that pads the sequences");
  }
  return f;
}

/// Spec feature names to their index: open addressing, as the scan looks
/// up every name of every record. Names of up to 16 bytes (nearly all)
/// are hashed and compared as two 8-byte words, without a call. (Guessing
/// from the last record's order does not pay: TF's Python writes a map in
/// hash order, different from record to record.)
class NameTable {
public:
  void build(const std::vector<Feature> &features) {
    size_t size = 16;
    while (size < 2 * features.size())
      size *= 2;
    mask_ = size - 1;
    table_.assign(size, -1);
    names_.clear();
    for (size_t i = 0; i < features.size(); ++i) {
      const std::string &name = features[i].name;
      names_.push_back({words(name), name.size()});
      size_t h = hash(name.size(), names_.back().words);
      while (table_[h] >= 0)
        h = (h + 1) & mask_;
      table_[h] = static_cast<int>(i);
    }
    longNames_.clear();
    for (const Feature &f : features)
      longNames_.push_back(f.name);
  }
  int find(std::string_view key) const {
    Words w = words(key);
    for (size_t h = hash(key.size(), w);; h = (h + 1) & mask_) {
      int i = table_[h];
      if (i < 0 || is(i, key, w))
        return i;
    }
  }

private:
  /// Two words that, with the size, are the whole of a name of up to 16
  /// bytes: overlapping loads from both ends, in registers (bytes copied
  /// to the stack and loaded as a word stall the load).
  struct Words {
    uint64_t first = 0, last = 0;
  };
  static Words words(std::string_view s) {
    const char *p = s.data();
    size_t n = s.size();
    auto load = [](const char *q, auto word) {
      std::memcpy(&word, q, sizeof(word));
      return static_cast<uint64_t>(word);
    };
    if (n >= 8)
      return {load(p, uint64_t{}), load(p + n - 8, uint64_t{})};
    if (n >= 4)
      return {load(p, uint32_t{}) | load(p + n - 4, uint32_t{}) << 32, 0};
    if (n > 0)
      return {
          static_cast<uint64_t>(static_cast<unsigned char>(p[0])) |
              static_cast<uint64_t>(static_cast<unsigned char>(p[n / 2])) << 8 |
              static_cast<uint64_t>(static_cast<unsigned char>(p[n - 1])) << 16,
          0};
    return {};
  }
  size_t hash(size_t size, Words w) const {
    uint64_t h = (w.first ^ (w.last * 0x9e3779b97f4a7c15ull) ^ size) *
                 0xff51afd7ed558ccdull;
    return static_cast<size_t>(h ^ (h >> 29)) & mask_;
  }
  bool is(int i, std::string_view key, Words w) const {
    const Name &n = names_[static_cast<size_t>(i)];
    return n.size == key.size() && n.words.first == w.first &&
           n.words.last == w.last &&
           (key.size() <= 16 || longNames_[static_cast<size_t>(i)] == key);
  }
  struct Name {
    Words words;
    size_t size = 0;
  };
  std::vector<int> table_;  // feature index or -1
  std::vector<Name> names_; // by feature index
  std::vector<std::string> longNames_;
  size_t mask_ = 0;
};

// --- Output columns ----------------------------------------------------------

/// One spec feature's output while a batch is parsed.
struct OutputColumn {
  TensorValue dense;                // FixedLen: the output, [B, shape...]
  std::string data;                 // Var/Sequence numeric values
  std::vector<std::string> strings; // Var/Sequence string values
  std::vector<int64_t> counts; // values (Var) or steps (Sequence) per record
};

size_t elementSize(DType dtype) {
  return dtype == DType::String ? 0 : dtype_size(dtype);
}

/// Decodes the checked lists[0, n) of `kind` to `num` (numeric) or `str`.
void decodeLists(Kind kind, const Span *lists, size_t n, char *num,
                 std::string *str) {
  for (const Span *l = lists; l != lists + n; ++l) {
    if (kind == kFloat)
      num = decodeFloats(*l, num);
    else if (kind == kInt64)
      num = decodeInt64s(*l, num);
    else
      str = decodeBytes(*l, str);
  }
}

/// Fills n elements at `num`/`str` with the padding value of a sequence.
void pad(const Feature &f, char *num, std::string *str, size_t n) {
  if (f.dtype == DType::String) {
    const std::string fill =
        f.defaultValue ? f.defaultValue->strings[0] : std::string();
    std::fill(str, str + n, fill);
    return;
  }
  size_t es = elementSize(f.dtype);
  if (!f.defaultValue) {
    std::memset(num, 0, n * es);
    return;
  }
  for (size_t i = 0; i < n; ++i)
    std::memcpy(num + i * es, f.defaultValue->data.data(), es);
}

// --- Scanning a record -------------------------------------------------------

/// Spans, the first one without a heap vector: nearly every map entry has
/// one value and nearly every Feature one list.
class Spans {
public:
  void clear() {
    n_ = 0;
    more_.clear();
  }
  void add(const Byte *begin, const Byte *end) {
    if (n_ == 0) {
      one_.begin = begin;
      one_.end = end;
    } else {
      if (n_ == 1)
        append(more_, one_.begin, one_.end);
      append(more_, begin, end);
    }
    ++n_;
  }
  const Span *data() const { return n_ <= 1 ? &one_ : more_.data(); }
  size_t size() const { return n_; }

private:
  Span one_{nullptr, nullptr};
  size_t n_ = 0;
  std::vector<Span> more_;
};

/// What the current record has of a spec feature: its final map entry.
struct Slot {
  uint64_t record = 0;   // scan number of the record that has it; 0: none
  Kind kind = kNone;     // of the final entry's Feature (kNone: no list)
  uint64_t count = 0;    // values in its lists
  bool decoded = false;  // its values are in the output
  bool appended = false; // ... appended to a Var/Sequence column
  size_t appendedFrom = 0;
};

/// Scans the records of a batch, decoding each spec feature's values
/// into its column as soon as its map entry is complete and fits the spec.
/// A later entry of the same name replaces them (protobuf's map keeps the
/// last), and whatever does not fit is decided after the scan, when the
/// final entry is known.
struct Scan {
  const std::vector<Feature> *features = nullptr;
  const NameTable *table = nullptr;
  std::vector<OutputColumn> *cols = nullptr;
  std::vector<Slot> slots;
  Spans values;        // the Feature messages of one map entry
  Spans lists;         // the lists of the entry's final kind
  uint64_t record = 0; // incremented per record
  size_t row = 0;      // the record's index in the batch

  /// The final entry of spec feature `i` in this record: its lists are
  /// `lists`, of `kind`, `count` values.
  void commit(size_t i, Kind kind, uint64_t count) {
    const Feature &f = (*features)[i];
    OutputColumn &col = (*cols)[i];
    Slot &s = slots[i];
    size_t es = elementSize(f.dtype);
    if (s.record == record && s.appended) {
      // An earlier entry of this name: its values go.
      if (es)
        col.data.resize(s.appendedFrom);
      else
        col.strings.resize(s.appendedFrom);
    }
    s.record = record;
    s.kind = kind;
    s.count = count;
    s.decoded = s.appended = false;
    if (kind != f.kind)
      return; // none (missing) or the wrong kind: after the scan
    if (f.spec == SpecKind::Fixed) {
      if (count != static_cast<uint64_t>(f.stride))
        return; // the wrong count: after the scan
      size_t at = row * static_cast<size_t>(f.stride);
      decodeLists(kind, lists.data(), lists.size(),
                  es ? col.dense.data.data() + at * es : nullptr,
                  es ? nullptr : col.dense.strings.data() + at);
      s.decoded = true;
      return;
    }
    if (f.spec == SpecKind::Sequence &&
        count % static_cast<uint64_t>(f.stride) != 0)
      return; // not whole steps: after the scan
    s.decoded = s.appended = true;
    if (es) {
      s.appendedFrom = col.data.size();
      col.data.resize(s.appendedFrom + count * es);
      decodeLists(kind, lists.data(), lists.size(),
                  col.data.data() + s.appendedFrom, nullptr);
    } else {
      s.appendedFrom = col.strings.size();
      col.strings.resize(s.appendedFrom + count);
      decodeLists(kind, lists.data(), lists.size(), nullptr,
                  col.strings.data() + s.appendedFrom);
    }
  }

  /// The Feature of one map entry: every value field of the entry is
  /// parsed into the same message (merged). `index`: the spec feature, or
  /// -1 for a name outside the spec (only checked).
  void feature(int depth, int index) {
    Kind kind = kNone;
    uint64_t count = 0;
    lists.clear();
    const Span *v = values.data();
    for (size_t k = 0; k < values.size(); ++k) {
      const Byte *p = v[k].begin, *end = v[k].end;
      if (depth < 0)
        malformed("nested more than 100 deep", p);
      while (p < end) {
        const Byte *at = p;
        uint32_t tag = readTag(p, end);
        uint32_t field = tag >> 3;
        if ((tag & 7) == 2 && field >= 1 && field <= 3) {
          size_t n = readSize(p, end);
          const Byte *list = p;
          p += n;
          auto listKind = static_cast<Kind>(field);
          if (listKind != kind) { // oneof: another kind clears the list
            kind = listKind;
            count = 0;
            lists.clear();
          }
          count += checkList(listKind, Span{list, p}, depth - 1);
          lists.add(list, p);
          continue;
        }
        checkFieldTag(tag, at);
        skipField(tag, at, p, end, depth);
      }
    }
    if (index >= 0)
      commit(static_cast<size_t>(index), kind, count);
  }

  /// One entry of Features' map: key (field 1) and value (field 2).
  void entry(const Byte *p, const Byte *end, int depth) {
    if (depth < 0)
      malformed("nested more than 100 deep", p);
    std::string_view key;
    values.clear();
    while (p < end) {
      const Byte *at = p;
      uint32_t tag = readTag(p, end);
      if (tag == kLengthDelimited1) {
        size_t n = readSize(p, end);
        key = {reinterpret_cast<const char *>(p), n};
        p += n;
      } else if (tag == kEntryValue) {
        size_t n = readSize(p, end);
        values.add(p, p + n);
        p += n;
      } else {
        checkFieldTag(tag, at);
        skipField(tag, at, p, end, depth);
      }
    }
    int index = table->find(key);
    feature(depth - 1, index);
  }

  void features_(const Byte *p, const Byte *end, int depth) {
    if (depth < 0)
      malformed("nested more than 100 deep", p);
    while (p < end) {
      const Byte *at = p;
      uint32_t tag = readTag(p, end);
      if (tag == kLengthDelimited1) {
        size_t n = readSize(p, end);
        entry(p, p + n, depth - 1);
        p += n;
        continue;
      }
      checkFieldTag(tag, at);
      skipField(tag, at, p, end, depth);
    }
  }

  /// Scans one serialized Example (record `r` of the batch); Malformed
  /// when protobuf would not parse it.
  void example(std::string_view bytes, size_t r) {
    ++record;
    row = r;
    const auto *p = reinterpret_cast<const Byte *>(bytes.data());
    const Byte *end = p + bytes.size();
    if (bytes.size() > static_cast<size_t>(INT_MAX))
      malformed("larger than 2 GiB", p);
    while (p < end) {
      const Byte *at = p;
      uint32_t tag = readTag(p, end);
      if (tag == kLengthDelimited1) {
        size_t n = readSize(p, end);
        features_(p, p + n, kRecursionLimit - 1);
        p += n;
        continue;
      }
      checkFieldTag(tag, at);
      skipField(tag, at, p, end, kRecursionLimit);
    }
  }
};

} // namespace

// --- ExampleParser -----------------------------------------------------------

struct ExampleParser::Impl {
  FeatureSpecs specs;
  std::vector<Feature> features; // in name order
  NameTable table;

  std::vector<Value> parse(const std::vector<std::string_view> &records) const;
  void settle(const Feature &f, OutputColumn &col, const Slot &slot,
              bool present, size_t r) const;
  Value finish(const Feature &f, OutputColumn &col, size_t batch) const;
};

[[noreturn]] static void recordError(size_t r, const Feature &f,
                                     const std::string &what) {
  throw DataError("record " + std::to_string(r) + ": feature '" +
                  detail::printable(f.name) + "' " + what);
}

/// After record r's scan: the spec feature's final entry (or none) against
/// the spec; its values were decoded during the scan when they fit.
void ExampleParser::Impl::settle(const Feature &f, OutputColumn &col,
                                 const Slot &slot, bool present,
                                 size_t r) const {
  if (present && slot.kind != f.kind)
    recordError(r, f,
                std::string("is a ") + kindName(slot.kind) + ", expected " +
                    kindName(f.kind));
  switch (f.spec) {
  case SpecKind::Fixed: {
    if (present && slot.decoded)
      return;
    if (present)
      recordError(r, f,
                  "has " + std::to_string(slot.count) + " values, expected " +
                      std::to_string(f.stride) + " for shape " +
                      shape_string(f.shape));
    if (!f.defaultValue)
      recordError(r, f, "is required but missing (no default_value)");
    size_t at = r * static_cast<size_t>(f.stride);
    if (f.dtype == DType::String)
      std::copy(f.defaultValue->strings.begin(), f.defaultValue->strings.end(),
                col.dense.strings.begin() + static_cast<ptrdiff_t>(at));
    else
      std::memcpy(col.dense.data.data() + at * dtype_size(f.dtype),
                  f.defaultValue->data.data(), f.defaultValue->data.size());
    return;
  }
  case SpecKind::Var:
    col.counts[r] = present ? static_cast<int64_t>(slot.count) : 0;
    return;
  case SpecKind::Sequence:
    if (!present) {
      if (!f.allowMissing)
        recordError(r, f, "is required but missing (allow_missing is false)");
      col.counts[r] = 0;
      return;
    }
    if (!slot.decoded)
      recordError(r, f,
                  "has " + std::to_string(slot.count) +
                      " values, not a multiple of " + std::to_string(f.stride) +
                      " (steps of shape " + shape_string(f.shape) + ")");
    col.counts[r] = static_cast<int64_t>(slot.count) / f.stride;
    return;
  }
}

Value ExampleParser::Impl::finish(const Feature &f, OutputColumn &col,
                                  size_t batch) const {
  const auto b = static_cast<int64_t>(batch);
  size_t es = elementSize(f.dtype);
  switch (f.spec) {
  case SpecKind::Fixed:
    return std::move(col.dense);
  case SpecKind::Var: {
    int64_t nnz = 0, width = 0;
    for (int64_t c : col.counts) {
      nnz += c;
      width = std::max(width, c);
    }
    SparseTensor s;
    s.indices.dtype = DType::Int64;
    s.indices.shape = {nnz, 2};
    s.indices.data.resize(static_cast<size_t>(nnz) * 2 * 8);
    char *out = s.indices.data.data();
    for (int64_t row = 0; row < b; ++row)
      for (int64_t i = 0; i < col.counts[static_cast<size_t>(row)]; ++i) {
        out = putInt64(out, static_cast<uint64_t>(row));
        out = putInt64(out, static_cast<uint64_t>(i));
      }
    s.values.dtype = f.dtype;
    s.values.shape = {nnz};
    s.values.data = std::move(col.data);
    s.values.strings = std::move(col.strings);
    s.dense_shape = {b, width};
    return s;
  }
  case SpecKind::Sequence: {
    int64_t steps = 0;
    for (int64_t c : col.counts)
      steps = std::max(steps, c);
    TensorValue t;
    t.dtype = f.dtype;
    t.shape = {b, steps};
    t.shape.insert(t.shape.end(), f.shape.begin(), f.shape.end());
    size_t rowElems = static_cast<size_t>(steps * f.stride);
    size_t total = batch * rowElems;
    if (es)
      t.data.resize(total * es);
    else
      t.strings.resize(total);
    size_t from = 0; // elements of the column consumed
    for (size_t row = 0; row < batch; ++row) {
      size_t n = static_cast<size_t>(col.counts[row] * f.stride);
      size_t at = row * rowElems;
      if (es) {
        std::memcpy(t.data.data() + at * es, col.data.data() + from * es,
                    n * es);
        pad(f, t.data.data() + (at + n) * es, nullptr, rowElems - n);
      } else {
        std::move(col.strings.begin() + static_cast<ptrdiff_t>(from),
                  col.strings.begin() + static_cast<ptrdiff_t>(from + n),
                  t.strings.begin() + static_cast<ptrdiff_t>(at));
        pad(f, nullptr, t.strings.data() + at + n, rowElems - n);
      }
      from += n;
    }
    return t;
  }
  }
  return TensorValue();
}

std::vector<Value>
ExampleParser::Impl::parse(const std::vector<std::string_view> &records) const {
  const size_t batch = records.size();
  std::vector<OutputColumn> cols(features.size());
  for (size_t i = 0; i < features.size(); ++i) {
    const Feature &f = features[i];
    OutputColumn &c = cols[i];
    if (f.spec == SpecKind::Fixed) {
      c.dense.dtype = f.dtype;
      c.dense.shape = {static_cast<int64_t>(batch)};
      c.dense.shape.insert(c.dense.shape.end(), f.shape.begin(), f.shape.end());
      size_t n = batch * static_cast<size_t>(f.stride);
      if (f.dtype == DType::String)
        c.dense.strings.resize(n);
      else
        c.dense.data.resize(n * dtype_size(f.dtype));
    } else {
      c.counts.resize(batch);
    }
  }
  Scan scan;
  scan.features = &features;
  scan.table = &table;
  scan.cols = &cols;
  scan.slots.resize(features.size());
  for (size_t r = 0; r < batch; ++r) {
    try {
      scan.example(records[r], r);
    } catch (const Malformed &m) {
      auto begin = reinterpret_cast<const Byte *>(records[r].data());
      throw DataError("record " + std::to_string(r) +
                      ": not a valid tf.train.Example (" + m.what +
                      " at byte " + std::to_string(m.at - begin) + ")");
    }
    for (size_t i = 0; i < features.size(); ++i) {
      const Slot &slot = scan.slots[i];
      bool present = slot.record == scan.record && slot.kind != kNone;
      settle(features[i], cols[i], slot, present, r);
    }
  }
  std::vector<Value> out;
  out.reserve(features.size());
  for (size_t i = 0; i < features.size(); ++i)
    out.push_back(finish(features[i], cols[i], batch));
  return out;
}

ExampleParser::ExampleParser(FeatureSpecs specs)
    : impl_(std::make_unique<Impl>()) {
  impl_->specs = std::move(specs);
  for (const auto &[name, spec] : impl_->specs)
    impl_->features.push_back(compile(name, spec));
  impl_->table.build(impl_->features);
}

ExampleParser::~ExampleParser() = default;
ExampleParser::ExampleParser(ExampleParser &&) noexcept = default;
ExampleParser &ExampleParser::operator=(ExampleParser &&) noexcept = default;

const FeatureSpecs &ExampleParser::specs() const { return impl_->specs; }

Element ExampleParser::parse_example(
    const std::vector<std::string_view> &serialized) const {
  std::vector<Value> values = impl_->parse(serialized);
  std::map<std::string, Element> fields;
  for (size_t i = 0; i < values.size(); ++i)
    fields.emplace(impl_->features[i].name, Element(std::move(values[i])));
  return Element::dict(std::move(fields));
}

Element ExampleParser::parse_example(const TensorValue &serialized) const {
  if (serialized.dtype != DType::String || serialized.shape.size() != 1 ||
      static_cast<int64_t>(serialized.strings.size()) != serialized.shape[0])
    throw std::invalid_argument(
        "parse_example: serialized must be STRING[B], not " +
        serialized.spec().str());
  std::vector<std::string_view> views(serialized.strings.begin(),
                                      serialized.strings.end());
  return parse_example(views);
}

Element ExampleParser::parse_single_example(std::string_view serialized) const {
  std::vector<Value> values = impl_->parse({serialized});
  std::map<std::string, Element> fields;
  for (size_t i = 0; i < values.size(); ++i) {
    const Feature &f = impl_->features[i];
    Value &v = values[i];
    if (auto *t = std::get_if<TensorValue>(&v)) {
      t->shape.erase(t->shape.begin()); // the batch of one
    } else {
      // (0, i) indices become (i).
      auto &s = std::get<SparseTensor>(v);
      int64_t nnz = s.nnz();
      std::string rank1(static_cast<size_t>(nnz) * 8, '\0');
      for (int64_t k = 0; k < nnz; ++k)
        std::memcpy(&rank1[static_cast<size_t>(k) * 8],
                    &s.indices.data[static_cast<size_t>(2 * k + 1) * 8], 8);
      s.indices.data = std::move(rank1);
      s.indices.shape = {nnz, 1};
      s.dense_shape.erase(s.dense_shape.begin());
    }
    fields.emplace(f.name, Element(std::move(v)));
  }
  return Element::dict(std::move(fields));
}

ElementSpec ExampleParser::element_spec(bool batched) const {
  std::map<std::string, ElementSpec> fields;
  for (const Feature &f : impl_->features) {
    ValueSpec s;
    s.dtype = f.dtype;
    if (batched)
      s.shape.push_back(-1);
    if (f.spec == SpecKind::Var) {
      s.sparse = true;
      s.shape.push_back(-1);
    } else {
      if (f.spec == SpecKind::Sequence)
        s.shape.push_back(-1);
      s.shape.insert(s.shape.end(), f.shape.begin(), f.shape.end());
    }
    fields.emplace(f.name, ElementSpec(s));
  }
  return ElementSpec::dict(std::move(fields));
}

Element parse_example(const std::vector<std::string_view> &serialized,
                      const FeatureSpecs &specs) {
  return ExampleParser(specs).parse_example(serialized);
}

Element parse_example(const TensorValue &serialized,
                      const FeatureSpecs &specs) {
  return ExampleParser(specs).parse_example(serialized);
}

Element parse_single_example(std::string_view serialized,
                             const FeatureSpecs &specs) {
  return ExampleParser(specs).parse_single_example(serialized);
}

// --- ExampleBuilder ----------------------------------------------------------

ExampleBuilder::ExampleBuilder()
    : example_(std::make_unique<proto::Example>()) {}
ExampleBuilder::~ExampleBuilder() = default;
ExampleBuilder::ExampleBuilder(const ExampleBuilder &other)
    : example_(std::make_unique<proto::Example>(*other.example_)) {}
ExampleBuilder &ExampleBuilder::operator=(const ExampleBuilder &other) {
  *example_ = *other.example_;
  return *this;
}

static proto::Feature &featureNamed(proto::Example &example,
                                    const std::string &name) {
  proto::Feature &f = (*example.mutable_features()->mutable_feature())[name];
  f.Clear();
  return f;
}

ExampleBuilder &ExampleBuilder::add_float(const std::string &name,
                                          std::vector<float> values) {
  featureNamed(*example_, name)
      .mutable_float_list()
      ->mutable_value()
      ->Add(values.begin(), values.end());
  return *this;
}

ExampleBuilder &ExampleBuilder::add_int64(const std::string &name,
                                          std::vector<int64_t> values) {
  featureNamed(*example_, name)
      .mutable_int64_list()
      ->mutable_value()
      ->Add(values.begin(), values.end());
  return *this;
}

ExampleBuilder &ExampleBuilder::add_bytes(const std::string &name,
                                          std::vector<std::string> values) {
  auto *list = featureNamed(*example_, name).mutable_bytes_list();
  for (std::string &v : values)
    list->add_value(std::move(v));
  return *this;
}

std::string ExampleBuilder::serialize() const {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    example_->SerializeToCodedStream(&coded);
  }
  return out;
}

} // namespace data
} // namespace estc
