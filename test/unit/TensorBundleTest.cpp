//===- TensorBundleTest.cpp - TF checkpoints: table, bundle, model_dir ----===//
//
// lib/Checkpoint's TF tensor bundles without TF: the .index table, every
// dtype, partitioned and sharded tensors, each corruption case as one line
// naming the file and the tensor, and a model_dir of TF checkpoints read by
// latest_checkpoint / restore_latest / the Saver. TF itself reads and
// writes the same files in checkpoint.tf_bundle_compat.
//
//===----------------------------------------------------------------------===//

#include "lib/Checkpoint/TensorBundle.h"
#include "estimator/WarmStart.h"
#include "lib/Checkpoint/Checkpoint.h"
#include "lib/Checkpoint/Partitions.h"
#include "lib/Checkpoint/Table.h"
#include "lib/Support/Crc32c.h"
#include "lib/Support/FileIO.h"

#include "test/unit/CheckpointTesting.h"
#include "test/unit/FileTesting.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace estc;
using namespace estc::train;
namespace fs = std::filesystem;

namespace {

class TensorBundleTest : public estc::testing::FileTest {
protected:
  TensorBundleTest() : FileTest("bundle-test") {}
  void SetUp() override {
    FileTest::SetUp();
    dir = dir_.string();
  }
  std::string file(const std::string &name) const { return path(name); }
  std::string dir;
};

void writeBytes(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

/// Every numeric dtype, and strings (TF's bundle holds them too).
VariableMap everyDType() {
  VariableMap m = estc::testing::everyNumericDType();
  m["words"] = TensorValue::of_strings(
      {2, 2}, {"a", "", std::string("\0\xff", 2), std::string(300, 'x')});
  m["no_words"] = TensorValue::of_strings({0}, {});
  return m;
}

void expectEqual(const TensorValue &a, const TensorValue &b,
                 const std::string &name) {
  EXPECT_EQ(a.spec(), b.spec()) << name;
  EXPECT_EQ(a.data, b.data) << name;
  EXPECT_EQ(a.strings, b.strings) << name;
}

// Expects `f` to throw E whose one-line message contains every part.
template <typename E = CheckpointError, typename F>
void expectError(F f, std::vector<std::string> parts) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one with '" << parts[0] << "'";
  } catch (const E &e) {
    std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    for (const std::string &p : parts)
      EXPECT_NE(what.find(p), std::string::npos)
          << "message: " << what << "\nmissing: " << p;
  }
}

void flipByte(const std::string &path, size_t offset) {
  std::string bytes = fileio::readFile(path);
  bytes.at(offset) ^= 0x5a;
  writeBytes(path, bytes);
}

std::string fixed32(uint32_t v) {
  return std::string(reinterpret_cast<const char *>(&v), 4);
}

} // namespace

//===----------------------------------------------------------------------===//
// The table
//===----------------------------------------------------------------------===//

TEST(TableTest, ManyBlocksRoundTrip) {
  table::TableBuilder builder({.block_size = 256, .block_restart_interval = 4});
  std::vector<std::pair<std::string, std::string>> want;
  want.emplace_back("", "header");
  for (int i = 0; i < 2000; ++i) {
    char key[32];
    std::snprintf(key, sizeof key, "layer%04d/kernel", i);
    want.emplace_back(key,
                      std::string(i % 37, static_cast<char>('a' + i % 26)));
  }
  for (const auto &[k, v] : want)
    builder.add(k, v);
  std::string bytes = builder.finish();
  EXPECT_EQ(table::read_table("t.index", bytes), want);
  // The footer's magic number, little-endian fixed64.
  EXPECT_EQ(bytes.substr(bytes.size() - 8),
            std::string("\x57\xfb\x80\x8b\x24\x75\x47\xdb", 8));
}

TEST(TableTest, KeysMustIncrease) {
  table::TableBuilder builder;
  builder.add("b", "1");
  EXPECT_THROW(builder.add("a", "2"), std::invalid_argument);
  EXPECT_THROW(builder.add("b", "2"), std::invalid_argument);
}

TEST(TableTest, CorruptTables) {
  table::TableBuilder builder;
  builder.add("", "h");
  builder.add("x", "y");
  std::string good = builder.finish();
  expectError<DataLossError>([&] { table::read_table("t.index", "short"); },
                             {"t.index: ", "too short for a table footer"});
  std::string badMagic = good;
  badMagic.back() ^= 1;
  expectError<DataLossError>([&] { table::read_table("t.index", badMagic); },
                             {"t.index: ", "bad magic number"});
  std::string badCrc = good;
  badCrc[1] ^= 1; // inside the data block
  expectError<DataLossError>([&] { table::read_table("t.index", badCrc); },
                             {"t.index: ", "block checksum mismatch"});
  // A truncated table: its footer is gone, so is its magic number.
  expectError<DataLossError>(
      [&] { table::read_table("t.index", good.substr(0, good.size() - 5)); },
      {"t.index: "});
}

//===----------------------------------------------------------------------===//
// Bundles
//===----------------------------------------------------------------------===//

TEST_F(TensorBundleTest, RoundTripEveryDType) {
  VariableMap vars = everyDType();
  write_tensor_bundle(file("model.ckpt-200"), vars);
  EXPECT_TRUE(fs::exists(file("model.ckpt-200.index")));
  EXPECT_TRUE(fs::exists(file("model.ckpt-200.data-00000-of-00001")));
  TensorBundleReader reader(file("model.ckpt-200"));
  EXPECT_EQ(reader.num_shards(), 1);
  ASSERT_EQ(reader.tensors().size(), vars.size());
  for (const auto &[name, t] : vars) {
    EXPECT_EQ(reader.tensors().at(name).tf_dtype, tf_dtype_number(t.dtype));
    expectEqual(reader.get_tensor(name), t, name);
  }
  reader.verify();
  // The .index file names the bundle too.
  EXPECT_EQ(TensorBundleReader(file("model.ckpt-200.index")).prefix(),
            file("model.ckpt-200"));
}

TEST_F(TensorBundleTest, LargeTensorsStreamToTheDataFile) {
  // Over the writer's 8 MiB buffer, between small tensors; a string tensor
  // after them.
  std::vector<float> big(3 << 20);
  for (size_t i = 0; i < big.size(); ++i)
    big[i] = static_cast<float>(i % 977) * 0.5f;
  VariableMap vars;
  vars["a"] = TensorValue::of<float>({2}, {1, 2});
  vars["b"] = TensorValue::of<float>({3, 1 << 20}, big);
  vars["c"] = TensorValue::of<int64_t>({1}, {7});
  vars["d"] = TensorValue::of_strings({2}, {std::string(9 << 20, 'x'), "y"});
  write_tensor_bundle(file("big"), vars);
  EXPECT_EQ(fs::file_size(file("big.data-00000-of-00001")),
            8u + (12u << 20) + 8u + 4u + 1u + 4u + (9u << 20) + 1u);
  TensorBundleReader reader(file("big"));
  for (const auto &[name, t] : vars)
    expectEqual(reader.get_tensor(name), t, name);
}

TEST_F(TensorBundleTest, UnfinishedWriterLeavesNothing) {
  {
    BundleWriter writer(file("u"), {.num_shards = 2});
    writer.add("a", TensorValue::of<float>({2}, {1, 2}));
    writer.add("b", TensorValue::of<float>({1 << 22},
                                           std::vector<float>(1 << 22, 1.0f)));
  }
  EXPECT_TRUE(fs::is_empty(dir));
}

TEST_F(TensorBundleTest, ShardedSave) {
  VariableMap vars = everyDType();
  write_tensor_bundle(file("s"), vars, {.num_shards = 3});
  for (int k = 0; k < 3; ++k)
    EXPECT_TRUE(
        fs::exists(file("s.data-0000" + std::to_string(k) + "-of-00003")));
  TensorBundleReader reader(file("s"));
  EXPECT_EQ(reader.num_shards(), 3);
  for (const auto &[name, t] : vars)
    expectEqual(reader.get_tensor(name), t, name);
  EXPECT_THROW(BundleWriter(file("t"), {.num_shards = 0}),
               std::invalid_argument);
}

TEST_F(TensorBundleTest, TfDtypeNumbers) {
  for (DType d : {DType::Float32, DType::Float64, DType::Int32, DType::Int64,
                  DType::Bool, DType::Float16, DType::BFloat16, DType::String})
    EXPECT_EQ(dtype_from_tf_number(tf_dtype_number(d)), d);
  EXPECT_EQ(tf_dtype_number(DType::Float32), 1);
  EXPECT_EQ(tf_dtype_number(DType::String), 7);
  EXPECT_EQ(tf_dtype_number(DType::Int64), 9);
  EXPECT_EQ(tf_dtype_number(DType::Bool), 10);
  EXPECT_EQ(tf_dtype_number(DType::BFloat16), 14);
  EXPECT_EQ(tf_dtype_number(DType::Float16), 19);
  EXPECT_EQ(dtype_from_tf_number(6), std::nullopt); // int8
  EXPECT_EQ(tf_dtype_number_name(6), "int8");
  EXPECT_EQ(tf_dtype_number_name(99), "DT_99");
}

TEST_F(TensorBundleTest, SliceKeysAreTfOrderedCode) {
  // 0, "a" escaped and terminated, rank 2, (0, whole) and (64, 3).
  EXPECT_EQ(encode_tensor_name_slice("a", {{0, 64}, {-1, 3}}),
            std::string("\x00"
                        "a\x00\x01"
                        "\x01\x02"
                        "\x80\x7f"
                        "\xc0\x40\x83",
                        11));
  EXPECT_EQ(encode_tensor_name_slice(std::string("\0", 1), {{}, {}}),
            std::string("\x00\x00\xff\x00\x01\x00", 6));
}

TEST_F(TensorBundleTest, PartitionedTensorsAreAssembled) {
  // A [4, 3] tensor in four blocks (rows 0-1 / 2-3, columns 0 / 1-2), and
  // a string tensor in two row slices.
  std::vector<float> full(12);
  for (int i = 0; i < 12; ++i)
    full[i] = static_cast<float>(i);
  auto block = [&](int r0, int nr, int c0, int nc) {
    std::vector<float> v;
    for (int r = r0; r < r0 + nr; ++r)
      for (int c = c0; c < c0 + nc; ++c)
        v.push_back(full[r * 3 + c]);
    return TensorValue::of<float>({nr, nc}, v);
  };
  BundleWriter writer(file("p"));
  writer.add_slice("w", {4, 3}, {{0, 0}, {2, 1}}, block(0, 2, 0, 1));
  writer.add_slice("w", {4, 3}, {{0, 1}, {2, 2}}, block(0, 2, 1, 2));
  writer.add_slice("w", {4, 3}, {{2, 0}, {2, 1}}, block(2, 2, 0, 1));
  writer.add_slice("w", {4, 3}, {{2, 1}, {2, 2}}, block(2, 2, 1, 2));
  writer.add_slice("vocab", {3}, {{0}, {2}},
                   TensorValue::of_strings({2}, {"a", "bb"}));
  writer.add_slice("vocab", {3}, {{2}, {1}},
                   TensorValue::of_strings({1}, {"ccc"}));
  // A whole "slice" is a plain tensor.
  writer.add_slice("b", {2}, {{0}, {-1}}, TensorValue::of<float>({2}, {1, 2}));
  EXPECT_THROW(
      writer.add_slice("w", {4, 3}, {{3, 0}, {2, 1}}, block(0, 2, 0, 1)),
      std::invalid_argument);
  writer.finish();

  TensorBundleReader reader(file("p"));
  EXPECT_EQ(reader.tensors().size(), 3u); // the slices' entries are hidden
  EXPECT_EQ(reader.tensors().at("w").num_slices, 4u);
  expectEqual(reader.get_tensor("w"), TensorValue::of<float>({4, 3}, full),
              "w");
  expectEqual(reader.get_tensor("vocab"),
              TensorValue::of_strings({3}, {"a", "bb", "ccc"}), "vocab");
  expectEqual(reader.get_tensor("b"), TensorValue::of<float>({2}, {1, 2}), "b");
  reader.verify();

  // Slices that leave a hole, slices that overlap.
  BundleWriter holes(file("h"));
  holes.add_slice("w", {4, 3}, {{0, 0}, {2, -1}}, block(0, 2, 0, 3));
  holes.finish();
  expectError<DataLossError>(
      [&] { TensorBundleReader(file("h")).get_tensor("w"); },
      {file("h.index"), "tensor 'w'",
       "its slices hold 6 elements, fewer than its 12"});
  BundleWriter overlaps(file("o"));
  overlaps.add_slice("w", {4, 3}, {{0, 0}, {3, -1}}, block(0, 3, 0, 3));
  overlaps.add_slice("w", {4, 3}, {{1, 0}, {3, -1}}, block(1, 3, 0, 3));
  overlaps.finish();
  expectError<DataLossError>(
      [&] { TensorBundleReader(file("o")).get_tensor("w"); },
      {file("o.index"), "tensor 'w': slice 1,3:-: overlaps another slice"});
}

//===----------------------------------------------------------------------===//
// Corruption: one line naming the file and the tensor
//===----------------------------------------------------------------------===//

TEST_F(TensorBundleTest, BadFooter) {
  write_tensor_bundle(file("m"), everyDType());
  std::string index = fileio::readFile(file("m.index"));
  flipByte(file("m.index"), index.size() - 3);
  expectError<DataLossError>([&] { TensorBundleReader r(file("m")); },
                             {file("m.index") + ": ", "bad magic number"});
  writeBytes(file("m.index"), index.substr(0, 20));
  expectError<DataLossError>([&] { TensorBundleReader r(file("m")); },
                             {file("m.index") + ": ", "too short"});
}

TEST_F(TensorBundleTest, BadBlockCrc) {
  write_tensor_bundle(file("m"), everyDType());
  flipByte(file("m.index"), 12);
  expectError<DataLossError>(
      [&] { TensorBundleReader r(file("m")); },
      {file("m.index") + ": ", "block checksum mismatch"});
}

TEST_F(TensorBundleTest, BadTensorCrc) {
  VariableMap vars;
  vars["a"] = TensorValue::of<float>({2}, {1, 2});
  vars["b"] = TensorValue::of<float>({2}, {3, 4});
  vars["s"] = TensorValue::of_strings({2}, {"xy", "z"});
  write_tensor_bundle(file("m"), vars);
  // Data file: a (8 bytes), b (8 bytes), s (2 lengths, 4 CRC bytes, "xyz").
  flipByte(file("m.data-00000-of-00001"), 9);
  TensorBundleReader reader(file("m"));
  expectError<DataLossError>(
      [&] { reader.get_tensor("b"); },
      {file("m.data-00000-of-00001") + ": tensor 'b': CRC32C mismatch"});
  expectError<DataLossError>([&] { reader.verify(); }, {"tensor 'b'"});
  expectEqual(reader.get_tensor("a"), vars["a"], "a");

  write_tensor_bundle(file("n"), vars);
  flipByte(file("n.data-00000-of-00001"), 16 + 6 + 1); // a string's bytes
  expectError<DataLossError>(
      [&] { TensorBundleReader(file("n")).get_tensor("s"); },
      {file("n.data-00000-of-00001") + ": tensor 's': CRC32C mismatch"});
  write_tensor_bundle(file("o"), vars);
  flipByte(file("o.data-00000-of-00001"), 16); // a string length
  expectError<DataLossError>(
      [&] { TensorBundleReader(file("o")).get_tensor("s"); },
      {file("o.data-00000-of-00001") + ": tensor 's': "});
}

TEST_F(TensorBundleTest, ShortDataFile) {
  VariableMap vars;
  vars["a"] = TensorValue::of<float>({2}, {1, 2});
  vars["b"] = TensorValue::of<float>({4}, {3, 4, 5, 6});
  write_tensor_bundle(file("m"), vars);
  std::string data = fileio::readFile(file("m.data-00000-of-00001"));
  writeBytes(file("m.data-00000-of-00001"), data.substr(0, 12));
  expectError<DataLossError>(
      [&] { TensorBundleReader r(file("m")); },
      {file("m.data-00000-of-00001") + ": tensor 'b': bytes [8, 24)",
       "truncated?"});
}

TEST_F(TensorBundleTest, MissingShard) {
  write_tensor_bundle(file("m"), everyDType(), {.num_shards = 2});
  fs::remove(file("m.data-00001-of-00002"));
  expectError([&] { TensorBundleReader r(file("m")); },
              {file("m.data-00001-of-00002") + ": cannot open",
               "data file 1 of 2 of " + file("m.index")});
  expectError([&] { TensorBundleReader r(file("missing")); },
              {file("missing.index") + ": cannot open"});
}

TEST_F(TensorBundleTest, UnknownAndForeignDtypes) {
  // Hand-made entries: dtype 99 (no TF dtype), and an int8 [3] tensor
  // (a TF dtype estc has no DType for).
  std::string header = "\x08\x01"; // num_shards: 1
  auto entry = [](int dtype, const std::string &data) {
    std::string e;
    e += '\x08';
    e += static_cast<char>(dtype);
    e += std::string("\x12\x04\x12\x02\x08\x03", 6); // shape [3]
    e += '\x28';
    e += static_cast<char>(data.size()); // size
    e += '\x35';
    e += fixed32(crc32c::mask(crc32c::value(data)));
    return e;
  };
  {
    table::TableBuilder b;
    b.add("", header);
    b.add("i8", entry(6, "abc"));
    writeBytes(file("f.index"), b.finish());
    writeBytes(file("f.data-00000-of-00001"), "abc");
  }
  TensorBundleReader reader(file("f"));
  EXPECT_EQ(reader.tensors().at("i8").tf_dtype, 6);
  expectError([&] { reader.get_tensor("i8"); },
              {file("f.index") + ": tensor 'i8': dtype int8 has no estc "
                                 "DType"});
  reader.verify(); // its bytes' CRC32C checks
  CheckpointReader ck(file("f"));
  EXPECT_TRUE(ck.variables().empty()); // left out of estc's listing
  expectError([&] { ck.get_tensor("i8"); }, {"dtype int8 has no estc DType"});

  {
    table::TableBuilder b;
    b.add("", header);
    b.add("x", entry(99, "abc"));
    writeBytes(file("u.index"), b.finish());
    writeBytes(file("u.data-00000-of-00001"), "abc");
  }
  expectError<DataLossError>(
      [&] { TensorBundleReader r(file("u")); },
      {file("u.index") + ": tensor 'x': unknown dtype 99"});
  {
    table::TableBuilder b;
    b.add("x", entry(1, "abcdefghijkl"));
    writeBytes(file("v.index"), b.finish());
  }
  expectError<DataLossError>([&] { TensorBundleReader r(file("v")); },
                             {file("v.index") + ": no header entry"});
}

//===----------------------------------------------------------------------===//
// A model_dir of TF checkpoints
//===----------------------------------------------------------------------===//

TEST_F(TensorBundleTest, ModelDirOfTfCheckpoints) {
  VariableMap v100 = everyDType(), v200 = everyDType();
  v100["global_step"] = TensorValue::of<int64_t>({}, {100});
  v200["global_step"] = TensorValue::of<int64_t>({}, {200});
  write_tensor_bundle(file("model.ckpt-100"), v100);
  write_tensor_bundle(file("model.ckpt-200"), v200, {.num_shards = 2});
  // As TF writes it: absolute paths.
  CheckpointState state;
  state.model_checkpoint_path = file("model.ckpt-200");
  state.all_model_checkpoint_paths = {file("model.ckpt-100"),
                                      file("model.ckpt-200")};
  update_checkpoint_state(dir, state);

  std::vector<std::string> warnings;
  auto warn = [&](const std::string &w) { warnings.push_back(w); };
  EXPECT_EQ(latest_checkpoint(dir, warn), file("model.ckpt-200"));
  EXPECT_EQ(checkpoint_file(file("model.ckpt-200")),
            file("model.ckpt-200.index"));
  auto restored = restore_latest(dir, warn);
  ASSERT_TRUE(restored);
  EXPECT_EQ(restored->global_step, 200);
  EXPECT_EQ(restored->variables.size(), v200.size());
  for (const auto &[name, t] : v200)
    expectEqual(restored->variables.at(name), t, name);
  EXPECT_TRUE(warnings.empty());

  CheckpointReader reader = load_checkpoint(dir);
  EXPECT_TRUE(reader.is_tensor_bundle());
  EXPECT_EQ(reader.path(), file("model.ckpt-200.index"));
  EXPECT_EQ(reader.metadata().at("format"), "tensor-bundle-v2");
  EXPECT_EQ(list_variables(file("model.ckpt-100")).at("dense/kernel"),
            (VariableSpec{DType::Float32, {2, 3}}));
  expectEqual(load_variable(file("model.ckpt-100.index"), "i32"), v100["i32"],
              "i32");
  // What the Estimator passes: the prefix + .safetensors.
  EXPECT_EQ(CheckpointReader(file("model.ckpt-100.safetensors")).global_step(),
            100);
  expectError([&] { reader.get_tensor("nope"); },
              {file("model.ckpt-200.index"), "no tensor 'nope'"});

  // A corrupt newest checkpoint: fall back to the previous one.
  flipByte(file("model.ckpt-200.data-00000-of-00002"), 0);
  flipByte(file("model.ckpt-200.data-00001-of-00002"), 0);
  restored = restore_latest(dir, warn);
  ASSERT_TRUE(restored);
  EXPECT_EQ(restored->global_step, 100);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("model.ckpt-200.data-0000"), std::string::npos)
      << warnings[0];
  EXPECT_NE(warnings[0].find("falling back"), std::string::npos);
}

TEST_F(TensorBundleTest, FoundWithoutStateFile) {
  VariableMap v = everyDType();
  write_tensor_bundle(file("model.ckpt-7"), v);
  write_tensor_bundle(file("model.ckpt-30"), v);
  EXPECT_EQ(latest_checkpoint(dir), file("model.ckpt-30"));
}

TEST_F(TensorBundleTest, SaverContinuesATfModelDir) {
  VariableMap v = everyDType();
  write_tensor_bundle(file("model.ckpt-100"), v, {.num_shards = 2});
  writeBytes(file("model.ckpt-100.meta"), "a MetaGraphDef");
  CheckpointState state;
  state.model_checkpoint_path = "model.ckpt-100";
  state.all_model_checkpoint_paths = {"model.ckpt-100"};
  update_checkpoint_state(dir, state);
  SaverOptions options;
  options.max_to_keep = 1;
  options.format = CheckpointFormat::Safetensors; // not the model_dir's
  Saver saver(dir, options);
  EXPECT_EQ(saver.last_checkpoints(),
            std::vector<std::string>{"model.ckpt-100"});
  v.erase("words"); // safetensors hold no strings
  v.erase("no_words");
  saver.save(v, 200);
  // The TF checkpoint fell out of the kept ones: all its files are gone.
  EXPECT_FALSE(fs::exists(file("model.ckpt-100.index")));
  EXPECT_FALSE(fs::exists(file("model.ckpt-100.data-00000-of-00002")));
  EXPECT_FALSE(fs::exists(file("model.ckpt-100.data-00001-of-00002")));
  EXPECT_FALSE(fs::exists(file("model.ckpt-100.meta")));
  EXPECT_TRUE(fs::exists(file("model.ckpt-200.safetensors")));
}

namespace {
VariableMap numericVariables(int64_t step) {
  VariableMap v = everyDType();
  v.erase("words");
  v.erase("no_words");
  v["global_step"] = TensorValue::of<int64_t>({}, {step});
  return v;
}
} // namespace

TEST_F(TensorBundleTest, SaverWritesTfCheckpoints) {
  SaverOptions options;
  options.max_to_keep = 2;
  options.format = CheckpointFormat::TensorBundle;
  options.num_shards = 2;
  Saver saver(dir, options);
  EXPECT_EQ(saver.format(), CheckpointFormat::TensorBundle);
  for (int64_t step : {100, 200, 300})
    EXPECT_EQ(saver.save(numericVariables(step), step),
              file("model.ckpt-" + std::to_string(step)));
  for (const char *name : {"model.ckpt-200.index", "model.ckpt-300.index",
                           "model.ckpt-300.data-00000-of-00002",
                           "model.ckpt-300.data-00001-of-00002"})
    EXPECT_TRUE(fs::exists(file(name))) << name;
  for (const char *name :
       {"model.ckpt-100.index", "model.ckpt-100.data-00000-of-00002",
        "model.ckpt-100.data-00001-of-00002", "model.ckpt-300.safetensors"})
    EXPECT_FALSE(fs::exists(file(name))) << name;
  auto restored = restore_latest(dir);
  ASSERT_TRUE(restored);
  EXPECT_EQ(restored->path, file("model.ckpt-300"));
  EXPECT_EQ(restored->global_step, 300);
  for (const auto &[name, t] : numericVariables(300))
    expectEqual(restored->variables.at(name), t, name);

  // Auto continues a model_dir in the format of its newest checkpoint.
  Saver next(dir);
  EXPECT_EQ(next.format(), CheckpointFormat::TensorBundle);
  next.save(numericVariables(400), 400);
  EXPECT_TRUE(fs::exists(file("model.ckpt-400.index")));
  EXPECT_EQ(Saver(file("fresh")).format(), CheckpointFormat::Safetensors);
  EXPECT_THROW(Saver(dir, {.num_shards = 0}), std::invalid_argument);
}

TEST_F(TensorBundleTest, SavingAStepAgainInTheOtherFormatReplacesIt) {
  // What an Estimator restarted with another RunConfig::checkpoint_format
  // does: it saves the step it restored again, in the new format.
  SaverOptions tf;
  tf.format = CheckpointFormat::TensorBundle;
  tf.num_shards = 2;
  Saver(dir, tf).save(numericVariables(100), 100);
  SaverOptions st;
  st.format = CheckpointFormat::Safetensors;
  Saver(dir, st).save(numericVariables(101), 100);
  for (const char *name :
       {"model.ckpt-100.index", "model.ckpt-100.data-00000-of-00002",
        "model.ckpt-100.data-00001-of-00002"})
    EXPECT_FALSE(fs::exists(file(name))) << name;
  EXPECT_EQ(
      restore_latest(dir)->variables.at("global_step").values<int64_t>()[0],
      101);
  // And back: the safetensors file goes, the state file lists one prefix.
  tf.num_shards = 1;
  Saver(dir, tf).save(numericVariables(102), 100);
  EXPECT_FALSE(fs::exists(file("model.ckpt-100.safetensors")));
  EXPECT_TRUE(fs::exists(file("model.ckpt-100.data-00000-of-00001")));
  EXPECT_EQ(get_checkpoint_state(dir)->all_model_checkpoint_paths,
            std::vector<std::string>{"model.ckpt-100"});
  EXPECT_EQ(
      restore_latest(dir)->variables.at("global_step").values<int64_t>()[0],
      102);
}

TEST_F(TensorBundleTest, FailedTfSaveLeavesModelDirAsItWas) {
  SaverOptions options;
  options.format = CheckpointFormat::TensorBundle;
  Saver saver(dir, options);
  saver.save(numericVariables(100), 100);
  std::string state = fileio::readFile(file("checkpoint"));
  // The data file cannot be renamed into place: a directory has its name.
  fs::create_directories(file("model.ckpt-200.data-00000-of-00001/x"));
  expectError([&] { saver.save(numericVariables(200), 200); },
              {file("model.ckpt-200.data-00000-of-00001") + ": cannot write"});
  EXPECT_FALSE(fs::exists(file("model.ckpt-200.index")));
  for (const auto &entry : fs::directory_iterator(dir))
    EXPECT_FALSE(fileio::isTemporaryFile(entry.path().filename().string()))
        << entry.path();
  EXPECT_EQ(fileio::readFile(file("checkpoint")), state);
  EXPECT_EQ(latest_checkpoint(dir), file("model.ckpt-100"));
}

//===----------------------------------------------------------------------===//
// Sharded saves: parts written by several tasks, merged (parameter servers)
//===----------------------------------------------------------------------===//

namespace {
/// A [5, 2] table of 0..9 and its two parts (rows 0-2, 3-4), as a
/// partitioned variable's parts are named.
std::vector<float> iota(int n, float from = 0) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = from + static_cast<float>(i);
  return v;
}

/// What two ps tasks and a chief hold: emb's parts (and their Adagrad
/// slots) split over the tasks, a dense kernel, global_step on task 0, the
/// chief's own tensor.
std::vector<VariableMap> taskShares() {
  auto rows = [](int r0, int n, float base) {
    return TensorValue::of<float>({n, 2}, iota(2 * n, base + 2.0f * r0));
  };
  VariableMap ps0, ps1, chief;
  ps0["emb/part_0"] = rows(0, 3, 0);
  ps0["emb/part_0/Adagrad"] = rows(0, 3, 100);
  ps0["global_step"] = TensorValue::of<int64_t>({}, {7});
  ps1["emb/part_1"] = rows(3, 2, 0);
  ps1["emb/part_1/Adagrad"] = rows(3, 2, 100);
  ps1["dense/kernel"] = TensorValue::of<float>({2, 2}, {1, 2, 3, 4});
  chief["input_position"] = TensorValue::of_strings({}, {"at 42"});
  return {ps0, ps1, chief};
}

/// Each share written as its part, as a ps task does (its own names, one
/// data file, with BundleWriter's raw add for the numeric ones).
void writeParts(const std::vector<std::string> &parts, bool sync) {
  std::vector<VariableMap> shares = taskShares();
  for (size_t k = 0; k < parts.size(); ++k) {
    BundleWriter w(parts[k], {.num_shards = 1, .sync = sync});
    for (const auto &[name, t] : shares[k])
      if (t.dtype == DType::String)
        w.add(name, t);
      else
        w.add(name, t.dtype, t.shape, t.data);
    w.finish();
  }
}
} // namespace

TEST_F(TensorBundleTest, MergedPartsReadAsOneProcessCheckpoint) {
  std::string prefix = file("model.ckpt-7");
  std::vector<std::string> parts;
  for (int k = 0; k < 3; ++k)
    parts.push_back(bundle_part_prefix(prefix, k, 3));
  EXPECT_EQ(parts[1], prefix + "_temp/part-00001-of-00003");
  fs::create_directories(prefix + "_temp");
  writeParts(parts, false);
  merge_tensor_bundles(parts, prefix, false);
  EXPECT_FALSE(fs::exists(prefix + "_temp")); // the parts are gone
  for (int k = 0; k < 3; ++k)
    EXPECT_TRUE(fs::exists(bundle_data_file(prefix, k, 3))) << k;

  // The parts of emb (and of its slot) are slices of one tensor, as one
  // process's Saver writes them.
  TensorBundleReader reader(prefix);
  EXPECT_EQ(reader.num_shards(), 3);
  EXPECT_EQ(reader.tensors().at("emb").num_slices, 2u);
  EXPECT_EQ(reader.tensors().at("emb/Adagrad").num_slices, 2u);
  EXPECT_FALSE(reader.has_tensor("emb/part_0"));
  expectEqual(reader.get_tensor("emb"),
              TensorValue::of<float>({5, 2}, iota(10)), "emb");
  expectEqual(reader.get_tensor("emb/Adagrad"),
              TensorValue::of<float>({5, 2}, iota(10, 100)), "emb/Adagrad");
  expectEqual(reader.get_tensor("dense/kernel"),
              TensorValue::of<float>({2, 2}, {1, 2, 3, 4}), "dense/kernel");
  reader.verify();
  EXPECT_EQ(CheckpointReader(prefix).global_step(), 7);
  expectEqual(CheckpointReader(prefix).get_tensor("input_position"),
              TensorValue::of_strings({}, {"at 42"}), "input_position");

  // State both tasks keep (Ftrl's beta): the first part's.
  {
    std::string p2 = file("model.ckpt-8");
    std::vector<std::string> two = {bundle_part_prefix(p2, 0, 2),
                                    bundle_part_prefix(p2, 1, 2)};
    fs::create_directories(p2 + "_temp");
    for (size_t k = 0; k < 2; ++k) {
      BundleWriter w(two[k], {.num_shards = 1, .sync = false});
      w.add("beta", TensorValue::of<float>({1}, {static_cast<float>(k)}));
      w.finish();
    }
    merge_tensor_bundles(two, p2, false);
    expectEqual(TensorBundleReader(p2).get_tensor("beta"),
                TensorValue::of<float>({1}, {0}), "beta");
  }

  // A ps task restoring its part reads that slice alone.
  auto readPart = [&](const std::string &part) -> std::optional<TensorValue> {
    auto where = stored_part(reader, part);
    if (!where)
      return std::nullopt;
    return reader.get_slice(where->first, where->second);
  };
  expectEqual(*readPart("emb/part_1"),
              TensorValue::of<float>({2, 2}, iota(4, 6)), "emb/part_1");
  expectEqual(*readPart("emb/part_0/Adagrad"),
              TensorValue::of<float>({3, 2}, iota(6, 100)), "slot part");
  // Or straight into the task's own buffer.
  std::vector<float> rows(4, -1.0f);
  auto where = stored_part(reader, "emb/part_1");
  ASSERT_TRUE(where);
  EXPECT_EQ(where->first, "emb");
  reader.read_into("emb", DType::Float32, {2, 2},
                   reinterpret_cast<char *>(rows.data()), &where->second);
  EXPECT_EQ(rows, iota(4, 6));
  std::vector<float> kernel(4);
  reader.read_into("dense/kernel", DType::Float32, {2, 2},
                   reinterpret_cast<char *>(kernel.data()));
  EXPECT_EQ(kernel, (std::vector<float>{1, 2, 3, 4}));
  expectError(
      [&] {
        reader.read_into("dense/kernel", DType::Float32, {4},
                         reinterpret_cast<char *>(kernel.data()));
      },
      {file("model.ckpt-7.index"), "tensor 'dense/kernel' is float32[2,2], "
                                   "not float32[4]"});
  expectError(
      [&] {
        reader.read_into("emb", DType::Float32, {5, 2},
                         reinterpret_cast<char *>(kernel.data()));
      },
      {"tensor 'emb' is float32[5,2] in slices"});
  EXPECT_FALSE(readPart("emb/part_2"));
  EXPECT_FALSE(readPart("dense/kernel"));
  EXPECT_FALSE(readPart("other/part_0"));
  expectError(
      [&] { reader.get_slice("emb", {{1, 0}, {2, 2}}); },
      {file("model.ckpt-7.index"), "tensor 'emb'", "no stored slice 1,2:0,2"});
}

TEST_F(TensorBundleTest, MergeRefusesWhatIsNotOneCheckpoint) {
  std::string prefix = file("model.ckpt-7");
  std::vector<std::string> parts = {bundle_part_prefix(prefix, 0, 2),
                                    bundle_part_prefix(prefix, 1, 2)};
  fs::create_directories(prefix + "_temp");
  // A tensor two tasks both saved, of different shapes.
  for (const std::string &part : parts) {
    BundleWriter w(part, {.num_shards = 1, .sync = false});
    w.add("w", TensorValue::of<float>(
                   {part == parts[0] ? 1 : 2},
                   std::vector<float>(part == parts[0] ? 1 : 2, 1.0f)));
    w.finish();
  }
  expectError([&] { merge_tensor_bundles(parts, prefix, false); },
              {parts[1] + ".index", "tensor 'w' is in " + parts[0] +
                                        ".index too, of another dtype or "
                                        "shape"});
  // A part that was never written: nothing of the checkpoint is left, the
  // written parts stay where they were.
  fs::remove(parts[1] + ".index");
  fs::remove(bundle_data_file(parts[1], 0, 1));
  expectError([&] { merge_tensor_bundles(parts, prefix, false); },
              {parts[1] + ".index"});
  EXPECT_FALSE(fs::exists(prefix + ".index"));
  EXPECT_FALSE(fs::exists(bundle_data_file(prefix, 0, 2)));
  EXPECT_TRUE(fs::exists(bundle_data_file(parts[0], 0, 1)));
  // A part of several data files.
  BundleWriter two(parts[1], {.num_shards = 2, .sync = false});
  two.add("v", TensorValue::of<float>({1}, {1}));
  two.finish();
  expectError([&] { merge_tensor_bundles(parts, prefix, false); },
              {parts[1] + ".index", "has 2 data files, not 1"});
  EXPECT_THROW(merge_tensor_bundles({}, prefix), std::invalid_argument);
  // The raw add checks its bytes.
  BundleWriter w(file("raw"));
  EXPECT_THROW(w.add("x", DType::Float32, {2}, std::string(4, '\0')),
               std::invalid_argument);
  EXPECT_THROW(w.add("s", DType::String, {}, ""), std::invalid_argument);
}

TEST_F(TensorBundleTest, SaverShardedSaves) {
  SaverOptions options;
  options.format = CheckpointFormat::TensorBundle;
  options.max_to_keep = 1;
  options.sync = false;
  Saver saver(dir, options);
  for (int64_t step : {7, 8})
    EXPECT_EQ(saver.save_sharded(step, 3, writeParts),
              file("model.ckpt-" + std::to_string(step)));
  EXPECT_EQ(latest_checkpoint(dir), file("model.ckpt-8"));
  EXPECT_FALSE(fs::exists(file("model.ckpt-7.index"))); // not kept
  EXPECT_FALSE(fs::exists(file("model.ckpt-7.data-00002-of-00003")));
  auto restored = restore_latest(dir);
  ASSERT_TRUE(restored);
  expectEqual(restored->variables.at("emb"),
              TensorValue::of<float>({5, 2}, iota(10)), "emb");

  // A task that fails: model_dir as it was, no parts left.
  std::string state = fileio::readFile(file("checkpoint"));
  expectError<std::runtime_error>(
      [&] {
        saver.save_sharded(
            9, 3, [](const std::vector<std::string> &parts, bool sync) {
              writeParts({parts[0], parts[1]}, sync);
              throw std::runtime_error("ps:1 (127.0.0.1:1) failed save: gone");
            });
      },
      {"ps:1 (127.0.0.1:1) failed save: gone"});
  EXPECT_EQ(fileio::readFile(file("checkpoint")), state);
  EXPECT_FALSE(fs::exists(file("model.ckpt-9_temp")));
  EXPECT_FALSE(fs::exists(file("model.ckpt-9.index")));

  // The parts of a save killed before its merge go with the next Saver.
  fs::create_directories(file("model.ckpt-10_temp"));
  writeBytes(file("model.ckpt-10_temp/part-00000-of-00003.index"), "x");
  Saver next(dir, options);
  EXPECT_FALSE(fs::exists(file("model.ckpt-10_temp")));
  EXPECT_EQ(latest_checkpoint(dir), file("model.ckpt-8"));

  EXPECT_THROW(saver.save_sharded(11, 0, writeParts), std::invalid_argument);
  // Sharded saves are TF's format.
  expectError<std::invalid_argument>(
      [&] { Saver(file("st"), {}).save_sharded(1, 2, writeParts); },
      {"keeps safetensors checkpoints"});
}

TEST_F(TensorBundleTest, ObjectGraph) {
  // TrackableObjectGraph {nodes {children {node_id: 1 local_name: "w"}}
  // nodes {attributes {name: "VARIABLE_VALUE" checkpoint_key: KEY}}}.
  const std::string key = "w/.ATTRIBUTES/VARIABLE_VALUE";
  auto graphBytes = [&](char child) {
    std::string ref = std::string("\x08", 1) + child + "\x12\x01w";
    std::string node0 = "\x0a" + std::string(1, char(ref.size())) + ref;
    std::string attr =
        "\x0a\x0eVARIABLE_VALUE\x1a" + std::string(1, char(key.size())) + key;
    std::string node1 = "\x12" + std::string(1, char(attr.size())) + attr;
    return "\x0a" + std::string(1, char(node0.size())) + node0 + "\x0a" +
           std::string(1, char(node1.size())) + node1;
  };
  VariableMap vars;
  vars[key] = TensorValue::of<float>({2}, {1, 2});
  vars[kObjectGraphKey] = TensorValue::of_strings({}, {graphBytes('\x01')});
  write_tensor_bundle(file("o"), vars);
  TensorBundleReader reader(file("o"));
  ObjectGraph graph(reader);
  EXPECT_EQ(graph.checkpoint_key("w"), key);
  EXPECT_EQ(graph.checkpoint_key("w", "OTHER"), std::nullopt);
  EXPECT_EQ(graph.checkpoint_key("x"), std::nullopt);
  EXPECT_EQ(graph.checkpoint_key("w/deeper"), std::nullopt);
  EXPECT_EQ(graph.slot_checkpoint_key("w", "", "m"), std::nullopt);
  EXPECT_EQ(graph.variables(),
            (std::map<std::string, std::string>{{"w", key}}));
  expectEqual(reader.get_tensor(*graph.checkpoint_key("w")), vars[key], "w");

  // A name-based checkpoint has none; a corrupt graph is data loss.
  write_tensor_bundle(file("n"), everyDType());
  expectError([&] { ObjectGraph g(TensorBundleReader(file("n"))); },
              {file("n.index") + ": no _CHECKPOINTABLE_OBJECT_GRAPH"});
  vars[kObjectGraphKey] = TensorValue::of_strings({}, {graphBytes('\x05')});
  write_tensor_bundle(file("b"), vars);
  expectError<DataLossError>(
      [&] { ObjectGraph g(TensorBundleReader(file("b"))); },
      {file("b.index") + ": object graph node 0 refers to node 5 of 2"});
  vars[kObjectGraphKey] = TensorValue::of_strings({}, {"\xff\xff"});
  write_tensor_bundle(file("c"), vars);
  expectError<DataLossError>(
      [&] { ObjectGraph g(TensorBundleReader(file("c"))); },
      {file("c.index") + ": _CHECKPOINTABLE_OBJECT_GRAPH is not a "
                         "TrackableObjectGraph"});
}

TEST_F(TensorBundleTest, WarmStartFromATfCheckpoint) {
  // estimator::warm_start reads TF checkpoints through load_checkpoint: a
  // TF model_dir, a renamed variable, a partitioned one.
  BundleWriter writer(file("model.ckpt-50"));
  writer.add("old/kernel", TensorValue::of<float>({2, 2}, {1, 2, 3, 4}));
  writer.add("global_step", TensorValue::of<int64_t>({}, {50}));
  writer.add_slice("emb", {3, 2}, {{0, 0}, {2, -1}},
                   TensorValue::of<float>({2, 2}, {5, 6, 7, 8}));
  writer.add_slice("emb", {3, 2}, {{2, 0}, {1, -1}},
                   TensorValue::of<float>({1, 2}, {9, 10}));
  writer.finish();
  CheckpointState state;
  state.model_checkpoint_path = "model.ckpt-50";
  update_checkpoint_state(dir, state);

  estimator::WarmStartSettings settings;
  settings.ckpt_to_initialize_from = dir;
  settings.vars_to_warm_start = "dense/.*|emb";
  settings.var_name_to_prev_var_name = {{"dense/kernel", "old/kernel"}};
  VariableMap got = estimator::warm_start(
      settings, {{"dense/kernel", {DType::Float32, {2, 2}}},
                 {"emb", {DType::Float32, {3, 2}}},
                 {"other", {DType::Float32, {1}}}});
  ASSERT_EQ(got.size(), 2u);
  expectEqual(got.at("dense/kernel"),
              TensorValue::of<float>({2, 2}, {1, 2, 3, 4}), "dense/kernel");
  expectEqual(got.at("emb"),
              TensorValue::of<float>({3, 2}, {5, 6, 7, 8, 9, 10}), "emb");
  // A shape that differs: one line naming the TF checkpoint's index.
  settings.var_name_to_prev_var_name.clear();
  expectError(
      [&] {
        estimator::warm_start(settings, {{"emb", {DType::Float32, {4, 2}}}});
      },
      {file("model.ckpt-50.index"), "'emb'"});
}

//===----------------------------------------------------------------------===//
// The tf_bundle fuzz target's regressions (test/fuzz/regressions/tf_bundle:
// a 4-byte index length, the index, the data file)
//===----------------------------------------------------------------------===//

namespace {
std::string unframe(const std::string &name, const std::string &prefix) {
  std::string bytes = fileio::readFile(std::string(ESTC_FUZZ_REGRESSIONS) +
                                       "/tf_bundle/" + name);
  uint32_t n;
  std::memcpy(&n, bytes.data(), 4);
  writeBytes(prefix + ".index", bytes.substr(4, n));
  writeBytes(prefix + ".data-00000-of-00001", bytes.substr(4 + n));
  return prefix;
}
} // namespace

TEST_F(TensorBundleTest, HugeShapesAllocateNothing) {
  // A partitioned float32 tensor of 2^40 elements with one slice of 2: was
  // allocated (4 TiB) before its slices were found missing.
  TensorBundleReader p(unframe("partitioned-shape-allocation", file("p")));
  expectError<DataLossError>([&] { p.get_tensor("w"); },
                             {file("p.index") +
                              ": tensor 'w': its slices hold 2 elements, fewer "
                              "than its 1099511627776"});
  // A string tensor of 2^40 elements in 6 bytes: its lengths were
  // allocated.
  expectError<DataLossError>(
      [&] {
        TensorBundleReader(unframe("string-count-allocation", file("s")));
      },
      {file("s.index") + ": tensor 's': 1099511627776 strings cannot fit in "
                         "its 6 bytes"});
}

TEST_F(TensorBundleTest, RankZeroPartitioned) {
  // A scalar "partitioned" into one slice of no extents: the row loop ran
  // from rank - 1 = SIZE_MAX.
  TensorBundleReader r(unframe("rank0-partitioned", file("r")));
  expectEqual(r.get_tensor("r"), TensorValue::of<float>({}, {3}), "r");
}
