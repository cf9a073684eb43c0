//===- TFRecord.cpp - TFRecord files: TF's framing of records -----------===//

#include "lib/Data/TFRecord.h"

#include "lib/Support/Crc32c.h"
#include "lib/Support/FileIO.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <stdexcept>
#include <unistd.h>

namespace estc {
namespace data {

namespace {

constexpr size_t kHeaderBytes = 12; // length, masked CRC of the length
constexpr size_t kFooterBytes = 4;  // masked CRC of the data
constexpr size_t kWriteBuffer = 256 * 1024;

void putLE(char *p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i)
    p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

uint64_t getLE(const char *p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i)
    v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

void frameHeader(char (&header)[kHeaderBytes], uint64_t length) {
  putLE(header, length, 8);
  putLE(header + 8, crc32c::mask(crc32c::value(header, 8)), 4);
}

} // namespace

std::string frame_tfrecord(std::string_view record) {
  char header[kHeaderBytes];
  frameHeader(header, record.size());
  char footer[kFooterBytes];
  putLE(footer, crc32c::mask(crc32c::value(record)), 4);
  std::string out(header, kHeaderBytes);
  out.append(record);
  out.append(footer, kFooterBytes);
  return out;
}

// --- Reading ---------------------------------------------------------------

TFRecordReader::TFRecordReader(std::string path, Compression compression,
                               size_t buffer_size)
    : stream_(std::move(path), compression, buffer_size) {}

void TFRecordReader::fail(const std::string &what) const {
  throw DataError(path() + ": " + what);
}

bool TFRecordReader::read(std::string &record) {
  // After an error the stream is somewhere inside the record at fault.
  if (stream_.offset() != offset_)
    stream_.seek(offset_);
  // Built only for an error: a string per record was a tenth of the
  // reader's time.
  const uint64_t start = offset_;
  auto at = [start] { return "record at byte " + std::to_string(start); };
  char header[kHeaderBytes];
  size_t got = stream_.read(header, kHeaderBytes);
  if (got == 0)
    return false;
  if (got < kHeaderBytes)
    fail("truncated " + at());
  uint64_t length = getLE(header, 8);
  if (crc32c::mask(crc32c::value(header, 8)) !=
      static_cast<uint32_t>(getLE(header + 8, 4)))
    fail("corrupt " + at() + ": length CRC mismatch");
  if (stream_.compression() == Compression::None) {
    // A length beyond the file is a corrupt header with a matching CRC;
    // checked before allocating it. The size is asked for (fstat) only
    // when a length exceeds the last one seen: the file may be growing.
    if (length > fileSize_) {
      fileSize_ = stream_.known_size().value_or(0);
      if (length > fileSize_)
        fail("corrupt " + at() + ": length " + std::to_string(length) +
             " is larger than the file (" + std::to_string(fileSize_) +
             " bytes)");
    }
    record.resize(static_cast<size_t>(length));
    got = stream_.read(record.data(), record.size());
  } else {
    // Compressed: the stream's length is unknown; `record` grows with
    // the bytes there are.
    got = stream_.read(static_cast<size_t>(std::min<uint64_t>(
                           length, std::numeric_limits<size_t>::max())),
                       record);
  }
  if (got < length)
    fail("truncated " + at());
  char footer[kFooterBytes];
  if (stream_.read(footer, kFooterBytes) < kFooterBytes)
    fail("truncated " + at());
  if (crc32c::mask(crc32c::value(record)) !=
      static_cast<uint32_t>(getLE(footer, 4))) {
    // The framing is intact: the next read() goes on after this record
    // (ignore_errors() skips it).
    offset_ = stream_.offset();
    fail("corrupt " + at() + ": data CRC mismatch");
  }
  offset_ = stream_.offset();
  return true;
}

void TFRecordReader::seek(uint64_t offset) {
  stream_.seek(offset);
  offset_ = offset;
}

// --- Writing ---------------------------------------------------------------

struct TFRecordWriter::Impl {
  int fd = -1;
  bool closed = false;
  std::string pending; // plain: framed bytes not yet written
  z_stream z{};
  bool zInitialized = false;
  std::unique_ptr<unsigned char[]> out; // compressed bytes being made
};

TFRecordWriter::TFRecordWriter(std::string path, Compression compression)
    : path_(std::move(path)), compression_(compression),
      impl_(std::make_unique<Impl>()) {
  impl_->fd =
      ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (impl_->fd < 0)
    fail("cannot open for writing: " + fileio::lastError());
  if (compression_ != Compression::None) {
    int bits = compression_ == Compression::Gzip ? 16 + MAX_WBITS : MAX_WBITS;
    if (deflateInit2(&impl_->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, bits, 8,
                     Z_DEFAULT_STRATEGY) != Z_OK) {
      ::close(impl_->fd);
      fail("cannot start zlib: out of memory");
    }
    impl_->zInitialized = true;
    impl_->out = std::make_unique<unsigned char[]>(kWriteBuffer);
  }
}

TFRecordWriter::~TFRecordWriter() {
  try {
    close();
  } catch (const DataError &) {
    // Documented: a writer not closed explicitly loses its errors.
  }
  if (impl_->zInitialized)
    deflateEnd(&impl_->z);
  if (impl_->fd >= 0)
    ::close(impl_->fd);
}

void TFRecordWriter::fail(const std::string &what) const {
  throw DataError(path_ + ": " + what);
}

void TFRecordWriter::writeOut(const char *data, size_t n) {
  if (n > 0 && !fileio::writeAll(impl_->fd, std::string_view(data, n)))
    fail("cannot write: " + fileio::lastError());
}

void TFRecordWriter::deflateBuffer(int flush) {
  z_stream &z = impl_->z;
  for (;;) {
    z.next_out = impl_->out.get();
    z.avail_out = static_cast<uInt>(kWriteBuffer);
    int ret = deflate(&z, flush);
    if (ret == Z_STREAM_ERROR)
      fail("cannot compress: zlib stream error");
    writeOut(reinterpret_cast<const char *>(impl_->out.get()),
             kWriteBuffer - z.avail_out);
    // Done when deflate had room to spare (all input taken, flush made),
    // or, finishing, at the end of the stream.
    if (flush == Z_FINISH ? ret == Z_STREAM_END : z.avail_out != 0)
      return;
  }
}

void TFRecordWriter::emit(const void *data, size_t n) {
  const char *p = static_cast<const char *>(data);
  if (compression_ == Compression::None) {
    if (impl_->pending.size() + n <= kWriteBuffer) {
      impl_->pending.append(p, n);
      return;
    }
    writeOut(impl_->pending.data(), impl_->pending.size());
    impl_->pending.clear();
    if (n >= kWriteBuffer)
      writeOut(p, n);
    else
      impl_->pending.append(p, n);
    return;
  }
  // zlib counts in 32-bit ints: a huge record goes in pieces.
  while (n > 0) {
    size_t piece = std::min<size_t>(n, size_t{1} << 30);
    impl_->z.next_in =
        reinterpret_cast<Bytef *>(const_cast<char *>(p)); // zlib is not const
    impl_->z.avail_in = static_cast<uInt>(piece);
    deflateBuffer(Z_NO_FLUSH);
    p += piece;
    n -= piece;
  }
}

void TFRecordWriter::write(std::string_view record) {
  if (impl_->closed)
    throw std::invalid_argument("TFRecordWriter(" + path_ +
                                "): write after close");
  char header[kHeaderBytes];
  frameHeader(header, record.size());
  char footer[kFooterBytes];
  putLE(footer, crc32c::mask(crc32c::value(record)), 4);
  emit(header, kHeaderBytes);
  emit(record.data(), record.size());
  emit(footer, kFooterBytes);
}

void TFRecordWriter::flush() {
  if (impl_->closed)
    throw std::invalid_argument("TFRecordWriter(" + path_ +
                                "): flush after close");
  if (compression_ == Compression::None) {
    writeOut(impl_->pending.data(), impl_->pending.size());
    impl_->pending.clear();
  } else {
    impl_->z.avail_in = 0;
    deflateBuffer(Z_SYNC_FLUSH);
  }
}

void TFRecordWriter::close() {
  if (impl_->closed)
    return;
  // Closed even when what follows fails: a second close() or the
  // destructor must not write again.
  impl_->closed = true;
  std::string error;
  try {
    if (compression_ == Compression::None) {
      writeOut(impl_->pending.data(), impl_->pending.size());
      impl_->pending.clear();
    } else {
      impl_->z.avail_in = 0;
      deflateBuffer(Z_FINISH);
    }
  } catch (const DataError &e) {
    error = e.what();
  }
  int rc = ::close(impl_->fd);
  std::string closeError = rc != 0 ? fileio::lastError() : "";
  impl_->fd = -1;
  if (!error.empty())
    throw DataError(error);
  if (rc != 0)
    fail("cannot close: " + closeError);
}

} // namespace data
} // namespace estc
