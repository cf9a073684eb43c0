//===- FuzzSupport.h - Shared helpers of the libFuzzer targets -----------===//
//
// Most readers of untrusted files take a path: a target writes the input to
// a file in a private temporary directory (one per fuzzing process, removed
// at exit) and calls the reader the way a user's program does.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_TEST_FUZZ_FUZZSUPPORT_H
#define ESTC_TEST_FUZZ_FUZZSUPPORT_H

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <unistd.h>

namespace estc {
namespace fuzz {

/// A directory of this process's own under $TMPDIR (else /dev/shm, else
/// /tmp), removed with its files when the process exits normally.
class ScratchDir {
public:
  ScratchDir() {
    // Memory-backed when possible: on a disk file system, replacing a file
    // makes close() wait for the disk (ext4's auto_da_alloc), 10x slower.
    const char *tmp = std::getenv("TMPDIR");
    std::string root = tmp && *tmp                       ? tmp
                       : ::access("/dev/shm", W_OK) == 0 ? "/dev/shm"
                                                         : "/tmp";
    std::string pattern = root + "/estc-fuzz-XXXXXX";
    if (!::mkdtemp(pattern.data())) {
      std::perror("estc fuzz: mkdtemp");
      std::abort();
    }
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir &) = delete;
  ScratchDir &operator=(const ScratchDir &) = delete;

  const std::string &path() const { return path_; }

  /// Writes `bytes` to <dir>/<name> (replacing it) and returns the path.
  /// A failure to write is the fuzzing machine's problem, not the input's:
  /// it aborts.
  std::string write(const std::string &name, std::string_view bytes) const {
    std::string file = path_ + "/" + name;
    std::FILE *f = std::fopen(file.c_str(), "wb");
    if (!f || std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size() ||
        std::fclose(f) != 0) {
      std::perror(("estc fuzz: cannot write " + file).c_str());
      std::abort();
    }
    return file;
  }

private:
  std::string path_;
};

/// The process's scratch directory, created on first use.
inline const ScratchDir &scratch() {
  static ScratchDir dir;
  return dir;
}

inline std::string_view bytesOf(const uint8_t *data, size_t size) {
  return {reinterpret_cast<const char *>(data), size};
}

/// A broken invariant: a real bug, reported as a crash libFuzzer saves.
[[noreturn]] inline void die(const std::string &what) {
  std::fprintf(stderr, "estc fuzz: %s\n", what.c_str());
  std::abort();
}

/// The documented error of a file reader: one line that names the file
/// ("<path>: <problem>"). Anything else is a bug of the reader.
inline void checkFileError(const std::string &message,
                           const std::string &path) {
  if (message.rfind(path + ": ", 0) != 0)
    die("error does not start with the file name: " + message);
  if (message.find_first_of("\n\r") != std::string::npos)
    die("error is not one line: " + message);
}

} // namespace fuzz
} // namespace estc

#endif // ESTC_TEST_FUZZ_FUZZSUPPORT_H
