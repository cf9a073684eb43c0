//===- compile_bench.cpp - Compile seconds per model and per phase --------===//
//
//   compile_bench [--models=mlp,convnet,linear] [--paths=jit,aot]
//                 [--compile_threads=0,1] [--runs=5]
//
// How long estc takes to compile the seed models (examples/models: every
// function, @train, @eval, @eval_metrics, @predict and @init, as the
// Estimator's JIT compiles them), phase by phase (compiler/Target/
// CompileTimer.h): import, est (the est and autodiff stages), lower (to
// the LLVM dialect), translate (to LLVM IR), split (the back end's groups,
// SplitCodegen.h), optimize (LLVM O2), link (aot: the optimized groups in
// one module), codegen (machine code) and, for the JIT, load (linking into
// ORC). With several compile threads the JIT's optimize and codegen run
// together, as one phase; the threads of a phase are listed too (each
// one's wall and its own CPU seconds: on an idle machine the phase takes
// as long as its slowest thread).
//
//   jit  jitCompileGraph (the Estimator's path), cache off: an object per
//        group of functions, each optimized and compiled on a thread of
//        its own
//   aot  compileGraphToObject (exports; `estc --emit=obj` runs the same
//        phases): one object; the groups optimized on threads of their
//        own, linked, then compiled on one
//
// each with --compile_threads threads (ESTC_COMPILE_THREADS; 0: one per
// core).
//
// Each compile runs in a child process of its own (a first compile in a
// fresh process, as the Estimator's is), and the runs alternate between
// the configurations, so a change in the machine's load hits them alike.
// Reports the median of --runs compiles: wall seconds and CPU seconds (the
// process's user + sys of every thread) per phase, and the child's whole
// user + sys. CPU seconds move far less with other jobs on a shared machine
// than wall seconds do. Prints a Markdown table; a bad flag is one line and
// exit status 2 (lib/Support/Flags.h).
//
//===----------------------------------------------------------------------===//

#include "bench/BenchFlags.h"
#include "compiler/Driver/GraphCompiler.h"
#include "lib/Models/Models.h"
#include "lib/Support/Flags.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace estc;

struct Config {
  std::string model;
  std::string path; // jit or aot
  int threads = 0;  // compile threads (0: one per core)
  std::string label() const {
    return model + " " + path +
           (threads ? " threads=" + std::to_string(threads) : " threads=cores");
  }
};

graph::GraphDef buildModel(const std::string &model) {
  if (model == "mlp")
    return models::build_mlp(42);
  if (model == "convnet")
    return models::build_convnet(42);
  return models::build_linear(42);
}

/// Compiles `config` once in this process; "phase wall cpu" lines.
std::string compileOnce(const Config &config) {
  graph::GraphDef graph = buildModel(config.model);
  // Both paths take their thread count from the environment.
  if (config.threads)
    setenv("ESTC_COMPILE_THREADS", std::to_string(config.threads).c_str(), 1);
  else
    unsetenv("ESTC_COMPILE_THREADS");
  CompileTimer timer;
  auto quiet = [](llvm::StringRef) {};
  if (config.path == "jit") {
    JitOptions options;
    options.useCache = false;
    options.timer = &timer;
    JitCompiler jit(options);
    auto model = jitCompileGraph(jit, graph, "Model", quiet);
    if (!model)
      throw std::runtime_error(llvm::toString(model.takeError()));
  } else {
    auto object =
        compileGraphToObject(graph, "Model", TargetOptions{},
                             /*runtimeChecks=*/true, {}, quiet, &timer);
    if (!object)
      throw std::runtime_error(llvm::toString(object.takeError()));
  }
  std::ostringstream out;
  for (const CompileTimer::Phase &p : timer.phases())
    out << "phase\t" << p.name << "\t" << p.wallSeconds << "\t" << p.cpuSeconds
        << "\n";
  for (const CompileTimer::Phase &p : timer.tasks())
    out << "task\t" << p.name << "\t" << p.wallSeconds << "\t" << p.cpuSeconds
        << "\n";
  return out.str();
}

struct Run {
  std::vector<CompileTimer::Phase> phases;
  std::vector<CompileTimer::Phase> tasks; // a phase's threads
  double childCpu = 0;                    // user + sys of the whole child
};

/// One compile in a child process.
Run runChild(const Config &config) {
  int fds[2];
  if (pipe(fds) != 0)
    throw std::runtime_error("pipe failed");
  pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    try {
      std::string text = compileOnce(config);
      ssize_t written = write(fds[1], text.data(), text.size());
      _exit(written == static_cast<ssize_t>(text.size()) ? 0 : 1);
    } catch (const std::exception &e) {
      std::fprintf(stderr, "compile_bench: error: %s: %s\n",
                   config.label().c_str(), e.what());
      _exit(1);
    }
  }
  close(fds[1]);
  std::string text;
  char buffer[4096];
  for (ssize_t got; (got = read(fds[0], buffer, sizeof buffer)) > 0;)
    text.append(buffer, static_cast<size_t>(got));
  close(fds[0]);
  int status = 0;
  struct rusage usage{};
  if (child < 0 || wait4(child, &status, 0, &usage) != child ||
      !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error(config.label() + ": the compile failed");
  Run run;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> fields;
    std::istringstream cells(line);
    for (std::string cell; std::getline(cells, cell, '\t');)
      fields.push_back(cell);
    if (fields.size() != 4)
      continue;
    CompileTimer::Phase p{fields[1], std::stod(fields[2]),
                          std::stod(fields[3])};
    (fields[0] == "task" ? run.tasks : run.phases).push_back(p);
  }
  auto seconds = [](const timeval &t) {
    return static_cast<double>(t.tv_sec) + 1e-6 * t.tv_usec;
  };
  run.childCpu = seconds(usage.ru_utime) + seconds(usage.ru_stime);
  return run;
}

double median(std::vector<double> values) {
  if (values.empty())
    return 0;
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

} // namespace

int main(int argc, char **argv) {
  using flags::Flag;
  std::string modelList = "mlp,convnet", pathList = "jit,aot",
              threadList = "0,1";
  int runs = 5;
  flags::FlagParser parser(
      "compile_bench",
      "Compile seconds of the seed models per phase (wall and CPU, medians "
      "of alternated runs, each in a fresh child process).");
  parser.add(Flag("models", &modelList, "models, comma-separated")
                 .value_name("mlp,convnet,linear"));
  parser.add(Flag("paths", &pathList, "compile paths, comma-separated")
                 .value_name("jit,aot"));
  parser.add(Flag("compile_threads", &threadList,
                  "the JIT back end's threads, comma-separated (0: one per "
                  "core)")
                 .value_name("N,..."));
  parser.add(Flag("runs", &runs, "compiles per configuration").min(1));
  parser.parse_or_exit(argc, argv);

  std::vector<std::string> models = bench::splitList(modelList);
  for (const std::string &m : models)
    if (m != "mlp" && m != "convnet" && m != "linear")
      parser.fail("--models=" + modelList + ": unknown model '" + m +
                  "' (mlp, convnet, linear)");
  std::vector<std::string> paths = bench::splitList(pathList);
  for (const std::string &p : paths)
    if (p != "jit" && p != "aot")
      parser.fail("--paths=" + pathList + ": unknown path '" + p +
                  "' (jit, aot)");
  std::vector<int> threads;
  for (const std::string &t : bench::splitList(threadList)) {
    char *end = nullptr;
    long v = std::strtol(t.c_str(), &end, 10);
    if (t.empty() || *end != '\0' || v < 0)
      parser.fail("--compile_threads=" + threadList + ": '" + t +
                  "' is not a non-negative integer");
    threads.push_back(static_cast<int>(v));
  }

  std::vector<Config> configs;
  for (const std::string &m : models)
    for (const std::string &p : paths)
      for (int t : threads)
        configs.push_back({m, p, t});

  std::vector<std::vector<Run>> results(configs.size());
  try {
    for (int r = 0; r < runs; ++r)
      for (size_t c = 0; c < configs.size(); ++c)
        results[c].push_back(runChild(configs[c]));
  } catch (const std::exception &e) {
    std::fprintf(stderr, "compile_bench: error: %s\n", e.what());
    return 1;
  }

  std::printf("Compile seconds, median of %d runs: wall / CPU (user + sys, "
              "all threads)\n\n",
              runs);
  std::printf(
      "| configuration | phase | wall s | CPU s |\n|---|---|---|---|\n");
  for (size_t c = 0; c < configs.size(); ++c) {
    // The phases in the order they ran, then the threads of a phase that
    // ran several (their time is the phase's).
    auto rows = [&](std::vector<CompileTimer::Phase> Run::*list,
                    const char *indent) {
      std::vector<std::string> names;
      for (const Run &run : results[c])
        for (const CompileTimer::Phase &p : run.*list)
          if (std::find(names.begin(), names.end(), p.name) == names.end())
            names.push_back(p.name);
      for (const std::string &name : names) {
        std::vector<double> wall, cpu;
        for (const Run &run : results[c])
          for (const CompileTimer::Phase &p : run.*list)
            if (p.name == name) {
              wall.push_back(p.wallSeconds);
              cpu.push_back(p.cpuSeconds);
            }
        std::printf("| %s | %s%s | %.3f | %.3f |\n", configs[c].label().c_str(),
                    indent, name.c_str(), median(wall), median(cpu));
      }
    };
    rows(&Run::phases, "");
    rows(&Run::tasks, "thread: ");
    std::vector<double> wall, cpu, child;
    for (const Run &run : results[c]) {
      double w = 0, u = 0;
      for (const CompileTimer::Phase &p : run.phases) {
        w += p.wallSeconds;
        u += p.cpuSeconds;
      }
      wall.push_back(w);
      cpu.push_back(u);
      child.push_back(run.childCpu);
    }
    std::printf("| %s | **total** | **%.3f** | **%.3f** (process %.3f) |\n",
                configs[c].label().c_str(), median(wall), median(cpu),
                median(child));
  }
  return 0;
}
