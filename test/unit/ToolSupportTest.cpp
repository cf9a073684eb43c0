//===- ToolSupportTest.cpp - test/data/ToolSupport.h's errors and values -===//
//
// The TF oracle tools' shared part: a case file's lines read as their
// drivers write them (numbers with nan and inf, words), and each error a
// driver can cause (bad command line, unreadable file, unknown line, a value
// that is missing or not a number, a variable or input the model does not
// have, a variable of another size) as one line `<tool>: error: ...` with
// exit status 1 (2 for the command line); the temporary JIT caches removed
// at exit.
//
//===----------------------------------------------------------------------===//

#include "test/data/ToolSupport.h"

#include "lib/Graph/GraphBuilder.h"
#include "lib/Graph/Ops.h"

#include "llvm/Support/FileSystem.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

namespace {

using namespace estc;
using namespace estc::tooling;
using ::testing::ExitedWithCode;

/// A case file holding `text`, removed at the end of the test.
class CaseFile {
public:
  explicit CaseFile(const std::string &text) {
    llvm::SmallString<128> path;
    llvm::sys::fs::createTemporaryFile("tool-support", "case", path);
    path_ = std::string(path);
    std::ofstream(path_) << text;
  }
  ~CaseFile() { llvm::sys::fs::remove(path_); }
  const std::string &path() const { return path_; }

private:
  std::string path_;
};

/// Every line of `file`, key first.
std::vector<std::pair<std::string, std::vector<double>>>
readAll(const CaseFile &file) {
  std::vector<std::pair<std::string, std::vector<double>>> lines;
  readCaseFile(file.path(), [&](CaseLine &line) {
    lines.emplace_back(line.key(), line.numbers());
  });
  return lines;
}

TEST(ToolSupport, ReadsCaseLines) {
  CaseFile file("steps 3\n\n   \nx 1.5 -2 nan inf -inf 1e-3\nlr 0.25\n");
  auto lines = readAll(file);
  ASSERT_EQ(lines.size(), 3u); // blank lines are skipped
  EXPECT_EQ(lines[0].first, "steps");
  EXPECT_EQ(lines[0].second, (std::vector<double>{3}));
  const std::vector<double> &x = lines[1].second;
  ASSERT_EQ(x.size(), 6u);
  EXPECT_EQ(x[0], 1.5);
  EXPECT_EQ(x[1], -2);
  EXPECT_TRUE(std::isnan(x[2]));
  EXPECT_EQ(x[3], INFINITY);
  EXPECT_EQ(x[4], -INFINITY);
  EXPECT_EQ(x[5], 1e-3);

  CaseLine line("var kernel/0 1 2");
  EXPECT_EQ(line.key(), "var");
  EXPECT_EQ(line.next<std::string>(), "kernel/0");
  EXPECT_EQ(line.next<int64_t>(), 1);
  EXPECT_EQ(line.rest(), (std::vector<std::string>{"2"}));
}

TEST(ToolSupport, CaseErrorsAreOneLine) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  char name[] = "some_tool";
  char arg[] = "a";
  char *argv[] = {name, arg, arg};
  EXPECT_EXIT(initTool("some_tool", 3, argv, "some_tool CASE_FILE"),
              ExitedWithCode(2),
              "^some_tool: error: usage: some_tool CASE_FILE\n$");
  EXPECT_EQ(initTool("some_tool", 2, argv, "some_tool CASE_FILE"), "a");
  EXPECT_EXIT(readCaseFile("/nonexistent/x.case", [](CaseLine &) {}),
              ExitedWithCode(1),
              "^some_tool: error: cannot read /nonexistent/x.case\n$");
  CaseFile file("bogus 1 2\n");
  EXPECT_EXIT(readCaseFile(file.path(), [](CaseLine &l) { l.unknown(); }),
              ExitedWithCode(1), "^some_tool: error: unknown line 'bogus'\n$");
  EXPECT_EXIT(CaseLine("x 1 two").numbers(), ExitedWithCode(1),
              "^some_tool: error: line 'x': 'two' is not a number\n$");
  EXPECT_EXIT(CaseLine("steps").next<int64_t>(), ExitedWithCode(1),
              "^some_tool: error: line 'steps': a value is missing or "
              "malformed\n$");
  EXPECT_EXIT(CaseLine("steps many").next<int64_t>(), ExitedWithCode(1),
              "line 'steps': a value is missing or malformed");
}

/// The cache directory a process that runs `body` (which records it in
/// `record`) leaves behind, run as a death test expecting exit status
/// `status`; empty when it did not record one.
#define CACHE_DIR_AFTER(body, status)                                          \
  [&] {                                                                        \
    /* The same file here and in the death test's process, which runs the */   \
    /* test again from its start (threadsafe: the JIT has threads). */         \
    GTEST_FLAG_SET(death_test_style, "threadsafe");                            \
    std::string record = ::testing::TempDir() + "tool-support-cache-dir.txt";  \
    EXPECT_EXIT(body, ExitedWithCode(status), "");                             \
    std::string dir;                                                           \
    std::ifstream(record) >> dir;                                              \
    llvm::sys::fs::remove(record);                                             \
    return dir;                                                                \
  }()

TEST(ToolSupport, CacheDirectoryIsRemovedAtExit) {
  std::string dir = CACHE_DIR_AFTER(
      {
        std::ofstream(record) << temporaryCacheDir();
        std::exit(0);
      },
      0);
  ASSERT_FALSE(dir.empty());
  EXPECT_FALSE(llvm::sys::fs::exists(dir)) << dir;
}

TEST(ToolSupport, CacheDirectoryIsRemovedOnDie) {
  std::string dir = CACHE_DIR_AFTER(
      {
        std::ofstream(record) << temporaryCacheDir();
        die("stop");
      },
      1);
  ASSERT_FALSE(dir.empty());
  EXPECT_FALSE(llvm::sys::fs::exists(dir)) << dir;
}

TEST(ToolSupport, VariablesAndInputsByName) {
  // Each death test runs the test again in a new process (threadsafe: the
  // JIT has threads), compiling the model there too.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  char name[] = "some_tool";
  char *argv[] = {name, name};
  initTool("some_tool", 2, argv, "some_tool CASE_FILE");
  InputSpec inputs;
  inputs.features.push_back(TensorSpec{"x", DType::Float32, {-1, 2}});
  Graph g;
  build_mode(g, ModeKeys::PREDICT, inputs,
             [](Graph &graph, const TensorMap &f, const Tensor &, ModeKeys) {
               Variable w = graph.get_variable("w", DType::Float32, {2});
               Signature s;
               s.predictions.set("y", multiply(f["x"], w.read()));
               return s;
             });
  graph::GraphDef def = g.graph_def();
  std::unique_ptr<JitModel> model = compileOrDie(def, "Tool");
  model->run(model->function_index("init"));
  setVariables(*model, {{"w", {2.0, -1.0}}});
  int predict = functionOrDie(*model, "predict");
  model->set_batch(1);
  feed(*model, predict, "features/x", {3.0, 4.0});
  model->run(predict);
  const float *y = output(*model, predict, "predictions/y");
  EXPECT_EQ(y[0], 6.0f);
  EXPECT_EQ(y[1], -4.0f);

  EXPECT_EXIT(setVariables(*model, {{"v", {1.0}}}), ExitedWithCode(1),
              "some_tool: error: the model has no variable 'v'\n$");
  EXPECT_EXIT(setVariables(*model, {{"w", {1.0}}}), ExitedWithCode(1),
              "some_tool: error: variable 'w' has 2 elements, the case 1\n$");
  EXPECT_EXIT(feed(*model, predict, "features/z", {1.0}), ExitedWithCode(1),
              "some_tool: error: @predict has no input 'features/z'\n$");
  feed(*model, predict, "features/z", {1.0}, /*optional=*/true);
  EXPECT_EXIT(functionOrDie(*model, "train"), ExitedWithCode(1),
              "some_tool: error: @train was not compiled\n$");
}

} // namespace
