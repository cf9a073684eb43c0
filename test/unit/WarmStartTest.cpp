//===- WarmStartTest.cpp - tf.estimator.WarmStartSettings -----------------===//

#include "estimator/WarmStart.h"

#include "test/unit/FileTesting.h"

#include <gtest/gtest.h>

#include "lib/Checkpoint/TensorBundle.h"
#include "lib/Data/Idx.h"

#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace estc;
using namespace estc::estimator;
using namespace estc::train;
namespace fs = std::filesystem;

namespace {

// A fresh, empty directory per test.
class WarmStartTest : public estc::testing::FileTest {
protected:
  WarmStartTest() : FileTest("warm-start-test") {}
  void SetUp() override {
    FileTest::SetUp();
    dir = dir_.string();
  }
  std::string file(const std::string &name) const { return path(name); }
  std::string dir;
};

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

} // namespace

TEST_F(WarmStartTest, PartsFromTheSlicesOfATfCheckpoint) {
  // A TF-format checkpoint holds a partitioned variable as slices of its
  // full name ("emb" [5, 2]); a model with its parts "emb/part_<i>" warm
  // starts each from its slice (lib/Checkpoint/Partitions.h).
  VariableMap old;
  old["emb/part_0"] = TensorValue::of<float>({3, 2}, {0, 1, 2, 3, 4, 5});
  old["emb/part_1"] = TensorValue::of<float>({2, 2}, {6, 7, 8, 9});
  write_tensor_bundle(file("model.ckpt-1"), old);
  std::map<std::string, VariableSpec> current = {
      {"emb/part_0", {DType::Float32, {2, 2}}},
      {"emb/part_1", {DType::Float32, {2, 2}}},
      {"emb/part_2", {DType::Float32, {1, 2}}}};
  WarmStartSettings ws;
  ws.ckpt_to_initialize_from = file("model.ckpt-1");
  ws.vars_to_warm_start = "emb";
  // Three parts of [5, 2] (the checkpoint's two were cut otherwise).
  auto loaded = warm_start(ws, current);
  ASSERT_EQ(loaded.size(), 3u);
  EXPECT_EQ(loaded.at("emb/part_1").values<float>(),
            (std::vector<float>{4, 5, 6, 7}));
  EXPECT_EQ(loaded.at("emb/part_2").values<float>(),
            (std::vector<float>{8, 9}));
  // Parts of another full shape: one line naming the tensor.
  current = {{"emb/part_0", {DType::Float32, {3, 2}}},
             {"emb/part_1", {DType::Float32, {3, 2}}}};
  expectError([&] { warm_start(ws, current); },
              {"warm start", "'emb' is F32[5,2] in the checkpoint", "[6,2]"});
}

TEST_F(WarmStartTest, SelectsRenamesAndChecks) {
  VariableMap old;
  old["dense/kernel"] = TensorValue::of<float>({2, 2}, {1, 2, 3, 4});
  old["dense/bias"] = TensorValue::of<float>({2}, {5, 6});
  old["old_head/w"] = TensorValue::of<float>({2}, {7, 8});
  Saver(dir).save(old, 10);

  std::map<std::string, VariableSpec> current = {
      {"dense/kernel", {DType::Float32, {2, 2}}},
      {"dense/bias", {DType::Float32, {2}}},
      {"head/w", {DType::Float32, {2}}},
      {"global_step", {DType::Int64, {}}},
  };
  WarmStartSettings ws;
  ws.ckpt_to_initialize_from = dir; // a model_dir: its latest checkpoint
  ws.vars_to_warm_start = "dense/";
  auto loaded = warm_start(ws, current);
  ASSERT_EQ(loaded.size(), 2u);
  EXPECT_EQ(loaded.at("dense/bias").values<float>(),
            (std::vector<float>{5, 6}));

  ws.vars_to_warm_start = "kernel"; // matched from the start, like re.match
  EXPECT_TRUE(warm_start(ws, current).empty());

  ws.vars_to_warm_start = "(dense|head)/.*";
  ws.var_name_to_prev_var_name = {{"head/w", "old_head/w"}};
  loaded = warm_start(ws, current);
  ASSERT_EQ(loaded.size(), 3u);
  EXPECT_EQ(loaded.at("head/w").values<float>(), (std::vector<float>{7, 8}));

  // ".*" selects head/w, which the checkpoint lacks without the rename.
  ws.vars_to_warm_start = ".*";
  ws.var_name_to_prev_var_name.clear();
  expectError(
      [&] { warm_start(ws, current); },
      {"model.ckpt-10.safetensors: warm start: variable 'head/w' is not "
       "in the checkpoint"});
  ws.var_name_to_prev_var_name = {{"head/w", "old_head/w"}};
  EXPECT_EQ(warm_start(ws, current).size(), 4u);

  // Shape and dtype mismatches, a rename of no variable, a bad regex.
  ws.vars_to_warm_start = "dense";
  current["dense/kernel"] = {DType::Float32, {4, 1}};
  expectError([&] { warm_start(ws, current); },
              {"warm start: variable 'dense/kernel' is F32[2,2] in the "
               "checkpoint but F32[4,1] in the model"});
  current["dense/kernel"] = {DType::Float64, {2, 2}};
  expectError([&] { warm_start(ws, current); },
              {"variable 'dense/kernel' is F32[2,2] in the checkpoint but "
               "F64[2,2] in the model"});
  current["dense/kernel"] = {DType::Float32, {2, 2}};
  ws.vars_to_warm_start = "head";
  ws.var_name_to_prev_var_name = {{"head/w", "dense/bias2"}};
  expectError(
      [&] { warm_start(ws, current); },
      {"variable 'head/w' (as 'dense/bias2') is not in the checkpoint"});
  ws.var_name_to_prev_var_name = {{"nothing", "old_head/w"}};
  expectError([&] { warm_start(ws, current); },
              {"var_name_to_prev_var_name renames 'nothing', which is not a "
               "variable of the model"});
  ws.var_name_to_prev_var_name.clear();
  ws.vars_to_warm_start = "(";
  EXPECT_THROW(warm_start(ws, current), std::invalid_argument);
  ws.vars_to_warm_start = ".*";
  ws.ckpt_to_initialize_from = file("missing");
  expectError([&] { warm_start(ws, current); },
              {file("missing"), "cannot open"});
}

// TF's list form of vars_to_warm_start: any of the regexes, matched from the
// start (an anchored name selects that variable alone, not its slots).
TEST_F(WarmStartTest, ListFormSelectsAnyOfItsRegexes) {
  VariableMap old;
  old["bn/moving_mean"] = TensorValue::of<float>({2}, {1, 2});
  old["dense/kernel"] = TensorValue::of<float>({2}, {3, 4});
  old["dense/kernel/m"] = TensorValue::of<float>({2}, {5, 6});
  Saver(dir).save(old, 0);
  std::map<std::string, VariableSpec> current = {
      {"bn/moving_mean", {DType::Float32, {2}}},
      {"dense/kernel", {DType::Float32, {2}}},
      {"dense/kernel/m", {DType::Float32, {2}}},
  };
  WarmStartSettings ws;
  ws.ckpt_to_initialize_from = dir;
  ws.vars_to_warm_start = "nothing"; // not used with a list
  ws.vars_to_warm_start_list = {"bn/moving_mean$", "dense/kernel$"};
  auto loaded = warm_start(ws, current);
  ASSERT_EQ(loaded.size(), 2u);
  EXPECT_EQ(loaded.at("bn/moving_mean").values<float>(),
            (std::vector<float>{1, 2}));
  EXPECT_FALSE(loaded.count("dense/kernel/m"));
  ws.vars_to_warm_start_list = {"dense/", "("};
  try {
    warm_start(ws, current);
    ADD_FAILURE() << "no error for a bad regex";
  } catch (const std::invalid_argument &e) {
    EXPECT_EQ(std::string(e.what()).rfind("WarmStartSettings: "
                                          "vars_to_warm_start_list '(' "
                                          "is not a valid regex: ",
                                          0),
              0u)
        << e.what();
  }
}

// TF's list form: any of the regexes, each matched from the start; it
// replaces vars_to_warm_start; a bad one is named.
TEST_F(WarmStartTest, ListOfRegexes) {
  VariableMap old;
  old["dense/kernel"] = TensorValue::of<float>({2}, {1, 2});
  old["bn/moving_mean"] = TensorValue::of<float>({2}, {3, 4});
  old["head/w"] = TensorValue::of<float>({2}, {5, 6});
  Saver(dir).save(old, 3);
  std::map<std::string, VariableSpec> current = {
      {"dense/kernel", {DType::Float32, {2}}},
      {"bn/moving_mean", {DType::Float32, {2}}},
      {"head/w", {DType::Float32, {2}}},
  };
  WarmStartSettings ws;
  ws.ckpt_to_initialize_from = dir;
  ws.vars_to_warm_start = "head"; // replaced by the list
  ws.vars_to_warm_start_list = {"dense/", "bn", "moving_mean"};
  VariableMap loaded = warm_start(ws, current);
  ASSERT_EQ(loaded.size(), 2u);
  EXPECT_EQ(loaded.at("bn/moving_mean").values<float>(),
            (std::vector<float>{3, 4}));
  EXPECT_TRUE(loaded.count("dense/kernel"));
  ws.vars_to_warm_start_list = {"dense/", "("};
  try {
    warm_start(ws, current);
    ADD_FAILURE() << "no error for a bad regex in the list";
  } catch (const std::invalid_argument &e) {
    EXPECT_EQ(std::string(e.what()).rfind(
                  "WarmStartSettings: vars_to_warm_start_list '(' is not a "
                  "valid regex: ",
                  0),
              0u)
        << e.what();
  }
}

// tf.estimator.VocabInfo: an embedding's rows and an output layer's columns
// follow their vocabularies from the old order to the new one; new words
// and OOV buckets take the backup value.
TEST_F(WarmStartTest, VocabInfoRemapsRowsAndColumns) {
  auto writeLines = [&](const std::string &name, const std::string &text) {
    std::ofstream(file(name)) << text;
    return file(name);
  };
  std::string oldVocab = writeLines("old.txt", "apple\nbanana\ncherry\n");
  std::string newVocab = writeLines("new.txt", "cherry\r\ndate\napple\n");
  VariableMap old;
  // 3 words + 1 OOV row, 2 columns.
  old["emb"] = TensorValue::of<float>({4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  // 2 rows, 3 class columns (a head over a vocabulary of classes).
  old["out"] = TensorValue::of<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  Saver(dir + "/old").save(old, 1);

  std::map<std::string, VariableSpec> current = {
      {"emb", {DType::Float32, {5, 2}}}, // 3 words + 2 OOV buckets
      {"out", {DType::Float32, {2, 3}}},
  };
  WarmStartSettings ws;
  ws.ckpt_to_initialize_from = dir + "/old";
  ws.var_name_to_vocab_info["emb"] = {newVocab, 3, 2, oldVocab, -1, 0.5, 0};
  ws.var_name_to_vocab_info["out"] = {newVocab, 3, 0, oldVocab, 3, 0.0, 1};
  VariableMap loaded = warm_start(ws, current);
  // cherry <- old row 2, date: new (backup), apple <- old row 0, OOV x2.
  EXPECT_EQ(loaded.at("emb").values<float>(),
            (std::vector<float>{5, 6, 0.5, 0.5, 1, 2, 0.5, 0.5, 0.5, 0.5}));
  EXPECT_EQ(loaded.at("out").values<float>(),
            (std::vector<float>{3, 0, 1, 6, 0, 4}));

  // Shapes that do not fit the vocabularies, a short vocabulary file, and a
  // VocabInfo for a variable not warm-started: one line each.
  ws.var_name_to_vocab_info["emb"].num_oov_buckets = 1;
  expectError([&] { warm_start(ws, current); },
              {"variable 'emb'", "new_vocab_size 3", "do not fit"});
  ws.var_name_to_vocab_info["emb"].num_oov_buckets = 2;
  ws.var_name_to_vocab_info["emb"].new_vocab_size = 3;
  ws.var_name_to_vocab_info["out"].old_vocab_size = 9;
  try {
    warm_start(ws, current);
    ADD_FAILURE() << "a short old_vocab accepted";
  } catch (const data::DataError &e) {
    EXPECT_NE(std::string(e.what()).find("old.txt: old_vocab has 3 lines, "
                                         "fewer than 9"),
              std::string::npos)
        << e.what();
  }
  ws.var_name_to_vocab_info["out"].old_vocab_size = 3;
  ws.vars_to_warm_start = "emb";
  EXPECT_THROW(warm_start(ws, current), std::invalid_argument);
}
