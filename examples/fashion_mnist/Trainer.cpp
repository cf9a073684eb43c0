//===- Trainer.cpp - The example's command line, data and training run --===//

#include "examples/fashion_mnist/Trainer.h"

#include "estc/estimator.h"
#include "estc/flags.h"

#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>

namespace estc {
namespace examples {

namespace {

using namespace estimator;

struct Flags {
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  std::string model_dir = "/tmp/fashion_mnist_model";
  int64_t eval_holdout = 0;
  int64_t epochs = 15;
  std::optional<int64_t> train_steps;
  int64_t batch_size = 128;
  int64_t save_checkpoints_steps = 500;
  std::string checkpoint_format = "auto";
  int64_t save_summary_steps = 100;
  int64_t log_step_count_steps = 100;
  int threads = 0;
  int64_t seed = 1;
  double min_accuracy = 0;
  std::optional<double> target_accuracy;
  std::string json;
  bool step_indexed_input = false;
  std::string train_files;
  std::string compression;
  int64_t shuffle_buffer = 2048;
  std::string device;
  std::string distribute;
};

Flags parseFlags(
    const char *program, int argc, char **argv,
    const std::string &default_device,
    const std::function<void(flags::FlagParser &)> &add_model_flags) {
  using flags::Flag;
  Flags f;
  f.device = default_device;
  flags::FlagParser parser(program,
                           "Trains the example's model with the Estimator "
                           "(train_and_evaluate) and prints the final "
                           "evaluation.");
  parser.add(Flag("data_dir", &f.data_dir, "IDX files (train-*, t10k-*[.gz])")
                 .value_name("DIR"));
  parser.add(Flag("eval_holdout", &f.eval_holdout,
                  "train on t10k's first examples and evaluate on its\n"
                  "last N (the shared mnist-t10k set: 2000); 0: train on\n"
                  "train-*, evaluate on t10k-*")
                 .min(0));
  parser.add(Flag("model_dir", &f.model_dir, "checkpoints and event files")
                 .value_name("DIR"));
  parser.add(Flag("epochs", &f.epochs, "passes over the training set").min(1));
  parser.add(Flag("train_steps", &f.train_steps,
                  "the global step to train to (instead of --epochs)")
                 .min(1));
  parser.add(Flag("batch_size", &f.batch_size, "examples per step").min(1));
  parser.add(Flag("save_checkpoints_steps", &f.save_checkpoints_steps,
                  "checkpoint (and evaluate) every N steps")
                 .min(1));
  parser.add(Flag("checkpoint_format", &f.checkpoint_format,
                  "tf (TF's tensor bundle), safetensors, or auto: the\n"
                  "model_dir's newest checkpoint's, else safetensors\n"
                  "(RunConfig.checkpoint_format)")
                 .choices({"auto", "tf", "safetensors"}));
  parser.add(Flag("save_summary_steps", &f.save_summary_steps,
                  "write the loss to the event file every N steps")
                 .min(1));
  parser.add(Flag("log_step_count_steps", &f.log_step_count_steps,
                  "log the loss and global_step/sec every N steps")
                 .min(1));
  parser.add(Flag("device", &f.device,
                  "cpu, cuda or cuda:N (RunConfig.device; the model must "
                  "be compiled for it)"));
  parser.add(Flag("threads", &f.threads, "kernel threads")
                 .min(1)
                 .default_text("the runtime's"));
  parser.add(
      Flag("seed", &f.seed, "tf_random_seed and the shuffling seed").min(0));
  parser.add(Flag("min_accuracy", &f.min_accuracy,
                  "exit 1 when the final accuracy is below X")
                 .min(0)
                 .max(1));
  parser.add(Flag("target_accuracy", &f.target_accuracy,
                  "time to accuracy: evaluate after every checkpoint but\n"
                  "the first and stop at the first evaluation whose\n"
                  "accuracy reaches X (--epochs / --train_steps at most;\n"
                  "needs an empty --model_dir)")
                 .min(0)
                 .max(1));
  parser.add(Flag("json", &f.json,
                  "also write the result (accuracy, steps, seconds, peak\n"
                  "RSS; bench/tf_fashion_peer.py's fields) to FILE")
                 .value_name("FILE"));
  parser.add(Flag("train_files", &f.train_files,
                  "train from these TFRecord files of tf.train.Examples\n"
                  "(fashion_mnist_to_tfrecord writes them) through a\n"
                  "shuffled, prefetched, parallel-parsed pipeline")
                 .value_name("GLOB"));
  parser.add(Flag("compression", &f.compression,
                  "of --train_files: \"\", GZIP or ZLIB"));
  parser.add(Flag("shuffle_buffer", &f.shuffle_buffer,
                  "examples in the shuffle buffer of --train_files")
                 .min(1));
  parser.add(Flag("step_indexed_input", &f.step_indexed_input,
                  "the batch of each step is a pure function of the\n"
                  "global step (a restart after a crash sees the data\n"
                  "an uninterrupted run would)"));
  parser.add(Flag("distribute", &f.distribute,
                  "train as a replica of a synchronous job\n"
                  "(MultiWorkerMirroredStrategy) with this communication;\n"
                  "the cluster comes from TF_CONFIG or mpirun")
                 .choices({"auto", "gloo", "mpi"}));
  if (add_model_flags)
    add_model_flags(parser);
  parser.parse_or_exit(argc, argv);
  if (!f.distribute.empty() && f.target_accuracy)
    parser.fail("--target_accuracy runs on one machine; drop --distribute");
  return f;
}

/// The images as an input_fn keeps them: {"x": string [n]}, each example's
/// rows x cols pixels as raw bytes (a TF user's tf.io.decode_raw input; a
/// quarter of the memory of float arrays: 47 MB for Fashion-MNIST's 60,000
/// training images instead of 188 MB). decodeImages turns each batch's into
/// the model's floats.
Features rawImagesOf(const data::MnistBytes &d) {
  int64_t pixels = d.rows * d.cols;
  std::vector<std::string> images(static_cast<size_t>(d.size()));
  for (int64_t i = 0; i < d.size(); ++i)
    images[i].assign(reinterpret_cast<const char *>(d.pixels.data()) +
                         i * pixels,
                     static_cast<size_t>(pixels));
  return {{"x", TensorValue::of_strings({d.size()}, std::move(images))}};
}
TensorValue labelsOf(const data::MnistBytes &d) {
  return TensorValue::of<int64_t>({d.size()}, d.labels);
}

/// A batch's raw images ({"x": string [b]}, (features, labels)) decoded
/// into f32 [b, 28, 28, 1] scaled as load_mnist scales them: tf.io.
/// decode_raw, then the cast and the division by 255, on the host.
data::Element decodeImages(data::Element batch) {
  auto &x = std::get<TensorValue>(batch.items()[0].fields().at("x").leaf());
  constexpr int64_t kPixels = 28 * 28;
  auto count = static_cast<int64_t>(x.strings.size());
  TensorValue images;
  images.dtype = DType::Float32;
  images.shape = {count, 28, 28, 1};
  images.data.resize(static_cast<size_t>(count * kPixels) * sizeof(float));
  auto *out = reinterpret_cast<float *>(images.data.data());
  for (int64_t i = 0; i < count; ++i) {
    const std::string &raw = x.strings[i];
    if (raw.size() != static_cast<size_t>(kPixels))
      throw data::DataError("decode_raw: an image of " +
                            std::to_string(raw.size()) +
                            " bytes, the model "
                            "takes 28x28 = 784");
    data::scale_pixels(reinterpret_cast<const uint8_t *>(raw.data()), kPixels,
                       out + i * kPixels);
  }
  x = std::move(images);
  return batch;
}

/// numpy_input_fn over the raw images, each batch decoded (Dataset::map).
InputFn imageInput(const data::MnistBytes &d,
                   const Dataset::ArrayOptions &options) {
  InputFn arrays = numpy_input_fn(rawImagesOf(d), labelsOf(d), options);
  return [arrays]() { return arrays().map(decodeImages); };
}

/// Training batches whose content depends only on the global step: the
/// batch that step s + 1 trains on holds examples (s * batch + i) mod n,
/// starting at the step of the latest checkpoint (read when train() calls
/// the input_fn).
InputFn stepIndexedInput(const data::MnistBytes &d, int64_t batchSize,
                         Estimator &estimator) {
  auto set = std::make_shared<data::MnistBytes>(d);
  return [set, batchSize, &estimator]() {
    int64_t step = 0;
    if (estimator.latest_checkpoint())
      step = static_cast<int64_t>(
          estimator.get_variable_value("global_step").element(0));
    auto next = [set, batchSize, step]() mutable -> std::optional<Batch> {
      int64_t n = set->size(), pixels = set->rows * set->cols;
      std::vector<float> images(batchSize * pixels);
      std::vector<int64_t> labels(batchSize);
      for (int64_t i = 0; i < batchSize; ++i) {
        int64_t e = (step * batchSize + i) % n;
        data::scale_pixels(set->pixels.data() + e * pixels,
                           static_cast<size_t>(pixels),
                           images.data() + i * pixels);
        labels[i] = set->labels[e];
      }
      ++step;
      Batch b;
      b.features["x"] =
          TensorValue::of<float>({batchSize, set->rows, set->cols, 1}, images);
      b.labels = TensorValue::of<int64_t>({batchSize}, labels);
      return b;
    };
    return Dataset::from_generator(next);
  };
}

/// The training batches from TFRecord files, as a tf.data user writes them:
/// files in a seeded order, two read at a time on threads, a shuffle
/// buffer, batches parsed on two threads, two batches prefetched. train()
/// saves and restores the pipeline's position with the checkpoints.
InputFn tfrecordInput(const Flags &f) {
  data::FeatureSpecs specs{
      {"image", data::FixedLenFeature{{28, 28, 1}, DType::Float32, {}}},
      {"label", data::FixedLenFeature{{}, DType::Int64, {}}}};
  auto parser = std::make_shared<const data::ExampleParser>(specs);
  auto seed = static_cast<uint64_t>(f.seed);
  return [f, parser, seed]() -> Dataset {
    return data::TFRecordDataset(
               data::Dataset::list_files({f.train_files}, true, seed),
               f.compression, data::kDefaultReadBuffer, 2)
        .shuffle(f.shuffle_buffer, seed)
        .repeat()
        .batch(f.batch_size)
        .map(
            [parser](data::Element records) {
              data::Element e = parser->parse_example(data::tensor(records));
              return data::Element::tuple(
                  {data::Element::dict({{"x", e["image"]}}), e["label"]});
            },
            2)
        .prefetch(2);
  };
}

using Clock = std::chrono::steady_clock;
double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// CPU time of the process, all threads: unlike wall time, barely moved
/// by other processes on a shared machine.
double processCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

/// --target_accuracy's schedule: train_and_evaluate's local one with
/// throttle_secs = 0 (an evaluation of every checkpoint but the one training
/// starts from), as a saving listener of one train() call, so that training
/// stops right at the first evaluation that reaches the target. The same
/// schedule as bench/tf_fashion_peer.py's listener on TF's Estimator.
class EvaluateUntilAccuracy : public CheckpointSaverListener {
public:
  EvaluateUntilAccuracy(Estimator &estimator, InputFn input_fn, double target)
      : estimator_(estimator), inputFn_(std::move(input_fn)), target_(target) {}

  bool after_save(Session &session, int64_t global_step) override {
    (void)session;
    if (global_step == 0)
      return false; // the untrained model (--model_dir is empty)
    auto start = Clock::now();
    results_ = estimator_.evaluate(inputFn_);
    reachedAt_ = Clock::now();
    reachedCpu_ = processCpuSeconds();
    evalSeconds_ += secondsSince(start);
    ++evaluations_;
    return reached();
  }

  bool reached() const {
    auto it = results_.find("accuracy");
    return it != results_.end() && it->second >= target_;
  }
  const EvalResults &results() const { return results_; }
  int64_t evaluations() const { return evaluations_; }
  double evalSeconds() const { return evalSeconds_; }
  /// When the evaluation that reached the target ended.
  Clock::time_point reachedAt() const { return reachedAt_; }
  double reachedCpuSeconds() const { return reachedCpu_; }

private:
  Estimator &estimator_;
  InputFn inputFn_;
  double target_;
  EvalResults results_;
  int64_t evaluations_ = 0;
  double evalSeconds_ = 0;
  Clock::time_point reachedAt_;
  double reachedCpu_ = 0;
};

/// What a run reports; with --json, as bench/tf_fashion_peer.py writes it.
struct RunReport {
  std::string program;
  const Flags *flags = nullptr;
  EvalResults results;
  bool reached = false;
  int64_t stepsPerEpoch = 1;
  int64_t evaluations = 0;
  double seconds = 0, cpuSeconds = 0, evalSeconds = 0, loadSeconds = 0;
  double peakRssMiB = 0;

  int64_t globalStep() const {
    auto it = results.find("global_step");
    return it == results.end() ? 0 : static_cast<int64_t>(it->second);
  }
  double accuracy() const {
    auto it = results.find("accuracy");
    return it == results.end() ? 0 : it->second;
  }
  double epochs() const {
    return static_cast<double>(globalStep()) / stepsPerEpoch;
  }

  /// tf_fashion_peer.py's line (its describe()).
  std::string line() const {
    std::ostringstream os;
    os << std::fixed << (reached ? "reached" : "did not reach") << " accuracy "
       << std::defaultfloat << *flags->target_accuracy << std::fixed
       << ": accuracy " << std::setprecision(4) << accuracy() << " at step "
       << globalStep() << " (" << std::setprecision(2) << epochs()
       << " epochs, " << evaluations << " evaluations) in "
       << std::setprecision(1) << seconds << " s (evaluations " << evalSeconds
       << " s); data loading " << loadSeconds << " s; threads "
       << flags->threads << "; peak RSS " << peakRssMiB << " MiB";
    return os.str();
  }

  std::string json() const {
    std::ostringstream os;
    os << std::setprecision(10) << "{\n \"peer\": \"estc\",\n \"trainer\": \""
       << program << "\",\n \"threads\": " << flags->threads
       << ",\n \"batch\": " << flags->batch_size;
    if (flags->target_accuracy)
      os << ",\n \"target_accuracy\": " << *flags->target_accuracy
         << ",\n \"reached\": " << (reached ? "true" : "false");
    os << ",\n \"accuracy\": " << accuracy()
       << ",\n \"global_step\": " << globalStep()
       << ",\n \"epochs\": " << epochs()
       << ",\n \"evaluations\": " << evaluations
       << ",\n \"seconds\": " << seconds
       << ",\n \"cpu_seconds\": " << cpuSeconds
       << ",\n \"eval_seconds\": " << evalSeconds
       << ",\n \"load_seconds\": " << loadSeconds
       << ",\n \"peak_rss_mib\": " << peakRssMiB << "\n}\n";
    return os.str();
  }
};

double peakRssMiB() {
  struct rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

} // namespace

int run_trainer(
    const char *program, int argc, char **argv,
    const EstimatorFactory &make_estimator, const std::string &default_device,
    const std::function<void(flags::FlagParser &)> &add_model_flags) {
  Flags flags =
      parseFlags(program, argc, argv, default_device, add_model_flags);
  try {
    auto start = Clock::now();
    double startCpu = processCpuSeconds();
    if (flags.target_accuracy && std::filesystem::exists(flags.model_dir) &&
        !std::filesystem::is_empty(flags.model_dir))
      throw std::invalid_argument(
          "--target_accuracy: --model_dir=" + flags.model_dir +
          " is not empty (time to accuracy starts from an untrained model)");
    // The Estimator first: a bad device or a model compiled for another
    // one is one line before the data is read.
    RunConfigOptions o;
    o.model_dir = flags.model_dir;
    o.tf_random_seed = flags.seed;
    o.save_checkpoints_steps = flags.save_checkpoints_steps;
    o.checkpoint_format = flags.checkpoint_format;
    o.save_summary_steps = flags.save_summary_steps;
    o.log_step_count_steps = flags.log_step_count_steps;
    if (flags.threads > 0)
      o.intra_op_parallelism_threads = flags.threads;
    o.device = flags.device;
    // TF_CONFIG (and mpirun's ranks) only for a distributed run.
    if (!flags.distribute.empty())
      o.train_distribute = MultiWorkerMirroredStrategy{flags.distribute};
    RunConfig config = flags.distribute.empty()
                           ? RunConfig::from_tf_config("", o)
                           : RunConfig(o);
    std::unique_ptr<Estimator> estimator = make_estimator(config);

    auto loadStart = Clock::now();
    double loadStartCpu = processCpuSeconds();
    data::MnistBytes trainSet, evalSet;
    if (flags.eval_holdout > 0) {
      data::MnistBytes all = data::load_mnist_bytes(flags.data_dir, "t10k");
      if (flags.eval_holdout >= all.size())
        throw std::invalid_argument(
            "--eval_holdout=" + std::to_string(flags.eval_holdout) +
            " leaves no training examples of " + std::to_string(all.size()));
      trainSet = all.slice(0, all.size() - flags.eval_holdout);
      evalSet = all.slice(all.size() - flags.eval_holdout, all.size());
    } else {
      trainSet = data::load_mnist_bytes(flags.data_dir, "train");
      evalSet = data::load_mnist_bytes(flags.data_dir, "t10k");
    }
    if (trainSet.rows != 28 || trainSet.cols != 28)
      throw std::invalid_argument(
          flags.data_dir + ": images are " + std::to_string(trainSet.rows) +
          "x" + std::to_string(trainSet.cols) + ", the model takes 28x28");
    double loadSeconds = secondsSince(loadStart);
    double loadCpuSeconds = processCpuSeconds() - loadStartCpu;
    int64_t stepsPerEpoch =
        (trainSet.size() + flags.batch_size - 1) / flags.batch_size;
    int64_t maxSteps = flags.train_steps.value_or(flags.epochs * stepsPerEpoch);
    std::cerr << program << ": " << trainSet.size() << " training and "
              << evalSet.size() << " evaluation examples from "
              << flags.data_dir << "; training to step " << maxSteps << "\n";

    Dataset::ArrayOptions trainOptions;
    trainOptions.batch_size = flags.batch_size;
    trainOptions.num_epochs = std::nullopt;
    trainOptions.shuffle = true;
    trainOptions.seed = static_cast<uint64_t>(flags.seed);
    Dataset::ArrayOptions evalOptions;
    evalOptions.batch_size = 500;
    TrainSpec trainSpec;
    trainSpec.input_fn =
        !flags.train_files.empty() ? tfrecordInput(flags)
        : flags.step_indexed_input
            ? stepIndexedInput(trainSet, flags.batch_size, *estimator)
            : imageInput(trainSet, trainOptions);
    trainSpec.max_steps = maxSteps;
    EvalSpec evalSpec;
    evalSpec.input_fn = imageInput(evalSet, evalOptions);
    evalSpec.steps = std::nullopt;
    evalSpec.throttle_secs = 0;
    // The input_fns hold copies of their own: keeping the loaded sets would
    // double the memory the data takes for the whole run.
    trainSet = data::MnistBytes();
    evalSet = data::MnistBytes();
    RunReport report;
    report.program = program;
    report.flags = &flags;
    report.stepsPerEpoch = stepsPerEpoch;
    report.loadSeconds = loadSeconds;
    if (flags.target_accuracy) {
      auto listener = std::make_shared<EvaluateUntilAccuracy>(
          *estimator, evalSpec.input_fn, *flags.target_accuracy);
      estimator->train(trainSpec.input_fn,
                       {.max_steps = maxSteps, .saving_listeners = {listener}});
      report.results = listener->results();
      report.reached = listener->reached();
      report.evaluations = listener->evaluations();
      report.evalSeconds = listener->evalSeconds();
      // From the start to the end of the evaluation that reached the target
      // (or of training), less the data loading; wall and CPU time.
      report.cpuSeconds = (report.reached ? listener->reachedCpuSeconds()
                                          : processCpuSeconds()) -
                          startCpu - loadCpuSeconds;
      report.seconds =
          std::chrono::duration<double>(
              (report.reached ? listener->reachedAt() : Clock::now()) - start)
              .count() -
          loadSeconds;
    } else {
      report.results =
          train_and_evaluate(*estimator, trainSpec, evalSpec).eval_result;
      // A replica of a distributed job trains only; the chief then
      // evaluates its last checkpoint, the workers report nothing.
      if (report.results.empty() && config.distributed()) {
        if (!config.is_chief()) {
          std::cout << "worker " << config.task_id() << " done\n";
          return 0;
        }
        report.results = estimator->evaluate(evalSpec.input_fn);
      }
      report.seconds = secondsSince(start) - loadSeconds;
      report.cpuSeconds = processCpuSeconds() - startCpu - loadCpuSeconds;
    }
    if (report.results.empty())
      throw std::runtime_error("no evaluation: training did not run a step");
    report.peakRssMiB = peakRssMiB();

    std::cout << "final evaluation:";
    for (const auto &[name, value] : report.results)
      std::cout << " " << name << " = " << value;
    std::cout << "\nwall time: " << secondsSince(start) << " s\n";
    if (flags.target_accuracy)
      std::cout << report.line() << "\n";
    if (!flags.json.empty()) {
      std::ofstream out(flags.json);
      out << report.json();
      if (!out.flush())
        throw std::invalid_argument("--json=" + flags.json +
                                    ": cannot write the file");
    }
    double accuracy = report.accuracy();
    if (accuracy < flags.min_accuracy) {
      std::ostringstream what;
      what << "accuracy " << accuracy
           << " is below --min_accuracy=" << flags.min_accuracy;
      estc::flags::print_error_line(program, what.str());
      return 1;
    }
    return 0;
  } catch (const std::exception &e) {
    estc::flags::print_error_line(program, e.what());
    return 1;
  }
}

} // namespace examples
} // namespace estc
