//===- keras_io_tool.cpp - lib/Keras's reader and writer, for Keras ------===//
//
// The C++ side of test/e2e/keras_io_compat.py, which writes Keras model and
// weights files with tf.keras (and Keras 3 where installed) and compares
// what lib/Keras reads with Keras's own model.weights:
//
//   keras_io_tool dump FILE [--config-from=MODEL]
//       one JSON object on stdout: {"format", "keras_version", "backend",
//       "class_name", "has_training_config", "layers": [{"name",
//       "class_name", "weights": [{"name", "path", "dtype", "shape",
//       "crc32"}]}]}; crc32 is zlib's CRC-32 of the value's little-endian
//       bytes in the file's dtype
//   keras_io_tool plus-one IN OUT [--config-from=MODEL]
//       reads IN, adds 1 to every floating-point weight and writes OUT in
//       IN's format (write_keras_file)
//
// --config-from names a model file whose config names the weights of a
// weights-only file in Keras 3's layout. An error is one line on stderr,
// exit status 1.
//
//===----------------------------------------------------------------------===//

#include "lib/Keras/KerasModel.h"
#include "lib/Support/Json.h"

#include <zlib.h>

#include <cstring>
#include <iostream>
#include <optional>

using namespace estc;

namespace {
std::string dumpJson(const keras::KerasModel &m) {
  std::string out = "{\"format\":" + json::quote(keras::format_name(m.format)) +
                    ",\"keras_version\":" + json::quote(m.keras_version) +
                    ",\"backend\":" + json::quote(m.backend) +
                    ",\"class_name\":" + json::quote(m.class_name()) +
                    ",\"has_training_config\":" +
                    (m.training_config.IsObject() ? "true" : "false") +
                    ",\"layers\":[";
  for (size_t i = 0; i < m.layers.size(); ++i) {
    const keras::LayerWeights &l = m.layers[i];
    out += std::string(i ? "," : "") + "{\"name\":" + json::quote(l.layer) +
           ",\"class_name\":" + json::quote(l.class_name) + ",\"weights\":[";
    for (size_t j = 0; j < l.weights.size(); ++j) {
      const keras::Weight &w = l.weights[j];
      uLong crc = crc32(0L, Z_NULL, 0);
      crc = crc32(crc, reinterpret_cast<const Bytef *>(w.value.data.data()),
                  static_cast<uInt>(w.value.data.size()));
      std::string shape;
      for (size_t k = 0; k < w.value.shape.size(); ++k)
        shape += (k ? "," : "") + std::to_string(w.value.shape[k]);
      out += std::string(j ? "," : "") + "{\"name\":" + json::quote(w.name) +
             ",\"path\":" + json::quote(w.path) +
             ",\"dtype\":" + json::quote(tf_name(w.value.dtype)) +
             ",\"shape\":[" + shape + "],\"crc32\":" + std::to_string(crc) +
             "}";
    }
    out += "]}";
  }
  return out + "]}";
}

void plusOne(TensorValue &v) {
  int64_t n = v.num_elements();
  if (v.dtype == DType::Float32) {
    float *p = reinterpret_cast<float *>(v.data.data());
    for (int64_t i = 0; i < n; ++i)
      p[i] += 1.0f;
  } else if (v.dtype == DType::Float64) {
    double *p = reinterpret_cast<double *>(v.data.data());
    for (int64_t i = 0; i < n; ++i)
      p[i] += 1.0;
  } else if (v.dtype == DType::Float16) {
    uint16_t *p = reinterpret_cast<uint16_t *>(v.data.data());
    for (int64_t i = 0; i < n; ++i)
      p[i] = float_to_half(half_to_float(p[i]) + 1.0f);
  }
}

int usage() {
  std::cerr << "usage: keras_io_tool dump FILE [--config-from=MODEL] | "
               "plus-one IN OUT [--config-from=MODEL]\n";
  return 2;
}
} // namespace

int main(int argc, char **argv) {
  std::vector<std::string> args;
  std::optional<std::string> configFrom;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--config-from=", 0) == 0)
      configFrom = a.substr(std::strlen("--config-from="));
    else
      args.push_back(a);
  }
  if (args.empty())
    return usage();
  try {
    std::optional<keras::KerasModel> source;
    if (configFrom)
      source = keras::load_model(*configFrom);
    const rapidjson::Value *config = source ? &source->config : nullptr;
    if (args[0] == "dump" && args.size() == 2) {
      keras::KerasModel m = keras::read_keras_file(args[1], config);
      std::cout << dumpJson(m) << "\n";
      return 0;
    }
    if (args[0] == "plus-one" && args.size() == 3) {
      keras::KerasModel m = keras::read_keras_file(args[1], config);
      for (keras::LayerWeights &l : m.layers)
        for (keras::Weight &w : l.weights)
          plusOne(w.value);
      keras::write_keras_file(m, args[2]);
      return 0;
    }
    return usage();
  } catch (const std::exception &e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
}
