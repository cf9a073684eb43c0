//===- GraphIO.cpp - Reading and writing model-graph files --------------===//

#include "lib/Graph/GraphIO.h"

#include "lib/Support/Text.h"
#include "lib/Support/TextProto.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/text_format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

namespace estc {
namespace graph {

namespace {
bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The first string field of `m` (recursively, map keys and values
// included) that is not UTF-8, as "signature.key"; "" when there is none.
// The binary reader rejects such strings (proto3), the text parser does
// not: a text graph must not hold what its binary form cannot.
std::string firstNonUtf8Field(const google::protobuf::Message &m) {
  using google::protobuf::FieldDescriptor;
  const google::protobuf::Reflection *r = m.GetReflection();
  std::vector<const FieldDescriptor *> fields;
  r->ListFields(m, &fields);
  for (const FieldDescriptor *f : fields) {
    int count = f->is_repeated() ? r->FieldSize(m, f) : 1;
    for (int i = 0; i < count; ++i) {
      if (f->type() == FieldDescriptor::TYPE_STRING) {
        std::string scratch;
        const std::string &v =
            f->is_repeated() ? r->GetRepeatedStringReference(m, f, i, &scratch)
                             : r->GetStringReference(m, f, &scratch);
        if (!text::is_valid_utf8(v))
          return f->name();
      } else if (f->type() == FieldDescriptor::TYPE_MESSAGE) {
        std::string inner =
            firstNonUtf8Field(f->is_repeated() ? r->GetRepeatedMessage(m, f, i)
                                               : r->GetMessage(m, f));
        if (!inner.empty())
          return f->name() + "." + inner;
      }
    }
  }
  return "";
}
} // namespace

bool isTextGraphPath(const std::string &path) {
  return endsWith(path, ".pbtxt") || endsWith(path, ".txtpb");
}

bool parseGraph(const std::string &bytes, bool text, const std::string &what,
                GraphDef &graph, std::string &error) {
  graph.Clear();
  if (text) {
    std::string parseError;
    if (!parseTextProto(bytes, graph, parseError)) {
      error = what + ": not a valid text-format GraphDef: " + parseError;
      return false;
    }
    if (std::string field = firstNonUtf8Field(graph); !field.empty()) {
      error = what + ": not a valid text-format GraphDef: " + field +
              " holds a string that is not UTF-8";
      return false;
    }
  } else {
    if (bytes.empty()) {
      error = what + ": empty file, expected a binary GraphDef";
      return false;
    }
    google::protobuf::io::CodedInputStream input(
        reinterpret_cast<const uint8_t *>(bytes.data()),
        static_cast<int>(bytes.size()));
    if (!graph.ParseFromCodedStream(&input) || !input.ConsumedEntireMessage()) {
      error = what + ": not a valid binary GraphDef (truncated or not "
                     "protobuf; text graphs need the .pbtxt extension)";
      return false;
    }
    // Arbitrary bytes can happen to parse as a message made only of fields
    // GraphDef does not have: that is not a graph either.
    if (!graph.GetReflection()->GetUnknownFields(graph).empty()) {
      error = what + ": not a valid binary GraphDef (it holds fields a "
                     "GraphDef does not have)";
      return false;
    }
  }
  if (graph.version() != kGraphVersion) {
    error = what + ": unsupported graph version " +
            std::to_string(graph.version()) + " (this estc reads version " +
            std::to_string(kGraphVersion) + ")";
    return false;
  }
  return true;
}

bool readGraph(const std::string &path, GraphDef &graph, std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) {
    error = path + ": read error";
    return false;
  }
  return parseGraph(buffer.str(), isTextGraphPath(path), path, graph, error);
}

bool serializeGraph(const GraphDef &graph, std::string &bytes) {
  bytes.clear();
  google::protobuf::io::StringOutputStream stream(&bytes);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  return graph.SerializeToCodedStream(&coded);
}

bool writeGraph(const std::string &path, const GraphDef &graph,
                std::string &error) {
  std::string bytes;
  if (isTextGraphPath(path)) {
    if (!google::protobuf::TextFormat::PrintToString(graph, &bytes)) {
      error = path + ": cannot render the graph as text";
      return false;
    }
  } else if (!serializeGraph(graph, bytes)) {
    error = path + ": cannot serialize the graph";
    return false;
  }
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) {
      error = tmp + ": cannot create: " + std::strerror(errno);
      return false;
    }
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) {
      error = tmp + ": write error";
      std::remove(tmp.c_str());
      return false;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    error = path + ": cannot rename from " + tmp + ": " + std::strerror(errno);
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

} // namespace graph
} // namespace estc
