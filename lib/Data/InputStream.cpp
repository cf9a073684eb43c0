//===- InputStream.cpp - Reading a data file, plain only ------------------===//
//
// A minimal InputStream for the CSV and text-line readers' branch: plain
// files through a buffer, with the offsets, read_line() and seek() that
// InputStream.h documents. GZIP and ZLIB throw DataError ("... is not
// supported ..."); the input pipeline's full implementation (zlib
// inflation, re-inflation on seek) replaces this file when the branches
// merge, so the readers above it are written against the header alone.
//
//===----------------------------------------------------------------------===//

#include "lib/Data/InputStream.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace estc {
namespace data {

Compression parse_compression(const std::string &type) {
  if (type.empty() || type == "NONE")
    return Compression::None;
  if (type == "GZIP")
    return Compression::Gzip;
  if (type == "ZLIB")
    return Compression::Zlib;
  throw DataError("unknown compression type '" + type +
                  "' (expected \"\", \"NONE\", \"GZIP\" or \"ZLIB\")");
}

struct InputStream::Impl {
  std::FILE *file = nullptr;
  bool eof = false;
};

InputStream::InputStream(std::string path, Compression compression,
                         size_t buffer_size)
    : path_(std::move(path)), compression_(compression),
      bufferSize_(buffer_size == 0 ? 1 : buffer_size),
      impl_(std::make_unique<Impl>()) {
  if (compression_ != Compression::None)
    throw DataError(path_ + ": " +
                    (compression_ == Compression::Gzip ? "GZIP" : "ZLIB") +
                    " compression is not supported by this InputStream "
                    "(plain files only)");
  impl_->file = std::fopen(path_.c_str(), "rb");
  if (!impl_->file)
    throw DataError(path_ + ": cannot open: " + std::strerror(errno));
}

InputStream::~InputStream() {
  if (impl_ && impl_->file)
    std::fclose(impl_->file);
}

bool InputStream::fill() {
  if (impl_->eof)
    return false;
  buffer_.resize(bufferSize_);
  size_t n = std::fread(buffer_.data(), 1, bufferSize_, impl_->file);
  if (n < bufferSize_) {
    if (std::ferror(impl_->file))
      throw DataError(path_ + ": read error at byte " +
                      std::to_string(offset_) + ": " + std::strerror(errno));
    impl_->eof = true;
  }
  buffer_.resize(n);
  bufferPos_ = 0;
  return n > 0;
}

size_t InputStream::read(size_t n, std::string &out) {
  out.clear();
  while (out.size() < n) {
    if (bufferPos_ == buffer_.size() && !fill())
      break;
    size_t take = std::min(n - out.size(), buffer_.size() - bufferPos_);
    out.append(buffer_, bufferPos_, take);
    bufferPos_ += take;
    offset_ += take;
  }
  return out.size();
}

bool InputStream::read_line(std::string &out) {
  out.clear();
  for (;;) {
    if (bufferPos_ == buffer_.size() && !fill())
      return !out.empty();
    const char *begin = buffer_.data() + bufferPos_;
    size_t avail = buffer_.size() - bufferPos_;
    const void *newline = std::memchr(begin, '\n', avail);
    size_t take =
        newline ? static_cast<const char *>(newline) - begin + 1 : avail;
    out.append(begin, take);
    bufferPos_ += take;
    offset_ += take;
    if (newline)
      return true;
  }
}

void InputStream::seek(uint64_t offset) {
  if (std::fseek(impl_->file, 0, SEEK_END) != 0)
    throw DataError(path_ + ": cannot seek: " + std::strerror(errno));
  long size = std::ftell(impl_->file);
  if (size < 0 || offset > static_cast<uint64_t>(size))
    throw DataError(path_ + ": cannot seek to byte " + std::to_string(offset) +
                    ": the file has " + std::to_string(size < 0 ? 0 : size) +
                    " bytes");
  if (std::fseek(impl_->file, static_cast<long>(offset), SEEK_SET) != 0)
    throw DataError(path_ + ": cannot seek to byte " + std::to_string(offset) +
                    ": " + std::strerror(errno));
  impl_->eof = false;
  buffer_.clear();
  bufferPos_ = 0;
  offset_ = offset;
}

} // namespace data
} // namespace estc
