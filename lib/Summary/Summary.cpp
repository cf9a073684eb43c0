//===- Summary.cpp - TensorBoard event files -----------------------------===//

#include "lib/Summary/Summary.h"

#include "lib/Support/Crc32c.h"
#include "lib/Support/FileIO.h"

#include <cerrno>
#include <chrono>
#include <cmath>
#include <fcntl.h>
#include <filesystem>
#include <map>
#include <mutex>
#include <unistd.h>

namespace estc {
namespace summary {

namespace {
void putLE(std::string &out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint64_t getLE(const char *p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i)
    v = v << 8 | static_cast<unsigned char>(p[i]);
  return v;
}

std::string hostName() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0 || !buf[0])
    return "localhost";
  return buf;
}
} // namespace

std::string frame_record(std::string_view data) {
  std::string out;
  out.reserve(data.size() + 16);
  putLE(out, data.size(), 8);
  putLE(out, crc32c::mask(crc32c::value(out.data(), 8)), 4);
  out.append(data.data(), data.size());
  putLE(out, crc32c::mask(crc32c::value(data)), 4);
  return out;
}

//===----------------------------------------------------------------------===//
// SummaryWriter
//===----------------------------------------------------------------------===//

SummaryWriter::SummaryWriter(const std::string &logdir,
                             std::function<double()> clock)
    : clock_(std::move(clock)) {
  try {
    fileio::makeDirs(logdir);
  } catch (const FileError &e) {
    throw EventFileError(e.what());
  }
  double t = now();
  std::string base = fileio::joinPath(
      logdir, "events.out.tfevents." +
                  std::to_string(static_cast<long long>(std::floor(t))) + "." +
                  hostName());
  path_ = base;
  for (int n = 1; fd_ < 0; ++n) {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd_ < 0 && errno == EEXIST && n < 1000) {
      path_ = base + "." + std::to_string(n);
      continue;
    }
    if (fd_ < 0)
      throw EventFileError(path_ + ": cannot create: " + fileio::lastError());
  }
  Event first;
  first.set_wall_time(t);
  first.set_file_version(kEventFileVersion);
  try {
    add_event(std::move(first));
    flush();
  } catch (const EventFileError &) {
    // No destructor runs for a constructor that throws.
    ::close(fd_);
    ::unlink(path_.c_str());
    throw;
  }
}

SummaryWriter::~SummaryWriter() {
  try {
    close();
  } catch (const EventFileError &) {
    // A destructor cannot report; call close() to see the error.
  }
}

double SummaryWriter::now() const {
  if (clock_)
    return clock_();
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

void SummaryWriter::writeRecord(const std::string &data) {
  if (fd_ < 0)
    throw EventFileError(path_ + ": write after close");
  std::string record = frame_record(data);
  if (!fileio::writeAll(fd_, record)) {
    std::string why = fileio::lastError();
    // Best effort: drop the part of the record that made it, so that the
    // file ends with a whole record and later records follow it.
    bool cut = ::ftruncate(fd_, static_cast<off_t>(size_)) == 0 &&
               ::lseek(fd_, static_cast<off_t>(size_), SEEK_SET) >= 0;
    (void)cut;
    throw EventFileError(path_ + ": cannot write: " + why);
  }
  size_ += record.size();
}

void SummaryWriter::add_event(Event event) {
  if (event.wall_time() == 0)
    event.set_wall_time(now());
  writeRecord(event.SerializeAsString());
}

void SummaryWriter::add_scalar(const std::string &tag, double value,
                               int64_t step) {
  add_scalars({{tag, value}}, step);
}

void SummaryWriter::add_scalars(
    const std::vector<std::pair<std::string, double>> &values, int64_t step) {
  Event event;
  event.set_step(step);
  for (const auto &[tag, value] : values) {
    tensorboard::Summary::Value *v = event.mutable_summary()->add_value();
    v->set_tag(tag);
    v->set_simple_value(static_cast<float>(value));
  }
  add_event(std::move(event));
}

void SummaryWriter::flush() {
  if (fd_ < 0)
    return;
  if (::fsync(fd_) != 0)
    throw EventFileError(path_ + ": cannot write: " + fileio::lastError());
}

void SummaryWriter::close() {
  if (fd_ < 0)
    return;
  int fd = fd_;
  fd_ = -1;
  bool ok = ::fsync(fd) == 0;
  std::string why = ok ? "" : fileio::lastError();
  if (::close(fd) != 0 && ok) {
    ok = false;
    why = fileio::lastError();
  }
  if (!ok)
    throw EventFileError(path_ + ": cannot write: " + why);
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

EventFileReader::EventFileReader(const std::string &path) : path_(path) {
  try {
    bytes_ = fileio::readFile(path);
  } catch (const FileError &e) {
    throw EventFileError(e.what());
  }
}

std::optional<Event> EventFileReader::next() {
  if (pos_ == bytes_.size())
    return std::nullopt;
  std::string where =
      path_ + ": record at offset " + std::to_string(pos_) + ": ";
  size_t left = bytes_.size() - pos_;
  const char *p = bytes_.data() + pos_;
  if (left < 12)
    throw EventFileError(where + "truncated length (" + std::to_string(left) +
                         " bytes left)");
  uint64_t length = getLE(p, 8);
  uint32_t lengthCrc = static_cast<uint32_t>(getLE(p + 8, 4));
  if (crc32c::mask(crc32c::value(p, 8)) != lengthCrc)
    throw EventFileError(where + "length CRC mismatch (corrupt record)");
  if (length > left - 12 || left - 12 - length < 4)
    throw EventFileError(where + "truncated: " + std::to_string(length) +
                         " data bytes + 4 CRC bytes announced, " +
                         std::to_string(left - 12) + " left");
  std::string_view data(p + 12, length);
  uint32_t dataCrc = static_cast<uint32_t>(getLE(p + 12 + length, 4));
  if (crc32c::mask(crc32c::value(data)) != dataCrc)
    throw EventFileError(where + "data CRC mismatch (corrupt record)");
  Event event;
  if (!event.ParseFromArray(data.data(), static_cast<int>(data.size())))
    throw EventFileError(where + "not a valid Event protobuf");
  pos_ += 12 + length + 4;
  return event;
}

std::vector<Event> read_events(const std::string &path) {
  EventFileReader reader(path);
  std::vector<Event> events;
  while (auto e = reader.next())
    events.push_back(std::move(*e));
  return events;
}

std::vector<std::string> list_event_files(const std::string &logdir) {
  std::vector<std::string> files;
  for (const std::string &name : fileio::listDir(logdir))
    if (name.find("tfevents") != std::string::npos)
      files.push_back(fileio::joinPath(logdir, name));
  return files;
}

//===----------------------------------------------------------------------===//
// SummaryWriterCache
//===----------------------------------------------------------------------===//

namespace {
std::mutex &cacheMutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, std::shared_ptr<SummaryWriter>> &cache() {
  static std::map<std::string, std::shared_ptr<SummaryWriter>> c;
  return c;
}
} // namespace

std::shared_ptr<SummaryWriter>
SummaryWriterCache::get(const std::string &logdir) {
  namespace fs = std::filesystem;
  std::string key = fs::absolute(fs::path(logdir)).lexically_normal().string();
  while (key.size() > 1 && key.back() == '/')
    key.pop_back();
  std::lock_guard<std::mutex> lock(cacheMutex());
  auto &writer = cache()[key];
  // A directory removed since (a test, a user starting over) gets a new file.
  if (!writer || !fileio::exists(writer->path()))
    writer = std::make_shared<SummaryWriter>(key);
  return writer;
}

void SummaryWriterCache::clear() {
  std::lock_guard<std::mutex> lock(cacheMutex());
  for (auto &entry : cache())
    if (entry.second)
      entry.second->close();
  cache().clear();
}

} // namespace summary
} // namespace estc
