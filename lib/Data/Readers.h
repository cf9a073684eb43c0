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

} // namespace data
} // namespace estc

#endif // ESTC_LIB_DATA_READERS_H
