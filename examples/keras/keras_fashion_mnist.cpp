//===- keras_fashion_mnist.cpp - A Keras model fine-tuned as an Estimator -===//
//
// TF's guide to the Estimator, in C++: a compiled Keras model (here the
// MobileNetV2 that make_mobilenet_v2.py writes) becomes an Estimator with
// model_to_estimator, trains on Fashion-MNIST images resized and rescaled
// in the input pipeline (grey 28 x 28 -> RGB, the model's input size,
// [-1, 1]) with train_and_evaluate, is exported and served (the export
// loaded with serving::SavedModel and run on test images), and its trained
// weights are written back into a Keras file that Keras loads:
//
//   python3 examples/keras/make_mobilenet_v2.py --out /tmp/mobilenet_v2.keras
//   build/bin/keras_fashion_mnist --model=/tmp/mobilenet_v2.keras
//       --write_back=/tmp/mobilenet_v2_fine_tuned.keras
//   python3 examples/keras/evaluate_in_keras.py
//       --model=/tmp/mobilenet_v2_fine_tuned.keras
//
//===----------------------------------------------------------------------===//

#include "estc/data.h"
#include "estc/estimator.h"
#include "estc/flags.h"
#include "estc/keras.h"
#include "estc/serving.h"

#include <cstdio>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>

using namespace estc;
using namespace estc::estimator;

namespace {

struct Flags {
  std::string model;
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  std::string model_dir = "/tmp/keras_fashion_mnist";
  std::string export_dir;
  std::string write_back;
  int64_t train_steps = 3750;
  int64_t batch_size = 32;
  int64_t eval_holdout = 0;
  int64_t save_checkpoints_steps = 1000;
  int threads = 0;
  int64_t seed = 1;
  double min_accuracy = 0;
};

/// The input pipeline: IDX images [0, 1] -> batches of the model's input
/// size, 3 channels, [-1, 1] (MobileNetV2's preprocess_input), as the
/// guide's map(resize and rescale).
InputFn imageInput(const data::ImageDataset &set, const std::string &input,
                   const Dims &size, int64_t batch_size, bool train,
                   uint64_t seed) {
  auto images = std::make_shared<TensorValue>(
      TensorValue::of<float>({set.size(), set.rows, set.cols, 1}, set.images));
  auto labels = std::make_shared<TensorValue>(
      TensorValue::of<int64_t>({set.size()}, set.labels));
  return [=]() -> Dataset {
    data::Dataset d = data::Dataset::from_tensor_slices(
        data::Element::tuple({*images, *labels}));
    if (train)
      d = d.shuffle(10000, seed).repeat();
    return d.batch(batch_size)
        .map(
            [input, size](data::Element e) {
              TensorValue x = data::image::resize(
                  data::image::grayscale_to_rgb(data::tensor(e[0])), size);
              auto *v = reinterpret_cast<float *>(x.data.data());
              for (int64_t i = 0; i < x.num_elements(); ++i)
                v[i] = v[i] * 2.0f - 1.0f;
              return data::Element::tuple(
                  {data::Element::dict({{input, x}}), e[1]});
            },
            2)
        .prefetch(2);
  };
}

int run(const Flags &f) {
  // The model's input first: a file that is not a Keras image model fails
  // before the data is read.
  std::vector<keras::InputSpec> inputs =
      keras::model_inputs(keras::load_model(f.model));
  if (inputs.size() != 1 || inputs[0].shape.size() != 4 ||
      inputs[0].shape[3] != 3)
    throw std::invalid_argument(f.model +
                                ": the model must take one image input "
                                "[batch, height, width, 3]");
  data::ImageDataset train, test;
  if (f.eval_holdout > 0) {
    // One file set (the shared MNIST test set): train on its first
    // examples, evaluate on the last eval_holdout.
    data::ImageDataset all = data::load_mnist(f.data_dir, "t10k");
    if (f.eval_holdout >= all.size())
      throw std::invalid_argument(
          "--eval_holdout=" + std::to_string(f.eval_holdout) +
          ": must be below the " + std::to_string(all.size()) + " examples");
    train = all.slice(0, all.size() - f.eval_holdout);
    test = all.slice(all.size() - f.eval_holdout, all.size());
  } else {
    train = data::load_mnist(f.data_dir, "train");
    test = data::load_mnist(f.data_dir, "t10k");
  }

  KerasEstimatorOptions options;
  RunConfigOptions config;
  config.model_dir = f.model_dir;
  config.tf_random_seed = f.seed;
  config.save_checkpoints_steps = f.save_checkpoints_steps;
  if (f.threads > 0)
    config.intra_op_parallelism_threads = f.threads;
  options.config = RunConfig(config);
  std::unique_ptr<KerasEstimator> est = model_to_estimator(f.model, options);

  const std::string input = inputs[0].name;
  const Dims size{inputs[0].shape[1], inputs[0].shape[2]};
  std::printf("%s: input %s %s, outputs", f.model.c_str(), input.c_str(),
              shape_string(inputs[0].shape).c_str());
  for (const std::string &o : est->output_names())
    std::printf(" %s", o.c_str());
  std::printf("\n");

  TrainSpec trainSpec;
  trainSpec.input_fn = imageInput(train, input, size, f.batch_size, true,
                                  static_cast<uint64_t>(f.seed));
  trainSpec.max_steps = f.train_steps;
  EvalSpec evalSpec;
  evalSpec.input_fn = imageInput(test, input, size, 100, false, 0);
  evalSpec.steps = std::nullopt;
  evalSpec.throttle_secs = 0;
  auto [metrics, exports] = train_and_evaluate(*est, trainSpec, evalSpec);
  (void)exports;
  double accuracy = metrics.at("accuracy");
  std::printf("final evaluation: accuracy %.4f, loss %.4f, global_step %lld\n",
              accuracy, metrics.at("loss"),
              static_cast<long long>(metrics.at("global_step")));

  // Export, then serve the export: the first test images through
  // SavedModel::run, as estc-serve runs them for TF Serving's clients.
  std::string exportBase =
      f.export_dir.empty() ? f.model_dir + "/export" : f.export_dir;
  std::string exported =
      est->export_saved_model(exportBase, est->serving_input_receiver_fn());
  auto served = serving::SavedModel::load(exported);
  Dataset firstBatch = imageInput(test.slice(0, 8), input, size, 8, false, 0)();
  std::optional<Batch> batch = firstBatch.next();
  serving::TensorMap out =
      served->run("serving_default", {{input, batch->features.at(input)}});
  const TensorValue &logits = out.at(est->output_names()[0]);
  std::printf("served %s: predicted", exported.c_str());
  int64_t classes = logits.shape.back();
  std::vector<float> l = logits.values<float>();
  for (int64_t i = 0; i < logits.shape[0]; ++i) {
    int64_t best = 0;
    for (int64_t c = 1; c < classes; ++c)
      if (l[i * classes + c] > l[i * classes + best])
        best = c;
    std::printf(" %lld", static_cast<long long>(best));
  }
  std::printf(" (labels");
  for (int64_t i = 0; i < 8; ++i)
    std::printf(" %lld", static_cast<long long>(test.labels[i]));
  std::printf(")\n");

  if (!f.write_back.empty()) {
    size_t n = est->save_keras_model(f.write_back);
    std::printf("wrote %zu trained weights back into %s\n", n,
                f.write_back.c_str());
  }
  if (accuracy < f.min_accuracy) {
    std::fprintf(stderr,
                 "keras_fashion_mnist: accuracy %.4f is below "
                 "--min_accuracy=%.4f\n",
                 accuracy, f.min_accuracy);
    return 1;
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  using flags::Flag;
  Flags f;
  flags::FlagParser parser(
      "keras_fashion_mnist",
      "Fine-tunes a compiled Keras image model (a .keras or .h5 file) on "
      "Fashion-MNIST as an Estimator (model_to_estimator, "
      "train_and_evaluate), exports and serves it, and writes the trained "
      "weights back into a Keras file.");
  parser.add(Flag("model", &f.model,
                  "the Keras model (make_mobilenet_v2.py writes one)")
                 .value_name("FILE")
                 .required());
  parser.add(Flag("data_dir", &f.data_dir, "Fashion-MNIST's IDX files")
                 .value_name("DIR"));
  parser.add(Flag("model_dir", &f.model_dir, "checkpoints and event files")
                 .value_name("DIR"));
  parser.add(Flag("export_dir", &f.export_dir,
                  "where exports go (default: MODEL_DIR/export)")
                 .value_name("DIR"));
  parser.add(Flag("write_back", &f.write_back,
                  "write the trained weights into this Keras file")
                 .value_name("FILE"));
  parser.add(Flag("train_steps", &f.train_steps, "the global step to train to")
                 .min(1));
  parser.add(Flag("batch_size", &f.batch_size, "examples per step").min(1));
  parser.add(Flag("eval_holdout", &f.eval_holdout,
                  "train on t10k's first examples and evaluate on its\n"
                  "last N (the shared mnist-t10k set); 0: train on\n"
                  "train-*, evaluate on t10k-*")
                 .min(0));
  parser.add(Flag("save_checkpoints_steps", &f.save_checkpoints_steps,
                  "checkpoint (and evaluate) every N steps")
                 .min(1));
  parser.add(Flag("threads", &f.threads, "kernel threads")
                 .min(1)
                 .default_text("the runtime's"));
  parser.add(
      Flag("seed", &f.seed, "tf_random_seed and the shuffling seed").min(0));
  parser.add(Flag("min_accuracy", &f.min_accuracy,
                  "exit 1 when the final accuracy is below X")
                 .min(0)
                 .max(1));
  parser.parse_or_exit(argc, argv);
  try {
    return run(f);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "keras_fashion_mnist: error: %s\n", e.what());
    return 1;
  }
}
