//===- CsvTest.cpp - decode_csv, CsvReader, inference: TF's semantics ----===//
//
// The expected values and accepted inputs are what TF 2.15 gives for the
// same records (tf.io.decode_csv, tf.data.experimental.CsvDataset,
// make_csv_dataset's inference; checked with tensorflow-cpu 2.15.1, and
// again by test/e2e/tf_csv_compat.py when TF is installed). The messages
// are estc's own.
//
//===----------------------------------------------------------------------===//

#include "lib/Data/Csv.h"

#include "FileTesting.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <sstream>
#include <unistd.h>

using namespace estc;
using namespace estc::data;
namespace fs = std::filesystem;

namespace {

using Strings = std::vector<std::string>;

/// A scalar or vector as text: "1", "2.5", "abc", "[1,2]".
std::string render(const TensorValue &t) {
  auto one = [&](int64_t i) -> std::string {
    switch (t.dtype) {
    case DType::String:
      return t.strings[i];
    case DType::Int32:
      return std::to_string(t.values<int32_t>()[i]);
    case DType::Int64:
      return std::to_string(t.values<int64_t>()[i]);
    default: {
      std::ostringstream s;
      s.precision(9);
      s << t.element(i);
      return s.str();
    }
    }
  };
  if (t.shape.empty())
    return one(0);
  std::string out = "[";
  for (int64_t i = 0; i < t.num_elements(); ++i)
    out += (i ? "," : "") + one(i);
  return out + "]";
}

Strings renderAll(const std::vector<TensorValue> &values) {
  Strings out;
  for (const TensorValue &v : values)
    out.push_back(render(v));
  return out;
}

/// The DataError message `fn` throws ("" when it throws none).
template <typename F> std::string errorOf(F &&fn) {
  return estc::testing::messageOf<DataError>(fn);
}

/// The std::invalid_argument message `fn` throws.
template <typename F> std::string misuseOf(F &&fn) {
  return estc::testing::messageOf<std::invalid_argument>(fn);
}

ColumnDefault req(DType dtype) { return ColumnDefault::required(dtype); }

// ---------------------------------------------------------------------------
// Numbers: strings::safe_strto32/64 and safe_strtof/d
// ---------------------------------------------------------------------------

TEST(CsvNumbers, Int32) {
  int32_t v = 0;
  for (auto [text, want] : std::vector<std::pair<std::string, int32_t>>{
           {"1", 1},
           {"-1", -1},
           {" 1", 1},
           {"1 ", 1},
           {"\t1\n", 1},
           {"\v1\f\r", 1},
           {"01", 1},
           {"-0", 0},
           {"00000000000000000000000000000000000001", 1},
           {"2147483647", 2147483647},
           {"-2147483648", std::numeric_limits<int32_t>::min()}}) {
    EXPECT_TRUE(parse_int32(text, v)) << text;
    EXPECT_EQ(v, want) << text;
  }
  for (std::string bad :
       Strings{"2147483648", "-2147483649", "+1", "0x10", "1e3", "1.0", "--1",
               "-", "- 1", "1 2", "", "  ", "99999999999999999999",
               std::string("1\0"
                           "2",
                           3)})
    EXPECT_FALSE(parse_int32(bad, v)) << bad;
}

TEST(CsvNumbers, Int64) {
  int64_t v = 0;
  EXPECT_TRUE(parse_int64("9223372036854775807", v));
  EXPECT_EQ(v, std::numeric_limits<int64_t>::max());
  EXPECT_TRUE(parse_int64("-9223372036854775808", v));
  EXPECT_EQ(v, std::numeric_limits<int64_t>::min());
  EXPECT_TRUE(parse_int64(" 2147483648 ", v));
  EXPECT_EQ(v, 2147483648LL);
  EXPECT_TRUE(parse_int64("-000000000000000000000000000042", v));
  EXPECT_EQ(v, -42);
  for (std::string bad : Strings{"9223372036854775808", "-9223372036854775809",
                                 "18446744073709551616", "+5", "5_000", "1e3"})
    EXPECT_FALSE(parse_int64(bad, v)) << bad;
}

TEST(CsvNumbers, Float32Syntax) {
  float v = 0;
  for (auto [text, want] :
       std::vector<std::pair<std::string, float>>{{"1", 1},
                                                  {"+1", 1},
                                                  {"-1", -1},
                                                  {" 1.5 ", 1.5},
                                                  {"\t1.5\n", 1.5},
                                                  {"1.", 1},
                                                  {".5", 0.5},
                                                  {"+.5", 0.5},
                                                  {"1e3", 1000},
                                                  {"1E3", 1000},
                                                  {"1e+3", 1000},
                                                  {"1.e5", 1e5},
                                                  {"-.5e-2", -0.005f},
                                                  {"0x10", 16},
                                                  {"0X1f", 31},
                                                  {"-0x10", -16},
                                                  {"0x10e2", 4322},
                                                  {" 0x10 ", 16},
                                                  {"0.1", 0.1f},
                                                  {"  ", 0},
                                                  {"\t", 0}}) {
    EXPECT_TRUE(parse_float32(text, v)) << text;
    EXPECT_EQ(v, want) << text;
  }
  for (std::string bad : Strings{".",
                                 "1e",
                                 "1e+",
                                 "e3",
                                 "infinity",
                                 "Infinity",
                                 "-Infinity",
                                 "nan(1)",
                                 "0x1.8",
                                 "0x1p3",
                                 "0x",
                                 "0xg",
                                 "0x-1",
                                 "1_000",
                                 "1,5",
                                 "1.5x",
                                 "1d3",
                                 "1f",
                                 "1 .5",
                                 "+-1",
                                 "- 1",
                                 ".e5",
                                 "-.",
                                 "0x.1",
                                 "in",
                                 "na",
                                 std::string("1\0"
                                             "2",
                                             3),
                                 "１"})
    EXPECT_FALSE(parse_float32(bad, v)) << bad;
}

TEST(CsvNumbers, Float32SpecialValues) {
  float v = 0;
  for (std::string text : {"inf", "INF", "Inf", "+inf", " inf "}) {
    ASSERT_TRUE(parse_float32(text, v)) << text;
    EXPECT_EQ(v, std::numeric_limits<float>::infinity()) << text;
  }
  ASSERT_TRUE(parse_float32("-inf", v));
  EXPECT_EQ(v, -std::numeric_limits<float>::infinity());
  for (std::string text : {"nan", "NaN", "NAN", "+nan", "-nan", "  nan  "}) {
    ASSERT_TRUE(parse_float32(text, v)) << text;
    EXPECT_TRUE(std::isnan(v)) << text;
  }
  ASSERT_TRUE(parse_float32("-0", v));
  EXPECT_EQ(v, 0.0f);
  EXPECT_TRUE(std::signbit(v));
  // Out of float32's range: +-inf; below its normal range: a zero, as TF
  // parses with denormals flushed.
  ASSERT_TRUE(parse_float32("1e40", v));
  EXPECT_EQ(v, std::numeric_limits<float>::infinity());
  ASSERT_TRUE(parse_float32("-1e40", v));
  EXPECT_EQ(v, -std::numeric_limits<float>::infinity());
  ASSERT_TRUE(parse_float32("3.4028236e38", v));
  EXPECT_EQ(v, std::numeric_limits<float>::infinity());
  ASSERT_TRUE(parse_float32("3.4028235e38", v));
  EXPECT_EQ(v, std::numeric_limits<float>::max());
  ASSERT_TRUE(parse_float32("1e999999999999999999999", v));
  EXPECT_EQ(v, std::numeric_limits<float>::infinity());
  for (std::string tiny : {"1e-50", "1.4e-45", "1.1754942e-38", "1e-5000"}) {
    ASSERT_TRUE(parse_float32(tiny, v)) << tiny;
    EXPECT_EQ(v, 0.0f) << tiny;
    EXPECT_FALSE(std::signbit(v)) << tiny;
  }
  ASSERT_TRUE(parse_float32("-1.4e-45", v));
  EXPECT_EQ(v, 0.0f);
  EXPECT_TRUE(std::signbit(v));
  ASSERT_TRUE(parse_float32("1.17549435e-38", v));
  EXPECT_EQ(v, std::numeric_limits<float>::min());
  ASSERT_TRUE(parse_float32("0e999999999999", v));
  EXPECT_EQ(v, 0.0f);
  ASSERT_TRUE(parse_float32("0x123456789abcdef0123", v));
  EXPECT_EQ(v, 5.373004e+21f);
}

TEST(CsvNumbers, FloatLengthLimit) {
  // TF rejects a float field of 32 characters or more, spaces included.
  float f = 0;
  double d = 0;
  std::string digits31 = "0.10000000000000000000000000001";
  ASSERT_EQ(digits31.size(), 31u);
  EXPECT_TRUE(parse_float32(digits31, f));
  EXPECT_TRUE(parse_float64(digits31, d));
  EXPECT_EQ(d, 0.1);
  EXPECT_FALSE(parse_float32(digits31 + "1", f));
  EXPECT_FALSE(parse_float64(digits31 + "1", d));
  EXPECT_FALSE(parse_float64(std::string(30, ' ') + "1.5", d));
  EXPECT_TRUE(parse_float64(std::string(28, ' ') + "1.5", d));
  EXPECT_EQ(d, 1.5);
}

TEST(CsvNumbers, Float64) {
  double v = 0;
  ASSERT_TRUE(parse_float64("1e40", v));
  EXPECT_EQ(v, 1e40);
  ASSERT_TRUE(parse_float64("1.5e308", v));
  EXPECT_EQ(v, 1.5e308);
  ASSERT_TRUE(parse_float64("1.8e308", v));
  EXPECT_EQ(v, std::numeric_limits<double>::infinity());
  ASSERT_TRUE(parse_float64("-1e400", v));
  EXPECT_EQ(v, -std::numeric_limits<double>::infinity());
  // float64 keeps its subnormals.
  ASSERT_TRUE(parse_float64("4.9e-324", v));
  EXPECT_EQ(v, std::numeric_limits<double>::denorm_min());
  ASSERT_TRUE(parse_float64("1e-330", v));
  EXPECT_EQ(v, 0.0);
  ASSERT_TRUE(parse_float64("0.1", v));
  EXPECT_EQ(v, 0.1);
  ASSERT_TRUE(parse_float64("0x123456789abcdef0123", v));
  EXPECT_EQ(v, 5.373003642731685e+21);
  EXPECT_FALSE(parse_float64("1e", v));
  EXPECT_FALSE(parse_float64("infinity", v));
}

TEST(CsvNumbers, FastPathRoundsAsFromChars) {
  // Short decimals take a shortcut (one exact division); every value must
  // still be the correctly rounded one std::from_chars gives.
  std::mt19937_64 rng(42);
  for (int i = 0; i < 200000; ++i) {
    int whole = static_cast<int>(rng() % 10),
        fraction = static_cast<int>(rng() % 21);
    std::string text = (rng() % 2) ? "-" : "";
    for (int d = 0; d < whole; ++d)
      text += static_cast<char>('0' + rng() % 10);
    if (fraction || whole == 0) {
      text += '.';
      for (int d = 0; d < std::max(fraction, 1); ++d)
        text += static_cast<char>('0' + rng() % 10);
    }
    const char *begin = text.data() + (text[0] == '-');
    float f = 0, wantF = 0;
    double d = 0, wantD = 0;
    std::from_chars(begin, text.data() + text.size(), wantF);
    std::from_chars(begin, text.data() + text.size(), wantD);
    if (text[0] == '-') {
      wantF = -wantF;
      wantD = -wantD;
    }
    if (wantF != 0 && std::fabs(wantF) < std::numeric_limits<float>::min())
      wantF = std::copysign(0.0f, wantF);
    ASSERT_TRUE(parse_float32(text, f)) << text;
    ASSERT_TRUE(parse_float64(text, d)) << text;
    ASSERT_EQ(std::memcmp(&f, &wantF, 4), 0) << text << ": " << f;
    ASSERT_EQ(std::memcmp(&d, &wantD, 8), 0) << text << ": " << d;
  }
}

// ---------------------------------------------------------------------------
// decode_csv
// ---------------------------------------------------------------------------

Strings decode(const std::vector<std::string_view> &records,
               const std::vector<ColumnDefault> &defaults,
               const CsvOptions &options = {}) {
  return renderAll(decode_csv(records, defaults, options));
}

std::string decodeError(const std::vector<std::string_view> &records,
                        const std::vector<ColumnDefault> &defaults,
                        const CsvOptions &options = {}) {
  return errorOf([&] { decode_csv(records, defaults, options); });
}

TEST(DecodeCsv, EachTypeOneColumnPerDefault) {
  std::vector<TensorValue> out = decode_csv(
      {"1,2,3.5,4.25,x", "-1,9223372036854775807,1e3,-0,\"y z\""},
      {ColumnDefault::of(int32_t(0)), ColumnDefault::of(int64_t(0)),
       ColumnDefault::of(0.0f), ColumnDefault::of(0.0), ColumnDefault::of("")});
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(out[0].dtype, DType::Int32);
  EXPECT_EQ(out[1].dtype, DType::Int64);
  EXPECT_EQ(out[2].dtype, DType::Float32);
  EXPECT_EQ(out[3].dtype, DType::Float64);
  EXPECT_EQ(out[4].dtype, DType::String);
  for (const TensorValue &t : out)
    EXPECT_EQ(t.shape, std::vector<int64_t>{2});
  EXPECT_EQ(renderAll(out), (Strings{"[1,-1]", "[2,9223372036854775807]",
                                     "[3.5,1000]", "[4.25,-0]", "[x,y z]"}));
}

TEST(DecodeCsv, Quoting) {
  std::vector<ColumnDefault> two = {ColumnDefault::of(""),
                                    ColumnDefault::of("")};
  EXPECT_EQ(decode({"\"a,b\",c"}, two), (Strings{"[a,b]", "[c]"}));
  EXPECT_EQ(decode({"\"a\"\"b\",c"}, two), (Strings{"[a\"b]", "[c]"}));
  EXPECT_EQ(decode({"\"a\nb\",\"\"\"\""}, two), (Strings{"[a\nb]", "[\"]"}));
  EXPECT_EQ(decode({"\"abc\","}, two), (Strings{"[abc]", "[]"}));
  // A quoted number is a number.
  EXPECT_EQ(decode({"\"7\""}, {req(DType::Int32)}), Strings{"[7]"});
  // Without quoting a quote is a character like another.
  CsvOptions plain;
  plain.use_quote_delim = false;
  EXPECT_EQ(decode({"a\"b,\"c\""}, two, plain), (Strings{"[a\"b]", "[\"c\"]"}));
}

TEST(DecodeCsv, DelimiterAndSpaces) {
  CsvOptions semicolon;
  semicolon.field_delim = ';';
  EXPECT_EQ(
      decode({"1;2,5"}, {req(DType::Int32), req(DType::String)}, semicolon),
      (Strings{"[1]", "[2,5]"}));
  CsvOptions tab;
  tab.field_delim = '\t';
  EXPECT_EQ(
      decode({"1\t\"a\tb\""}, {req(DType::Int32), req(DType::String)}, tab),
      (Strings{"[1]", "[a\tb]"}));
  // Numbers may have spaces around them; strings keep theirs.
  EXPECT_EQ(decode({" 1 ,\t2\t"}, {req(DType::Int32), req(DType::String)}),
            (Strings{"[1]", "[\t2\t]"}));
  // A float field of blanks is 0 (not the default).
  EXPECT_EQ(decode({" "}, {ColumnDefault::of(5.0f)}), Strings{"[0]"});
}

TEST(DecodeCsv, DefaultsAndNaValue) {
  std::vector<ColumnDefault> defaults = {ColumnDefault::of(int32_t(-1)),
                                         ColumnDefault::of(2.5),
                                         ColumnDefault::of("none")};
  EXPECT_EQ(decode({",,", "1,\"\",NA"}, defaults),
            (Strings{"[-1,1]", "[2.5,2.5]", "[none,NA]"}))
      << "NA is a value until na_value says otherwise";
  EXPECT_EQ(decodeError({"NA,1,x"}, defaults),
            "decode_csv: record 0, column 0: 'NA' is not a valid int32");
  CsvOptions na;
  na.na_value = "NA";
  EXPECT_EQ(decode({",,", "1,\"\",NA", "NA,\"NA\",x"}, defaults, na),
            (Strings{"[-1,1,-1]", "[2.5,2.5,2.5]", "[none,none,x]"}));
}

TEST(DecodeCsv, RequiredColumns) {
  std::vector<ColumnDefault> defaults = {ColumnDefault::of(int64_t(0)),
                                         req(DType::Float32)};
  EXPECT_EQ(decode({"1,2"}, defaults), (Strings{"[1]", "[2]"}));
  std::vector<std::string_view> records(8, "1,2");
  records[7] = "3,";
  EXPECT_EQ(decodeError(records, defaults),
            "decode_csv: column 1 is required but record 7 has no value");
  CsvOptions na;
  na.na_value = "?";
  EXPECT_EQ(decodeError({"1,?"}, defaults, na),
            "decode_csv: column 1 is required but record 0 has no value");
  EXPECT_EQ(decodeError({"1,\"\""}, {req(DType::String), req(DType::String)}),
            "decode_csv: column 1 is required but record 0 has no value");
}

TEST(DecodeCsv, FieldCount) {
  std::vector<ColumnDefault> five(5, ColumnDefault::of(int32_t(0)));
  EXPECT_EQ(decodeError({"1,2,3,4"}, five),
            "decode_csv: record 0: expected 5 fields but found 4");
  EXPECT_EQ(decodeError({"1,2,3,4,5", "1,2,3,4,5,6"}, five),
            "decode_csv: record 1: expected 5 fields but found 6");
  // A trailing delimiter is an empty last field.
  EXPECT_EQ(decode({"1,2,3,4,"}, five),
            (Strings{"[1]", "[2]", "[3]", "[4]", "[0]"}));
  // An empty record has no field at all.
  EXPECT_EQ(decodeError({""}, {ColumnDefault::of(int32_t(0))}),
            "decode_csv: record 0: expected 1 fields but found 0");
}

TEST(DecodeCsv, LineBreaksAsTensorFlowTreatsThem) {
  // decode_csv skips '\n' and '\r' where a field would start...
  EXPECT_EQ(decode({"1,\n"}, {req(DType::Int32)}), Strings{"[1]"});
  EXPECT_EQ(decode({"\n1,\r\n2"}, {req(DType::Int32), req(DType::Int32)}),
            (Strings{"[1]", "[2]"}));
  // ...and rejects them inside an unquoted field.
  EXPECT_EQ(decodeError({"1,2\n"}, {req(DType::Int32), req(DType::Int32)}),
            "decode_csv: record 0, column 1: a line break inside an unquoted "
            "field");
}

TEST(DecodeCsv, QuoteErrors) {
  std::vector<ColumnDefault> two = {ColumnDefault::of(""),
                                    ColumnDefault::of("")};
  EXPECT_EQ(decodeError({"x,a\"b"}, two),
            "decode_csv: record 0, column 1: a quote inside an unquoted field "
            "(quote the field and double the quote)");
  EXPECT_EQ(decodeError({"\"a\"b,c"}, two),
            "decode_csv: record 0, column 0: a quote inside a quoted field "
            "must be doubled (\"\")");
  EXPECT_EQ(decodeError({"ok", "\"abc"}, {ColumnDefault::of("")}),
            "decode_csv: record 1, column 0: a quoted field must end with a "
            "quote followed by ',' or the end of the record");
  EXPECT_EQ(decodeError({"\""}, {ColumnDefault::of("")}),
            "decode_csv: record 0, column 0: a quoted field must end with a "
            "quote followed by ',' or the end of the record");
}

TEST(DecodeCsv, InvalidValues) {
  std::vector<ColumnDefault> defaults = {ColumnDefault::of(0.0f),
                                         ColumnDefault::of(0.0f),
                                         ColumnDefault::of(0.0f)};
  std::vector<std::string_view> records(4, "1,2,3");
  records[3] = "1,2,1.5x";
  EXPECT_EQ(decodeError(records, defaults),
            "decode_csv: record 3, column 2: '1.5x' is not a valid float32");
  EXPECT_EQ(decodeError({"2147483648"}, {req(DType::Int32)}),
            "decode_csv: record 0, column 0: '2147483648' is not a valid "
            "int32");
  EXPECT_EQ(decodeError({"+1"}, {req(DType::Int64)}),
            "decode_csv: record 0, column 0: '+1' is not a valid int64");
  EXPECT_EQ(decodeError({"infinity"}, {req(DType::Float64)}),
            "decode_csv: record 0, column 0: 'infinity' is not a valid "
            "float64");
  // The value in the message stays on one line and short.
  EXPECT_EQ(decodeError({"\"a\nb\""}, {req(DType::Int32)}),
            "decode_csv: record 0, column 0: 'a\\x0ab' is not a valid int32");
  std::string longField(100, '7');
  longField += "x";
  EXPECT_EQ(decodeError({longField}, {req(DType::Int64)}),
            "decode_csv: record 0, column 0: '" + std::string(40, '7') +
                "'... is not a valid int64");
}

TEST(DecodeCsv, SelectCols) {
  CsvOptions select;
  select.select_cols = {0, 2};
  std::vector<ColumnDefault> two = {ColumnDefault::of(int32_t(0)),
                                    ColumnDefault::of(int32_t(0))};
  EXPECT_EQ(decode({"1,2,3"}, two, select), (Strings{"[1]", "[3]"}));
  // Fields after the last selected one are not even looked at.
  EXPECT_EQ(decode({"1,x,3,4,a\"b"}, two, select), (Strings{"[1]", "[3]"}));
  // A trailing delimiter is the selected empty field.
  EXPECT_EQ(decode({"1,2,"}, two, select), (Strings{"[1]", "[0]"}));
  EXPECT_EQ(decodeError({"1,2"}, two, select),
            "decode_csv: record 0: found 2 fields, but select_cols needs "
            "column 2");
  // Columns in messages are the record's.
  EXPECT_EQ(decodeError({"1,2,z"}, two, select),
            "decode_csv: record 0, column 2: 'z' is not a valid int32");
}

TEST(DecodeCsv, StringTensorKeepsItsShape) {
  TensorValue records =
      TensorValue::of_strings({2, 2}, {"1,a", "2,b", "3,c", "4,d"});
  std::vector<TensorValue> out = decode_csv(
      records, {ColumnDefault::of(int64_t(0)), ColumnDefault::of("")});
  EXPECT_EQ(out[0].shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(out[1].shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(render(out[0]), "[1,2,3,4]");
  EXPECT_EQ(render(out[1]), "[a,b,c,d]");
  EXPECT_EQ(renderAll(decode_csv(std::vector<std::string_view>{},
                                 {ColumnDefault::of(1.0f)})),
            Strings{"[]"});
}

TEST(DecodeCsv, Misuse) {
  std::vector<ColumnDefault> two = {ColumnDefault::of(int32_t(0)),
                                    ColumnDefault::of(int32_t(0))};
  CsvOptions o;
  o.select_cols = {2, 1};
  EXPECT_EQ(misuseOf([&] { decode_csv({"1"}, two, o); }),
            "decode_csv: select_cols must be strictly increasing (2 then 1)");
  o.select_cols = {-1, 1};
  EXPECT_EQ(misuseOf([&] { decode_csv({"1"}, two, o); }),
            "decode_csv: select_cols has a negative index -1");
  o.select_cols = {1};
  EXPECT_EQ(misuseOf([&] { decode_csv({"1"}, two, o); }),
            "decode_csv: 1 select_cols but 2 record_defaults (one per "
            "selected column)");
  o = {};
  o.exclude_cols = {1};
  EXPECT_NE(misuseOf([&] { decode_csv({"1"}, two, o); }), "");
  o = {};
  o.header = true;
  EXPECT_NE(misuseOf([&] { decode_csv({"1"}, two, o); }), "");
  o = {};
  o.field_delim = '\n';
  EXPECT_EQ(misuseOf([&] { decode_csv({"1"}, two, o); }),
            "decode_csv: field_delim '\\x0a' cannot be a line break or the "
            "quote");
  EXPECT_EQ(misuseOf([&] { decode_csv({"1"}, {}); }),
            "decode_csv: record_defaults is empty");
  ColumnDefault wrong = ColumnDefault::of(1.0);
  wrong.dtype = DType::Float32;
  EXPECT_EQ(misuseOf([&] { decode_csv({"1"}, {wrong}); }),
            "decode_csv: record_defaults[0]: the default must be one float32 "
            "value, not F64[]");
  EXPECT_EQ(misuseOf([&] { decode_csv({"1"}, {req(DType::Bool)}); }),
            "decode_csv: record_defaults[0]: BOOL is not a CSV type "
            "(float32, float64, int32, int64, string)");
  EXPECT_NE(
      misuseOf([&] { decode_csv(TensorValue::of<float>({1}, {1.0f}), two); }),
      "");
}

// ---------------------------------------------------------------------------
// CsvReader (CsvDataset)
// ---------------------------------------------------------------------------

class CsvReaderTest : public estc::testing::FileTest {
protected:
  CsvReaderTest() : FileTest("csv") {}

  /// Every row of the reader, each "a|b|c".
  static Strings rowsOf(CsvReader &reader) {
    Strings rows;
    std::vector<TensorValue> row;
    while (reader.read(row)) {
      std::string text;
      for (size_t i = 0; i < row.size(); ++i)
        text += (i ? "|" : "") + render(row[i]);
      rows.push_back(text);
    }
    return rows;
  }
  Strings rows(const std::string &bytes,
               const std::vector<ColumnDefault> &defaults,
               const CsvOptions &options = {}, size_t bufferSize = 256 * 1024) {
    CsvReader reader(write("f.csv", bytes), defaults, options,
                     Compression::None, bufferSize);
    return rowsOf(reader);
  }
  /// The error reading every row gives (with the file's path as "f.csv").
  std::string readError(const std::string &bytes,
                        const std::vector<ColumnDefault> &defaults,
                        const CsvOptions &options = {}) {
    std::string path = write("f.csv", bytes);
    std::string m = errorOf([&] {
      CsvReader reader(path, defaults, options);
      rowsOf(reader);
    });
    if (m.rfind(path, 0) == 0)
      m = "f.csv" + m.substr(path.size());
    return m;
  }
};

std::vector<ColumnDefault> ints(size_t n) {
  return std::vector<ColumnDefault>(n, ColumnDefault::of(int32_t(0)));
}
std::vector<ColumnDefault> strings(size_t n) {
  return std::vector<ColumnDefault>(n, ColumnDefault::of(""));
}

TEST_F(CsvReaderTest, EachType) {
  EXPECT_EQ(rows("1,2,3.5,4.25,x\n-1,-2,1e3,-0,\"y z\"\n",
                 {req(DType::Int32), req(DType::Int64), req(DType::Float32),
                  req(DType::Float64), req(DType::String)}),
            (Strings{"1|2|3.5|4.25|x", "-1|-2|1000|-0|y z"}));
}

TEST_F(CsvReaderTest, LineEndings) {
  // "\n", "\r\n" and a lone "\r" all end a record; the last may have none.
  EXPECT_EQ(rows("1,2\r3,4\r\n5,6", ints(2)), (Strings{"1|2", "3|4", "5|6"}));
  EXPECT_EQ(rows("1,2\r\n3,4\r\n", ints(2)), (Strings{"1|2", "3|4"}));
  EXPECT_EQ(rows("x,\"abc\"\r\n", strings(2)), Strings{"x|abc"});
  EXPECT_EQ(rows("1\r", ints(1)), Strings{"1"});
  EXPECT_EQ(rows("\r\n", ints(1)), Strings{"0"});
}

TEST_F(CsvReaderTest, EmptyFileAndEmptyLines) {
  EXPECT_EQ(rows("", ints(2)), Strings{});
  // An empty line is a record of one empty field...
  EXPECT_EQ(rows("1\n\n3\n", ints(1)), (Strings{"1", "0", "3"}));
  EXPECT_EQ(rows("\n", strings(1)), Strings{""});
  // ...so with two columns it has too few.
  EXPECT_EQ(readError("1,2\n\n3,4\n", ints(2)),
            "f.csv:2: expected 2 fields but found 1");
}

TEST_F(CsvReaderTest, QuotedFields) {
  EXPECT_EQ(rows("\"a\nb\",\"c\"\"d\"\n\"x,y\",\"\"\n", strings(2)),
            (Strings{"a\nb|c\"d", "x,y|"}));
  EXPECT_EQ(rows("\"abc\"", strings(1)), Strings{"abc"});
  EXPECT_EQ(rows("\"a\r\nb\"\r\n", strings(1)), Strings{"a\r\nb"});
  EXPECT_EQ(rows("\"7\",\" 8 \"\n", ints(2)), Strings{"7|8"});
  CsvOptions plain;
  plain.use_quote_delim = false;
  EXPECT_EQ(rows("a\"b,\"c\n", strings(2), plain), Strings{"a\"b|\"c"});
}

TEST_F(CsvReaderTest, DefaultsRequiredAndNaValue) {
  EXPECT_EQ(rows("1,\n", {ColumnDefault::of(int32_t(0)),
                          ColumnDefault::of(int32_t(5))}),
            Strings{"1|5"});
  // A trailing delimiter at the end of the file is an empty field too.
  EXPECT_EQ(rows("1,", {ColumnDefault::of(int32_t(0)),
                        ColumnDefault::of(int32_t(5))}),
            Strings{"1|5"});
  CsvOptions na;
  na.na_value = "NA";
  EXPECT_EQ(rows("1,NA,\"NA\"\n",
                 {ColumnDefault::of(int32_t(0)), ColumnDefault::of(7.5),
                  ColumnDefault::of("dflt")},
                 na),
            Strings{"1|7.5|dflt"});
  na.column_names = {"id", "age"};
  EXPECT_EQ(
      readError("1,2\n3,NA\n", {req(DType::Int32), req(DType::Int64)}, na),
      "f.csv:2: column 1 ('age') is required but has no value");
  EXPECT_EQ(readError("1,2\n\"\",4\n", {req(DType::String), req(DType::Int64)}),
            "f.csv:2: column 0 is required but has no value");
}

TEST_F(CsvReaderTest, SelectAndExcludeCols) {
  CsvOptions select;
  select.select_cols = {0, 2};
  EXPECT_EQ(rows("1,2,3\n4,5,6,7,8\n", ints(2), select),
            (Strings{"1|3", "4|6"}));
  // Unlike decode_csv, CsvDataset reads the fields after the last selected
  // one, and a malformed one is an error.
  EXPECT_EQ(readError("4,5,6,7,junk\"\n", ints(2), select),
            "f.csv:1: column 4: a quote inside an unquoted field (quote the "
            "field and double the quote)");
  EXPECT_EQ(readError("1,2\n", ints(2), select),
            "f.csv:1: found 2 fields, but select_cols needs column 2");
  CsvOptions exclude;
  exclude.exclude_cols = {1};
  EXPECT_EQ(rows("1,2,3\n4,5,6\n", ints(2), exclude), (Strings{"1|3", "4|6"}));
  EXPECT_EQ(readError("1,2,3,4\n", ints(2), exclude),
            "f.csv:1: expected 3 fields (2 and 1 excluded) but found 4");
  // Columns in messages are the file's.
  select.column_names = {"a", "b", "c"};
  EXPECT_EQ(readError("1,2,x\n", ints(2), select),
            "f.csv:1: column 2 ('c'): expected int32, got 'x'");
}

TEST_F(CsvReaderTest, Header) {
  CsvOptions header;
  header.header = true;
  EXPECT_EQ(rows("a,b\n1,2\n", ints(2), header), Strings{"1|2"});
  EXPECT_EQ(rows("a,b", ints(2), header), Strings{});
  EXPECT_EQ(rows("a,b\n", ints(2), header), Strings{});
  // The header is a record: quotes and line breaks in it are fine, and its
  // field count does not matter.
  EXPECT_EQ(rows("\"a\nb\",c,d\n1,2\n", ints(2), header), Strings{"1|2"});
  EXPECT_EQ(readError("", ints(2), header),
            "f.csv: cannot read the header: the file is empty");
  EXPECT_EQ(readError("\"a", strings(1), header),
            "f.csv:1: cannot read the header: column 0: the quoted field is "
            "not closed before the end of the file");
}

TEST_F(CsvReaderTest, Errors) {
  CsvOptions named;
  named.column_names = {"id", "name", "score", "age"};
  std::vector<ColumnDefault> four = {req(DType::Int32), req(DType::String),
                                     req(DType::Float32), req(DType::Int64)};
  std::string good = "1,a,0.5,30\n";
  std::string file;
  for (int i = 0; i < 16; ++i)
    file += good;
  EXPECT_EQ(readError(file + "2,b,1.5,abc\n", four, named),
            "f.csv:17: column 3 ('age'): expected int64, got 'abc'");
  EXPECT_EQ(readError(file + "2,b,1.5\n", four, named),
            "f.csv:17: expected 4 fields but found 3");
  EXPECT_EQ(readError(file + "2,b,1.5,3,4\n", four, named),
            "f.csv:17: expected 4 fields but found 5");
  EXPECT_EQ(readError(file + "2,\"b\n\nc\",1.5x,3\n", four, named),
            "f.csv:19: column 2 ('score'): expected float32, got '1.5x'")
      << "the line where the bad field starts";
  EXPECT_EQ(readError(file + "2,\"b\nc\",1.5,3\n4,d,x,5\n", four, named),
            "f.csv:19: column 2 ('score'): expected float32, got 'x'")
      << "line numbers count the newlines inside quotes";
  EXPECT_EQ(readError(file + "2,\"b\n,1.5,3\n", four, named),
            "f.csv:17: column 1: the quoted field is not closed before the "
            "end of the file");
  EXPECT_EQ(readError("1,a\"b,2,3\n", four),
            "f.csv:1: column 1: a quote inside an unquoted field (quote the "
            "field and double the quote)");
  EXPECT_EQ(readError("1,\"a\"b,2,3\n", four),
            "f.csv:1: column 1: a quote inside a quoted field must be "
            "doubled (\"\") and the closing quote followed by ',' or a line "
            "break");
  // A column name from a header may hold anything; the message stays one
  // line.
  named.column_names[3] = "a\nge";
  EXPECT_EQ(readError("2,b,1.5,abc\n", four, named),
            "f.csv:1: column 3 ('a\\x0age'): expected int64, got 'abc'");
  std::string missing = (dir_ / "missing.csv").string();
  EXPECT_EQ(errorOf([&] { CsvReader r(missing, four); }),
            missing + ": cannot open: No such file or directory");
}

TEST_F(CsvReaderTest, GoesOnAfterABadRecord) {
  // As TF's iterator: the bad record is consumed, so ignore_errors can
  // skip it and read the next.
  CsvReader reader(write("f.csv", "1,2\n3,x\n4,a\"b\n6,7\n"), ints(2));
  std::vector<TensorValue> row;
  ASSERT_TRUE(reader.read(row));
  EXPECT_NE(errorOf([&] { reader.read(row); }), "");
  EXPECT_NE(errorOf([&] { reader.read(row); }), "");
  ASSERT_TRUE(reader.read(row));
  EXPECT_EQ(render(row[0]) + "|" + render(row[1]), "6|7");
  EXPECT_FALSE(reader.read(row));
}

TEST_F(CsvReaderTest, RowTensorsAreScalarsAndReused) {
  CsvReader reader(write("f.csv", "1,a\n2,bb\n"),
                   {req(DType::Int64), req(DType::String)});
  std::vector<TensorValue> row;
  ASSERT_TRUE(reader.read(row));
  ASSERT_EQ(row.size(), 2u);
  EXPECT_EQ(row[0].spec(), (VariableSpec{DType::Int64, {}}));
  EXPECT_EQ(row[1].spec(), (VariableSpec{DType::String, {}}));
  const char *data = row[0].data.data();
  ASSERT_TRUE(reader.read(row));
  EXPECT_EQ(row[0].data.data(), data) << "the same buffer, reused";
  EXPECT_EQ(row[0].values<int64_t>(), std::vector<int64_t>{2});
  EXPECT_EQ(row[1].strings, Strings{"bb"});
  // A row of other tensors is made right.
  row[0] = TensorValue::of<float>({2}, {1, 2});
  reader.seek(0, 0);
  ASSERT_TRUE(reader.read(row));
  EXPECT_EQ(row[0].spec(), (VariableSpec{DType::Int64, {}}));
  EXPECT_EQ(row[0].values<int64_t>(), std::vector<int64_t>{1});
}

TEST_F(CsvReaderTest, ReadBatch) {
  CsvReader reader(write("f.csv", "1,a\n2,b\n3,c\n4,d\n5,e\n"),
                   {req(DType::Int32), req(DType::String)});
  std::vector<TensorValue> columns;
  EXPECT_EQ(reader.read_batch(2, columns), 2);
  EXPECT_EQ(renderAll(columns), (Strings{"[1,2]", "[a,b]"}));
  EXPECT_EQ(columns[0].shape, std::vector<int64_t>{2});
  EXPECT_EQ(reader.read_batch(4, columns), 3);
  EXPECT_EQ(renderAll(columns), (Strings{"[3,4,5]", "[c,d,e]"}));
  EXPECT_EQ(reader.read_batch(4, columns), 0);
  EXPECT_EQ(renderAll(columns), (Strings{"[]", "[]"}));
  EXPECT_NE(misuseOf([&] { reader.read_batch(0, columns); }), "");
}

TEST_F(CsvReaderTest, ReadBatchStopsBeforeABadRecord) {
  CsvReader reader(write("f.csv", "1,a\n2,b\nx,c\n4,d\n"),
                   {req(DType::Int32), req(DType::String)});
  std::vector<TensorValue> columns;
  EXPECT_EQ(reader.read_batch(10, columns), 2);
  EXPECT_EQ(renderAll(columns), (Strings{"[1,2]", "[a,b]"}));
  EXPECT_EQ(reader.line_number(), 2);
  std::string m = errorOf([&] { reader.read_batch(10, columns); });
  EXPECT_NE(m.find(":3: column 0: expected int32, got 'x'"), std::string::npos)
      << m;
  EXPECT_EQ(reader.read_batch(10, columns), 1);
  EXPECT_EQ(renderAll(columns), (Strings{"[4]", "[d]"}));
}

TEST_F(CsvReaderTest, BufferBoundariesDoNotMatter) {
  // Every record and field shape, read with buffers from 1 byte up: each
  // boundary falls inside a quote, between "\r" and "\n", after a quote...
  std::string bytes = "h1,h2,h3\r\n"
                      "1,\"a,b\",2.5\r\n"
                      "\"2\",\"x\"\"y\"\"\",-1e3\r"
                      "3,\"multi\nline\r\nfield\",\n"
                      "4,,\"\"\n"
                      "5,plain,0x10";
  CsvOptions options;
  options.header = true;
  std::vector<ColumnDefault> defaults = {
      req(DType::Int64), ColumnDefault::of("-"), ColumnDefault::of(9.0)};
  Strings expected = {"1|a,b|2.5", "2|x\"y\"|-1000", "3|multi\nline\r\nfield|9",
                      "4|-|9", "5|plain|16"};
  for (size_t size : {1, 2, 3, 4, 5, 7, 11, 16, 64, 4096})
    EXPECT_EQ(rows(bytes, defaults, options, size), expected)
        << "buffer_size " << size;
}

TEST_F(CsvReaderTest, OffsetLineNumberAndSeek) {
  std::string path =
      write("f.csv", "id,text\n1,\"two\nlines\"\n2,b\r\n3,c\n4,d");
  CsvOptions options;
  options.header = true;
  std::vector<ColumnDefault> defaults = {req(DType::Int32), req(DType::String)};
  CsvReader reader(path, defaults, options, Compression::None, 5);
  EXPECT_EQ(reader.offset(), 8u) << "after the header";
  EXPECT_EQ(reader.line_number(), 1);
  std::vector<TensorValue> row;
  ASSERT_TRUE(reader.read(row));
  EXPECT_EQ(reader.offset(), 22u);
  EXPECT_EQ(reader.line_number(), 3);
  ASSERT_TRUE(reader.read(row));
  EXPECT_EQ(reader.offset(), 27u);
  EXPECT_EQ(reader.line_number(), 4);
  uint64_t offset = reader.offset();
  int64_t line = reader.line_number();
  Strings rest = rowsOf(reader);
  EXPECT_EQ(rest, (Strings{"3|c", "4|d"}));
  EXPECT_EQ(reader.offset(), 34u);
  EXPECT_EQ(reader.line_number(), 5) << "the last record has no line break";

  // A fresh reader put where the first one was (no second header skip).
  CsvReader again(path, defaults, options);
  again.seek(offset, line);
  EXPECT_EQ(rowsOf(again), rest);
  // Line numbers in errors go on from the position.
  std::string bad = write("bad.csv", "1,a\n2,b\nx,c\n");
  CsvReader third(bad, defaults);
  third.seek(8, 2);
  std::string m = errorOf([&] { third.read(row); });
  EXPECT_EQ(m, bad + ":3: column 0: expected int32, got 'x'");
  EXPECT_NE(errorOf([&] { third.seek(100, 0); }), "");
}

TEST_F(CsvReaderTest, GzipWhenTheStreamSupportsIt) {
  std::string path = (dir_ / "f.csv.gz").string();
  std::string bytes = "a,b\n1,\"x\ny\"\n2,z\n";
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
  CsvOptions options;
  options.header = true;
  std::unique_ptr<CsvReader> reader;
  try {
    reader = std::make_unique<CsvReader>(
        path, std::vector<ColumnDefault>{req(DType::Int32), req(DType::String)},
        options, Compression::Gzip, 3);
  } catch (const DataError &e) {
    if (std::string(e.what()).find("not supported") != std::string::npos)
      GTEST_SKIP() << e.what();
    throw;
  }
  EXPECT_EQ(rowsOf(*reader), (Strings{"1|x\ny", "2|z"}));
  EXPECT_EQ(reader->offset(), bytes.size()) << "uncompressed offsets";
  reader->seek(12, 3);
  EXPECT_EQ(rowsOf(*reader), Strings{"2|z"});
}

TEST_F(CsvReaderTest, Misuse) {
  std::string path = write("f.csv", "1\n");
  CsvOptions o;
  o.select_cols = {0, 1};
  o.exclude_cols = {2};
  EXPECT_EQ(misuseOf([&] { CsvReader r(path, ints(2), o); }),
            "CsvReader: select_cols and exclude_cols cannot both be given");
  o = {};
  o.exclude_cols = {3, 3};
  EXPECT_EQ(misuseOf([&] { CsvReader r(path, ints(2), o); }),
            "CsvReader: exclude_cols must be strictly increasing (3 then 3)");
  o = {};
  o.field_delim = '"';
  EXPECT_NE(misuseOf([&] { CsvReader r(path, ints(2), o); }), "");
  o.use_quote_delim = false;
  EXPECT_EQ(misuseOf([&] { CsvReader r(path, ints(1), o); }), "");
  EXPECT_EQ(misuseOf([&] { CsvReader r(path, {}); }),
            "CsvReader: record_defaults is empty");
}

// ---------------------------------------------------------------------------
// make_csv_dataset: header and inference
// ---------------------------------------------------------------------------

class CsvInferenceTest : public CsvReaderTest {
protected:
  std::vector<DType> types(const std::vector<std::string> &files,
                           const Strings &names, int64_t rows = 100,
                           CsvOptions options = {}) {
    options.header = true;
    std::vector<DType> out;
    for (const ColumnDefault &d :
         infer_column_defaults(files, names, rows, options)) {
      out.push_back(d.dtype);
      EXPECT_TRUE(d.value.has_value());
      if (d.dtype == DType::String)
        EXPECT_EQ(d.value->strings, Strings{""});
      else
        EXPECT_EQ(d.value->element(0), 0.0);
    }
    return out;
  }
};

TEST_F(CsvInferenceTest, Header) {
  std::string a = write("a.csv", "id,\"na,me\",score\n1,x,2\n");
  std::string b = write("b.csv", "id,\"na,me\",score\r\n");
  EXPECT_EQ(read_csv_header({a, b}), (Strings{"id", "na,me", "score"}));
  std::string c = write("c.csv", "id,name,score\n");
  EXPECT_EQ(errorOf([&] { read_csv_header({a, c}); }),
            c + ": its header ('id', 'name', 'score') differs from " + a +
                "'s ('id', 'na,me', 'score')");
  std::string empty = write("e.csv", "");
  EXPECT_EQ(errorOf([&] { read_csv_header({a, empty}); }),
            empty + ": cannot read the header: the file is empty");
  std::string dup = write("d.csv", "x,y,x\n");
  EXPECT_EQ(errorOf([&] { read_csv_header({dup}); }),
            dup + ": the header names a column more than once: 'x'");
  CsvOptions semicolon;
  semicolon.field_delim = ';';
  EXPECT_EQ(read_csv_header({write("s.csv", "a;b\n")}, semicolon),
            (Strings{"a", "b"}));
}

TEST_F(CsvInferenceTest, TypesInTensorFlowsOrder) {
  std::string f = write("f.csv", "i32,i64,f32,f64,s,none,neg_inf,under\n"
                                 "1,3000000000,1.5,1e40,abc,,-inf,1_000\n"
                                 "-2,1,2,1,1,,-Infinity,2\n");
  EXPECT_EQ(
      types({f}, {"i32", "i64", "f32", "f64", "s", "none", "neg_inf", "under"}),
      (std::vector<DType>{DType::Int32, DType::Int64, DType::Float32,
                          DType::Float64, DType::String, DType::String,
                          DType::Float32, DType::Int32}));
  // "nan" and "inf" are not floats to numpy's `< np.inf` test; a value
  // beyond float64 is a string.
  std::string g = write("g.csv", "a,b,c,d\nnan,inf,1e400,0x10\n");
  EXPECT_EQ(types({g}, {"a", "b", "c", "d"}),
            (std::vector<DType>(4, DType::String)));
}

TEST_F(CsvInferenceTest, TypesOnlyWiden) {
  // Each value moves the column to the least permissive type at or after
  // the one so far.
  std::string f = write("f.csv", "a,b,c,d\n"
                                 "1,1.5,3000000000,x\n"
                                 "2.5,2,4,5\n");
  EXPECT_EQ(types({f}, {"a", "b", "c", "d"}),
            (std::vector<DType>{DType::Float32, DType::Float32, DType::Int64,
                                DType::String}));
}

TEST_F(CsvInferenceTest, NaValueRowsFilesAndSelection) {
  std::string f = write("f.csv", "a,b\nNA,1\n2,x\n");
  std::string g = write("g.csv", "a,b\n1.5,2\n");
  CsvOptions na;
  na.na_value = "NA";
  EXPECT_EQ(types({f}, {"a", "b"}, 100, na),
            (std::vector<DType>{DType::Int32, DType::String}));
  // One row: only "NA,1" is looked at.
  EXPECT_EQ(types({f}, {"a", "b"}, 1, na),
            (std::vector<DType>{DType::String, DType::Int32}));
  // Rows go on across files; negative means all of them.
  EXPECT_EQ(types({f, g}, {"a", "b"}, -1, na),
            (std::vector<DType>{DType::Float32, DType::String}));
  EXPECT_EQ(types({f, g}, {"a", "b"}, 2, na),
            (std::vector<DType>{DType::Int32, DType::String}));
  CsvOptions select = na;
  select.select_cols = {1};
  EXPECT_EQ(types({g}, {"a", "b"}, 100, select),
            (std::vector<DType>{DType::Int32}));
}

TEST_F(CsvInferenceTest, FieldCountErrors) {
  std::string f = write("f.csv", "a,b\n1,2\n3\n");
  EXPECT_EQ(errorOf([&] { types({f}, {"a", "b"}); }),
            f + ":3: expected 2 fields but found 1 (inferring column types)");
  // readers.py checks one row past the rows it infers from.
  EXPECT_NE(errorOf([&] { types({f}, {"a", "b"}, 1); }), "");
  EXPECT_EQ(types({f}, {"a", "b"}, 0),
            (std::vector<DType>{DType::String, DType::String}));
  // Python's csv reads an empty line as a row of no fields.
  std::string e = write("e.csv", "a\n1\n\n2\n");
  EXPECT_EQ(errorOf([&] { types({e}, {"a"}); }),
            e + ":3: expected 1 fields but found 0 (inferring column types)");
  EXPECT_EQ(errorOf([&] { types({write("h.csv", "")}, {"a"}); }),
            (dir_ / "h.csv").string() +
                ": cannot read the header: the file is empty");
}

} // namespace
