//===- FileIO.h - Whole-file reads and crash-safe writes (internal) -----===//
//
// writeFileAtomically() is how every file in a model_dir is written: the
// bytes go to "<name>.tmp-<pid>-<n>" in the same directory, which is fsynced,
// renamed over <name>, and the directory is fsynced. A process killed at any
// moment leaves either the old file or the new one, plus at worst a
// temporary file that readers never open (isTemporaryFile).
//
// Every failure is a FileError naming the file and strerror's text, e.g.
// "m/checkpoint: cannot write: No space left on device"; short writes and
// EINTR are retried, and the results of fsync and close are checked. The
// tests inject such failures with an LD_PRELOAD shim (test/faults/).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_SUPPORT_FILEIO_H
#define ESTC_LIB_SUPPORT_FILEIO_H

#include "lib/Support/FileError.h"

#include <string>
#include <string_view>
#include <vector>

namespace estc {
namespace fileio {

/// The marker in temporary file names: "<final name>.tmp-<pid>-<n>".
constexpr const char *kTempMarker = ".tmp-";

/// The whole file; FileError "<path>: cannot open: <reason>" otherwise.
std::string readFile(const std::string &path);

/// Writes `data` to `path` crash-safely (see above); FileError on failure,
/// with nothing left behind. A failed fsync of the directory after the
/// rename is an error too (the new file is in place, but may not survive a
/// crash), except where the file system cannot sync directories. With
/// `sync` false neither the file nor the directory is fsynced (the rename
/// still makes the write atomic for readers and survives a killed process,
/// not an OS crash or a power loss: TF's Saver's guarantee).
void writeFileAtomically(const std::string &path, std::string_view data,
                         bool sync = true);

/// Writes all of `data` to `fd`, retrying short writes and EINTR; false,
/// with errno set, when a write fails.
bool writeAll(int fd, std::string_view data);

/// Creates `dir` and its parents; FileError when that fails.
void makeDirs(const std::string &dir);

/// The names (not paths) in `dir`, sorted; empty when `dir` does not exist.
std::vector<std::string> listDir(const std::string &dir);

bool exists(const std::string &path);
bool isDirectory(const std::string &path);
/// Size in bytes, or -1 when the file cannot be stat'ed.
long long fileSize(const std::string &path);

/// Removes a file; a missing file is not an error. FileError otherwise.
void removeFile(const std::string &path);

/// True for a name written by writeFileAtomically and never renamed.
bool isTemporaryFile(const std::string &name);

/// "a/b" from "a" and "b"; an absolute `name` is returned as is.
std::string joinPath(const std::string &dir, const std::string &name);
std::string baseName(const std::string &path);
/// The directory part of `path` ("." when there is none).
std::string dirName(const std::string &path);

/// strerror(errno) of the last failed call.
std::string lastError();

} // namespace fileio
} // namespace estc

#endif // ESTC_LIB_SUPPORT_FILEIO_H
