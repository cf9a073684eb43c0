//===- TensorBundle.cpp - TF's tensor bundle (V2 checkpoint) format -------===//

#include "lib/Checkpoint/TensorBundle.h"

#include "lib/Checkpoint/Partitions.h"
#include "lib/Checkpoint/Table.h"
#include "lib/Checkpoint/tensor_bundle.pb.h"
#include "lib/Support/Crc32c.h"
#include "lib/Support/FileIO.h"
#include "lib/Support/Printable.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "tensor bundles are read and written little-endian");

namespace estc {
namespace train {

namespace {
/// TF's kTensorBundleVersion and kTensorBundleMinConsumer.
constexpr int kBundleVersion = 1;
constexpr int kBundleMinConsumer = 0;

/// Bytes per element of a TF DataType; 0 for the variable-length ones
/// (string, variant, resource) and unknown numbers.
size_t tfElementSize(int dt) {
  switch (dt) {
  case proto::DT_UINT8:
  case proto::DT_INT8:
  case proto::DT_BOOL:
  case proto::DT_QINT8:
  case proto::DT_QUINT8:
    return 1;
  case proto::DT_INT16:
  case proto::DT_UINT16:
  case proto::DT_QINT16:
  case proto::DT_QUINT16:
  case proto::DT_HALF:
  case proto::DT_BFLOAT16:
    return 2;
  case proto::DT_FLOAT:
  case proto::DT_INT32:
  case proto::DT_UINT32:
  case proto::DT_QINT32:
    return 4;
  case proto::DT_DOUBLE:
  case proto::DT_INT64:
  case proto::DT_UINT64:
  case proto::DT_COMPLEX64:
    return 8;
  case proto::DT_COMPLEX128:
    return 16;
  default:
    return 0;
  }
}

bool isKnownTfDtype(int dt) { return dt > 0 && proto::DataType_IsValid(dt); }

// OrderedCode (TF's tensorflow/core/lib/strings/ordered_code.h), the parts
// EncodeTensorNameSlice uses.
void writeNumIncreasing(std::string &out, uint64_t v) {
  char buf[8];
  int len = 0;
  while (v > 0) {
    buf[7 - len++] = static_cast<char>(v & 0xff);
    v >>= 8;
  }
  out.push_back(static_cast<char>(len));
  out.append(buf + 8 - len, len);
}

void writeString(std::string &out, const std::string &s) {
  for (char c : s) {
    out.push_back(c);
    if (c == '\0')
      out.push_back('\xff');
    else if (c == '\xff')
      out.push_back('\0');
  }
  out.push_back('\0');
  out.push_back('\x01');
}

void writeSignedNumIncreasing(std::string &out, int64_t v) {
  // The header bits of an encoding of 1..10 bytes.
  static const unsigned char kHeader[11][2] = {
      {0, 0},    {0x80, 0}, {0xc0, 0}, {0xe0, 0},    {0xf0, 0},   {0xf8, 0},
      {0xfc, 0}, {0xfe, 0}, {0xff, 0}, {0xff, 0x80}, {0xff, 0xc0}};
  uint64_t x = v < 0 ? ~static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  if (x < 64) {
    out.push_back(static_cast<char>(kHeader[1][0] ^ static_cast<uint8_t>(v)));
    return;
  }
  // Bits of x plus a sign bit, 7 per byte.
  int bits = 64 - __builtin_clzll(x);
  int len = (bits + 1 + 6) / 7;
  unsigned char buf[10];
  unsigned char sign = v < 0 ? 0xff : 0;
  buf[0] = buf[1] = sign;
  for (int i = 0; i < 8; ++i)
    buf[2 + i] =
        static_cast<unsigned char>(static_cast<uint64_t>(v) >> (56 - 8 * i));
  unsigned char *begin = buf + 10 - len;
  begin[0] ^= kHeader[len][0];
  begin[1] ^= kHeader[len][1];
  out.append(reinterpret_cast<const char *>(begin), len);
}

/// TF's spec string of a slice: "start,length" per dimension, "-" for a
/// whole one, joined with ':'.
std::string sliceString(const TensorSlice &s) {
  std::string out;
  for (size_t d = 0; d < s.start.size(); ++d) {
    if (d)
      out += ':';
    out += s.length[d] < 0
               ? std::string("-")
               : std::to_string(s.start[d]) + "," + std::to_string(s.length[d]);
  }
  return out;
}

void sliceToProto(const TensorSlice &s, proto::TensorSliceProto *out) {
  for (size_t d = 0; d < s.start.size(); ++d) {
    auto *e = out->add_extent();
    if (s.length[d] >= 0) {
      e->set_start(s.start[d]);
      e->set_length(s.length[d]);
    }
  }
}

TensorSlice sliceFromProto(const proto::TensorSliceProto &p) {
  TensorSlice s;
  for (const auto &e : p.extent()) {
    s.start.push_back(e.start());
    s.length.push_back(e.has_length_case() ==
                               proto::TensorSliceProto::Extent::kLength
                           ? e.length()
                           : -1);
  }
  return s;
}

int64_t numElements(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

void putVarint64(std::string &out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

bool getVarint64(std::string_view &in, uint64_t &v) {
  v = 0;
  for (int i = 0; i < 10 && i < static_cast<int>(in.size()); ++i) {
    auto byte = static_cast<unsigned char>(in[i]);
    v |= static_cast<uint64_t>(byte & 0x7f) << (7 * i);
    if (!(byte & 0x80)) {
      in.remove_prefix(i + 1);
      return true;
    }
  }
  return false;
}

/// The CRC of a string length as TF checksums it: a uint32 when it fits,
/// else a uint64.
uint32_t extendLength(uint32_t crc, uint64_t length) {
  if (length <= UINT32_MAX) {
    auto l32 = static_cast<uint32_t>(length);
    return crc32c::extend(crc, &l32, 4);
  }
  return crc32c::extend(crc, &length, 8);
}

void setShape(proto::TensorShapeProto *p, const std::vector<int64_t> &shape) {
  for (int64_t d : shape)
    p->add_dim()->set_size(d);
}
} // namespace

//===----------------------------------------------------------------------===//
// Names and dtypes
//===----------------------------------------------------------------------===//

std::string bundle_index_file(const std::string &prefix) {
  return prefix + kBundleIndexSuffix;
}

std::string bundle_data_file(const std::string &prefix, int shard,
                             int num_shards) {
  char buf[64];
  std::snprintf(buf, sizeof buf, ".data-%05d-of-%05d", shard, num_shards);
  return prefix + buf;
}

bool is_tensor_bundle(const std::string &prefix) {
  return fileio::exists(bundle_index_file(prefix)) &&
         !fileio::isDirectory(bundle_index_file(prefix));
}

std::optional<std::string> bundle_prefix_of(const std::string &path) {
  const std::string suffix = kBundleIndexSuffix;
  if (path.size() <= suffix.size() ||
      path.compare(path.size() - suffix.size(), suffix.size(), suffix) != 0)
    return std::nullopt;
  return path.substr(0, path.size() - suffix.size());
}

int tf_dtype_number(DType dtype) {
  switch (dtype) {
  case DType::Float32:
    return proto::DT_FLOAT;
  case DType::Float64:
    return proto::DT_DOUBLE;
  case DType::Int32:
    return proto::DT_INT32;
  case DType::Int64:
    return proto::DT_INT64;
  case DType::Bool:
    return proto::DT_BOOL;
  case DType::Float16:
    return proto::DT_HALF;
  case DType::BFloat16:
    return proto::DT_BFLOAT16;
  case DType::String:
    return proto::DT_STRING;
  case DType::Invalid:
    break;
  }
  throw std::invalid_argument("tf_dtype_number: invalid dtype");
}

std::optional<DType> dtype_from_tf_number(int tf_dtype) {
  switch (tf_dtype) {
  case proto::DT_FLOAT:
    return DType::Float32;
  case proto::DT_DOUBLE:
    return DType::Float64;
  case proto::DT_INT32:
    return DType::Int32;
  case proto::DT_INT64:
    return DType::Int64;
  case proto::DT_BOOL:
    return DType::Bool;
  case proto::DT_HALF:
    return DType::Float16;
  case proto::DT_BFLOAT16:
    return DType::BFloat16;
  case proto::DT_STRING:
    return DType::String;
  default:
    return std::nullopt;
  }
}

std::string tf_dtype_number_name(int tf_dtype) {
  static const char *const kNames[] = {
      "invalid",    "float32", "float64",   "int32",   "uint8",   "int16",
      "int8",       "string",  "complex64", "int64",   "bool",    "qint8",
      "quint8",     "qint32",  "bfloat16",  "qint16",  "quint16", "uint16",
      "complex128", "float16", "resource",  "variant", "uint32",  "uint64"};
  if (tf_dtype >= 0 &&
      tf_dtype < static_cast<int>(sizeof kNames / sizeof kNames[0]))
    return kNames[tf_dtype];
  return "DT_" + std::to_string(tf_dtype);
}

std::string encode_tensor_name_slice(const std::string &name,
                                     const TensorSlice &slice) {
  std::string out;
  writeNumIncreasing(out, 0);
  writeString(out, name);
  writeNumIncreasing(out, slice.start.size());
  for (size_t d = 0; d < slice.start.size(); ++d) {
    writeSignedNumIncreasing(out, slice.start[d]);
    writeSignedNumIncreasing(out, slice.length[d]);
  }
  return out;
}

namespace {
/// The entries of the index file `index` (a table: read_table's checks);
/// CheckpointError when it cannot be read.
std::vector<std::pair<std::string, std::string>>
readIndex(const std::string &index) {
  std::string bytes;
  try {
    bytes = fileio::readFile(index);
  } catch (const FileError &e) {
    throw CheckpointError(e.what());
  }
  return table::read_table(index, bytes);
}

/// The bytes of an index: the header of `numShards` data files, then
/// `entries` (serialized BundleEntryProtos) in key order.
std::string indexBytes(int numShards,
                       const std::map<std::string, std::string> &entries) {
  proto::BundleHeaderProto header;
  header.set_num_shards(numShards);
  header.set_endianness(proto::BundleHeaderProto::LITTLE);
  header.mutable_version()->set_producer(kBundleVersion);
  header.mutable_version()->set_min_consumer(kBundleMinConsumer);
  table::TableBuilder builder;
  builder.add("", header.SerializeAsString());
  for (const auto &[key, value] : entries)
    builder.add(key, value);
  return builder.finish();
}
} // namespace

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

BundleWriter::BundleWriter(std::string prefix, BundleWriterOptions options)
    : prefix_(std::move(prefix)), options_(options) {
  if (options_.num_shards < 1 || options_.num_shards > 99999)
    throw std::invalid_argument(
        "BundleWriter: num_shards must be in [1, 99999], got " +
        std::to_string(options_.num_shards));
  if (prefix_.empty())
    throw std::invalid_argument("BundleWriter: empty checkpoint prefix");
  shards_.resize(options_.num_shards);
  for (int k = 0; k < options_.num_shards; ++k)
    shards_[k].file = bundle_data_file(prefix_, k, options_.num_shards);
}

BundleWriter::~BundleWriter() {
  if (!finished_)
    cleanUp();
}

namespace {
/// Bytes a data file gathers before they are written; larger pieces are
/// written directly.
constexpr size_t kWriteBuffer = 8 << 20;
} // namespace

void BundleWriter::cleanUp() {
  for (Shard &s : shards_) {
    if (s.fd >= 0)
      ::close(s.fd);
    s.fd = -1;
    if (!s.temp.empty())
      ::unlink(s.temp.c_str());
    s.temp.clear();
    std::string().swap(s.buffer);
  }
}

void BundleWriter::fail(const Shard &shard, const std::string &why) {
  std::string message = shard.file + ": cannot write: " + why;
  cleanUp();
  finished_ = true;
  throw CheckpointError(message);
}

void BundleWriter::flush(Shard &shard) {
  if (shard.fd < 0) {
    static std::atomic<unsigned> counter{0};
    try {
      fileio::makeDirs(fileio::dirName(prefix_));
    } catch (const FileError &e) {
      cleanUp();
      finished_ = true;
      throw CheckpointError(e.what());
    }
    shard.temp = shard.file + fileio::kTempMarker + std::to_string(::getpid()) +
                 "-" + std::to_string(counter++);
    shard.fd = ::open(shard.temp.c_str(),
                      O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (shard.fd < 0) {
      shard.temp.clear();
      fail(shard, fileio::lastError());
    }
  }
  if (!fileio::writeAll(shard.fd, shard.buffer))
    fail(shard, fileio::lastError());
  shard.buffer.clear();
}

void BundleWriter::append(Shard &shard, std::string_view bytes) {
  shard.size += bytes.size();
  if (shard.buffer.size() + bytes.size() <= kWriteBuffer) {
    shard.buffer.append(bytes);
    return;
  }
  flush(shard);
  if (bytes.size() < kWriteBuffer) {
    shard.buffer.append(bytes);
    return;
  }
  if (!fileio::writeAll(shard.fd, bytes))
    fail(shard, fileio::lastError());
}

void BundleWriter::checkNew(const std::string &key, DType dtype,
                            const std::vector<int64_t> &shape) const {
  if (finished_)
    throw std::invalid_argument("BundleWriter: add after finish (or after "
                                "a failed write)");
  if (key.empty())
    throw std::invalid_argument("BundleWriter: the empty key is the header's");
  if (entries_.count(key) || partitioned_.count(key))
    throw std::invalid_argument("BundleWriter: tensor " +
                                table::quoted_key(key) + " added twice");
  if (dtype == DType::Invalid)
    throw std::invalid_argument("BundleWriter: tensor " +
                                table::quoted_key(key) + " has no dtype");
  for (int64_t d : shape)
    if (d < 0)
      throw std::invalid_argument("BundleWriter: tensor " +
                                  table::quoted_key(key) + " has shape " +
                                  shape_string(shape));
}

BundleWriter::Shard &BundleWriter::smallestShard() {
  size_t shard = 0;
  for (size_t i = 1; i < shards_.size(); ++i)
    if (shards_[i].size < shards_[shard].size)
      shard = i;
  return shards_[shard];
}

void BundleWriter::addEntry(const std::string &key, DType dtype,
                            const std::vector<int64_t> &shape,
                            const Shard &shard, uint64_t offset, uint32_t crc) {
  proto::BundleEntryProto entry;
  entry.set_dtype(static_cast<proto::DataType>(tf_dtype_number(dtype)));
  setShape(entry.mutable_shape(), shape);
  entry.set_shard_id(static_cast<int>(&shard - shards_.data()));
  entry.set_offset(static_cast<int64_t>(offset));
  entry.set_size(static_cast<int64_t>(shard.size - offset));
  entry.set_crc32c(crc32c::mask(crc));
  entries_[key] = entry.SerializeAsString();
}

void BundleWriter::add(const std::string &key, DType dtype,
                       const std::vector<int64_t> &shape,
                       std::string_view bytes) {
  checkNew(key, dtype, shape);
  if (dtype == DType::String)
    throw std::invalid_argument("BundleWriter: tensor " +
                                table::quoted_key(key) +
                                ": a string tensor is added as a TensorValue");
  if (bytes.size() !=
      static_cast<size_t>(numElements(shape)) * dtype_size(dtype))
    throw std::invalid_argument("BundleWriter: tensor " +
                                table::quoted_key(key) + ": " +
                                std::to_string(bytes.size()) +
                                " bytes do not match " + shape_string(shape));
  Shard &out = smallestShard();
  uint64_t offset = out.size;
  append(out, bytes);
  addEntry(key, dtype, shape, out, offset, crc32c::value(bytes));
}

void BundleWriter::add(const std::string &key, const TensorValue &value) {
  if (value.dtype != DType::String) {
    if (value.dtype != DType::Invalid &&
        value.data.size() !=
            static_cast<size_t>(value.num_elements()) * dtype_size(value.dtype))
      throw std::invalid_argument(
          "BundleWriter: tensor " + table::quoted_key(key) +
          ": its values do not match " + value.spec().str());
    add(key, value.dtype, value.shape, value.data);
    return;
  }
  checkNew(key, value.dtype, value.shape);
  if (value.strings.size() != static_cast<size_t>(value.num_elements()))
    throw std::invalid_argument(
        "BundleWriter: tensor " + table::quoted_key(key) +
        ": its values do not match " + value.spec().str());
  Shard &out = smallestShard();
  uint64_t offset = out.size;
  uint32_t crc = 0;
  std::string lengths;
  for (const std::string &s : value.strings) {
    putVarint64(lengths, s.size());
    crc = extendLength(crc, s.size());
  }
  uint32_t lengthsCrc = crc32c::mask(crc);
  lengths.append(reinterpret_cast<const char *>(&lengthsCrc), 4);
  append(out, lengths);
  crc = crc32c::extend(crc, &lengthsCrc, 4);
  for (const std::string &s : value.strings) {
    append(out, s);
    crc = crc32c::extend(crc, s.data(), s.size());
  }
  addEntry(key, value.dtype, value.shape, out, offset, crc);
}

void BundleWriter::add_slice(const std::string &full_key,
                             const std::vector<int64_t> &full_shape,
                             const TensorSlice &slice,
                             const TensorValue &value) {
  std::string where = "BundleWriter: tensor " + table::quoted_key(full_key) +
                      " slice " + sliceString(slice) + ": ";
  if (slice.start.size() != full_shape.size() ||
      slice.length.size() != full_shape.size())
    throw std::invalid_argument(where + "its rank is not that of " +
                                shape_string(full_shape));
  bool full = true;
  std::vector<int64_t> sliceShape;
  for (size_t d = 0; d < full_shape.size(); ++d) {
    int64_t start = slice.start[d], length = slice.length[d];
    if (length == -1) {
      if (start != 0)
        throw std::invalid_argument(where + "a whole dimension starts at 0");
      sliceShape.push_back(full_shape[d]);
      continue;
    }
    if (start < 0 || length < 0 || start > full_shape[d] ||
        length > full_shape[d] - start)
      throw std::invalid_argument(where + "out of bounds of " +
                                  shape_string(full_shape));
    full = full && start == 0 && length == full_shape[d];
    sliceShape.push_back(length);
  }
  if (value.shape != sliceShape)
    throw std::invalid_argument(
        where + "the value's shape " + shape_string(value.shape) +
        " is not the slice's " + shape_string(sliceShape));
  if (full) {
    add(full_key, value);
    return;
  }
  if (entries_.count(full_key))
    throw std::invalid_argument("BundleWriter: tensor " +
                                table::quoted_key(full_key) + " added twice");
  auto [it, fresh] = partitioned_.try_emplace(full_key);
  if (!fresh &&
      (it->second.dtype != value.dtype || it->second.shape != full_shape))
    throw std::invalid_argument(where + "its dtype or full shape differs "
                                        "from the earlier slices'");
  it->second.dtype = value.dtype;
  it->second.shape = full_shape;
  it->second.slices.push_back(slice);
  add(encode_tensor_name_slice(full_key, slice), value);
}

void BundleWriter::finish() {
  if (finished_)
    throw std::invalid_argument("BundleWriter: finish called twice");
  finished_ = true;
  std::map<std::string, std::string> all = std::move(entries_);
  for (const auto &[key, p] : partitioned_) {
    proto::BundleEntryProto entry;
    entry.set_dtype(static_cast<proto::DataType>(tf_dtype_number(p.dtype)));
    setShape(entry.mutable_shape(), p.shape);
    for (const TensorSlice &s : p.slices)
      sliceToProto(s, entry.add_slices());
    all[key] = entry.SerializeAsString();
  }
  std::string index = indexBytes(options_.num_shards, all);
  // The data files first (an empty one too: readers open every shard),
  // each fsynced and renamed into place; then the index, whose write also
  // fsyncs the directory. A reader that finds the index finds them.
  for (Shard &shard : shards_) {
    flush(shard);
    if (options_.sync && ::fsync(shard.fd) != 0)
      fail(shard, fileio::lastError());
    int fd = shard.fd;
    shard.fd = -1;
    if (::close(fd) != 0)
      fail(shard, fileio::lastError());
  }
  for (size_t k = 0; k < shards_.size(); ++k) {
    Shard &shard = shards_[k];
    if (::rename(shard.temp.c_str(), shard.file.c_str()) != 0) {
      std::string why = fileio::lastError();
      for (size_t j = 0; j < k; ++j) // renamed already: no index names them
        ::unlink(shards_[j].file.c_str());
      fail(shard, why);
    }
    shard.temp.clear();
  }
  try {
    fileio::writeFileAtomically(bundle_index_file(prefix_), index,
                                options_.sync);
  } catch (const FileError &e) {
    if (!fileio::exists(bundle_index_file(prefix_)))
      for (const Shard &shard : shards_)
        ::unlink(shard.file.c_str());
    throw CheckpointError(e.what());
  }
}

void write_tensor_bundle(const std::string &prefix,
                         const VariableMap &variables,
                         const BundleWriterOptions &options) {
  BundleWriter writer(prefix, options);
  std::vector<std::pair<const std::string *, const TensorValue *>> refs;
  for (const auto &[name, value] : variables)
    refs.emplace_back(&name, &value);
  add_variables(writer, refs); // parts as slices (Partitions.h)
  writer.finish();
}

std::string bundle_part_prefix(const std::string &prefix, int part,
                               int num_parts) {
  char name[40];
  std::snprintf(name, sizeof name, "part-%05d-of-%05d", part, num_parts);
  return prefix + kBundlePartsDirSuffix + "/" + name;
}

void merge_tensor_bundles(const std::vector<std::string> &parts,
                          const std::string &prefix, bool sync) {
  if (parts.empty() || parts.size() > 99999)
    throw std::invalid_argument(
        "merge_tensor_bundles: " + std::to_string(parts.size()) +
        " parts (1 to 99999)");
  int n = static_cast<int>(parts.size());
  // Every key's entry, the parts' shard ids made the merged data files'.
  std::map<std::string, proto::BundleEntryProto> merged;
  std::map<std::string, std::string> from; // key -> the index it came from
  for (int k = 0; k < n; ++k) {
    std::string index = bundle_index_file(parts[k]);
    auto table = readIndex(index);
    proto::BundleHeaderProto header;
    if (table.empty() || !table[0].first.empty() ||
        !header.ParseFromString(table[0].second))
      throw DataLossError(index + ": no BundleHeaderProto header");
    if (header.num_shards() != 1)
      throw CheckpointError(index + ": a part to merge has " +
                            std::to_string(header.num_shards()) +
                            " data files, not 1");
    for (size_t i = 1; i < table.size(); ++i) {
      const std::string &key = table[i].first;
      proto::BundleEntryProto p;
      if (!p.ParseFromString(table[i].second))
        throw DataLossError(index + ": tensor " + table::quoted_key(key) +
                            ": its entry is not a BundleEntryProto");
      if (p.slices_size() == 0)
        p.set_shard_id(k);
      auto [it, fresh] = merged.try_emplace(key, p);
      if (fresh) {
        from[key] = index;
        continue;
      }
      if (p.dtype() != it->second.dtype() ||
          p.shape().SerializeAsString() !=
              it->second.shape().SerializeAsString() ||
          (p.slices_size() == 0) != (it->second.slices_size() == 0))
        throw CheckpointError(index + ": tensor " + table::quoted_key(key) +
                              " is in " + from[key] +
                              " too, of another dtype or shape");
      // A partitioned tensor whose slices two parts hold: one entry listing
      // them all (TF's MergeV2Checkpoints). A whole tensor several tasks
      // keep (an optimizer's state every task applying it holds, as Ftrl's
      // beta): the first part's, as Client::pull_all takes it.
      for (const auto &sp : p.slices())
        *it->second.add_slices() = sp;
    }
  }
  // The parts of partitioned variables, which each task saved under their
  // own names, become slices of their full tensors (Partitions.h).
  std::map<std::string, VariableSpec> specs;
  for (const auto &[key, p] : merged)
    if (key[0] != '\0' && p.slices_size() == 0)
      if (std::optional<DType> dtype = dtype_from_tf_number(p.dtype())) {
        VariableSpec spec{*dtype, {}};
        for (const auto &d : p.shape().dim())
          spec.shape.push_back(d.size());
        specs.emplace(key, std::move(spec));
      }
  for (const auto &[name, layout] : partition_layouts(specs)) {
    proto::BundleEntryProto part = std::move(merged.at(name));
    merged.erase(name);
    auto dtype = part.dtype();
    bool whole = layout.slice.length == layout.full_shape;
    if (whole) { // a variable of one part
      merged[layout.full_name] = std::move(part);
      continue;
    }
    merged[encode_tensor_name_slice(layout.full_name, layout.slice)] =
        std::move(part);
    auto [it, fresh] = merged.try_emplace(layout.full_name);
    if (fresh) {
      it->second.set_dtype(dtype);
      setShape(it->second.mutable_shape(), layout.full_shape);
    }
    sliceToProto(layout.slice, it->second.add_slices());
  }
  std::map<std::string, std::string> entries;
  for (const auto &[key, p] : merged)
    entries.emplace(key, p.SerializeAsString());
  std::string index = indexBytes(n, entries);
  // The data files renamed into place (each part wrote and synced its
  // own), then the index, crash-safely: a reader that finds it finds them.
  for (int k = 0; k < n; ++k) {
    std::string part = bundle_data_file(parts[k], 0, 1);
    std::string file = bundle_data_file(prefix, k, n);
    if (::rename(part.c_str(), file.c_str()) != 0) {
      std::string why = fileio::lastError();
      for (int j = 0; j < k; ++j)
        ::rename(bundle_data_file(prefix, j, n).c_str(),
                 bundle_data_file(parts[j], 0, 1).c_str());
      throw CheckpointError(part + ": cannot rename to " + file + ": " + why);
    }
  }
  try {
    fileio::writeFileAtomically(bundle_index_file(prefix), index, sync);
  } catch (const FileError &e) {
    if (!fileio::exists(bundle_index_file(prefix)))
      for (int k = 0; k < n; ++k)
        ::unlink(bundle_data_file(prefix, k, n).c_str());
    throw CheckpointError(e.what());
  }
  for (const std::string &part : parts) {
    ::unlink(bundle_index_file(part).c_str());
    ::rmdir(fileio::dirName(part).c_str()); // once the last part is gone
  }
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

/// One data file, read with pread (no mapping: a restore's address space
/// is the tensors it reads, which a ps task restoring its share of a table
/// larger than one process needs, docs/design/distributed.md).
struct TensorBundleReader::Mapping {
  std::string file;
  size_t size = 0;
  int fd = -1;

  explicit Mapping(std::string path) : file(std::move(path)) {
    fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
      throw CheckpointError(file + ": cannot open: " + fileio::lastError());
    struct stat st;
    if (::fstat(fd, &st) != 0) {
      std::string why = fileio::lastError();
      ::close(fd);
      throw CheckpointError(file + ": cannot stat: " + why);
    }
    size = static_cast<size_t>(st.st_size);
  }
  ~Mapping() { ::close(fd); }
  /// Reads [offset, offset + n) into `out`: "" when it did, else why not.
  std::string readAt(char *out, size_t n, uint64_t offset) const {
    while (n > 0) {
      ssize_t r = ::pread(fd, out, n, static_cast<off_t>(offset));
      if (r < 0 && errno == EINTR)
        continue;
      if (r < 0)
        return fileio::lastError();
      if (r == 0)
        return "unexpected end of file (truncated?)";
      out += r;
      n -= static_cast<size_t>(r);
      offset += static_cast<uint64_t>(r);
    }
    return "";
  }
};

TensorBundleReader::~TensorBundleReader() = default;

TensorBundleReader::TensorBundleReader(const std::string &prefix) {
  prefix_ = bundle_prefix_of(prefix).value_or(prefix);
  indexFile_ = bundle_index_file(prefix_);
  const std::string &f = indexFile_;
  auto fail = [&f](const std::string &what) -> DataLossError {
    return DataLossError(f + ": " + what);
  };
  auto table = readIndex(indexFile_);
  if (table.empty() || !table[0].first.empty())
    throw fail("no header entry (the empty key) in the index");
  proto::BundleHeaderProto header;
  if (!header.ParseFromString(table[0].second))
    throw fail("the header entry is not a BundleHeaderProto");
  if (header.num_shards() < 1)
    throw fail("the header says " + std::to_string(header.num_shards()) +
               " data files");
  if (header.endianness() != proto::BundleHeaderProto::LITTLE)
    throw CheckpointError(f + ": a big-endian checkpoint; estc reads "
                              "little-endian ones only");
  if (header.version().min_consumer() > kBundleVersion)
    throw CheckpointError(f + ": needs a reader of checkpoint version >= " +
                          std::to_string(header.version().min_consumer()) +
                          " (estc reads version " +
                          std::to_string(kBundleVersion) + ")");
  for (int bad : header.version().bad_consumers())
    if (bad == kBundleVersion)
      throw CheckpointError(f +
                            ": this checkpoint disallows readers of "
                            "version " +
                            std::to_string(kBundleVersion));
  numShards_ = header.num_shards();

  for (size_t i = 1; i < table.size(); ++i) {
    const std::string &key = table[i].first;
    std::string where = "tensor " + table::quoted_key(key) + ": ";
    proto::BundleEntryProto p;
    if (!p.ParseFromString(table[i].second))
      throw fail(where + "its entry is not a BundleEntryProto");
    Entry e;
    e.dtype = p.dtype();
    if (!isKnownTfDtype(e.dtype))
      throw fail(where + "unknown dtype " + std::to_string(e.dtype));
    if (p.shape().unknown_rank())
      throw fail(where + "its shape has an unknown rank");
    int64_t elements = 1;
    for (const auto &d : p.shape().dim()) {
      if (d.size() < 0 || __builtin_mul_overflow(elements, d.size(), &elements))
        throw fail(where + "invalid shape (dimension " +
                   std::to_string(d.size()) + ")");
      e.shape.push_back(d.size());
    }
    for (const auto &s : p.slices())
      e.slices.push_back(sliceFromProto(s));
    if (e.slices.empty()) {
      if (p.shard_id() < 0 || p.shard_id() >= numShards_)
        throw fail(where + "shard " + std::to_string(p.shard_id()) +
                   " is not one of the " + std::to_string(numShards_) +
                   " data files");
      if (p.offset() < 0 || p.size() < 0)
        throw fail(where + "negative offset or size");
      // A string takes a length byte at least (TF also writes 4 bytes of
      // checksum): more elements than bytes cannot be.
      if (e.dtype == proto::DT_STRING &&
          static_cast<uint64_t>(elements) > static_cast<uint64_t>(p.size()))
        throw fail(where + std::to_string(elements) +
                   " strings cannot fit in its " + std::to_string(p.size()) +
                   " bytes");
      size_t esize = tfElementSize(e.dtype);
      uint64_t want = 0;
      if (esize > 0 && (__builtin_mul_overflow(static_cast<uint64_t>(elements),
                                               esize, &want) ||
                        want != static_cast<uint64_t>(p.size())))
        throw fail(where + "its entry holds " + std::to_string(p.size()) +
                   " bytes, but " + tf_dtype_number_name(e.dtype) +
                   shape_string(e.shape) + " needs " +
                   std::to_string(elements * static_cast<int64_t>(esize)));
    }
    e.shard = p.shard_id();
    e.offset = static_cast<uint64_t>(p.offset());
    e.size = static_cast<uint64_t>(p.size());
    e.maskedCrc = p.crc32c();
    // Slice entries (keys from encode_tensor_name_slice start with a 0
    // byte) are found through their tensor's entry; TF lists them neither.
    if (key[0] != '\0')
      tensors_[key] = TensorInfo{e.dtype, e.shape, e.slices.size()};
    entries_.emplace(key, std::move(e));
  }

  for (int k = 0; k < numShards_; ++k) {
    std::string file = bundle_data_file(prefix_, k, numShards_);
    try {
      shards_.push_back(std::make_unique<Mapping>(file));
    } catch (const CheckpointError &e) {
      throw CheckpointError(
          std::string(e.what()) + " (data file " + std::to_string(k) + " of " +
          std::to_string(numShards_) + " of " + indexFile_ + ")");
    }
  }
  for (const auto &[key, e] : entries_) {
    if (!e.slices.empty())
      continue;
    const Mapping &m = *shards_[e.shard];
    if (e.offset > m.size || e.size > m.size - e.offset)
      throw DataLossError(m.file + ": tensor " + table::quoted_key(key) +
                          ": bytes [" + std::to_string(e.offset) + ", " +
                          std::to_string(e.offset + e.size) +
                          ") extend past the end of the file (" +
                          std::to_string(m.size) + " bytes; truncated?)");
  }
}

const TensorBundleReader::Entry &
TensorBundleReader::entry(const std::string &key,
                          const std::string &name) const {
  auto it = entries_.find(key);
  if (it == entries_.end())
    throw CheckpointError(indexFile_ + ": tensor " + table::quoted_key(name) +
                          " not found in the checkpoint");
  return it->second;
}

std::string TensorBundleReader::bytesOf(const Entry &e,
                                        const std::string &name) const {
  const Mapping &m = *shards_[e.shard];
  std::string out(e.size, '\0');
  if (std::string why = m.readAt(out.data(), out.size(), e.offset);
      !why.empty())
    throw DataLossError(m.file + ": tensor " + table::quoted_key(name) +
                        ": cannot read its bytes: " + why);
  return out;
}

void TensorBundleReader::readBytes(const Entry &e, const std::string &name,
                                   char *out) const {
  // Read (pread, straight into `out`: no mapped pages, one copy) and
  // checksummed 8 MiB at a time, while the piece is in cache; without
  // `out`, through one 8 MiB buffer.
  constexpr size_t kPiece = 8 << 20;
  const Mapping &m = *shards_[e.shard];
  std::string piece(out ? 0 : std::min<uint64_t>(kPiece, e.size), '\0');
  uint32_t crc = 0;
  for (size_t at = 0; at < e.size; at += kPiece) {
    size_t n = std::min<uint64_t>(kPiece, e.size - at);
    char *to = out ? out + at : piece.data();
    if (std::string why = m.readAt(to, n, e.offset + at); !why.empty())
      throw DataLossError(m.file + ": tensor " + table::quoted_key(name) +
                          ": cannot read its bytes: " + why);
    crc = crc32c::extend(crc, to, n);
  }
  if (crc32c::mask(crc) != e.maskedCrc)
    throw DataLossError(m.file + ": tensor " + table::quoted_key(name) +
                        ": CRC32C mismatch (stored " +
                        crc32c::hex(crc32c::unmask(e.maskedCrc)) +
                        ", computed " + crc32c::hex(crc) +
                        "): the data is corrupt");
}

TensorValue TensorBundleReader::readWhole(const Entry &e,
                                          const std::string &name,
                                          DType dtype) const {
  const std::string &file = shards_[e.shard]->file;
  std::string where = file + ": tensor " + table::quoted_key(name) + ": ";
  TensorValue t;
  t.dtype = dtype;
  t.shape = e.shape;
  auto n = static_cast<uint64_t>(numElements(e.shape));
  uint32_t crc = 0;
  if (dtype != DType::String) {
    t.data.resize(e.size);
    readBytes(e, name, t.data.data());
    return t;
  }
  // A string tensor: its bytes read whole, then parsed.
  std::string read = bytesOf(e, name);
  std::string_view bytes = read;
  if (n == 0 && bytes.empty())
    return t;
  // Each element's length takes a byte at least: more elements than bytes
  // is a corrupt entry (and no allocation of their count).
  if (n > bytes.size())
    throw DataLossError(where + std::to_string(n) + " strings cannot fit in " +
                        std::to_string(bytes.size()) + " bytes");
  std::string_view in = bytes;
  std::vector<uint64_t> lengths(n);
  uint64_t total = 0;
  for (uint64_t i = 0; i < n; ++i) {
    if (!getVarint64(in, lengths[i]))
      throw DataLossError(where + "string length " + std::to_string(i) +
                          " is malformed or past the tensor's bytes");
    crc = extendLength(crc, lengths[i]);
    if (__builtin_add_overflow(total, lengths[i], &total))
      throw DataLossError(where + "string lengths overflow");
  }
  if (in.size() < 4)
    throw DataLossError(where + "no room for the string lengths' checksum");
  uint32_t stored;
  std::memcpy(&stored, in.data(), 4);
  if (crc32c::unmask(stored) != crc)
    throw DataLossError(where + "the string lengths' CRC32C does not match "
                                "(the data is corrupt)");
  crc = crc32c::extend(crc, in.data(), 4);
  in.remove_prefix(4);
  if (total != in.size())
    throw DataLossError(where + "the strings hold " + std::to_string(total) +
                        " bytes, the entry leaves " +
                        std::to_string(in.size()));
  t.strings.reserve(n);
  for (uint64_t len : lengths) {
    t.strings.emplace_back(in.substr(0, len));
    in.remove_prefix(len);
  }
  crc = crc32c::extend(crc, bytes.data() + (bytes.size() - total), total);
  if (crc32c::mask(crc) != e.maskedCrc)
    throw DataLossError(where + "CRC32C mismatch (stored " +
                        crc32c::hex(crc32c::unmask(e.maskedCrc)) +
                        ", computed " + crc32c::hex(crc) +
                        "): the data is corrupt");
  return t;
}

TensorValue TensorBundleReader::assemble(const Entry &e,
                                         const std::string &name, DType dtype,
                                         bool keep) const {
  std::string where = indexFile_ + ": tensor " + table::quoted_key(name) + ": ";
  int64_t total = numElements(e.shape);
  // The slices' entries must hold the elements (each is bounded by its data
  // file's size) before anything of the tensor's size is allocated.
  uint64_t inSlices = 0;
  for (const TensorSlice &s : e.slices) {
    auto it = entries_.find(encode_tensor_name_slice(name, s));
    if (it != entries_.end())
      inSlices += static_cast<uint64_t>(numElements(it->second.shape));
  }
  if (inSlices < static_cast<uint64_t>(total))
    throw DataLossError(where + "its slices hold " + std::to_string(inSlices) +
                        " elements, fewer than its " + std::to_string(total));
  TensorValue full;
  full.dtype = dtype;
  full.shape = e.shape;
  size_t esize = dtype == DType::String ? 0 : dtype_size(dtype);
  if (!keep)
    ; // checked slice by slice: the full tensor is never in memory
  else if (dtype == DType::String)
    full.strings.resize(static_cast<size_t>(total));
  else
    full.data.assign(static_cast<size_t>(total) * esize, '\0');
  std::vector<bool> covered(static_cast<size_t>(total), false);
  int64_t coveredCount = 0;
  size_t rank = e.shape.size();
  // Row-major strides of the full tensor.
  std::vector<int64_t> stride(rank, 1);
  for (size_t d = rank; d-- > 1;)
    stride[d - 1] = stride[d] * e.shape[d];

  for (const TensorSlice &s : e.slices) {
    std::string sw = where + "slice " + sliceString(s) + ": ";
    if (s.start.size() != rank)
      throw DataLossError(sw + "its rank is not that of " +
                          shape_string(e.shape));
    std::vector<int64_t> start(rank), len(rank);
    for (size_t d = 0; d < rank; ++d) {
      start[d] = s.length[d] < 0 ? 0 : s.start[d];
      len[d] = s.length[d] < 0 ? e.shape[d] : s.length[d];
      if (start[d] < 0 || len[d] < 0 || start[d] > e.shape[d] ||
          len[d] > e.shape[d] - start[d])
        throw DataLossError(sw + "out of bounds of " + shape_string(e.shape));
    }
    std::string key = encode_tensor_name_slice(name, s);
    auto it = entries_.find(key);
    if (it == entries_.end())
      throw DataLossError(sw + "the slice has no entry in the index");
    const Entry &se = it->second;
    if (se.dtype != e.dtype || se.shape != len || !se.slices.empty())
      throw DataLossError(sw + "its entry is " +
                          tf_dtype_number_name(se.dtype) +
                          shape_string(se.shape) + ", expected " +
                          tf_dtype_number_name(e.dtype) + shape_string(len));
    std::string sliceName = name + "' slice '" + sliceString(s);
    TensorValue part;
    if (keep || dtype == DType::String)
      part = readWhole(se, sliceName, dtype);
    else
      readBytes(se, sliceName, nullptr); // checked, not kept
    int64_t partElements = numElements(len);
    if (partElements == 0)
      continue;
    // Copy row by row (rows along the last dimension); `idx` counts the
    // slice's index over all but the last dimension.
    int64_t rowLen = rank ? len[rank - 1] : 1;
    std::vector<int64_t> idx(rank, 0);
    for (int64_t src = 0; src < partElements; src += rowLen) {
      int64_t dst = 0;
      for (size_t d = 0; d < rank; ++d)
        dst += (start[d] + idx[d]) * stride[d];
      for (int64_t j = 0; j < rowLen; ++j) {
        if (covered[dst + j])
          throw DataLossError(sw + "overlaps another slice");
        covered[dst + j] = true;
      }
      coveredCount += rowLen;
      if (!keep)
        ;
      else if (dtype == DType::String)
        std::copy_n(part.strings.begin() + src, rowLen,
                    full.strings.begin() + dst);
      else
        std::memcpy(full.data.data() + dst * esize,
                    part.data.data() + src * esize, rowLen * esize);
      for (size_t d = rank ? rank - 1 : 0; d-- > 0;) {
        if (++idx[d] < len[d])
          break;
        idx[d] = 0;
      }
    }
  }
  if (coveredCount != total)
    throw DataLossError(where + "its slices cover " +
                        std::to_string(coveredCount) + " of its " +
                        std::to_string(total) + " elements");
  return full;
}

TensorValue TensorBundleReader::get_tensor(const std::string &name) const {
  const Entry &e = entry(name, name);
  std::optional<DType> dtype = dtype_from_tf_number(e.dtype);
  if (!dtype)
    throw CheckpointError(indexFile_ + ": tensor " + table::quoted_key(name) +
                          ": dtype " + tf_dtype_number_name(e.dtype) +
                          " has no estc DType (estc reads float32, float64, "
                          "int32, int64, bool, float16, bfloat16 and string)");
  return e.slices.empty() ? readWhole(e, name, *dtype)
                          : assemble(e, name, *dtype);
}

void TensorBundleReader::verify() const {
  for (const auto &[key, e] : entries_) {
    if (!e.slices.empty() || key[0] == '\0')
      continue; // slices are checked with their tensor
    if (e.dtype == proto::DT_STRING) {
      get_tensor(key);
      continue;
    }
    if (tfElementSize(e.dtype) == 0)
      continue; // variant and resource entries: framing estc does not read
    readBytes(e, key, nullptr); // 8 MiB at a time, whatever its size
  }
  for (const auto &[name, info] : tensors_)
    if (info.num_slices > 0)
      if (std::optional<DType> dtype = dtype_from_tf_number(info.tf_dtype))
        assemble(entry(name, name), name, *dtype, /*keep=*/false);
}

const TensorBundleReader::Entry &
TensorBundleReader::sliceEntry(const std::string &name,
                               const TensorSlice &slice) const {
  const Entry &full = entry(name, name);
  bool stored = false;
  for (const TensorSlice &s : full.slices)
    stored = stored || (s.start == slice.start && s.length == slice.length);
  if (!stored)
    throw CheckpointError(indexFile_ + ": tensor " + table::quoted_key(name) +
                          " has no stored slice " + sliceString(slice));
  const Entry &e = entry(encode_tensor_name_slice(name, slice), name);
  if (e.dtype != full.dtype || !e.slices.empty())
    throw DataLossError(indexFile_ + ": tensor " + table::quoted_key(name) +
                        ": slice " + sliceString(slice) + ": its entry is " +
                        tf_dtype_number_name(e.dtype) + shape_string(e.shape));
  return e;
}

void TensorBundleReader::read_into(const std::string &name, DType dtype,
                                   const std::vector<int64_t> &shape, char *out,
                                   const TensorSlice *slice) const {
  const Entry *e = slice ? &sliceEntry(name, *slice) : &entry(name, name);
  std::string what =
      slice ? name + "' slice '" + sliceString(*slice) : std::string(name);
  std::optional<DType> stored = dtype_from_tf_number(e->dtype);
  if (!e->slices.empty() || !stored || *stored != dtype ||
      dtype == DType::String || e->shape != shape)
    throw CheckpointError(
        indexFile_ + ": tensor " + table::quoted_key(what) + " is " +
        tf_dtype_number_name(e->dtype) + shape_string(e->shape) +
        (e->slices.empty() ? "" : " in slices") + ", not " +
        tf_dtype_number_name(dtype == DType::Invalid ? 0
                                                     : tf_dtype_number(dtype)) +
        shape_string(shape));
  readBytes(*e, what, out);
}

std::vector<TensorSlice>
TensorBundleReader::slices_of(const std::string &name) const {
  return entry(name, name).slices;
}

TensorValue TensorBundleReader::get_slice(const std::string &name,
                                          const TensorSlice &slice) const {
  const Entry &e = sliceEntry(name, slice);
  std::optional<DType> dtype = dtype_from_tf_number(e.dtype);
  if (!dtype)
    throw CheckpointError(indexFile_ + ": tensor " + table::quoted_key(name) +
                          ": dtype " + tf_dtype_number_name(e.dtype) +
                          " has no estc DType");
  return readWhole(e, name + "' slice '" + sliceString(slice), *dtype);
}

//===----------------------------------------------------------------------===//
// Object-based checkpoints
//===----------------------------------------------------------------------===//

ObjectGraph::ObjectGraph(const TensorBundleReader &reader) {
  const std::string where = reader.index_file() + ": ";
  if (!reader.has_tensor(kObjectGraphKey))
    throw CheckpointError(where + "no " + kObjectGraphKey +
                          " (not an object-based checkpoint: tensors are "
                          "found by name)");
  TensorValue t = reader.get_tensor(kObjectGraphKey);
  if (t.dtype != DType::String || t.strings.size() != 1)
    throw DataLossError(where + kObjectGraphKey + " is " + t.spec().str() +
                        ", not a string scalar");
  proto::TrackableObjectGraph graph;
  if (!graph.ParseFromString(t.strings[0]))
    throw DataLossError(where + kObjectGraphKey +
                        " is not a TrackableObjectGraph");
  int n = graph.nodes_size();
  auto check = [&](int id, int node) {
    if (id < 0 || id >= n)
      throw DataLossError(where + "object graph node " + std::to_string(node) +
                          " refers to node " + std::to_string(id) + " of " +
                          std::to_string(n));
  };
  for (int i = 0; i < n; ++i) {
    const auto &p = graph.nodes(i);
    Node node;
    for (const auto &c : p.children()) {
      check(c.node_id(), i);
      node.children.emplace_back(c.local_name(), c.node_id());
    }
    for (const auto &a : p.attributes())
      node.attributes[a.name()] = a.checkpoint_key();
    for (const auto &s : p.slot_variables()) {
      check(s.original_variable_node_id(), i);
      check(s.slot_variable_node_id(), i);
      node.slots.push_back({s.original_variable_node_id(), s.slot_name(),
                            s.slot_variable_node_id()});
    }
    nodes_.push_back(std::move(node));
  }
}

std::optional<int> ObjectGraph::find(const std::string &path) const {
  if (nodes_.empty())
    return std::nullopt;
  int node = 0;
  size_t begin = 0;
  while (begin < path.size()) {
    size_t end = path.find('/', begin);
    if (end == std::string::npos)
      end = path.size();
    std::string name = path.substr(begin, end - begin);
    const auto &children = nodes_[node].children;
    auto it = std::find_if(children.begin(), children.end(),
                           [&](const auto &c) { return c.first == name; });
    if (it == children.end())
      return std::nullopt;
    node = it->second;
    begin = end + 1;
  }
  return node;
}

std::optional<std::string>
ObjectGraph::checkpoint_key(const std::string &path,
                            const std::string &attribute) const {
  std::optional<int> node = find(path);
  if (!node)
    return std::nullopt;
  auto it = nodes_[*node].attributes.find(attribute);
  if (it == nodes_[*node].attributes.end())
    return std::nullopt;
  return it->second;
}

std::optional<std::string>
ObjectGraph::slot_checkpoint_key(const std::string &variable_path,
                                 const std::string &optimizer_path,
                                 const std::string &slot_name) const {
  std::optional<int> variable = find(variable_path);
  std::optional<int> optimizer = find(optimizer_path);
  if (!variable || !optimizer)
    return std::nullopt;
  for (const Node::Slot &s : nodes_[*optimizer].slots)
    if (s.variable == *variable && s.name == slot_name) {
      auto it = nodes_[s.node].attributes.find("VARIABLE_VALUE");
      if (it != nodes_[s.node].attributes.end())
        return it->second;
    }
  return std::nullopt;
}

std::map<std::string, std::string> ObjectGraph::variables() const {
  std::map<std::string, std::string> out;
  if (nodes_.empty())
    return out;
  std::vector<bool> seen(nodes_.size(), false);
  std::vector<std::pair<int, std::string>> queue{{0, ""}};
  seen[0] = true;
  for (size_t i = 0; i < queue.size(); ++i) {
    auto [node, path] = queue[i];
    auto it = nodes_[node].attributes.find("VARIABLE_VALUE");
    if (it != nodes_[node].attributes.end())
      out.emplace(path, it->second);
    for (const auto &[name, child] : nodes_[node].children)
      if (!seen[child]) {
        seen[child] = true;
        queue.emplace_back(child, path.empty() ? name : path + "/" + name);
      }
  }
  return out;
}

} // namespace train
} // namespace estc
