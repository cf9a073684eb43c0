//===- Idx.h - IDX files (MNIST, Fashion-MNIST) ---------------------------===//
//
// The IDX format of LeCun's MNIST distribution, plain or gzip-compressed:
// two zero bytes, a type byte (0x08 u8, 0x09 i8, 0x0B i16, 0x0C i32, 0x0D f32,
// 0x0E f64), a rank byte, then one big-endian u32 per dimension and the
// elements, big-endian, row-major. Fashion-MNIST (Debian's
// dataset-fashion-mnist) uses the same files.
//
// Every problem (missing file, not gzip, truncated, bad header, trailing
// bytes, image/label count mismatch) throws DataError with one line naming
// the file and what is wrong.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_DATA_IDX_H
#define ESTC_LIB_DATA_IDX_H

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace estc {
namespace data {

class DataError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// The element types of IDX files (the type byte).
enum class IdxType : uint8_t {
  U8 = 0x08,
  I8 = 0x09,
  I16 = 0x0B,
  I32 = 0x0C,
  F32 = 0x0D,
  F64 = 0x0E,
};

/// An IDX array: its element type, dimensions and elements converted to
/// double (exact for every IDX type).
struct IdxArray {
  IdxType type = IdxType::U8;
  std::vector<int64_t> dims;
  std::vector<double> values;
  int64_t num_elements() const;
};

/// Reads an IDX file; gzip-compressed when it starts with gzip's magic.
IdxArray read_idx(const std::string &path);

/// Images with one label each, as an image classifier's input_fn wants
/// them: `images` holds count x rows x cols pixels scaled to [0, 1]
/// (row-major, NHWC with one channel), `labels` the classes.
struct ImageDataset {
  int64_t rows = 0, cols = 0;
  std::vector<float> images;
  std::vector<int64_t> labels;

  int64_t size() const { return static_cast<int64_t>(labels.size()); }
  /// Examples [begin, end) as a new dataset; DataError when out of range.
  ImageDataset slice(int64_t begin, int64_t end) const;
};

/// The same images as the files hold them: count x rows x cols u8 pixels
/// (a quarter of ImageDataset's memory: an input_fn that keeps these and
/// scales each batch, scale_pixels, holds Fashion-MNIST's 60,000 training
/// images in 47 MB instead of 188 MB).
struct MnistBytes {
  int64_t rows = 0, cols = 0;
  std::vector<uint8_t> pixels;
  std::vector<int64_t> labels;

  int64_t size() const { return static_cast<int64_t>(labels.size()); }
  /// Examples [begin, end) as a new dataset; DataError when out of range.
  MnistBytes slice(int64_t begin, int64_t end) const;
  /// The images scaled as load_mnist scales them.
  ImageDataset to_float() const;
};

/// Pixels scaled to [0, 1]: out[i] = in[i] / 255, divided in double and
/// rounded to float (load_mnist's scaling, and TF's peer's).
void scale_pixels(const uint8_t *in, size_t n, float *out);

/// Reads `<dir>/<split>-images-idx3-ubyte[.gz]` and
/// `<dir>/<split>-labels-idx1-ubyte[.gz]` (split "train" or "t10k"): u8
/// images of rank 3, u8 labels of rank 1, equal counts.
ImageDataset load_mnist(const std::string &dir, const std::string &split);
/// The same files' images as bytes (load_mnist is this, then to_float).
MnistBytes load_mnist_bytes(const std::string &dir, const std::string &split);

/// The shared data directory (../shared/data of the repository): the
/// ESTC_DATA_DIR environment variable when set, else `fallback`.
std::string data_dir(const std::string &fallback);

} // namespace data
} // namespace estc

#endif // ESTC_LIB_DATA_IDX_H
