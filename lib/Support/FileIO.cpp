//===- FileIO.cpp - Whole-file reads and crash-safe writes ---------------===//

#include "lib/Support/FileIO.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

namespace estc {
namespace fileio {

namespace fs = std::filesystem;

std::string lastError() { return std::strerror(errno); }

std::string readFile(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw FileError(path + ": cannot open: " + lastError());
  struct stat st;
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw FileError(path + ": is a directory, expected a file");
  }
  std::string data;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      std::string why = lastError();
      ::close(fd);
      throw FileError(path + ": cannot read: " + why);
    }
    if (n == 0)
      break;
    data.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return data;
}

bool writeAll(int fd, std::string_view data) {
  const char *p = data.data();
  size_t n = data.size();
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0)
      return false;
    if (w == 0) { // a write(2) that makes no progress is an I/O error
      errno = EIO;
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

namespace {
// fsync of the directory, so that a rename in it survives a crash. An
// empty string on success or where the file system cannot do it, else
// strerror's text.
std::string syncDirectory(const std::string &dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return ""; // best effort: some file systems do not allow it
  std::string why;
  if (::fsync(fd) != 0 && errno != EINVAL && errno != ENOTSUP &&
      errno != EOPNOTSUPP)
    why = lastError();
  ::close(fd);
  return why;
}
} // namespace

void writeFileAtomically(const std::string &path, std::string_view data,
                         bool sync) {
  static std::atomic<unsigned> counter{0};
  std::string tmp = path + kTempMarker + std::to_string(::getpid()) + "-" +
                    std::to_string(counter++);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    throw FileError(path + ": cannot write: " + lastError());
  bool ok = writeAll(fd, data) && (!sync || ::fsync(fd) == 0);
  std::string why = ok ? "" : lastError();
  if (::close(fd) != 0 && ok) {
    ok = false;
    why = lastError();
  }
  if (ok && ::rename(tmp.c_str(), path.c_str()) != 0) {
    ok = false;
    why = lastError();
  }
  if (!ok) {
    ::unlink(tmp.c_str());
    throw FileError(path + ": cannot write: " + why);
  }
  if (!sync)
    return;
  why = syncDirectory(dirName(path));
  if (!why.empty())
    throw FileError(path + ": cannot sync its directory: " + why);
}

void makeDirs(const std::string &dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw FileError(dir + ": cannot create directory: " + ec.message());
  if (!isDirectory(dir))
    throw FileError(dir + ": not a directory");
}

std::vector<std::string> listDir(const std::string &dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec))
    names.push_back(it->path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

bool exists(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

bool isDirectory(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

long long fileSize(const std::string &path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return -1;
  return static_cast<long long>(st.st_size);
}

void removeFile(const std::string &path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT)
    throw FileError(path + ": cannot remove: " + lastError());
}

bool isTemporaryFile(const std::string &name) {
  return name.find(kTempMarker) != std::string::npos;
}

std::string joinPath(const std::string &dir, const std::string &name) {
  if (dir.empty() || (!name.empty() && name[0] == '/'))
    return name;
  if (dir.back() == '/')
    return dir + name;
  return dir + "/" + name;
}

std::string baseName(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string dirName(const std::string &path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos)
    return ".";
  if (slash == 0)
    return "/";
  return path.substr(0, slash);
}

} // namespace fileio
} // namespace estc
