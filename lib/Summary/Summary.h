//===- Summary.h - TensorBoard event files -------------------------------===//
//
// SummaryWriter writes the event files TensorBoard reads
// (tf.compat.v1.summary.FileWriter): logdir/events.out.tfevents.<unix
// time>.<hostname>, a sequence of TFRecords
//
//   uint64 length (little-endian) | uint32 masked_crc32c(length bytes)
//   | data[length] | uint32 masked_crc32c(data)
//
// each holding a serialized estc::tensorboard::Event (event.proto, with
// TensorFlow's field numbers). The first record is the Event with
// file_version "brain.Event:2". EventFileReader reads such files back,
// checking both CRCs of every record. Problems with a file throw
// EventFileError, one line naming the file and the record's offset.
// SummaryWriterCache (TF's FileWriterCache) hands every writer of a process
// to one directory (the Estimator's, the hooks') the same SummaryWriter.
// Each record is written with write(2) as it is added; flush() fsyncs. A
// failed write throws "<file>: cannot write: <strerror>" and cuts the file
// back to its last whole record, so it stays readable.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_SUMMARY_SUMMARY_H
#define ESTC_LIB_SUMMARY_SUMMARY_H

#include "lib/Summary/event.pb.h"
#include "lib/Support/FileError.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace estc {
namespace summary {

using tensorboard::Event;

/// An event file that cannot be written, or read back intact.
class EventFileError : public FileError {
public:
  using FileError::FileError;
};

/// The file_version of the first record.
constexpr const char *kEventFileVersion = "brain.Event:2";

/// One TFRecord frame around `data`.
std::string frame_record(std::string_view data);

/// Writes one event file in a log directory (model_dir, or model_dir/eval
/// for evaluation metrics).
class SummaryWriter {
public:
  /// Creates `logdir` and the file events.out.tfevents.<unix time>.<hostname>
  /// (".<n>" appended when that name is taken) and writes the file_version
  /// record. `clock` (seconds since the epoch) is for tests.
  explicit SummaryWriter(const std::string &logdir,
                         std::function<double()> clock = {});
  ~SummaryWriter();
  SummaryWriter(const SummaryWriter &) = delete;
  SummaryWriter &operator=(const SummaryWriter &) = delete;

  /// One scalar (a Summary.Value with simple_value) at `step`.
  void add_scalar(const std::string &tag, double value, int64_t step);
  /// Several scalars in one Event, as an evaluation writes its metrics.
  void add_scalars(const std::vector<std::pair<std::string, double>> &values,
                   int64_t step);
  /// Any Event; wall_time is set when it is 0.
  void add_event(Event event);
  /// Pushes the records written so far to disk (fsync).
  void flush();
  /// Flushes and closes; later adds throw EventFileError. Idempotent.
  void close();

  const std::string &path() const { return path_; }

private:
  double now() const;
  void writeRecord(const std::string &data);
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0; // bytes of whole records written

  std::function<double()> clock_;
};

/// tf.compat.v1.summary.FileWriterCache: one SummaryWriter per log
/// directory in the process, shared by every hook (and the Estimator) that
/// writes there, so a directory gets one event file per process.
class SummaryWriterCache {
public:
  /// The writer for `logdir` (made absolute and normalized), created on
  /// first use.
  static std::shared_ptr<SummaryWriter> get(const std::string &logdir);
  /// Closes every cached writer and forgets them (their files stay).
  static void clear();
};

/// Reads the events of one file in order, checking the framing and both
/// CRCs of every record.
class EventFileReader {
public:
  explicit EventFileReader(const std::string &path);
  /// The next Event, or nullopt at the end of the file.
  std::optional<Event> next();
  const std::string &path() const { return path_; }

private:
  std::string path_;
  std::string bytes_;
  size_t pos_ = 0;
};

/// Every Event of a file.
std::vector<Event> read_events(const std::string &path);

/// The event files (names containing "tfevents") in `logdir`, sorted.
std::vector<std::string> list_event_files(const std::string &logdir);

} // namespace summary
} // namespace estc

#endif // ESTC_LIB_SUMMARY_SUMMARY_H
