//===- FunctionAbi.cpp - est-function-abi ---------------------------------===//
//
// Turns the module's state and the functions' tensor signatures into the
// buffer ABI of docs/design/codegen-abi.md:
//
//   func @f(%arena: memref<?xi8>, <every variable>, <inputs>, <outputs>)
//
// Variables become SSA values threaded through the body: a read is the
// current value, an assignment replaces it, and the last value is written
// back at the end. Bufferization then decides what can be updated in place.
//
//===----------------------------------------------------------------------===//

#include "compiler/Codegen/Passes.h"

#include "dialects/Est/IR/EstDialect.h"
#include "dialects/Est/IR/EstOps.h"

#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"

namespace mlir {
namespace est {
#define GEN_PASS_DEF_ESTFUNCTIONABI
#include "compiler/Codegen/Passes.h.inc"
} // namespace est
} // namespace mlir

using namespace mlir;

namespace {

struct VariableInfo {
  StringRef name;
  RankedTensorType type;
  bool trainable;
};

/// The buffer type of a tensor at the ABI: same shape, i1 stored as i8.
MemRefType bufferTypeFor(RankedTensorType type) {
  Type element = type.getElementType();
  if (element.isInteger(1))
    element = IntegerType::get(type.getContext(), 8);
  return MemRefType::get(type.getShape(), element);
}

/// An elementwise conversion of `value` to element type `to` (i8 <-> i1).
Value convertElements(OpBuilder &b, Location loc, Value value, Type to) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getElementType() == to)
    return value;
  SmallVector<Value> dynamicSizes;
  for (auto [i, size] : llvm::enumerate(type.getShape()))
    if (ShapedType::isDynamic(size))
      dynamicSizes.push_back(tensor::DimOp::create(b, loc, value, i));
  auto resultType = RankedTensorType::get(type.getShape(), to);
  Value init = tensor::EmptyOp::create(b, loc, resultType, dynamicSizes);
  AffineMap identity = b.getMultiDimIdentityMap(type.getRank());
  SmallVector<utils::IteratorType> iterators(type.getRank(),
                                             utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, resultType, value, init, ArrayRef<AffineMap>{identity, identity},
      iterators, [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value converted =
            to.getIntOrFloatBitWidth() <
                    args[0].getType().getIntOrFloatBitWidth()
                ? arith::TruncIOp::create(nb, nloc, to, args[0]).getResult()
                : arith::ExtUIOp::create(nb, nloc, to, args[0]).getResult();
        linalg::YieldOp::create(nb, nloc, converted);
      });
  return generic.getResult(0);
}

/// The tensor view of ABI buffer `memref` as a value of `tensorType`.
Value tensorOf(OpBuilder &b, Location loc, Value memref,
               RankedTensorType tensorType, bool writable) {
  auto memrefType = cast<MemRefType>(memref.getType());
  auto viewType =
      RankedTensorType::get(memrefType.getShape(), memrefType.getElementType());
  Value view = bufferization::ToTensorOp::create(b, loc, viewType, memref,
                                                 /*restrict=*/true, writable);
  return convertElements(b, loc, view, tensorType.getElementType());
}

/// Writes `value` into ABI buffer `memref`.
void writeTo(OpBuilder &b, Location loc, Value value, Value memref,
             bool restrict) {
  auto memrefType = cast<MemRefType>(memref.getType());
  value = convertElements(b, loc, value, memrefType.getElementType());
  bufferization::MaterializeInDestinationOp::create(
      b, loc, /*result=*/Type(), value, memref,
      restrict ? b.getUnitAttr() : UnitAttr(), b.getUnitAttr());
}

/// Lets `value`, the last value of an assigned variable, be computed in the
/// variable's own buffer: when a linalg op writes every element of it without
/// reading its init (an optimizer update, Adam's m = b1 m + (1-b1) g; the
/// fill of a constant initializer), that init becomes `view`, the variable's
/// buffer. One-shot bufferization
/// then updates the buffer in place, or allocates as before where a later
/// read of the old value forbids it. Without this the update goes to a
/// temporary, copied into the variable at the end.
void computeInVariableBuffer(Value value, Value view) {
  auto result = dyn_cast<OpResult>(value);
  auto linalgOp = result ? dyn_cast<linalg::LinalgOp>(result.getOwner())
                         : linalg::LinalgOp();
  if (!linalgOp || !view.getDefiningOp<bufferization::ToTensorOp>() ||
      view.getType() != value.getType())
    return;
  OpOperand *init = linalgOp.getDpsInitOperand(result.getResultNumber());
  if (!init->get().getDefiningOp<tensor::EmptyOp>() ||
      linalgOp.payloadUsesValueFromOperand(init) ||
      !linalgOp.getMatchingIndexingMap(init).isPermutation())
    return;
  init->set(view);
}

/// Gives every use of a `tensor.empty` or tensor `linalg.fill` its own copy.
/// CSE merges identical ones (e.g. the zero init of every reduction of one
/// shape). Empty tensor elimination would then compute several results in
/// one `restrict` output buffer, where one-shot bufferization cannot see the
/// aliasing: a function returning two such reductions returned one value
/// twice.
void unshareDestinations(func::FuncOp func) {
  SmallVector<Operation *> ops;
  func.walk([&](Operation *op) {
    if (isa<tensor::EmptyOp>(op) ||
        (isa<linalg::FillOp>(op) && op->getNumResults() == 1))
      ops.push_back(op);
  });
  // Fills before the empties they fill, so that copies of a fill make its
  // empty shared, then unshared in turn.
  for (Operation *op : llvm::reverse(ops)) {
    SmallVector<OpOperand *> uses;
    for (OpOperand &use : op->getResult(0).getUses())
      uses.push_back(&use);
    OpBuilder b(op);
    for (size_t i = 1; i < uses.size(); ++i)
      uses[i]->set(b.clone(*op)->getResult(0));
  }
}

struct EstFunctionAbi
    : public mlir::est::impl::EstFunctionAbiBase<EstFunctionAbi> {
  void runOnOperation() override;
  LogicalResult rewrite(func::FuncOp func, ArrayRef<VariableInfo> variables);
};

LogicalResult EstFunctionAbi::rewrite(func::FuncOp func,
                                      ArrayRef<VariableInfo> variables) {
  MLIRContext *ctx = func.getContext();
  if (!func.getBody().hasOneBlock())
    return func.emitError("est-function-abi: function '")
           << func.getSymName() << "' must have a single block";
  Block &body = func.getBody().front();
  auto returnOp = dyn_cast<func::ReturnOp>(body.getTerminator());
  if (!returnOp)
    return func.emitError("est-function-abi: function '")
           << func.getSymName() << "' must end with func.return";

  FunctionType oldType = func.getFunctionType();
  auto checkTensor = [&](Type type, StringRef what,
                         unsigned index) -> FailureOr<RankedTensorType> {
    if (auto tensor = dyn_cast<RankedTensorType>(type))
      return tensor;
    return func.emitError("est-function-abi: ")
           << what << " #" << index << " of '" << func.getSymName()
           << "' is not a ranked tensor: " << type;
  };
  SmallVector<RankedTensorType> inputs, results;
  for (auto [i, type] : llvm::enumerate(oldType.getInputs())) {
    FailureOr<RankedTensorType> tensor = checkTensor(type, "argument", i);
    if (failed(tensor))
      return failure();
    inputs.push_back(*tensor);
  }
  for (auto [i, type] : llvm::enumerate(oldType.getResults())) {
    FailureOr<RankedTensorType> tensor = checkTensor(type, "result", i);
    if (failed(tensor))
      return failure();
    results.push_back(*tensor);
  }

  // Which variables this function assigns (their buffers are writable).
  llvm::DenseMap<StringRef, unsigned> variableIndex;
  for (auto [i, variable] : llvm::enumerate(variables))
    variableIndex[variable.name] = i;
  llvm::SmallDenseSet<unsigned> assigned;
  WalkResult walk = func.walk([&](Operation *op) -> WalkResult {
    StringRef name;
    if (auto read = dyn_cast<est::ReadVariableOp>(op))
      name = read.getVariable();
    else if (auto assign = dyn_cast<est::AssignVariableOp>(op))
      name = assign.getVariable();
    else if (isa<est::MinimizeOp>(op))
      return op->emitError("est-function-abi: est.minimize must be expanded "
                           "before code generation");
    else
      return WalkResult::advance();
    auto it = variableIndex.find(name);
    if (it == variableIndex.end())
      return op->emitError("est-function-abi: unknown variable '")
             << name << "'";
    if (isa<est::AssignVariableOp>(op)) {
      if (op->getBlock() != &body)
        return op->emitError("est-function-abi: est.assign_variable inside a "
                             "region is not supported");
      assigned.insert(it->second);
    }
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();

  // The new signature and its argument attributes.
  SmallVector<Type> argTypes;
  SmallVector<Attribute> argAttrs;
  auto named = [&](StringRef name, ArrayRef<NamedAttribute> extra = {}) {
    SmallVector<NamedAttribute> attrs(extra.begin(), extra.end());
    attrs.push_back(NamedAttribute(StringAttr::get(ctx, "est.name"),
                                   StringAttr::get(ctx, name)));
    return DictionaryAttr::get(ctx, attrs);
  };
  argTypes.push_back(
      MemRefType::get({ShapedType::kDynamic}, IntegerType::get(ctx, 8)));
  argAttrs.push_back(named("arena"));
  for (const VariableInfo &variable : variables) {
    argTypes.push_back(bufferTypeFor(variable.type));
    argAttrs.push_back(named(
        variable.name, {NamedAttribute(StringAttr::get(ctx, "est.variable"),
                                       UnitAttr::get(ctx))}));
  }
  for (auto [i, type] : llvm::enumerate(inputs)) {
    argTypes.push_back(bufferTypeFor(type));
    argAttrs.push_back(func.getArgAttrDict(i) ? func.getArgAttrDict(i)
                                              : DictionaryAttr::get(ctx));
  }
  for (auto [i, type] : llvm::enumerate(results)) {
    argTypes.push_back(bufferTypeFor(type));
    SmallVector<NamedAttribute> attrs;
    if (DictionaryAttr dict = func.getResultAttrDict(i))
      attrs.append(dict.begin(), dict.end());
    attrs.push_back(
        NamedAttribute(StringAttr::get(ctx, "est.output"), UnitAttr::get(ctx)));
    argAttrs.push_back(DictionaryAttr::get(ctx, attrs));
  }

  // New block arguments; the old tensor arguments become views of the
  // input buffers.
  unsigned numOld = body.getNumArguments();
  Location loc = func.getLoc();
  SmallVector<Value> newArgs;
  for (Type type : argTypes)
    newArgs.push_back(body.addArgument(type, loc));
  unsigned firstVariable = 1, firstInput = 1 + variables.size(),
           firstOutput = firstInput + inputs.size();

  OpBuilder b = OpBuilder::atBlockBegin(&body);
  for (unsigned i = 0; i < numOld; ++i) {
    Value view = tensorOf(b, loc, newArgs[firstInput + i], inputs[i],
                          /*writable=*/false);
    body.getArgument(i).replaceAllUsesWith(view);
  }

  // Thread each variable's current value through the body, in order.
  llvm::DenseMap<unsigned, Value> initial, current;
  auto currentValue = [&](unsigned index) {
    auto it = current.find(index);
    if (it != current.end())
      return it->second;
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&body);
    Value value = tensorOf(b, loc, newArgs[firstVariable + index],
                           variables[index].type, assigned.contains(index));
    initial[index] = current[index] = value;
    return value;
  };
  SmallVector<Operation *> stateOps;
  func.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (auto read = dyn_cast<est::ReadVariableOp>(op)) {
      Value value = currentValue(variableIndex[read.getVariable()]);
      read.getResult().replaceAllUsesWith(value);
      stateOps.push_back(op);
    } else if (auto assign = dyn_cast<est::AssignVariableOp>(op)) {
      unsigned index = variableIndex[assign.getVariable()];
      (void)currentValue(index);
      current[index] = assign.getValue();
      stateOps.push_back(op);
    }
  });
  for (Operation *op : stateOps)
    op->erase();

  // Results into the output buffers, then the variables' last values.
  b.setInsertionPoint(returnOp);
  for (auto [i, value] : llvm::enumerate(returnOp.getOperands()))
    writeTo(b, returnOp.getLoc(), value, newArgs[firstOutput + i],
            /*restrict=*/true);
  llvm::SmallDenseMap<Value, unsigned> initialOf;
  for (auto [index, value] : initial)
    initialOf[value] = index;
  SmallVector<unsigned> assignedInOrder(assigned.begin(), assigned.end());
  llvm::sort(assignedInOrder);
  for (unsigned index : assignedInOrder) {
    Value value = current[index];
    if (value == initial[index])
      continue; // Assigned its own value: nothing to write.
    // The unmodified value of another assigned variable: its buffer may be
    // overwritten by that variable's write-back first, so copy it now.
    auto source = initialOf.find(value);
    if (source != initialOf.end() && assigned.contains(source->second)) {
      auto type = cast<RankedTensorType>(value.getType());
      value = bufferization::AllocTensorOp::create(b, returnOp.getLoc(), type,
                                                   ValueRange(), value);
    } else {
      computeInVariableBuffer(value, initial[index]);
    }
    writeTo(b, returnOp.getLoc(), value, newArgs[firstVariable + index],
            /*restrict=*/false);
  }
  func::ReturnOp::create(b, returnOp.getLoc());
  returnOp.erase();

  body.eraseArguments(0, numOld);
  func.setFunctionType(FunctionType::get(ctx, argTypes, {}));
  func.setAllArgAttrs(argAttrs);
  func.setAllResultAttrs(ArrayRef<DictionaryAttr>{});
  func->setAttr("llvm.emit_c_interface", UnitAttr::get(ctx));
  return success();
}

void EstFunctionAbi::runOnOperation() {
  ModuleOp module = getOperation();
  MLIRContext *ctx = module.getContext();
  SmallVector<VariableInfo> variables;
  SmallVector<Attribute> records;
  SmallVector<est::VariableOp> variableOps;
  for (auto variable : module.getOps<est::VariableOp>()) {
    variables.push_back(
        {variable.getSymName(), variable.getType(), variable.getTrainable()});
    variableOps.push_back(variable);
    records.push_back(DictionaryAttr::get(
        ctx, {NamedAttribute(StringAttr::get(ctx, "name"),
                             variable.getSymNameAttr()),
              NamedAttribute(StringAttr::get(ctx, "type"),
                             TypeAttr::get(variable.getType())),
              NamedAttribute(StringAttr::get(ctx, "trainable"),
                             BoolAttr::get(ctx, variable.getTrainable())),
              NamedAttribute(StringAttr::get(ctx, "local"),
                             BoolAttr::get(ctx, variable.getLocal()))}));
  }

  for (auto func : llvm::to_vector(module.getOps<func::FuncOp>())) {
    if (func.isExternal())
      continue;
    if (failed(rewrite(func, variables)))
      return signalPassFailure();
    unshareDestinations(func);
  }
  for (est::VariableOp variable : variableOps)
    variable.erase();
  module->setAttr("estc.variables", ArrayAttr::get(ctx, records));
}

} // namespace
