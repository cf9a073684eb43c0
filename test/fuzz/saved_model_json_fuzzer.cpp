//===- saved_model_json_fuzzer.cpp - An export's saved_model.json -------===//
//
// serving::SavedModel::load reads saved_model.json from an export folder
// (docs/design/saved-model.md): a corrupt or hand-edited file is untrusted
// input. The bytes are written as saved_model.json of a scratch folder
// without model.so and variables.safetensors and loaded the way estc-serve
// loads a new version: everything in the JSON (format, target, the
// compiled model's spec, receivers and their parse specs, the transform's
// feature columns, signatures) is read before the files, so the documented
// failure is serving::LoadError, one line starting "SavedModel <dir>: ".
// Nothing else may escape, and nothing may crash.
//
//===----------------------------------------------------------------------===//

#include "test/fuzz/FuzzSupport.h"

#include "runtime/serving/SavedModel.h"

using namespace estc;
using namespace estc::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  scratch().write("saved_model.json",
                  std::string_view(reinterpret_cast<const char *>(data), size));
  serving::LoadOptions options;
  options.skip_cpu_check = true; // reach the rest on any machine
  try {
    serving::SavedModel::load(scratch().path(), options);
  } catch (const serving::LoadError &e) {
    std::string what = e.what();
    if (what.rfind("SavedModel " + scratch().path() + ": ", 0) != 0)
      die("error does not name the folder: " + what);
    if (what.find_first_of("\n\r") != std::string::npos)
      die("error is not one line: " + what);
    return 0;
  }
  // Loaded: impossible without model.so.
  die("a folder without model.so loaded");
  return 0;
}
