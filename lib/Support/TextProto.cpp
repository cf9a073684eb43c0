//===- TextProto.cpp - Protobuf text format with a one-line error -------===//

#include "lib/Support/TextProto.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

namespace estc {

namespace {
// Keeps the first text-format parse error as "line L:C: message".
class FirstErrorCollector : public google::protobuf::io::ErrorCollector {
public:
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string &message) override {
    if (first.empty())
      first = "line " + std::to_string(line + 1) + ":" +
              std::to_string(column + 1) + ": " + message;
  }
  std::string first;
};
} // namespace

bool parseTextProto(const std::string &text, google::protobuf::Message &message,
                    std::string &error) {
  google::protobuf::TextFormat::Parser parser;
  FirstErrorCollector errors;
  parser.RecordErrorsTo(&errors);
  if (parser.ParseFromString(text, &message))
    return true;
  error = errors.first;
  return false;
}

} // namespace estc
