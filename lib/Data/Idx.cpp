//===- Idx.cpp - IDX files (MNIST, Fashion-MNIST) -------------------------===//

#include "lib/Data/Idx.h"

#include <zlib.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace estc {
namespace data {

namespace {

[[noreturn]] void fail(const std::string &path, const std::string &what) {
  throw DataError(path + ": " + what);
}

/// The whole file, decompressed when it is gzip (zlib reads plain files
/// as they are).
std::string readMaybeGzip(const std::string &path) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (!file)
    fail(path, std::string("cannot open: ") +
                   (errno ? std::strerror(errno) : "out of memory"));
  std::unique_ptr<gzFile_s, int (*)(gzFile)> closer(file, gzclose);
  std::string bytes;
  char buffer[1 << 16];
  for (;;) {
    int n = gzread(file, buffer, sizeof(buffer));
    if (n < 0) {
      int code = 0;
      const char *message = gzerror(file, &code);
      fail(path, std::string("corrupt gzip data: ") + message);
    }
    if (n == 0)
      break;
    bytes.append(buffer, static_cast<size_t>(n));
  }
  // gzread returns 0 at a truncated stream too; gzerror tells them apart.
  int code = 0;
  const char *message = gzerror(file, &code);
  if (code != Z_OK && code != Z_STREAM_END)
    fail(path, std::string("corrupt gzip data: ") + message);
  if (!gzdirect(file) && bytes.empty())
    fail(path, "empty gzip stream");
  return bytes;
}

int elementBytes(uint8_t type) {
  switch (static_cast<IdxType>(type)) {
  case IdxType::U8:
  case IdxType::I8:
    return 1;
  case IdxType::I16:
    return 2;
  case IdxType::I32:
  case IdxType::F32:
    return 4;
  case IdxType::F64:
    return 8;
  }
  return 0;
}

uint64_t bigEndian(const unsigned char *p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v = (v << 8) | p[i];
  return v;
}

double decode(IdxType type, const unsigned char *p) {
  switch (type) {
  case IdxType::U8:
    return p[0];
  case IdxType::I8:
    return static_cast<int8_t>(p[0]);
  case IdxType::I16:
    return static_cast<int16_t>(bigEndian(p, 2));
  case IdxType::I32:
    return static_cast<int32_t>(bigEndian(p, 4));
  case IdxType::F32: {
    uint32_t bits = static_cast<uint32_t>(bigEndian(p, 4));
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  case IdxType::F64: {
    uint64_t bits = bigEndian(p, 8);
    double d;
    std::memcpy(&d, &bits, 8);
    return d;
  }
  }
  return 0;
}

} // namespace

int64_t IdxArray::num_elements() const {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

namespace {
/// An IDX file's bytes with its header checked against them: the elements
/// start at `header`, `width` bytes each (big-endian).
struct IdxBytes {
  std::string bytes;
  IdxType type = IdxType::U8;
  std::vector<int64_t> dims;
  size_t header = 0;
  int width = 0;
  uint64_t count = 0;
  const unsigned char *element(uint64_t i) const {
    return reinterpret_cast<const unsigned char *>(bytes.data()) + header +
           i * static_cast<uint64_t>(width);
  }
};

IdxBytes readIdxBytes(const std::string &path) {
  IdxBytes idx;
  idx.bytes = readMaybeGzip(path);
  const std::string &bytes = idx.bytes;
  const auto *p = reinterpret_cast<const unsigned char *>(bytes.data());
  if (bytes.size() < 4)
    fail(path,
         "truncated IDX header (" + std::to_string(bytes.size()) + " bytes)");
  if (p[0] != 0 || p[1] != 0)
    fail(path, "not an IDX file (the first two bytes must be zero)");
  int width = elementBytes(p[2]);
  if (width == 0) {
    char hex[8];
    std::snprintf(hex, sizeof(hex), "0x%02X", p[2]);
    fail(path, std::string("unknown IDX element type ") + hex);
  }
  int rank = p[3];
  if (rank == 0)
    fail(path, "IDX rank 0");
  size_t header = 4 + 4 * static_cast<size_t>(rank);
  if (bytes.size() < header)
    fail(path, "truncated IDX header (rank " + std::to_string(rank) + ", " +
                   std::to_string(bytes.size()) + " bytes)");
  idx.type = static_cast<IdxType>(p[2]);
  uint64_t count = 1;
  for (int i = 0; i < rank; ++i) {
    uint64_t d = bigEndian(p + 4 + 4 * i, 4);
    idx.dims.push_back(static_cast<int64_t>(d));
    // Checked at every step: a product that wraps past 2^64 (to 0, say)
    // would pass a check made at the end.
    if (__builtin_mul_overflow(count, d, &count) || count > (uint64_t{1} << 40))
      fail(path, "IDX dimensions too large");
  }
  uint64_t expected = header + count * static_cast<uint64_t>(width);
  if (bytes.size() < expected)
    fail(path, "truncated IDX data: " + std::to_string(bytes.size()) +
                   " bytes, the header needs " + std::to_string(expected));
  if (bytes.size() > expected)
    fail(path, std::to_string(bytes.size() - expected) +
                   " trailing bytes after the IDX data");
  idx.header = header;
  idx.width = width;
  idx.count = count;
  return idx;
}
} // namespace

IdxArray read_idx(const std::string &path) {
  IdxBytes idx = readIdxBytes(path);
  IdxArray array;
  array.type = idx.type;
  array.dims = idx.dims;
  array.values.resize(idx.count);
  for (uint64_t i = 0; i < idx.count; ++i)
    array.values[i] = decode(array.type, idx.element(i));
  return array;
}

namespace {
/// Examples [begin, end) of `set` (an ImageDataset or MnistBytes, whose
/// pixels are `pixels`), or DataError naming `what`.
template <typename Set, typename Pixel>
Set sliceOf(const char *what, const Set &set, std::vector<Pixel> Set::*pixels,
            int64_t begin, int64_t end) {
  if (begin < 0 || end < begin || end > set.size())
    throw DataError(std::string(what) + "::slice: [" + std::to_string(begin) +
                    ", " + std::to_string(end) + ") is outside [0, " +
                    std::to_string(set.size()) + ")");
  Set out;
  out.rows = set.rows;
  out.cols = set.cols;
  int64_t n = set.rows * set.cols;
  (out.*pixels)
      .assign((set.*pixels).begin() + begin * n,
              (set.*pixels).begin() + end * n);
  out.labels.assign(set.labels.begin() + begin, set.labels.begin() + end);
  return out;
}
} // namespace

ImageDataset ImageDataset::slice(int64_t begin, int64_t end) const {
  return sliceOf("ImageDataset", *this, &ImageDataset::images, begin, end);
}

MnistBytes MnistBytes::slice(int64_t begin, int64_t end) const {
  return sliceOf("MnistBytes", *this, &MnistBytes::pixels, begin, end);
}

void scale_pixels(const uint8_t *in, size_t n, float *out) {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int p = 0; p < 256; ++p)
      t[p] = static_cast<float>(static_cast<double>(p) / 255.0);
    return t;
  }();
  for (size_t i = 0; i < n; ++i)
    out[i] = table[in[i]];
}

ImageDataset MnistBytes::to_float() const {
  ImageDataset out;
  out.rows = rows;
  out.cols = cols;
  out.images.resize(pixels.size());
  scale_pixels(pixels.data(), pixels.size(), out.images.data());
  out.labels = labels;
  return out;
}

namespace {
std::string findFile(const std::string &dir, const std::string &name) {
  std::string plain = dir + "/" + name;
  for (const std::string &candidate : {plain + ".gz", plain}) {
    if (FILE *f = std::fopen(candidate.c_str(), "rb")) {
      std::fclose(f);
      return candidate;
    }
  }
  throw DataError(plain + "[.gz]: no such file");
}
} // namespace

MnistBytes load_mnist_bytes(const std::string &dir, const std::string &split) {
  std::string imagesPath = findFile(dir, split + "-images-idx3-ubyte");
  std::string labelsPath = findFile(dir, split + "-labels-idx1-ubyte");
  // The u8 elements are read in place: no array of doubles (8 bytes a
  // pixel) on the way.
  IdxBytes images = readIdxBytes(imagesPath);
  IdxBytes labels = readIdxBytes(labelsPath);
  if (images.type != IdxType::U8 || images.dims.size() != 3)
    fail(imagesPath, "expected u8 images of rank 3");
  if (labels.type != IdxType::U8 || labels.dims.size() != 1)
    fail(labelsPath, "expected u8 labels of rank 1");
  if (images.dims[0] != labels.dims[0])
    fail(labelsPath, std::to_string(labels.dims[0]) + " labels for " +
                         std::to_string(images.dims[0]) + " images in " +
                         imagesPath);
  MnistBytes out;
  out.rows = images.dims[1];
  out.cols = images.dims[2];
  const unsigned char *pixels = images.element(0);
  out.pixels.assign(pixels, pixels + images.count);
  out.labels.resize(labels.count);
  const unsigned char *classes = labels.element(0);
  for (uint64_t i = 0; i < labels.count; ++i)
    out.labels[i] = static_cast<int64_t>(classes[i]);
  return out;
}

ImageDataset load_mnist(const std::string &dir, const std::string &split) {
  return load_mnist_bytes(dir, split).to_float();
}

std::string data_dir(const std::string &fallback) {
  if (const char *env = std::getenv("ESTC_DATA_DIR"); env && *env)
    return env;
  return fallback;
}

} // namespace data
} // namespace estc
