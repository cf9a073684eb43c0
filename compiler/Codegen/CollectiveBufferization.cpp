//===- CollectiveBufferization.cpp - est collectives to runtime calls ----===//
//
// One-Shot Bufferize's model of est.all_reduce and est.all_gather: each
// becomes calls of the runtime's collectives (runtime/Collective.h) on
// buffers, so compiled code never depends on an engine.
//
//   est.all_reduce "mean" %x   in place in %x's buffer (bufferization
//                              copies first when %x is read afterwards):
//                              estc_all_reduce_mean_{f32,f64}(buf)
//   est.all_gather %ids, %rows two new buffers of replicas x rows (a size
//                              linear in the step's sizes, which memory
//                              planning places in the arena):
//                              estc_all_gather_i64(ids, out_ids),
//                              estc_all_gather_{f32,f64}(rows, out_rows, mean)
//
// and of a parameter-server worker's pulls and pushes
// (runtime/ParameterClient.h):
//
//   est.ps_pull_rows %ids      a new buffer of ids x width:
//                              estc_ps_pull_rows_f32(ids, rows, remote)
//                              (the rows arrive by the next wait)
//   est.ps_wait %rows...       in place: estc_ps_wait_rows()
//   est.ps_push %x             estc_ps_push_{f32,i64}(buf, input); no result
//
//===----------------------------------------------------------------------===//

#include "compiler/Codegen/CollectiveBufferization.h"
#include "compiler/Codegen/KernelCalls.h"

#include "dialects/Est/IR/EstOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::bufferization;

namespace {

StringRef suffix(Type element) { return element.isF64() ? "f64" : "f32"; }

func::CallOp callKernel(RewriterBase &rewriter, Operation *op, StringRef name,
                        ArrayRef<Value> buffers, ArrayRef<int64_t> ranks,
                        ArrayRef<int64_t> scalars) {
  Location loc = op->getLoc();
  auto module = op->getParentOfType<ModuleOp>();
  SmallVector<Value> args;
  SmallVector<Type> types;
  for (auto [buffer, rank] : llvm::zip(buffers, ranks)) {
    Value arg = est::kernels::asKernelArg(rewriter, loc, buffer, rank);
    args.push_back(arg);
    types.push_back(arg.getType());
  }
  for (int64_t s : scalars)
    args.push_back(arith::ConstantIntOp::create(rewriter, loc, s, 64));
  FlatSymbolRefAttr callee = est::kernels::declareKernel(
      module, name, types, static_cast<unsigned>(scalars.size()));
  return func::CallOp::create(rewriter, loc, callee, TypeRange(), args);
}

struct AllReduceModel
    : public BufferizableOpInterface::ExternalModel<AllReduceModel,
                                                    est::AllReduceOp> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return true;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const AnalysisState &) const {
    return true;
  }
  AliasingValueList getAliasingValues(Operation *op, OpOperand &,
                                      const AnalysisState &) const {
    return {{op->getResult(0), BufferRelation::Equivalent}};
  }
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto reduce = cast<est::AllReduceOp>(op);
    FailureOr<Value> buffer =
        getBuffer(rewriter, reduce.getX(), options, state);
    if (failed(buffer))
      return failure();
    Type element = cast<MemRefType>(buffer->getType()).getElementType();
    callKernel(rewriter, op, ("estc_all_reduce_mean_" + suffix(element)).str(),
               {*buffer}, {1}, {});
    replaceOpWithBufferizedValues(rewriter, op, *buffer);
    return success();
  }
};

struct AllGatherModel
    : public BufferizableOpInterface::ExternalModel<AllGatherModel,
                                                    est::AllGatherOp> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return true;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const AnalysisState &) const {
    return false;
  }
  AliasingValueList getAliasingValues(Operation *, OpOperand &,
                                      const AnalysisState &) const {
    return {};
  }
  bool bufferizesToAllocation(Operation *, Value) const { return true; }
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto gather = cast<est::AllGatherOp>(op);
    FailureOr<Value> ids =
        getBuffer(rewriter, gather.getIndices(), options, state);
    FailureOr<Value> rows =
        getBuffer(rewriter, gather.getRows(), options, state);
    if (failed(ids) || failed(rows))
      return failure();
    Location loc = op->getLoc();
    // replicas x this replica's rows.
    Value n = memref::DimOp::create(rewriter, loc, *ids, 0);
    Value replicas = arith::ConstantIndexOp::create(
        rewriter, loc, static_cast<int64_t>(gather.getReplicas()));
    Value capacity = arith::MulIOp::create(rewriter, loc, n, replicas);
    auto idsType =
        cast<RankedTensorType>(gather.getGatheredIndices().getType());
    auto rowsType = cast<RankedTensorType>(gather.getGatheredRows().getType());
    Value outIds = memref::AllocOp::create(
        rewriter, loc,
        MemRefType::get(idsType.getShape(), idsType.getElementType()),
        ValueRange{capacity});
    Value outRows = memref::AllocOp::create(
        rewriter, loc,
        MemRefType::get(rowsType.getShape(), rowsType.getElementType()),
        ValueRange{capacity});
    callKernel(rewriter, op, "estc_all_gather_i64", {*ids, outIds}, {1, 1}, {});
    callKernel(rewriter, op,
               ("estc_all_gather_" + suffix(rowsType.getElementType())).str(),
               {*rows, outRows}, {2, 2}, {gather.getMean() ? 1 : 0});
    replaceOpWithBufferizedValues(rewriter, op, {outIds, outRows});
    return success();
  }
};

struct PsPullRowsModel
    : public BufferizableOpInterface::ExternalModel<PsPullRowsModel,
                                                    est::PsPullRowsOp> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return true;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const AnalysisState &) const {
    return false;
  }
  AliasingValueList getAliasingValues(Operation *, OpOperand &,
                                      const AnalysisState &) const {
    return {};
  }
  bool bufferizesToAllocation(Operation *, Value) const { return true; }
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto pull = cast<est::PsPullRowsOp>(op);
    FailureOr<Value> ids = getBuffer(rewriter, pull.getIds(), options, state);
    if (failed(ids))
      return failure();
    Location loc = op->getLoc();
    auto rowsType = cast<RankedTensorType>(pull.getRows().getType());
    SmallVector<Value> dynamic;
    if (rowsType.isDynamicDim(0))
      dynamic.push_back(memref::DimOp::create(rewriter, loc, *ids, 0));
    Value rows = memref::AllocOp::create(
        rewriter, loc,
        MemRefType::get(rowsType.getShape(), rowsType.getElementType()),
        dynamic);
    callKernel(rewriter, op, "estc_ps_pull_rows_f32", {*ids, rows}, {1, 2},
               {pull.getRemoteAttr().getInt()});
    replaceOpWithBufferizedValues(rewriter, op, rows);
    return success();
  }
};

struct PsWaitModel
    : public BufferizableOpInterface::ExternalModel<PsWaitModel,
                                                    est::PsWaitOp> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return true;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const AnalysisState &) const {
    return true;
  }
  AliasingValueList getAliasingValues(Operation *op, OpOperand &operand,
                                      const AnalysisState &) const {
    return {{op->getResult(operand.getOperandNumber()),
             BufferRelation::Equivalent}};
  }
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto wait = cast<est::PsWaitOp>(op);
    SmallVector<Value> buffers;
    for (Value rows : wait.getRows()) {
      FailureOr<Value> buffer = getBuffer(rewriter, rows, options, state);
      if (failed(buffer))
        return failure();
      buffers.push_back(*buffer);
    }
    callKernel(rewriter, op, "estc_ps_wait_rows", {}, {}, {});
    replaceOpWithBufferizedValues(rewriter, op, buffers);
    return success();
  }
};

struct PsPushModel
    : public BufferizableOpInterface::ExternalModel<PsPushModel,
                                                    est::PsPushOp> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return true;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const AnalysisState &) const {
    return false;
  }
  AliasingValueList getAliasingValues(Operation *, OpOperand &,
                                      const AnalysisState &) const {
    return {};
  }
  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto push = cast<est::PsPushOp>(op);
    FailureOr<Value> buffer =
        getBuffer(rewriter, push.getValue(), options, state);
    if (failed(buffer))
      return failure();
    Type element = cast<MemRefType>(buffer->getType()).getElementType();
    callKernel(rewriter, op,
               element.isInteger(64) ? "estc_ps_push_i64" : "estc_ps_push_f32",
               {*buffer}, {1}, {push.getInputAttr().getInt()});
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void mlir::est::registerCollectiveBufferization(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, est::EstDialect *) {
    est::AllReduceOp::attachInterface<AllReduceModel>(*ctx);
    est::AllGatherOp::attachInterface<AllGatherModel>(*ctx);
    est::PsPullRowsOp::attachInterface<PsPullRowsModel>(*ctx);
    est::PsWaitOp::attachInterface<PsWaitModel>(*ctx);
    est::PsPushOp::attachInterface<PsPushModel>(*ctx);
  });
}
