//===- FileError.h - The error a user's files can cause -----------------===//
//
// Checkpoints, the checkpoint state file and event files report every
// problem a user can cause (missing file, truncated or corrupt data, a
// tensor that does not match) as an exception whose what() is one line:
// "<file>: <problem>". Library code never prints on its own, except the
// fallback warnings of latest_checkpoint, which go to a caller-chosen sink.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_SUPPORT_FILEERROR_H
#define ESTC_LIB_SUPPORT_FILEERROR_H

#include <stdexcept>
#include <string>

namespace estc {

/// A problem with a file: what() is one line naming the file and the problem.
class FileError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

} // namespace estc

#endif // ESTC_LIB_SUPPORT_FILEERROR_H
