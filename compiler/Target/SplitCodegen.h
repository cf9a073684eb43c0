//===- SplitCodegen.h - The back end on several threads -------------------===//
//
// LLVM's optimizer and code generator run on one thread per module, and a
// model's functions (@train, @eval, @predict, @init, ...) are independent:
// each entry point and the internal functions it reaches (its loop nests,
// trampolines, kernel wrappers) can be optimized and compiled on its own.
// compileModuleInParts translates and prepares the module once (as
// compileModule does), splits its entry points into up to `parts` groups of
// about equal size, and compiles each group, with a copy of everything it
// reaches, in an LLVMContext of its own on its own thread: one object per
// group. Linked together (the JIT loads them side by side), they define
// the same entry points as compileModule's one object and compute the same
// results (the generated code of a function depends only on the functions
// it reaches).
//
//   LLVM-dialect module --translate, prepareEntryPoints--> llvm::Module
//     --MergeFunctions--> identical functions (the loop nests @train,
//                         @eval and @predict share) once
//     --splitEntryPoints--> groups of entry points, by instruction count
//     --bitcode--> one llvm::Module per group, in its own LLVMContext,
//                  other groups' entry points declared only
//     --optimizeModule, emitCode (a thread per group)--> objects
//
// compileModuleOnThreads (estc, exports: one object) optimizes the groups
// on their threads the same way, links them back into one module and
// emits it on one thread.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_COMPILER_TARGET_SPLITCODEGEN_H
#define ESTC_COMPILER_TARGET_SPLITCODEGEN_H

#include "compiler/Target/CompileTimer.h"
#include "compiler/Target/ObjectEmitter.h"

#include <string>
#include <vector>

namespace estc {

/// The external definitions of `module` (its entry points) in at most
/// `parts` groups, greedily balanced by the instructions each group
/// compiles: an entry point's own and those of every internal definition
/// it reaches (shared ones count in every group that reaches them). Entry
/// points that reach one another (`<f>_packed` calls `<f>`) or the same
/// mutable global (each group gets its own copy of what it reaches) stay
/// together.
/// Deterministic: groups ordered by their first entry point's position in
/// the module.
std::vector<std::vector<std::string>> splitEntryPoints(llvm::Module &module,
                                                       unsigned parts);

/// compileModule's back end (CodeKind::Object) on up to `parts` threads:
/// one object per group of splitEntryPoints. One group (a module with one
/// entry point, `parts` <= 1, or a module with constructors, as a CUDA
/// model's) is compiled on this thread, as compileModule does but for the
/// merged functions (compileModuleOnThreads gives the same object: the
/// JIT's and estc's agree). `timer`: the phases
/// translate, split and optimize+codegen (both phases at once, on several
/// threads; optimize and codegen with one group).
llvm::Expected<std::vector<std::string>>
compileModuleInParts(mlir::ModuleOp module, llvm::StringRef model,
                     llvm::ArrayRef<std::string> functions,
                     const TargetOptions &target, unsigned parts,
                     bool exportInitializers = false,
                     CompileTimer *timer = nullptr);

/// compileModule's output (one object, assembly or the optimized IR) with
/// the optimizer on up to `threads` threads: the groups of
/// splitEntryPoints optimized in parallel, linked back into one module,
/// then compiled on this thread (one object needs one code generator).
/// One group: compileModuleInParts's object. What `estc` and exports run.
/// `timer`: the phases translate, split, optimize (each thread a task),
/// link and codegen.
llvm::Expected<std::string>
compileModuleOnThreads(mlir::ModuleOp module, llvm::StringRef model,
                       llvm::ArrayRef<std::string> functions,
                       const TargetOptions &target, CodeKind kind,
                       unsigned threads, CompileTimer *timer = nullptr);

/// JitOptions::compileThreads-style thread counts: `requested`, else
/// $ESTC_COMPILE_THREADS (not a count from 1 to 1024: an error naming it),
/// else one per core this process may run on (its affinity mask: a process
/// pinned to one core compiles on one thread).
llvm::Expected<unsigned> compileThreadCount(unsigned requested);

/// Objects as one static library (members `<name>.<i>.o`), and back: how a
/// model compiled in parts is cached, and how `estc --emit=lib` ships it.
llvm::Expected<std::string> archiveObjects(llvm::StringRef name,
                                           llvm::ArrayRef<std::string> objects);
llvm::Expected<std::vector<std::string>>
unarchiveObjects(llvm::StringRef archive);

} // namespace estc

#endif // ESTC_COMPILER_TARGET_SPLITCODEGEN_H
