//===- keras_file_fuzzer.cpp - lib/Keras's config and archive readers ----===//
//
// Byte 0 picks what the rest of the input is:
//   even: a model's config.json, put in test/data/keras/tiny.keras in place
//         of its own (its metadata.json and model.weights.h5 kept) and read
//         with read_keras_bytes: the config reader, and the walk of the
//         config that names Keras 3's vars-by-index weights, on a real
//         weights file
//   odd:  a zip archive, read by readZip (libzip on bytes in memory); its
//         config.json and metadata.json, when there, by parse_config_json
// The documented errors are KerasError, one line starting with the name
// given, and ZipError, one line. An archive that reads writes back
// (writeZip) to one that reads to the same entries; every weight read has
// as many bytes as its shape and dtype say.
//
// HDF5 itself is not fuzzed here: Debian's libhdf5 is not built with the
// fuzzer's instrumentation, and its robustness to hostile files is HDF5's
// (docs/design/keras.md).
//
//===----------------------------------------------------------------------===//

#include "test/fuzz/FuzzSupport.h"

#include "lib/Keras/KerasModel.h"
#include "lib/Keras/ZipArchive.h"

#include <fstream>
#include <sstream>

using namespace estc;
using namespace estc::fuzz;

namespace {
const keras::ZipEntries &tinyArchive() {
  static const keras::ZipEntries entries = [] {
    std::ifstream in(std::string(ESTC_KERAS_FIXTURES) + "/tiny.keras",
                     std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    if (!in)
      die("cannot read " + std::string(ESTC_KERAS_FIXTURES) + "/tiny.keras");
    return keras::readZip(s.str());
  }();
  return entries;
}

void checkOneLine(const std::string &what) {
  if (what.find_first_of("\n\r") != std::string::npos)
    die("error is not one line: " + what);
}

void fuzzConfig(std::string_view config) {
  keras::ZipEntries entries = tinyArchive();
  for (auto &[name, data] : entries)
    if (name == "config.json")
      data.assign(config.data(), config.size());
  const std::string file = "fuzz.keras";
  try {
    keras::KerasModel m =
        keras::read_keras_bytes(keras::writeZip(entries), file);
    for (const keras::Weight *w : m.weights())
      if (static_cast<int64_t>(w->value.data.size()) !=
          w->value.num_elements() *
              static_cast<int64_t>(dtype_size(w->value.dtype)))
        die("weight '" + w->name + "' has " +
            std::to_string(w->value.data.size()) + " bytes for its shape");
  } catch (const keras::KerasError &e) {
    checkFileError(e.what(), file);
  }
}

void fuzzArchive(std::string_view bytes) {
  keras::ZipEntries entries;
  try {
    entries = keras::readZip(bytes, 1 << 24);
  } catch (const keras::ZipError &e) {
    checkOneLine(e.what());
    return;
  }
  keras::ZipEntries again = keras::readZip(keras::writeZip(entries));
  if (again != entries)
    die("an archive written back reads to other entries");
  for (const auto &[name, data] : entries) {
    if (name != "config.json" && name != "metadata.json")
      continue;
    try {
      keras::parse_config_json(data, "fuzz.keras: " + name);
    } catch (const keras::KerasError &e) {
      checkFileError(e.what(), "fuzz.keras");
    }
  }
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  std::string_view rest = bytesOf(data + 1, size - 1);
  if (data[0] % 2 == 0)
    fuzzConfig(rest);
  else
    fuzzArchive(rest);
  return 0;
}
