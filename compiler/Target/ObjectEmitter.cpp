//===- ObjectEmitter.cpp - LLVM dialect to native code --------------------===//

#include "compiler/Target/ObjectEmitter.h"
#include "compiler/Target/TargetError.h"

#include "compiler/Target/Manifest.h"
#include "compiler/Target/StepLoops.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Verifier.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Object/ArchiveWriter.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Passes/StandardInstrumentations.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Host.h"

#include <mutex>

namespace estc {

using detail::error;

namespace {

constexpr llvm::StringLiteral kCInterfacePrefix = "_mlir_ciface_";

/// LLVM's post-RA list scheduler ("Post RA top-down list latency
/// scheduler") runs for the CPU models that ask for it (AMD's Zen models
/// among them) and was 13% of a MobileNetV2 step's compile on a Zen host
/// with no measurable effect on the step (docs/results.md, "Compile time
/// of the MobileNetV2 step"): off, unless a tool's command line set
/// --post-RA-scheduler itself. The pass reads the option only when it was
/// given (its position), so it is given here as an occurrence.
void disablePostRAListScheduler() {
  auto options = llvm::cl::getRegisteredOptions();
  auto it = options.find("post-RA-scheduler");
  if (it == options.end() || it->second->getNumOccurrences() > 0)
    return;
  it->second->addOccurrence(/*pos=*/1, "post-RA-scheduler", "false");
}

void initializeNativeTarget() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
    disablePostRAListScheduler();
  });
}

std::string resolvedTriple(const TargetOptions &options) {
  return options.triple.empty() ? llvm::sys::getDefaultTargetTriple()
                                : options.triple;
}

std::string resolvedCPU(const TargetOptions &options) {
  return options.cpu == "native" ? llvm::sys::getHostCPUName().str()
                                 : options.cpu;
}

/// The CPU's features for "native" (all the host has), then --mattr.
std::string resolvedFeatures(const TargetOptions &options) {
  std::vector<std::string> features;
  if (options.cpu == "native") {
    llvm::StringMap<bool> host = llvm::sys::getHostCPUFeatures();
    for (const auto &feature : host)
      features.push_back((feature.second ? "+" : "-") + feature.first().str());
    llvm::sort(features); // StringMap order is not deterministic
  }
  llvm::SmallVector<llvm::StringRef> extra;
  llvm::StringRef(options.features).split(extra, ',', -1, false);
  for (llvm::StringRef f : extra)
    features.push_back(f.trim().str());
  return llvm::join(features, ",");
}

/// Drops the `est.name` / `est.variable` argument attributes of the entry
/// points. The translation warns about every attribute it does not know,
/// and each warning prints the whole function into its diagnostic: 0.1 s
/// of the ConvNet's compile, for warnings nobody sees.
void dropEstArgumentAttributes(mlir::ModuleOp module) {
  for (auto func : module.getOps<mlir::LLVM::LLVMFuncOp>()) {
    mlir::ArrayAttr all = func.getArgAttrsAttr();
    if (!all)
      continue;
    bool changed = false;
    llvm::SmallVector<mlir::Attribute> kept;
    for (mlir::Attribute attrs : all) {
      llvm::SmallVector<mlir::NamedAttribute> keep;
      for (mlir::NamedAttribute attr : llvm::cast<mlir::DictionaryAttr>(attrs))
        if (!attr.getName().strref().starts_with("est."))
          keep.push_back(attr);
      changed |= keep.size() != llvm::cast<mlir::DictionaryAttr>(attrs).size();
      kept.push_back(mlir::DictionaryAttr::get(module.getContext(), keep));
    }
    if (changed)
      func.setArgAttrsAttr(mlir::ArrayAttr::get(module.getContext(), kept));
  }
}

} // namespace

std::string TargetOptions::describe() const {
  std::string host = resolvedTriple(*this) + "/" + resolvedCPU(*this) + "/" +
                     resolvedFeatures(*this);
  if (device == Device::Cpu)
    return host;
  return host + "/" + deviceName(device).str() + "/" + gpuArch;
}

PipelineOptions TargetOptions::pipelineOptions() const {
  PipelineOptions options;
  options.device = device;
  options.gpuArch = gpuArch;
  options.cudaPath = cudaPath;
  return options;
}

llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
createTargetMachine(const TargetOptions &options) {
  if (options.device == Device::Cuda) {
    std::string problem = checkGpuArch(options.gpuArch);
    if (problem.empty())
      problem = checkCudaToolkit(options.cudaPath);
    if (!problem.empty())
      return error(problem);
  }
  initializeNativeTarget();
  llvm::Triple triple(resolvedTriple(options));
  std::string lookupError;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, lookupError);
  if (!target)
    return error("target triple '" + triple.str() +
                 "' is not supported by this build");
  // Check CPU and features on a plain subtarget first: LLVM only warns (on
  // stderr, twice) about unknown ones and goes on.
  std::string cpu = resolvedCPU(options);
  std::unique_ptr<llvm::MCSubtargetInfo> sti(
      target->createMCSubtargetInfo(triple, "", ""));
  if (!sti)
    return error("cannot create a code generator for " + triple.str());
  if (!sti->isCPUStringValid(cpu))
    return error("--mcpu=" + options.cpu + ": unknown CPU for " + triple.str() +
                 " (try --mcpu=native or e.g. x86-64-v3)");
  llvm::SmallVector<llvm::StringRef> features;
  llvm::StringRef(options.features).split(features, ',', -1, false);
  for (llvm::StringRef f : features) {
    llvm::StringRef name = f.trim();
    if (!name.consume_front("+") && !name.consume_front("-"))
      return error("--mattr=" + options.features + ": feature '" + f +
                   "' must start with '+' or '-'");
    bool known = llvm::any_of(
        sti->getAllProcessorFeatures(),
        [&](const llvm::SubtargetFeatureKV &kv) { return name == kv.Key; });
    if (!known)
      return error("--mattr=" + options.features + ": unknown feature '" +
                   name + "' for " + triple.str());
  }
  llvm::TargetOptions targetOptions;
  // A CUDA model's constructors (its kernels' loading) in .init_array, as
  // every current toolchain expects (LLVM's default is .ctors).
  targetOptions.UseInitArray = true;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, cpu, resolvedFeatures(options), targetOptions, llvm::Reloc::PIC_,
      std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (!machine)
    return error("cannot create a code generator for " + triple.str());
  return machine;
}

llvm::Expected<TargetDescription> describeTarget(const TargetOptions &options) {
  auto machine = createTargetMachine(options); // checks CPU and features
  if (!machine)
    return machine.takeError();
  const llvm::MCSubtargetInfo *sti = (*machine)->getMCSubtargetInfo();
  TargetDescription d;
  d.triple = resolvedTriple(options);
  d.cpu = resolvedCPU(options);
  // The machine's subtarget: the CPU's implied features plus the resolved
  // ones (all of the host's for "native").
  const llvm::MCSubtargetInfo &info = *sti;
  for (const llvm::SubtargetFeatureKV &kv : info.getAllProcessorFeatures())
    if (info.getFeatureBits().test(kv.Value))
      d.features.push_back(kv.Key);
  llvm::sort(d.features);
  return d;
}

llvm::Expected<std::unique_ptr<llvm::Module>>
translateToLLVMIR(mlir::ModuleOp module, llvm::LLVMContext &context) {
  mlir::registerBuiltinDialectTranslation(*module->getContext());
  mlir::registerLLVMDialectTranslation(*module->getContext());
  // A CUDA module's gpu.binary ops and launches (the kernels themselves
  // are already serialized).
  mlir::DialectRegistry gpuTranslations;
  mlir::registerGPUDialectTranslation(gpuTranslations);
  mlir::registerNVVMDialectTranslation(gpuTranslations);
  mlir::gpu::registerOffloadingLLVMTranslationInterfaceExternalModels(
      gpuTranslations);
  module->getContext()->appendDialectRegistry(gpuTranslations);
  dropEstArgumentAttributes(module);
  std::unique_ptr<llvm::Module> llvmModule =
      mlir::translateModuleToLLVMIR(module, context, "estc");
  if (!llvmModule)
    return error("the module is not in the LLVM dialect (translation to "
                 "LLVM IR failed)");
  // The multi-step loops its manifest lists (RunConfig::iterations_per_loop,
  // StepLoops.h), around their steps' C interfaces.
  if (auto json = module->getAttrOfType<mlir::StringAttr>("estc.manifest")) {
    llvm::Expected<Manifest> manifest = manifestFromJson(json.getValue());
    if (!manifest)
      return manifest.takeError();
    if (llvm::Error e = buildStepLoops(*llvmModule, stepLoops(*manifest)))
      return e;
  }
  return llvmModule;
}

std::vector<std::string> cInterfaceFunctions(llvm::Module &module) {
  std::vector<std::string> names;
  for (llvm::Function &f : module)
    if (!f.isDeclaration() && f.getName().starts_with(kCInterfacePrefix))
      names.push_back(f.getName().drop_front(kCInterfacePrefix.size()).str());
  return names;
}

std::string initializerSymbol(llvm::StringRef model) {
  return model.str() + "__estc_init";
}

std::string finalizerSymbol(llvm::StringRef model) {
  return model.str() + "__estc_fini";
}

namespace {
/// Replaces the constructor (or destructor) list `listName` by an external
/// function `symbol` calling its functions in priority order (none: an
/// empty function, so a loader can always call it).
void exportInitializerList(llvm::Module &module, llvm::StringRef listName,
                           const std::string &symbol) {
  llvm::GlobalVariable *list =
      module.getGlobalVariable(listName, /*AllowInternal=*/true);
  std::vector<std::pair<uint64_t, llvm::Function *>> calls;
  if (auto *array = list ? llvm::dyn_cast_or_null<llvm::ConstantArray>(
                               list->getInitializer())
                         : nullptr)
    for (llvm::Value *element : array->operands()) {
      auto *entry = llvm::dyn_cast<llvm::ConstantStruct>(element);
      if (!entry)
        continue;
      auto *priority = llvm::dyn_cast<llvm::ConstantInt>(entry->getOperand(0));
      auto *function = llvm::dyn_cast<llvm::Function>(entry->getOperand(1));
      if (priority && function)
        calls.emplace_back(priority->getZExtValue(), function);
    }
  llvm::stable_sort(
      calls, [](const auto &a, const auto &b) { return a.first < b.first; });
  llvm::LLVMContext &context = module.getContext();
  auto *type = llvm::FunctionType::get(llvm::Type::getVoidTy(context), false);
  llvm::Function *function = llvm::Function::Create(
      type, llvm::GlobalValue::ExternalLinkage, symbol, module);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(context, "entry", function));
  for (auto &call : calls)
    b.CreateCall(call.second);
  b.CreateRetVoid();
  if (list)
    list->eraseFromParent();
}
} // namespace

llvm::Error prepareEntryPoints(llvm::Module &module, llvm::StringRef model,
                               llvm::ArrayRef<std::string> functions,
                               bool exportInitializers) {
  std::vector<llvm::Function *> entries;
  for (const std::string &name : functions) {
    llvm::Function *f = module.getFunction((kCInterfacePrefix + name).str());
    if (!f || f->isDeclaration())
      return error("@" + name + ": no C interface entry point " +
                   kCInterfacePrefix + name + " (llvm.emit_c_interface)");
    for (llvm::Type *param : f->getFunctionType()->params())
      if (!param->isPointerTy())
        return error("@" + name +
                     ": C interface parameters must be memref descriptor "
                     "pointers");
    entries.push_back(f);
  }
  // Everything but the entry points becomes internal: the inliner can then
  // fold the C interface wrappers, and two models never clash. The
  // constructor lists (appending) stay what they are.
  for (llvm::Function &f : module)
    if (!f.isDeclaration() && !llvm::is_contained(entries, &f))
      f.setLinkage(llvm::GlobalValue::InternalLinkage);
  for (llvm::GlobalVariable &g : module.globals())
    if (!g.isDeclaration() && !g.hasAppendingLinkage())
      g.setLinkage(llvm::GlobalValue::InternalLinkage);
  if (exportInitializers) {
    exportInitializerList(module, "llvm.global_ctors",
                          initializerSymbol(model));
    exportInitializerList(module, "llvm.global_dtors", finalizerSymbol(model));
  }

  llvm::LLVMContext &context = module.getContext();
  llvm::Type *ptr = llvm::PointerType::getUnqual(context);
  for (size_t i = 0; i < entries.size(); ++i) {
    llvm::Function *f = entries[i];
    f->setName(entrySymbol(model, functions[i]));
    f->setLinkage(llvm::GlobalValue::ExternalLinkage);
    f->setVisibility(llvm::GlobalValue::DefaultVisibility);
    // void <Name>_<f>_packed(ptr %args): calls f(args[0], args[1], ...).
    auto *packedType =
        llvm::FunctionType::get(llvm::Type::getVoidTy(context), {ptr}, false);
    llvm::Function *packed =
        llvm::Function::Create(packedType, llvm::GlobalValue::ExternalLinkage,
                               packedEntrySymbol(model, functions[i]), module);
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(context, "entry", packed));
    llvm::SmallVector<llvm::Value *> args;
    for (unsigned a = 0; a < f->arg_size(); ++a) {
      llvm::Value *slot =
          b.CreateConstInBoundsGEP1_64(ptr, packed->getArg(0), a);
      args.push_back(b.CreateLoad(ptr, slot));
    }
    b.CreateCall(f, args);
    b.CreateRetVoid();
  }
  std::string verifyError;
  llvm::raw_string_ostream os(verifyError);
  if (llvm::verifyModule(module, &os))
    return error("invalid LLVM IR after entry point preparation: " +
                 llvm::StringRef(verifyError).split('\n').first);
  return llvm::Error::success();
}

llvm::Error optimizeModule(llvm::Module &module, llvm::TargetMachine &machine) {
  module.setDataLayout(machine.createDataLayout());
  module.setTargetTriple(machine.getTargetTriple());
  llvm::StringRef cpu = machine.getTargetCPU();
  llvm::StringRef features = machine.getTargetFeatureString();
  for (llvm::Function &f : module) {
    if (f.isDeclaration())
      continue;
    f.addFnAttr("target-cpu", cpu);
    if (!features.empty())
      f.addFnAttr("target-features", features);
  }

  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = true;
  tuning.SLPVectorization = true;
  tuning.LoopUnrolling = true;
  // LLVM's own instrumentation: --time-passes, --print-after-all, ... in
  // tools that parse LLVM's options (estc).
  llvm::PassInstrumentationCallbacks instrumentation;
  // CalledValuePropagation annotates indirect calls with their possible
  // callees; the generated code's only indirect calls are the thread
  // pool's trampolines, and on a large step the pass's lattice over every
  // value was 19% of MobileNetV2's compile (docs/results.md).
  instrumentation.registerShouldRunOptionalPassCallback(
      [](llvm::StringRef pass, llvm::Any) {
        return pass != "CalledValuePropagationPass";
      });
  llvm::StandardInstrumentations standard(module.getContext(),
                                          /*DebugLogging=*/false);
  standard.registerCallbacks(instrumentation, &mam);
  llvm::PassBuilder pb(&machine, tuning, std::nullopt, &instrumentation);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  // O2, not O3: the generated code is mostly calls into the runtime's
  // kernels and elementwise loops, which O2 vectorizes just the same (the
  // seed models' steps ran as fast); O3's extra unrolling, inlining and
  // loop unswitching only made the ConvNet's compile 15% slower.
  llvm::ModulePassManager mpm =
      pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2);
  mpm.run(module, mam);
  return llvm::Error::success();
}

llvm::Expected<std::string>
emitCode(llvm::Module &module, llvm::TargetMachine &machine, CodeKind kind) {
  llvm::SmallVector<char, 0> code;
  llvm::raw_svector_ostream os(code);
  llvm::legacy::PassManager pm;
  if (machine.addPassesToEmitFile(pm, os, nullptr,
                                  kind == CodeKind::Object
                                      ? llvm::CodeGenFileType::ObjectFile
                                      : llvm::CodeGenFileType::AssemblyFile))
    return error("the code generator cannot emit this file type");
  pm.run(module);
  return std::string(code.begin(), code.end());
}

llvm::Expected<std::string>
compileModule(mlir::ModuleOp module, llvm::StringRef model,
              llvm::ArrayRef<std::string> functions,
              const TargetOptions &target, CodeKind kind,
              bool exportInitializers, CompileTimer *timer) {
  llvm::Expected<std::unique_ptr<llvm::TargetMachine>> machine =
      createTargetMachine(target);
  if (!machine)
    return machine.takeError();
  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> llvmModule;
  {
    CompileTimer::Scope phase(timer, "translate");
    llvm::Expected<std::unique_ptr<llvm::Module>> translated =
        translateToLLVMIR(module, context);
    if (!translated)
      return translated.takeError();
    llvmModule = std::move(*translated);
    if (llvm::Error e = prepareEntryPoints(*llvmModule, model, functions,
                                           exportInitializers))
      return e;
  }
  {
    CompileTimer::Scope phase(timer, "optimize");
    if (llvm::Error e = optimizeModule(*llvmModule, **machine))
      return e;
  }
  if (kind == CodeKind::LLVMIR) {
    std::string text;
    llvm::raw_string_ostream os(text);
    llvmModule->print(os, nullptr);
    return text;
  }
  CompileTimer::Scope phase(timer, "codegen");
  return emitCode(*llvmModule, **machine, kind);
}

llvm::Expected<std::string> kernelAssembly(mlir::ModuleOp module) {
  std::string text;
  for (auto binary : module.getOps<mlir::gpu::BinaryOp>())
    for (mlir::Attribute attr : binary.getObjects()) {
      auto object = llvm::dyn_cast<mlir::gpu::ObjectAttr>(attr);
      if (!object ||
          object.getFormat() != mlir::gpu::CompilationTarget::Assembly)
        return error("gpu.binary @" + binary.getName() +
                     ": not PTX (lower with the gpu stage's format=isa)");
      text += "// gpu.binary @" + binary.getName().str() + "\n";
      text += object.getObject().getValue().str();
      if (!text.empty() && text.back() != '\n')
        text += "\n";
    }
  return text;
}

llvm::Expected<std::string> makeStaticLibrary(llvm::StringRef memberName,
                                              llvm::StringRef object) {
  std::vector<llvm::NewArchiveMember> members;
  members.emplace_back(llvm::MemoryBufferRef(object, memberName));
  members.back().MemberName = memberName;
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> archive =
      llvm::writeArchiveToBuffer(members, llvm::SymtabWritingMode::NormalSymtab,
                                 llvm::object::Archive::K_GNU,
                                 /*Deterministic=*/true, /*Thin=*/false);
  if (!archive)
    return archive.takeError();
  return (*archive)->getBuffer().str();
}

} // namespace estc
