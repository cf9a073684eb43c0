//===- TargetError.h - llvm::Error from a message ------------*- C++ -*-===//
//
// The compile functions of compiler/Target return llvm::Error with one
// line saying what failed (docs/conventions.md "Errors").
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_COMPILER_TARGET_TARGETERROR_H
#define ESTC_COMPILER_TARGET_TARGETERROR_H

#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

namespace estc {
namespace detail {

/// An llvm::Error (inconvertibleErrorCode) carrying `message`.
inline llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

} // namespace detail
} // namespace estc

#endif // ESTC_COMPILER_TARGET_TARGETERROR_H
