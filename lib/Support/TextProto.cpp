//===- TextProto.cpp - Protobuf text format with a one-line error -------===//

#include "lib/Support/TextProto.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <cstdio>

namespace estc {

namespace {
// Keeps the first text-format parse error as "line L:C: message". The
// message quotes the text at fault; its control characters (a carriage
// return inside a string, say) are escaped so that the error stays one line.
class FirstErrorCollector : public google::protobuf::io::ErrorCollector {
public:
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string &message) override {
    if (!first.empty())
      return;
    first = "line " + std::to_string(line + 1) + ":" +
            std::to_string(column + 1) + ": ";
    for (unsigned char c : message) {
      if (c < 0x20 || c == 0x7f) {
        char buf[5];
        std::snprintf(buf, sizeof buf, "\\x%02x", c);
        first += buf;
      } else {
        first += static_cast<char>(c);
      }
    }
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
