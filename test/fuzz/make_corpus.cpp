//===- make_corpus.cpp - Writes the fuzz targets' seed files -------------===//
//
//   build-fuzz/bin/make_fuzz_corpus test/fuzz/corpus
//
// Writes the seeds of the targets whose files estc itself writes, with
// estc's own writers: checkpoints (Saver), TF checkpoints (BundleWriter),
// the state file, event files
// (SummaryWriter), binary graphs (GraphIO, from corpus/graph_text/*.pbtxt),
// IDX files (the format's bytes; gzip through zlib), TFRecord files
// (TFRecordWriter; the first byte picks the compression), serialized
// tf.train.Examples (ExampleBuilder), tf.train.SequenceExamples
// (SequenceExampleBuilder) and feature columns and parse specs as
// an export writes them (feature_column/Serialization.h). Deterministic:
// fixed clocks and values, so rerunning it changes nothing. The JSON,
// TF_CONFIG, flags and text-graph seeds are written by hand (real inputs
// from the tests and docs).
//
//===----------------------------------------------------------------------===//

#include "lib/Checkpoint/Checkpoint.h"
#include "lib/Checkpoint/TensorBundle.h"
#include "lib/Data/Dataset.h"
#include "lib/Data/Example.h"
#include "lib/Data/SequenceExample.h"
#include "lib/Data/TFRecord.h"
#include "lib/FeatureColumn/Serialization.h"
#include "lib/Graph/GraphIO.h"
#include "lib/Summary/Summary.h"
#include "lib/Support/FileIO.h"

#include "test/fuzz/IteratorStatePipeline.h"

#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <unistd.h>

using namespace estc;

namespace {

// Where the writers write before the files are copied to fixed names;
// removed at exit.
const std::string &scratchRoot() {
  static const std::string root =
      "/tmp/estc-fuzz-corpus-" + std::to_string(::getpid());
  return root;
}

std::string scratchDir(const std::string &name) {
  std::string dir = scratchRoot() + "/" + name;
  fileio::makeDirs(dir);
  return dir;
}

void copyTo(const std::string &from, const std::string &to) {
  fileio::writeFileAtomically(to, fileio::readFile(from));
  std::cout << to << "\n";
}

void checkpoints(const std::string &out) {
  std::string dir = scratchDir("ckpt");
  train::SaverOptions options;
  options.clock = [] { return 1700000000.0; };
  options.max_to_keep = 2;
  train::Saver saver(dir, options);
  train::VariableMap vars;
  vars["dense/kernel"] =
      TensorValue::of<float>({2, 3}, {0.5f, -1.25f, 2, 0, 1e-3f, -7});
  vars["dense/bias"] = TensorValue::of<float>({3}, {0.1f, 0.2f, 0.3f});
  vars["dense/kernel/Adam"] = TensorValue::of<double>({2}, {1e-8, -2.5});
  vars["embedding/ids"] = TensorValue::of<int32_t>({2, 2}, {0, 7, -1, 3});
  vars["mask"] = TensorValue::of<bool>({3}, {true, false, true});
  vars["half"] = TensorValue::from_bytes(DType::Float16, {2},
                                         std::string("\x00\x3c\x00\xc0", 4));
  vars["bhalf"] =
      TensorValue::from_bytes(DType::BFloat16, {1}, std::string("\x80\x3f", 2));
  vars["empty"] = TensorValue::of<float>({0, 4}, {});
  saver.save(vars, 100);
  copyTo(train::checkpoint_file(dir + "/model.ckpt-100"),
         out + "/checkpoint/all_dtypes.safetensors");
  saver.save({}, 200); // just global_step
  copyTo(train::checkpoint_file(dir + "/model.ckpt-200"),
         out + "/checkpoint/global_step_only.safetensors");
  copyTo(dir + "/checkpoint", out + "/checkpoint_state/saver");
}

// TF checkpoints (BundleWriter): the tf_table seeds are their .index files,
// the tf_bundle seeds a 4-byte little-endian index length, the index, then
// the data file (test/fuzz/tf_bundle_fuzzer.cpp).
void tfBundles(const std::string &out) {
  std::string dir = scratchDir("bundles");
  auto framed = [&](const std::string &prefix, const std::string &name) {
    std::string index = fileio::readFile(train::bundle_index_file(prefix));
    std::string bytes;
    for (int i = 0; i < 4; ++i)
      bytes.push_back(static_cast<char>((index.size() >> (8 * i)) & 0xff));
    bytes += index + fileio::readFile(train::bundle_data_file(prefix, 0, 1));
    fileio::writeFileAtomically(out + "/tf_bundle/" + name, bytes);
    std::cout << out << "/tf_bundle/" << name << "\n";
    copyTo(train::bundle_index_file(prefix), out + "/tf_table/" + name);
  };
  train::VariableMap vars;
  vars["dense/kernel"] =
      TensorValue::of<float>({2, 3}, {0.5f, -1.25f, 2, 0, 1e-3f, -7});
  vars["dense/kernel/Adam"] = TensorValue::of<double>({2}, {1e-8, -2.5});
  vars["embedding/ids"] = TensorValue::of<int32_t>({2, 2}, {0, 7, -1, 3});
  vars["global_step"] = TensorValue::of<int64_t>({}, {100});
  vars["mask"] = TensorValue::of<bool>({3}, {true, false, true});
  vars["half"] = TensorValue::from_bytes(DType::Float16, {2},
                                         std::string("\x00\x3c\x00\xc0", 4));
  vars["bhalf"] =
      TensorValue::from_bytes(DType::BFloat16, {1}, std::string("\x80\x3f", 2));
  vars["vocab"] = TensorValue::of_strings({3}, {"a", "", "word"});
  vars["empty"] = TensorValue::of<float>({0, 4}, {});
  train::write_tensor_bundle(dir + "/all", vars);
  framed(dir + "/all", "all_dtypes");
  // A partitioned variable (row and column slices) and a string one.
  train::BundleWriter writer(dir + "/part");
  writer.add_slice("w", {3, 2}, {{0, 0}, {2, -1}},
                   TensorValue::of<float>({2, 2}, {1, 2, 3, 4}));
  writer.add_slice("w", {3, 2}, {{2, 0}, {1, 1}},
                   TensorValue::of<float>({1, 1}, {5}));
  writer.add_slice("w", {3, 2}, {{2, 1}, {1, 1}},
                   TensorValue::of<float>({1, 1}, {6}));
  writer.add_slice("s", {2}, {{0}, {1}}, TensorValue::of_strings({1}, {"x"}));
  writer.add_slice("s", {2}, {{1}, {1}}, TensorValue::of_strings({1}, {"yz"}));
  writer.finish();
  framed(dir + "/part", "partitioned");
}

void events(const std::string &out) {
  std::string dir = scratchDir("events");
  summary::SummaryWriter writer(dir, [] { return 1700000000.25; });
  writer.add_scalar("loss", 0.6931, 1);
  writer.add_scalars({{"accuracy", 0.75}, {"auc", 0.8125}}, 100);
  summary::Event graph;
  graph.set_step(0);
  graph.set_graph_def(std::string("\x08\x01", 2));
  writer.add_event(graph);
  summary::Event histogram;
  histogram.set_step(100);
  auto *value = histogram.mutable_summary()->add_value();
  value->set_tag("dense/kernel");
  value->mutable_metadata()->mutable_plugin_data()->set_plugin_name(
      "histograms");
  auto *histo = value->mutable_histo();
  histo->set_min(-1);
  histo->set_max(2);
  histo->set_num(6);
  histo->add_bucket_limit(0);
  histo->add_bucket_limit(2);
  histo->add_bucket(2);
  histo->add_bucket(4);
  writer.add_event(histogram);
  writer.close();
  copyTo(writer.path(), out + "/event_file/events.out.tfevents.scalars");
  // What a writer leaves before its first summary: the file_version record.
  summary::SummaryWriter empty(scratchDir("empty"), [] { return 1.5; });
  empty.close();
  copyTo(empty.path(), out + "/event_file/events.out.tfevents.version_only");
}

void graphs(const std::string &out) {
  for (const char *name :
       {"cycle", "constant", "local_variable", "signature_tensors"}) {
    graph::GraphDef graph;
    std::string error;
    if (!graph::readGraph(out + "/graph_text/" + name + ".pbtxt", graph,
                          error) ||
        !graph::writeGraph(out + "/graph_binary/" + name + ".pb", graph, error))
      throw std::runtime_error(error);
    std::cout << out << "/graph_binary/" << name << ".pb\n";
  }
}

std::string idx(uint8_t type, const std::vector<uint32_t> &dims,
                const std::string &elements) {
  std::string bytes{0, 0, static_cast<char>(type),
                    static_cast<char>(dims.size())};
  for (uint32_t d : dims)
    for (int shift = 24; shift >= 0; shift -= 8)
      bytes.push_back(static_cast<char>(d >> shift));
  return bytes + elements;
}

void writeGzip(const std::string &path, const std::string &bytes) {
  gzFile f = gzopen(path.c_str(), "wb9");
  if (!f ||
      gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) !=
          static_cast<int>(bytes.size()) ||
      gzclose(f) != Z_OK)
    throw std::runtime_error(path + ": cannot write");
  std::cout << path << "\n";
}

void idxFiles(const std::string &out) {
  // MNIST-like: 2 images of 4x4 u8 pixels and their labels.
  std::string pixels;
  for (int i = 0; i < 32; ++i)
    pixels.push_back(static_cast<char>(i * 8));
  fileio::writeFileAtomically(out + "/idx/images-idx3-ubyte",
                              idx(0x08, {2, 4, 4}, pixels));
  writeGzip(out + "/idx/labels-idx1-ubyte.gz", idx(0x08, {2}, "\x07\x02"));
  // The other element types, big-endian.
  fileio::writeFileAtomically(out + "/idx/i16-idx2",
                              idx(0x0B, {2, 2},
                                  std::string("\x00\x01\xff\xfe"
                                              "\x7f\xff\x80\x00",
                                              8)));
  fileio::writeFileAtomically(
      out + "/idx/f32-idx1",
      idx(0x0D, {2}, std::string("\x3f\x80\x00\x00\xc0\x49\x0f\xdb", 8)));
  writeGzip(out + "/idx/f64-idx1.gz",
            idx(0x0E, {1}, std::string("\x40\x09\x21\xfb\x54\x44\x2d\x18", 8)));
  std::cout << out << "/idx/ (3 plain files)\n";
}

/// Examples with the names the `example` target's specs use (f, i, s, a,
/// c, q; b, r, w) and some it does not.
std::vector<std::pair<std::string, std::string>> examples() {
  using data::ExampleBuilder;
  return {
      {"all_kinds", ExampleBuilder()
                        .add_float("f", {1.5f, -2})
                        .add_int64("i", {1, -1, 1LL << 40})
                        .add_bytes("s", {"x", ""})
                        .add_float("a", {3, 4})
                        .add_bytes("c", {"cat"})
                        .add_int64("q", {1, 2, 3, 4})
                        .serialize()},
      {"required", ExampleBuilder()
                       .add_int64("b", {9})
                       .add_float("r", {0.25f, 0.5f})
                       .add_bytes("w", {"a", "b", "c"})
                       .serialize()},
      {"other_names", ExampleBuilder()
                          .add_float("age", {29})
                          .add_bytes("movie", {"The Shawshank Redemption"})
                          .add_int64("f", {})
                          .serialize()},
      {"empty", ExampleBuilder().serialize()},
  };
}

void tfrecordFiles(const std::string &out) {
  std::string dir = scratchDir("tfrecord");
  const char *names[] = {"plain", "gzip", "zlib"};
  const data::Compression kinds[] = {data::Compression::None,
                                     data::Compression::Gzip,
                                     data::Compression::Zlib};
  for (int k = 0; k < 3; ++k) {
    std::string file = dir + "/" + names[k];
    data::TFRecordWriter w(file, kinds[k]);
    for (const auto &[name, bytes] : examples())
      w.write(bytes);
    w.write("");
    w.close();
    // The first byte: the compression (low bits) and a buffer of 16 bytes.
    std::string key(1, static_cast<char>(k | (15 << 2)));
    fileio::writeFileAtomically(out + "/tfrecord/" + names[k],
                                key + fileio::readFile(file));
    std::cout << out << "/tfrecord/" << names[k] << "\n";
  }
}

void exampleRecords(const std::string &out) {
  for (const auto &[name, bytes] : examples()) {
    fileio::writeFileAtomically(out + "/example/" + name + ".pb", bytes);
    std::cout << out << "/example/" << name << ".pb\n";
  }
}

/// SequenceExamples with the names the `sequence_example` target's specs
/// use (context c, d, v; b; lists q, w, f, s; r, i), each seed one or two
/// records: byte 0 the first one's length (0xff: one record).
void sequenceExampleRecords(const std::string &out) {
  using data::SequenceExampleBuilder;
  std::string allKinds = SequenceExampleBuilder()
                             .add_context_float("c", {1.5f, -2})
                             .add_context_bytes("d", {"dog"})
                             .add_context_int64("v", {1, -1, 1LL << 40})
                             .add_feature_list_int64("q", {{1, 2}, {3, 4}})
                             .add_feature_list_bytes("w", {{"a"}, {""}, {"c"}})
                             .add_feature_list_float("f", {{0.5f}, {}, {1, 2}})
                             .add_feature_list_bytes("s", {{"x", "y"}})
                             .serialize();
  std::string required = SequenceExampleBuilder()
                             .add_context_int64("b", {9})
                             .add_feature_list_float("r", {{0.25f}, {0.5f}})
                             .add_feature_list_int64("i", {{}, {7, 8}})
                             .serialize();
  std::string other = SequenceExampleBuilder()
                          .add_context_float("age", {29})
                          .add_feature_list_int64("q", {{1, 2, 3}})
                          .serialize();
  std::string empty = SequenceExampleBuilder().serialize();
  auto one = [](const std::string &r) { return std::string(1, '\xff') + r; };
  auto two = [](const std::string &a, const std::string &b) {
    if (a.size() >= 0xff)
      throw std::runtime_error("a first record of 255 bytes or more");
    return std::string(1, static_cast<char>(a.size())) + a + b;
  };
  std::pair<const char *, std::string> seeds[] = {
      {"all_kinds", one(allKinds)},
      {"required", one(required)},
      {"all_kinds_and_required", two(allKinds, required)},
      {"other_and_empty", two(other, empty)},
      {"empty", one(empty)},
  };
  fileio::makeDirs(out + "/sequence_example");
  for (const auto &[name, bytes] : seeds) {
    fileio::writeFileAtomically(out + "/sequence_example/" + name, bytes);
    std::cout << out << "/sequence_example/" << name << "\n";
  }
}

} // namespace

/// States of the iterator_state target's pipeline at a few positions
/// (first byte 2: the framing is added back by the target), one state as
/// it is (first byte 0) and one element encoding (first byte 1).
void iteratorStates(const std::string &out) {
  std::string dir = out + "/iterator_state";
  fileio::makeDirs(dir);
  const size_t magic = std::string("estc-iterator-state-1\n").size();
  for (int k : {0, 3, 10, 25}) {
    data::Iterator it = fuzz::iteratorStatePipeline().make_iterator();
    for (int i = 0; i < k; ++i)
      it.next();
    std::string state = it.save().serialize();
    std::string seed = "\x02" + state.substr(magic, state.size() - magic - 8);
    std::string name = dir + "/restore-at-" + std::to_string(k);
    fileio::writeFileAtomically(name, seed);
    std::cout << name << "\n";
    if (k == 3) {
      fileio::writeFileAtomically(dir + "/state-at-3", "\x00" + state);
      std::cout << dir << "/state-at-3\n";
    }
  }
  std::string element = "\x01";
  data::encode_element(
      data::Element::tuple(
          {data::Element::dict(
               {{"x", data::Element(TensorValue::of<float>({2}, {1, 2}))}}),
           data::Element(TensorValue::of_strings({1}, {"s"}))}),
      element);
  fileio::writeFileAtomically(dir + "/element", element);
  std::cout << dir << "/element\n";
}

/// Every column kind, as an export writes them; the vocabulary assets are
/// the names feature_column_json_fuzzer provides ("vocab.txt",
/// "ivocab.txt").
void featureColumns(const std::string &out) {
  using namespace feature_column;
  std::string dir = scratchDir("vocab");
  fileio::writeFileAtomically(dir + "/vocab.txt", "apple\nbanana\ncherry\n");
  fileio::writeFileAtomically(dir + "/ivocab.txt", "42\n7\n13\n99\n");
  auto age = numeric_column("age", {1}, {-1.5});
  auto height = numeric_column("height", {2}, {}, DType::Float32,
                               [](const Tensor &x) { return x; });
  auto ageB = bucketized_column(age, {18, 30.5, 50});
  auto item = categorical_column_with_identity("item", 10, 0);
  auto item3 = categorical_column_with_identity("item3", 10);
  auto city = categorical_column_with_hash_bucket("city", 50);
  auto zip = categorical_column_with_hash_bucket("zip", 20, DType::Int64);
  auto color = categorical_column_with_vocabulary_list(
      "color", {"red", "green", "blue"}, std::nullopt, -1, 2);
  auto code = categorical_column_with_vocabulary_list(
      "code", VocabularyList{int64_t(10), int64_t(20)}, DType::Int64, 1);
  auto fruit = categorical_column_with_vocabulary_file(
      "fruit", dir + "/vocab.txt", {}, DType::String, {}, 1);
  auto ifruit = categorical_column_with_vocabulary_file(
      "ifruit", dir + "/ivocab.txt", 3, DType::Int64, 0);
  auto cross = crossed_column({"city", ageB, color}, 100);
  auto shared =
      shared_embedding_columns({item, item3}, 3, "sqrtn", {}, "", 1.5, false);
  FeatureColumns all{
      age,
      height,
      ageB,
      indicator_column(color),
      embedding_column(color, 4),
      embedding_column(fruit, 2, "sum", {}, 2.0, false),
      indicator_column(ifruit),
      indicator_column(weighted_categorical_column(color, "color_w")),
      shared[0],
      shared[1],
      indicator_column(cross),
      embedding_column(crossed_column({cross, "fruit", code}, 37, 7), 5),
      indicator_column(zip),
      embedding_column(city, 3)};
  auto asset = [&](const std::string &path) {
    return std::filesystem::path(path).filename().string();
  };
  std::string target = out + "/feature_column_json";
  fileio::makeDirs(target);
  auto put = [&](const std::string &name, const std::string &text) {
    fileio::writeFileAtomically(target + "/" + name, text);
    std::cout << target << "/" << name << "\n";
  };
  put("columns_all.json", feature_columns_to_json(all, asset));
  put("columns_wide.json",
      feature_columns_to_json({ageB, indicator_column(color), cross}, asset));
  data::FeatureSpecs specs = make_parse_example_spec(all);
  specs["name"] = data::FixedLenFeature{
      {2}, DType::String, TensorValue::of_strings({2}, {"a", ""})};
  specs["steps"] = data::FixedLenSequenceFeature{
      {2}, DType::Float32, true, TensorValue::of<float>({}, {0.5f})};
  put("parse_spec.json", parse_spec_to_json(specs));
}

int main(int argc, char **argv) {
  if (argc != 2) {
    std::cerr << "usage: make_fuzz_corpus test/fuzz/corpus\n";
    return 2;
  }
  std::string out = argv[1];
  try {
    for (const char *target :
         {"checkpoint", "checkpoint_state", "event_file", "graph_binary", "idx",
          "tfrecord", "example", "tf_table", "tf_bundle"})
      fileio::makeDirs(out + "/" + target);
    checkpoints(out);
    tfBundles(out);
    events(out);
    graphs(out);
    idxFiles(out);
    tfrecordFiles(out);
    exampleRecords(out);
    sequenceExampleRecords(out);
    iteratorStates(out);
    featureColumns(out);
  } catch (const std::exception &e) {
    std::cerr << "make_fuzz_corpus: error: " << e.what() << "\n";
    std::filesystem::remove_all(scratchRoot());
    return 1;
  }
  std::filesystem::remove_all(scratchRoot());
  return 0;
}
