//===- TFRecord.h - TFRecord files: TF's framing of records -------------===//
//
// The record file format of tf.io.TFRecordWriter and tf.data's
// TFRecordDataset. Each record is
//
//   uint64 length            little-endian
//   uint32 masked_crc32c(length's 8 bytes)
//   byte   data[length]
//   uint32 masked_crc32c(data)
//
// with TF's masked CRC-32C (lib/Support/Crc32c.h), the whole file
// optionally compressed as one GZIP or ZLIB stream (InputStream). An
// uncompressed file written here is byte for byte what TF writes.
//
// Reading checks both CRCs. Every problem is a DataError with one line
// naming the file and the uncompressed offset of the record at fault:
//   "<file>: truncated record at byte N"
//   "<file>: corrupt record at byte N: length CRC mismatch" (or data CRC)
//   "<file>: corrupt record at byte N: length L is larger than the file
//    (M bytes)"
// plus InputStream's own (cannot open, corrupt GZIP data, ...). After an
// error the reader stays at the record at fault: read() tries it again,
// seek() moves on.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_DATA_TFRECORD_H
#define ESTC_LIB_DATA_TFRECORD_H

#include "lib/Data/InputStream.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace estc {
namespace data {

/// Reads the records of a TFRecord file one by one (TF's RecordReader).
class TFRecordReader {
public:
  /// Opens `path`; DataError when it cannot be opened. `buffer_size`: bytes
  /// read from the file at a time.
  explicit TFRecordReader(std::string path,
                          Compression compression = Compression::None,
                          size_t buffer_size = 256 * 1024);

  /// The next record's data; false at the clean end of the file (after a
  /// whole record, or in an empty file).
  /// After a data CRC mismatch the next read() continues with the record
  /// after the bad one; after a bad header or a truncation it fails again
  /// (the framing is lost).
  bool read(std::string &record);
  /// Uncompressed offset of the next record: what seek() takes to come
  /// back to it.
  uint64_t offset() const { return offset_; }
  /// Moves to the record at uncompressed offset `offset` (an offset()
  /// seen before); DataError when the file is shorter.
  void seek(uint64_t offset);
  const std::string &path() const { return stream_.path(); }

private:
  [[noreturn]] void fail(const std::string &what) const;
  InputStream stream_;
  uint64_t offset_ = 0;
  uint64_t fileSize_ = 0; // plain files: the size when last asked
};

/// Writes records in TF's framing (tf.io.TFRecordWriter). The file is
/// created (truncated) by the constructor; close() writes what is
/// buffered, ends a compressed stream and closes the file. Errors name the
/// file: "<file>: cannot write: <reason>".
class TFRecordWriter {
public:
  explicit TFRecordWriter(std::string path,
                          Compression compression = Compression::None);
  /// Closes the file if close() was not called; errors are lost then.
  ~TFRecordWriter();
  TFRecordWriter(const TFRecordWriter &) = delete;
  TFRecordWriter &operator=(const TFRecordWriter &) = delete;

  void write(std::string_view record);
  /// Writes what is buffered to the file (a compressed stream is flushed
  /// to a byte boundary, Z_SYNC_FLUSH, so that what is written so far
  /// inflates); readers then see every record written before.
  void flush();
  /// Flushes, ends a compressed stream and closes the file. Writing after
  /// close() is std::invalid_argument; closing twice does nothing.
  void close();
  const std::string &path() const { return path_; }

private:
  void emit(const void *data, size_t n);
  void deflateBuffer(int flush);
  void writeOut(const char *data, size_t n);
  [[noreturn]] void fail(const std::string &what) const;

  std::string path_;
  Compression compression_;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The framing of one record: header (length and its CRC), data, data CRC.
std::string frame_tfrecord(std::string_view record);

} // namespace data
} // namespace estc

#endif // ESTC_LIB_DATA_TFRECORD_H
