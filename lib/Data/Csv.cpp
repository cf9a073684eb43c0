//===- Csv.cpp - CSV records: decode_csv, CsvDataset's reader, inference -===//
//
// Three parts: TF's number syntax (parse_int32 ... parse_float64), the two
// record splitters TF has (decode_csv's on one record in memory, and
// CsvDataset's on a stream, where a record may span lines and buffers),
// and make_csv_dataset's header and type inference. Fields are string
// views into the record or the read buffer; only a quoted field with a
// doubled quote is copied (to unescape it), so a record costs no
// allocation beyond what the output tensors hold.
//
//===----------------------------------------------------------------------===//

#include "lib/Data/Csv.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>
#include <stdexcept>
#include <system_error>

namespace estc {
namespace data {

//===----------------------------------------------------------------------===//
// Numbers
//===----------------------------------------------------------------------===//

namespace {

/// C's isspace in the "C" locale, which TF's parsers use.
inline bool isSpace(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }
inline bool isDigit(char c) { return c >= '0' && c <= '9'; }
inline bool isHexDigit(char c) {
  return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
inline char lower(char c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i]))
      return false;
  return true;
}

/// strings::safe_strto32/64: spaces around, an optional '-', decimal
/// digits, no overflow.
template <typename T> bool parseInteger(std::string_view s, T &out) {
  using U = std::make_unsigned_t<T>;
  size_t i = 0, n = s.size();
  while (i < n && isSpace(s[i]))
    ++i;
  bool negative = i < n && s[i] == '-';
  if (negative)
    ++i;
  if (i >= n || !isDigit(s[i]))
    return false;
  while (i < n && s[i] == '0') // leading zeros do not count toward overflow
    ++i;
  size_t first = i;
  uint64_t v = 0;
  while (i < n && isDigit(s[i]))
    v = v * 10 + static_cast<unsigned>(s[i++] - '0');
  // 19 digits never overflow uint64; beyond that the value is out of range
  // for int64 anyway.
  if (i - first > 19)
    return false;
  while (i < n && isSpace(s[i]))
    ++i;
  if (i != n)
    return false;
  uint64_t limit =
      static_cast<uint64_t>(std::numeric_limits<T>::max()) + (negative ? 1 : 0);
  if (v > limit)
    return false;
  // -(v) without signed overflow for v == |min|.
  out = negative ? (v == 0 ? T(0) : static_cast<T>(-static_cast<T>(v - 1) - 1))
                 : static_cast<T>(static_cast<U>(v));
  return true;
}

/// Whether a decimal number that std::from_chars found out of range is
/// too large (rather than too small): its decimal exponent is positive.
bool isHugeDecimal(const char *p, const char *end) {
  int64_t magnitude = 0; // digits before the point, or -(zeros after it)
  while (p < end && *p == '0')
    ++p;
  while (p < end && isDigit(*p)) {
    ++magnitude;
    ++p;
  }
  if (p < end && *p == '.') {
    ++p;
    if (magnitude == 0)
      while (p < end && *p == '0') {
        --magnitude;
        ++p;
      }
    while (p < end && isDigit(*p))
      ++p;
  }
  int64_t exponent = 0;
  if (p < end && (*p == 'e' || *p == 'E')) {
    ++p;
    bool negative = p < end && *p == '-';
    if (p < end && (*p == '-' || *p == '+'))
      ++p;
    while (p < end && isDigit(*p)) {
      if (exponent < 1000000) // saturates: the sign is what matters
        exponent = exponent * 10 + (*p - '0');
      ++p;
    }
    if (negative)
      exponent = -exponent;
  }
  return magnitude + exponent > 0;
}

/// Clinger's fast path: "digits[.digits]" whose digits, without the point,
/// are an integer m exactly representable in T (m < 2^24 for float, 2^53
/// for double) with at most 10 (float) or 22 (double) of them after the
/// point. Then m and 10^k are exact in T and m / 10^k is one correctly
/// rounded IEEE division: the value std::from_chars would give, several
/// times faster. False (and nothing set) for anything else.
template <typename T>
inline bool fastDecimal(const char *p, const char *end, T &out) {
  constexpr uint64_t kMaxMantissa =
      std::is_same_v<T, float> ? (uint64_t(1) << 24) : (uint64_t(1) << 53);
  constexpr int kMaxFraction = std::is_same_v<T, float> ? 10 : 22;
  static constexpr T kPowers[] = {
      1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
      1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  uint64_t m = 0;
  int digits = 0, fraction = 0;
  const char *q = p;
  for (; q < end && isDigit(*q); ++q, ++digits)
    m = m * 10 + static_cast<unsigned>(*q - '0');
  if (q < end && *q == '.') {
    for (++q; q < end && isDigit(*q); ++q, ++digits, ++fraction)
      m = m * 10 + static_cast<unsigned>(*q - '0');
  }
  // 19 digits cannot overflow m; more, an exponent or other text: the
  // general path.
  if (q != end || digits == 0 || digits > 19 || m > kMaxMantissa ||
      fraction > kMaxFraction)
    return false;
  out = static_cast<T>(m) / kPowers[fraction];
  return true;
}

/// strings::safe_strtof/d, which use double-conversion with leading and
/// trailing spaces, hexadecimal integers and case-insensitive "inf"/"nan"
/// allowed, and reject a string of 32 characters or more (TF's
/// kFastToBufferSize).
template <typename T> bool parseFloating(std::string_view s, T &out) {
  if (s.size() >= 32)
    return false;
  const char *p = s.data(), *end = s.data() + s.size();
  while (p < end && isSpace(*p))
    ++p;
  while (end > p && isSpace(end[-1]))
    --end;
  if (p == end) {
    // double-conversion's "empty string" value: blanks alone parse as 0.
    out = 0;
    return true;
  }
  bool negative = *p == '-';
  if (*p == '-' || *p == '+')
    ++p;
  if (p == end)
    return false;
  T v = 0;
  if (fastDecimal(p, end, v)) {
    // The common "-12.375" (never subnormal: at least 1e-22).
    out = negative ? -v : v;
    return true;
  }
  if (isDigit(*p) || *p == '.') {
    if (end - p > 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
      p += 2;
      for (const char *q = p; q < end; ++q)
        if (!isHexDigit(*q))
          return false;
      // At most 29 hex digits fit in 32 characters: always in range.
      auto [ptr, ec] = std::from_chars(p, end, v, std::chars_format::hex);
      if (ptr != end || ec != std::errc())
        return false;
    } else {
      auto [ptr, ec] = std::from_chars(p, end, v, std::chars_format::general);
      if (ptr != end)
        return false;
      if (ec == std::errc::result_out_of_range)
        v = isHugeDecimal(p, end) ? std::numeric_limits<T>::infinity() : T(0);
      else if (ec != std::errc())
        return false;
    }
  } else if (equalsIgnoreCase(std::string_view(p, end - p), "inf")) {
    v = std::numeric_limits<T>::infinity();
  } else if (equalsIgnoreCase(std::string_view(p, end - p), "nan")) {
    v = std::numeric_limits<T>::quiet_NaN();
  } else {
    return false;
  }
  if (negative)
    v = -v;
  if constexpr (std::is_same_v<T, float>) {
    // TF parses with denormals flushed to zero: a float32 that would be
    // subnormal comes out as a zero of its sign.
    if (v != 0 && std::fabs(v) < std::numeric_limits<float>::min())
      v = std::copysign(0.0f, v);
  }
  out = v;
  return true;
}

} // namespace

bool parse_int32(std::string_view text, int32_t &value) {
  return parseInteger(text, value);
}
bool parse_int64(std::string_view text, int64_t &value) {
  return parseInteger(text, value);
}
bool parse_float32(std::string_view text, float &value) {
  return parseFloating(text, value);
}
bool parse_float64(std::string_view text, double &value) {
  return parseFloating(text, value);
}

//===----------------------------------------------------------------------===//
// Record defaults and options
//===----------------------------------------------------------------------===//

ColumnDefault ColumnDefault::required(DType dtype) {
  ColumnDefault c;
  c.dtype = dtype;
  return c;
}
ColumnDefault ColumnDefault::of(float value) {
  return {DType::Float32, TensorValue::of<float>({}, {value})};
}
ColumnDefault ColumnDefault::of(double value) {
  return {DType::Float64, TensorValue::of<double>({}, {value})};
}
ColumnDefault ColumnDefault::of(int32_t value) {
  return {DType::Int32, TensorValue::of<int32_t>({}, {value})};
}
ColumnDefault ColumnDefault::of(int64_t value) {
  return {DType::Int64, TensorValue::of<int64_t>({}, {value})};
}
ColumnDefault ColumnDefault::of(std::string value) {
  return {DType::String, TensorValue::of_strings({}, {std::move(value)})};
}
ColumnDefault ColumnDefault::zero(DType dtype) {
  switch (dtype) {
  case DType::Float32:
    return of(0.0f);
  case DType::Float64:
    return of(0.0);
  case DType::Int32:
    return of(int32_t(0));
  case DType::Int64:
    return of(int64_t(0));
  case DType::String:
    return of(std::string());
  default:
    throw std::invalid_argument(std::string("ColumnDefault::zero: ") +
                                dtype_name(dtype) + " is not a CSV type");
  }
}

namespace {

/// A field's text in a one-line message: quoted, bytes outside printable
/// ASCII as \xHH, cut after 40 bytes.
std::string quoted(std::string_view text) {
  static const char hex[] = "0123456789abcdef";
  std::string out = "'";
  size_t shown = std::min<size_t>(text.size(), 40);
  for (size_t i = 0; i < shown; ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c >= 0x7f) {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  out += shown < text.size() ? "'..." : "'";
  return out;
}

std::string delimName(char delim) {
  if (delim == '\t')
    return "'\\t'";
  return quoted(std::string_view(&delim, 1));
}

/// One output column, ready for conversion.
struct Column {
  DType dtype = DType::Float32;
  bool required = true;
  int64_t file = 0; // the file's column index, for messages
  int32_t i32 = 0;
  int64_t i64 = 0;
  float f32 = 0;
  double f64 = 0;
  std::string str;
  size_t size = 0; // bytes per value; 0 for strings
};

std::vector<Column> makeColumns(const char *who,
                                const std::vector<ColumnDefault> &defaults) {
  if (defaults.empty())
    throw std::invalid_argument(std::string(who) +
                                ": record_defaults is empty");
  std::vector<Column> columns(defaults.size());
  for (size_t i = 0; i < defaults.size(); ++i) {
    const ColumnDefault &d = defaults[i];
    Column &c = columns[i];
    c.dtype = d.dtype;
    c.file = static_cast<int64_t>(i);
    std::string where =
        std::string(who) + ": record_defaults[" + std::to_string(i) + "]";
    if (d.dtype != DType::Float32 && d.dtype != DType::Float64 &&
        d.dtype != DType::Int32 && d.dtype != DType::Int64 &&
        d.dtype != DType::String)
      throw std::invalid_argument(where + ": " + dtype_name(d.dtype) +
                                  " is not a CSV type (float32, float64, "
                                  "int32, int64, string)");
    c.size = d.dtype == DType::String ? 0 : dtype_size(d.dtype);
    if (!d.value)
      continue;
    const TensorValue &v = *d.value;
    if (v.dtype != d.dtype || v.num_elements() != 1 || v.shape.size() > 1)
      throw std::invalid_argument(where + ": the default must be one " +
                                  tf_name(d.dtype) + " value, not " +
                                  v.spec().str());
    c.required = false;
    switch (d.dtype) {
    case DType::Float32:
      c.f32 = v.values<float>()[0];
      break;
    case DType::Float64:
      c.f64 = v.values<double>()[0];
      break;
    case DType::Int32:
      c.i32 = v.values<int32_t>()[0];
      break;
    case DType::Int64:
      c.i64 = v.values<int64_t>()[0];
      break;
    default:
      c.str = v.strings[0];
      break;
    }
  }
  return columns;
}

void checkIncreasing(const char *who, const char *name,
                     const std::vector<int64_t> &cols) {
  for (size_t i = 0; i < cols.size(); ++i) {
    if (cols[i] < 0)
      throw std::invalid_argument(std::string(who) + ": " + name +
                                  " has a negative index " +
                                  std::to_string(cols[i]));
    if (i > 0 && cols[i - 1] >= cols[i])
      throw std::invalid_argument(std::string(who) + ": " + name +
                                  " must be strictly increasing (" +
                                  std::to_string(cols[i - 1]) + " then " +
                                  std::to_string(cols[i]) + ")");
  }
}

void checkOptions(const char *who, const CsvOptions &o, size_t numDefaults) {
  char d = o.field_delim;
  if (d == '\n' || d == '\r' || (o.use_quote_delim && d == '"'))
    throw std::invalid_argument(std::string(who) + ": field_delim " +
                                delimName(d) +
                                " cannot be a line break or the quote");
  checkIncreasing(who, "select_cols", o.select_cols);
  checkIncreasing(who, "exclude_cols", o.exclude_cols);
  if (!o.select_cols.empty() && !o.exclude_cols.empty())
    throw std::invalid_argument(std::string(who) +
                                ": select_cols and exclude_cols cannot both "
                                "be given");
  if (!o.select_cols.empty() && o.select_cols.size() != numDefaults)
    throw std::invalid_argument(
        std::string(who) + ": " + std::to_string(o.select_cols.size()) +
        " select_cols but " + std::to_string(numDefaults) +
        " record_defaults (one per selected column)");
}

/// The bytes that end (or spoil) an unquoted field: the delimiter, '\n',
/// '\r' and, with quoting, '"'. find() looks at eight bytes at a time (a
/// field is mostly one word), which is where a CSV reader's time goes.
class FieldEnds {
public:
  explicit FieldEnds(const CsvOptions &options) {
    table_.fill(false);
    add(options.field_delim);
    add('\n');
    add('\r');
    if (options.use_quote_delim)
      add('"');
  }

  /// The first such byte in [p, end), or end.
  const char *find(const char *p, const char *end) const {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    constexpr uint64_t kOnes = 0x0101010101010101ULL;
    constexpr uint64_t kHighs = 0x8080808080808080ULL;
    while (end - p >= 8) {
      uint64_t word;
      std::memcpy(&word, p, 8);
      uint64_t hits = 0;
      for (int i = 0; i < count_; ++i) {
        uint64_t x = word ^ broadcast_[i]; // a zero byte where it matches
        hits |= (x - kOnes) & ~x & kHighs;
      }
      // The lowest flagged byte is a real match (borrows only flag bytes
      // above one); on a little-endian machine it is the first in memory.
      if (hits)
        return p + (__builtin_ctzll(hits) >> 3);
      p += 8;
    }
#endif
    while (p < end && !table_[static_cast<unsigned char>(*p)])
      ++p;
    return p;
  }

private:
  void add(char c) {
    if (table_[static_cast<unsigned char>(c)])
      return;
    table_[static_cast<unsigned char>(c)] = true;
    broadcast_[count_++] =
        0x0101010101010101ULL * static_cast<unsigned char>(c);
  }

  std::array<bool, 256> table_;
  uint64_t broadcast_[4] = {};
  int count_ = 0;
};

enum class Conversion { Ok, Missing, Invalid };

/// A field into its column's type: numbers into `number` (the column's
/// size in bytes), strings into `text`. An empty field or na_value takes
/// the default.
inline Conversion convert(const Column &c, std::string_view field,
                          const std::string &na, char *number,
                          std::string *text) {
  bool missing = field.empty() || field == na;
  if (missing && c.required)
    return Conversion::Missing;
  switch (c.dtype) {
  case DType::Float32: {
    float v = c.f32;
    if (!missing && !parseFloating(field, v))
      return Conversion::Invalid;
    std::memcpy(number, &v, sizeof v);
    return Conversion::Ok;
  }
  case DType::Float64: {
    double v = c.f64;
    if (!missing && !parseFloating(field, v))
      return Conversion::Invalid;
    std::memcpy(number, &v, sizeof v);
    return Conversion::Ok;
  }
  case DType::Int32: {
    int32_t v = c.i32;
    if (!missing && !parseInteger(field, v))
      return Conversion::Invalid;
    std::memcpy(number, &v, sizeof v);
    return Conversion::Ok;
  }
  case DType::Int64: {
    int64_t v = c.i64;
    if (!missing && !parseInteger(field, v))
      return Conversion::Invalid;
    std::memcpy(number, &v, sizeof v);
    return Conversion::Ok;
  }
  default:
    if (missing)
      *text = c.str;
    else
      text->assign(field.data(), field.size());
    return Conversion::Ok;
  }
}

/// The contents of a quoted field with its doubled quotes made single.
std::string_view unescape(std::string_view inner, std::string &scratch) {
  scratch.clear();
  for (size_t i = 0; i < inner.size(); ++i) {
    scratch += inner[i];
    if (inner[i] == '"' && i + 1 < inner.size() && inner[i + 1] == '"')
      ++i;
  }
  return scratch;
}

/// Output tensors of `shape` for the columns: numbers sized, strings
/// empty.
std::vector<TensorValue> makeOutputs(const std::vector<Column> &columns,
                                     const std::vector<int64_t> &shape,
                                     size_t count) {
  std::vector<TensorValue> out(columns.size());
  for (size_t i = 0; i < columns.size(); ++i) {
    out[i].dtype = columns[i].dtype;
    out[i].shape = shape;
    if (columns[i].dtype == DType::String)
      out[i].strings.resize(count);
    else
      out[i].data.resize(count * columns[i].size);
  }
  return out;
}

//===----------------------------------------------------------------------===//
// decode_csv
//===----------------------------------------------------------------------===//

struct DecodedField {
  std::string_view text; // inside the quotes for a quoted field
  bool escaped = false;  // has doubled quotes
  int64_t column = 0;    // the record's field index
};

class DecodeCsv {
public:
  DecodeCsv(const std::vector<ColumnDefault> &defaults,
            const CsvOptions &options)
      : columns_(makeColumns("decode_csv", defaults)), options_(options),
        ends_(options) {
    checkOptions("decode_csv", options, defaults.size());
    if (!options.exclude_cols.empty())
      throw std::invalid_argument(
          "decode_csv: exclude_cols is CsvDataset's (use select_cols)");
    if (options.header)
      throw std::invalid_argument("decode_csv: header is CsvDataset's");
    for (size_t i = 0; i < columns_.size(); ++i)
      if (!options.select_cols.empty())
        columns_[i].file = options.select_cols[i];
  }

  std::vector<TensorValue> run(size_t count, const std::vector<int64_t> &shape,
                               const std::string_view *records,
                               const std::string *strings) {
    std::vector<TensorValue> out = makeOutputs(columns_, shape, count);
    for (size_t r = 0; r < count; ++r) {
      record_ = static_cast<int64_t>(r);
      split(records ? records[r] : std::string_view(strings[r]));
      if (fields_.size() != columns_.size())
        countError();
      for (size_t i = 0; i < columns_.size(); ++i) {
        const DecodedField &f = fields_[i];
        std::string_view text = f.escaped ? unescape(f.text, scratch_) : f.text;
        const Column &c = columns_[i];
        Conversion result =
            convert(c, text, options_.na_value,
                    c.size ? out[i].data.data() + r * c.size : nullptr,
                    c.size ? nullptr : &out[i].strings[r]);
        if (result == Conversion::Missing)
          throw DataError("decode_csv: column " + std::to_string(c.file) +
                          " is required but record " + std::to_string(r) +
                          " has no value");
        if (result == Conversion::Invalid)
          throw DataError(where(c.file) + quoted(text) + " is not a valid " +
                          tf_name(c.dtype));
      }
    }
    return out;
  }

private:
  std::string where(int64_t column) const {
    return "decode_csv: record " + std::to_string(record_) + ", column " +
           std::to_string(column) + ": ";
  }

  [[noreturn]] void countError() const {
    std::string m = "decode_csv: record " + std::to_string(record_) + ": ";
    if (options_.select_cols.empty())
      throw DataError(m + "expected " + std::to_string(columns_.size()) +
                      " fields but found " + std::to_string(fields_.size()));
    throw DataError(m + "found " + std::to_string(numFields_) +
                    " fields, but select_cols needs column " +
                    std::to_string(options_.select_cols.back()));
  }

  /// tf.io.decode_csv's field splitting: '\n' and '\r' are skipped where
  /// a field would start; an unquoted field may hold neither them nor a
  /// quote; a quoted field ends at a quote followed by the delimiter or
  /// the end of the record. With select_cols it stops after the last
  /// selected field.
  void split(std::string_view r) {
    fields_.clear();
    numFields_ = 0;
    const char delim = options_.field_delim;
    const bool quoting = options_.use_quote_delim;
    const std::vector<int64_t> &select = options_.select_cols;
    const bool all = select.empty();
    size_t selected = 0;
    size_t n = r.size(), i = 0;
    if (n == 0)
      return;
    while (i < n) {
      if (r[i] == '\n' || r[i] == '\r') {
        ++i;
        continue;
      }
      bool include = all || select[selected] == numFields_;
      // Filled in place (a copy from the stack stalls on store forwarding);
      // dropped below when not selected.
      DecodedField &f = fields_.emplace_back();
      f.column = numFields_;
      if (quoting && r[i] == '"') {
        size_t begin = ++i;
        while (i + 1 < n && (r[i] != '"' || r[i + 1] != delim)) {
          if (r[i] != '"') {
            ++i;
            continue;
          }
          if (r[i + 1] != '"')
            throw DataError(where(numFields_) +
                            "a quote inside a quoted field must be doubled "
                            "(\"\")");
          f.escaped = true;
          i += 2;
        }
        if (i >= n || r[i] != '"' || (i + 1 != n && r[i + 1] != delim))
          throw DataError(where(numFields_) +
                          "a quoted field must end with a quote followed by " +
                          delimName(delim) + " or the end of the record");
        f.text = r.substr(begin, i - begin);
        i += 2;
      } else {
        size_t begin = i;
        i = ends_.find(r.data() + i, r.data() + n) - r.data();
        if (i < n && r[i] != delim)
          throw DataError(where(numFields_) +
                          (r[i] == '"' ? "a quote inside an unquoted field "
                                         "(quote the field and double the "
                                         "quote)"
                                       : "a line break inside an unquoted "
                                         "field"));
        f.text = r.substr(begin, i - begin);
        ++i;
      }
      ++numFields_;
      if (!include) {
        fields_.pop_back();
      } else if (!all && ++selected == select.size()) {
        return;
      }
    }
    // A record ending with the delimiter has an empty last field.
    bool include = all || select[selected] == numFields_;
    if (r[n - 1] == delim) {
      if (include)
        fields_.emplace_back().column = numFields_;
      ++numFields_;
    }
  }

  std::vector<Column> columns_;
  const CsvOptions &options_;
  FieldEnds ends_;
  std::vector<DecodedField> fields_;
  int64_t numFields_ = 0;
  int64_t record_ = 0;
  std::string scratch_;
};

} // namespace

std::vector<TensorValue>
decode_csv(const std::vector<std::string_view> &records,
           const std::vector<ColumnDefault> &record_defaults,
           const CsvOptions &options) {
  DecodeCsv decoder(record_defaults, options);
  return decoder.run(records.size(), {static_cast<int64_t>(records.size())},
                     records.data(), nullptr);
}

std::vector<TensorValue>
decode_csv(const TensorValue &records,
           const std::vector<ColumnDefault> &record_defaults,
           const CsvOptions &options) {
  if (records.dtype != DType::String)
    throw std::invalid_argument(std::string("decode_csv: records must be a "
                                            "string tensor, not ") +
                                dtype_name(records.dtype));
  DecodeCsv decoder(record_defaults, options);
  return decoder.run(records.strings.size(), records.shape, nullptr,
                     records.strings.data());
}

//===----------------------------------------------------------------------===//
// CsvDataset's record scanner
//===----------------------------------------------------------------------===//

namespace {

/// Splits a stream into CsvDataset's records and their fields. A record
/// ends at '\n', '\r' or "\r\n" outside quotes, or at the end of the
/// file; a field that starts with a quote runs to the next quote followed
/// by the delimiter, a line break or the end. A malformed record is read
/// to its end as TF reads it (so the next one is where TF's iterator
/// would go on) and its first problem kept in error().
class RecordScanner {
public:
  struct Span {
    size_t begin = 0, end = 0; // in the buffer; inside the quotes
    bool quoted = false, escaped = false;
  };
  enum class Problem { None, QuoteInUnquoted, UndoubledQuote, Unterminated };

  RecordScanner(std::string path, const CsvOptions &options,
                Compression compression, size_t bufferSize)
      : stream_(std::move(path), compression, bufferSize),
        bufferSize_(bufferSize == 0 ? 1 : bufferSize),
        delim_(options.field_delim), quoting_(options.use_quote_delim),
        ends_(options) {}

  const std::string &path() const { return stream_.path(); }
  uint64_t offset() const { return stream_.offset() - (buf_.size() - pos_); }
  int64_t line() const { return line_; }
  void seek(uint64_t offset, int64_t line) {
    stream_.seek(offset);
    buf_.clear();
    pos_ = 0;
    eof_ = false;
    line_ = line;
  }

  /// Reads the next record; false at the end of the file.
  bool next() {
    for (;;) {
      switch (scan()) {
      case Scan::Record:
        return true;
      case Scan::End:
        return false;
      case Scan::NeedMore:
        refill();
      }
    }
  }
  /// Puts the last record back (it is read again by next()).
  void unread() {
    pos_ = recordBegin_;
    line_ = recordLine_ - 1;
  }

  // The last record read.
  const std::vector<Span> &spans() const { return spans_; }
  std::string_view text(const Span &s, std::string &scratch) const {
    std::string_view inner(buf_.data() + s.begin, s.end - s.begin);
    return s.escaped ? unescape(inner, scratch) : inner;
  }
  /// Whether the record is an empty line (no field, not even "").
  bool emptyLine() const {
    return spans_.size() == 1 && !spans_[0].quoted &&
           spans_[0].begin == spans_[0].end &&
           (recordBegin_ == buf_.size() || buf_[recordBegin_] == '\n' ||
            buf_[recordBegin_] == '\r');
  }
  /// The line the record starts on.
  int64_t recordLine() const { return recordLine_; }
  /// The line field `i` starts on.
  int64_t fieldLine(size_t i) const {
    size_t begin = spans_[i].begin - (spans_[i].quoted ? 1 : 0);
    return recordLine_ +
           std::count(buf_.begin() + recordBegin_, buf_.begin() + begin, '\n');
  }
  Problem problem() const { return problem_; }
  size_t problemField() const { return problemField_; }
  /// The problem in words ("column 2: ...").
  std::string problemText() const {
    std::string col = "column " + std::to_string(problemField_) + ": ";
    switch (problem_) {
    case Problem::QuoteInUnquoted:
      return col + "a quote inside an unquoted field (quote the field and "
                   "double the quote)";
    case Problem::UndoubledQuote:
      return col +
             "a quote inside a quoted field must be doubled (\"\") "
             "and the closing quote followed by " +
             delimName(delim_) + " or a line break";
    case Problem::Unterminated:
      return col + "the quoted field is not closed before the end of the "
                   "file";
    case Problem::None:
      break;
    }
    return col;
  }

private:
  enum class Scan { Record, NeedMore, End };
  enum class FieldEnd { Delimiter, LineBreak, EndOfFile, NeedMore };

  void refill() {
    buf_.erase(0, pos_);
    pos_ = 0;
    // A record longer than the buffer doubles what is read, so it is
    // scanned O(1) times per byte.
    size_t want = std::max(bufferSize_, buf_.size());
    if (stream_.read(want, chunk_) < want)
      eof_ = true;
    buf_ += chunk_;
  }

  void setProblem(Problem p, size_t field) {
    if (problem_ == Problem::None) {
      problem_ = p;
      problemField_ = field;
    }
  }

  /// After a '\r' ending a record: a following '\n' belongs to it.
  FieldEnd endAfterCarriageReturn(size_t &p) {
    if (p >= buf_.size() && !eof_)
      return FieldEnd::NeedMore;
    if (p < buf_.size() && buf_[p] == '\n')
      ++p;
    return FieldEnd::LineBreak;
  }

  // The field functions fill their Span in place: a Span built on the
  // stack and copied in costs a store-forwarding stall per field.

  FieldEnd quotedField(size_t &p, int64_t &lines) {
    const char *b = buf_.data();
    size_t n = buf_.size();
    size_t field = spans_.size();
    Span &s = spans_.emplace_back();
    s.quoted = true;
    s.begin = ++p;
    for (;;) {
      const void *q = std::memchr(b + p, '"', n - p);
      size_t at = q ? static_cast<const char *>(q) - b : n;
      lines += std::count(b + p, b + at, '\n');
      p = at;
      if (p >= n) {
        if (!eof_)
          return FieldEnd::NeedMore;
        setProblem(Problem::Unterminated, field);
        s.end = p;
        return FieldEnd::EndOfFile;
      }
      if (p + 1 >= n) {
        if (!eof_)
          return FieldEnd::NeedMore;
        s.end = p++;
        return FieldEnd::EndOfFile;
      }
      char next = b[p + 1];
      if (next == '"') {
        s.escaped = true;
        p += 2;
        continue;
      }
      if (next == delim_ || next == '\n' || next == '\r') {
        s.end = p;
        p += 2;
        if (next == delim_)
          return FieldEnd::Delimiter;
        return next == '\r' ? endAfterCarriageReturn(p) : FieldEnd::LineBreak;
      }
      // TF notes the error and reads on as if still inside the quotes.
      setProblem(Problem::UndoubledQuote, field);
      p += 2;
    }
  }

  FieldEnd unquotedField(size_t &p) {
    const char *b = buf_.data();
    size_t n = buf_.size();
    size_t field = spans_.size();
    Span &s = spans_.emplace_back();
    s.begin = p;
    for (;;) {
      p = ends_.find(b + p, b + n) - b;
      if (p >= n) {
        if (!eof_)
          return FieldEnd::NeedMore;
        s.end = p;
        return FieldEnd::EndOfFile;
      }
      char c = b[p];
      if (quoting_ && c == '"') {
        setProblem(Problem::QuoteInUnquoted, field);
        ++p;
        continue;
      }
      s.end = p++;
      if (c == delim_)
        return FieldEnd::Delimiter;
      return c == '\r' ? endAfterCarriageReturn(p) : FieldEnd::LineBreak;
    }
  }

  Scan scan() {
    size_t p = pos_;
    spans_.clear();
    problem_ = Problem::None;
    if (p >= buf_.size())
      return eof_ ? Scan::End : Scan::NeedMore;
    int64_t lines = 0; // line breaks inside quotes
    FieldEnd end;
    do {
      if (p >= buf_.size()) {
        if (!eof_)
          return Scan::NeedMore;
        // The file ends right after a delimiter: an empty last field.
        Span &s = spans_.emplace_back();
        s.begin = s.end = p;
        end = FieldEnd::EndOfFile;
        break;
      }
      end =
          quoting_ && buf_[p] == '"' ? quotedField(p, lines) : unquotedField(p);
      if (end == FieldEnd::NeedMore)
        return Scan::NeedMore;
    } while (end == FieldEnd::Delimiter);
    recordBegin_ = pos_;
    recordLine_ = line_ + 1;
    // The record's own line break, unless it ended at the end of the file.
    line_ += lines + (end == FieldEnd::LineBreak ? 1 : 0);
    pos_ = p;
    return Scan::Record;
  }

  InputStream stream_;
  size_t bufferSize_;
  char delim_;
  bool quoting_;
  FieldEnds ends_;
  std::string buf_, chunk_;
  size_t pos_ = 0;
  bool eof_ = false;
  int64_t line_ = 0;
  std::vector<Span> spans_;
  size_t recordBegin_ = 0;
  int64_t recordLine_ = 1;
  Problem problem_ = Problem::None;
  size_t problemField_ = 0;
};

} // namespace

//===----------------------------------------------------------------------===//
// CsvReader
//===----------------------------------------------------------------------===//

struct CsvReader::State {
  State(std::string path, const std::vector<ColumnDefault> &defaults,
        CsvOptions opts, Compression compression, size_t bufferSize)
      : columns(makeColumns("CsvReader", defaults)),
        options(checked(std::move(opts), defaults.size())),
        scanner(std::move(path), options, compression, bufferSize) {
    selectAll = options.select_cols.empty() && options.exclude_cols.empty();
  }

  std::vector<Column> columns;
  CsvOptions options;
  RecordScanner scanner;
  bool selectAll = true;
  std::vector<size_t> outputs; // the span of each output column
  std::string scratch;

  static CsvOptions checked(CsvOptions o, size_t numDefaults) {
    checkOptions("CsvReader", o, numDefaults);
    return o;
  }

  [[noreturn]] void fail(int64_t line, const std::string &what) const {
    throw DataError(scanner.path() + ":" + std::to_string(line) + ": " + what);
  }

  std::string columnLabel(int64_t file) const {
    std::string label = "column " + std::to_string(file);
    if (file < static_cast<int64_t>(options.column_names.size()))
      label += " (" + quoted(options.column_names[file]) + ")"; // one line
    return label;
  }

  /// Checks the scanned record and maps output columns to its fields.
  void checkRecord() {
    if (scanner.problem() != RecordScanner::Problem::None)
      fail(scanner.fieldLine(scanner.problemField()), scanner.problemText());
    const auto &spans = scanner.spans();
    size_t n = spans.size();
    if (selectAll) {
      if (n != columns.size())
        fail(scanner.recordLine(),
             "expected " + std::to_string(columns.size()) +
                 " fields but found " + std::to_string(n));
      return;
    }
    outputs.clear();
    const auto &select = options.select_cols;
    const auto &exclude = options.exclude_cols;
    size_t s = 0, e = 0;
    for (size_t f = 0; f < n; ++f) {
      int64_t index = static_cast<int64_t>(f);
      bool excluded = e < exclude.size() && exclude[e] == index;
      if (excluded)
        ++e;
      if (s < select.size() && select[s] == index) {
        outputs.push_back(f);
        ++s;
      } else if (!exclude.empty() && !excluded) {
        outputs.push_back(f);
      }
    }
    if (outputs.size() == columns.size())
      return;
    if (!select.empty())
      fail(scanner.recordLine(), "found " + std::to_string(n) +
                                     " fields, but select_cols needs column " +
                                     std::to_string(select.back()));
    fail(scanner.recordLine(),
         "expected " + std::to_string(columns.size() + exclude.size()) +
             " fields (" + std::to_string(columns.size()) + " and " +
             std::to_string(exclude.size()) + " excluded) but found " +
             std::to_string(n));
  }

  size_t spanOf(size_t column) const {
    return selectAll ? column : outputs[column];
  }

  /// Converts output column `i` of the record into `number` / `text`.
  void convertColumn(size_t i, char *number, std::string *text) {
    size_t f = spanOf(i);
    const RecordScanner::Span &span = scanner.spans()[f];
    std::string_view field = scanner.text(span, scratch);
    const Column &c = columns[i];
    Conversion r = convert(c, field, options.na_value, number, text);
    if (r == Conversion::Ok)
      return;
    int64_t file = static_cast<int64_t>(f);
    if (r == Conversion::Missing)
      fail(scanner.fieldLine(f),
           columnLabel(file) + " is required but has no value");
    fail(scanner.fieldLine(f), columnLabel(file) + ": expected " +
                                   tf_name(c.dtype) + ", got " + quoted(field));
  }
};

CsvReader::CsvReader(std::string path,
                     std::vector<ColumnDefault> record_defaults,
                     CsvOptions options, Compression compression,
                     size_t buffer_size)
    : state_(std::make_unique<State>(std::move(path), record_defaults,
                                     std::move(options), compression,
                                     buffer_size)) {
  if (!state_->options.header)
    return;
  RecordScanner &s = state_->scanner;
  if (!s.next())
    throw DataError(s.path() + ": cannot read the header: the file is empty");
  if (s.problem() != RecordScanner::Problem::None)
    state_->fail(s.fieldLine(s.problemField()),
                 "cannot read the header: " + s.problemText());
}

CsvReader::~CsvReader() = default;

bool CsvReader::read(std::vector<TensorValue> &row) {
  State &s = *state_;
  if (!s.scanner.next())
    return false;
  s.checkRecord();
  row.resize(s.columns.size());
  for (size_t i = 0; i < s.columns.size(); ++i) {
    const Column &c = s.columns[i];
    TensorValue &t = row[i];
    if (t.dtype != c.dtype || !t.shape.empty() ||
        (c.size ? !t.strings.empty() : !t.data.empty())) {
      t = TensorValue();
      t.dtype = c.dtype;
    }
    if (c.size) {
      t.data.resize(c.size);
      s.convertColumn(i, t.data.data(), nullptr);
    } else {
      t.strings.resize(1);
      s.convertColumn(i, nullptr, &t.strings[0]);
    }
  }
  return true;
}

int64_t CsvReader::read_batch(int64_t max_records,
                              std::vector<TensorValue> &columns) {
  if (max_records <= 0)
    throw std::invalid_argument("CsvReader::read_batch: max_records must be "
                                "positive, not " +
                                std::to_string(max_records));
  State &s = *state_;
  size_t max = static_cast<size_t>(max_records);
  columns = makeOutputs(s.columns, {}, 0);
  for (size_t i = 0; i < s.columns.size(); ++i)
    if (s.columns[i].size)
      columns[i].data.resize(max * s.columns[i].size);
  size_t k = 0;
  while (k < max && s.scanner.next()) {
    try {
      s.checkRecord();
      for (size_t i = 0; i < s.columns.size(); ++i) {
        size_t size = s.columns[i].size;
        if (size) {
          s.convertColumn(i, columns[i].data.data() + k * size, nullptr);
        } else {
          columns[i].strings.emplace_back();
          s.convertColumn(i, nullptr, &columns[i].strings.back());
        }
      }
    } catch (const DataError &) {
      if (k == 0)
        throw;
      // The good records so far are the batch; the bad one is read again
      // (and throws) at the next call.
      s.scanner.unread();
      break;
    }
    ++k;
  }
  for (size_t i = 0; i < s.columns.size(); ++i) {
    columns[i].shape = {static_cast<int64_t>(k)};
    if (s.columns[i].size)
      columns[i].data.resize(k * s.columns[i].size);
    else
      columns[i].strings.resize(k);
  }
  return static_cast<int64_t>(k);
}

const std::string &CsvReader::path() const { return state_->scanner.path(); }
uint64_t CsvReader::offset() const { return state_->scanner.offset(); }
int64_t CsvReader::line_number() const { return state_->scanner.line(); }
void CsvReader::seek(uint64_t offset, int64_t line_number) {
  state_->scanner.seek(offset, line_number);
}
size_t CsvReader::num_columns() const { return state_->columns.size(); }

//===----------------------------------------------------------------------===//
// make_csv_dataset: header and type inference
//===----------------------------------------------------------------------===//

namespace {

constexpr size_t kInferenceBuffer = 64 * 1024;

std::string joinNames(const std::vector<std::string> &names) {
  std::string out;
  for (const std::string &n : names)
    out += (out.empty() ? "" : ", ") + quoted(n);
  return out;
}

/// The raw fields of the record the scanner just read.
std::vector<std::string> fieldsOf(const RecordScanner &s) {
  std::vector<std::string> out;
  std::string scratch;
  for (const RecordScanner::Span &span : s.spans())
    out.emplace_back(s.text(span, scratch));
  return out;
}

// Python's int() and float() on a str, as numpy's constructors call them
// in readers.py's _is_valid_int32/_is_valid_float (ASCII only: a digit or
// space outside ASCII makes the value a string here).

std::string_view stripAscii(std::string_view s) {
  while (!s.empty() && isSpace(s.front()))
    s.remove_prefix(1);
  while (!s.empty() && isSpace(s.back()))
    s.remove_suffix(1);
  return s;
}

/// Digits with single underscores between them (Python's digitpart), from
/// `i`; appends the digits to `out`. False when there is none or an
/// underscore is misplaced.
bool pythonDigits(std::string_view s, size_t &i, std::string &out) {
  if (i >= s.size() || !isDigit(s[i]))
    return false;
  while (i < s.size()) {
    if (isDigit(s[i])) {
      out += s[i++];
    } else if (s[i] == '_' && i + 1 < s.size() && isDigit(s[i + 1])) {
      ++i;
    } else {
      break;
    }
  }
  return true;
}

/// Python's int(s) within int64 (numpy's OverflowError beyond).
bool pythonInt(std::string_view s, int64_t &value) {
  s = stripAscii(s);
  size_t i = 0;
  std::string digits;
  if (i < s.size() && (s[i] == '+' || s[i] == '-'))
    digits += s[i++];
  if (!pythonDigits(s, i, digits) || i != s.size())
    return false;
  if (digits[0] == '+')
    digits.erase(0, 1);
  auto [ptr, ec] =
      std::from_chars(digits.data(), digits.data() + digits.size(), value);
  return ec == std::errc() && ptr == digits.data() + digits.size();
}

/// Python's float(s).
bool pythonFloat(std::string_view s, double &value) {
  s = stripAscii(s);
  size_t i = 0;
  bool negative = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-'))
    negative = s[i++] == '-';
  std::string_view rest = s.substr(i);
  if (equalsIgnoreCase(rest, "inf") || equalsIgnoreCase(rest, "infinity")) {
    value = negative ? -HUGE_VAL : HUGE_VAL;
    return true;
  }
  if (equalsIgnoreCase(rest, "nan")) {
    value = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  std::string text;
  bool whole = pythonDigits(s, i, text);
  if (i < s.size() && s[i] == '.') {
    text += s[i++];
    bool fraction = pythonDigits(s, i, text);
    if (!whole && !fraction)
      return false;
  } else if (!whole) {
    return false;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    text += s[i++];
    if (i < s.size() && (s[i] == '+' || s[i] == '-'))
      text += s[i++];
    if (!pythonDigits(s, i, text))
      return false;
  }
  if (i != s.size())
    return false;
  const char *b = text.data(), *e = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(b, e, value);
  if (ptr != e)
    return false;
  if (ec == std::errc::result_out_of_range)
    value = isHugeDecimal(b, e) ? HUGE_VAL : 0.0;
  else if (ec != std::errc())
    return false;
  if (negative)
    value = -value;
  return true;
}

/// readers.py's _infer_type: the least permissive type at or after `prev`
/// (index into int32, int64, float32, float64, string) that `text` is
/// valid for.
int inferType(std::string_view text, int prev) {
  int64_t i = 0;
  double d = 0;
  bool isInt = prev <= 1 && pythonInt(text, i);
  bool isFloat = prev <= 3 && !isInt && pythonFloat(text, d);
  if (isInt)
    d = static_cast<double>(i);
  for (int t = std::max(prev, 0); t < 4; ++t) {
    switch (t) {
    case 0:
      if (isInt && i >= std::numeric_limits<int32_t>::min() &&
          i <= std::numeric_limits<int32_t>::max())
        return 0;
      break;
    case 1:
      if (isInt)
        return 1;
      break;
    case 2: // np.float32(s) < np.inf: NaN and +inf are not floats, -inf is
      if ((isInt || isFloat) && static_cast<float>(d) < HUGE_VALF)
        return 2;
      break;
    case 3:
      if ((isInt || isFloat) && d < HUGE_VAL)
        return 3;
      break;
    }
  }
  return 4;
}

} // namespace

std::vector<std::string> read_csv_header(const std::vector<std::string> &files,
                                         const CsvOptions &options,
                                         Compression compression) {
  if (files.empty())
    throw std::invalid_argument("read_csv_header: no files");
  checkOptions("read_csv_header", options, options.select_cols.size());
  std::vector<std::string> names;
  for (size_t i = 0; i < files.size(); ++i) {
    RecordScanner s(files[i], options, compression, kInferenceBuffer);
    if (!s.next())
      throw DataError(files[i] + ": cannot read the header: the file is empty");
    if (s.problem() != RecordScanner::Problem::None)
      throw DataError(files[i] + ":" +
                      std::to_string(s.fieldLine(s.problemField())) +
                      ": cannot read the header: " + s.problemText());
    std::vector<std::string> these = fieldsOf(s);
    if (i == 0) {
      names = std::move(these);
      std::set<std::string> seen, duplicates;
      for (const std::string &n : names)
        if (!seen.insert(n).second)
          duplicates.insert(n);
      if (!duplicates.empty())
        throw DataError(files[i] +
                        ": the header names a column more than once: " +
                        joinNames(std::vector<std::string>(duplicates.begin(),
                                                           duplicates.end())));
    } else if (these != names) {
      throw DataError(files[i] + ": its header (" + joinNames(these) +
                      ") differs from " + files[0] + "'s (" + joinNames(names) +
                      ")");
    }
  }
  return names;
}

std::vector<ColumnDefault>
infer_column_defaults(const std::vector<std::string> &files,
                      const std::vector<std::string> &column_names,
                      int64_t num_rows_for_inference, const CsvOptions &options,
                      Compression compression) {
  if (column_names.empty())
    throw std::invalid_argument("infer_column_defaults: no column names");
  std::vector<int64_t> selected = options.select_cols;
  if (selected.empty())
    for (size_t i = 0; i < column_names.size(); ++i)
      selected.push_back(static_cast<int64_t>(i));
  checkOptions("infer_column_defaults", options, selected.size());
  for (int64_t c : selected)
    if (c >= static_cast<int64_t>(column_names.size()))
      throw std::invalid_argument(
          "infer_column_defaults: select_cols names column " +
          std::to_string(c) + " of " + std::to_string(column_names.size()));
  std::vector<int> types(selected.size(), -1);
  int64_t rows = 0;
  std::string scratch;
  bool done = false;
  for (size_t fi = 0; fi < files.size() && !done; ++fi) {
    RecordScanner s(files[fi], options, compression, kInferenceBuffer);
    if (options.header && !s.next())
      throw DataError(files[fi] +
                      ": cannot read the header: the file is empty");
    while (s.next()) {
      // Python's csv module reads an empty line as a row of no fields.
      size_t n = s.emptyLine() ? 0 : s.spans().size();
      if (n != column_names.size())
        throw DataError(files[fi] + ":" + std::to_string(s.recordLine()) +
                        ": expected " + std::to_string(column_names.size()) +
                        " fields but found " + std::to_string(n) +
                        " (inferring column types)");
      // readers.py reads (and checks) one row past the limit.
      if (num_rows_for_inference >= 0 && rows >= num_rows_for_inference) {
        done = true;
        break;
      }
      ++rows;
      // A malformed record tells nothing (reading it fails later, or
      // ignore_errors drops it).
      if (s.problem() != RecordScanner::Problem::None)
        continue;
      for (size_t j = 0; j < selected.size(); ++j) {
        std::string_view text = s.text(s.spans()[selected[j]], scratch);
        if (text.empty() || text == options.na_value)
          continue;
        types[j] = inferType(text, types[j]);
      }
    }
  }
  static const DType kTypes[] = {DType::Int32, DType::Int64, DType::Float32,
                                 DType::Float64, DType::String};
  std::vector<ColumnDefault> defaults;
  for (int t : types)
    defaults.push_back(ColumnDefault::zero(kTypes[t < 0 ? 4 : t]));
  return defaults;
}

} // namespace data
} // namespace estc
