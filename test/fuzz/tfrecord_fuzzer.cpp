//===- tfrecord_fuzzer.cpp - TFRecord files, plain, GZIP or ZLIB ---------===//
//
// The first input byte picks the compression (its low two bits: 0 and 3
// none, 1 GZIP, 2 ZLIB) and a small buffer size (the other six bits); the
// rest is the file, read with TFRecordReader as TFRecordDataset reads it.
// The documented failure is DataError, one line naming the file. Beyond the
// sanitizers:
//   - the file reads the same (records, then the same error or none)
//     with the default 256 KiB buffer and with a buffer of 1 to 64 bytes;
//   - each record advances offset() by its framing (16 bytes + data);
//   - seek() to a saved offset reads that record again;
//   - a plain file that reads without error is, framed again, the input.
//
//===----------------------------------------------------------------------===//

#include "test/fuzz/FuzzSupport.h"

#include "lib/Data/TFRecord.h"

using namespace estc;
using namespace estc::fuzz;

namespace {

struct Result {
  std::vector<std::string> records;
  std::vector<uint64_t> offsets; // before each record, then after the last
  std::string error;
};

Result readAll(const std::string &path, data::Compression c, size_t buffer) {
  Result r;
  try {
    data::TFRecordReader reader(path, c, buffer);
    std::string record;
    r.offsets.push_back(reader.offset());
    while (reader.read(record)) {
      if (reader.offset() != r.offsets.back() + 16 + record.size())
        die("offset() did not advance by the record's framing");
      r.records.push_back(record);
      r.offsets.push_back(reader.offset());
    }
  } catch (const data::DataError &e) {
    checkFileError(e.what(), path);
    r.error = e.what();
  }
  return r;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  data::Compression c = (data[0] & 3) == 1   ? data::Compression::Gzip
                        : (data[0] & 3) == 2 ? data::Compression::Zlib
                                             : data::Compression::None;
  size_t smallBuffer = 1 + (data[0] >> 2);
  std::string_view file = bytesOf(data + 1, size - 1);
  std::string path = scratch().write("data.tfrecord", file);

  Result big = readAll(path, c, 256 * 1024);
  Result small = readAll(path, c, smallBuffer);
  if (big.records != small.records || big.error != small.error)
    die("the buffer size changed what reads: " + big.error + " / " +
        small.error);

  if (!big.records.empty()) {
    // Back to a record in the middle, then to the first.
    size_t mid = big.records.size() / 2;
    try {
      data::TFRecordReader reader(path, c, smallBuffer);
      std::string record;
      for (size_t i : {mid, size_t{0}}) {
        reader.seek(big.offsets[i]);
        if (!reader.read(record) || record != big.records[i])
          die("seek to a saved offset did not read the same record");
      }
    } catch (const data::DataError &e) {
      die(std::string("seek to a saved offset failed: ") + e.what());
    }
  }

  if (c == data::Compression::None && big.error.empty()) {
    std::string framed;
    for (const std::string &r : big.records)
      framed += data::frame_tfrecord(r);
    if (framed != file)
      die("a plain file that reads is not its records framed again");
  }
  return 0;
}
