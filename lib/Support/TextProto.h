//===- TextProto.h - Protobuf text format with a one-line error ---------===//
//
// Parses protobuf text format and reports the first problem as
// "line L:C: message", for the one-line errors of every file reader
// (graph files, the checkpoint state file).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_SUPPORT_TEXTPROTO_H
#define ESTC_LIB_SUPPORT_TEXTPROTO_H

#include <google/protobuf/message.h>

#include <string>

namespace estc {

/// Parses `text` into `message`. On failure returns false and sets `error`
/// to the first problem, "line L:C: message".
bool parseTextProto(const std::string &text, google::protobuf::Message &message,
                    std::string &error);

} // namespace estc

#endif // ESTC_LIB_SUPPORT_TEXTPROTO_H
