//===- fashion_mnist_to_tfrecord.cpp - IDX files to TFRecord shards -----===//
//
// Writes the example's training split as TFRecord files of tf.train.Example
// ("image": 784 floats in [0, 1], "label": int64), the same split
// fashion_mnist_{jit,aot} train on with the same --data_dir and
// --eval_holdout, cut into --shards files round-robin:
//
//   fashion_mnist_to_tfrecord --data_dir=DIR --out_dir=OUT --shards=4
//   fashion_mnist_aot --data_dir=DIR --train_files='OUT/train-*'
//
// TF reads the files too (tf.data.TFRecordDataset + tf.io.parse_example).
//
//===----------------------------------------------------------------------===//

#include "estc/data.h"
#include "estc/flags.h"

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <vector>

using namespace estc;

int main(int argc, char **argv) {
  std::string dataDir = "/usr/share/datasets/fashion-mnist";
  std::string outDir;
  std::string compression;
  int64_t evalHoldout = 0;
  int64_t shards = 4;
  flags::FlagParser parser(argv[0], "Writes the example's training split "
                                    "as TFRecord files of tf.train.Example.");
  parser.add(flags::Flag("data_dir", &dataDir, "IDX files (train-*, t10k-*)")
                 .value_name("DIR"));
  parser.add(
      flags::Flag("out_dir", &outDir, "where train-NNNNN-of-NNNNN.tfrecord go")
          .value_name("DIR"));
  parser.add(flags::Flag("eval_holdout", &evalHoldout,
                         "as fashion_mnist_*: train on t10k's first examples")
                 .min(0));
  parser.add(flags::Flag("shards", &shards, "files to write").min(1));
  parser.add(flags::Flag("compression", &compression, "\"\", GZIP or ZLIB"));
  parser.parse_or_exit(argc, argv);
  try {
    if (outDir.empty())
      throw std::invalid_argument("missing --out_dir");
    data::Compression c = data::parse_compression(compression);
    data::ImageDataset set;
    if (evalHoldout > 0) {
      data::ImageDataset all = data::load_mnist(dataDir, "t10k");
      if (evalHoldout >= all.size())
        throw std::invalid_argument(
            "--eval_holdout=" + std::to_string(evalHoldout) +
            " leaves no training examples");
      set = all.slice(0, all.size() - evalHoldout);
    } else {
      set = data::load_mnist(dataDir, "train");
    }
    std::filesystem::create_directories(outDir);
    std::vector<std::unique_ptr<data::TFRecordWriter>> writers;
    char name[64];
    for (int64_t s = 0; s < shards; ++s) {
      std::snprintf(name, sizeof name, "train-%05lld-of-%05lld.tfrecord",
                    static_cast<long long>(s), static_cast<long long>(shards));
      writers.push_back(std::make_unique<data::TFRecordWriter>(
          (std::filesystem::path(outDir) / name).string(), c));
    }
    int64_t pixels = set.rows * set.cols;
    for (int64_t i = 0; i < set.size(); ++i) {
      std::vector<float> image(set.images.begin() + i * pixels,
                               set.images.begin() + (i + 1) * pixels);
      writers[i % shards]->write(data::ExampleBuilder()
                                     .add_float("image", image)
                                     .add_int64("label", {set.labels[i]})
                                     .serialize());
    }
    for (auto &w : writers)
      w->close();
    std::cerr << argv[0] << ": " << set.size() << " examples in " << shards
              << " files under " << outDir << "\n";
    return 0;
  } catch (const std::exception &e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
