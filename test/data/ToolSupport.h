//===- ToolSupport.h - What the TF oracle tools of test/data share -------===//
//
// rnn_tool, attention_tool, optimizer_tool, model_parity_tool, metrics_tool
// and ops_tool each read a case file that their test/e2e driver writes
// (`key values...` lines), build a graph, JIT-compile it into a temporary
// cache of their own, set variables by name from the case, feed inputs and
// print values for the driver to compare with TensorFlow's. This is that
// common part, with the tools' one error convention: `<tool>: error:
// <message>` on stderr, exit 1 (2 for a bad command line).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_TEST_DATA_TOOLSUPPORT_H
#define ESTC_TEST_DATA_TOOLSUPPORT_H

#include "compiler/Target/Jit.h"
#include "lib/Graph/graph.pb.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace estc::tooling {

/// The first call of a tool's main: names the tool in die()'s messages and
/// returns its one argument (the case file), or exits with 2 and `usage`
/// (`rnn_tool CASE_FILE`) when there is not exactly one.
std::string initTool(const char *name, int argc, char **argv,
                     const char *usage);

/// Prints `<tool>: error: <message>` on stderr and exits with 1.
[[noreturn]] void die(const std::string &message);

/// One line of a case file: its first word (the key) and the words after
/// it, read in order.
class CaseLine {
public:
  explicit CaseLine(const std::string &line);
  const std::string &key() const { return key_; }
  /// The next word as a T; dies naming the key when there is none or it is
  /// not a T.
  template <typename T> T next() {
    T value{};
    if (!(words_ >> value))
      die("line '" + key_ + "': a value is missing or malformed");
    return value;
  }
  /// The rest of the line as numbers (strtod: "nan", "inf" and "-inf" too);
  /// dies on a word that is not one.
  std::vector<double> numbers();
  /// The rest of the line's words.
  std::vector<std::string> rest();
  /// Dies with `unknown line '<key>'`.
  [[noreturn]] void unknown() const;

private:
  std::istringstream words_;
  std::string key_;
};

/// Calls `handle` on each line of `path` that has a word; dies when the file
/// cannot be read.
void readCaseFile(const std::string &path,
                  llvm::function_ref<void(CaseLine &)> handle);

/// A new directory under the system's temporary directory (`estc-<tool>-*`)
/// for a JIT cache of this run's own: no object of an earlier build of the
/// tool is reused. It is removed when the process exits (from main or by
/// die()). Dies when it cannot be created.
std::string temporaryCacheDir();

/// JIT-compiles `graph` as `modelName` with its cache in `cacheDir`;
/// warnings go to stderr unless `quiet`.
llvm::Expected<std::unique_ptr<JitModel>> compile(const graph::GraphDef &graph,
                                                  llvm::StringRef modelName,
                                                  const std::string &cacheDir,
                                                  bool quiet = false);
/// compile() into a temporaryCacheDir(); dies with the compiler's error.
std::unique_ptr<JitModel> compileOrDie(const graph::GraphDef &graph,
                                       llvm::StringRef modelName);

/// Writes `graph` to the file named by the environment variable `envVar`
/// when it is set (for `estc --compile-to=...` on the tool's graph).
void writeGraphIfAsked(const char *envVar, const graph::GraphDef &graph);

/// The index of function `name`; dies when it was not compiled.
int functionOrDie(JitModel &model, const std::string &name);

/// Sets each float32 variable `name` to its `values`; dies when the model
/// has no such variable or it has another number of elements.
void setVariables(
    JitModel &model,
    const std::vector<std::pair<std::string, std::vector<double>>> &vars);

/// Copies `values` into input `key` of function `fn`, converted to the
/// input's element type. Dies when `fn` has no such input, unless
/// `optional` (then nothing is fed).
void feed(JitModel &model, int fn, const std::string &key,
          const std::vector<double> &values, bool optional = false);

/// Float32 output `key` of function `fn`.
const float *output(JitModel &model, int fn, const std::string &key);

/// Prints `<what> v0 v1 ...` (9 significant digits) as one line of stdout.
void printValues(const std::string &what, const float *data, int64_t n);
/// printValues("var <name>", ...) of the float32 variable of each name in
/// `vars`.
void printVariables(
    JitModel &model,
    const std::vector<std::pair<std::string, std::vector<double>>> &vars);

/// The run of the layer tools (attention_tool, rnn_tool) that their
/// drivers' check_sgd_case (test/e2e/case_tool.py) reads: @predict, printing
/// `output` (`outputCount` values of predictions/y); `steps` steps of
/// @train, printing each `loss`; then `var NAME` of each of `vars`.
/// `feedCase(fn)` feeds the inputs of function `fn`.
void runSgdCase(
    JitModel &model, llvm::function_ref<void(int)> feedCase,
    int64_t outputCount, int64_t steps,
    const std::vector<std::pair<std::string, std::vector<double>>> &vars);

} // namespace estc::tooling

#endif // ESTC_TEST_DATA_TOOLSUPPORT_H
