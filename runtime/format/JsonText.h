//===- JsonText.h - RapidJSON helpers of runtime/format (internal)
//--------===//
#ifndef ESTC_RUNTIME_FORMAT_JSONTEXT_H
#define ESTC_RUNTIME_FORMAT_JSONTEXT_H

#include "rapidjson/document.h"

#include <string>

namespace estc {
namespace modelformat {
namespace detail {

/// A value as LLVM's JSON writer prints it without indentation (object keys
/// sorted): how the compiler has always read back an initializer parameter.
std::string compactJson(const rapidjson::Value &value);

} // namespace detail
} // namespace modelformat
} // namespace estc

#endif // ESTC_RUNTIME_FORMAT_JSONTEXT_H
