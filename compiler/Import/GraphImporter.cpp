//===- GraphImporter.cpp - Model graph (GraphDef) to `est` MLIR ---------===//

#include "compiler/Import/GraphImporter.h"

#include "dialects/Est/IR/EstDialect.h"
#include "dialects/Est/IR/EstOps.h"
#include "lib/Graph/Topology.h"
#include "lib/Shape/ShapeFunctions.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace mlir;

namespace estc {
namespace g = ::estc::graph;

void registerImportDialects(DialectRegistry &registry) {
  registry.insert<est::EstDialect, func::FuncDialect>();
}

namespace {

constexpr llvm::StringLiteral kPlaceholderOp = "placeholder";
// A control-flow node's result (attr `index`); graph.proto FunctionDef.
constexpr llvm::StringLiteral kOutputOp = "output";
bool isControlFlowOp(const std::string &op) {
  return op == "scan" || op == "if" || op == "while";
}

constexpr llvm::StringLiteral kValuesDimAttr = "est.values_dim";
constexpr llvm::StringLiteral kSequenceDimAttr = "est.sequence_dim";
constexpr llvm::StringLiteral kMaxSequenceLengthAttr =
    "est.max_sequence_length";
constexpr llvm::StringLiteral kSequenceDimsAttr = "est.sequence_dims";
// tf.group: a graph-only node naming effects (train ops, assignments, other
// groups); a signature's train_op or metric update that is a group stands
// for its inputs, recursively.
constexpr llvm::StringLiteral kGroupOp = "group";
constexpr llvm::StringLiteral kNameAttr = "est.name";
// Attributes whose strings name variables (symbol references in MLIR).
constexpr llvm::StringLiteral kVariableAttr = "variable";
constexpr llvm::StringLiteral kVarListAttr = "var_list";
constexpr llvm::StringLiteral kVariablesAttr = "variables";
// Prefix of the NameLoc names given to variables (nodes use their own name).
constexpr llvm::StringLiteral kVariableLocPrefix = "@";

const char *const kModes[] = {"train", "eval", "predict"};

/// Splits "node:0" into ("node", 0); a plain "node" is output 0.
std::pair<std::string, int64_t> parseInputName(const std::string &input) {
  auto colon = input.rfind(':');
  if (colon == std::string::npos || colon + 1 == input.size())
    return {input, 0};
  std::string index = input.substr(colon + 1);
  if (!std::all_of(index.begin(), index.end(), ::isdigit))
    return {input, 0};
  return {input.substr(0, colon), std::stoll(index)};
}

std::string dtypeName(g::DataType dtype) { return g::DataType_Name(dtype); }

class Importer {
public:
  Importer(const g::GraphDef &graph, MLIRContext &context,
           const std::string &fileName)
      : graph_(graph), context_(context), fileName_(fileName),
        builder_(&context) {}

  OwningOpRef<ModuleOp> run();
  const std::string &error() const { return error_; }

private:
  // --- Error reporting ---------------------------------------------------
  LogicalResult fail(const std::string &message) {
    if (error_.empty())
      error_ = fileName_ + ": " + message;
    return failure();
  }
  LogicalResult failNode(const g::NodeDef &node, const std::string &message) {
    return fail("node '" + node.name() + "' (" + node.op() + "): " + message);
  }

  // --- Locations and types -----------------------------------------------
  Location fileLoc() { return FileLineColLoc::get(&context_, fileName_, 0, 0); }
  Location nodeLoc(const std::string &name) {
    return NameLoc::get(StringAttr::get(&context_, name), fileLoc());
  }
  FailureOr<Type> elementType(g::DataType dtype);
  FailureOr<RankedTensorType> tensorType(g::DataType dtype,
                                         const g::TensorShape &shape);

  // --- Attributes --------------------------------------------------------
  FailureOr<Attribute> convertAttr(const std::string &name,
                                   const g::AttrValue &value,
                                   const std::string &where);
  FailureOr<DenseElementsAttr> convertTensor(const g::TensorProto &tensor,
                                             const std::string &where);

  // --- Graph structure ---------------------------------------------------
  LogicalResult indexNodes();
  LogicalResult sortNodes();
  LogicalResult importVariables(ModuleOp module);
  LogicalResult importSignature(ModuleOp module, const std::string &mode,
                                const g::SignatureDef &signature);
  /// Appends `name` to `effects`, or, for a group, its inputs (recursively).
  void expandEffect(const std::string &name, std::vector<std::string> &effects);

  struct Output {
    std::string key;  // est.name of the function result
    std::string node; // node computing it
  };
  struct Argument {
    std::string key;
    std::string node;
  };
  LogicalResult buildFunction(ModuleOp module, const std::string &name,
                              const std::string &signatureName,
                              const std::vector<Argument> &args,
                              const std::vector<Output> &outputs,
                              const std::vector<std::string> &effects);
  /// Emits `node` at the builder's insertion point with `operands` (its
  /// inputs' values, null for an input without one). A control-flow node
  /// (scan, if, while) or an op of several results has no value: it is
  /// recorded in controlFlowOps_ under
  /// `scope` + its name, where its "output" nodes find it.
  FailureOr<Value> emitNode(const g::NodeDef &node, ArrayRef<Value> operands,
                            const std::string &scope = "");
  FailureOr<Value> emitControlFlow(const g::NodeDef &node,
                                   ArrayRef<Value> operands,
                                   const std::string &scope);
  /// Imports function `name` (graph.proto FunctionDef) into a new block
  /// with arguments `argTypes`; its "arg" nodes are the block arguments,
  /// then `captures`. Ends the block with est.yield of its outputs.
  FailureOr<Block *> importFunction(const std::string &name,
                                    const g::NodeDef &caller,
                                    TypeRange argTypes,
                                    ArrayRef<Value> captures);
  /// Marks the result dimensions of `func` that are the run-time sequence
  /// length (`est.sequence_dims`), when it has sequence inputs.
  LogicalResult markSequenceResultDims(func::FuncOp func,
                                       const std::string &signatureName,
                                       const std::vector<Output> &outputs);

  const g::GraphDef &graph_;
  MLIRContext &context_;
  std::string fileName_;
  OpBuilder builder_;
  std::string error_;

  llvm::StringMap<int> nodeIndex_;
  std::vector<std::vector<int>> inputsOf_; // node -> input node indices
  std::vector<int> topoOrder_;
  llvm::StringMap<RankedTensorType> variableTypes_;
  llvm::StringMap<const g::FunctionDef *> functions_;
  llvm::StringSet<> functionsInProgress_;
  llvm::StringMap<Operation *> controlFlowOps_;
};

FailureOr<Type> Importer::elementType(g::DataType dtype) {
  switch (dtype) {
  case g::DT_FLOAT:
    return Type(Float32Type::get(&context_));
  case g::DT_DOUBLE:
    return Type(Float64Type::get(&context_));
  case g::DT_HALF:
    return Type(Float16Type::get(&context_));
  case g::DT_BFLOAT16:
    return Type(BFloat16Type::get(&context_));
  case g::DT_INT32:
    return Type(IntegerType::get(&context_, 32));
  case g::DT_INT64:
    return Type(IntegerType::get(&context_, 64));
  case g::DT_BOOL:
    return Type(IntegerType::get(&context_, 1));
  default:
    return failure();
  }
}

FailureOr<RankedTensorType> Importer::tensorType(g::DataType dtype,
                                                 const g::TensorShape &shape) {
  FailureOr<Type> element = elementType(dtype);
  if (failed(element))
    return failure();
  SmallVector<int64_t> dims;
  for (int64_t d : shape.dim()) {
    if (d < -1)
      return failure();
    dims.push_back(d == -1 ? ShapedType::kDynamic : d);
  }
  return RankedTensorType::get(dims, *element);
}

FailureOr<DenseElementsAttr>
Importer::convertTensor(const g::TensorProto &tensor,
                        const std::string &where) {
  FailureOr<RankedTensorType> type = tensorType(tensor.dtype(), tensor.shape());
  if (failed(type)) {
    (void)fail(where + ": constant has invalid dtype " +
               dtypeName(tensor.dtype()) + " or shape");
    return failure();
  }
  if (!type->hasStaticShape()) {
    (void)fail(where + ": constant shape must be fully known");
    return failure();
  }
  int64_t n = type->getNumElements();
  auto checkCount = [&](int64_t count) -> LogicalResult {
    if (count == 1 || count == n)
      return success();
    return fail(where + ": constant holds " + std::to_string(count) +
                " values but its shape " +
                shape::toString(type->getShape().vec()) + " needs " +
                std::to_string(n) + " (or 1 to splat)");
  };
  Type element = type->getElementType();
  switch (tensor.dtype()) {
  case g::DT_FLOAT:
  case g::DT_HALF:
  case g::DT_BFLOAT16: {
    if (failed(checkCount(tensor.float_val_size())))
      return failure();
    auto fltType = cast<FloatType>(element);
    SmallVector<APFloat> values;
    for (float v : tensor.float_val()) {
      APFloat f(v);
      bool lost;
      f.convert(fltType.getFloatSemantics(), APFloat::rmNearestTiesToEven,
                &lost);
      values.push_back(f);
    }
    if (values.size() == 1)
      return DenseElementsAttr::get(*type, values.front());
    return DenseElementsAttr::get(*type, values);
  }
  case g::DT_DOUBLE: {
    if (failed(checkCount(tensor.double_val_size())))
      return failure();
    SmallVector<double> values(tensor.double_val().begin(),
                               tensor.double_val().end());
    if (values.size() == 1)
      return DenseElementsAttr::get(*type, values.front());
    return DenseElementsAttr::get(*type, ArrayRef<double>(values));
  }
  case g::DT_INT32: {
    if (failed(checkCount(tensor.int_val_size())))
      return failure();
    SmallVector<int32_t> values(tensor.int_val().begin(),
                                tensor.int_val().end());
    if (values.size() == 1)
      return DenseElementsAttr::get(*type, values.front());
    return DenseElementsAttr::get(*type, ArrayRef<int32_t>(values));
  }
  case g::DT_INT64: {
    if (failed(checkCount(tensor.int64_val_size())))
      return failure();
    SmallVector<int64_t> values(tensor.int64_val().begin(),
                                tensor.int64_val().end());
    if (values.size() == 1)
      return DenseElementsAttr::get(*type, values.front());
    return DenseElementsAttr::get(*type, ArrayRef<int64_t>(values));
  }
  case g::DT_BOOL: {
    if (failed(checkCount(tensor.bool_val_size())))
      return failure();
    SmallVector<bool> values(tensor.bool_val().begin(),
                             tensor.bool_val().end());
    if (values.size() == 1)
      return DenseElementsAttr::get(*type, static_cast<bool>(values.front()));
    return DenseElementsAttr::get(*type, ArrayRef<bool>(values));
  }
  default:
    (void)fail(where + ": constant has invalid dtype " +
               dtypeName(tensor.dtype()));
    return failure();
  }
}

FailureOr<Attribute> Importer::convertAttr(const std::string &name,
                                           const g::AttrValue &value,
                                           const std::string &where) {
  auto bad = [&](const std::string &why) -> FailureOr<Attribute> {
    (void)fail(where + ": attribute '" + name + "' " + why);
    return failure();
  };
  switch (value.value_case()) {
  case g::AttrValue::kI:
    return Attribute(builder_.getI64IntegerAttr(value.i()));
  case g::AttrValue::kF:
    return Attribute(builder_.getF64FloatAttr(value.f()));
  case g::AttrValue::kB:
    return Attribute(builder_.getBoolAttr(value.b()));
  case g::AttrValue::kS:
    if (name == kVariableAttr)
      return Attribute(FlatSymbolRefAttr::get(&context_, value.s()));
    return Attribute(builder_.getStringAttr(value.s()));
  case g::AttrValue::kType: {
    FailureOr<Type> type = elementType(value.type());
    if (failed(type))
      return bad("has invalid dtype " + dtypeName(value.type()));
    return Attribute(TypeAttr::get(*type));
  }
  case g::AttrValue::kShape: {
    SmallVector<int64_t> dims(value.shape().dim().begin(),
                              value.shape().dim().end());
    return Attribute(builder_.getDenseI64ArrayAttr(dims));
  }
  case g::AttrValue::kTensor: {
    FailureOr<DenseElementsAttr> tensor = convertTensor(value.tensor(), where);
    if (failed(tensor))
      return failure();
    return Attribute(*tensor);
  }
  case g::AttrValue::kList: {
    const g::AttrValue::ListValue &list = value.list();
    int kinds = (list.i_size() > 0) + (list.f_size() > 0) + (list.s_size() > 0);
    if (kinds > 1)
      return bad("mixes integers, floats and strings in one list");
    if (list.f_size() > 0) {
      SmallVector<double> fs(list.f().begin(), list.f().end());
      return Attribute(builder_.getDenseF64ArrayAttr(fs));
    }
    if (list.s_size() > 0) {
      SmallVector<Attribute> ss;
      for (const std::string &s : list.s())
        ss.push_back(name == kVarListAttr || name == kVariablesAttr
                         ? Attribute(FlatSymbolRefAttr::get(&context_, s))
                         : Attribute(builder_.getStringAttr(s)));
      return Attribute(builder_.getArrayAttr(ss));
    }
    SmallVector<int64_t> is(list.i().begin(), list.i().end());
    return Attribute(builder_.getDenseI64ArrayAttr(is));
  }
  case g::AttrValue::kDict: {
    std::vector<std::string> keys;
    for (const auto &entry : value.dict().entry())
      keys.push_back(entry.first);
    std::sort(keys.begin(), keys.end());
    SmallVector<NamedAttribute> entries;
    for (const std::string &key : keys) {
      FailureOr<Attribute> converted = convertAttr(
          key, value.dict().entry().at(key), where + " '" + name + "'");
      if (failed(converted))
        return failure();
      entries.push_back(builder_.getNamedAttr(key, *converted));
    }
    return Attribute(builder_.getDictionaryAttr(entries));
  }
  case g::AttrValue::VALUE_NOT_SET:
    break;
  }
  return bad("has no value");
}

LogicalResult Importer::indexNodes() {
  const int n = graph_.node_size();
  for (int i = 0; i < n; ++i) {
    const g::NodeDef &node = graph_.node(i);
    if (node.name().empty())
      return fail("node #" + std::to_string(i) + " (" + node.op() +
                  ") has no name");
    auto [it, inserted] = nodeIndex_.try_emplace(node.name(), i);
    if (!inserted)
      return fail("node '" + node.name() + "' is defined twice (nodes #" +
                  std::to_string(it->second) + " and #" + std::to_string(i) +
                  ")");
  }
  inputsOf_.assign(n, {});
  for (int i = 0; i < n; ++i) {
    const g::NodeDef &node = graph_.node(i);
    if (node.op().empty())
      return failNode(node, "has no op");
    if (node.op() == "arg")
      return failNode(node, "an \"arg\" node belongs to a function, not "
                            "to the graph");
    if (node.op() != kPlaceholderOp && node.op() != kGroupOp &&
        node.op() != kOutputOp) {
      std::optional<RegisteredOperationName> name =
          RegisteredOperationName::lookup("est." + node.op(), &context_);
      if (!name || node.op() == "variable" || node.op() == "constant_like" ||
          node.op() == "yield")
        return failNode(node, "unknown op '" + node.op() +
                                  "' (see docs/ops.md for the est op set)");
    }
    for (int k = 0; k < node.input_size(); ++k) {
      const std::string &input = node.input(k);
      if (input.empty())
        return failNode(node, "input #" + std::to_string(k) + " is empty");
      auto [source, index] = parseInputName(input);
      auto it = nodeIndex_.find(source);
      if (it == nodeIndex_.end())
        return failNode(node, "input #" + std::to_string(k) + " '" + input +
                                  "' is not a node of the graph");
      if (index != 0)
        return failNode(node, "input #" + std::to_string(k) + " '" + input +
                                  "': node '" + source +
                                  "' has a single output");
      inputsOf_[i].push_back(it->second);
    }
  }
  return success();
}

LogicalResult Importer::sortNodes() {
  std::vector<int> cycle;
  topoOrder_ = g::topologicalOrder(inputsOf_, &cycle);
  if (topoOrder_.size() == inputsOf_.size())
    return success();
  std::string path;
  for (size_t k = 0; k < cycle.size(); ++k)
    path += (k ? " -> '" : "'") + graph_.node(cycle[k]).name() + "'";
  return failNode(graph_.node(cycle.front()),
                  "is part of a cycle: " + path +
                      " (each uses the next as an input)");
}

LogicalResult Importer::importVariables(ModuleOp module) {
  builder_.setInsertionPointToEnd(module.getBody());
  llvm::StringMap<int> seen;
  for (int i = 0; i < graph_.variable_size(); ++i) {
    const g::VariableDef &var = graph_.variable(i);
    std::string where = "variable '" + var.name() + "'";
    if (var.name().empty())
      return fail("variable #" + std::to_string(i) + " has no name");
    if (!seen.try_emplace(var.name(), i).second)
      return fail(where + " is defined twice");
    FailureOr<RankedTensorType> type = tensorType(var.dtype(), var.shape());
    if (failed(type))
      return fail(where + " has invalid dtype " + dtypeName(var.dtype()) +
                  " or shape");
    if (!type->hasStaticShape())
      return fail(where + " must have a fully known shape, got " +
                  shape::toString(std::vector<int64_t>(
                      var.shape().dim().begin(), var.shape().dim().end())));
    const g::InitializerDef &init = var.initializer();
    if (init.type().empty())
      return fail(where + " has no initializer");
    if (var.local() && var.trainable())
      return fail(where + " is local and trainable; a local variable (metric "
                          "state) cannot be trainable");
    if (var.local() && (init.type() != "zeros" || !init.attr().empty()))
      return fail(where + " is local but has initializer '" + init.type() +
                  "'; local variables are reset to zeros, so their "
                  "initializer must be 'zeros'");
    std::vector<std::string> keys;
    for (const auto &entry : init.attr())
      keys.push_back(entry.first);
    std::sort(keys.begin(), keys.end());
    SmallVector<NamedAttribute> params;
    for (const std::string &key : keys) {
      FailureOr<Attribute> attr =
          convertAttr(key, init.attr().at(key), where + " initializer");
      if (failed(attr))
        return failure();
      params.push_back(builder_.getNamedAttr(key, *attr));
    }
    Location loc = nodeLoc((kVariableLocPrefix + var.name()).str());
    est::VariableOp::create(
        builder_, loc, var.name(), *type, var.trainable(),
        est::InitializerAttr::get(&context_, init.type(),
                                  params.empty()
                                      ? DictionaryAttr()
                                      : builder_.getDictionaryAttr(params)),
        var.local());
    variableTypes_[var.name()] = *type;
  }
  return success();
}

FailureOr<Value> Importer::emitNode(const g::NodeDef &node,
                                    ArrayRef<Value> operands,
                                    const std::string &scope) {
  Location loc = nodeLoc(node.name());
  if (node.op() == kOutputOp) {
    Operation *op = node.input_size() == 1
                        ? controlFlowOps_.lookup(
                              scope + "|" + parseInputName(node.input(0)).first)
                        : nullptr;
    if (!op) {
      (void)failNode(
          node, "needs one input, a scan, if, while or fused_batch_norm node");
      return failure();
    }
    auto index = node.attr().find("index");
    if (index == node.attr().end() || !index->second.has_i() ||
        index->second.i() < 0 ||
        index->second.i() >= static_cast<int64_t>(op->getNumResults())) {
      (void)failNode(node, "attribute 'index' must be an int in [0, " +
                               std::to_string(op->getNumResults()) + ")");
      return failure();
    }
    return op->getResult(index->second.i());
  }
  for (auto [k, operand] : llvm::enumerate(operands))
    if (!operand) {
      (void)failNode(node, "input #" + std::to_string(k) + " '" +
                               node.input(k) + "' has no value");
      return failure();
    }
  if (isControlFlowOp(node.op()))
    return emitControlFlow(node, operands, scope);
  OperationState state(loc, "est." + node.op());
  state.addOperands(operands);

  // Attributes in a stable order (protobuf maps have none).
  std::vector<std::string> keys;
  for (const auto &entry : node.attr())
    keys.push_back(entry.first);
  std::sort(keys.begin(), keys.end());
  for (const std::string &key : keys) {
    FailureOr<Attribute> attr =
        convertAttr(key, node.attr().at(key),
                    "node '" + node.name() + "' (" + node.op() + ")");
    if (failed(attr))
      return failure();
    state.addAttribute(key, *attr);
  }

  // apply_gradients: one gradient per variable, then the learning rate when
  // there is one more input (its sparse operands come from est-autodiff
  // only, never from a graph).
  if (node.op() == "apply_gradients") {
    auto vars = node.attr().find(kVariablesAttr.str());
    int64_t n = vars != node.attr().end() && vars->second.has_list()
                    ? vars->second.list().s_size()
                    : 0;
    int64_t rest = static_cast<int64_t>(operands.size()) - n;
    if (rest < 0 || rest > 1) {
      (void)failNode(node, "has " + std::to_string(operands.size()) +
                               " inputs for " + std::to_string(n) +
                               " variables (one gradient each, then an "
                               "optional learning rate)");
      return failure();
    }
    state.addAttribute(
        "operandSegmentSizes",
        builder_.getDenseI32ArrayAttr(
            {static_cast<int32_t>(n), static_cast<int32_t>(rest), 0, 0}));
  }

  // An empty list has no element kind in the graph (convertAttr makes it an
  // integer list): it takes the kind the op declares (`boundaries = []` of
  // bucketize is an empty f64 list).
  for (const std::string &key : keys) {
    const g::AttrValue &value = node.attr().at(key);
    if (!value.has_list() || value.list().i_size() != 0 ||
        value.list().f_size() != 0 || value.list().s_size() != 0)
      continue;
    for (Attribute candidate : {Attribute(builder_.getDenseI64ArrayAttr({})),
                                Attribute(builder_.getDenseF64ArrayAttr({})),
                                Attribute(builder_.getArrayAttr({}))}) {
      state.attributes.set(key, candidate);
      Operation *trial = Operation::create(state);
      std::optional<Attribute> inherent = trial->getInherentAttr(key);
      trial->destroy();
      if (inherent && *inherent)
        break;
    }
  }

  // Let the op infer its result types from a result-less probe (the
  // properties it infers from are only materialized on an Operation).
  SmallVector<Type, 1> resultTypes;
  Operation *probe = Operation::create(state);
  // An attribute of the wrong kind is dropped when properties are set: report
  // it here rather than as "missing".
  for (const std::string &key : keys) {
    std::optional<Attribute> inherent = probe->getInherentAttr(key);
    if (!inherent) {
      probe->destroy();
      (void)failNode(node, "unknown attribute '" + key +
                               "' (see docs/ops.md for the op's attributes)");
      return failure();
    }
    if (!*inherent) {
      probe->destroy();
      (void)failNode(node, "attribute '" + key +
                               "' has the wrong kind (see docs/ops.md)");
      return failure();
    }
  }
  // read_variable's type is its variable's, which only the module knows.
  if (node.op() == "read_variable") {
    probe->destroy();
    auto it = node.attr().find(kVariableAttr.str());
    if (it == node.attr().end() || !it->second.has_s()) {
      (void)failNode(node, "requires attribute 'variable' (a string)");
      return failure();
    }
    auto var = variableTypes_.find(it->second.s());
    if (var == variableTypes_.end()) {
      (void)failNode(node, "reads variable '" + it->second.s() +
                               "', which the graph does not declare");
      return failure();
    }
    resultTypes.push_back(var->second);
    probe = nullptr;
  }
  auto infer =
      probe ? dyn_cast<InferTypeOpInterface>(probe) : InferTypeOpInterface();
  LogicalResult inferred =
      infer ? infer.inferReturnTypes(&context_, loc, probe->getOperands(),
                                     probe->getRawDictionaryAttrs(),
                                     probe->getPropertiesStorage(),
                                     probe->getRegions(), resultTypes)
            : success();
  if (probe)
    probe->destroy();
  if (failed(inferred)) {
    (void)fail(""); // the diagnostic handler has recorded the message
    return failure();
  }

  // The node's declared output type must agree with the inferred one.
  if (node.dtype() != g::DT_INVALID && resultTypes.size() == 1) {
    FailureOr<RankedTensorType> declared =
        tensorType(node.dtype(), node.shape());
    auto actual = dyn_cast<RankedTensorType>(resultTypes.front());
    bool compatible = succeeded(declared) && actual &&
                      declared->getElementType() == actual.getElementType() &&
                      declared->getRank() == actual.getRank();
    for (int64_t d = 0; compatible && d < actual.getRank(); ++d) {
      int64_t a = actual.getDimSize(d), b = declared->getDimSize(d);
      compatible = a == b || ShapedType::isDynamic(b);
    }
    if (!compatible) {
      std::string inferredStr, declaredStr;
      llvm::raw_string_ostream(inferredStr) << resultTypes.front();
      if (succeeded(declared))
        llvm::raw_string_ostream(declaredStr) << *declared;
      else
        declaredStr = dtypeName(node.dtype());
      (void)failNode(node, "declared output type " + declaredStr +
                               " does not match the inferred " + inferredStr);
      return failure();
    }
  }

  state.addTypes(resultTypes);
  Operation *op = builder_.create(state);
  // An op of several results (fused_batch_norm) has no value itself: its
  // "output" nodes find it as a control-flow node's.
  if (op->getNumResults() > 1) {
    controlFlowOps_[scope + "|" + node.name()] = op;
    return Value();
  }
  return op->getNumResults() ? op->getResult(0) : Value();
}

FailureOr<Block *> Importer::importFunction(const std::string &name,
                                            const g::NodeDef &caller,
                                            TypeRange argTypes,
                                            ArrayRef<Value> captures) {
  const g::FunctionDef *fn = functions_.lookup(name);
  if (!fn) {
    (void)failNode(caller, "calls function '" + name +
                               "', which the graph does not define");
    return failure();
  }
  if (!functionsInProgress_.insert(name).second) {
    (void)failNode(caller, "calls function '" + name + "' from inside itself");
    return failure();
  }
  auto done = llvm::scope_exit([&] { functionsInProgress_.erase(name); });
  std::string where = "function '" + name + "': ";
  const int n = fn->node_size();
  llvm::StringMap<int> index;
  for (int i = 0; i < n; ++i) {
    const g::NodeDef &node = fn->node(i);
    if (node.name().empty())
      return (fail(where + "node #" + std::to_string(i) + " (" + node.op() +
                   ") has no name"));
    if (!index.try_emplace(node.name(), i).second)
      return (fail(where + "node '" + node.name() + "' is defined twice"));
    if (node.op() == kPlaceholderOp || node.op() == kGroupOp ||
        node.op() == "read_variable" || node.op() == "assign_variable" ||
        node.op() == "minimize" || node.op() == "apply_gradients" ||
        node.op() == "gradient")
      return (failNode(node, "cannot be inside function '" + name +
                                 "' (a loop body or branch): model "
                                 "inputs, variables and train ops "
                                 "belong to the graph"));
    if (node.op() != "arg" && node.op() != kOutputOp &&
        (node.op() == "yield" || node.op() == "variable" ||
         node.op() == "constant_like" ||
         !RegisteredOperationName::lookup("est." + node.op(), &context_)))
      return (failNode(node, "unknown op '" + node.op() +
                                 "' (see docs/ops.md for the est op "
                                 "set)"));
  }
  std::vector<std::vector<int>> inputsOf(n);
  for (int i = 0; i < n; ++i) {
    const g::NodeDef &node = fn->node(i);
    for (int k = 0; k < node.input_size(); ++k) {
      auto [source, output] = parseInputName(node.input(k));
      auto it = index.find(source);
      if (it == index.end() || output != 0)
        return (failNode(
            node, "input #" + std::to_string(k) + " '" + node.input(k) +
                      "' is not a node of function '" + name +
                      "' (a value from outside is passed in as a capture)"));
      inputsOf[i].push_back(it->second);
    }
  }
  std::vector<int> cycle;
  std::vector<int> order = g::topologicalOrder(inputsOf, &cycle);
  if (order.size() != static_cast<size_t>(n))
    return (failNode(fn->node(cycle.front()),
                     "is part of a cycle in function '" + name + "'"));

  auto *block = new Block();
  for (Type t : argTypes)
    block->addArgument(t, nodeLoc(caller.name()));
  SmallVector<Value> params(block->getArguments());
  llvm::append_range(params, captures);
  OpBuilder::InsertionGuard guard(builder_);
  builder_.setInsertionPointToEnd(block);
  auto cleanup = llvm::scope_exit([&] {
    if (block)
      est::eraseDetachedBlock(block);
  });
  std::vector<Value> values(n);
  std::vector<char> hasArg(params.size(), 0);
  for (int i : order) {
    const g::NodeDef &node = fn->node(i);
    if (node.op() == "arg") {
      auto idx = node.attr().find("index");
      if (idx == node.attr().end() || !idx->second.has_i() ||
          idx->second.i() < 0 ||
          idx->second.i() >= static_cast<int64_t>(params.size()))
        return (failNode(node, "attribute 'index' must be an int in [0, " +
                                   std::to_string(params.size()) +
                                   ") for function '" + name + "' as node '" +
                                   caller.name() + "' calls it"));
      Value param = params[idx->second.i()];
      auto type = cast<RankedTensorType>(param.getType());
      FailureOr<RankedTensorType> declared =
          tensorType(node.dtype(), node.shape());
      if (failed(declared) ||
          declared->getElementType() != type.getElementType() ||
          declared->getRank() != type.getRank()) {
        std::string actual;
        llvm::raw_string_ostream(actual) << type;
        return (failNode(node, "declares parameter #" +
                                   std::to_string(idx->second.i()) +
                                   " of a type that differs from " + actual +
                                   ", what '" + caller.name() + "' passes"));
      }
      values[i] = param;
      continue;
    }
    SmallVector<Value> operands;
    for (int input : inputsOf[i])
      operands.push_back(values[input]);
    FailureOr<Value> value = emitNode(node, operands, name);
    if (failed(value))
      return failure();
    values[i] = *value;
  }
  SmallVector<Value> outputs;
  for (const std::string &out : fn->output()) {
    auto it = index.find(parseInputName(out).first);
    if (it == index.end() || !values[it->second])
      return (fail(where + "output '" + out +
                   "' is not a node of the function with a value"));
    outputs.push_back(values[it->second]);
  }
  est::YieldOp::create(builder_, nodeLoc(caller.name()), outputs);
  Block *result = block;
  block = nullptr; // owned by the caller now
  return result;
}

FailureOr<Value> Importer::emitControlFlow(const g::NodeDef &node,
                                           ArrayRef<Value> operands,
                                           const std::string &scope) {
  Location loc = nodeLoc(node.name());
  auto intAttr = [&](const char *key, bool required,
                     int64_t fallback) -> FailureOr<int64_t> {
    auto it = node.attr().find(key);
    if (it == node.attr().end() && !required)
      return fallback;
    if (it == node.attr().end() || !it->second.has_i() || it->second.i() < 0)
      return (failNode(node, std::string("requires attribute '") + key +
                                 "' (a non-negative int)"));
    return it->second.i();
  };
  auto strAttr = [&](const char *key) -> FailureOr<std::string> {
    auto it = node.attr().find(key);
    if (it == node.attr().end() || !it->second.has_s())
      return (failNode(node, std::string("requires attribute '") + key +
                                 "' (a function name)"));
    return it->second.s();
  };
  auto types = [](ArrayRef<Value> values) {
    SmallVector<Type> t;
    for (Value v : values)
      t.push_back(v.getType());
    return t;
  };
  auto yieldTypes = [](Block *block) {
    return SmallVector<Type>(block->getTerminator()->getOperandTypes());
  };
  // Diagnostics of the op's verifier name the node (the location).
  auto finish = [&](Operation *op) -> FailureOr<Value> {
    controlFlowOps_[scope + "|" + node.name()] = op;
    // A nested op is verified with the outermost one, once its enclosing
    // blocks are attached (dominance needs them).
    if (scope.empty() && failed(verify(op))) {
      (void)fail("");
      return failure();
    }
    return Value();
  };
  size_t total = operands.size();

  if (node.op() == "scan") {
    FailureOr<int64_t> nc = intAttr("num_carried", true, 0);
    FailureOr<int64_t> ns = intAttr("num_sequences", true, 0);
    FailureOr<std::string> body = strAttr("body");
    if (failed(nc) || failed(ns) || failed(body))
      return failure();
    if (static_cast<size_t>(*nc + *ns) > total || *ns == 0)
      return (failNode(node, "has " + std::to_string(total) + " inputs for " +
                                 std::to_string(*nc) + " carried values and " +
                                 std::to_string(*ns) +
                                 " sequences (at least one)"));
    auto reverseIt = node.attr().find("reverse");
    bool reverse = reverseIt != node.attr().end() && reverseIt->second.b();
    ArrayRef<Value> inits = operands.take_front(*nc);
    ArrayRef<Value> seqs = operands.slice(*nc, *ns);
    SmallVector<Type> argTypes = types(inits);
    int64_t length = ShapedType::kDynamic;
    for (Value seq : seqs) {
      auto type = cast<RankedTensorType>(seq.getType());
      if (type.getRank() == 0)
        return (
            failNode(node, "sequence '" + node.input(*nc) + "' is a scalar"));
      argTypes.push_back(est::ScanOp::sliceType(type));
      if (!type.isDynamicDim(0))
        length = type.getDimSize(0);
    }
    FailureOr<Block *> block =
        importFunction(*body, node, argTypes, operands.drop_front(*nc + *ns));
    if (failed(block))
      return failure();
    SmallVector<Type> resultTypes;
    for (auto [i, t] : llvm::enumerate(yieldTypes(*block)))
      resultTypes.push_back(static_cast<int64_t>(i) < *nc
                                ? (i < inits.size() ? inits[i].getType() : t)
                                : Type(est::ScanOp::stackedType(
                                      cast<RankedTensorType>(t), length)));
    auto op =
        est::ScanOp::create(builder_, loc, resultTypes, inits, seqs, reverse);
    op.getBody().push_back(*block);
    return finish(op);
  }
  if (node.op() == "if") {
    FailureOr<int64_t> nt = intAttr("num_then_captures", false, 0);
    FailureOr<std::string> thenName = strAttr("then_branch");
    FailureOr<std::string> elseName = strAttr("else_branch");
    if (failed(nt) || failed(thenName) || failed(elseName))
      return failure();
    if (total < 1 || static_cast<size_t>(*nt) > total - 1)
      return (failNode(node, "needs a condition input and " +
                                 std::to_string(*nt) +
                                 " captures of its true branch"));
    auto condType = cast<RankedTensorType>(operands[0].getType());
    if (condType.getRank() != 0 || !condType.getElementType().isInteger(1))
      return (failNode(node, "the condition '" + node.input(0) +
                                 "' must be a bool scalar"));
    FailureOr<Block *> thenBlock =
        importFunction(*thenName, node, {}, operands.slice(1, *nt));
    if (failed(thenBlock))
      return failure();
    FailureOr<Block *> elseBlock =
        importFunction(*elseName, node, {}, operands.drop_front(1 + *nt));
    if (failed(elseBlock)) {
      est::eraseDetachedBlock(*thenBlock);
      return failure();
    }
    auto op =
        est::IfOp::create(builder_, loc, yieldTypes(*thenBlock), operands[0]);
    op.getThenRegion().push_back(*thenBlock);
    op.getElseRegion().push_back(*elseBlock);
    return finish(op);
  }
  // while
  FailureOr<int64_t> nc = intAttr("num_carried", true, 0);
  FailureOr<int64_t> ncc = intAttr("num_cond_captures", false, 0);
  FailureOr<int64_t> maxIter = intAttr("maximum_iterations", false, -1);
  FailureOr<std::string> condName = strAttr("cond");
  FailureOr<std::string> bodyName = strAttr("body");
  if (failed(nc) || failed(ncc) || failed(maxIter) || failed(condName) ||
      failed(bodyName))
    return failure();
  if (*nc == 0 || static_cast<size_t>(*nc + *ncc) > total)
    return (failNode(
        node, "has " + std::to_string(total) + " inputs for " +
                  std::to_string(*nc) + " loop variables (at least one) and " +
                  std::to_string(*ncc) + " captures of its condition"));
  ArrayRef<Value> inits = operands.take_front(*nc);
  FailureOr<Block *> condBlock =
      importFunction(*condName, node, types(inits), operands.slice(*nc, *ncc));
  if (failed(condBlock))
    return failure();
  FailureOr<Block *> bodyBlock = importFunction(
      *bodyName, node, types(inits), operands.drop_front(*nc + *ncc));
  if (failed(bodyBlock)) {
    est::eraseDetachedBlock(*condBlock);
    return failure();
  }
  auto op = est::WhileOp::create(
      builder_, loc, types(inits), inits,
      *maxIter < 0 ? IntegerAttr() : builder_.getI64IntegerAttr(*maxIter));
  op.getCondRegion().push_back(*condBlock);
  op.getBodyRegion().push_back(*bodyBlock);
  return finish(op);
}

/// The result shapes of `func` when every dynamic dimension of its
/// arguments is known: dimension 0 of an `est.values_dim` argument
/// kProbeValues, dimension 1 of an `est.sequence_dim` one `length`, every
/// other one kProbeBatch. A copy of the function is re-inferred in order
/// (est::inferShapes, as est-shape-inference) and erased; a dimension no op
/// could infer stays dynamic.
constexpr int64_t kProbeBatch = 2, kProbeValues = 3;
SmallVector<SmallVector<int64_t>> probeResultShapes(func::FuncOp func,
                                                    int64_t length) {
  OpBuilder b(func);
  auto probe = cast<func::FuncOp>(b.clone(*func));
  probe.setSymName((func.getSymName() + "__estc_sequence_probe").str());
  for (BlockArgument arg : probe.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type)
      continue;
    SmallVector<int64_t> shape(type.getShape());
    for (auto [d, size] : llvm::enumerate(shape)) {
      if (!ShapedType::isDynamic(size))
        continue;
      unsigned i = arg.getArgNumber();
      size = d == 0 && probe.getArgAttr(i, kValuesDimAttr)     ? kProbeValues
             : d == 1 && probe.getArgAttr(i, kSequenceDimAttr) ? length
                                                               : kProbeBatch;
    }
    arg.setType(type.clone(shape));
  }
  // As est-shape-inference, through control-flow regions too; an op whose
  // inference fails keeps its types.
  (void)est::inferShapes(probe.getBody().front());
  SmallVector<SmallVector<int64_t>> shapes;
  for (Value v : probe.getBody().back().getTerminator()->getOperands()) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    shapes.emplace_back(type ? SmallVector<int64_t>(type.getShape())
                             : SmallVector<int64_t>());
  }
  probe.erase();
  return shapes;
}

LogicalResult
Importer::markSequenceResultDims(func::FuncOp func,
                                 const std::string &signatureName,
                                 const std::vector<Output> &outputs) {
  bool sequence = false;
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    sequence |= bool(func.getArgAttr(i, kSequenceDimAttr));
  if (!sequence)
    return success();
  // A result dimension is the sequence length when it is that length at two
  // different lengths (the batch and the values fixed at other sizes).
  constexpr int64_t kLengths[2] = {5, 7};
  SmallVector<SmallVector<int64_t>> first =
      probeResultShapes(func, kLengths[0]);
  SmallVector<SmallVector<int64_t>> second =
      probeResultShapes(func, kLengths[1]);
  for (auto [k, type] : llvm::enumerate(func.getResultTypes())) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor || first[k].size() != static_cast<size_t>(tensor.getRank()) ||
        second[k].size() != first[k].size())
      continue;
    SmallVector<int64_t> dims;
    for (int64_t d = 0; d < tensor.getRank(); ++d) {
      if (!tensor.isDynamicDim(d))
        continue;
      int64_t a = first[k][d], b = second[k][d];
      if (a == kLengths[0] && b == kLengths[1])
        dims.push_back(d);
      else if (a != b && !ShapedType::isDynamic(a) && !ShapedType::isDynamic(b))
        return fail("signature '" + signatureName + "': output '" +
                    outputs[k].key + "': dimension " + std::to_string(d) +
                    " changes with the sequence length but is not it (a "
                    "run-time output dimension is the batch or the sequence "
                    "length)");
    }
    if (!dims.empty())
      func.setResultAttr(k, kSequenceDimsAttr,
                         builder_.getDenseI64ArrayAttr(dims));
  }
  return success();
}

LogicalResult Importer::buildFunction(ModuleOp module, const std::string &name,
                                      const std::string &signatureName,
                                      const std::vector<Argument> &args,
                                      const std::vector<Output> &outputs,
                                      const std::vector<std::string> &effects) {
  auto lookupNode = [&](const std::string &what,
                        const std::string &node) -> FailureOr<int> {
    auto it = nodeIndex_.find(node);
    if (it == nodeIndex_.end()) {
      (void)fail("signature '" + signatureName + "': " + what + " names '" +
                 node + "', which is not a node of the graph");
      return failure();
    }
    return it->second;
  };

  // Nodes the outputs and effects need, by reverse reachability.
  std::vector<char> needed(graph_.node_size(), 0);
  std::vector<int> stack;
  for (const Output &out : outputs) {
    FailureOr<int> i = lookupNode("output '" + out.key + "'", out.node);
    if (failed(i))
      return failure();
    stack.push_back(*i);
  }
  for (const std::string &effect : effects) {
    FailureOr<int> i = lookupNode("operation", effect);
    if (failed(i))
      return failure();
    stack.push_back(*i);
  }
  while (!stack.empty()) {
    int i = stack.back();
    stack.pop_back();
    if (needed[i])
      continue;
    needed[i] = 1;
    for (int input : inputsOf_[i])
      stack.push_back(input);
  }

  // Arguments: the bound placeholders, features first.
  llvm::DenseMap<int, Value> values;
  SmallVector<Type> argTypes;
  SmallVector<int> argNodes;
  for (const Argument &arg : args) {
    FailureOr<int> i = lookupNode(arg.key, arg.node);
    if (failed(i))
      return failure();
    const g::NodeDef &node = graph_.node(*i);
    if (node.op() != kPlaceholderOp)
      return fail("signature '" + signatureName + "': " + arg.key +
                  " is bound to node '" + node.name() + "' (" + node.op() +
                  "), which is not a placeholder");
    if (std::find(argNodes.begin(), argNodes.end(), *i) != argNodes.end())
      return fail("signature '" + signatureName + "': placeholder '" +
                  node.name() + "' is bound twice");
    auto dtypeIt = node.attr().find("dtype");
    auto shapeIt = node.attr().find("shape");
    if (dtypeIt == node.attr().end() || !dtypeIt->second.has_type())
      return failNode(node, "requires attribute 'dtype' (a type)");
    if (shapeIt == node.attr().end() || !shapeIt->second.has_shape())
      return failNode(node, "requires attribute 'shape' (a shape)");
    FailureOr<RankedTensorType> type =
        tensorType(dtypeIt->second.type(), shapeIt->second.shape());
    if (failed(type))
      return failNode(node, "has an invalid dtype or shape");
    auto valuesDim = node.attr().find("values_dim");
    if (valuesDim != node.attr().end() && !valuesDim->second.has_b())
      return failNode(node, "attribute 'values_dim' is not a bool");
    if (valuesDim != node.attr().end() && valuesDim->second.b() &&
        (type->getRank() == 0 || !type->isDynamicDim(0)))
      return failNode(node, "has values_dim but dimension 0 is not -1");
    auto sequenceDim = node.attr().find("sequence_dim");
    auto maxLength = node.attr().find("max_sequence_length");
    bool sequence = sequenceDim != node.attr().end() && sequenceDim->second.b();
    if (sequenceDim != node.attr().end() && !sequenceDim->second.has_b())
      return failNode(node, "attribute 'sequence_dim' is not a bool");
    if (maxLength != node.attr().end() && !maxLength->second.has_i())
      return failNode(node, "attribute 'max_sequence_length' is not an int");
    if (maxLength != node.attr().end() && maxLength->second.i() < 0)
      return failNode(node, "max_sequence_length " +
                                std::to_string(maxLength->second.i()) +
                                " is negative");
    if (maxLength != node.attr().end() && maxLength->second.i() > 0 &&
        !sequence)
      return failNode(node, "has max_sequence_length but no sequence_dim");
    if (sequence && valuesDim != node.attr().end() && valuesDim->second.b())
      return failNode(node, "has both sequence_dim and values_dim");
    if (sequence && (type->getRank() < 2 || !type->isDynamicDim(0) ||
                     !type->isDynamicDim(1)))
      return failNode(node, "has sequence_dim but dimensions 0 and 1 are not "
                            "both -1");
    argTypes.push_back(*type);
    argNodes.push_back(*i);
  }
  for (int i = 0; i < graph_.node_size(); ++i)
    if (needed[i] && graph_.node(i).op() == kGroupOp)
      return failNode(graph_.node(i),
                      "is needed as a value by signature '" + signatureName +
                          "', but a group has none; it can only be a "
                          "train_op, a metric update or an input of a group");
  for (int i = 0; i < graph_.node_size(); ++i)
    if (needed[i] && graph_.node(i).op() == kPlaceholderOp &&
        std::find(argNodes.begin(), argNodes.end(), i) == argNodes.end())
      return failNode(graph_.node(i),
                      "is needed by signature '" + signatureName +
                          "' but is not one of its features or labels");

  builder_.setInsertionPointToEnd(module.getBody());
  auto func = func::FuncOp::create(builder_, fileLoc(), name,
                                   builder_.getFunctionType(argTypes, {}));
  Block *entry = func.addEntryBlock();
  for (size_t k = 0; k < args.size(); ++k) {
    values[argNodes[k]] = entry->getArgument(k);
    func.setArgAttr(k, kNameAttr, builder_.getStringAttr(args[k].key));
    // Dimension 0 is a sparse input's number of values, not the batch
    // (memory planning sizes it separately).
    const g::NodeDef &node = graph_.node(argNodes[k]);
    auto valuesDim = node.attr().find("values_dim");
    if (valuesDim != node.attr().end() && valuesDim->second.b())
      func.setArgAttr(k, kValuesDimAttr, builder_.getUnitAttr());
    // Dimension 1 is the run-time sequence length (memory planning sizes
    // it separately; the runtime checks the declared maximum).
    auto sequenceDim = node.attr().find("sequence_dim");
    if (sequenceDim != node.attr().end() && sequenceDim->second.b()) {
      func.setArgAttr(k, kSequenceDimAttr, builder_.getUnitAttr());
      auto maxLength = node.attr().find("max_sequence_length");
      if (maxLength != node.attr().end() && maxLength->second.i() > 0)
        func.setArgAttr(k, kMaxSequenceLengthAttr,
                        builder_.getI64IntegerAttr(maxLength->second.i()));
    }
  }

  builder_.setInsertionPointToEnd(entry);
  for (int i : topoOrder_) {
    if (!needed[i] || graph_.node(i).op() == kPlaceholderOp)
      continue;
    SmallVector<Value> operands;
    for (int input : inputsOf_[i])
      operands.push_back(values.lookup(input));
    FailureOr<Value> value = emitNode(graph_.node(i), operands);
    if (failed(value))
      return failure();
    values[i] = *value;
  }

  SmallVector<Value> results;
  for (const Output &out : outputs) {
    Value v = values.lookup(nodeIndex_.lookup(out.node));
    if (!v)
      return fail("signature '" + signatureName + "': output '" + out.key +
                  "' names node '" + out.node + "', which has no value");
    results.push_back(v);
  }
  func::ReturnOp::create(builder_, fileLoc(), results);
  func.setType(
      builder_.getFunctionType(argTypes, ValueRange(results).getTypes()));
  for (size_t k = 0; k < outputs.size(); ++k)
    func.setResultAttr(k, kNameAttr, builder_.getStringAttr(outputs[k].key));
  if (failed(markSequenceResultDims(func, signatureName, outputs)))
    return failure();
  return success();
}

LogicalResult Importer::importSignature(ModuleOp module,
                                        const std::string &mode,
                                        const g::SignatureDef &sig) {
  std::vector<Argument> args;
  for (const g::Binding &b : sig.features())
    args.push_back({"features/" + b.key(), b.node()});
  for (const g::Binding &b : sig.labels())
    args.push_back({b.key().empty() || b.key() == "labels"
                        ? "labels"
                        : "labels/" + b.key(),
                    b.node()});

  std::vector<Output> outputs;
  std::vector<std::string> effects;
  if (!sig.loss().empty())
    outputs.push_back({"loss", sig.loss()});
  if (mode == "predict" || mode == "eval")
    for (const g::Binding &b : sig.predictions())
      if (mode == "predict")
        outputs.push_back({"predictions/" + b.key(), b.node()});
  for (const g::Binding &b : sig.tensors())
    outputs.push_back({"tensors/" + b.key(), b.node()});
  if (!sig.train_op().empty())
    expandEffect(sig.train_op(), effects);
  std::vector<Output> metricValues;
  for (const g::MetricBinding &m : sig.metrics()) {
    for (const std::string &update : m.update())
      expandEffect(update, effects);
    if (!m.value().empty())
      metricValues.push_back({"metrics/" + m.key(), m.value()});
  }

  if (mode == "train" && sig.train_op().empty())
    return fail("signature 'train' has no train_op");
  if (mode != "predict" && sig.loss().empty())
    return fail("signature '" + mode + "' has no loss");
  if (mode == "predict" && sig.predictions_size() == 0)
    return fail("signature 'predict' has no predictions");
  if (mode != "eval" && sig.metrics_size() > 0)
    return fail("signature '" + mode +
                "' has metrics; only the eval signature may");

  if (failed(buildFunction(module, mode, mode, args, outputs, effects)))
    return failure();
  // The train step with the summaries' values as outputs besides: the
  // Estimator runs it instead of @train on the steps whose summaries it
  // writes, so @train computes none of them (an eval or predict signature's
  // summaries are not written, as TF's Estimator writes none).
  if (mode == "train" && sig.summaries_size() > 0) {
    std::vector<Output> withSummaries = outputs;
    for (const g::SummaryDef &s : sig.summaries())
      if (!s.node().empty())
        withSummaries.push_back({"summaries/" + s.tag(), s.node()});
    if (failed(buildFunction(module, mode + "_summaries", mode, args,
                             withSummaries, effects)))
      return failure();
  }
  if (!metricValues.empty())
    return buildFunction(module, mode + "_metrics", mode, {}, metricValues, {});
  return success();
}

void Importer::expandEffect(const std::string &name,
                            std::vector<std::string> &effects) {
  auto it = nodeIndex_.find(name);
  // An unknown name is reported by buildFunction; groups have no cycles
  // (sortNodes).
  if (it == nodeIndex_.end() || graph_.node(it->second).op() != kGroupOp) {
    effects.push_back(name);
    return;
  }
  for (int input : inputsOf_[it->second])
    expandEffect(graph_.node(input).name(), effects);
}

OwningOpRef<ModuleOp> Importer::run() {
  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc());
  for (const g::FunctionDef &fn : graph_.function())
    if (fn.name().empty() || !functions_.try_emplace(fn.name(), &fn).second) {
      (void)fail(fn.name().empty()
                     ? std::string("a function has no name")
                     : "function '" + fn.name() + "' is defined twice");
      return nullptr;
    }
  if (failed(indexNodes()) || failed(sortNodes()) ||
      failed(importVariables(*module)))
    return nullptr;
  if (graph_.signature().empty()) {
    (void)fail("graph has no signatures (train, eval or predict)");
    return nullptr;
  }
  for (const auto &entry : graph_.signature())
    if (std::find(std::begin(kModes), std::end(kModes), entry.first) ==
        std::end(kModes)) {
      (void)fail("signature '" + entry.first +
                 "' is not a mode (train, eval, predict)");
      return nullptr;
    }
  for (const char *mode : kModes) {
    auto it = graph_.signature().find(mode);
    if (it != graph_.signature().end() &&
        failed(importSignature(*module, mode, it->second)))
      return nullptr;
  }
  if (failed(verify(*module))) {
    (void)fail("");
    return nullptr;
  }
  return module;
}

} // namespace

std::string formatImportDiagnostic(Diagnostic &diag,
                                   const std::string &fileName) {
  std::string node;
  Location loc = diag.getLocation();
  if (auto nameLoc = dyn_cast<NameLoc>(loc))
    node = nameLoc.getName().str();
  std::string message = diag.str();
  if (node.empty())
    return fileName + ": " + message;
  if (llvm::StringRef(node).starts_with(kVariableLocPrefix))
    return fileName + ": variable '" + node.substr(1) + "': " + message;
  return fileName + ": node '" + node + "': " + message;
}

OwningOpRef<ModuleOp> importGraph(const g::GraphDef &graph,
                                  MLIRContext &context,
                                  const std::string &fileName,
                                  std::string &error) {
  context.loadDialect<est::EstDialect, func::FuncDialect>();
  // MLIR diagnostics (inference and verifier errors) become the one line.
  std::string diagnostic;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error && diagnostic.empty())
      diagnostic = formatImportDiagnostic(diag, fileName);
    return success();
  });
  Importer importer(graph, context, fileName);
  OwningOpRef<ModuleOp> module = importer.run();
  if (!module) {
    error = !diagnostic.empty() ? diagnostic : importer.error();
    if (error.empty() || error == fileName + ": ")
      error = fileName + ": import failed";
  }
  return module;
}

} // namespace estc
