//===- KerasTest.cpp - lib/Keras on small files written by tf.keras ------===//
//
// The fixtures (test/data/keras, written by make_fixtures.py with tf.keras
// 2.15): one Sequential model (Dense(2) on 3 inputs, BatchNormalization)
// in every file form, its weights 0.5, 1.5, ... in Keras's order, and
// broken variants; and a model Keras 3 wrote (make_keras3_fixtures.py). Each
// error a user's file can cause is one line naming the file.
// test/e2e/keras_io_compat.py checks the same reader against Keras on larger
// models.
//
//===----------------------------------------------------------------------===//

#include "lib/Keras/KerasModel.h"
#include "lib/Keras/ZipArchive.h"
#include "lib/Support/FileIO.h"

#include <gtest/gtest.h>

#include <cmath>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

using namespace estc;
using namespace estc::keras;

namespace {

std::string fixture(const std::string &name) {
  return std::string(ESTC_KERAS_FIXTURES) + "/" + name;
}

std::string bytesOf(const std::string &name) {
  return fileio::readFile(fixture(name));
}

// Expects `f` to throw KerasError whose one-line message contains every
// string of `parts`.
template <typename F> void expectError(F f, std::vector<std::string> parts) {
  try {
    f();
    ADD_FAILURE() << "no KerasError; expected one with '" << parts[0] << "'";
  } catch (const KerasError &e) {
    std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    for (const std::string &p : parts)
      EXPECT_NE(what.find(p), std::string::npos)
          << "message: " << what << "\nmissing: " << p;
  }
}

std::vector<float> floats(const Weight &w) { return w.value.values<float>(); }

// The names and values make_fixtures.py gave the model's weights.
const std::vector<std::pair<std::string, std::vector<int64_t>>> kWeights = {
    {"dense/kernel:0", {3, 2}}, {"dense/bias:0", {2}},
    {"bn/gamma:0", {2}},        {"bn/beta:0", {2}},
    {"bn/moving_mean:0", {2}},  {"bn/moving_variance:0", {2}}};

void expectTinyWeights(const KerasModel &m, bool names = true) {
  std::vector<const Weight *> ws = m.weights();
  ASSERT_EQ(ws.size(), kWeights.size());
  float v = 0.5f;
  for (size_t i = 0; i < ws.size(); ++i) {
    if (names) {
      EXPECT_EQ(ws[i]->name, kWeights[i].first);
    }
    EXPECT_EQ(ws[i]->value.dtype, DType::Float32);
    EXPECT_EQ(ws[i]->value.shape, kWeights[i].second) << ws[i]->name;
    for (float x : floats(*ws[i]))
      EXPECT_EQ(x, v++) << ws[i]->name;
  }
}

std::string jsonText(const rapidjson::Value &v) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  v.Accept(w);
  return buf.GetString();
}

TEST(KerasTest, ReadsKerasArchive) {
  KerasModel m = load_model(fixture("tiny.keras"));
  EXPECT_EQ(m.format, FileFormat::KerasArchive);
  EXPECT_EQ(m.keras_version, "2.15.0");
  EXPECT_EQ(m.class_name(), "Sequential");
  ASSERT_TRUE(m.training_config.IsObject());
  EXPECT_TRUE(m.training_config.HasMember("optimizer"));
  ASSERT_EQ(m.layers.size(), 2u); // a Sequential's InputLayer is no layer
  EXPECT_EQ(m.layers[0].layer, "dense");
  EXPECT_EQ(m.layers[0].class_name, "Dense");
  EXPECT_EQ(m.layers[1].class_name, "BatchNormalization");
  EXPECT_EQ(m.layers[0].weights[0].path, "layers/dense/vars/0");
  EXPECT_EQ(m.layers[1].weights[3].path, "layers/batch_normalization/vars/3");
  expectTinyWeights(m);
  ASSERT_NE(m.find_weight("bn/moving_variance:0"), nullptr);
  EXPECT_EQ(floats(*m.find_weight("bn/moving_variance:0")),
            (std::vector<float>{14.5f, 15.5f}));
  EXPECT_EQ(m.find_layer("bn")->weights.size(), 4u);
  const rapidjson::Value *bn = m.layer_config("bn");
  ASSERT_NE(bn, nullptr);
  EXPECT_EQ(std::string((*bn)["class_name"].GetString()), "BatchNormalization");
  EXPECT_EQ((*bn)["config"]["epsilon"].GetDouble(), 0.001);
  EXPECT_EQ(m.layer_config("nope"), nullptr);
  EXPECT_EQ(m.find_weight("dense/kernel"), nullptr);
}

TEST(KerasTest, ReadsLegacyH5Model) {
  KerasModel m = load_model(fixture("tiny.h5"));
  EXPECT_EQ(m.format, FileFormat::H5Model);
  EXPECT_EQ(m.keras_version, "2.15.0");
  EXPECT_EQ(m.backend, "tensorflow");
  EXPECT_EQ(m.class_name(), "Sequential");
  ASSERT_TRUE(m.training_config.IsObject());
  EXPECT_EQ(std::string(m.training_config["loss"].GetString()), "mse");
  ASSERT_EQ(m.layers.size(), 2u);
  EXPECT_EQ(m.layers[0].class_name, "Dense");
  EXPECT_EQ(m.layers[0].weights[0].path, "model_weights/dense/dense/kernel:0");
  expectTinyWeights(m);
}

TEST(KerasTest, ReadsWeightsFiles) {
  KerasModel source = load_model(fixture("tiny.keras"));
  // Keras 3's layout, named by the model's config.
  KerasModel w = read_keras_file(fixture("tiny.weights.h5"), &source.config);
  EXPECT_EQ(w.format, FileFormat::WeightsH5);
  EXPECT_EQ(w.layers[1].class_name, "BatchNormalization");
  expectTinyWeights(w);
  // Without a config: layers and weights named by their paths.
  KerasModel bare = read_keras_file(fixture("tiny.weights.h5"));
  EXPECT_FALSE(bare.has_config());
  ASSERT_EQ(bare.layers.size(), 2u);
  EXPECT_EQ(bare.layers[0].layer, "batch_normalization");
  EXPECT_EQ(bare.layers[1].layer, "dense");
  EXPECT_EQ(bare.layers[1].weights[1].name, "layers/dense/vars/1");
  // The legacy layout names its weights itself.
  KerasModel legacy = read_keras_file(fixture("tiny_legacy_weights.h5"));
  EXPECT_EQ(legacy.format, FileFormat::LegacyWeightsH5);
  EXPECT_EQ(legacy.keras_version, "2.15.0");
  EXPECT_EQ(legacy.layers[0].class_name, ""); // no config
  expectTinyWeights(legacy);
}

// Files Keras 3 wrote (make_keras3_fixtures.py): its names where they
// differ from tf.keras's (DepthwiseConv's "kernel"; Bidirectional's copies
// as Keras 3 names them), its legacy .h5 (weight_names are variable paths),
// all as tf.keras-style names.
TEST(KerasTest, ReadsKeras3Files) {
  const std::vector<std::pair<std::string, std::vector<int64_t>>> expected = {
      {"dw/kernel:0", {2, 3, 1}},
      {"dw/bias:0", {3}},
      {"bi/forward_simple_rnn/simple_rnn_cell/kernel:0", {3, 2}},
      {"bi/forward_simple_rnn/simple_rnn_cell/recurrent_kernel:0", {2, 2}},
      {"bi/forward_simple_rnn/simple_rnn_cell/bias:0", {2}},
      {"bi/backward_simple_rnn/simple_rnn_cell/kernel:0", {3, 2}},
      {"bi/backward_simple_rnn/simple_rnn_cell/recurrent_kernel:0", {2, 2}},
      {"bi/backward_simple_rnn/simple_rnn_cell/bias:0", {2}},
      {"inner_dense/kernel:0", {4, 1}},
      {"inner_dense/bias:0", {1}}};
  for (const char *name : {"keras3_tiny.keras", "keras3_tiny.h5"}) {
    SCOPED_TRACE(name);
    KerasModel m = load_model(fixture(name));
    EXPECT_EQ(m.keras_version.substr(0, 2), "3.");
    ASSERT_EQ(m.layers.size(), 4u); // x, dw, bi, inner
    EXPECT_EQ(m.layers[3].class_name, "Sequential");
    std::vector<const Weight *> ws = m.weights();
    ASSERT_EQ(ws.size(), expected.size());
    float v = 0.5f;
    for (size_t i = 0; i < ws.size(); ++i) {
      EXPECT_EQ(ws[i]->name, expected[i].first);
      EXPECT_EQ(ws[i]->value.shape, expected[i].second);
      for (float x : floats(*ws[i]))
        EXPECT_EQ(x, v++) << ws[i]->name;
    }
  }
  KerasModel k = load_model(fixture("keras3_tiny.keras"));
  EXPECT_EQ(
      k.find_weight("bi/backward_simple_rnn/simple_rnn_cell/bias:0")->path,
      "layers/bidirectional/backward_layer/cell/vars/2");
  EXPECT_EQ(k.find_weight("inner_dense/bias:0")->path,
            "layers/sequential/layers/dense/vars/1");
}

TEST(KerasTest, WritesBackEveryForm) {
  KerasModel source = load_model(fixture("tiny.keras"));
  for (const char *name :
       {"tiny.keras", "tiny.h5", "tiny.weights.h5", "tiny_legacy_weights.h5",
        "keras3_tiny.keras", "keras3_tiny.h5"}) {
    SCOPED_TRACE(name);
    bool own = std::string(name).rfind("keras3", 0) == 0;
    KerasModel m =
        read_keras_file(fixture(name), own ? nullptr : &source.config);
    for (LayerWeights &l : m.layers)
      for (Weight &w : l.weights) {
        std::vector<float> v = floats(w);
        for (float &x : v)
          x = -2 * x;
        w.value = TensorValue::of<float>(w.value.shape, v);
      }
    std::string bytes = serialize_keras_file(m);
    KerasModel back =
        read_keras_bytes(bytes, name, own ? nullptr : &source.config);
    EXPECT_EQ(back.format, m.format);
    EXPECT_EQ(back.keras_version, m.keras_version);
    if (m.has_config()) {
      EXPECT_EQ(jsonText(back.config), jsonText(m.config));
    }
    ASSERT_EQ(back.weights().size(), m.weights().size());
    for (size_t i = 0; i < m.weights().size(); ++i) {
      EXPECT_EQ(back.weights()[i]->name, m.weights()[i]->name);
      EXPECT_EQ(back.weights()[i]->value.data, m.weights()[i]->value.data);
    }
    EXPECT_EQ(floats(*back.weights()[0])[0], -1.0f);
  }
}

TEST(KerasTest, WritesThroughTheFileSystem) {
  std::string dir = ::testing::TempDir() + "/keras_test_write";
  fileio::makeDirs(dir);
  KerasModel m = load_model(fixture("tiny.keras"));
  m.find_weight("dense/bias:0")->value = TensorValue::of<float>({2}, {1, 2});
  write_keras_file(m, dir + "/out.keras");
  KerasModel back = load_model(dir + "/out.keras");
  EXPECT_EQ(floats(*back.find_weight("dense/bias:0")),
            (std::vector<float>{1, 2}));
  expectError([&] { write_keras_file(m, dir + "/no/such/dir/out.keras"); },
              {"out.keras"});
}

TEST(KerasTest, WriteBackRefusesAnotherShape) {
  KerasModel m = load_model(fixture("tiny.h5"));
  m.find_weight("dense/kernel:0")->value =
      TensorValue::of<float>({2, 3}, std::vector<float>(6, 0.f));
  expectError(
      [&] { serialize_keras_file(m); },
      {"tiny.h5", "weight 'dense/kernel:0'", "shape [3,2]", "new value [2,3]"});
  KerasModel k = load_model(fixture("tiny.keras"));
  k.find_weight("bn/beta:0")->value = TensorValue::of<float>({3}, {1, 2, 3});
  expectError([&] { serialize_keras_file(k); },
              {"tiny.keras: model.weights.h5: weight 'bn/beta:0'", "[2]"});
}

TEST(KerasTest, NotAKerasFile) {
  expectError([&] { read_keras_bytes("hello, world", "x.bin"); },
              {"x.bin: not a Keras model or weights file"});
  expectError([&] { read_keras_file(fixture("no_such_file.keras")); },
              {"no_such_file.keras", "cannot open"});
  expectError([&] { read_keras_bytes("", "empty.keras"); },
              {"empty.keras: not a Keras model"});
}

TEST(KerasTest, TruncatedOrCorruptArchive) {
  std::string bytes = bytesOf("tiny.keras");
  expectError(
      [&] { read_keras_bytes(bytes.substr(0, bytes.size() / 2), "t.keras"); },
      {"t.keras: corrupt or truncated zip archive"});
  expectError([&] { read_keras_bytes(bytes.substr(0, 30), "t.keras"); },
              {"t.keras: corrupt or truncated zip archive"});
  // A byte of the stored model.weights.h5 changed: its CRC-32 fails.
  ZipEntries entries = readZip(bytes);
  std::string corrupt = bytes;
  size_t at = corrupt.find(entries[2].second.substr(4000, 64));
  ASSERT_NE(at, std::string::npos);
  corrupt[at] ^= 0x55;
  expectError([&] { read_keras_bytes(corrupt, "c.keras"); },
              {"c.keras: ", "zip entry 'model.weights.h5'"});
}

TEST(KerasTest, ArchiveWithoutItsParts) {
  ZipEntries entries = readZip(bytesOf("tiny.keras"));
  ASSERT_EQ(entries.size(), 3u);
  auto without = [&](const std::string &name) {
    ZipEntries kept;
    for (const auto &e : entries)
      if (e.first != name)
        kept.push_back(e);
    return writeZip(kept);
  };
  expectError([&] { read_keras_bytes(without("config.json"), "a.keras"); },
              {"a.keras: the archive has no config.json"});
  expectError([&] { read_keras_bytes(without("model.weights.h5"), "a.keras"); },
              {"a.keras: the archive has no model.weights.h5"});
  ZipEntries npz = entries;
  npz[2].first = "model.weights.npz";
  expectError([&] { read_keras_bytes(writeZip(npz), "n.keras"); },
              {"n.keras: ", "model.weights.npz"});
  ZipEntries badJson = entries;
  for (auto &e : badJson)
    if (e.first == "config.json")
      e.second = "{\"class_name\": ";
  expectError([&] { read_keras_bytes(writeZip(badJson), "j.keras"); },
              {"j.keras: config.json: not valid JSON at byte"});
  ZipEntries truncatedH5 = entries;
  truncatedH5[2].second.resize(3000);
  expectError([&] { read_keras_bytes(writeZip(truncatedH5), "h.keras"); },
              {"h.keras: model.weights.h5: ", "HDF5"});
}

TEST(KerasTest, VariablesTheConfigDoesNotGive) {
  ZipEntries entries = readZip(bytesOf("tiny.keras"));
  for (auto &e : entries)
    if (e.first == "config.json") {
      size_t at = e.second.find("\"use_bias\": true");
      ASSERT_NE(at, std::string::npos);
      e.second.replace(at, 16, "\"use_bias\": false");
    }
  expectError([&] { read_keras_bytes(writeZip(entries), "b.keras"); },
              {"b.keras: model.weights.h5: layer 'dense' (Dense)",
               "'layers/dense/vars' holds 2 variables",
               "its config gives 1 (kernel)"});
}

TEST(KerasTest, Hdf5WithoutAModelConfig) {
  expectError([&] { load_model(fixture("no_model_config.h5")); },
              {"no_model_config.h5: HDF5 file without a model config"});
  expectError([&] { load_model(fixture("tiny.weights.h5")); },
              {"tiny.weights.h5: a weights-only file", "no model config"});
  std::string h5 = bytesOf("tiny.h5");
  expectError([&] { read_keras_bytes(h5.substr(0, 2000), "t.h5"); },
              {"t.h5: corrupt or truncated HDF5 file"});
}

TEST(KerasTest, MissingDataset) {
  expectError([&] { load_model(fixture("missing_dataset.h5")); },
              {"missing_dataset.h5: weight_names of layer 'dense' lists "
               "'dense/kernel:0'",
               "is not a dataset"});
}

TEST(KerasTest, ShapeTheConfigDisagreesWith) {
  expectError([&] { load_model(fixture("kernel_shape.h5")); },
              {"kernel_shape.h5: layer 'dense' (Dense): weight "
               "'dense/kernel:0' has shape [3,5]",
               "its config's units is 2"});
}

TEST(KerasTest, UnsupportedDtype) {
  expectError([&] { load_model(fixture("complex_weight.h5")); },
              {"complex_weight.h5: dataset 'model_weights/dense/dense/bias:0' "
               "has dtype compound, which estc cannot read"});
}

TEST(KerasTest, DatasetLargerThanItsFile) {
  expectError([&] { load_model(fixture("huge_dataset.h5")); },
              {"huge_dataset.h5: dataset 'model_weights/dense/dense/kernel:0'",
               "shape [3,1073741824] needs 12884901888 bytes"});
}

// A hostile file cannot make the reader open the machine's other files.
TEST(KerasTest, NothingOutsideTheFile) {
  expectError([&] { load_model(fixture("external_link.h5")); },
              {"external_link.h5: weight_names of layer 'dense' lists "
               "'dense/kernel:0'",
               "is not a dataset"});
  expectError([&] { load_model(fixture("external_data.h5")); },
              {"external_data.h5: dataset 'model_weights/dense/dense/kernel:0' "
               "keeps its data in other files"});
}

TEST(KerasTest, GroupsInACycle) {
  // Named by a config, the layers' variables are where Keras puts them.
  KerasModel source = load_model(fixture("tiny.keras"));
  expectTinyWeights(
      read_keras_file(fixture("cycle.weights.h5"), &source.config));
  // Without one, the walk of the groups stops.
  expectError([&] { read_keras_file(fixture("cycle.weights.h5")); },
              {"cycle.weights.h5: groups nested deeper than 64"});
}

TEST(KerasTest, SnakeCaseAsKeras) {
  EXPECT_EQ(to_snake_case("BatchNormalization"), "batch_normalization");
  EXPECT_EQ(to_snake_case("Conv2D"), "conv2d");
  EXPECT_EQ(to_snake_case("Conv2DTranspose"), "conv2d_transpose");
  EXPECT_EQ(to_snake_case("PReLU"), "p_re_lu");
  EXPECT_EQ(to_snake_case("LSTM"), "lstm");
  EXPECT_EQ(to_snake_case("MultiHeadAttention"), "multi_head_attention");
  EXPECT_EQ(to_snake_case("SimpleRNN"), "simple_rnn");
  EXPECT_EQ(to_snake_case("InputLayer"), "input_layer");
  EXPECT_EQ(to_snake_case("_Private"), "private__private");
  EXPECT_EQ(to_snake_case("ReLU"), "re_lu");
  EXPECT_EQ(to_snake_case("DepthwiseConv2D"), "depthwise_conv2d");
}

// Found by the keras_file fuzz target: libzip reads no bytes as an empty
// archive, and writes an empty archive as no bytes.
TEST(KerasTest, EmptyArchives) {
  EXPECT_THROW(readZip(""), ZipError);
  std::string empty = writeZip({});
  EXPECT_EQ(empty.size(), 22u);
  EXPECT_TRUE(readZip(empty).empty());
  expectError([&] { read_keras_bytes(empty, "e.keras"); },
              {"e.keras: the archive has no config.json"});
}

TEST(KerasTest, ParseConfigJson) {
  // Python's json.dumps writes NaN and Infinity (a Normalization's stats).
  rapidjson::Document d =
      parse_config_json("{\"a\": NaN, \"b\": -Infinity}", "c");
  EXPECT_TRUE(std::isnan(d["a"].GetDouble()));
  EXPECT_TRUE(std::isinf(d["b"].GetDouble()));
  expectError([&] { parse_config_json("[1]", "c.json"); },
              {"c.json: not a JSON object"});
  expectError([&] { parse_config_json("{\"a\":\n", "c.json"); },
              {"c.json: not valid JSON at byte"});
}

} // namespace
