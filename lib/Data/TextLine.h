//===- TextLine.h - TextLineDataset's lines of a file --------------------===//
//
// The lines of a text file, plain or compressed, as
// tf.data.TextLineDataset gives them (TF 2.15's BufferedInputStream
// ReadLine): a line ends at '\n', which is not part of it; every '\r' is
// dropped, wherever it is (so "\r\n" ends a line as "\n" does, and a lone
// '\r' inside a line disappears); an empty line is an empty string; a last
// line without '\n' is a line unless nothing is left of it once its '\r's
// are gone.
//
// The reader's position is the uncompressed byte offset of the next line
// and the number of lines read so far, which an iterator saves and seeks
// back to.
//
// Errors (cannot open, corrupt compressed data, seeking past the end)
// throw DataError naming the file.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_DATA_TEXTLINE_H
#define ESTC_LIB_DATA_TEXTLINE_H

#include "lib/Data/InputStream.h"

#include <cstdint>
#include <string>

namespace estc {
namespace data {

class TextLineReader {
public:
  /// Opens `path` (DataError when it cannot be); `buffer_size` as TF's.
  TextLineReader(std::string path, Compression compression = Compression::None,
                 size_t buffer_size = 256 * 1024);

  /// The next line into `line`, without its '\n' and '\r's; false at the
  /// end of the file.
  bool read(std::string &line);

  const std::string &path() const { return stream_.path(); }
  /// Uncompressed byte offset of the next line.
  uint64_t offset() const { return stream_.offset(); }
  /// Lines read so far: the line read last is line line_number() of the
  /// file (from 1), 0 before the first.
  int64_t line_number() const { return line_; }
  /// Goes to a position offset() and line_number() gave. DataError when
  /// the file is shorter than `offset`.
  void seek(uint64_t offset, int64_t line_number);

private:
  InputStream stream_;
  int64_t line_ = 0;
};

} // namespace data
} // namespace estc

#endif // ESTC_LIB_DATA_TEXTLINE_H
