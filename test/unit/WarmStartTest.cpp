//===- WarmStartTest.cpp - tf.estimator.WarmStartSettings -----------------===//

#include "estimator/WarmStart.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

using namespace estc;
using namespace estc::estimator;
using namespace estc::train;
namespace fs = std::filesystem;

namespace {

// A fresh, empty directory per test.
class WarmStartTest : public ::testing::Test {
protected:
  void SetUp() override {
    const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir = (fs::temp_directory_path() /
           ("estc-warm-start-test-" + std::to_string(::getpid()) + "-" +
            info->name()))
              .string();
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  void TearDown() override { fs::remove_all(dir); }
  std::string file(const std::string &name) const { return dir + "/" + name; }
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
