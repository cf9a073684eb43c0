//===- Manifest.cpp - What a compiled model looks like from outside -------===//

#include "compiler/Target/Manifest.h"

#include "dialects/Est/IR/EstOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cctype>

namespace estc {

namespace {

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

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

std::optional<rt::DType> parseDType(llvm::StringRef name) {
  for (rt::DType d : {rt::DType::F32, rt::DType::F64, rt::DType::I8,
                      rt::DType::I32, rt::DType::I64, rt::DType::Bool})
    if (name == rt::dtypeName(d))
      return d;
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

/// A JSON rendering of an initializer parameter.
std::string paramJson(mlir::Attribute attr) {
  std::string s;
  llvm::raw_string_ostream os(s);
  if (auto i = llvm::dyn_cast<mlir::IntegerAttr>(attr)) {
    if (i.getType().isInteger(1))
      os << (i.getValue().getBoolValue() ? "true" : "false");
    else
      os << i.getValue().getSExtValue();
  } else if (auto f = llvm::dyn_cast<mlir::FloatAttr>(attr)) {
    os << llvm::json::Value(f.getValueAsDouble());
  } else if (auto b = llvm::dyn_cast<mlir::BoolAttr>(attr)) {
    os << (b.getValue() ? "true" : "false");
  } else if (auto str = llvm::dyn_cast<mlir::StringAttr>(attr)) {
    os << llvm::json::Value(str.getValue().str());
  } else {
    std::string printed;
    llvm::raw_string_ostream p(printed);
    attr.print(p);
    os << llvm::json::Value(printed);
  }
  return s;
}

std::string quote(llvm::StringRef s) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << llvm::json::Value(s.str());
  return out;
}

std::string shapeJson(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
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

const FunctionInfo *Manifest::findFunction(llvm::StringRef name) const {
  for (const FunctionInfo &f : functions)
    if (f.name == name)
      return &f;
  return nullptr;
}

llvm::Expected<Manifest> extractManifest(mlir::ModuleOp module,
                                         llvm::StringRef name) {
  Manifest manifest;
  manifest.name = name.str();
  if (auto replicas = module->getAttrOfType<mlir::IntegerAttr>("estc.replicas"))
    if (replicas.getInt() > 1)
      manifest.replicas = static_cast<int32_t>(replicas.getInt());
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
      info.inputs.push_back(std::move(t));
    }
    for (unsigned i = 0; i < type.getNumResults(); ++i) {
      TensorInfo t;
      t.key = keyOf(func.getResultAttrDict(i), "result", i);
      if (llvm::Error e = tensorInfo(
              type.getResult(i), "@" + info.name + " output '" + t.key + "'",
              t.dtype, t.shape))
        return e;
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
    if (!sizes || sizes.size() < 2 || sizes.size() > 4)
      return error("estc.arena entry for @" + f.name +
                   " is not array<i64: S, P>, array<i64: S, P, status> or "
                   "array<i64: S, P, status, V>");
    f.arenaStatic = sizes[0];
    f.arenaPerBatch = sizes[1];
    f.statusOffset = sizes.size() >= 3 ? sizes[2] : -1;
    f.arenaPerValue = sizes.size() == 4 ? sizes[3] : 0;
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

std::string toJson(const Manifest &m) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "{\n  \"format\": \"estc-manifest-1\",\n  \"name\": " << quote(m.name);
  if (m.device == rt::Device::Cuda)
    os << ",\n  \"device\": \"cuda\",\n  \"gpu_arch\": " << quote(m.gpuArch);
  if (m.replicas > 1)
    os << ",\n  \"replicas\": " << m.replicas;
  os << ",\n  \"variables\": [";
  for (size_t i = 0; i < m.variables.size(); ++i) {
    const VariableInfo &v = m.variables[i];
    os << (i ? ",\n" : "\n") << "    {\"name\": " << quote(v.name)
       << ", \"dtype\": \"" << rt::dtypeName(v.dtype)
       << "\", \"shape\": " << shapeJson(v.shape)
       << ", \"trainable\": " << (v.trainable ? "true" : "false")
       << ", \"local\": " << (v.local ? "true" : "false");
    if (!v.initializer.empty()) {
      os << ", \"initializer\": " << quote(v.initializer);
      if (!v.initializerParams.empty()) {
        os << ", \"initializer_params\": {";
        for (size_t p = 0; p < v.initializerParams.size(); ++p)
          os << (p ? ", " : "") << quote(v.initializerParams[p].first) << ": "
             << v.initializerParams[p].second;
        os << "}";
      }
    }
    os << "}";
  }
  os << (m.variables.empty() ? "],\n" : "\n  ],\n") << "  \"functions\": [";
  auto tensors = [&](const char *field, const std::vector<TensorInfo> &ts) {
    os << "      \"" << field << "\": [";
    for (size_t i = 0; i < ts.size(); ++i)
      os << (i ? ",\n" : "\n") << "        {\"key\": " << quote(ts[i].key)
         << ", \"dtype\": \"" << rt::dtypeName(ts[i].dtype)
         << "\", \"shape\": " << shapeJson(ts[i].shape) << "}";
    os << (ts.empty() ? "],\n" : "\n      ],\n");
  };
  for (size_t i = 0; i < m.functions.size(); ++i) {
    const FunctionInfo &f = m.functions[i];
    os << (i ? ",\n" : "\n") << "    {\n      \"name\": " << quote(f.name)
       << ",\n";
    if (!f.loopOf.empty())
      os << "      \"loop_of\": " << quote(f.loopOf) << ",\n";
    tensors("inputs", f.inputs);
    tensors("outputs", f.outputs);
    os << "      \"arena\": {\"static\": " << f.arenaStatic
       << ", \"per_batch\": " << f.arenaPerBatch;
    if (f.arenaPerValue != 0)
      os << ", \"per_value\": " << f.arenaPerValue;
    if (f.statusOffset >= 0)
      os << ", \"status\": " << f.statusOffset;
    os << "}\n    }";
  }
  os << (m.functions.empty() ? "]" : "\n  ]");
  if (!m.checks.empty()) {
    os << ",\n  \"checks\": [";
    for (size_t i = 0; i < m.checks.size(); ++i) {
      const CheckInfo &c = m.checks[i];
      os << (i ? ",\n" : "\n") << "    {\"node\": " << quote(c.node)
         << ", \"what\": " << quote(c.what) << ", \"lower\": " << c.lower
         << ", \"upper\": " << c.upper << ", \"shape\": " << shapeJson(c.shape)
         << "}";
    }
    os << "\n  ]";
  }
  os << "\n}\n";
  return s;
}

llvm::Expected<Manifest> manifestFromJson(llvm::StringRef json) {
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(json);
  if (!parsed)
    return error("manifest: " + llvm::toString(parsed.takeError()));
  const llvm::json::Object *root = parsed->getAsObject();
  if (!root || root->getString("format") != "estc-manifest-1")
    return error("manifest: not an estc-manifest-1 document");
  Manifest m;
  m.name = root->getString("name").value_or("").str();
  if (std::optional<llvm::StringRef> device = root->getString("device")) {
    if (*device == "cuda")
      m.device = rt::Device::Cuda;
    else if (*device != "cpu")
      return error("manifest: device '" + *device +
                   "' is not one of cpu, cuda");
  }
  m.gpuArch = root->getString("gpu_arch").value_or("").str();
  if (std::optional<int64_t> replicas = root->getInteger("replicas")) {
    if (*replicas < 2 || *replicas > (1 << 20))
      return error("manifest: replicas " + std::to_string(*replicas) +
                   " is not in 2..1048576");
    m.replicas = static_cast<int32_t>(*replicas);
  }
  auto readShape = [](const llvm::json::Object &o,
                      std::vector<int64_t> &shape) {
    const llvm::json::Array *a = o.getArray("shape");
    if (!a)
      return false;
    for (const llvm::json::Value &d : *a) {
      std::optional<int64_t> v = d.getAsInteger();
      if (!v)
        return false;
      shape.push_back(*v);
    }
    return true;
  };
  auto readDType = [](const llvm::json::Object &o, rt::DType &dtype) {
    std::optional<rt::DType> d = parseDType(o.getString("dtype").value_or(""));
    if (d)
      dtype = *d;
    return d.has_value();
  };
  if (const llvm::json::Array *vars = root->getArray("variables")) {
    for (const llvm::json::Value &value : *vars) {
      const llvm::json::Object *o = value.getAsObject();
      VariableInfo v;
      if (!o || !o->getString("name") || !readDType(*o, v.dtype) ||
          !readShape(*o, v.shape))
        return error("manifest: malformed variable entry");
      v.name = o->getString("name")->str();
      v.trainable = o->getBoolean("trainable").value_or(false);
      v.local = o->getBoolean("local").value_or(false);
      v.initializer = o->getString("initializer").value_or("").str();
      if (const llvm::json::Object *params =
              o->getObject("initializer_params")) {
        for (const auto &kv : *params) {
          std::string text;
          llvm::raw_string_ostream os(text);
          os << kv.second;
          v.initializerParams.emplace_back(kv.first.str(), text);
        }
        llvm::sort(v.initializerParams);
      }
      m.variables.push_back(std::move(v));
    }
  }
  if (const llvm::json::Array *fns = root->getArray("functions")) {
    for (const llvm::json::Value &value : *fns) {
      const llvm::json::Object *o = value.getAsObject();
      if (!o || !o->getString("name"))
        return error("manifest: malformed function entry");
      FunctionInfo f;
      f.name = o->getString("name")->str();
      f.loopOf = o->getString("loop_of").value_or("").str();
      for (auto [field, list] :
           {std::pair{"inputs", &f.inputs}, std::pair{"outputs", &f.outputs}}) {
        if (const llvm::json::Array *ts = o->getArray(field)) {
          for (const llvm::json::Value &tv : *ts) {
            const llvm::json::Object *to = tv.getAsObject();
            TensorInfo t;
            if (!to || !to->getString("key") || !readDType(*to, t.dtype) ||
                !readShape(*to, t.shape))
              return error("manifest: @" + f.name + ": malformed " + field +
                           " entry");
            t.key = to->getString("key")->str();
            list->push_back(std::move(t));
          }
        }
      }
      if (const llvm::json::Object *arena = o->getObject("arena")) {
        f.arenaStatic = arena->getInteger("static").value_or(0);
        f.arenaPerBatch = arena->getInteger("per_batch").value_or(0);
        f.arenaPerValue = arena->getInteger("per_value").value_or(0);
        f.statusOffset = arena->getInteger("status").value_or(-1);
      }
      m.functions.push_back(std::move(f));
    }
  }
  if (const llvm::json::Array *checks = root->getArray("checks")) {
    for (const llvm::json::Value &value : *checks) {
      const llvm::json::Object *o = value.getAsObject();
      CheckInfo c;
      if (!o || !o->getString("node") || !o->getString("what") ||
          !o->getInteger("lower") || !o->getInteger("upper") ||
          !readShape(*o, c.shape))
        return error("manifest: malformed check entry");
      c.node = o->getString("node")->str();
      c.what = o->getString("what")->str();
      c.lower = *o->getInteger("lower");
      c.upper = *o->getInteger("upper");
      m.checks.push_back(std::move(c));
    }
  }
  for (const FunctionInfo &f : m.functions)
    if (f.statusOffset >= 0 && m.checks.empty())
      return error("manifest: @" + f.name +
                   " has a status slot but the "
                   "model has no checks");
  return m;
}

struct ModelSpecStorage {
  std::vector<std::vector<int64_t>> shapes;
  std::vector<rt::VariableSpec> variables;
  std::vector<std::vector<rt::TensorSpec>> tensors;
  std::vector<rt::FunctionSpec> functions;
  std::vector<rt::CheckSpec> checks;
  Manifest manifest; // owns the strings
};

rt::ModelSpec toModelSpec(const Manifest &manifest,
                          std::shared_ptr<ModelSpecStorage> &storage) {
  storage = std::make_shared<ModelSpecStorage>();
  ModelSpecStorage &s = *storage;
  s.manifest = manifest;
  const Manifest &m = s.manifest;
  for (const VariableInfo &v : m.variables)
    s.variables.push_back({v.name.c_str(), v.dtype,
                           static_cast<int32_t>(v.shape.size()), v.shape.data(),
                           v.trainable, v.local});
  s.tensors.reserve(2 * m.functions.size());
  for (const FunctionInfo &f : m.functions) {
    auto specs = [&](const std::vector<TensorInfo> &ts) {
      std::vector<rt::TensorSpec> out;
      for (const TensorInfo &t : ts)
        out.push_back({t.key.c_str(), t.dtype,
                       static_cast<int32_t>(t.shape.size()), t.shape.data()});
      s.tensors.push_back(std::move(out));
      return s.tensors.back().data();
    };
    const rt::TensorSpec *inputs = specs(f.inputs);
    const rt::TensorSpec *outputs = specs(f.outputs);
    s.functions.push_back({f.name.c_str(),
                           static_cast<int32_t>(f.inputs.size()), inputs,
                           static_cast<int32_t>(f.outputs.size()), outputs,
                           f.arenaStatic, f.arenaPerBatch, f.statusOffset >= 0,
                           f.statusOffset, f.arenaPerValue});
  }
  for (const CheckInfo &c : m.checks)
    s.checks.push_back({c.node.c_str(), c.what.c_str(), c.lower, c.upper,
                        static_cast<int32_t>(c.shape.size()), c.shape.data()});
  return {m.name.c_str(),     static_cast<int32_t>(s.variables.size()),
          s.variables.data(), static_cast<int32_t>(s.functions.size()),
          s.functions.data(), static_cast<int32_t>(s.checks.size()),
          s.checks.data(),    m.device,
          m.replicas};
}

} // namespace estc
