//===- Csv.h - CSV records: decode_csv, CsvDataset's reader, inference ---===//
//
// CSV as TensorFlow 2.15 reads it, under the input pipeline's CSV sources
// (Dataset's decode_csv, CsvDataset and make_csv_dataset are thin wrappers
// over this file):
//
//   - decode_csv: tf.io.decode_csv on records already split into lines
//     (TextLineDataset's); one output column of shape [N] per selected
//     column.
//   - CsvReader: tf.data.experimental.CsvDataset's reader of one file,
//     record by record, through an InputStream (plain, GZIP or ZLIB), with
//     RFC 4180 quoting (delimiters and line breaks inside quotes, "" for a
//     quote), header skipping, select_cols / exclude_cols, and a position
//     (uncompressed byte offset + line number) an iterator saves and seeks
//     back to.
//   - read_csv_header / infer_column_defaults: what make_csv_dataset does
//     before reading: column names from the header, column types from the
//     first rows (int32 -> int64 -> float32 -> float64 -> string, as
//     readers.py's _infer_type).
//
// TF has two CSV parsers that differ at the edges, and each is matched: a
// decode_csv record skips '\n'/'\r' where a field starts and rejects them
// inside an unquoted field; CsvReader ends a record at '\n', '\r' or
// "\r\n", so an empty line is a record of one empty field. Numbers are
// parsed as TF's strings::safe_strto32/64 and safe_strtof/d parse them:
// ints are decimal with an optional '-' (no '+'), floats accept a sign,
// "inf"/"nan" in any case, hexadecimal integers ("0x1F") and exponents;
// both allow spaces around the number, a float field of 32 characters or
// more is rejected, and a float32 that would be subnormal is 0 (TF parses
// with denormals flushed).
//
// Errors in the data throw DataError with one line naming the place and
// what was expected:
//   "data/train.csv:17: column 3 ('age'): expected int64, got 'abc'"
//   "decode_csv: record 3, column 2: '1.5x' is not a valid float32"
// Columns are numbered from 0 as select_cols numbers them (the file's
// columns, not the selected ones); lines from 1. After a DataError from
// CsvReader::read the reader stands at the next record (as TF's iterator
// does, so ignore_errors can go on). Misuse of the API (select_cols not
// increasing, as many defaults as columns missing, a bad delimiter)
// throws std::invalid_argument.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_DATA_CSV_H
#define ESTC_LIB_DATA_CSV_H

#include "lib/Data/InputStream.h"
#include "lib/Tensor/TensorValue.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace estc {
namespace data {

/// One column's record default (TF's record_defaults entry): its type and
/// the value an empty field or na_value gets; without a value the column
/// is required, and an empty field is an error.
struct ColumnDefault {
  /// Float32, Float64, Int32, Int64 or String.
  DType dtype = DType::Float32;
  /// A scalar of dtype; nullopt: the column is required.
  std::optional<TensorValue> value;

  /// A required column (TF: `tf.int64` in record_defaults).
  static ColumnDefault required(DType dtype);
  /// A column with a default (TF: `[0.0]`, `[0]`, `[""]`).
  static ColumnDefault of(float value);
  static ColumnDefault of(double value);
  static ColumnDefault of(int32_t value);
  static ColumnDefault of(int64_t value);
  static ColumnDefault of(std::string value);
  static ColumnDefault of(const char *value) { return of(std::string(value)); }
  /// TF's default for an inferred column: 0 of the type, or "".
  static ColumnDefault zero(DType dtype);
};

/// decode_csv's and CsvDataset's options, with TF's names and defaults.
struct CsvOptions {
  char field_delim = ',';
  /// RFC 4180 quoting; when false a quote is an ordinary character.
  bool use_quote_delim = true;
  /// A field equal to this (after unquoting) is missing, as an empty one.
  std::string na_value;
  /// The file's columns to output, strictly increasing (empty: all).
  std::vector<int64_t> select_cols;
  /// CsvReader only: the file's columns to leave out, strictly increasing
  /// (empty: none); not together with select_cols.
  std::vector<int64_t> exclude_cols;
  /// CsvReader only: the first record of the file is a header to skip.
  bool header = false;
  /// Optional names of the file's columns (all of them), used only in
  /// error messages: "column 3 ('age')".
  std::vector<std::string> column_names;
};

/// tf.io.decode_csv: each record split into fields and converted to its
/// column's type. Returns one tensor of shape [records.size()] per
/// record default (per selected column with select_cols). DataError
/// naming the record and column for a field that does not parse, a
/// missing required field or a wrong field count; std::invalid_argument
/// for bad options (exclude_cols or header set, select_cols not strictly
/// increasing or not as many as the defaults, no defaults).
std::vector<TensorValue>
decode_csv(const std::vector<std::string_view> &records,
           const std::vector<ColumnDefault> &record_defaults,
           const CsvOptions &options = {});
/// The same on a String tensor of any shape: every output has its shape.
std::vector<TensorValue>
decode_csv(const TensorValue &records,
           const std::vector<ColumnDefault> &record_defaults,
           const CsvOptions &options = {});

/// CsvDataset's reader of one file. Not thread-safe.
class CsvReader {
public:
  /// Opens `path` (DataError when it cannot be) and, with options.header,
  /// skips its first record (DataError when there is none or it is
  /// malformed, as TF's "Can't read header of file").
  CsvReader(std::string path, std::vector<ColumnDefault> record_defaults,
            CsvOptions options = {},
            Compression compression = Compression::None,
            size_t buffer_size = 256 * 1024);
  ~CsvReader();
  CsvReader(const CsvReader &) = delete;
  CsvReader &operator=(const CsvReader &) = delete;

  /// The next record, one scalar per output column, in `row` (whose
  /// tensors are reused: a row read again and again allocates nothing for
  /// numbers); false at the end of the file.
  bool read(std::vector<TensorValue> &row);
  /// Up to `max_records` records into `columns`, one tensor of shape [n]
  /// per output column; returns n (0 at the end of the file). A bad record
  /// after good ones ends the batch early; the next call throws its error.
  int64_t read_batch(int64_t max_records, std::vector<TensorValue> &columns);

  const std::string &path() const;
  /// Uncompressed byte offset of the next record.
  uint64_t offset() const;
  /// Line breaks before offset(): the next record starts on line
  /// line_number() + 1. "\n", "\r\n" and "\r" end a record; newlines
  /// inside quoted fields count too.
  int64_t line_number() const;
  /// Goes back (or forward) to a position offset() and line_number()
  /// gave; the header is not skipped again. DataError when the file is
  /// shorter than `offset`.
  void seek(uint64_t offset, int64_t line_number);

  /// The number of output columns (record defaults).
  size_t num_columns() const;

private:
  struct State;
  std::unique_ptr<State> state_;
};

/// make_csv_dataset's column names: the first record of each file (all
/// must be equal). DataError for an empty file, files whose headers
/// differ, or duplicate names.
std::vector<std::string>
read_csv_header(const std::vector<std::string> &files,
                const CsvOptions &options = {},
                Compression compression = Compression::None);

/// make_csv_dataset's record defaults when none are given: each selected
/// column's type inferred from the first `num_rows_for_inference` records
/// of the files, in order (negative: all of them), as readers.py infers it
/// (Python's int() and float() decide what is a number; "nan" and "inf"
/// make a column a string column, a value too large for float32 a float64
/// one; an empty field or na_value says nothing); a column with no value
/// is a string column. Each default is 0 or "". Uses options.field_delim,
/// use_quote_delim, na_value, header and select_cols. DataError naming the
/// file and line of a record without column_names.size() fields.
std::vector<ColumnDefault>
infer_column_defaults(const std::vector<std::string> &files,
                      const std::vector<std::string> &column_names,
                      int64_t num_rows_for_inference = 100,
                      const CsvOptions &options = {},
                      Compression compression = Compression::None);

/// TF's numbers: what decode_csv and CsvReader accept in a field of each
/// type; false for anything else (tf.strings.to_number parses with the
/// same functions).
bool parse_int32(std::string_view text, int32_t &value);
bool parse_int64(std::string_view text, int64_t &value);
bool parse_float32(std::string_view text, float &value);
bool parse_float64(std::string_view text, double &value);

} // namespace data
} // namespace estc

#endif // ESTC_LIB_DATA_CSV_H
