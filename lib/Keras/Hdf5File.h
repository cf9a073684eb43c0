//===- Hdf5File.h - HDF5 files in memory, through libhdf5 (internal) -----===//
//
// Keras keeps weights in HDF5 files (a legacy `.h5` model, a weights file,
// model.weights.h5 inside a `.keras` archive). Hdf5File opens such a file
// from its bytes with HDF5's core driver (Debian's libhdf5-dev, the C API
// of HDF5 1.10), reads string attributes (fixed or variable length, and
// Keras's chunked lists "name0", "name1", ...) and datasets into
// TensorValues, writes new values into existing datasets, and returns the
// changed file's bytes. Errors are Hdf5Error, one line without the file's
// name (the caller adds it). HDF5's own error printing is off.
//
// Debian's libhdf5 is not built thread-safe: every Hdf5File holds one
// process-wide lock while it lives.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_KERAS_HDF5FILE_H
#define ESTC_LIB_KERAS_HDF5FILE_H

#include "lib/Tensor/TensorValue.h"

#include <cstdint>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace estc {
namespace keras {

class Hdf5Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// True when `bytes` start with HDF5's signature.
bool isHdf5(std::string_view bytes);

class Hdf5File {
public:
  /// Opens the HDF5 file whose bytes are `bytes` (copied).
  Hdf5File(std::string_view bytes, bool writable);
  ~Hdf5File();
  Hdf5File(const Hdf5File &) = delete;
  Hdf5File &operator=(const Hdf5File &) = delete;

  enum class Kind { None, Group, Dataset, Other };
  /// What `path` ("a/b/c", relative to the root) names; Other when a link
  /// on the way leads out of the file (an external link).
  Kind kind(const std::string &path) const;
  /// The names of the links in group `path` ("" is the root), sorted.
  std::vector<std::string> members(const std::string &path) const;

  bool hasAttribute(const std::string &object, const std::string &name) const;
  /// A string attribute of `object` ("" is the root); nullopt when absent.
  std::optional<std::string> stringAttribute(const std::string &object,
                                             const std::string &name) const;
  /// A list of strings as Keras writes it: attribute `name`, or the chunks
  /// `name0`, `name1`, ...; an empty array of any type is an empty list.
  /// nullopt when absent.
  std::optional<std::vector<std::string>>
  stringListAttribute(const std::string &object, const std::string &name) const;

  /// The dataset at `path`: its dims, and its values in its dtype
  /// (float16/32/64, int8..64 as int32/int64, bool); other types are an
  /// error naming the type, and so is a dataset larger than 1024 times the
  /// file plus 1 MiB (a bound for hostile files: Keras stores its datasets
  /// uncompressed).
  TensorValue readDataset(const std::string &path) const;
  /// The dims of the dataset at `path`.
  std::vector<int64_t> datasetShape(const std::string &path) const;
  /// Writes `value` over the dataset at `path` (same shape; HDF5 converts
  /// between numeric types).
  void writeDataset(const std::string &path, const TensorValue &value);

  /// The file's bytes as they are now.
  std::string image();

private:
  std::unique_lock<std::mutex> lock_;
  int64_t file_ = -1; // hid_t
  uint64_t fileBytes_ = 0;
};

} // namespace keras
} // namespace estc

#endif // ESTC_LIB_KERAS_HDF5FILE_H
