//===- LowerParallelCalls.cpp - est-lower-parallel-calls ------------------===//
//
// In the LLVM dialect, after the func-to-llvm conversion: a call of a marker
// made by est-parallelize-loops (a declaration with `estc.parallel_body =
// @body`), whose operands are (n, cost, captures...) with every memref
// descriptor already expanded into its fields, becomes
//
//   ctx = the captures stored in a stack struct (one per call site, in the
//         function's entry block)
//   estc_parallel_for(@body_trampoline, ctx, n, cost)
//
// with `void body_trampoline(ptr ctx, i64 lo, i64 hi)` loading the captures
// and calling `body(lo, hi, captures...)`. The runtime entry has the fixed C
// signature of runtime/cpu/Kernels.h whatever the loop captures.
//
//===----------------------------------------------------------------------===//

#include "compiler/Codegen/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir {
namespace est {
#define GEN_PASS_DEF_ESTLOWERPARALLELCALLS
#include "compiler/Codegen/Passes.h.inc"
} // namespace est
} // namespace mlir

using namespace mlir;

namespace {

constexpr llvm::StringLiteral kBodyAttr = "estc.parallel_body";
constexpr llvm::StringLiteral kRuntimeEntry = "estc_parallel_for";

struct EstLowerParallelCalls
    : public mlir::est::impl::EstLowerParallelCallsBase<EstLowerParallelCalls> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<LLVM::LLVMFuncOp> markers;
    for (auto func : module.getOps<LLVM::LLVMFuncOp>())
      if (func->hasAttr(kBodyAttr))
        markers.push_back(func);
    if (markers.empty())
      return;

    MLIRContext *ctx = module.getContext();
    OpBuilder b(ctx);
    Type ptr = LLVM::LLVMPointerType::get(ctx);
    Type i64 = IntegerType::get(ctx, 64);
    Type voidType = LLVM::LLVMVoidType::get(ctx);
    auto runtime = symbols.lookup<LLVM::LLVMFuncOp>(kRuntimeEntry);
    if (!runtime) {
      b.setInsertionPointToStart(module.getBody());
      runtime = LLVM::LLVMFuncOp::create(
          b, module.getLoc(), kRuntimeEntry,
          LLVM::LLVMFunctionType::get(voidType, {ptr, ptr, i64, i64}));
      symbols.insert(runtime);
    }

    // Every use of every marker in one walk of the module (a walk per
    // marker made the pass quadratic: a second of the ConvNet's compile).
    DenseMap<StringAttr, SmallVector<Operation *>> uses;
    for (LLVM::LLVMFuncOp marker : markers)
      uses[marker.getSymNameAttr()];
    if (std::optional<SymbolTable::UseRange> all =
            SymbolTable::getSymbolUses(&module.getBodyRegion()))
      for (const SymbolTable::SymbolUse &use : *all) {
        auto it = uses.find(use.getSymbolRef().getRootReference());
        if (it != uses.end())
          it->second.push_back(use.getUser());
      }

    for (LLVM::LLVMFuncOp marker : markers) {
      if (failed(lowerMarker(marker, uses[marker.getSymNameAttr()], runtime,
                             symbols)))
        return signalPassFailure();
      marker.erase();
    }
  }

  LogicalResult lowerMarker(LLVM::LLVMFuncOp marker,
                            ArrayRef<Operation *> users,
                            LLVM::LLVMFuncOp runtime, SymbolTable &symbols) {
    MLIRContext *ctx = marker.getContext();
    Type ptr = LLVM::LLVMPointerType::get(ctx);
    Type i64 = IntegerType::get(ctx, 64);
    auto bodyRef = dyn_cast<FlatSymbolRefAttr>(marker->getAttr(kBodyAttr));
    auto body = bodyRef ? symbols.lookup<LLVM::LLVMFuncOp>(bodyRef.getValue())
                        : LLVM::LLVMFuncOp();
    if (!body || body.isExternal())
      return marker.emitError("est-lower-parallel-calls: ")
             << kBodyAttr << " of @" << marker.getName()
             << " must name a function defined in the module";
    LLVM::LLVMFunctionType markerType = marker.getFunctionType();
    LLVM::LLVMFunctionType bodyType = body.getFunctionType();
    ArrayRef<Type> params = markerType.getParams();
    if (params.size() < 2 || params[0] != i64 || params[1] != i64 ||
        bodyType.getParams() != params ||
        !isa<LLVM::LLVMVoidType>(bodyType.getReturnType()))
      return marker.emitError("est-lower-parallel-calls: @")
             << marker.getName() << " and @" << body.getName()
             << " must both take (i64, i64, captures...) and return nothing";
    ArrayRef<Type> captureTypes = params.drop_front(2);
    auto ctxType = LLVM::LLVMStructType::getLiteral(ctx, captureTypes);

    // void <body>_trampoline(ptr ctx, i64 lo, i64 hi).
    OpBuilder b(ctx);
    b.setInsertionPointAfter(body);
    auto trampoline = LLVM::LLVMFuncOp::create(
        b, body.getLoc(), (body.getName() + "_trampoline").str(),
        LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx),
                                    {ptr, i64, i64}),
        LLVM::Linkage::Internal);
    symbols.insert(trampoline);
    {
      Block *entry = trampoline.addEntryBlock(b);
      b.setInsertionPointToStart(entry);
      SmallVector<Value> args = {entry->getArgument(1), entry->getArgument(2)};
      for (auto [i, type] : llvm::enumerate(captureTypes)) {
        Value field = LLVM::GEPOp::create(
            b, body.getLoc(), ptr, ctxType, entry->getArgument(0),
            ArrayRef<LLVM::GEPArg>{0, int32_t(i)});
        args.push_back(LLVM::LoadOp::create(b, body.getLoc(), type, field));
      }
      LLVM::CallOp::create(b, body.getLoc(), body, args);
      LLVM::ReturnOp::create(b, body.getLoc(), ValueRange{});
    }

    for (Operation *user : users) {
      auto call = dyn_cast<LLVM::CallOp>(user);
      if (!call)
        return user->emitError("est-lower-parallel-calls: @")
               << marker.getName() << " may only be called";
      auto caller = call->getParentOfType<LLVM::LLVMFuncOp>();
      Location loc = call.getLoc();
      b.setInsertionPointToStart(&caller.getBody().front());
      Value one = LLVM::ConstantOp::create(b, loc, i64, b.getI64IntegerAttr(1));
      Value context = LLVM::AllocaOp::create(b, loc, ptr, ctxType, one);
      b.setInsertionPoint(call);
      for (auto [i, value] :
           llvm::enumerate(call.getArgOperands().drop_front(2))) {
        Value field =
            LLVM::GEPOp::create(b, loc, ptr, ctxType, context,
                                ArrayRef<LLVM::GEPArg>{0, int32_t(i)});
        LLVM::StoreOp::create(b, loc, value, field);
      }
      Value fn = LLVM::AddressOfOp::create(b, loc, trampoline);
      LLVM::CallOp::create(b, loc, runtime,
                           ValueRange{fn, context, call.getArgOperands()[0],
                                      call.getArgOperands()[1]});
      call.erase();
    }
    return success();
  }
};

} // namespace
