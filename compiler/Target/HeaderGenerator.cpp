//===- HeaderGenerator.cpp - The C++ header of an AOT-compiled model ------===//

#include "compiler/Target/HeaderGenerator.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

namespace estc {

namespace {

const char *cType(rt::DType dtype) {
  switch (dtype) {
  case rt::DType::F32:
    return "float";
  case rt::DType::F64:
    return "double";
  case rt::DType::I8:
    return "int8_t";
  case rt::DType::I32:
    return "int32_t";
  case rt::DType::I64:
    return "int64_t";
  case rt::DType::Bool:
    return "bool";
  }
  return "void";
}

const char *dtypeEnum(rt::DType dtype) {
  switch (dtype) {
  case rt::DType::F32:
    return "estc::rt::DType::F32";
  case rt::DType::F64:
    return "estc::rt::DType::F64";
  case rt::DType::I8:
    return "estc::rt::DType::I8";
  case rt::DType::I32:
    return "estc::rt::DType::I32";
  case rt::DType::I64:
    return "estc::rt::DType::I64";
  case rt::DType::Bool:
    return "estc::rt::DType::Bool";
  }
  return "";
}

/// "f32[?, 784]" (? = batch; n = a sparse input's number of values; steps =
/// a multi-step loop's; T = the sequence length).
std::string typeText(rt::DType dtype, const std::vector<int64_t> &shape) {
  std::string s = std::string(rt::dtypeName(dtype)) + "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + (shape[i] == rt::kBatchDim      ? std::string("?")
                            : shape[i] == rt::kValuesDim   ? std::string("n")
                            : shape[i] == rt::kSequenceDim ? std::string("T")
                            : shape[i] == rt::kStepsDim
                                ? std::string("steps")
                                : std::to_string(shape[i]));
  return s + "]";
}

std::string cString(llvm::StringRef s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string arrayInit(const std::vector<int64_t> &shape) {
  std::string s = "{";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "}";
}

/// Elements and bytes of a tensor: fixed part, per-example part, per-value
/// part (a sparse input's ids), per-step part (the sequence length T) and
/// per-example-step part (batch * T).
struct Size {
  int64_t fixed = 0, perExample = 0, perValue = 0, perStep = 0,
          perExampleStep = 0;
  Size &operator+=(const Size &o) {
    fixed += o.fixed;
    perExample += o.perExample;
    perValue += o.perValue;
    perStep += o.perStep;
    perExampleStep += o.perExampleStep;
    return *this;
  }
  int64_t total() const {
    return fixed + perExample + perValue + perStep + perExampleStep;
  }
};
Size bytesOf(rt::DType dtype, const std::vector<int64_t> &shape) {
  int64_t n = 1;
  bool batch = false, values = false, length = false;
  for (int64_t d : shape) {
    if (d == rt::kBatchDim)
      batch = true;
    else if (d == rt::kStepsDim)
      continue; // a loop's staged input: its bytes per step
    else if (d == rt::kValuesDim)
      values = true;
    else if (d == rt::kSequenceDim)
      length = true;
    else
      n *= d;
  }
  n *= static_cast<int64_t>(rt::dtypeBytes(dtype));
  if (length)
    return batch ? Size{0, 0, 0, 0, n} : Size{0, 0, 0, n, 0};
  return values ? Size{0, 0, n} : batch ? Size{0, n, 0} : Size{n, 0, 0};
}

std::string formula(int64_t fixed, int64_t perExample, int64_t perValue = 0,
                    int64_t perStep = 0, int64_t perExampleStep = 0) {
  std::string s = std::to_string(fixed);
  if (perExample != 0)
    s += " + " + std::to_string(perExample) + " * batch";
  if (perValue != 0)
    s += " + " + std::to_string(perValue) + " * values";
  if (perStep != 0)
    s += " + " + std::to_string(perStep) + " * T";
  if (perExampleStep != 0)
    s += " + " + std::to_string(perExampleStep) + " * batch * T";
  return s;
}
std::string formula(const Size &size) {
  return formula(size.fixed, size.perExample, size.perValue, size.perStep,
                 size.perExampleStep);
}

/// Hands out unique C++ identifiers.
class Names {
public:
  Names() {
    for (const char *reserved :
         {"spec", "set_batch", "batch", "arena_bytes", "variable_bytes",
          "function_index", "variable_index", "input_index", "output_index",
          "variable_data", "input_data", "output_data", "bind_input",
          "bind_output", "run", "reserve", "fail", "set_sequence_length",
          "sequence_length"})
      used.insert(reserved);
  }
  std::string get(llvm::StringRef wanted) {
    std::string name = sanitizeIdentifier(wanted);
    std::string candidate = name;
    for (int i = 2; !used.insert(candidate).second; ++i)
      candidate = name + "_" + std::to_string(i);
    return candidate;
  }

private:
  llvm::StringSet<> used;
};

} // namespace

std::string generateHeader(const Manifest &m) {
  std::string text;
  llvm::raw_string_ostream os(text);
  const std::string &cls = m.name;
  std::string guard = "ESTC_GENERATED_" + llvm::StringRef(cls).upper() + "_H";
  Names names;

  // Pick every identifier first, so the documentation can quote them.
  std::vector<std::string> fnNames, varNames;
  std::vector<std::vector<std::string>> argNames, resultNames;
  for (const FunctionInfo &f : m.functions)
    fnNames.push_back(names.get(f.name));
  for (const VariableInfo &v : m.variables)
    varNames.push_back(names.get("var_" + v.name));
  for (size_t f = 0; f < m.functions.size(); ++f) {
    argNames.emplace_back();
    resultNames.emplace_back();
    for (const TensorInfo &t : m.functions[f].inputs)
      argNames.back().push_back(names.get(fnNames[f] + "_arg_" + t.key));
    for (const TensorInfo &t : m.functions[f].outputs)
      resultNames.back().push_back(names.get(fnNames[f] + "_result_" + t.key));
  }

  // --- Documentation --------------------------------------------------------
  os << "// " << cls << ".h: generated by estc (--name=" << cls
     << "). Do not edit.\n"
        "//\n"
        "// The compiled model as a C++ class, in the spirit of tfcompile. "
        "Link "
     << cls
     << ".o\n"
        "// (or lib"
     << cls
     << ".a) and estc::runtime; no LLVM needed.\n"
        "//\n"
        "//   "
     << llvm::left_justify(cls + " model;", 21)
     << "// variables: zero-filled, owned by the model\n"
        "//   model.set_batch(32); // sizes inputs and outputs (the arena: "
        "each call)\n"
        "//   // fill <function>_arg_<key>(), assign or load var_<name>() ...\n"
        "//   model.<function>();  // runs it; outputs in "
        "<function>_result_<key>()\n"
        "//\n"
        "// - One method per compiled function; variables persist across "
        "calls and are\n"
        "//   updated in place (what a training step needs).\n"
        "// - Accessor names are the tensor keys with '/' (and anything not "
        "allowed in an\n"
        "//   identifier) replaced by '_'; <x>_shape is the shape (-1 = the "
        "batch),\n"
        "//   <x>_count the elements (for inputs/outputs: per example).\n"
        "// - Buffers are 64-byte aligned. bind_input()/bind_output() "
        "(CompiledModel)\n"
        "//   use caller buffers instead, after checking their shapes; the\n"
        "//   buffers of one call must not overlap (the compiled loops assume\n"
        "//   it).\n"
        "// - i1 tensors are bool (one byte, 0 or 1).\n"
        "// - Entry points: extern \"C\" <Name>_<function>(memref descriptors: "
        "arena,\n"
        "//   variables, inputs, outputs; docs/design/codegen-abi.md) and\n"
        "//   <Name>_<function>_packed(void **descriptors).\n"
        "//\n"
        "// Functions (? = batch):\n";
  for (size_t f = 0; f < m.functions.size(); ++f) {
    const FunctionInfo &fn = m.functions[f];
    os << "//   " << fnNames[f] << "(";
    for (size_t i = 0; i < fn.inputs.size(); ++i)
      os << (i ? ", " : "") << fn.inputs[i].key << ": "
         << typeText(fn.inputs[i].dtype, fn.inputs[i].shape);
    os << ") -> (";
    for (size_t i = 0; i < fn.outputs.size(); ++i)
      os << (i ? ", " : "") << fn.outputs[i].key << ": "
         << typeText(fn.outputs[i].dtype, fn.outputs[i].shape);
    os << ")\n";
  }
  int64_t varBytes = 0, trainableBytes = 0, varElements = 0;
  int trainable = 0, local = 0;
  for (const VariableInfo &v : m.variables) {
    local += v.local;
    Size s = bytesOf(v.dtype, v.shape);
    varBytes += s.fixed;
    varElements += s.fixed / static_cast<int64_t>(rt::dtypeBytes(v.dtype));
    if (v.trainable) {
      ++trainable;
      trainableBytes += s.fixed;
    }
  }
  os << "//\n"
        "// Memory (bytes):\n"
        "//   variables: "
     << m.variables.size() << " (" << trainable << " trainable, " << local
     << " local), " << varElements << " elements, " << varBytes
     << " bytes (trainable " << trainableBytes << ")\n";
  for (size_t f = 0; f < m.functions.size(); ++f) {
    const FunctionInfo &fn = m.functions[f];
    Size in, out;
    for (const TensorInfo &t : fn.inputs)
      in += bytesOf(t.dtype, t.shape);
    for (const TensorInfo &t : fn.outputs)
      out += bytesOf(t.dtype, t.shape);
    os << "//   " << fnNames[f] << ": inputs " << formula(in)
       << (fn.loopOf.empty() ? "" : " per step") << ", outputs " << formula(out)
       << ", arena "
       << formula(fn.arenaStatic, fn.arenaPerBatch, fn.arenaPerValue,
                  fn.arenaPerStep, fn.arenaPerBatchStep)
       << "\n";
  }
  os << "//   arena_bytes(batch) = the largest function arena (one arena, "
        "shared)\n"
        "\n"
        "#ifndef "
     << guard << "\n#define " << guard
     << "\n\n"
        "#include \"runtime/CompiledModel.h\"\n"
        "\n"
        "#include <array>\n"
        "#include <cstdint>\n"
        "\n"
        "extern \"C\" {\n";
  for (const FunctionInfo &fn : m.functions)
    os << "void " << packedEntrySymbol(cls, fn.name) << "(void **args);\n";
  os << "}\n\n";

  // --- The class -----------------------------------------------------------
  os << "class " << cls << " : public estc::rt::CompiledModel {\n"
     << "public:\n"
     << "  " << cls << "() : CompiledModel(kSpec, kEntries) {}\n\n"
     << "  static constexpr int kNumVariables = " << m.variables.size() << ";\n"
     << "  static constexpr int kNumFunctions = " << m.functions.size() << ";\n"
     << "  static constexpr int64_t kVariableBytes = " << varBytes << ";\n"
     << "  static const estc::rt::ModelSpec &model_spec() { return kSpec; }\n";

  os << "\n  // Compiled functions.\n  enum Function : int {";
  for (size_t f = 0; f < m.functions.size(); ++f)
    os << (f ? ", " : " ") << "k_" << fnNames[f] << " = " << f;
  os << (m.functions.empty() ? "};\n" : " };\n");
  for (size_t f = 0; f < m.functions.size(); ++f)
    os << "  void " << fnNames[f] << "() { run(k_" << fnNames[f] << "); }\n";

  os << "\n  // Variables.\n";
  for (size_t i = 0; i < m.variables.size(); ++i) {
    const VariableInfo &v = m.variables[i];
    os << "  // " << v.name << ": " << typeText(v.dtype, v.shape)
       << (v.trainable ? ", trainable" : "") << (v.local ? ", local" : "");
    if (!v.initializer.empty())
      os << ", initializer " << v.initializer;
    os << "\n";
    Size s = bytesOf(v.dtype, v.shape);
    os << "  " << cType(v.dtype) << " *" << varNames[i]
       << "() { return static_cast<" << cType(v.dtype) << " *>(variable_data("
       << i << ")); }\n"
       << "  static constexpr std::array<int64_t, " << v.shape.size() << "> "
       << varNames[i] << "_shape = " << arrayInit(v.shape) << ";\n"
       << "  static constexpr int64_t " << varNames[i]
       << "_count = " << s.fixed / static_cast<int64_t>(rt::dtypeBytes(v.dtype))
       << ";\n";
  }

  for (size_t f = 0; f < m.functions.size(); ++f) {
    const FunctionInfo &fn = m.functions[f];
    os << "\n  // " << fn.name << ": inputs and outputs.\n";
    auto accessors = [&](const std::vector<TensorInfo> &ts,
                         const std::vector<std::string> &ids,
                         const char *getter) {
      for (size_t i = 0; i < ts.size(); ++i) {
        const TensorInfo &t = ts[i];
        Size s = bytesOf(t.dtype, t.shape);
        int64_t count =
            s.total() / static_cast<int64_t>(rt::dtypeBytes(t.dtype));
        os << "  // " << t.key << ": " << typeText(t.dtype, t.shape) << "\n"
           << "  " << cType(t.dtype) << " *" << ids[i]
           << "() { return static_cast<" << cType(t.dtype) << " *>(" << getter
           << "(k_" << fnNames[f] << ", " << i << ")); }\n"
           << "  static constexpr std::array<int64_t, " << t.shape.size()
           << "> " << ids[i] << "_shape = " << arrayInit(t.shape) << ";\n"
           << "  static constexpr int64_t " << ids[i] << "_count = " << count
           << ";\n";
      }
    };
    accessors(fn.inputs, argNames[f], "input_data");
    accessors(fn.outputs, resultNames[f], "output_data");
  }

  // --- Metadata tables -----------------------------------------------------
  os << "\nprivate:\n";
  for (size_t i = 0; i < m.variables.size(); ++i)
    if (!m.variables[i].shape.empty())
      os << "  static constexpr int64_t kVarShape" << i
         << "[] = " << arrayInit(m.variables[i].shape) << ";\n";
  auto shapeRef = [](const std::string &table, const std::vector<int64_t> &s) {
    return s.empty() ? std::string("nullptr") : table;
  };
  os << "  static constexpr estc::rt::VariableSpec kVariables[] = {\n";
  for (size_t i = 0; i < m.variables.size(); ++i) {
    const VariableInfo &v = m.variables[i];
    os << "      {" << cString(v.name) << ", " << dtypeEnum(v.dtype) << ", "
       << v.shape.size() << ", "
       << shapeRef("kVarShape" + std::to_string(i), v.shape) << ", "
       << (v.trainable ? "true" : "false") << ", "
       << (v.local ? "true" : "false") << "},\n";
  }
  if (m.variables.empty())
    os << "      {\"\", estc::rt::DType::F32, 0, nullptr, false, false},\n";
  os << "  };\n";
  for (size_t f = 0; f < m.functions.size(); ++f) {
    const FunctionInfo &fn = m.functions[f];
    for (auto [kind, ts] :
         {std::pair{"In", &fn.inputs}, std::pair{"Out", &fn.outputs}}) {
      for (size_t i = 0; i < ts->size(); ++i)
        if (!(*ts)[i].shape.empty())
          os << "  static constexpr int64_t k" << kind << "Shape" << f << "_"
             << i << "[] = " << arrayInit((*ts)[i].shape) << ";\n";
      if (ts->empty())
        continue;
      os << "  static constexpr estc::rt::TensorSpec k" << kind << "puts" << f
         << "[] = {\n";
      for (size_t i = 0; i < ts->size(); ++i) {
        const TensorInfo &t = (*ts)[i];
        os << "      {" << cString(t.key) << ", " << dtypeEnum(t.dtype) << ", "
           << t.shape.size() << ", "
           << shapeRef("k" + std::string(kind) + "Shape" + std::to_string(f) +
                           "_" + std::to_string(i),
                       t.shape);
        if (t.maxSequenceLength > 0)
          os << ", " << t.maxSequenceLength;
        os << "},\n";
      }
      os << "  };\n";
    }
  }
  os << "  static constexpr estc::rt::FunctionSpec kFunctions[] = {\n";
  for (size_t f = 0; f < m.functions.size(); ++f) {
    const FunctionInfo &fn = m.functions[f];
    os << "      {" << cString(fn.name) << ", " << fn.inputs.size() << ", "
       << (fn.inputs.empty() ? std::string("nullptr")
                             : "kInputs" + std::to_string(f))
       << ", " << fn.outputs.size() << ", "
       << (fn.outputs.empty() ? std::string("nullptr")
                              : "kOutputs" + std::to_string(f))
       << ", " << fn.arenaStatic << ", " << fn.arenaPerBatch << ", "
       << (fn.statusOffset >= 0 ? "true" : "false") << ", "
       << std::max<int64_t>(fn.statusOffset, 0) << ", " << fn.arenaPerValue;
    // The sequence length's terms (0 by default: left out, so a model
    // without sequence inputs has the header it always had).
    if (fn.arenaPerStep != 0 || fn.arenaPerBatchStep != 0)
      os << ", " << fn.arenaPerStep << ", " << fn.arenaPerBatchStep;
    os << "},\n";
  }
  if (m.functions.empty())
    os << "      {\"\", 0, nullptr, 0, nullptr, 0, 0, false, 0, 0},\n";
  os << "  };\n";
  // The run-time checks, for the runtime's error messages.
  for (size_t i = 0; i < m.checks.size(); ++i)
    if (!m.checks[i].shape.empty())
      os << "  static constexpr int64_t kCheckShape" << i
         << "[] = " << arrayInit(m.checks[i].shape) << ";\n";
  os << "  static constexpr estc::rt::CheckSpec kChecks[] = {\n";
  for (size_t i = 0; i < m.checks.size(); ++i) {
    const CheckInfo &c = m.checks[i];
    os << "      {" << cString(c.node) << ", " << cString(c.what) << ", "
       << c.lower << ", " << c.upper << ", " << c.shape.size() << ", "
       << shapeRef("kCheckShape" + std::to_string(i), c.shape) << "},\n";
  }
  if (m.checks.empty())
    os << "      {\"\", \"\", 0, 0, 0, nullptr},\n";
  os << "  };\n"
     << "  static constexpr estc::rt::EntryPoint kEntries[] = {\n";
  for (const FunctionInfo &fn : m.functions)
    os << "      " << packedEntrySymbol(cls, fn.name) << ",\n";
  if (m.functions.empty())
    os << "      nullptr,\n";
  os << "  };\n"
     << "  static constexpr estc::rt::ModelSpec kSpec = {" << cString(cls)
     << ", " << m.variables.size() << ", kVariables, " << m.functions.size()
     << ", kFunctions, " << m.checks.size() << ", kChecks"
     << (m.device == rt::Device::Cuda || m.replicas > 1
             ? m.device == rt::Device::Cuda ? ", estc::rt::Device::Cuda"
                                            : ", estc::rt::Device::Cpu"
             : "")
     << (m.replicas > 1 ? ", " + std::to_string(m.replicas) : std::string())
     << "};\n"
     << "};\n\n#endif // " << guard << "\n";
  return text;
}

} // namespace estc
