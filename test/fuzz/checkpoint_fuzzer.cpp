//===- checkpoint_fuzzer.cpp - Safetensors checkpoint files --------------===//
//
// A checkpoint file read with CheckpointReader (tf.train.load_checkpoint):
// the header check, then every tensor read with its CRC32C. The documented
// failure is CheckpointError, one line naming the file. A checkpoint that
// reads must hold tensors of the sizes its header declares, and write back
// (serialize_checkpoint) to a file that reads to the same tensors.
//
//===----------------------------------------------------------------------===//

#include "test/fuzz/FuzzSupport.h"

#include "lib/Checkpoint/Checkpoint.h"

using namespace estc;
using namespace estc::fuzz;

namespace {
void checkSameTensors(const train::VariableMap &a,
                      const train::VariableMap &b) {
  if (a.size() != b.size())
    die("a checkpoint written back holds a different number of tensors");
  for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib)
    if (ia->first != ib->first || ia->second.dtype != ib->second.dtype ||
        ia->second.shape != ib->second.shape ||
        ia->second.data != ib->second.data)
      die("tensor '" + ia->first + "' changes when written back");
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string path =
      scratch().write("model.ckpt-1.safetensors", bytesOf(data, size));
  train::VariableMap tensors;
  int64_t step = 0;
  try {
    train::CheckpointReader reader(path);
    step = reader.global_step();
    tensors = reader.read_all();
    if (tensors.size() != reader.variables().size())
      die("read_all() and variables() disagree");
    for (const auto &[name, t] : tensors) {
      const VariableSpec &spec = reader.variables().at(name);
      if (t.dtype != spec.dtype || t.shape != spec.shape ||
          t.data.size() !=
              static_cast<size_t>(t.num_elements()) * dtype_size(t.dtype))
        die("tensor '" + name + "' does not match its header");
    }
  } catch (const train::CheckpointError &e) {
    checkFileError(e.what(), path);
    return 0;
  }

  std::string copy = scratch().write(
      "copy.safetensors", train::serialize_checkpoint(tensors, step));
  try {
    train::CheckpointReader reader(copy);
    if (reader.global_step() != step)
      die("global_step changes when written back");
    checkSameTensors(tensors, reader.read_all());
  } catch (const train::CheckpointError &e) {
    die(std::string("a checkpoint written back does not read: ") + e.what());
  }
  return 0;
}
