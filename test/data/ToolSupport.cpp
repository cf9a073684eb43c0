//===- ToolSupport.cpp - What the TF oracle tools of test/data share -----===//

#include "test/data/ToolSupport.h"

#include "compiler/Driver/GraphCompiler.h"
#include "lib/Graph/GraphIO.h"

#include "llvm/Support/FileSystem.h"

#include <cstdlib>
#include <fstream>
#include <iostream>

namespace estc::tooling {

namespace {
std::string &toolName() {
  static std::string name = "tool";
  return name;
}

template <typename T> void fill(void *data, const std::vector<double> &values) {
  auto *p = static_cast<T *>(data);
  for (size_t i = 0; i < values.size(); ++i)
    p[i] = static_cast<T>(values[i]);
}
} // namespace

std::string initTool(const char *name, int argc, char **argv,
                     const char *usage) {
  toolName() = name;
  if (argc != 2) {
    std::cerr << name << ": error: usage: " << usage << "\n";
    std::exit(2);
  }
  return argv[1];
}

void die(const std::string &message) {
  std::cerr << toolName() << ": error: " << message << "\n";
  std::exit(1);
}

CaseLine::CaseLine(const std::string &line) : words_(line) { words_ >> key_; }

std::vector<double> CaseLine::numbers() {
  std::vector<double> values;
  std::string word;
  while (words_ >> word) {
    char *end = nullptr;
    double v = std::strtod(word.c_str(), &end);
    if (end == word.c_str() || *end != '\0')
      die("line '" + key_ + "': '" + word + "' is not a number");
    values.push_back(v);
  }
  return values;
}

std::vector<std::string> CaseLine::rest() {
  std::vector<std::string> words;
  for (std::string w; words_ >> w;)
    words.push_back(w);
  return words;
}

void CaseLine::unknown() const { die("unknown line '" + key_ + "'"); }

void readCaseFile(const std::string &path,
                  llvm::function_ref<void(CaseLine &)> handle) {
  std::ifstream in(path);
  if (!in)
    die("cannot read " + path);
  for (std::string text; std::getline(in, text);) {
    CaseLine line(text);
    if (!line.key().empty())
      handle(line);
  }
}

namespace {
/// The directories temporaryCacheDir() made, removed when the process
/// exits (returning from main, or die()).
std::vector<std::string> &cacheDirs() {
  static std::vector<std::string> dirs;
  static const bool registered = [] {
    return std::atexit([] {
             for (const std::string &dir : cacheDirs())
               llvm::sys::fs::remove_directories(dir);
           }) == 0;
  }();
  (void)registered;
  return dirs;
}
} // namespace

std::string temporaryCacheDir() {
  llvm::SmallString<128> dir;
  if (llvm::sys::fs::createUniqueDirectory("estc-" + toolName(), dir))
    die("cannot create a cache directory");
  cacheDirs().push_back(std::string(dir));
  return std::string(dir);
}

llvm::Expected<std::unique_ptr<JitModel>> compile(const graph::GraphDef &graph,
                                                  llvm::StringRef modelName,
                                                  const std::string &cacheDir,
                                                  bool quiet) {
  JitOptions options;
  options.cacheDir = cacheDir;
  JitCompiler jit(options);
  return jitCompileGraph(jit, graph, modelName, [&](llvm::StringRef w) {
    if (!quiet)
      std::cerr << "warning: " << w.str() << "\n";
  });
}

std::unique_ptr<JitModel> compileOrDie(const graph::GraphDef &graph,
                                       llvm::StringRef modelName) {
  auto compiled = compile(graph, modelName, temporaryCacheDir());
  if (!compiled)
    die(llvm::toString(compiled.takeError()));
  return std::move(*compiled);
}

void writeGraphIfAsked(const char *envVar, const graph::GraphDef &graph) {
  const char *path = std::getenv(envVar);
  if (!path || !*path)
    return;
  std::string error;
  if (!graph::writeGraph(path, graph, error))
    die(error);
}

int functionOrDie(JitModel &model, const std::string &name) {
  int fn = model.find_function(name);
  if (fn < 0)
    die("@" + name + " was not compiled");
  return fn;
}

void setVariables(
    JitModel &model,
    const std::vector<std::pair<std::string, std::vector<double>>> &vars) {
  for (const auto &[name, values] : vars) {
    int v = model.find_variable(name);
    if (v < 0)
      die("the model has no variable '" + name + "'");
    int64_t n = model.variable_bytes(v) / 4;
    if (n != static_cast<int64_t>(values.size()))
      die("variable '" + name + "' has " + std::to_string(n) +
          " elements, the case " + std::to_string(values.size()));
    fill<float>(model.variable_data(v), values);
  }
}

void feed(JitModel &model, int fn, const std::string &key,
          const std::vector<double> &values, bool optional) {
  int input = model.find_input(fn, key);
  if (input < 0) {
    if (optional)
      return;
    die(std::string("@") + model.spec().functions[fn].name + " has no input '" +
        key + "'");
  }
  void *data = model.input_data(fn, input);
  switch (model.spec().functions[fn].inputs[input].dtype) {
  case rt::DType::F32:
    return fill<float>(data, values);
  case rt::DType::F64:
    return fill<double>(data, values);
  case rt::DType::I8:
    return fill<int8_t>(data, values);
  case rt::DType::I32:
    return fill<int32_t>(data, values);
  case rt::DType::I64:
    return fill<int64_t>(data, values);
  case rt::DType::Bool:
    return fill<bool>(data, values);
  }
  die("input '" + key + "' has an unknown element type");
}

const float *output(JitModel &model, int fn, const std::string &key) {
  return static_cast<const float *>(
      model.output_data(fn, model.output_index(fn, key)));
}

void printValues(const std::string &what, const float *data, int64_t n) {
  std::cout << what;
  std::cout.precision(9);
  for (int64_t i = 0; i < n; ++i)
    std::cout << " " << data[i];
  std::cout << "\n";
}

void printVariables(
    JitModel &model,
    const std::vector<std::pair<std::string, std::vector<double>>> &vars) {
  for (const auto &[name, values] : vars) {
    int v = model.variable_index(name);
    printValues("var " + name,
                static_cast<const float *>(model.variable_data(v)),
                model.variable_bytes(v) / 4);
  }
}

void runSgdCase(
    JitModel &model, llvm::function_ref<void(int)> feedCase,
    int64_t outputCount, int64_t steps,
    const std::vector<std::pair<std::string, std::vector<double>>> &vars) {
  int predict = functionOrDie(model, "predict");
  feedCase(predict);
  model.run(predict);
  printValues("output", output(model, predict, "predictions/y"), outputCount);
  int train = functionOrDie(model, "train");
  for (int64_t step = 0; step < steps; ++step) {
    feedCase(train);
    model.run(train);
    printValues("loss", output(model, train, "loss"), 1);
  }
  printVariables(model, vars);
}

} // namespace estc::tooling
