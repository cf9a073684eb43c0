//===- TextLine.cpp - TextLineDataset's lines of a file ------------------===//

#include "lib/Data/TextLine.h"

#include <algorithm>
#include <cstring>

namespace estc {
namespace data {

TextLineReader::TextLineReader(std::string path, Compression compression,
                               size_t buffer_size)
    : stream_(std::move(path), compression, buffer_size) {}

bool TextLineReader::read(std::string &line) {
  if (!stream_.read_line(line))
    return false;
  bool newline = !line.empty() && line.back() == '\n';
  if (newline)
    line.pop_back();
  // TF drops every '\r', not only one before the '\n'.
  if (std::memchr(line.data(), '\r', line.size()))
    line.erase(std::remove(line.begin(), line.end(), '\r'), line.end());
  // At the end of the file, a "line" of '\r's alone is no line (TF's
  // ReadLine returns end of file when it has collected nothing).
  if (!newline && line.empty())
    return false;
  ++line_;
  return true;
}

void TextLineReader::seek(uint64_t offset, int64_t line_number) {
  stream_.seek(offset);
  line_ = line_number;
}

} // namespace data
} // namespace estc
