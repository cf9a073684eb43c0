//===- csv_fuzzer.cpp - CSV: CsvReader, decode_csv, inference (lib/Data) -===//
//
// The first four bytes choose the options and the columns (delimiter,
// quoting, header, na_value, select_cols / exclude_cols, one to four
// columns of int32, int64, float32, float64 or string, each required or
// not); the rest is the file. The file is read
//
//   - by CsvReader row by row with a 256 KiB buffer, going on after each
//     DataError as ignore_errors would;
//   - again with a buffer of 1 to 8 bytes, and with read_batch(3), which
//     must give the same rows and the same errors in the same order;
//   - from the middle, by a fresh reader seek()ed to a position the first
//     one reported, which must give the same rest;
//   - as TextLineReader lines through decode_csv, all at once and one by
//     one (the same values, or an error in both);
//   - by read_csv_header + infer_column_defaults.
//
// With a header, its names are the column names in messages. The
// documented failures are DataError, one line, naming the file (the
// readers) or "decode_csv: "; std::invalid_argument never happens, as the
// options are valid by construction.
//
//===----------------------------------------------------------------------===//

#include "test/fuzz/FuzzSupport.h"

#include "lib/Data/Csv.h"
#include "lib/Data/TextLine.h"

#include <cstring>

using namespace estc;
using namespace estc::data;
using namespace estc::fuzz;

namespace {

struct Config {
  CsvOptions options;
  std::vector<ColumnDefault> defaults;
  size_t smallBuffer = 1;
};

Config configOf(const uint8_t *b) {
  Config c;
  static const char delims[] = {',', ';', '\t', '|'};
  c.options.field_delim = delims[b[0] & 3];
  c.options.use_quote_delim = (b[0] & 4) == 0;
  c.options.header = (b[0] & 8) != 0;
  if (b[0] & 16)
    c.options.na_value = "NA";
  size_t columns = 1 + (b[1] & 3);
  switch ((b[0] >> 5) & 3) {
  case 1: // every other column
    for (size_t i = 0; i < columns; ++i)
      c.options.select_cols.push_back(static_cast<int64_t>(2 * i));
    break;
  case 2:
    c.options.exclude_cols = {1};
    break;
  default:
    break;
  }
  c.smallBuffer = 1 + ((b[1] >> 2) & 7);
  for (size_t i = 0; i < columns; ++i) {
    int type = (b[2] >> (2 * i)) & 3;
    bool required = (b[3] >> i) & 1;
    DType dtype = type == 0   ? DType::Int32
                  : type == 1 ? DType::Int64
                  : type == 2 ? (i % 2 ? DType::Float64 : DType::Float32)
                              : DType::String;
    if (required)
      c.defaults.push_back(ColumnDefault::required(dtype));
    else if (dtype == DType::String)
      c.defaults.push_back(ColumnDefault::of("d"));
    else
      c.defaults.push_back(ColumnDefault::zero(dtype));
  }
  return c;
}

std::string render(const TensorValue &t, size_t i) {
  switch (t.dtype) {
  case DType::String:
    return "s:" + t.strings[i];
  case DType::Int32:
    return std::to_string(t.values<int32_t>()[i]);
  case DType::Int64:
    return std::to_string(t.values<int64_t>()[i]);
  case DType::Float32: {
    float v = t.values<float>()[i];
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    return "f:" + std::to_string(bits);
  }
  default: {
    double v = t.values<double>()[i];
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    return "d:" + std::to_string(bits);
  }
  }
}

void checkError(const std::string &message, const std::string &prefix) {
  if (message.rfind(prefix, 0) != 0)
    die("error does not start with '" + prefix + "': " + message);
  if (message.find_first_of("\n\r") != std::string::npos)
    die("error is not one line: " + message);
}

/// What a reader gave: each row ("1|2.5|s:x") or error ("E:" + message),
/// and the position before each.
struct Outcome {
  std::vector<std::string> results;
  std::vector<std::pair<uint64_t, int64_t>> positions;
};

/// Reads to the end, going on after errors.
Outcome readAll(CsvReader &reader, const std::string &path, size_t limit) {
  Outcome out;
  std::vector<TensorValue> row;
  for (size_t step = 0; step < limit; ++step) {
    out.positions.emplace_back(reader.offset(), reader.line_number());
    try {
      if (!reader.read(row))
        return out;
      if (row.size() != reader.num_columns())
        die("a row of the wrong size");
      std::string text;
      for (const TensorValue &t : row) {
        if (!t.shape.empty())
          die("a row value is not a scalar");
        text += render(t, 0) + "|";
      }
      out.results.push_back(text);
    } catch (const DataError &e) {
      checkError(e.what(), path + ":");
      out.results.push_back(std::string("E:") + e.what());
    }
  }
  die("the reader does not get to the end of the file");
}

Outcome readBatches(CsvReader &reader, const std::string &path, size_t limit) {
  Outcome out;
  std::vector<TensorValue> columns;
  for (size_t step = 0; step < limit; ++step) {
    try {
      int64_t n = reader.read_batch(3, columns);
      if (n == 0)
        return out;
      for (int64_t i = 0; i < n; ++i) {
        std::string text;
        for (const TensorValue &t : columns) {
          if (t.shape != std::vector<int64_t>{n})
            die("a batch column of the wrong shape");
          text += render(t, static_cast<size_t>(i)) + "|";
        }
        out.results.push_back(text);
      }
    } catch (const DataError &e) {
      checkError(e.what(), path + ":");
      out.results.push_back(std::string("E:") + e.what());
    }
  }
  die("read_batch does not get to the end of the file");
}

void fuzzReader(const Config &c, const std::string &path, size_t size) {
  size_t limit = size + 4;
  std::unique_ptr<CsvReader> big, small, batched;
  try {
    big = std::make_unique<CsvReader>(path, c.defaults, c.options);
  } catch (const DataError &e) {
    checkError(e.what(), path + ":");
    // The header: every reader must fail on it alike.
    try {
      CsvReader again(path, c.defaults, c.options, Compression::None,
                      c.smallBuffer);
    } catch (const DataError &e2) {
      if (std::string(e.what()) != e2.what())
        die("the header error depends on the buffer size");
      return;
    }
    die("the header reads with a small buffer only");
  }
  Outcome a = readAll(*big, path, limit);
  small = std::make_unique<CsvReader>(path, c.defaults, c.options,
                                      Compression::None, c.smallBuffer);
  if (readAll(*small, path, limit).results != a.results)
    die("a small buffer reads differently");
  batched = std::make_unique<CsvReader>(path, c.defaults, c.options);
  if (readBatches(*batched, path, limit).results != a.results)
    die("read_batch reads differently");
  if (a.results.empty())
    return;
  size_t middle = a.results.size() / 2;
  CsvReader resumed(path, c.defaults, c.options, Compression::None,
                    c.smallBuffer);
  resumed.seek(a.positions[middle].first, a.positions[middle].second);
  Outcome rest = readAll(resumed, path, limit);
  if (rest.results !=
      std::vector<std::string>(a.results.begin() + middle, a.results.end()))
    die("a reader seek()ed to a saved position reads differently");
}

void fuzzDecode(const Config &c, const std::string &path) {
  if (!c.options.exclude_cols.empty())
    return; // decode_csv has no exclude_cols
  CsvOptions options = c.options;
  options.header = false;
  std::vector<std::string> lines;
  TextLineReader reader(path, Compression::None, 3);
  std::string line;
  while (reader.read(line)) {
    if (line.find('\r') != std::string::npos)
      die("a line with a carriage return");
    lines.push_back(line);
  }
  if (reader.line_number() != static_cast<int64_t>(lines.size()))
    die("line_number() is not the number of lines read");
  std::vector<std::string_view> views(lines.begin(), lines.end());
  std::vector<TensorValue> all;
  bool allOk = true;
  try {
    all = decode_csv(views, c.defaults, options);
  } catch (const DataError &e) {
    checkError(e.what(), "decode_csv: ");
    allOk = false;
  }
  bool eachOk = true;
  for (size_t r = 0; r < views.size(); ++r) {
    try {
      std::vector<TensorValue> one =
          decode_csv({views[r]}, c.defaults, options);
      for (size_t i = 0; allOk && i < one.size(); ++i)
        if (render(one[i], 0) != render(all[i], r))
          die("decode_csv of one record differs from the batch's");
    } catch (const DataError &e) {
      checkError(e.what(), "decode_csv: ");
      eachOk = false;
    }
  }
  if (allOk != eachOk)
    die("decode_csv fails on the batch but not on each record, or back");
  if (allOk)
    for (const TensorValue &t : all)
      if (t.shape != std::vector<int64_t>{static_cast<int64_t>(views.size())})
        die("a decode_csv output of the wrong shape");
}

void fuzzInference(const Config &c, const std::string &path) {
  CsvOptions options = c.options;
  options.header = true;
  options.select_cols.clear();
  options.exclude_cols.clear();
  try {
    std::vector<std::string> names = read_csv_header({path}, options);
    if (names.empty())
      die("a header without names");
    std::vector<ColumnDefault> d =
        infer_column_defaults({path}, names, 5, options);
    if (d.size() != names.size())
      die("not one inferred default per column");
  } catch (const DataError &e) {
    checkError(e.what(), path + ":");
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 4)
    return 0;
  Config c = configOf(data);
  std::string path = scratch().write("data.csv", bytesOf(data + 4, size - 4));
  try {
    // Names from the header go into the messages, as make_csv_dataset
    // passes them.
    if (c.options.header) {
      try {
        c.options.column_names = read_csv_header({path}, c.options);
      } catch (const DataError &e) {
        checkError(e.what(), path + ":");
      }
    }
    fuzzReader(c, path, size);
    fuzzDecode(c, path);
    fuzzInference(c, path);
  } catch (const std::invalid_argument &e) {
    die(std::string("std::invalid_argument on valid options: ") + e.what());
  }
  return 0;
}
