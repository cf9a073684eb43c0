//===- InputStream.cpp - Reading a data file, plain or compressed -------===//

#include "lib/Data/InputStream.h"
#include "lib/Data/DatasetInternal.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>

namespace estc {
namespace data {

namespace {

std::string lastError() { return std::strerror(errno); }

} // namespace

Compression parse_compression(const std::string &type) {
  if (type.empty() || type == "NONE")
    return Compression::None;
  if (type == "GZIP")
    return Compression::Gzip;
  if (type == "ZLIB")
    return Compression::Zlib;
  throw DataError("unknown compression type '" + detail::printable(type) +
                  "' (expected \"\", \"NONE\", \"GZIP\" or \"ZLIB\")");
}

const char *compression_name(Compression compression) {
  switch (compression) {
  case Compression::None:
    return "";
  case Compression::Gzip:
    return "GZIP";
  case Compression::Zlib:
    return "ZLIB";
  }
  return "";
}

struct InputStream::Impl {
  int fd = -1;
  // Compressed files only.
  z_stream z{};
  bool zInitialized = false;
  std::unique_ptr<unsigned char[]> in; // compressed bytes read from the file
  uint64_t inFileOffset = 0;           // file offset of in[0]
  size_t inLength = 0;                 // bytes in `in`
  bool fileEof = false;
  bool zlibEnded = false; // a ZLIB stream has no second member
  // An error met after some bytes were inflated: those are returned first,
  // so that the records before a corruption or truncation still read.
  std::string pendingError;

  uint64_t compressedOffset() const {
    return inFileOffset + static_cast<uint64_t>(z.next_in - in.get());
  }
};

InputStream::InputStream(std::string path, Compression compression,
                         size_t buffer_size)
    : path_(std::move(path)), compression_(compression),
      bufferSize_(buffer_size), impl_(std::make_unique<Impl>()) {
  if (bufferSize_ == 0)
    throw std::invalid_argument("InputStream: buffer_size must be positive");
  // 1 GiB: zlib counts in 32-bit unsigned ints.
  bufferSize_ = std::min<size_t>(bufferSize_, size_t{1} << 30);
  impl_->fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (impl_->fd < 0)
    fail("cannot open: " + lastError());
  buffer_ = std::make_unique<char[]>(bufferSize_);
  if (compression_ != Compression::None) {
    impl_->in = std::make_unique<unsigned char[]>(bufferSize_);
    // 16 + MAX_WBITS: gzip framing; MAX_WBITS: zlib framing.
    int bits = compression_ == Compression::Gzip ? 16 + MAX_WBITS : MAX_WBITS;
    if (inflateInit2(&impl_->z, bits) != Z_OK) {
      ::close(impl_->fd);
      fail("cannot start zlib: out of memory");
    }
    impl_->zInitialized = true;
    impl_->z.next_in = impl_->in.get();
    impl_->z.avail_in = 0;
  }
}

InputStream::~InputStream() {
  if (impl_->zInitialized)
    inflateEnd(&impl_->z);
  if (impl_->fd >= 0)
    ::close(impl_->fd);
}

void InputStream::fail(const std::string &what) const {
  throw DataError(path_ + ": " + what);
}

std::optional<uint64_t> InputStream::known_size() const {
  if (compression_ != Compression::None)
    return std::nullopt;
  struct stat st;
  if (::fstat(impl_->fd, &st) != 0)
    return std::nullopt;
  return static_cast<uint64_t>(st.st_size);
}

bool InputStream::fill() {
  bufferPos_ = bufferEnd_ = 0;
  return compression_ == Compression::None ? fillPlain() : fillCompressed();
}

bool InputStream::fillPlain() {
  for (;;) {
    ssize_t n = ::read(impl_->fd, buffer_.get(), bufferSize_);
    if (n >= 0) {
      bufferEnd_ = static_cast<size_t>(n);
      return n > 0;
    }
    if (errno != EINTR)
      fail("cannot read: " + lastError());
  }
}

bool InputStream::fillCompressed() {
  Impl &s = *impl_;
  if (!s.pendingError.empty())
    fail(s.pendingError);
  const char *format = compression_name(compression_);
  s.z.next_out = reinterpret_cast<unsigned char *>(buffer_.get());
  s.z.avail_out = static_cast<uInt>(bufferSize_);
  auto produced = [&] { return bufferSize_ - s.z.avail_out; };
  while (s.z.avail_out > 0) {
    if (s.z.avail_in == 0 && !s.fileEof) {
      s.inFileOffset += s.inLength;
      s.inLength = 0;
      ssize_t n;
      do
        n = ::read(s.fd, s.in.get(), bufferSize_);
      while (n < 0 && errno == EINTR);
      if (n < 0)
        fail("cannot read: " + lastError());
      s.inLength = static_cast<size_t>(n);
      s.fileEof = n == 0;
      s.z.next_in = s.in.get();
      s.z.avail_in = static_cast<uInt>(n);
    }
    if (s.zlibEnded) {
      if (s.z.avail_in > 0) {
        s.pendingError = "trailing bytes after the ZLIB stream at byte " +
                         std::to_string(s.compressedOffset());
      }
      break; // the end of the file (else more input was read above)
    }
    // The end of the file before a gzip member (or the stream) started is
    // the end of the stream; inside one, inflate may still have output
    // to give (a long match): it says Z_BUF_ERROR when it has none.
    if (s.z.avail_in == 0 && s.fileEof && s.z.total_in == 0)
      break;
    int ret = inflate(&s.z, Z_NO_FLUSH);
    if (ret == Z_STREAM_END) {
      // Another gzip member may follow (cat a.gz b.gz): TF and gzip(1)
      // read on.
      if (compression_ == Compression::Gzip)
        inflateReset(&s.z);
      else
        s.zlibEnded = true;
      continue;
    }
    if (ret == Z_BUF_ERROR && s.z.avail_in == 0 && s.fileEof) {
      s.pendingError = std::string("truncated ") + format + " stream";
      break;
    }
    // Z_BUF_ERROR: no progress possible without more input; read on.
    if (ret == Z_OK || ret == Z_BUF_ERROR)
      continue;
    std::string why = s.z.msg              ? s.z.msg
                      : ret == Z_NEED_DICT ? "needs a preset dictionary"
                      : ret == Z_MEM_ERROR
                          ? "out of memory"
                          : "zlib error " + std::to_string(ret);
    // inflate stops at the byte at fault or a little after it.
    s.pendingError = std::string("corrupt ") + format + " data at byte " +
                     std::to_string(s.compressedOffset()) + ": " +
                     detail::printable(why);
    break;
  }
  bufferEnd_ = produced();
  if (bufferEnd_ == 0 && !s.pendingError.empty())
    fail(s.pendingError);
  return bufferEnd_ > 0;
}

size_t InputStream::read(char *dst, size_t n) {
  size_t got = 0;
  while (got < n) {
    if (bufferPos_ == bufferEnd_) {
      // A long read of a plain file skips the buffer.
      if (compression_ == Compression::None && n - got >= bufferSize_) {
        bufferPos_ = bufferEnd_ = 0; // the buffer no longer ends at offset_
        ssize_t r = ::read(impl_->fd, dst + got, n - got);
        if (r < 0) {
          if (errno == EINTR)
            continue;
          fail("cannot read: " + lastError());
        }
        if (r == 0)
          break;
        got += static_cast<size_t>(r);
        offset_ += static_cast<uint64_t>(r);
        continue;
      }
      if (!fill())
        break;
    }
    size_t take = std::min(bufferEnd_ - bufferPos_, n - got);
    std::memcpy(dst + got, buffer_.get() + bufferPos_, take);
    bufferPos_ += take;
    offset_ += take;
    got += take;
  }
  return got;
}

size_t InputStream::read(size_t n, std::string &out) {
  out.clear();
  // In steps, so that `out` holds at most a step more than the stream has.
  const size_t step = std::max<size_t>(bufferSize_, 1 << 20);
  while (out.size() < n) {
    size_t want = std::min(step, n - out.size());
    size_t had = out.size();
    out.resize(had + want);
    size_t got = read(&out[had], want);
    out.resize(had + got);
    if (got < want)
      break;
  }
  return out.size();
}

bool InputStream::read_line(std::string &out) {
  out.clear();
  for (;;) {
    if (bufferPos_ == bufferEnd_ && !fill())
      return !out.empty();
    const char *begin = buffer_.get() + bufferPos_;
    size_t avail = bufferEnd_ - bufferPos_;
    const void *nl = std::memchr(begin, '\n', avail);
    size_t take =
        nl ? static_cast<size_t>(static_cast<const char *>(nl) - begin) + 1
           : avail;
    out.append(begin, take);
    bufferPos_ += take;
    offset_ += take;
    if (nl)
      return true;
  }
}

void InputStream::seek(uint64_t target) {
  // Within the buffer: nothing to read.
  uint64_t base = offset_ - bufferPos_;
  if (target >= base && target <= base + bufferEnd_) {
    bufferPos_ = static_cast<size_t>(target - base);
    offset_ = target;
    return;
  }
  if (compression_ == Compression::None) {
    std::optional<uint64_t> size = known_size();
    if (size && target > *size)
      fail("cannot seek to byte " + std::to_string(target) + ": the file has " +
           std::to_string(*size) + " bytes");
    if (::lseek(impl_->fd, static_cast<off_t>(target), SEEK_SET) < 0)
      fail("cannot seek to byte " + std::to_string(target) + ": " +
           lastError());
    bufferPos_ = bufferEnd_ = 0;
    offset_ = target;
    return;
  }
  if (target < offset_) {
    // Back: inflate again from the start of the file.
    Impl &s = *impl_;
    if (::lseek(s.fd, 0, SEEK_SET) < 0)
      fail("cannot seek to byte 0: " + lastError());
    inflateReset(&s.z);
    s.z.next_in = s.in.get();
    s.z.avail_in = 0;
    s.inFileOffset = 0;
    s.inLength = 0;
    s.fileEof = false;
    s.zlibEnded = false;
    s.pendingError.clear();
    bufferPos_ = bufferEnd_ = 0;
    offset_ = 0;
  }
  while (offset_ < target) {
    if (bufferPos_ == bufferEnd_ && !fill())
      fail("cannot seek to byte " + std::to_string(target) +
           ": the stream has " + std::to_string(offset_) + " bytes");
    size_t take = static_cast<size_t>(
        std::min<uint64_t>(bufferEnd_ - bufferPos_, target - offset_));
    bufferPos_ += take;
    offset_ += take;
  }
}

} // namespace data
} // namespace estc
