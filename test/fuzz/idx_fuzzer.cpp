//===- idx_fuzzer.cpp - IDX files, plain or gzip (lib/Data) --------------===//
//
// An IDX file read with read_idx, as load_mnist and the examples read
// MNIST. The documented failure is DataError, one line naming the file. An
// array that reads has as many values as its dimensions say.
//
//===----------------------------------------------------------------------===//

#include "test/fuzz/FuzzSupport.h"

#include "lib/Data/Idx.h"

using namespace estc;
using namespace estc::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string path = scratch().write("data-idx-ubyte", bytesOf(data, size));
  data::IdxArray array;
  try {
    array = data::read_idx(path);
  } catch (const data::DataError &e) {
    checkFileError(e.what(), path);
    return 0;
  }
  for (int64_t d : array.dims)
    if (d < 0)
      die("negative IDX dimension");
  if (array.dims.empty() ||
      array.num_elements() != static_cast<int64_t>(array.values.size()))
    die("IDX values do not match the dimensions");
  return 0;
}
