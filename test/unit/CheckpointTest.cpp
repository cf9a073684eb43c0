//===- CheckpointTest.cpp - Checkpoint files, state, GC, restore ----------===//

#include "lib/Checkpoint/Checkpoint.h"
#include "lib/Support/FileIO.h"
#include "lib/Support/Json.h"
#include "test/unit/CheckpointTesting.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace estc;
using namespace estc::train;
namespace fs = std::filesystem;

namespace {

// A fresh, empty directory per test.
class CheckpointTest : public ::testing::Test {
protected:
  void SetUp() override {
    const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir =
        (fs::temp_directory_path() /
         ("estc-ckpt-test-" + std::to_string(::getpid()) + "-" + info->name()))
            .string();
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }
  std::string file(const std::string &name) const { return dir + "/" + name; }
  std::string dir;
};

std::string readBytes(const std::string &path) {
  return fileio::readFile(path);
}
void writeBytes(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

void expectEqual(const VariableMap &a, const VariableMap &b) {
  ASSERT_EQ(a.size(), b.size());
  for (const auto &[name, t] : a) {
    ASSERT_TRUE(b.count(name)) << name;
    EXPECT_EQ(t.spec(), b.at(name).spec()) << name;
    EXPECT_EQ(t.data, b.at(name).data) << name;
  }
}

// Expects `f` to throw CheckpointError whose one-line message contains
// every string of `parts`.
template <typename F> void expectError(F f, std::vector<std::string> parts) {
  try {
    f();
    ADD_FAILURE() << "no CheckpointError; expected one with '" << parts[0]
                  << "'";
  } catch (const CheckpointError &e) {
    std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    for (const std::string &p : parts)
      EXPECT_NE(what.find(p), std::string::npos)
          << "message: " << what << "\nmissing: " << p;
  }
}

// A checkpoint file from a hand-written header and data section.
std::string rawFile(const std::string &header, const std::string &data) {
  std::string out;
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i)
    out.push_back(static_cast<char>(n >> (8 * i)));
  return out + header + data;
}

bool hasPython(const std::string &module = "") {
  std::string cmd =
      module.empty() ? "python3 -c pass" : "python3 -c 'import " + module + "'";
  return std::system((cmd + " > /dev/null 2>&1").c_str()) == 0;
}

} // namespace

//===----------------------------------------------------------------------===//
// One checkpoint file
//===----------------------------------------------------------------------===//

TEST_F(CheckpointTest, RoundTripEveryDType) {
  VariableMap vars = estc::testing::everyNumericDType();
  write_checkpoint(file("model.ckpt-200.safetensors"), vars, 200);
  CheckpointReader reader(file("model.ckpt-200")); // the prefix works too
  EXPECT_EQ(reader.path(), file("model.ckpt-200.safetensors"));
  EXPECT_EQ(reader.global_step(), 200);
  EXPECT_EQ(reader.metadata().at("format"), "estc-checkpoint-1");
  ASSERT_EQ(reader.variables().size(), vars.size());
  EXPECT_EQ(reader.variables().at("bf16"),
            (VariableSpec{DType::BFloat16, {1, 2}}));
  EXPECT_EQ(reader.variables().at("empty2d"),
            (VariableSpec{DType::Int64, {3, 0}}));
  expectEqual(reader.read_all(), vars);
  EXPECT_NO_THROW(reader.verify());
  EXPECT_EQ(reader.get_tensor("mask").values<bool>(),
            (std::vector<bool>{true, false, true}));
  EXPECT_EQ(reader.get_tensor("half").element(1), -0.25);
  EXPECT_EQ(reader.get_tensor("bf16").element(0), 2.0);
  EXPECT_EQ(load_variable(file("model.ckpt-200"), "f64").values<double>()[0],
            3.141592653589793);
  EXPECT_EQ(list_variables(file("model.ckpt-200.safetensors")).size(),
            vars.size());
  expectError(
      [&] { reader.get_tensor("nope"); },
      {"model.ckpt-200.safetensors: no tensor 'nope' in the checkpoint"});
}

// A name that is not UTF-8 cannot be in the JSON header: the writer refuses
// it (one line) and writes nothing, rather than a file no reader accepts.
TEST_F(CheckpointTest, NameThatIsNotUtf8IsRefused) {
  VariableMap vars = {{std::string("w\xff"), TensorValue::of<float>({1}, {1})}};
  try {
    write_checkpoint(file("u.safetensors"), vars, 1);
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument &e) {
    EXPECT_EQ(std::string(e.what()),
              "checkpoint: tensor name 'w\\xff' is not valid UTF-8");
  }
  EXPECT_FALSE(std::filesystem::exists(file("u.safetensors")));
}

TEST_F(CheckpointTest, EmptyCheckpoint) {
  write_checkpoint(file("e.safetensors"), {}, 0);
  CheckpointReader reader(file("e.safetensors"));
  EXPECT_TRUE(reader.variables().empty());
  EXPECT_EQ(reader.global_step(), 0);
}

TEST_F(CheckpointTest, HeaderIsSafetensorsJson) {
  VariableMap vars = estc::testing::everyNumericDType();
  std::string bytes = serialize_checkpoint(vars, 42);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i)
    n = n << 8 | static_cast<unsigned char>(bytes[i]);
  ASSERT_LE(8 + n, bytes.size());
  EXPECT_EQ((8 + n) % 8, 0u) << "data section is 8-byte aligned";
  json::Value header = json::parse(bytes.substr(8, n));
  ASSERT_TRUE(header.isObject());
  const json::Value *meta = header.find("__metadata__");
  ASSERT_TRUE(meta && meta->isObject());
  EXPECT_EQ(meta->find("format")->text, "estc-checkpoint-1");
  EXPECT_EQ(meta->find("global_step")->text, "42");
  uint64_t expected = 0; // tensors are laid out by name, back to back
  for (const auto &[name, t] : vars) {
    const json::Value *e = header.find(name);
    ASSERT_TRUE(e) << name;
    EXPECT_EQ(e->find("dtype")->text, safetensors_name(t.dtype));
    ASSERT_EQ(e->find("shape")->items.size(), t.shape.size());
    for (size_t i = 0; i < t.shape.size(); ++i)
      EXPECT_EQ(e->find("shape")->items[i].asNonNegativeInt(), t.shape[i]);
    const json::Value *offsets = e->find("data_offsets");
    EXPECT_EQ(offsets->items[0].asNonNegativeInt(), int64_t(expected));
    expected += t.data.size();
    EXPECT_EQ(offsets->items[1].asNonNegativeInt(), int64_t(expected));
    EXPECT_EQ(bytes.substr(8 + n + expected - t.data.size(), t.data.size()),
              t.data);
    const json::Value *crc = meta->find("crc32c/" + name);
    ASSERT_TRUE(crc) << name;
    EXPECT_EQ(crc->text.size(), 8u);
  }
  EXPECT_EQ(8 + n + expected, bytes.size());
}

// The file is parsed and checked by Inputs/safetensors_util.py, an
// independent implementation of the format in Python's standard library.
TEST_F(CheckpointTest, PythonReaderCrossCheck) {
  if (!hasPython())
    GTEST_SKIP() << "SKIP: python3 not found";
  write_checkpoint(file("c.safetensors"), estc::testing::everyNumericDType(),
                   7);
  std::string cmd = "python3 " ESTC_CKPT_TEST_INPUTS
                    "/safetensors_util.py check " +
                    file("c.safetensors") + " > " + file("out.txt") + " 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << readBytes(file("out.txt"));
  EXPECT_NE(readBytes(file("out.txt")).find("global_step 7 ok"),
            std::string::npos);
}

// The huggingface safetensors package loads the file (no numpy needed).
TEST_F(CheckpointTest, SafetensorsLibraryLoadsIt) {
  if (!hasPython("safetensors"))
    GTEST_SKIP() << "SKIP: python3 module safetensors not installed";
  write_checkpoint(file("c.safetensors"), estc::testing::everyNumericDType(),
                   7);
  std::string script =
      "import safetensors, sys\n"
      "d = dict(safetensors.deserialize(open(sys.argv[1], 'rb').read()))\n"
      "assert d['dense/kernel']['shape'] == [2, 3], d['dense/kernel']\n"
      "assert d['half']['dtype'] in ('F16', 'float16'), d['half']\n"
      "assert bytes(d['half']['data']) == b'\\x00>\\x00\\xb4', d['half']\n"
      "assert len(d) == 9, sorted(d)\n";
  writeBytes(file("load.py"), script);
  std::string cmd = "python3 " + file("load.py") + " " + file("c.safetensors");
  EXPECT_EQ(std::system(cmd.c_str()), 0);
}

//===----------------------------------------------------------------------===//
// Corruption at each place
//===----------------------------------------------------------------------===//

TEST_F(CheckpointTest, DataByteFlipNamesTheTensor) {
  VariableMap vars;
  vars["a"] = TensorValue::of<float>({2}, {1, 2});
  vars["b"] = TensorValue::of<float>({2}, {3, 4});
  std::string bytes = serialize_checkpoint(vars, 1);
  bytes[bytes.size() - 1] ^= 0x01; // the last byte of "b"
  writeBytes(file("x.safetensors"), bytes);
  CheckpointReader reader(file("x.safetensors")); // the header is fine
  EXPECT_NO_THROW(reader.get_tensor("a"));
  expectError([&] { reader.get_tensor("b"); },
              {file("x.safetensors"), "tensor 'b': CRC32C mismatch",
               "the data is corrupt"});
  expectError([&] { reader.verify(); }, {"tensor 'b'"});
}

TEST_F(CheckpointTest, EveryByteFlipIsDetected) {
  std::string bytes =
      serialize_checkpoint(estc::testing::everyNumericDType(), 200);
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string bad = bytes;
    bad[i] ^= static_cast<char>(0xff);
    writeBytes(file("f.safetensors"), bad);
    bool detected = false;
    try {
      CheckpointReader(file("f.safetensors")).verify();
    } catch (const CheckpointError &) {
      detected = true;
    }
    ASSERT_TRUE(detected) << "flip of byte " << i << " went unnoticed";
  }
}

TEST_F(CheckpointTest, EveryTruncationIsDetected) {
  std::string bytes =
      serialize_checkpoint(estc::testing::everyNumericDType(), 200);
  for (size_t len = 0; len < bytes.size(); ++len) {
    writeBytes(file("t.safetensors"), bytes.substr(0, len));
    bool detected = false;
    try {
      CheckpointReader(file("t.safetensors")).verify();
    } catch (const CheckpointError &) {
      detected = true;
    }
    ASSERT_TRUE(detected) << "truncation to " << len << " bytes went unnoticed";
  }
  VariableMap one;
  one["w"] = TensorValue::of<double>({4}, {1, 2, 3, 4});
  std::string b = serialize_checkpoint(one, 1);
  writeBytes(file("t.safetensors"), b.substr(0, b.size() - 5));
  expectError([&] { CheckpointReader{file("t.safetensors")}; },
              {file("t.safetensors"),
               "tensor 'w': data [0, 32) extends past the end", "truncated?"});
  writeBytes(file("t.safetensors"), b.substr(0, 20));
  expectError(
      [&] { CheckpointReader{file("t.safetensors")}; },
      {"exceeds the file size 20 (truncated file or corrupt header length)"});
  writeBytes(file("t.safetensors"), b.substr(0, 5));
  expectError([&] { CheckpointReader{file("t.safetensors")}; },
              {"file is 5 bytes, too short"});
}

TEST_F(CheckpointTest, BadHeaderLength) {
  std::string bytes =
      serialize_checkpoint(estc::testing::everyNumericDType(), 1);
  std::string huge = bytes;
  huge[6] = '\x7f';
  writeBytes(file("h.safetensors"), huge);
  expectError([&] { CheckpointReader{file("h.safetensors")}; },
              {"is implausible (corrupt header length)"});
  std::string zero = bytes;
  for (int i = 0; i < 8; ++i)
    zero[i] = 0;
  writeBytes(file("h.safetensors"), zero);
  expectError([&] { CheckpointReader{file("h.safetensors")}; },
              {"header length is 0"});
  std::string shorter = bytes;
  shorter[0] = static_cast<char>(shorter[0] - 8); // JSON cut short
  writeBytes(file("h.safetensors"), shorter);
  expectError([&] { CheckpointReader{file("h.safetensors")}; },
              {"header is not valid JSON"});
}

TEST_F(CheckpointTest, InconsistentHeaders) {
  const std::string meta = "\"__metadata__\":{\"format\":\"estc-checkpoint-1\","
                           "\"global_step\":\"1\",\"crc32c/a\":\"00000000\"}";
  auto check = [&](const std::string &entries, const std::string &data,
                   std::vector<std::string> parts) {
    writeBytes(file("i.safetensors"),
               rawFile("{" + meta + entries + "}", data));
    expectError([&] { CheckpointReader(file("i.safetensors")).verify(); },
                parts);
  };
  check(",\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}",
        std::string(4, '\0'),
        {"tensor 'a': data_offsets [0, 4) hold 4 bytes, but F32[2] needs 8"});
  check(",\"a\":{\"dtype\":\"F8\",\"shape\":[2],\"data_offsets\":[0,2]}",
        std::string(2, '\0'), {"tensor 'a': unsupported dtype \"F8\""});
  check(",\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}",
        std::string(4, '\0'), {"tensor 'a': shape has a dimension"});
  check(",\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,0]}",
        std::string(4, '\0'), {"tensor 'a': data_offsets is not [begin, end]"});
  check(",\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}",
        std::string(8, '\0'),
        {"tensor 'a': data starts at byte 4, expected 0"});
  check(",\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}",
        std::string(6, '\0'), {"2 bytes after the last tensor"});
  check(
      ",\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"x\":1}",
      std::string(4, '\0'), {"tensor 'a': unknown header field 'x'"});
  check(",\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
        "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[2,6]}",
        std::string(6, '\0'), {"tensors 'a' and 'b' overlap"});
  check(",\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
        "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}",
        std::string(4, '\0'), {"duplicate key \"a\""});
  check(",\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
        "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}",
        std::string(8, '\0'), {"tensor 'b': no crc32c/b in __metadata__"});
  check(",\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}",
        std::string(4, '\0'), {"tensor 'a': CRC32C mismatch"});
  // A plain safetensors file without estc's metadata.
  writeBytes(
      file("i.safetensors"),
      rawFile("{\"a\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]}}",
              std::string(4, '\0')));
  expectError([&] { CheckpointReader{file("i.safetensors")}; },
              {"not an estc checkpoint"});
  writeBytes(file("i.safetensors"), rawFile("[1, 2]", ""));
  expectError([&] { CheckpointReader{file("i.safetensors")}; },
              {"header does not start with '{'"});
}

// Found by fuzzing (test/fuzz/regressions/checkpoint).
TEST_F(CheckpointTest, NamesFromTheFileKeepTheErrorOneLine) {
  writeBytes(file("n.safetensors"), rawFile("{\"a\\nb\":0}", ""));
  expectError([&] { CheckpointReader{file("n.safetensors")}; },
              {"tensor 'a\\nb': header entry is not a JSON object"});
}

TEST_F(CheckpointTest, GlobalStepOutOfRangeIsAnError) {
  // 19 digits overflowed int64 while parsing (undefined behaviour).
  writeBytes(file("s.safetensors"),
             rawFile("{\"__metadata__\":{\"format\":\"estc-checkpoint-1\","
                     "\"global_step\":\"9999999999999999999\"}}",
                     ""));
  expectError([&] { CheckpointReader{file("s.safetensors")}; },
              {"__metadata__ has no integer global_step"});
}

TEST_F(CheckpointTest, ElementCountOverflowIsAnError) {
  // 2^32 x 2^31 x 0 booleans: 0 bytes, but the element count passes 2^63
  // on the way (VariableSpec::num_elements overflowed).
  writeBytes(file("e.safetensors"),
             rawFile("{\"__metadata__\":{\"format\":\"estc-checkpoint-1\","
                     "\"global_step\":\"1\",\"crc32c/a\":\"00000000\"},"
                     "\"a\":{\"dtype\":\"BOOL\",\"shape\":[4294967296,"
                     "2147483648,0],\"data_offsets\":[0,0]}}",
                     ""));
  expectError([&] { CheckpointReader{file("e.safetensors")}; },
              {"tensor 'a': shape BOOL[4294967296,2147483648] is too large"});
}

TEST_F(CheckpointTest, MissingFileAndDirectory) {
  expectError(
      [&] { CheckpointReader{file("nope.safetensors")}; },
      {file("nope.safetensors"), "cannot open: No such file or directory"});
  expectError([&] { CheckpointReader{dir}; }, {"is a directory"});
  expectError([&] { load_checkpoint(dir); },
              {"no checkpoint in this directory"});
}

//===----------------------------------------------------------------------===//
// State file, Saver and garbage collection
//===----------------------------------------------------------------------===//

TEST_F(CheckpointTest, StateFileRoundTrip) {
  EXPECT_FALSE(get_checkpoint_state(dir));
  CheckpointState s;
  s.model_checkpoint_path = "model.ckpt-200";
  s.all_model_checkpoint_paths = {"model.ckpt-100", "model.ckpt-200"};
  s.all_model_checkpoint_timestamps = {1000.5, 2000.25};
  s.last_preserved_timestamp = 999;
  update_checkpoint_state(dir, s);
  std::string text = readBytes(file("checkpoint"));
  EXPECT_NE(text.find("model_checkpoint_path: \"model.ckpt-200\"\n"),
            std::string::npos);
  EXPECT_NE(text.find("all_model_checkpoint_paths: \"model.ckpt-100\"\n"
                      "all_model_checkpoint_paths: \"model.ckpt-200\"\n"),
            std::string::npos)
      << text;
  auto back = get_checkpoint_state(dir);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->model_checkpoint_path, s.model_checkpoint_path);
  EXPECT_EQ(back->all_model_checkpoint_paths, s.all_model_checkpoint_paths);
  EXPECT_EQ(back->all_model_checkpoint_timestamps,
            s.all_model_checkpoint_timestamps);
  EXPECT_EQ(back->last_preserved_timestamp, 999);

  writeBytes(file("checkpoint"), "model_checkpoint_path: \"x\"\nbogus: 1\n");
  expectError(
      [&] { get_checkpoint_state(dir); },
      {file("checkpoint"), "not a valid CheckpointState text file: line 2:"});
  writeBytes(file("checkpoint"), "");
  expectError([&] { get_checkpoint_state(dir); }, {"no model_checkpoint_path"});
}

TEST_F(CheckpointTest, SaverKeepsMaxToKeep) {
  SaverOptions options;
  options.max_to_keep = 3;
  Saver saver(dir, options);
  VariableMap vars;
  vars["w"] = TensorValue::of<float>({2}, {0, 0});
  for (int step = 1; step <= 7; ++step) {
    vars["w"] = TensorValue::of<float>({2}, {float(step), -float(step)});
    EXPECT_EQ(saver.save(vars, step),
              file("model.ckpt-" + std::to_string(step)));
  }
  for (int step = 1; step <= 7; ++step)
    EXPECT_EQ(
        fs::exists(file("model.ckpt-" + std::to_string(step) + ".safetensors")),
        step >= 5)
        << step;
  auto state = get_checkpoint_state(dir);
  ASSERT_TRUE(state);
  EXPECT_EQ(state->model_checkpoint_path, "model.ckpt-7");
  EXPECT_EQ(state->all_model_checkpoint_paths,
            (std::vector<std::string>{"model.ckpt-5", "model.ckpt-6",
                                      "model.ckpt-7"}));
  EXPECT_EQ(latest_checkpoint(dir), file("model.ckpt-7"));
  // global_step was added as an I64 scalar.
  EXPECT_EQ(load_variable(dir, "global_step").values<int64_t>()[0], 7);
  for (const std::string &name : fileio::listDir(dir))
    EXPECT_FALSE(fileio::isTemporaryFile(name)) << name;

  // A new Saver (a restarted trainer) takes over the listed checkpoints.
  Saver again(dir, options);
  EXPECT_EQ(again.last_checkpoints(),
            (std::vector<std::string>{"model.ckpt-5", "model.ckpt-6",
                                      "model.ckpt-7"}));
  again.save(vars, 8);
  EXPECT_FALSE(fs::exists(file("model.ckpt-5.safetensors")));
  // Saving the same step again replaces it and keeps one entry.
  again.save(vars, 8);
  EXPECT_EQ(get_checkpoint_state(dir)->all_model_checkpoint_paths,
            (std::vector<std::string>{"model.ckpt-6", "model.ckpt-7",
                                      "model.ckpt-8"}));
}

// A save whose checkpoint or state file cannot be written throws one line
// naming the file and leaves model_dir as it was.
TEST_F(CheckpointTest, FailedSaveLeavesModelDirAsItWas) {
  Saver saver(dir);
  VariableMap vars{{"w", TensorValue::of<int32_t>({1}, {1})}};
  saver.save(vars, 100);
  // The checkpoint cannot be renamed into place: its name is a directory.
  fs::create_directories(file("model.ckpt-200.safetensors/x"));
  expectError([&] { saver.save(vars, 200); },
              {file("model.ckpt-200.safetensors") + ": cannot write: "});
  fs::remove_all(file("model.ckpt-200.safetensors"));
  // The state file cannot be replaced: the new checkpoint is removed again.
  fs::remove(file("checkpoint"));
  fs::create_directories(file("checkpoint/x"));
  expectError([&] { saver.save(vars, 300); },
              {file("checkpoint") + ": cannot write: "});
  EXPECT_FALSE(fs::exists(file("model.ckpt-300.safetensors")));
  EXPECT_EQ(saver.last_checkpoints(),
            (std::vector<std::string>{"model.ckpt-100"}));
  for (const std::string &name : fileio::listDir(dir))
    EXPECT_FALSE(fileio::isTemporaryFile(name)) << name;
  // A re-save of a listed step keeps its (new, valid) file.
  expectError([&] { saver.save(vars, 100); },
              {file("checkpoint") + ": cannot write: "});
  EXPECT_TRUE(fs::exists(file("model.ckpt-100.safetensors")));
  fs::remove_all(file("checkpoint"));
  saver.save(vars, 400);
  EXPECT_EQ(get_checkpoint_state(dir)->all_model_checkpoint_paths,
            (std::vector<std::string>{"model.ckpt-100", "model.ckpt-400"}));
}

TEST_F(CheckpointTest, SaverMaxToKeepZeroKeepsAll) {
  SaverOptions options;
  options.max_to_keep = 0;
  Saver saver(dir, options);
  for (int step = 1; step <= 8; ++step)
    saver.save({}, step);
  for (int step = 1; step <= 8; ++step)
    EXPECT_TRUE(fs::exists(
        file("model.ckpt-" + std::to_string(step) + ".safetensors")));
  EXPECT_EQ(get_checkpoint_state(dir)->all_model_checkpoint_paths.size(), 8u);
  SaverOptions negative;
  negative.max_to_keep = -1;
  EXPECT_THROW(Saver(dir, negative), std::invalid_argument);
}

TEST_F(CheckpointTest, SaverKeepsOnePerNHours) {
  double clock = 0;
  SaverOptions options;
  options.max_to_keep = 2;
  options.keep_checkpoint_every_n_hours = 1;
  options.clock = [&clock] { return clock; };
  Saver saver(dir, options); // last preserved: t = 0
  for (int step = 1; step <= 8; ++step) {
    clock = 1800.0 * step; // a checkpoint every half hour
    saver.save({}, step);
  }
  // Evicted at t = 1800 * k: kept when at least an hour after the last kept.
  std::vector<int> onDisk;
  for (int step = 1; step <= 8; ++step)
    if (fs::exists(file("model.ckpt-" + std::to_string(step) + ".safetensors")))
      onDisk.push_back(step);
  EXPECT_EQ(onDisk, (std::vector<int>{2, 4, 6, 7, 8}));
  auto state = get_checkpoint_state(dir);
  EXPECT_EQ(state->all_model_checkpoint_paths,
            (std::vector<std::string>{"model.ckpt-7", "model.ckpt-8"}));
  EXPECT_EQ(state->all_model_checkpoint_timestamps,
            (std::vector<double>{12600, 14400}));
  EXPECT_EQ(state->last_preserved_timestamp, 10800);

  // The preserved time survives a restart.
  Saver again(dir, options);
  clock = 16200;
  again.save({}, 9); // evicts 7 (12600 - 3600 < 10800): deleted
  EXPECT_FALSE(fs::exists(file("model.ckpt-7.safetensors")));
  clock = 18000;
  again.save({}, 10); // evicts 8 (14400 - 3600 >= 10800): kept
  EXPECT_TRUE(fs::exists(file("model.ckpt-8.safetensors")));
}

//===----------------------------------------------------------------------===//
// latest_checkpoint, restore, and a writer killed at any moment
//===----------------------------------------------------------------------===//

class LatestCheckpointTest : public CheckpointTest {
protected:
  void SetUp() override {
    CheckpointTest::SetUp();
    Saver saver(dir);
    for (int step = 1; step <= 3; ++step)
      saver.save({{"w", TensorValue::of<int32_t>({1}, {step})}}, step * 100);
  }
  std::optional<std::string> latest() {
    warnings.clear();
    return latest_checkpoint(dir, [this](const std::string &w) {
      EXPECT_EQ(w.find('\n'), std::string::npos) << w;
      warnings.push_back(w);
    });
  }
  std::vector<std::string> warnings;
};

TEST_F(LatestCheckpointTest, Newest) {
  EXPECT_EQ(latest(), file("model.ckpt-300"));
  EXPECT_TRUE(warnings.empty());
  auto restored = restore_latest(dir);
  ASSERT_TRUE(restored);
  EXPECT_EQ(restored->path, file("model.ckpt-300"));
  EXPECT_EQ(restored->global_step, 300);
  EXPECT_EQ(restored->variables.at("w").values<int32_t>()[0], 3);
}

TEST_F(LatestCheckpointTest, CorruptNewestFallsBack) {
  std::string f = file("model.ckpt-300.safetensors");
  std::string bytes = readBytes(f);
  writeBytes(f, bytes.substr(0, bytes.size() - 1)); // truncated
  EXPECT_EQ(latest(), file("model.ckpt-200"));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find(f + ": tensor"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("falling back to an older checkpoint"),
            std::string::npos);

  bytes[bytes.size() - 1] ^= 0x40; // a flipped data byte
  writeBytes(f, bytes);
  auto restored = restore_latest(dir, [](const std::string &) {});
  ASSERT_TRUE(restored);
  EXPECT_EQ(restored->global_step, 200);
  EXPECT_EQ(restored->variables.at("w").values<int32_t>()[0], 2);
}

// An Estimator asks its CheckpointIndex again and again (the max_steps
// check, the restore, train_and_evaluate, get_variable_value): a corrupt
// file or state file is one warning, until it changes.
TEST_F(LatestCheckpointTest, IndexReportsEachCorruptFileOnce) {
  std::string f = file("model.ckpt-300.safetensors");
  std::string bytes = readBytes(f);
  bytes[bytes.size() - 1] ^= 0x40;
  writeBytes(f, bytes);
  CheckpointIndex index(
      dir, [this](const std::string &w) { warnings.push_back(w); });
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(index.latest(), file("model.ckpt-200"));
    auto restored = index.restore();
    ASSERT_TRUE(restored);
    EXPECT_EQ(restored->global_step, 200);
  }
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find(f + ": tensor 'w': CRC32C mismatch"),
            std::string::npos)
      << warnings[0];

  // Saved again (a new file): valid, nothing reported.
  Saver(dir).save({{"w", TensorValue::of<int32_t>({1}, {3})}}, 300);
  EXPECT_EQ(index.latest(), file("model.ckpt-300"));
  EXPECT_EQ(warnings.size(), 1u);

  // A corrupt state file: one warning too.
  writeBytes(file("checkpoint"), "model_checkpoint_path: ");
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(index.latest(), file("model.ckpt-300"));
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[1].find(file("checkpoint") + ": not a valid"),
            std::string::npos)
      << warnings[1];
}

// latest() trusts a file it checked; restore() reads it again, and a file
// that went bad since is reported (once) and skipped.
TEST_F(LatestCheckpointTest, IndexRestoreRechecksTheFile) {
  CheckpointIndex index(
      dir, [this](const std::string &w) { warnings.push_back(w); });
  EXPECT_EQ(index.latest(), file("model.ckpt-300"));
  std::string f = file("model.ckpt-300.safetensors");
  std::string bytes = readBytes(f);
  bytes[bytes.size() - 1] ^= 0x40;
  writeBytes(f, bytes);
  auto restored = index.restore();
  ASSERT_TRUE(restored);
  EXPECT_EQ(restored->global_step, 200);
  EXPECT_EQ(index.latest(), file("model.ckpt-200"));
  EXPECT_EQ(warnings.size(), 1u);
}

TEST_F(LatestCheckpointTest, DeletedNewestFallsBack) {
  fs::remove(file("model.ckpt-300.safetensors"));
  EXPECT_EQ(latest(), file("model.ckpt-200"));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("cannot open"), std::string::npos);
}

TEST_F(LatestCheckpointTest, MissingOrCorruptStateScansTheDirectory) {
  fs::remove(file("checkpoint"));
  EXPECT_EQ(latest(), file("model.ckpt-300"));
  EXPECT_TRUE(warnings.empty());
  writeBytes(file("checkpoint"), "model_checkpoint_path: \"model.ck"); // cut
  EXPECT_EQ(latest(), file("model.ckpt-300"));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(
      warnings[0].find(file("checkpoint") + ": not a valid CheckpointState"),
      std::string::npos)
      << warnings[0];
}

TEST_F(LatestCheckpointTest, NothingValidIsAnError) {
  for (int step : {100, 200, 300})
    writeBytes(file("model.ckpt-" + std::to_string(step) + ".safetensors"),
               "junk");
  expectError([&] { latest(); }, {dir, "none of its 3 checkpoints is valid"});
  EXPECT_EQ(warnings.size(), 3u);
  fs::remove_all(dir);
  fs::create_directories(dir);
  EXPECT_FALSE(latest()); // an empty model_dir has none, which is fine
}

// A writer killed at each point of Saver::save leaves the previous
// checkpoint the latest valid one.
TEST_F(LatestCheckpointTest, KilledWriterLeavesPreviousStateValid) {
  // Killed while writing the checkpoint: a partial temporary file.
  std::string partial =
      serialize_checkpoint({{"w", TensorValue::of<int32_t>({1}, {4})}}, 400);
  writeBytes(file("model.ckpt-400.safetensors.tmp-99999-0"),
             partial.substr(0, 30));
  // Killed while writing the state file: a partial temporary state.
  writeBytes(file("checkpoint.tmp-99999-1"),
             "model_checkpoint_path: \"model.ckpt-4");
  EXPECT_EQ(latest(), file("model.ckpt-300"));
  EXPECT_TRUE(warnings.empty());

  // Killed after the rename, before the state update: the new file is
  // complete but not listed; the state's newest stays the latest.
  writeBytes(file("model.ckpt-400.safetensors"), partial);
  EXPECT_EQ(latest(), file("model.ckpt-300"));

  // The next Saver removes the temporary files and carries on.
  Saver saver(dir);
  EXPECT_FALSE(fs::exists(file("model.ckpt-400.safetensors.tmp-99999-0")));
  EXPECT_FALSE(fs::exists(file("checkpoint.tmp-99999-1")));
  saver.save({{"w", TensorValue::of<int32_t>({1}, {5})}}, 500);
  EXPECT_EQ(latest(), file("model.ckpt-500"));
}

TEST_F(LatestCheckpointTest, AbsolutePathsInState) {
  CheckpointState s;
  s.model_checkpoint_path = file("model.ckpt-200");
  s.all_model_checkpoint_paths = {file("model.ckpt-100"),
                                  file("model.ckpt-200")};
  update_checkpoint_state(dir, s);
  EXPECT_EQ(latest(), file("model.ckpt-200"));
}
