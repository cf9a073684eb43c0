//===- Checkpoint.cpp - Checkpoints in a model_dir -----------------------===//

#include "lib/Checkpoint/Checkpoint.h"

#include "lib/Checkpoint/Partitions.h"
#include "lib/Checkpoint/TensorBundle.h"
#include "lib/Checkpoint/checkpoint_state.pb.h"
#include "lib/Support/Crc32c.h"
#include "lib/Support/FileIO.h"
#include "lib/Support/Json.h"
#include "lib/Support/Printable.h"
#include "lib/Support/Text.h"
#include "lib/Support/TextProto.h"

#include <google/protobuf/text_format.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fcntl.h>
#include <iostream>
#include <set>
#include <sys/stat.h>
#include <thread>
#include <tuple>
#include <unistd.h>

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "checkpoints store little-endian bytes as they are in memory");

namespace estc {
namespace train {

//===----------------------------------------------------------------------===//
// Writing a checkpoint file
//===----------------------------------------------------------------------===//

namespace {
using TensorRefs =
    std::vector<std::pair<const std::string *, const TensorValue *>>;

std::string serializeRefs(TensorRefs tensors, int64_t globalStep) {
  std::sort(tensors.begin(), tensors.end(),
            [](const auto &a, const auto &b) { return *a.first < *b.first; });
  std::string meta = "{" + json::quote("format") + ":" +
                     json::quote(kCheckpointFormat) + "," +
                     json::quote("global_step") + ":" +
                     json::quote(std::to_string(globalStep));
  std::string entries;
  uint64_t offset = 0;
  for (const auto &[name, t] : tensors) {
    if (name->empty() || *name == "__metadata__")
      throw std::invalid_argument("checkpoint: invalid tensor name '" + *name +
                                  "'");
    // The header is JSON, which holds UTF-8 text only: a name that is not
    // would make a checkpoint no reader (estc's, safetensors') accepts.
    if (!text::is_valid_utf8(*name))
      throw std::invalid_argument("checkpoint: tensor name '" +
                                  escape_control_chars(*name, true) +
                                  "' is not valid UTF-8");
    size_t want = static_cast<size_t>(t->num_elements()) * dtype_size(t->dtype);
    if (t->data.size() != want)
      throw std::invalid_argument("checkpoint: tensor '" + *name + "' has " +
                                  std::to_string(t->data.size()) + " bytes, " +
                                  t->spec().str() + " needs " +
                                  std::to_string(want));
    meta += "," + json::quote("crc32c/" + *name) + ":" +
            json::quote(crc32c::hex(crc32c::value(t->data)));
    entries += "," + json::quote(*name) + ":{\"dtype\":\"" +
               safetensors_name(t->dtype) + "\",\"shape\":[";
    for (size_t i = 0; i < t->shape.size(); ++i)
      entries += (i ? "," : "") + std::to_string(t->shape[i]);
    entries += "],\"data_offsets\":[" + std::to_string(offset) + "," +
               std::to_string(offset + t->data.size()) + "]}";
    offset += t->data.size();
  }
  std::string header = "{\"__metadata__\":" + meta + "}" + entries + "}";
  // Pad with spaces (as safetensors does) so the data starts 8-aligned.
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string out;
  out.reserve(8 + header.size() + offset);
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i)
    out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  out += header;
  for (const auto &ref : tensors)
    out += ref.second->data;
  return out;
}

TensorRefs refsOf(const VariableMap &variables) {
  TensorRefs refs;
  for (const auto &[name, t] : variables)
    refs.emplace_back(&name, &t);
  return refs;
}
} // namespace

namespace {
bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The safetensors file of a prefix, whatever exists (what the Saver writes).
std::string safetensorsFile(const std::string &prefix) {
  return endsWith(prefix, kCheckpointSuffix) ? prefix
                                             : prefix + kCheckpointSuffix;
}
} // namespace

std::string checkpoint_file(const std::string &prefix) {
  std::string file = safetensorsFile(prefix);
  if (file != prefix && !fileio::exists(file) && is_tensor_bundle(prefix))
    return bundle_index_file(prefix);
  return file;
}

std::string serialize_checkpoint(const VariableMap &variables,
                                 int64_t global_step) {
  return serializeRefs(refsOf(variables), global_step);
}

void write_checkpoint(const std::string &file, const VariableMap &variables,
                      int64_t global_step) {
  try {
    fileio::writeFileAtomically(file,
                                serialize_checkpoint(variables, global_step));
  } catch (const FileError &e) {
    throw CheckpointError(e.what());
  }
}

//===----------------------------------------------------------------------===//
// Reading a checkpoint file
//===----------------------------------------------------------------------===//

namespace {
// Header sizes above this are corrupt lengths, not headers (safetensors
// itself refuses headers over 100 MB).
constexpr uint64_t kMaxHeaderSize = 100'000'000;

class Fd {
public:
  explicit Fd(const std::string &path)
      : fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    if (fd < 0)
      throw CheckpointError(path + ": cannot open: " + fileio::lastError());
  }
  ~Fd() { ::close(fd); }
  Fd(const Fd &) = delete;
  Fd &operator=(const Fd &) = delete;
  /// Reads exactly n bytes at offset: "" when it did, else why not
  /// (strerror's text, or kEndOfFile).
  std::string readAt(char *buf, size_t n, uint64_t offset) const {
    while (n > 0) {
      ssize_t r = ::pread(fd, buf, n, static_cast<off_t>(offset));
      if (r < 0 && errno == EINTR)
        continue;
      if (r < 0)
        return fileio::lastError();
      if (r == 0)
        return kEndOfFile;
      buf += r;
      n -= static_cast<size_t>(r);
      offset += static_cast<uint64_t>(r);
    }
    return "";
  }
  uint64_t size() const {
    struct stat st;
    return ::fstat(fd, &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
  }
  static constexpr const char *kEndOfFile = "unexpected end of file";
  int fd;
};

/// The error for a failed Fd::readAt: the end of the file is data loss (the
/// file shrank), anything else an I/O error.
[[noreturn]] void throwReadError(const std::string &what,
                                 const std::string &why) {
  if (why == Fd::kEndOfFile)
    throw DataLossError(what + ": " + why + " (truncated?)");
  throw CheckpointError(what + ": " + why);
}

std::optional<uint32_t> parseHex8(const std::string &s) {
  if (s.size() != 8)
    return std::nullopt;
  uint32_t v = 0;
  for (char c : s) {
    v <<= 4;
    if (c >= '0' && c <= '9')
      v |= c - '0';
    else if (c >= 'a' && c <= 'f')
      v |= c - 'a' + 10;
    else if (c >= 'A' && c <= 'F')
      v |= c - 'A' + 10;
    else
      return std::nullopt;
  }
  return v;
}

std::optional<int64_t> parseInt64(const std::string &s) {
  if (s.empty() || s.size() > 19)
    return std::nullopt;
  size_t i = s[0] == '-' ? 1 : 0;
  if (i == s.size())
    return std::nullopt;
  int64_t v = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9' || __builtin_mul_overflow(v, 10, &v) ||
        __builtin_add_overflow(v, s[i] - '0', &v))
      return std::nullopt;
  }
  return s[0] == '-' ? -v : v;
}

// A tensor name or metadata key from the file, quoted, its control
// characters escaped (\n, \x01): an error stays one line whatever the file
// holds.
std::string quoted(const std::string &name) {
  return "'" + escape_control_chars(name) + "'";
}
} // namespace

CheckpointReader::CheckpointReader(const std::string &path) {
  path_ = path;
  // A TF checkpoint: its .index file, its prefix, or its prefix +
  // kCheckpointSuffix (what checkpoint_file made of a prefix before the
  // bundle was written).
  std::optional<std::string> bundle;
  if (fileio::exists(path)) {
    if (auto prefix = bundle_prefix_of(path); prefix && !endsWith(path, "/"))
      bundle = prefix;
  } else if (fileio::exists(safetensorsFile(path))) {
    path_ = safetensorsFile(path);
  } else if (train::is_tensor_bundle(path)) {
    bundle = path;
  } else if (endsWith(path, kCheckpointSuffix) &&
             train::is_tensor_bundle(path.substr(
                 0, path.size() - std::strlen(kCheckpointSuffix)))) {
    bundle = path.substr(0, path.size() - std::strlen(kCheckpointSuffix));
  }
  if (bundle) {
    auto reader = std::make_shared<TensorBundleReader>(*bundle);
    path_ = reader->index_file();
    metadata_["format"] = "tensor-bundle-v2";
    for (const auto &[name, info] : reader->tensors())
      if (auto dtype = dtype_from_tf_number(info.tf_dtype))
        specs_[name] = VariableSpec{*dtype, info.shape};
    auto step = specs_.find("global_step");
    if (step != specs_.end() && step->second.shape.empty() &&
        (step->second.dtype == DType::Int64 ||
         step->second.dtype == DType::Int32))
      globalStep_ =
          static_cast<int64_t>(reader->get_tensor("global_step").element(0));
    bundle_ = std::move(reader);
    return;
  }
  if (fileio::isDirectory(path_))
    throw CheckpointError(path_ +
                          ": is a directory, expected a checkpoint file");
  const std::string &f = path_;
  // Everything wrong with the bytes themselves is data loss.
  auto fail = [&f](const std::string &what) -> DataLossError {
    return DataLossError(f + ": " + escape_control_chars(what));
  };

  Fd fd(path_);
  uint64_t fileSize = fd.size();
  if (fileSize < 8)
    throw fail("file is " + std::to_string(fileSize) +
               " bytes, too short for a checkpoint header (truncated?)");
  unsigned char lenBytes[8];
  if (std::string why = fd.readAt(reinterpret_cast<char *>(lenBytes), 8, 0);
      !why.empty())
    throwReadError(f + ": cannot read the header length", why);
  uint64_t headerSize = 0;
  for (int i = 7; i >= 0; --i)
    headerSize = headerSize << 8 | lenBytes[i];
  if (headerSize == 0)
    throw fail("header length is 0 (corrupt header length)");
  if (headerSize > kMaxHeaderSize)
    throw fail("header length " + std::to_string(headerSize) +
               " is implausible (corrupt header length)");
  if (8 + headerSize > fileSize)
    throw fail("header length " + std::to_string(headerSize) +
               " exceeds the file size " + std::to_string(fileSize) +
               " (truncated file or corrupt header length)");
  std::string header(headerSize, '\0');
  if (std::string why = fd.readAt(header.data(), headerSize, 8); !why.empty())
    throwReadError(f + ": cannot read the header", why);
  dataStart_ = 8 + headerSize;
  uint64_t dataSize = fileSize - dataStart_;

  if (header[0] != '{')
    throw fail("header does not start with '{' (not a safetensors file?)");
  json::Value top;
  try {
    top = json::parse(header);
  } catch (const json::ParseError &e) {
    throw fail(std::string("header is not valid JSON: ") + e.what());
  }
  if (!top.isObject())
    throw fail("header is not a JSON object");

  struct Span {
    uint64_t begin, end;
    const std::string *name;
  };
  std::vector<Span> spans;
  bool sawMetadata = false;
  for (const auto &[name, v] : top.fields) {
    if (name == "__metadata__") {
      if (!v.isObject())
        throw fail("__metadata__ is not a JSON object");
      for (const auto &[key, value] : v.fields) {
        if (!value.isString())
          throw fail("__metadata__ value for " + quoted(key) +
                     " is not a string");
        metadata_[key] = value.text;
      }
      sawMetadata = true;
      continue;
    }
    std::string where = "tensor " + quoted(name) + ": ";
    if (!v.isObject())
      throw fail(where + "header entry is not a JSON object");
    for (const auto &field : v.fields)
      if (field.first != "dtype" && field.first != "shape" &&
          field.first != "data_offsets")
        throw fail(where + "unknown header field " + quoted(field.first));
    const json::Value *dtype = v.find("dtype");
    const json::Value *shape = v.find("shape");
    const json::Value *offsets = v.find("data_offsets");
    if (!dtype || !shape || !offsets)
      throw fail(where + "header entry needs dtype, shape and data_offsets");
    std::optional<DType> dt = dtype->isString()
                                  ? dtype_from_safetensors_name(dtype->text)
                                  : std::nullopt;
    if (!dt)
      throw fail(
          where + "unsupported dtype " +
          (dtype->isString() ? json::quote(dtype->text) : "(not a string)") +
          " (expected F32, F64, I32, I64, BOOL, F16 or BF16)");
    VariableSpec spec{*dt, {}};
    if (!shape->isArray())
      throw fail(where + "shape is not an array");
    uint64_t bytes = dtype_size(*dt);
    // The element count (VariableSpec::num_elements, in int64, dimension by
    // dimension) must not overflow either, even when a later 0 makes it 0.
    int64_t elements = 1;
    for (const json::Value &d : shape->items) {
      std::optional<int64_t> n = d.asNonNegativeInt();
      if (!n)
        throw fail(where +
                   "shape has a dimension that is not a non-negative integer");
      spec.shape.push_back(*n);
      if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(*n), &bytes) ||
          __builtin_mul_overflow(elements, *n, &elements))
        throw fail(where + "shape " + spec.str() + " is too large");
    }
    std::optional<int64_t> begin, end;
    if (offsets->isArray() && offsets->items.size() == 2) {
      begin = offsets->items[0].asNonNegativeInt();
      end = offsets->items[1].asNonNegativeInt();
    }
    if (!begin || !end || *begin > *end)
      throw fail(where +
                 "data_offsets is not [begin, end] with 0 <= begin <= end");
    if (static_cast<uint64_t>(*end - *begin) != bytes)
      throw fail(where + "data_offsets [" + std::to_string(*begin) + ", " +
                 std::to_string(*end) + ") hold " +
                 std::to_string(*end - *begin) + " bytes, but " + spec.str() +
                 " needs " + std::to_string(bytes));
    specs_[name] = spec;
    entries_[name] =
        Entry{static_cast<uint64_t>(*begin), static_cast<uint64_t>(*end), 0};
    spans.push_back({entries_[name].begin, entries_[name].end, &name});
  }

  // The data section must be exactly the tensors' bytes, in any order, with
  // no overlap and no hole (as safetensors requires).
  std::sort(spans.begin(), spans.end(), [](const Span &a, const Span &b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t expected = 0;
  const std::string *prev = nullptr;
  for (const Span &s : spans) {
    if (s.begin < expected)
      throw fail("tensors " + quoted(*prev) + " and " + quoted(*s.name) +
                 " overlap in the data section");
    if (s.begin > expected)
      throw fail("tensor " + quoted(*s.name) + ": data starts at byte " +
                 std::to_string(s.begin) + ", expected " +
                 std::to_string(expected) + " (hole in the data section)");
    if (s.end > dataSize)
      throw fail("tensor " + quoted(*s.name) + ": data [" +
                 std::to_string(s.begin) + ", " + std::to_string(s.end) +
                 ") extends past the end of the file (data section is " +
                 std::to_string(dataSize) + " bytes; truncated?)");
    expected = s.end;
    prev = s.name;
  }
  if (expected != dataSize)
    throw fail(std::to_string(dataSize - expected) +
               " bytes after the last tensor (corrupt header or file)");

  // estc's own metadata: format, global step, one CRC32C per tensor.
  if (!sawMetadata || !metadata_.count("format"))
    throw fail(std::string("not an estc checkpoint (no \"format\": \"") +
               kCheckpointFormat + "\" in __metadata__)");
  if (metadata_["format"] != kCheckpointFormat)
    throw fail("unsupported checkpoint format " +
               json::quote(metadata_["format"]) + " (this estc reads " +
               kCheckpointFormat + ")");
  auto step = metadata_.count("global_step")
                  ? parseInt64(metadata_["global_step"])
                  : std::nullopt;
  if (!step)
    throw fail("__metadata__ has no integer global_step");
  globalStep_ = *step;
  for (auto &[name, entry] : entries_) {
    auto it = metadata_.find("crc32c/" + name);
    if (it == metadata_.end())
      throw fail("tensor " + quoted(name) + ": no crc32c/" + name +
                 " in __metadata__");
    std::optional<uint32_t> crc = parseHex8(it->second);
    if (!crc)
      throw fail("tensor " + quoted(name) + ": crc32c/" + name +
                 " is not 8 hex digits");
    entry.crc = *crc;
  }
  for (const auto &[key, value] : metadata_)
    if (key.rfind("crc32c/", 0) == 0 && !entries_.count(key.substr(7)))
      throw fail("__metadata__ has " + key + " but no such tensor");
}

TensorValue CheckpointReader::get_tensor(const std::string &name) const {
  if (bundle_) {
    if (!specs_.count(name) && bundle_->has_tensor(name))
      return bundle_->get_tensor(name); // its one-line dtype error
    if (!specs_.count(name))
      throw CheckpointError(path_ + ": no tensor " + quoted(name) +
                            " in the checkpoint");
    return bundle_->get_tensor(name);
  }
  auto it = entries_.find(name);
  if (it == entries_.end())
    throw CheckpointError(path_ + ": no tensor " + quoted(name) +
                          " in the checkpoint");
  const Entry &e = it->second;
  std::string data(e.end - e.begin, '\0');
  Fd fd(path_);
  if (std::string why =
          fd.readAt(data.data(), data.size(), dataStart_ + e.begin);
      !why.empty())
    throwReadError(
        path_ + ": tensor " + quoted(name) + ": cannot read its data", why);
  uint32_t crc = crc32c::value(data);
  if (crc != e.crc)
    throw DataLossError(path_ + ": tensor " + quoted(name) +
                        ": CRC32C mismatch (stored " + crc32c::hex(e.crc) +
                        ", computed " + crc32c::hex(crc) +
                        "): the data is corrupt");
  const VariableSpec &spec = specs_.at(name);
  TensorValue t;
  t.dtype = spec.dtype;
  t.shape = spec.shape;
  t.data = std::move(data);
  return t;
}

VariableMap CheckpointReader::read_all() const {
  std::vector<std::string> names;
  if (bundle_)
    for (const auto &spec : specs_)
      names.push_back(spec.first);
  else
    for (const auto &entry : entries_)
      names.push_back(entry.first);
  // The tensors on up to 4 threads (each one read, checksummed and copied
  // by one of them: reads from the page cache and CRC32C are bound by a
  // core, not the disk); the first failing tensor in name order is the one
  // reported, as a sequential read would.
  std::vector<TensorValue> values(names.size());
  std::vector<std::exception_ptr> errors(names.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < names.size();) {
      try {
        values[i] =
            bundle_ ? bundle_->get_tensor(names[i]) : get_tensor(names[i]);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  };
  size_t threads = std::min<size_t>(
      {std::max(1U, std::thread::hardware_concurrency()), 4, names.size()});
  std::vector<std::thread> pool;
  for (size_t k = 1; k < threads; ++k)
    pool.emplace_back(work);
  work();
  for (std::thread &t : pool)
    t.join();
  VariableMap all;
  for (size_t i = 0; i < names.size(); ++i) {
    if (errors[i])
      std::rethrow_exception(errors[i]);
    all.emplace(std::move(names[i]), std::move(values[i]));
  }
  return all;
}

void CheckpointReader::verify() const {
  if (bundle_) {
    bundle_->verify();
    return;
  }
  for (const auto &entry : entries_)
    get_tensor(entry.first);
}

//===----------------------------------------------------------------------===//
// The state file
//===----------------------------------------------------------------------===//

namespace {

std::string statePath(const std::string &modelDir) {
  return fileio::joinPath(modelDir, kCheckpointStateFile);
}
} // namespace

std::optional<CheckpointState>
get_checkpoint_state(const std::string &model_dir) {
  std::string path = statePath(model_dir);
  if (!fileio::exists(path))
    return std::nullopt;
  std::string text;
  try {
    text = fileio::readFile(path);
  } catch (const FileError &e) {
    throw CheckpointError(e.what());
  }
  proto::CheckpointState p;
  std::string parseError;
  if (!parseTextProto(text, p, parseError))
    throw CheckpointError(
        path + ": not a valid CheckpointState text file: " + parseError);
  if (p.model_checkpoint_path().empty())
    throw CheckpointError(path + ": no model_checkpoint_path");
  CheckpointState s;
  s.model_checkpoint_path = p.model_checkpoint_path();
  s.all_model_checkpoint_paths.assign(p.all_model_checkpoint_paths().begin(),
                                      p.all_model_checkpoint_paths().end());
  s.all_model_checkpoint_timestamps.assign(
      p.all_model_checkpoint_timestamps().begin(),
      p.all_model_checkpoint_timestamps().end());
  s.last_preserved_timestamp = p.last_preserved_timestamp();
  return s;
}

void update_checkpoint_state(const std::string &model_dir,
                             const CheckpointState &state) {
  proto::CheckpointState p;
  p.set_model_checkpoint_path(state.model_checkpoint_path);
  for (const std::string &s : state.all_model_checkpoint_paths)
    p.add_all_model_checkpoint_paths(s);
  for (double t : state.all_model_checkpoint_timestamps)
    p.add_all_model_checkpoint_timestamps(t);
  p.set_last_preserved_timestamp(state.last_preserved_timestamp);
  std::string text;
  google::protobuf::TextFormat::Printer printer;
  printer.PrintToString(p, &text);
  try {
    fileio::writeFileAtomically(statePath(model_dir), text);
  } catch (const FileError &e) {
    throw CheckpointError(e.what());
  }
}

//===----------------------------------------------------------------------===//
// Finding and restoring the latest valid checkpoint
//===----------------------------------------------------------------------===//

void print_warning(const std::string &line) {
  std::cerr << "estc: warning: " << line << "\n";
}

namespace {
// The step of "<name>-<digits>.safetensors" or of a TF checkpoint's
// "<name>-<digits>.index", or nullopt; `stem` is the name without the
// suffix.
std::optional<int64_t> stepOfFile(const std::string &name, std::string &stem) {
  if (fileio::isTemporaryFile(name))
    return std::nullopt;
  if (endsWith(name, kCheckpointSuffix) &&
      name.size() > std::strlen(kCheckpointSuffix))
    stem = name.substr(0, name.size() - std::strlen(kCheckpointSuffix));
  else if (auto prefix = bundle_prefix_of(name))
    stem = *prefix;
  else
    return std::nullopt;
  size_t dash = stem.rfind('-');
  if (dash == std::string::npos || dash + 1 == stem.size())
    return std::nullopt;
  std::string digits = stem.substr(dash + 1);
  if (digits.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  return parseInt64(digits);
}

// Candidate prefixes, newest first: the state file's, then the directory's.
// A corrupt state file goes to `stateError`.
std::vector<std::string> candidatePrefixes(
    const std::string &modelDir,
    const std::function<void(const CheckpointError &)> &stateError) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  auto add = [&](const std::string &prefix) {
    std::string p = fileio::joinPath(modelDir, prefix);
    if (seen.insert(checkpoint_file(p)).second)
      out.push_back(p);
  };
  try {
    if (auto state = get_checkpoint_state(modelDir)) {
      add(state->model_checkpoint_path);
      for (auto it = state->all_model_checkpoint_paths.rbegin();
           it != state->all_model_checkpoint_paths.rend(); ++it)
        add(*it);
    }
  } catch (const CheckpointError &e) {
    stateError(e);
  }
  std::vector<std::pair<int64_t, std::string>> files;
  for (const std::string &name : fileio::listDir(modelDir)) {
    std::string stem;
    if (auto step = stepOfFile(name, stem))
      files.emplace_back(*step, stem);
  }
  std::sort(files.begin(), files.end(), [](const auto &a, const auto &b) {
    return a.first != b.first ? a.first > b.first : a.second > b.second;
  });
  for (const auto &f : files)
    add(f.second);
  return out;
}
} // namespace

CheckpointIndex::CheckpointIndex(std::string model_dir, WarningSink warn)
    : modelDir_(std::move(model_dir)), warn_(std::move(warn)) {}

CheckpointIndex::FileId CheckpointIndex::idOf(const std::string &path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return {};
  return {static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
          static_cast<uint64_t>(st.st_size),
          static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 +
              st.st_mtim.tv_nsec};
}

std::vector<std::string> CheckpointIndex::candidates() {
  return candidatePrefixes(modelDir_, [&](const CheckpointError &e) {
    FileId id = idOf(statePath(modelDir_));
    if (corruptState_ && *corruptState_ == id)
      return; // reported already
    corruptState_ = id;
    warn_(std::string(e.what()) + "; looking for checkpoint files in " +
          modelDir_ + " instead");
  });
}

// Calls `tryOne(prefix)` on each candidate, newest first, until one does
// not throw CheckpointError; returns its prefix. A file with a verdict for
// its current version is not tried again when invalid, nor when valid and
// `trustValid`. Throws when there were candidates but none was valid.
template <typename F>
std::optional<std::string> CheckpointIndex::firstValid(bool trustValid,
                                                       F tryOne) {
  std::vector<std::string> all = candidates();
  for (size_t i = 0; i < all.size(); ++i) {
    std::string file = checkpoint_file(all[i]);
    FileId id = idOf(file);
    auto known = verdicts_.find(file);
    if (known != verdicts_.end() && known->second.id == id) {
      if (!known->second.valid)
        continue;
      if (trustValid)
        return all[i];
    }
    try {
      tryOne(all[i]);
      verdicts_[file] = {id, true};
      return all[i];
    } catch (const CheckpointError &e) {
      verdicts_[file] = {id, false};
      warn_(std::string(e.what()) +
            (i + 1 < all.size() ? "; falling back to an older checkpoint"
                                : "; no older checkpoint"));
    }
  }
  if (!all.empty())
    throw CheckpointError(modelDir_ + ": none of its " +
                          std::to_string(all.size()) +
                          " checkpoints is valid (see the warnings above)");
  return std::nullopt;
}

std::optional<std::string> CheckpointIndex::latest() {
  std::lock_guard<std::mutex> lock(mutex_);
  return firstValid(/*trustValid=*/true, [](const std::string &prefix) {
    CheckpointReader(checkpoint_file(prefix)).verify();
  });
}

std::optional<RestoredCheckpoint> CheckpointIndex::restore() {
  std::lock_guard<std::mutex> lock(mutex_);
  RestoredCheckpoint restored;
  auto prefix = firstValid(/*trustValid=*/false, [&](const std::string &p) {
    CheckpointReader reader(checkpoint_file(p));
    restored.variables = reader.read_all();
    restored.global_step = reader.global_step();
  });
  if (!prefix)
    return std::nullopt;
  restored.path = *prefix;
  return restored;
}

std::optional<std::string> latest_checkpoint(const std::string &model_dir,
                                             const WarningSink &warn) {
  return CheckpointIndex(model_dir, warn).latest();
}

std::optional<RestoredCheckpoint> restore_latest(const std::string &model_dir,
                                                 const WarningSink &warn) {
  return CheckpointIndex(model_dir, warn).restore();
}

std::string resolve_checkpoint(const std::string &ckpt_dir_or_file,
                               const WarningSink &warn) {
  if (fileio::isDirectory(ckpt_dir_or_file)) {
    std::optional<std::string> latest =
        latest_checkpoint(ckpt_dir_or_file, warn);
    if (!latest)
      throw CheckpointError(ckpt_dir_or_file +
                            ": no checkpoint in this directory");
    return checkpoint_file(*latest);
  }
  if (!fileio::exists(ckpt_dir_or_file) &&
      fileio::exists(checkpoint_file(ckpt_dir_or_file)))
    return checkpoint_file(ckpt_dir_or_file);
  return ckpt_dir_or_file;
}

CheckpointReader load_checkpoint(const std::string &ckpt_dir_or_file) {
  return CheckpointReader(resolve_checkpoint(ckpt_dir_or_file));
}

std::map<std::string, VariableSpec>
list_variables(const std::string &ckpt_dir_or_file) {
  return load_checkpoint(ckpt_dir_or_file).variables();
}

TensorValue load_variable(const std::string &ckpt_dir_or_file,
                          const std::string &name) {
  return load_checkpoint(ckpt_dir_or_file).get_tensor(name);
}

//===----------------------------------------------------------------------===//
// Saver
//===----------------------------------------------------------------------===//

namespace {
// Deletes a checkpoint's files: P.safetensors, or a TF checkpoint's
// P.index and P.data-*, and the P.meta (MetaGraphDef) TF's Saver writes
// beside it, as TF's garbage collection does.
void removeBundleFiles(const std::string &prefix);
/// The directory of a sharded save's parts (TensorBundle.h,
/// bundle_part_prefix) and the files in it: a save that failed or was
/// killed before its merge. Best effort.
void removePartsDir(const std::string &dir) {
  try {
    if (!fileio::isDirectory(dir))
      return;
    for (const std::string &name : fileio::listDir(dir))
      ::unlink(fileio::joinPath(dir, name).c_str());
  } catch (const FileError &) {
  }
  ::rmdir(dir.c_str());
}
void removeCheckpointFiles(const std::string &prefix) {
  fileio::removeFile(safetensorsFile(prefix));
  removeBundleFiles(prefix);
}
// A TF checkpoint's files only (none when P.index is missing).
void removeBundleFiles(const std::string &prefix) {
  if (!is_tensor_bundle(prefix))
    return;
  // The index first: without it the data files are no checkpoint.
  fileio::removeFile(bundle_index_file(prefix));
  fileio::removeFile(prefix + ".meta");
  std::string dataPrefix = fileio::baseName(prefix) + ".data-";
  std::string dir = fileio::dirName(prefix);
  for (const std::string &name : fileio::listDir(dir))
    if (name.rfind(dataPrefix, 0) == 0 && !fileio::isTemporaryFile(name))
      fileio::removeFile(fileio::joinPath(dir, name));
}
} // namespace

Saver::Saver(std::string model_dir, SaverOptions options)
    : modelDir_(std::move(model_dir)), options_(std::move(options)) {
  if (options_.max_to_keep < 0)
    throw std::invalid_argument("Saver: max_to_keep must be >= 0, got " +
                                std::to_string(options_.max_to_keep));
  if (options_.num_shards < 1 || options_.num_shards > 99999)
    throw std::invalid_argument(
        "Saver: num_shards must be in [1, 99999], got " +
        std::to_string(options_.num_shards));
  format_ = options_.format == CheckpointFormat::Auto
                ? CheckpointFormat::Safetensors
                : options_.format;
  try {
    fileio::makeDirs(modelDir_);
    // Temporary files of a writer that was killed before its rename, and
    // the parts of a sharded save killed before its merge.
    std::string partsSuffix = kBundlePartsDirSuffix;
    for (const std::string &name : fileio::listDir(modelDir_))
      if (name.rfind(options_.prefix + "-", 0) == 0 &&
          name.size() > partsSuffix.size() &&
          name.compare(name.size() - partsSuffix.size(), partsSuffix.size(),
                       partsSuffix) == 0)
        removePartsDir(fileio::joinPath(modelDir_, name));
      else if (fileio::isTemporaryFile(name) &&
               (name.rfind(options_.prefix + "-", 0) == 0 ||
                name.rfind(std::string(kCheckpointStateFile) +
                               fileio::kTempMarker,
                           0) == 0))
        fileio::removeFile(fileio::joinPath(modelDir_, name));
  } catch (const FileError &e) {
    throw CheckpointError(e.what());
  }
  lastPreserved_ = now();
  std::optional<CheckpointState> state;
  try {
    state = get_checkpoint_state(modelDir_);
  } catch (const CheckpointError &) {
    // Silently: whoever reads model_dir reports the state file (once); the
    // next save rewrites it, and the checkpoints it listed stay on disk.
  }
  if (!state)
    return;
  if (options_.format == CheckpointFormat::Auto) {
    std::string newest =
        fileio::joinPath(modelDir_, state->model_checkpoint_path);
    if (!fileio::exists(safetensorsFile(newest)) && is_tensor_bundle(newest))
      format_ = CheckpointFormat::TensorBundle;
  }
  const auto &paths = state->all_model_checkpoint_paths;
  const auto &times = state->all_model_checkpoint_timestamps;
  for (size_t i = 0; i < paths.size(); ++i)
    if (fileio::exists(checkpoint_file(fileio::joinPath(modelDir_, paths[i]))))
      last_.emplace_back(paths[i],
                         times.size() == paths.size() ? times[i] : now());
  if (state->last_preserved_timestamp > 0)
    lastPreserved_ = state->last_preserved_timestamp;
}

double Saver::now() const {
  if (options_.clock)
    return options_.clock();
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

std::string Saver::save(const VariableMap &variables, int64_t global_step) {
  std::string rel = options_.prefix + "-" + std::to_string(global_step);
  std::string prefix = fileio::joinPath(modelDir_, rel);

  TensorRefs refs = refsOf(variables);
  const std::string stepName = "global_step";
  TensorValue stepTensor = TensorValue::of<int64_t>({}, {global_step});
  if (!variables.count(stepName))
    refs.emplace_back(&stepName, &stepTensor);
  // A save that fails leaves model_dir as it was: its state, and no new
  // checkpoint file that the state does not list.
  bool bundle = format_ == CheckpointFormat::TensorBundle;
  std::string file =
      bundle ? bundle_index_file(prefix) : safetensorsFile(prefix);
  bool listed = isListed(rel);
  auto removeNew = [&] {
    if (listed)
      return;
    if (!bundle) {
      ::unlink(file.c_str());
      return;
    }
    // The index first: without it the data files are no checkpoint.
    ::unlink(file.c_str());
    for (int k = 0; k < options_.num_shards; ++k)
      ::unlink(bundle_data_file(prefix, k, options_.num_shards).c_str());
  };
  try {
    if (bundle) {
      // TF's layout: the data files, then the index, each crash-safely.
      BundleWriter writer(
          prefix, {.num_shards = options_.num_shards, .sync = options_.sync});
      // Parts of partitioned variables as slices of their full tensor.
      add_variables(writer, refs);
      writer.finish();
    } else {
      fileio::writeFileAtomically(
          file, serializeRefs(std::move(refs), global_step), options_.sync);
    }
  } catch (const CheckpointError &) { // the bundle writer's
    removeNew();
    throw;
  } catch (const FileError &e) {
    removeNew(); // renamed into place before the directory's fsync failed
    throw CheckpointError(e.what());
  }
  return commit(rel, bundle, listed, removeNew);
}

bool Saver::isListed(const std::string &rel) const {
  return std::any_of(last_.begin(), last_.end(),
                     [&](const auto &e) { return e.first == rel; });
}

std::string Saver::save_sharded(
    int64_t global_step, int num_parts,
    const std::function<void(const std::vector<std::string> &, bool)>
        &write_parts) {
  if (format_ != CheckpointFormat::TensorBundle)
    throw std::invalid_argument(
        "Saver::save_sharded: " + modelDir_ +
        " keeps safetensors checkpoints, and a sharded save writes TF's "
        "tensor bundle (SaverOptions::format)");
  if (num_parts < 1 || num_parts > 99999)
    throw std::invalid_argument("Saver::save_sharded: num_parts must be in "
                                "[1, 99999], got " +
                                std::to_string(num_parts));
  std::string rel = options_.prefix + "-" + std::to_string(global_step);
  std::string prefix = fileio::joinPath(modelDir_, rel);
  std::vector<std::string> parts;
  for (int k = 0; k < num_parts; ++k)
    parts.push_back(bundle_part_prefix(prefix, k, num_parts));
  bool listed = isListed(rel);
  // The parts of a save that failed or was killed, merged or not, are
  // removed with their directory.
  std::string partsDir = prefix + kBundlePartsDirSuffix;
  auto removeNew = [&] {
    if (listed)
      return;
    ::unlink(bundle_index_file(prefix).c_str());
    for (int k = 0; k < num_parts; ++k)
      ::unlink(bundle_data_file(prefix, k, num_parts).c_str());
  };
  removePartsDir(partsDir);
  try {
    fileio::makeDirs(partsDir);
    write_parts(parts, options_.sync);
    merge_tensor_bundles(parts, prefix, options_.sync);
  } catch (const FileError &e) {
    removePartsDir(partsDir);
    removeNew();
    throw CheckpointError(e.what());
  } catch (...) {
    removePartsDir(partsDir);
    removeNew();
    throw;
  }
  return commit(rel, /*bundle=*/true, listed, removeNew);
}

std::string Saver::commit(const std::string &rel, bool bundle, bool listed,
                          const std::function<void()> &removeNew) {
  std::string prefix = fileio::joinPath(modelDir_, rel);
  auto before = std::make_pair(last_, lastPreserved_);

  double t = now();
  last_.erase(std::remove_if(last_.begin(), last_.end(),
                             [&](const auto &e) { return e.first == rel; }),
              last_.end());
  last_.emplace_back(rel, t);
  std::vector<std::string> evicted;
  if (options_.max_to_keep > 0) {
    while (last_.size() > static_cast<size_t>(options_.max_to_keep)) {
      auto [path, stamp] = last_.front();
      last_.erase(last_.begin());
      if (stamp - options_.keep_checkpoint_every_n_hours * 3600.0 >=
          lastPreserved_)
        lastPreserved_ = stamp; // kept on disk, no longer listed
      else
        evicted.push_back(path);
    }
  }

  CheckpointState state;
  state.model_checkpoint_path = rel;
  for (const auto &[path, stamp] : last_) {
    state.all_model_checkpoint_paths.push_back(path);
    state.all_model_checkpoint_timestamps.push_back(stamp);
  }
  state.last_preserved_timestamp = lastPreserved_;
  try {
    update_checkpoint_state(modelDir_, state);
  } catch (const CheckpointError &) {
    // Unless the new state is in place (only the fsync of the directory
    // failed).
    bool replaced = false;
    try {
      std::optional<CheckpointState> now = get_checkpoint_state(modelDir_);
      replaced =
          now && now->model_checkpoint_path == rel &&
          now->all_model_checkpoint_paths == state.all_model_checkpoint_paths;
    } catch (const CheckpointError &) {
    }
    if (!replaced) {
      std::tie(last_, lastPreserved_) = before;
      if (!listed)
        removeNew(); // best effort
    }
    throw;
  }

  // The same step saved before in the other format (a model_dir whose
  // format changed: the restart saves the restored step again). The state
  // lists the prefix once, for the files just written.
  try {
    if (bundle)
      fileio::removeFile(safetensorsFile(prefix));
    else
      removeBundleFiles(prefix);
  } catch (const FileError &e) {
    print_warning(e.what());
  }
  // Only now that the state no longer lists them.
  for (const std::string &path : evicted) {
    try {
      removeCheckpointFiles(fileio::joinPath(modelDir_, path));
    } catch (const FileError &e) {
      print_warning(e.what());
    }
  }
  return prefix;
}

std::vector<std::string> Saver::last_checkpoints() const {
  std::vector<std::string> out;
  for (const auto &entry : last_)
    out.push_back(entry.first);
  return out;
}

} // namespace train
} // namespace estc
