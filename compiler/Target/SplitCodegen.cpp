//===- SplitCodegen.cpp - The back end on several threads -----------------===//

#include "compiler/Target/SplitCodegen.h"
#include "compiler/Target/TargetError.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Instructions.h"
#include "llvm/Linker/Linker.h"
#include "llvm/Object/Archive.h"
#include "llvm/Object/ArchiveWriter.h"
#include "llvm/Pass.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Threading.h"
#include "llvm/Transforms/IPO/MergeFunctions.h"

#include <cstdlib>
#include <thread>

namespace estc {

using detail::error;

namespace {

/// The globals `value` refers to, through constant expressions too.
void addReferences(const llvm::Value *value,
                   llvm::SmallVectorImpl<const llvm::GlobalValue *> &out,
                   llvm::DenseSet<const llvm::Constant *> &seenConstants) {
  if (auto *global = llvm::dyn_cast<llvm::GlobalValue>(value)) {
    out.push_back(global);
    return;
  }
  auto *constant = llvm::dyn_cast<llvm::Constant>(value);
  if (!constant || !seenConstants.insert(constant).second)
    return;
  for (const llvm::Value *operand : constant->operands())
    addReferences(operand, out, seenConstants);
}

/// Every global definition reachable from `roots` (the roots included):
/// through calls, addresses taken and global initializers.
llvm::DenseSet<const llvm::GlobalValue *>
reachable(llvm::ArrayRef<const llvm::GlobalValue *> roots) {
  llvm::DenseSet<const llvm::GlobalValue *> seen;
  llvm::DenseSet<const llvm::Constant *> seenConstants;
  llvm::SmallVector<const llvm::GlobalValue *> work(roots.begin(), roots.end());
  while (!work.empty()) {
    const llvm::GlobalValue *global = work.pop_back_val();
    if (global->isDeclaration() || !seen.insert(global).second)
      continue;
    if (auto *function = llvm::dyn_cast<llvm::Function>(global)) {
      for (const llvm::BasicBlock &block : *function)
        for (const llvm::Instruction &inst : block)
          for (const llvm::Value *operand : inst.operands())
            addReferences(operand, work, seenConstants);
    } else if (auto *variable = llvm::dyn_cast<llvm::GlobalVariable>(global)) {
      if (variable->hasInitializer())
        addReferences(variable->getInitializer(), work, seenConstants);
    }
  }
  return seen;
}

size_t instructionCount(const llvm::GlobalValue *global) {
  auto *function = llvm::dyn_cast<llvm::Function>(global);
  return function ? function->getInstructionCount() : 0;
}

/// Keeps the definitions of `entries` and what they reach; the other
/// external definitions become declarations (another part defines them)
/// and every other internal definition goes.
void restrictTo(llvm::Module &module, llvm::ArrayRef<std::string> entries) {
  llvm::SmallVector<const llvm::GlobalValue *> roots;
  for (const std::string &name : entries)
    roots.push_back(module.getNamedValue(name));
  llvm::DenseSet<const llvm::GlobalValue *> keep = reachable(roots);
  llvm::SmallVector<llvm::GlobalValue *> dead;
  for (llvm::Function &f : module)
    if (!f.isDeclaration() && !keep.contains(&f))
      dead.push_back(&f);
  for (llvm::GlobalVariable &g : module.globals())
    if (!g.isDeclaration() && !g.hasAppendingLinkage() && !keep.contains(&g))
      dead.push_back(&g);
  for (llvm::GlobalValue *global : dead) {
    if (auto *f = llvm::dyn_cast<llvm::Function>(global))
      f->deleteBody(); // drops its references; a declaration now
    else
      llvm::cast<llvm::GlobalVariable>(global)->setInitializer(nullptr);
  }
  for (llvm::GlobalValue *global : dead) {
    if (!global->use_empty()) {
      // Only another part's entry point can still be referenced (from a
      // kept definition): it stays an external declaration.
      global->setLinkage(llvm::GlobalValue::ExternalLinkage);
      continue;
    }
    global->eraseFromParent();
  }
}

/// One part: `bitcode` parsed in a context of its own and restricted to
/// `entries`, optimized, then compiled to an object (`compile`) or written
/// back as bitcode (to be linked with the other parts).
llvm::Expected<std::string> runPart(llvm::MemoryBufferRef bitcode,
                                    llvm::ArrayRef<std::string> entries,
                                    const TargetOptions &target, bool compile) {
  llvm::Expected<std::unique_ptr<llvm::TargetMachine>> machine =
      createTargetMachine(target);
  if (!machine)
    return machine.takeError();
  llvm::LLVMContext context;
  llvm::Expected<std::unique_ptr<llvm::Module>> module =
      llvm::parseBitcodeFile(bitcode, context);
  if (!module)
    return module.takeError();
  restrictTo(**module, entries);
  if (llvm::Error e = optimizeModule(**module, **machine))
    return e;
  if (compile)
    return emitCode(**module, **machine, CodeKind::Object);
  std::string optimized;
  llvm::raw_string_ostream os(optimized);
  llvm::WriteBitcodeToFile(**module, os);
  return optimized;
}

/// A module translated, prepared and split: one group (compile it as it
/// is) or several (`bitcode` holds the prepared module).
struct Split {
  std::unique_ptr<llvm::LLVMContext> context =
      std::make_unique<llvm::LLVMContext>();
  std::unique_ptr<llvm::Module> module;
  std::unique_ptr<llvm::TargetMachine> machine;
  std::vector<std::vector<std::string>> groups;
  std::string bitcode;
};

llvm::Expected<Split> translateAndSplit(mlir::ModuleOp module,
                                        llvm::StringRef model,
                                        llvm::ArrayRef<std::string> functions,
                                        const TargetOptions &target,
                                        unsigned parts, bool exportInitializers,
                                        CompileTimer *timer) {
  Split split;
  llvm::Expected<std::unique_ptr<llvm::TargetMachine>> machine =
      createTargetMachine(target);
  if (!machine)
    return machine.takeError();
  split.machine = std::move(*machine);
  {
    CompileTimer::Scope phase(timer, "translate");
    llvm::Expected<std::unique_ptr<llvm::Module>> translated =
        translateToLLVMIR(module, *split.context);
    if (!translated)
      return translated.takeError();
    split.module = std::move(*translated);
    if (llvm::Error e = prepareEntryPoints(*split.module, model, functions,
                                           exportInitializers))
      return e;
  }
  // Constructors (a CUDA model's kernel loading) would run once per part;
  // LLVM's --time-passes timers are not made for several threads.
  bool constructors = split.module->getNamedGlobal("llvm.global_ctors") ||
                      split.module->getNamedGlobal("llvm.global_dtors");
  if (llvm::TimePassesIsEnabled)
    parts = 1;
  CompileTimer::Scope phase(timer, "split");
  // @train, @eval and @predict outline the same loop nests (the forward
  // pass; @init's random fills): identical functions compiled once (71 of
  // the ConvNet's 248; 2.6% fewer instructions for its whole back end).
  // Before the split, so that the groups' sizes count it.
  llvm::MergeFunctionsPass::runOnModule(*split.module);
  if (parts > 1 && !constructors)
    split.groups = splitEntryPoints(*split.module, parts);
  if (split.groups.size() > 1) {
    llvm::raw_string_ostream os(split.bitcode);
    llvm::WriteBitcodeToFile(*split.module, os);
    split.module.reset();
  }
  return split;
}

/// runPart for every group, group 0 on this thread and each other on a
/// thread of its own; each thread's wall and CPU seconds as a task.
llvm::Expected<std::vector<std::string>>
runParts(const Split &split, llvm::StringRef model, const TargetOptions &target,
         bool compile, CompileTimer *timer) {
  size_t n = split.groups.size();
  llvm::MemoryBufferRef buffer(split.bitcode, model);
  std::vector<std::string> outputs(n), errors(n);
  std::vector<std::pair<double, double>> times(n);
  auto run = [&](size_t i) {
    double wall = CompileTimer::wallNow(), cpu = CompileTimer::threadCpuNow();
    llvm::Expected<std::string> output =
        runPart(buffer, split.groups[i], target, compile);
    if (output)
      outputs[i] = std::move(*output);
    else
      errors[i] = llvm::toString(output.takeError());
    times[i] = {CompileTimer::wallNow() - wall,
                CompileTimer::threadCpuNow() - cpu};
  };
  std::vector<std::thread> threads;
  for (size_t i = 1; i < n; ++i)
    threads.emplace_back(run, i);
  run(0);
  for (std::thread &thread : threads)
    thread.join();
  if (timer)
    for (size_t i = 0; i < n; ++i)
      timer->addTask("part " + std::to_string(i) + " (" +
                         llvm::join(split.groups[i], ",") + ")",
                     times[i].first, times[i].second);
  for (const std::string &message : errors)
    if (!message.empty())
      return error(message);
  return outputs;
}

/// compileModule's back end on one thread, for a module in one group.
llvm::Expected<std::string> compileWhole(llvm::Module &module,
                                         llvm::TargetMachine &machine,
                                         CodeKind kind, CompileTimer *timer) {
  {
    CompileTimer::Scope phase(timer, "optimize");
    if (llvm::Error e = optimizeModule(module, machine))
      return e;
  }
  CompileTimer::Scope phase(timer, "codegen");
  if (kind != CodeKind::LLVMIR)
    return emitCode(module, machine, kind);
  std::string text;
  llvm::raw_string_ostream os(text);
  module.print(os, nullptr);
  return text;
}

} // namespace

std::vector<std::vector<std::string>> splitEntryPoints(llvm::Module &module,
                                                       unsigned parts) {
  std::vector<const llvm::Function *> entries;
  for (const llvm::Function &f : module)
    if (!f.isDeclaration() && f.hasExternalLinkage())
      entries.push_back(&f);

  // What each entry point reaches; entry points that reach one another in
  // one cluster.
  std::vector<llvm::DenseSet<const llvm::GlobalValue *>> reach;
  llvm::EquivalenceClasses<size_t> clusters;
  for (size_t i = 0; i < entries.size(); ++i) {
    reach.push_back(reachable({entries[i]}));
    clusters.insert(i);
  }
  for (size_t i = 0; i < entries.size(); ++i)
    for (size_t j = 0; j < entries.size(); ++j)
      if (i != j && reach[i].contains(entries[j]))
        clusters.unionSets(i, j);
  // A part gets a copy of every internal global it reaches: a constant may
  // be copied, state may not (a CUDA model's loaded kernels: @init of the
  // kernels and every launch must see one handle). Entry points that reach
  // the same mutable global stay together.
  llvm::DenseMap<const llvm::GlobalValue *, size_t> firstUser;
  for (size_t i = 0; i < entries.size(); ++i)
    for (const llvm::GlobalValue *global : reach[i]) {
      auto *variable = llvm::dyn_cast<llvm::GlobalVariable>(global);
      if (!variable || variable->isConstant())
        continue;
      auto [it, added] = firstUser.try_emplace(variable, i);
      if (!added)
        clusters.unionSets(it->second, i);
    }

  struct Cluster {
    std::vector<size_t> members; // entry indices, in module order
    size_t weight = 0;
  };
  std::vector<Cluster> groups;
  llvm::DenseMap<size_t, size_t> groupOf; // leader -> index in groups
  for (size_t i = 0; i < entries.size(); ++i) {
    size_t leader = clusters.getLeaderValue(i);
    auto [it, added] = groupOf.try_emplace(leader, groups.size());
    if (added)
      groups.emplace_back();
    groups[it->second].members.push_back(i);
  }
  for (Cluster &group : groups) {
    llvm::DenseSet<const llvm::GlobalValue *> all;
    for (size_t i : group.members)
      all.insert(reach[i].begin(), reach[i].end());
    for (const llvm::GlobalValue *global : all)
      group.weight += instructionCount(global);
  }

  // Heaviest cluster first into the lightest part (a stable order: the
  // same module always splits the same way).
  std::vector<size_t> order(groups.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  llvm::stable_sort(order, [&](size_t a, size_t b) {
    return groups[a].weight > groups[b].weight;
  });
  size_t count = std::max<size_t>(1, std::min<size_t>(parts, groups.size()));
  std::vector<std::vector<size_t>> bins(count);
  std::vector<size_t> load(count, 0);
  for (size_t g : order) {
    size_t lightest = 0;
    for (size_t b = 1; b < count; ++b)
      if (load[b] < load[lightest])
        lightest = b;
    load[lightest] += groups[g].weight;
    for (size_t i : groups[g].members)
      bins[lightest].push_back(i);
  }
  for (std::vector<size_t> &bin : bins)
    llvm::sort(bin);
  llvm::sort(bins, [](const std::vector<size_t> &a,
                      const std::vector<size_t> &b) { return a < b; });
  std::vector<std::vector<std::string>> result;
  for (const std::vector<size_t> &bin : bins) {
    if (bin.empty())
      continue;
    result.emplace_back();
    for (size_t i : bin)
      result.back().push_back(entries[i]->getName().str());
  }
  return result;
}

llvm::Expected<std::vector<std::string>>
compileModuleInParts(mlir::ModuleOp module, llvm::StringRef model,
                     llvm::ArrayRef<std::string> functions,
                     const TargetOptions &target, unsigned parts,
                     bool exportInitializers, CompileTimer *timer) {
  llvm::Expected<Split> split = translateAndSplit(
      module, model, functions, target, parts, exportInitializers, timer);
  if (!split)
    return split.takeError();
  if (split->module) {
    llvm::Expected<std::string> object =
        compileWhole(*split->module, *split->machine, CodeKind::Object, timer);
    if (!object)
      return object.takeError();
    return std::vector<std::string>{std::move(*object)};
  }
  CompileTimer::Scope phase(timer, "optimize+codegen");
  return runParts(*split, model, target, /*compile=*/true, timer);
}

llvm::Expected<std::string>
compileModuleOnThreads(mlir::ModuleOp module, llvm::StringRef model,
                       llvm::ArrayRef<std::string> functions,
                       const TargetOptions &target, CodeKind kind,
                       unsigned threads, CompileTimer *timer) {
  llvm::Expected<Split> split =
      translateAndSplit(module, model, functions, target, threads,
                        /*exportInitializers=*/false, timer);
  if (!split)
    return split.takeError();
  if (split->module)
    return compileWhole(*split->module, *split->machine, kind, timer);
  llvm::Expected<std::vector<std::string>> parts = [&] {
    CompileTimer::Scope phase(timer, "optimize");
    return runParts(*split, model, target, /*compile=*/false, timer);
  }();
  if (!parts)
    return parts.takeError();
  // The optimized parts back in one module (a part's copies of the
  // internal functions it shares with another are renamed, not merged).
  std::unique_ptr<llvm::Module> linked;
  {
    CompileTimer::Scope phase(timer, "link");
    for (const std::string &part : *parts) {
      llvm::Expected<std::unique_ptr<llvm::Module>> parsed =
          llvm::parseBitcodeFile(llvm::MemoryBufferRef(part, model),
                                 *split->context);
      if (!parsed)
        return parsed.takeError();
      if (!linked) {
        linked = std::move(*parsed);
        continue;
      }
      if (llvm::Linker::linkModules(*linked, std::move(*parsed)))
        return error("@" + model + ": the optimized parts do not link");
    }
  }
  CompileTimer::Scope phase(timer, "codegen");
  if (kind != CodeKind::LLVMIR)
    return emitCode(*linked, *split->machine, kind);
  std::string text;
  llvm::raw_string_ostream os(text);
  linked->print(os, nullptr);
  return text;
}

llvm::Expected<unsigned> compileThreadCount(unsigned requested) {
  if (requested)
    return requested;
  if (const char *env = std::getenv("ESTC_COMPILE_THREADS"); env && *env) {
    char *end = nullptr;
    long n = std::strtol(env, &end, 10);
    if (*end != '\0' || n < 1 || n > 1024)
      return error(llvm::Twine("ESTC_COMPILE_THREADS=") + env +
                   ": not a thread count (1 to 1024)");
    return static_cast<unsigned>(n);
  }
  return std::max(1u, llvm::hardware_concurrency().compute_thread_count());
}

llvm::Expected<std::string>
archiveObjects(llvm::StringRef name, llvm::ArrayRef<std::string> objects) {
  std::vector<std::string> names;
  for (size_t i = 0; i < objects.size(); ++i)
    names.push_back(name.str() + "." + std::to_string(i) + ".o");
  std::vector<llvm::NewArchiveMember> members;
  for (size_t i = 0; i < objects.size(); ++i) {
    members.emplace_back(llvm::MemoryBufferRef(objects[i], names[i]));
    members.back().MemberName = names[i];
  }
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> archive =
      llvm::writeArchiveToBuffer(members, llvm::SymtabWritingMode::NormalSymtab,
                                 llvm::object::Archive::K_GNU,
                                 /*Deterministic=*/true, /*Thin=*/false);
  if (!archive)
    return archive.takeError();
  return (*archive)->getBuffer().str();
}

llvm::Expected<std::vector<std::string>>
unarchiveObjects(llvm::StringRef archive) {
  llvm::Expected<std::unique_ptr<llvm::object::Archive>> parsed =
      llvm::object::Archive::create(llvm::MemoryBufferRef(archive, "archive"));
  if (!parsed)
    return parsed.takeError();
  std::vector<std::string> objects;
  llvm::Error failure = llvm::Error::success();
  for (const llvm::object::Archive::Child &child :
       (*parsed)->children(failure)) {
    llvm::Expected<llvm::StringRef> data = child.getBuffer();
    if (!data) {
      llvm::consumeError(std::move(failure));
      return data.takeError();
    }
    objects.push_back(data->str());
  }
  if (failure)
    return failure;
  return objects;
}

} // namespace estc
