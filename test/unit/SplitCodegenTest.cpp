//===- SplitCodegenTest.cpp - The back end on several threads -------------===//
//
// splitEntryPoints on a hand-written module (entry points that reach one
// another stay together; groups balance by instructions; the same module
// always splits the same way), and the JIT compiling the seed MLP in parts:
// the same training steps bit for bit as the one-thread back end, one
// object per part, cached as an archive and loaded from it, every phase
// timed; a bad ESTC_COMPILE_THREADS is one line.
//
//===----------------------------------------------------------------------===//

#include "compiler/Target/SplitCodegen.h"
#include "compiler/Driver/GraphCompiler.h"
#include "lib/Models/Models.h"

#include "llvm/AsmParser/Parser.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <random>

namespace {

using estc::CompileTimer;
using Groups = std::vector<std::vector<std::string>>;

// @big reaches the most code; @a_packed calls @a; @b and @c share @shared.
constexpr const char *kModule = R"(
define internal void @heavy(ptr %p) {
  store i32 1, ptr %p
  store i32 2, ptr %p
  store i32 3, ptr %p
  store i32 4, ptr %p
  store i32 5, ptr %p
  store i32 6, ptr %p
  store i32 7, ptr %p
  store i32 8, ptr %p
  ret void
}
define internal void @shared(ptr %p) {
  store i32 0, ptr %p
  ret void
}
declare void @runtime(ptr, ptr)
define void @a(ptr %p) {
  call void @shared(ptr %p)
  ret void
}
define void @a_packed(ptr %p) {
  call void @a(ptr %p)
  ret void
}
define void @big(ptr %p) {
  call void @runtime(ptr @heavy, ptr %p)
  ret void
}
define void @c(ptr %p) {
  call void @shared(ptr %p)
  ret void
}
)";

Groups split(unsigned parts, const char *text = kModule) {
  llvm::LLVMContext context;
  llvm::SMDiagnostic diagnostic;
  std::unique_ptr<llvm::Module> module =
      llvm::parseAssemblyString(text, diagnostic, context);
  EXPECT_TRUE(module) << diagnostic.getMessage().str();
  return module ? estc::splitEntryPoints(*module, parts) : Groups{};
}

TEST(SplitEntryPointsTest, GroupsStayTogetherAndBalance) {
  // @big reaches @heavy through its address (the way a parallel loop's
  // body is reached): 10 instructions, against 4 + 3 for the others.
  EXPECT_EQ(split(2), (Groups{{"a", "a_packed", "c"}, {"big"}}));
  EXPECT_EQ(split(3), (Groups{{"a", "a_packed"}, {"big"}, {"c"}}));
  // Never more groups than clusters of entry points, never fewer than one.
  EXPECT_EQ(split(16), split(3));
  EXPECT_EQ(split(1), (Groups{{"a", "a_packed", "big", "c"}}));
  EXPECT_EQ(split(0), split(1));
}

TEST(SplitEntryPointsTest, StateIsNeverCopied) {
  // @load and @launch share a mutable global (as a CUDA model's kernel
  // loading and its launches do): one group, whatever the parts. A
  // constant may be copied into both.
  constexpr const char *kState = R"(
@handle = internal global ptr null
@table = internal constant i32 7
define void @load(ptr %p) {
  store ptr %p, ptr @handle
  ret void
}
define void @launch(ptr %p) {
  %h = load ptr, ptr @handle
  store ptr %h, ptr %p
  ret void
}
define void @read(ptr %p) {
  %t = load i32, ptr @table
  store i32 %t, ptr %p
  ret void
}
define void @read2(ptr %p) {
  %t = load i32, ptr @table
  store i32 %t, ptr %p
  ret void
}
)";
  EXPECT_EQ(split(4, kState),
            (Groups{{"load", "launch"}, {"read"}, {"read2"}}));
}

TEST(SplitEntryPointsTest, ArchiveRoundTrip) {
  std::vector<std::string> objects = {"first object", std::string("\0\1", 2),
                                      "third"};
  llvm::Expected<std::string> archive = estc::archiveObjects("Model", objects);
  ASSERT_TRUE(bool(archive)) << llvm::toString(archive.takeError());
  llvm::Expected<std::vector<std::string>> back =
      estc::unarchiveObjects(*archive);
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  EXPECT_EQ(*back, objects);
  llvm::Expected<std::vector<std::string>> bad =
      estc::unarchiveObjects("not an archive");
  EXPECT_FALSE(bool(bad));
  llvm::consumeError(bad.takeError());
}

class SplitJitTest : public ::testing::Test {
protected:
  void SetUp() override {
    llvm::SmallString<256> dir;
    ASSERT_FALSE(
        llvm::sys::fs::createUniqueDirectory("estc-split-jit-test", dir));
    cacheDir = std::string(dir);
  }
  void TearDown() override { llvm::sys::fs::remove_directories(cacheDir); }

  std::unique_ptr<estc::JitModel> compile(unsigned threads, bool cache,
                                          CompileTimer *timer = nullptr) {
    estc::JitOptions options;
    options.cacheDir = cacheDir;
    options.useCache = cache;
    options.compileThreads = threads;
    options.timer = timer;
    estc::JitCompiler jit(options);
    auto model =
        estc::jitCompileGraph(jit, graph, "Mlp", [](llvm::StringRef) {});
    if (!model) {
      ADD_FAILURE() << llvm::toString(model.takeError());
      return nullptr;
    }
    lastStats = jit.stats();
    return std::move(*model);
  }

  /// Every variable's bytes after @init and three @train steps on fixed
  /// random data.
  std::vector<std::string> train(estc::rt::CompiledModel &model) {
    model.run("init");
    model.set_batch(16);
    int f = model.function_index("train");
    const estc::rt::FunctionSpec &spec = model.spec().functions[f];
    std::mt19937 rng(3);
    for (int i = 0; i < spec.numInputs; ++i) {
      int64_t n =
          estc::rt::numElements(spec.inputs[i].rank, spec.inputs[i].shape, 16);
      void *data = model.input_data(f, i);
      for (int64_t k = 0; k < n; ++k) {
        if (spec.inputs[i].dtype == estc::rt::DType::F32)
          static_cast<float *>(data)[k] =
              std::uniform_real_distribution<float>(-1, 1)(rng);
        else
          static_cast<int64_t *>(data)[k] = static_cast<int64_t>(rng() % 10);
      }
    }
    for (int step = 0; step < 3; ++step)
      model.run("train");
    std::vector<std::string> bytes;
    for (int v = 0; v < model.spec().numVariables; ++v)
      bytes.emplace_back(static_cast<const char *>(model.variable_data(v)),
                         static_cast<size_t>(model.variable_bytes(v)));
    return bytes;
  }

  bool cached(const char *extension) const {
    std::error_code ec;
    for (llvm::sys::fs::directory_iterator it(cacheDir, ec), end;
         !ec && it != end; it.increment(ec))
      if (llvm::StringRef(it->path()).ends_with(extension))
        return true;
    return false;
  }

  estc::graph::GraphDef graph = estc::models::build_mlp(5);
  std::string cacheDir;
  estc::JitStats lastStats;
};

TEST_F(SplitJitTest, PartsTrainBitIdenticallyAndCacheAsAnArchive) {
  std::unique_ptr<estc::JitModel> one = compile(1, /*cache=*/false);
  CompileTimer timer;
  std::unique_ptr<estc::JitModel> two = compile(2, /*cache=*/true, &timer);
  ASSERT_TRUE(one && two);
  std::vector<std::string> want = train(*one);
  EXPECT_EQ(train(*two), want) << "two parts trained differently from one";

  // Every phase timed; the parts ran on two threads.
  std::vector<std::string> phases;
  for (const CompileTimer::Phase &p : timer.phases())
    phases.push_back(p.name);
  EXPECT_EQ(phases,
            (std::vector<std::string>{"import", "est", "lower", "translate",
                                      "split", "optimize+codegen", "load"}));
  ASSERT_EQ(timer.tasks().size(), 2u);
  EXPECT_TRUE(llvm::any_of(timer.tasks(), [](const CompileTimer::Phase &t) {
    return t.name.find("Mlp_train_packed") != std::string::npos;
  }));
  EXPECT_GT(timer.total().cpuSeconds, 0);

  // Stored as <key>.a; a new compiler loads it without compiling.
  EXPECT_TRUE(cached(".a"));
  EXPECT_FALSE(cached(".o"));
  std::unique_ptr<estc::JitModel> again = compile(2, /*cache=*/true);
  ASSERT_TRUE(again);
  EXPECT_EQ(lastStats.cacheHits, 1);
  EXPECT_EQ(lastStats.codegenRuns, 0);
  EXPECT_EQ(train(*again), want);
}

TEST_F(SplitJitTest, OneThreadIsOneObject) {
  CompileTimer timer;
  ASSERT_TRUE(compile(1, /*cache=*/true, &timer));
  EXPECT_TRUE(cached(".o"));
  EXPECT_FALSE(cached(".a"));
  EXPECT_TRUE(timer.tasks().empty());
  std::vector<std::string> phases;
  for (const CompileTimer::Phase &p : timer.phases())
    phases.push_back(p.name);
  EXPECT_EQ(phases,
            (std::vector<std::string>{"import", "est", "lower", "translate",
                                      "split", "optimize", "codegen", "load"}));
}

TEST_F(SplitJitTest, BadCompileThreadsVariableIsOneLine) {
  setenv("ESTC_COMPILE_THREADS", "two", 1);
  estc::JitOptions options;
  options.cacheDir = cacheDir;
  estc::JitCompiler jit(options);
  auto model = estc::jitCompileGraph(jit, graph, "Mlp", [](llvm::StringRef) {});
  unsetenv("ESTC_COMPILE_THREADS");
  ASSERT_FALSE(model);
  std::string message = llvm::toString(model.takeError());
  EXPECT_EQ(message, "ESTC_COMPILE_THREADS=two: not a thread count (1 to "
                     "1024)");
  EXPECT_EQ(jit.stats().codegenRuns, 0);
}

} // namespace
