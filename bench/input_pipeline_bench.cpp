//===- input_pipeline_bench.cpp - estc's input pipeline, records per second
//===//
//
// The estc half of bench/input_pipeline.sh (bench/tf_data_peer.py is the
// tf.data half; both read the same files). One mode per run, so that every
// thread count gets a fresh process (ESTC_DATA_THREADS is read from the
// environment, and peak RSS is the process's):
//
//   prepare   writes the data into --work_dir unless it is there: a
//             census-like table of --rows rows and 15 features (5 strings
//             from small vocabularies, 5 int64, 5 float32), drawn from a
//             fixed seed, as census.tfrecord (tf.train.Example records)
//             and census.csv (with a header); and big.tfrecord, --big_mb
//             MiB of records with a 4 KiB bytes feature.
//   tfrecord  TFRecordDataset -> batch(--batch) -> map(parse_example of the
//             15 FixedLenFeatures, num_parallel_calls = --threads).
//   csv       TextLineDataset(census.csv) -> skip(1) -> batch(--batch) ->
//             map(decode_csv with the 15 columns' record_defaults,
//             num_parallel_calls = --threads).
//   csv_dataset  CsvDataset(census.csv, header) -> batch(--batch): TF's
//             tf.data.experimental.CsvDataset, record by record.
//   memory    big.tfrecord through TFRecordDataset -> prefetch(4): peak RSS
//             (getrusage) against the file's size.
//
// Throughput modes run one warm-up pass and then --passes timed passes,
// each over a fresh iterator, and print the median pass's rate:
//   RESULT <mode> <threads> <records/s> <records per pass>
// The memory mode prints
//   MEMORY <file bytes> <peak RSS bytes before> <peak RSS bytes after>
//          <records> <seconds>
// Run (input_pipeline.sh does): build/bin/input_pipeline_bench
//   --work_dir=DIR --mode=prepare|tfrecord|csv|csv_dataset|memory [--threads=N]
//
//===----------------------------------------------------------------------===//

#include "lib/Data/Csv.h"
#include "lib/Data/Dataset.h"
#include "lib/Data/Example.h"
#include "lib/Data/Readers.h"
#include "lib/Data/TFRecord.h"
#include "lib/Support/Flags.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace {

namespace data = estc::data;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// The table's columns, in file order. The vocabularies are small, as the
// census data's categorical columns are.
const std::vector<std::pair<const char *, std::vector<const char *>>>
    kStringColumns = {
        {"workclass",
         {"Private", "Self-emp-not-inc", "Self-emp-inc", "Federal-gov",
          "Local-gov", "State-gov", "Without-pay", "Never-worked"}},
        {"education",
         {"Bachelors", "Some-college", "11th", "HS-grad", "Prof-school",
          "Assoc-acdm", "Assoc-voc", "9th", "7th-8th", "12th", "Masters",
          "1st-4th", "10th", "Doctorate", "5th-6th", "Preschool"}},
        {"occupation",
         {"Tech-support", "Craft-repair", "Other-service", "Sales",
          "Exec-managerial", "Prof-specialty", "Handlers-cleaners",
          "Machine-op-inspct", "Adm-clerical", "Farming-fishing",
          "Transport-moving", "Priv-house-serv", "Protective-serv",
          "Armed-Forces"}},
        {"relationship",
         {"Wife", "Own-child", "Husband", "Not-in-family", "Other-relative",
          "Unmarried"}},
        {"native_country",
         {"United-States", "Cambodia", "England", "Puerto-Rico", "Canada",
          "Germany",       "India",    "Japan",   "Greece",      "South",
          "China",         "Cuba",     "Iran",    "Honduras",    "Philippines",
          "Italy",         "Poland",   "Jamaica", "Vietnam",     "Mexico",
          "Portugal",      "Ireland",  "France",  "Haiti"}}};
const char *const kIntColumns[] = {"age", "fnlwgt", "education_num",
                                   "capital_gain", "hours_per_week"};
const char *const kFloatColumns[] = {"capital_loss", "income_ratio",
                                     "tenure_years", "credit_score",
                                     "commute_km"};

/// One row of the table. Drawn with mt19937_64 and integer arithmetic only
/// (std's distributions differ between standard libraries), so the files
/// are the same wherever they are generated.
struct Row {
  std::vector<std::string> strings;
  std::vector<int64_t> ints;
  std::vector<float> floats;
};

Row drawRow(std::mt19937_64 &rng) {
  auto below = [&](uint64_t n) { return static_cast<int64_t>(rng() % n); };
  // Two decimals, so that the CSV text is exact.
  auto decimal = [&](int64_t lo, int64_t hi) {
    return static_cast<float>(lo * 100 + below(uint64_t(hi - lo) * 100)) /
           100.0f;
  };
  Row row;
  for (const auto &[name, vocab] : kStringColumns)
    row.strings.push_back(vocab[below(vocab.size())]);
  row.ints = {17 + below(74), 12285 + below(1472135), 1 + below(16),
              below(10) == 0 ? below(99999) : 0, 1 + below(99)};
  row.floats = {decimal(0, 4356), decimal(0, 5), decimal(0, 45),
                decimal(300, 850), decimal(0, 120)};
  return row;
}

void writeCensus(const fs::path &dir, int64_t rows) {
  std::mt19937_64 rng(20261126);
  data::TFRecordWriter writer((dir / "census.tfrecord.tmp").string());
  std::ofstream csv(dir / "census.csv.tmp");
  std::string header;
  for (const auto &[name, vocab] : kStringColumns)
    header += std::string(header.empty() ? "" : ",") + name;
  for (const char *name : kIntColumns)
    header += std::string(",") + name;
  for (const char *name : kFloatColumns)
    header += std::string(",") + name;
  csv << header << "\n";
  char buf[32];
  for (int64_t r = 0; r < rows; ++r) {
    Row row = drawRow(rng);
    data::ExampleBuilder example;
    std::string line;
    for (size_t i = 0; i < row.strings.size(); ++i) {
      example.add_bytes(kStringColumns[i].first, {row.strings[i]});
      line += (i ? "," : "") + row.strings[i];
    }
    for (size_t i = 0; i < row.ints.size(); ++i) {
      example.add_int64(kIntColumns[i], {row.ints[i]});
      line += "," + std::to_string(row.ints[i]);
    }
    for (size_t i = 0; i < row.floats.size(); ++i) {
      example.add_float(kFloatColumns[i], {row.floats[i]});
      std::snprintf(buf, sizeof(buf), ",%.2f", double(row.floats[i]));
      line += buf;
    }
    writer.write(example.serialize());
    csv << line << "\n";
  }
  writer.close();
  csv.close();
  if (!csv)
    throw std::runtime_error((dir / "census.csv").string() + ": cannot write");
  // Renamed last, so that an interrupted run does not leave a short file
  // that a later run would take as complete.
  fs::rename(dir / "census.tfrecord.tmp", dir / "census.tfrecord");
  fs::rename(dir / "census.csv.tmp", dir / "census.csv");
}

/// Records of ~4 KiB (one bytes feature of 4096 bytes and an int64 id)
/// until the file has `mib` MiB.
void writeBig(const fs::path &dir, int64_t mib) {
  std::mt19937_64 rng(7);
  std::string payload(4096 + 8191, '\0');
  for (char &c : payload)
    c = static_cast<char>('a' + rng() % 26);
  data::TFRecordWriter writer((dir / "big.tfrecord.tmp").string());
  const uint64_t target = uint64_t(mib) << 20;
  uint64_t written = 0;
  for (int64_t id = 0; written < target; ++id) {
    data::ExampleBuilder example;
    // A different window of the payload per record.
    example.add_bytes("payload", {payload.substr(id % 8192, 4096)});
    example.add_int64("id", {id});
    std::string record = example.serialize();
    writer.write(record);
    written += record.size() + 16;
  }
  writer.close();
  fs::rename(dir / "big.tfrecord.tmp", dir / "big.tfrecord");
}

data::FeatureSpecs censusSpecs() {
  data::FeatureSpecs specs;
  for (const auto &[name, vocab] : kStringColumns)
    specs[name] = data::FixedLenFeature{{}, estc::DType::String, {}};
  for (const char *name : kIntColumns)
    specs[name] = data::FixedLenFeature{{}, estc::DType::Int64, {}};
  for (const char *name : kFloatColumns)
    specs[name] = data::FixedLenFeature{{}, estc::DType::Float32, {}};
  return specs;
}

/// The 15 columns as required record_defaults, in file order (as
/// tf_data_peer.py's `tf.constant([], dtype)` defaults).
std::vector<data::ColumnDefault> censusDefaults() {
  std::vector<data::ColumnDefault> defaults;
  for (size_t i = 0; i < kStringColumns.size(); ++i)
    defaults.push_back(data::ColumnDefault::required(estc::DType::String));
  for (size_t i = 0; i < std::size(kIntColumns); ++i)
    defaults.push_back(data::ColumnDefault::required(estc::DType::Int64));
  for (size_t i = 0; i < std::size(kFloatColumns); ++i)
    defaults.push_back(data::ColumnDefault::required(estc::DType::Float32));
  return defaults;
}

/// Rows in one pass over `dataset`; each element is a dict or a tuple of
/// [B] columns, and the first one's length is the batch's.
int64_t runPass(const data::Dataset &dataset) {
  int64_t rows = 0;
  data::Iterator it = dataset.make_iterator();
  while (std::optional<data::Element> batch = it.next())
    rows += data::tensor(batch->is_dict() ? batch->fields().begin()->second
                                          : batch->items().front())
                .shape.at(0);
  return rows;
}

void timeThroughput(const std::string &mode, const data::Dataset &dataset,
                    int64_t threads, int64_t passes) {
  const int64_t rows = runPass(dataset); // warm-up (and the page cache)
  std::vector<double> seconds;
  for (int64_t p = 0; p < passes; ++p) {
    auto start = Clock::now();
    int64_t got = runPass(dataset);
    seconds.push_back(
        std::chrono::duration<double>(Clock::now() - start).count());
    if (got != rows) {
      std::cerr << "input_pipeline_bench: pass " << p << " read " << got
                << " rows, the warm-up read " << rows << "\n";
      std::exit(1);
    }
  }
  // The median pass: the machine is shared, and one disturbed pass should
  // not decide the number.
  std::sort(seconds.begin(), seconds.end());
  std::printf("RESULT %s %" PRId64 " %.0f %" PRId64 "\n", mode.c_str(), threads,
              double(rows) / seconds[seconds.size() / 2], rows);
}

int64_t peakRssBytes() {
  struct rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return int64_t(usage.ru_maxrss) * 1024; // kilobytes on Linux
}

} // namespace

int main(int argc, char **argv) {
  std::string workDir, mode;
  int64_t threads = 1, passes = 3, batch = 512, rows = 32768, bigMib = 1024;
  estc::flags::FlagParser parser(
      "input_pipeline_bench",
      "estc's input pipeline on a census-like table: records per second "
      "(the estc half of bench/input_pipeline.sh).");
  parser.add(estc::flags::Flag("work_dir", &workDir,
                               "where the data files are (written by "
                               "--mode=prepare)"));
  parser.add(
      estc::flags::Flag("mode", &mode, "what to run")
          .choices({"prepare", "tfrecord", "csv", "csv_dataset", "memory"}));
  parser.add(estc::flags::Flag("threads", &threads, "map's num_parallel_calls")
                 .min(1));
  parser.add(estc::flags::Flag("passes", &passes, "timed passes").min(1));
  parser.add(estc::flags::Flag("batch", &batch, "batch size").min(1));
  parser.add(
      estc::flags::Flag("rows", &rows, "rows of the table (prepare)").min(1));
  parser.add(
      estc::flags::Flag("big_mb", &bigMib, "MiB of big.tfrecord (prepare)")
          .min(1));
  parser.parse_or_exit(argc, argv);
  if (workDir.empty() || mode.empty()) {
    std::cerr << "input_pipeline_bench: --work_dir and --mode are required\n";
    return 2;
  }
  const fs::path dir(workDir);
  try {
    if (mode == "prepare") {
      fs::create_directories(dir);
      if (!fs::exists(dir / "census.tfrecord") ||
          !fs::exists(dir / "census.csv"))
        writeCensus(dir, rows);
      if (!fs::exists(dir / "big.tfrecord"))
        writeBig(dir, bigMib);
      return 0;
    }
    if (mode == "tfrecord") {
      auto parser = std::make_shared<const data::ExampleParser>(censusSpecs());
      data::Dataset dataset =
          data::TFRecordDataset({(dir / "census.tfrecord").string()})
              .batch(batch)
              .map(
                  [parser](data::Element records) {
                    return parser->parse_example(data::tensor(records));
                  },
                  threads);
      timeThroughput(mode, dataset, threads, passes);
      return 0;
    }
    if (mode == "csv") {
      auto defaults = std::make_shared<const std::vector<data::ColumnDefault>>(
          censusDefaults());
      data::Dataset dataset =
          data::TextLineDataset({(dir / "census.csv").string()})
              .skip(1)
              .batch(batch)
              .map(
                  [defaults](data::Element lines) {
                    std::vector<estc::TensorValue> columns =
                        data::decode_csv(data::tensor(lines), *defaults);
                    std::vector<data::Element> items(
                        std::make_move_iterator(columns.begin()),
                        std::make_move_iterator(columns.end()));
                    return data::Element::tuple(std::move(items));
                  },
                  threads);
      timeThroughput(mode, dataset, threads, passes);
      return 0;
    }
    if (mode == "csv_dataset") {
      data::CsvOptions options;
      options.header = true;
      data::Dataset dataset = data::CsvDataset({(dir / "census.csv").string()},
                                               censusDefaults(), options)
                                  .batch(batch);
      timeThroughput(mode, dataset, threads, passes);
      return 0;
    }
    // memory
    const std::string big = (dir / "big.tfrecord").string();
    int64_t before = peakRssBytes();
    auto start = Clock::now();
    int64_t records = 0;
    data::Iterator it =
        data::TFRecordDataset({big}).prefetch(4).make_iterator();
    while (std::optional<data::Element> record = it.next()) {
      ++records;
    }
    double seconds =
        std::chrono::duration<double>(Clock::now() - start).count();
    std::printf("MEMORY %" PRIu64 " %" PRId64 " %" PRId64 " %" PRId64 " %.2f\n",
                uint64_t(fs::file_size(big)), before, peakRssBytes(), records,
                seconds);
    return 0;
  } catch (const std::exception &e) {
    std::cerr << "input_pipeline_bench: error: " << e.what() << "\n";
    return 1;
  }
}
