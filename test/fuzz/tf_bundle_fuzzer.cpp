//===- tf_bundle_fuzzer.cpp - TF checkpoints (tensor bundles) ------------===//
//
// A TF checkpoint read with TensorBundleReader: the input is a 4-byte
// little-endian length L, then L bytes of the .index file, then the data
// file (model.ckpt-1.data-00000-of-00001); a shorter input is all index.
// The reader checks the index (table, header, entries) and maps the data
// file; then every tensor is read (partitioned ones assembled from their
// slices), verify() runs, and an object graph is read (ObjectGraph: every
// path it lists resolves to its key). The documented failure is
// CheckpointError, one line naming one of the checkpoint's files. A tensor that
// reads has its listed dtype and shape and the bytes they need; the tensors
// written back (write_tensor_bundle, three data files) read the same.
//
//===----------------------------------------------------------------------===//

#include "test/fuzz/FuzzSupport.h"

#include "lib/Checkpoint/Checkpoint.h"
#include "lib/Checkpoint/TensorBundle.h"

using namespace estc;
using namespace estc::fuzz;
using namespace estc::train;

namespace {
// One line, naming a file of the checkpoint `prefix` (its index or a data
// file, which the header may number differently).
void checkBundleError(const std::string &message, const std::string &prefix) {
  if (message.rfind(prefix + ".", 0) != 0)
    die("error does not start with a file of the checkpoint: " + message);
  if (message.find_first_of("\n\r") != std::string::npos)
    die("error is not one line: " + message);
}

bool same(const TensorValue &a, const TensorValue &b) {
  return a.dtype == b.dtype && a.shape == b.shape && a.data == b.data &&
         a.strings == b.strings;
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view in = bytesOf(data, size);
  std::string_view index = in, shard;
  if (in.size() >= 4) {
    uint32_t n = static_cast<uint32_t>(data[0]) | data[1] << 8 | data[2] << 16 |
                 static_cast<uint32_t>(data[3]) << 24;
    index = in.substr(4, n);
    shard = in.substr(4 + index.size());
  }
  const std::string prefix = scratch().path() + "/model.ckpt-1";
  scratch().write("model.ckpt-1.index", index);
  scratch().write("model.ckpt-1.data-00000-of-00001", shard);

  VariableMap tensors;
  try {
    TensorBundleReader reader(prefix);
    for (const auto &[name, info] : reader.tensors()) {
      try {
        TensorValue t = reader.get_tensor(name);
        std::optional<DType> dtype = dtype_from_tf_number(info.tf_dtype);
        if (!dtype || t.dtype != *dtype || t.shape != info.shape)
          die("tensor '" + name + "' does not match its entry");
        auto n = static_cast<size_t>(t.num_elements());
        if (t.dtype == DType::String ? t.strings.size() != n
                                     : t.data.size() != n * dtype_size(t.dtype))
          die("tensor '" + name + "' has the wrong number of bytes");
        tensors.emplace(name, std::move(t));
      } catch (const CheckpointError &e) {
        checkBundleError(e.what(), prefix);
      }
    }
    reader.verify();
    if (reader.has_tensor(kObjectGraphKey)) {
      try {
        ObjectGraph graph(reader);
        for (const auto &[path, key] : graph.variables())
          if (graph.checkpoint_key(path) != key)
            die("object path '" + path + "' resolves to another key");
      } catch (const CheckpointError &e) {
        checkBundleError(e.what(), prefix);
      }
    }
  } catch (const CheckpointError &e) {
    checkBundleError(e.what(), prefix);
  }
  if (tensors.empty())
    return 0;

  const std::string copy = scratch().path() + "/copy";
  try {
    write_tensor_bundle(copy, tensors, {.num_shards = 3});
    TensorBundleReader back(copy);
    if (back.tensors().size() != tensors.size())
      die("tensors written back are listed differently");
    for (const auto &[name, t] : tensors)
      if (!same(back.get_tensor(name), t))
        die("tensor '" + name + "' changes when written back");
  } catch (const std::exception &e) {
    die(std::string("tensors written back do not read: ") + e.what());
  }
  return 0;
}
