//===- Manifest.cpp - What a compiled model looks like from outside -------===//

#include "compiler/Target/Manifest.h"
#include "compiler/Target/TargetError.h"

#include "dialects/Est/IR/EstOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <cctype>

namespace estc {

using detail::error;

namespace {

std::optional<rt::DType> dtypeOf(mlir::Type type) {
  if (type.isF32())
    return rt::DType::F32;
  if (type.isF64())
    return rt::DType::F64;
  if (type.isInteger(1))
    return rt::DType::Bool;
  if (type.isInteger(8))
    return rt::DType::I8;
  if (type.isInteger(32))
    return rt::DType::I32;
  if (type.isInteger(64))
    return rt::DType::I64;
  return std::nullopt;
}

std::string typeString(mlir::Type type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  type.print(os);
  return s;
}

/// dtype and shape of a ranked tensor (dynamic dims are the batch).
llvm::Error tensorInfo(mlir::Type type, const llvm::Twine &what,
                       rt::DType &dtype, std::vector<int64_t> &shape) {
  auto tensor = llvm::dyn_cast<mlir::RankedTensorType>(type);
  if (!tensor)
    return error(what + ": type " + typeString(type) +
                 " is not a ranked tensor");
  std::optional<rt::DType> d = dtypeOf(tensor.getElementType());
  if (!d)
    return error(what + ": element type of " + typeString(type) +
                 " has no compiled form (f32, f64, i1, i8, i32, i64)");
  dtype = *d;
  shape.clear();
  for (int64_t dim : tensor.getShape())
    shape.push_back(mlir::ShapedType::isDynamic(dim) ? rt::kBatchDim : dim);
  return llvm::Error::success();
}

/// A JSON rendering of an initializer parameter (manifest.json's text).
std::string paramJson(mlir::Attribute attr) {
  if (auto i = llvm::dyn_cast<mlir::IntegerAttr>(attr)) {
    if (i.getType().isInteger(1))
      return i.getValue().getBoolValue() ? "true" : "false";
    return std::to_string(i.getValue().getSExtValue());
  }
  if (auto f = llvm::dyn_cast<mlir::FloatAttr>(attr))
    return modelformat::formatDouble(f.getValueAsDouble());
  if (auto b = llvm::dyn_cast<mlir::BoolAttr>(attr))
    return b.getValue() ? "true" : "false";
  if (auto str = llvm::dyn_cast<mlir::StringAttr>(attr))
    return modelformat::quoteString(str.getValue());
  std::string printed;
  llvm::raw_string_ostream p(printed);
  attr.print(p);
  return modelformat::quoteString(printed);
}

/// Parameter-server training's module attributes (compiler/Transforms/
/// ParameterServers.h): the task count and task, what a worker's step
/// pushes (ids' and rows' first dimension: the number of rows) and the
/// variables it pulls rows of.
llvm::Error extractParameterServers(mlir::ModuleOp module, Manifest &m) {
  auto tasks = module->getAttrOfType<mlir::IntegerAttr>("estc.ps_tasks");
  if (!tasks)
    return llvm::Error::success();
  m.psTasks = static_cast<int32_t>(tasks.getInt());
  if (auto task = module->getAttrOfType<mlir::IntegerAttr>("estc.ps_task"))
    m.psTask = static_cast<int32_t>(task.getInt());
  if (auto sync =
          module->getAttrOfType<mlir::DenseI64ArrayAttr>("estc.ps_sync");
      sync && sync.size() == 2) {
    m.psReplicasToAggregate = static_cast<int32_t>(sync[0]);
    m.psTotalNumReplicas = static_cast<int32_t>(sync[1]);
  }
  if (auto inputs = module->getAttrOfType<mlir::ArrayAttr>("estc.ps_inputs"))
    for (mlir::Attribute entry : inputs) {
      auto dict = llvm::dyn_cast<mlir::DictionaryAttr>(entry);
      auto key = dict ? dict.getAs<mlir::StringAttr>("key") : nullptr;
      auto type = dict ? dict.getAs<mlir::TypeAttr>("type") : nullptr;
      if (!key || !type)
        return error("estc.ps_inputs: malformed entry");
      TensorInfo t;
      t.key = key.getValue().str();
      if (llvm::Error e = tensorInfo(
              type.getValue(), "ps input '" + t.key + "'", t.dtype, t.shape))
        return e;
      if (!t.shape.empty() && t.shape[0] == rt::kBatchDim)
        t.shape[0] = rt::kValuesDim;
      m.psInputs.push_back(std::move(t));
    }
  if (auto remote = module->getAttrOfType<mlir::ArrayAttr>("estc.ps_remote"))
    for (mlir::Attribute entry : remote) {
      auto dict = llvm::dyn_cast<mlir::DictionaryAttr>(entry);
      auto name = dict ? dict.getAs<mlir::StringAttr>("name") : nullptr;
      auto task = dict ? dict.getAs<mlir::IntegerAttr>("task") : nullptr;
      auto type = dict ? dict.getAs<mlir::TypeAttr>("type") : nullptr;
      if (!name || !task || !type)
        return error("estc.ps_remote: malformed entry");
      VariableInfo v;
      v.name = name.getValue().str();
      if (llvm::Error e = tensorInfo(
              type.getValue(), "variable '" + v.name + "'", v.dtype, v.shape))
        return e;
      v.trainable = true;
      v.psTask = static_cast<int32_t>(task.getInt());
      m.psRemote.push_back(std::move(v));
    }
  return llvm::Error::success();
}

} // namespace

std::string sanitizeIdentifier(llvm::StringRef name) {
  std::string out;
  for (char c : name)
    out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0])))
    out = "_" + out;
  return out;
}

std::string entrySymbol(llvm::StringRef model, llvm::StringRef function) {
  return sanitizeIdentifier(model) + "_" + sanitizeIdentifier(function);
}

std::string packedEntrySymbol(llvm::StringRef model, llvm::StringRef function) {
  return entrySymbol(model, function) + "_packed";
}

llvm::Expected<Manifest> extractManifest(mlir::ModuleOp module,
                                         llvm::StringRef name) {
  Manifest manifest;
  manifest.name = name.str();
  if (auto replicas = module->getAttrOfType<mlir::IntegerAttr>("estc.replicas"))
    if (replicas.getInt() > 1)
      manifest.replicas = static_cast<int32_t>(replicas.getInt());
  if (llvm::Error e = extractParameterServers(module, manifest))
    return e;
  for (mlir::Operation &op : module.getBody()->getOperations()) {
    if (auto var = llvm::dyn_cast<mlir::est::VariableOp>(op)) {
      VariableInfo info;
      info.name = var.getSymName().str();
      if (llvm::Error e =
              tensorInfo(var.getType(), "variable '" + info.name + "'",
                         info.dtype, info.shape))
        return e;
      if (llvm::is_contained(info.shape, rt::kBatchDim))
        return error("variable '" + info.name + "': shape is not static");
      info.trainable = var.getTrainable();
      info.local = var.getLocal();
      if (auto task = var->getAttrOfType<mlir::IntegerAttr>("est.ps_task"))
        info.psTask = static_cast<int32_t>(task.getInt());
      else if (manifest.psTask >= 0)
        info.psTask = manifest.psTask; // a task's own variables
      if (auto init = var.getInitializerAttr()) {
        info.initializer = init.getKind().str();
        if (mlir::DictionaryAttr params = init.getParams())
          for (mlir::NamedAttribute p : params) // sorted by name
            info.initializerParams.emplace_back(p.getName().str(),
                                                paramJson(p.getValue()));
      }
      manifest.variables.push_back(std::move(info));
      continue;
    }
    auto func = llvm::dyn_cast<mlir::func::FuncOp>(op);
    if (!func || func.isDeclaration())
      continue;
    FunctionInfo info;
    info.name = func.getSymName().str();
    mlir::FunctionType type = func.getFunctionType();
    auto keyOf = [&](mlir::DictionaryAttr attrs, llvm::StringRef kind,
                     unsigned i) -> std::string {
      if (attrs)
        if (auto key = attrs.getAs<mlir::StringAttr>("est.name"))
          return key.getValue().str();
      return (kind + std::to_string(i)).str();
    };
    for (unsigned i = 0; i < type.getNumInputs(); ++i) {
      TensorInfo t;
      t.key = keyOf(func.getArgAttrDict(i), "arg", i);
      if (llvm::Error e = tensorInfo(type.getInput(i),
                                     "@" + info.name + " input '" + t.key + "'",
                                     t.dtype, t.shape))
        return e;
      // A sparse input's dimension 0 is its number of values.
      if (func.getArgAttr(i, "est.values_dim") && !t.shape.empty() &&
          t.shape[0] == rt::kBatchDim)
        t.shape[0] = rt::kValuesDim;
      // A sequence input's dimension 1 is the sequence length.
      if (func.getArgAttr(i, "est.sequence_dim") && t.shape.size() > 1 &&
          t.shape[1] == rt::kBatchDim) {
        t.shape[1] = rt::kSequenceDim;
        if (auto max = func.getArgAttrOfType<mlir::IntegerAttr>(
                i, "est.max_sequence_length"))
          t.maxSequenceLength = max.getInt();
      }
      info.inputs.push_back(std::move(t));
    }
    for (unsigned i = 0; i < type.getNumResults(); ++i) {
      TensorInfo t;
      t.key = keyOf(func.getResultAttrDict(i), "result", i);
      if (llvm::Error e = tensorInfo(
              type.getResult(i), "@" + info.name + " output '" + t.key + "'",
              t.dtype, t.shape))
        return e;
      // The dimensions that keep the sequence length (the importer's).
      if (auto dims = func.getResultAttrOfType<mlir::DenseI64ArrayAttr>(
              i, "est.sequence_dims"))
        for (int64_t d : dims.asArrayRef())
          if (d >= 0 && d < static_cast<int64_t>(t.shape.size()) &&
              t.shape[d] == rt::kBatchDim)
            t.shape[d] = rt::kSequenceDim;
      info.outputs.push_back(std::move(t));
    }
    manifest.functions.push_back(std::move(info));
  }
  if (auto checks =
          module->getAttrOfType<mlir::ArrayAttr>("estc.runtime_checks")) {
    for (mlir::Attribute entry : checks) {
      auto dict = llvm::dyn_cast<mlir::DictionaryAttr>(entry);
      auto node = dict ? dict.getAs<mlir::StringAttr>("node") : nullptr;
      auto what = dict ? dict.getAs<mlir::StringAttr>("what") : nullptr;
      auto lower = dict ? dict.getAs<mlir::IntegerAttr>("lower") : nullptr;
      auto upper = dict ? dict.getAs<mlir::IntegerAttr>("upper") : nullptr;
      auto shape =
          dict ? dict.getAs<mlir::DenseI64ArrayAttr>("shape") : nullptr;
      if (!node || !what || !lower || !upper || !shape)
        return error("estc.runtime_checks: malformed entry");
      manifest.checks.push_back({node.getValue().str(), what.getValue().str(),
                                 lower.getInt(), upper.getInt(),
                                 std::vector<int64_t>(shape.asArrayRef())});
    }
  }
  return manifest;
}

llvm::Error readArenaSizes(mlir::ModuleOp llvmModule, Manifest &manifest) {
  auto arena = llvmModule->getAttrOfType<mlir::DictionaryAttr>("estc.arena");
  if (!arena)
    return llvm::Error::success();
  for (FunctionInfo &f : manifest.functions) {
    mlir::Attribute entry = arena.get(f.name);
    if (!entry)
      continue;
    auto sizes = llvm::dyn_cast<mlir::DenseI64ArrayAttr>(entry);
    if (!sizes || sizes.size() < 2 || sizes.size() == 5 || sizes.size() > 6)
      return error("estc.arena entry for @" + f.name +
                   " is not array<i64: S, P>, array<i64: S, P, status>, "
                   "array<i64: S, P, status, V> or array<i64: S, P, status, "
                   "V, Q, R>");
    f.arenaStatic = sizes[0];
    f.arenaPerBatch = sizes[1];
    f.statusOffset = sizes.size() >= 3 ? sizes[2] : -1;
    f.arenaPerValue = sizes.size() >= 4 ? sizes[3] : 0;
    f.arenaPerStep = sizes.size() == 6 ? sizes[4] : 0;
    f.arenaPerBatchStep = sizes.size() == 6 ? sizes[5] : 0;
  }
  return llvm::Error::success();
}

llvm::Error addStepLoop(Manifest &manifest, llvm::StringRef step) {
  const FunctionInfo *f = manifest.findFunction(step);
  if (!f)
    return error("a multi-step loop of @" + step.str() +
                 ": the model has no compiled @" + step.str());
  FunctionInfo loop = *f;
  loop.name = (step + "_loop").str();
  loop.loopOf = step.str();
  for (TensorInfo &t : loop.inputs) {
    if (llvm::is_contained(t.shape, rt::kValuesDim))
      return error("a multi-step loop of @" + step.str() + ": input '" + t.key +
                   "' is sparse (its number of values changes from step to "
                   "step); such a model runs its steps one call each");
    if (llvm::is_contained(t.shape, rt::kSequenceDim))
      return error("a multi-step loop of @" + step.str() + ": input '" + t.key +
                   "' is a sequence (its length changes from step to step); "
                   "such a model runs its steps one call each");
    t.shape.insert(t.shape.begin(), rt::kStepsDim);
  }
  manifest.functions.push_back(std::move(loop));
  return llvm::Error::success();
}

void keepFunctions(Manifest &manifest, llvm::ArrayRef<std::string> names) {
  llvm::erase_if(manifest.functions, [&](const FunctionInfo &f) {
    return !llvm::is_contained(names, f.name);
  });
}

std::string toJson(const Manifest &m) { return modelformat::writeManifest(m); }

llvm::Expected<Manifest> manifestFromJson(llvm::StringRef json) {
  try {
    return modelformat::readManifest(json);
  } catch (const modelformat::FormatError &e) {
    return error(e.what());
  }
}

} // namespace estc
