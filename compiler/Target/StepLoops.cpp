//===- StepLoops.cpp - Multi-step loops as compiled entry points ----------===//

#include "compiler/Target/StepLoops.h"
#include "compiler/Target/TargetError.h"

#include "llvm/IR/IRBuilder.h"

namespace estc {

using detail::error;

namespace {

/// MLIR's memref descriptor {allocated, aligned, offset, sizes[rank],
/// strides[rank]} (StridedMemRefType<T, rank>).
llvm::StructType *descriptorType(llvm::LLVMContext &context, int32_t rank) {
  llvm::Type *ptr = llvm::PointerType::getUnqual(context);
  llvm::Type *i64 = llvm::Type::getInt64Ty(context);
  if (rank == 0)
    return llvm::StructType::get(context, {ptr, ptr, i64});
  llvm::Type *dims = llvm::ArrayType::get(i64, static_cast<uint64_t>(rank));
  return llvm::StructType::get(context, {ptr, ptr, i64, dims, dims});
}

void buildLoop(llvm::Module &module, const StepLoop &loop,
               llvm::Function *step) {
  llvm::LLVMContext &context = module.getContext();
  llvm::Type *ptr = llvm::PointerType::getUnqual(context);
  llvm::Type *i64 = llvm::Type::getInt64Ty(context);
  llvm::Type *i8 = llvm::Type::getInt8Ty(context);
  auto *fnType = llvm::FunctionType::get(llvm::Type::getVoidTy(context),
                                         step->getFunctionType()->params(),
                                         /*isVarArg=*/false);
  llvm::Function *fn =
      llvm::Function::Create(fnType, llvm::GlobalValue::ExternalLinkage,
                             "_mlir_ciface_" + loop.name, module);
  llvm::BasicBlock *entry = llvm::BasicBlock::Create(context, "entry", fn);
  llvm::BasicBlock *body = llvm::BasicBlock::Create(context, "step", fn);
  llvm::BasicBlock *done = llvm::BasicBlock::Create(context, "done", fn);
  llvm::IRBuilder<> b(entry);
  size_t firstInput = 1 + static_cast<size_t>(loop.numVariables);
  size_t numInputs = loop.inputRanks.size();

  // One descriptor per input for the step, rewritten each step; the fixed
  // fields (sizes and strides after the steps dimension) once, here.
  std::vector<llvm::AllocaInst *> locals;
  std::vector<llvm::StructType *> stagedTypes, localTypes;
  for (size_t k = 0; k < numInputs; ++k) {
    int32_t rank = loop.inputRanks[k];
    stagedTypes.push_back(descriptorType(context, rank + 1));
    localTypes.push_back(descriptorType(context, rank));
    locals.push_back(b.CreateAlloca(localTypes.back()));
    llvm::Value *staged = fn->getArg(static_cast<unsigned>(firstInput + k));
    b.CreateStore(
        b.CreateLoad(ptr, b.CreateStructGEP(stagedTypes[k], staged, 0)),
        b.CreateStructGEP(localTypes[k], locals[k], 0));
    b.CreateStore(b.getInt64(0),
                  b.CreateStructGEP(localTypes[k], locals[k], 2));
    for (int32_t d = 0; d < rank; ++d)
      for (unsigned field : {3u, 4u}) {
        llvm::Value *from = b.CreateInBoundsGEP(
            stagedTypes[k], staged,
            {b.getInt32(0), b.getInt32(field), b.getInt32(d + 1)});
        llvm::Value *to = b.CreateInBoundsGEP(
            localTypes[k], locals[k],
            {b.getInt32(0), b.getInt32(field), b.getInt32(d)});
        b.CreateStore(b.CreateLoad(i64, from), to);
      }
  }
  llvm::Value *steps = b.CreateLoad(
      i64, b.CreateInBoundsGEP(stagedTypes[0], fn->getArg(firstInput),
                               {b.getInt32(0), b.getInt32(3), b.getInt32(0)}));
  // The status slot: arena.aligned + arena.offset + statusOffset.
  llvm::Value *status = nullptr;
  if (loop.statusOffset >= 0) {
    llvm::StructType *arenaType = descriptorType(context, 1);
    llvm::Value *arena = fn->getArg(0);
    llvm::Value *base =
        b.CreateLoad(ptr, b.CreateStructGEP(arenaType, arena, 1));
    llvm::Value *offset =
        b.CreateLoad(i64, b.CreateStructGEP(arenaType, arena, 2));
    status = b.CreateInBoundsGEP(
        i8, base, b.CreateAdd(offset, b.getInt64(loop.statusOffset)));
  }
  b.CreateCondBr(b.CreateICmpSGT(steps, b.getInt64(0)), body, done);

  b.SetInsertPoint(body);
  llvm::PHINode *i = b.CreatePHI(i64, 2, "i");
  i->addIncoming(b.getInt64(0), entry);
  std::vector<llvm::Value *> args;
  for (size_t a = 0; a < firstInput; ++a)
    args.push_back(fn->getArg(static_cast<unsigned>(a)));
  for (size_t k = 0; k < numInputs; ++k) {
    // Step i's block starts at element offset + i * stride 0.
    llvm::Value *staged = fn->getArg(static_cast<unsigned>(firstInput + k));
    llvm::Value *aligned =
        b.CreateLoad(ptr, b.CreateStructGEP(stagedTypes[k], staged, 1));
    llvm::Value *offset =
        b.CreateLoad(i64, b.CreateStructGEP(stagedTypes[k], staged, 2));
    llvm::Value *stride = b.CreateLoad(
        i64,
        b.CreateInBoundsGEP(stagedTypes[k], staged,
                            {b.getInt32(0), b.getInt32(4), b.getInt32(0)}));
    llvm::Value *element = b.CreateAdd(offset, b.CreateMul(i, stride));
    llvm::Value *bytes =
        b.CreateMul(element, b.getInt64(loop.inputElementBytes[k]));
    b.CreateStore(b.CreateInBoundsGEP(i8, aligned, bytes),
                  b.CreateStructGEP(localTypes[k], locals[k], 1));
    args.push_back(locals[k]);
  }
  for (unsigned a = static_cast<unsigned>(firstInput + numInputs);
       a < fn->arg_size(); ++a)
    args.push_back(fn->getArg(a));
  b.CreateCall(step, args);
  llvm::Value *next = b.CreateAdd(i, b.getInt64(1));
  llvm::BasicBlock *latch = b.GetInsertBlock();
  if (status) {
    // A failed check: record the step and stop.
    llvm::BasicBlock *failed = llvm::BasicBlock::Create(context, "failed", fn);
    llvm::BasicBlock *ok = llvm::BasicBlock::Create(context, "ok", fn);
    b.CreateCondBr(b.CreateICmpNE(b.CreateLoad(i64, status), b.getInt64(0)),
                   failed, ok);
    b.SetInsertPoint(failed);
    b.CreateStore(i, b.CreateInBoundsGEP(i64, status, b.getInt64(3)));
    b.CreateBr(done);
    b.SetInsertPoint(ok);
    latch = ok;
  }
  b.CreateCondBr(b.CreateICmpSLT(next, steps), body, done);
  i->addIncoming(next, latch);

  b.SetInsertPoint(done);
  b.CreateRetVoid();
}
} // namespace

std::vector<StepLoop> stepLoops(const Manifest &manifest) {
  std::vector<StepLoop> loops;
  for (const FunctionInfo &f : manifest.functions) {
    if (f.loopOf.empty())
      continue;
    StepLoop loop;
    loop.name = f.name;
    loop.step = f.loopOf;
    loop.numVariables = static_cast<int32_t>(manifest.variables.size());
    for (const TensorInfo &t : f.inputs) {
      // The staged input's rank, less its steps dimension.
      loop.inputRanks.push_back(static_cast<int32_t>(t.shape.size()) - 1);
      loop.inputElementBytes.push_back(
          static_cast<int64_t>(rt::dtypeBytes(t.dtype)));
    }
    loop.numOutputs = static_cast<int32_t>(f.outputs.size());
    loop.statusOffset = f.statusOffset;
    loops.push_back(std::move(loop));
  }
  return loops;
}

llvm::Error buildStepLoops(llvm::Module &module,
                           llvm::ArrayRef<StepLoop> loops) {
  for (const StepLoop &loop : loops) {
    llvm::Function *step = module.getFunction("_mlir_ciface_" + loop.step);
    if (!step || step->isDeclaration())
      return error("@" + loop.name + ": the step @" + loop.step +
                   " has no C interface entry point");
    size_t expected = 1 + static_cast<size_t>(loop.numVariables) +
                      loop.inputRanks.size() +
                      static_cast<size_t>(loop.numOutputs);
    if (step->arg_size() != expected || loop.inputRanks.empty())
      return error("@" + loop.name + ": the step @" + loop.step + " takes " +
                   std::to_string(step->arg_size()) +
                   " arguments; the manifest describes " +
                   std::to_string(expected));
    buildLoop(module, loop, step);
  }
  return llvm::Error::success();
}

} // namespace estc
