//===- Readers.h - Dataset sources over files: TFRecord, text, CSV ------===//
//
// tf.data's file datasets. Each takes file names (or a Dataset of file
// names, such as list_files gives) and reads the files one after the other,
// or num_parallel_reads of them interleaved record by record with each open
// file read ahead on its own thread. Elements are string scalars (records,
// lines) or, for CSV, tuples of column scalars.
//
// Positions are saved as (file, offset in its uncompressed stream), so a
// restored iterator reopens the file and seeks there. A record whose data
// CRC fails raises DataError and is skipped by the next next() (so
// ignore_errors() drops it); after a bad record header or a truncated record
// the rest of that file is unreadable: the error is raised once and the
// file ends there.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_DATA_READERS_H
#define ESTC_LIB_DATA_READERS_H

#include "lib/Data/Csv.h"
#include "lib/Data/Dataset.h"

#include <string>
#include <vector>

namespace estc {
namespace data {

/// Bytes read from a file at a time (TF's default buffer_size).
constexpr int64_t kDefaultReadBuffer = 256 * 1024;

/// tf.data.TFRecordDataset: every record of the files, as string scalars.
/// compression_type "", "GZIP" or "ZLIB".
Dataset TFRecordDataset(std::vector<std::string> filenames,
                        const std::string &compression_type = "",
                        int64_t buffer_size = kDefaultReadBuffer,
                        int64_t num_parallel_reads = 0);
Dataset TFRecordDataset(const Dataset &filenames,
                        const std::string &compression_type = "",
                        int64_t buffer_size = kDefaultReadBuffer,
                        int64_t num_parallel_reads = 0);

/// tf.data.TextLineDataset: every line of the files (without "\n" and
/// "\r"), as string scalars.
Dataset TextLineDataset(std::vector<std::string> filenames,
                        const std::string &compression_type = "",
                        int64_t buffer_size = kDefaultReadBuffer,
                        int64_t num_parallel_reads = 0);
Dataset TextLineDataset(const Dataset &filenames,
                        const std::string &compression_type = "",
                        int64_t buffer_size = kDefaultReadBuffer,
                        int64_t num_parallel_reads = 0);

/// tf.data.experimental.CsvDataset: every record of the files as a tuple of
/// scalars, one per selected column, typed and defaulted by
/// record_defaults (options: header, field_delim, use_quote_delim,
/// na_value, select_cols / exclude_cols). A bad record raises DataError
/// with file, line and column, and the next next() goes on after it.
Dataset CsvDataset(std::vector<std::string> filenames,
                   std::vector<ColumnDefault> record_defaults,
                   CsvOptions options = {},
                   const std::string &compression_type = "",
                   int64_t buffer_size = kDefaultReadBuffer);
Dataset CsvDataset(const Dataset &filenames,
                   std::vector<ColumnDefault> record_defaults,
                   CsvOptions options = {},
                   const std::string &compression_type = "",
                   int64_t buffer_size = kDefaultReadBuffer);

/// tf.data.experimental.make_csv_dataset's arguments.
struct MakeCsvOptions {
  /// The files' columns; empty: from the first file's header.
  std::vector<std::string> column_names;
  /// Each selected column's type and default; empty: inferred from the
  /// first num_rows_for_inference records.
  std::vector<ColumnDefault> column_defaults;
  /// The column returned as the labels ("": no labels).
  std::string label_name;
  /// The columns to keep, by name (empty: all).
  std::vector<std::string> select_columns;
  char field_delim = ',';
  bool use_quote_delim = true;
  std::string na_value;
  bool header = true;
  /// Passes over the data; nullopt: forever (then the last partial batch
  /// is dropped, as TF does).
  std::optional<int64_t> num_epochs;
  bool shuffle = true;
  int64_t shuffle_buffer_size = 10000;
  std::optional<uint64_t> shuffle_seed;
  /// prefetch's buffer; AUTOTUNE by default.
  int64_t prefetch_buffer_size = AUTOTUNE;
  /// Files read at a time, interleaved record by record.
  int64_t num_parallel_reads = 1;
  int64_t num_rows_for_inference = 100;
  std::string compression_type;
  bool ignore_errors = false;
};

/// tf.data.experimental.make_csv_dataset: batches of batch_size records
/// of the files matching `file_pattern` as (features dict, labels) — or a
/// features dict without label_name — each a [batch] tensor. DataError for
/// a label_name or select_columns entry that is not a column, naming it.
Dataset make_csv_dataset(std::vector<std::string> file_pattern,
                         int64_t batch_size, MakeCsvOptions options = {});

} // namespace data
} // namespace estc

#endif // ESTC_LIB_DATA_READERS_H
