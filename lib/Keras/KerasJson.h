//===- KerasJson.h - Reading Keras's JSON configs (internal) ----*- C++ -*-===//
//
// What lib/Keras's readers of config.json and model_config share: a member
// of an object and a string value, both absent-tolerant (a config written
// by another Keras version, or fuzzed, may lack either).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_KERAS_KERASJSON_H
#define ESTC_LIB_KERAS_KERASJSON_H

#include <rapidjson/document.h>

#include <string>

namespace estc {
namespace keras {
namespace json {

/// `v[key]`; nullptr when `v` is not an object or has no such member.
inline const rapidjson::Value *member(const rapidjson::Value &v,
                                      const char *key) {
  if (!v.IsObject())
    return nullptr;
  auto it = v.FindMember(key);
  return it == v.MemberEnd() ? nullptr : &it->value;
}

/// The string `*v`; "" when `v` is null or not a string.
inline std::string stringOf(const rapidjson::Value *v) {
  return v && v->IsString() ? std::string(v->GetString(), v->GetStringLength())
                            : std::string();
}

} // namespace json
} // namespace keras
} // namespace estc

#endif // ESTC_LIB_KERAS_KERASJSON_H
