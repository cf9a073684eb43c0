//===- TFRecordTest.cpp - InputStream, TFRecordReader and TFRecordWriter --===//
//
// Round trips (plain, GZIP, ZLIB, buffer sizes down to one byte), TF's
// bytes, every corruption and truncation of a small file, seeking back to a
// saved offset, concatenated gzip members, and the one-line errors.
//
//===----------------------------------------------------------------------===//

#include "lib/Data/TFRecord.h"
#include "lib/Data/InputStream.h"
#include "lib/Support/Crc32c.h"

#include "FileTesting.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>
#include <unistd.h>

using namespace estc::data;
namespace fs = std::filesystem;

namespace {

class TFRecordTest : public estc::testing::FileTest {
protected:
  TFRecordTest() : FileTest("tfrecord") {}

  static std::string readBytes(const std::string &p) {
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in),
            std::istreambuf_iterator<char>()};
  }
  std::string writeRecords(const std::string &name,
                           const std::vector<std::string> &records,
                           Compression c = Compression::None) const {
    std::string p = path(name);
    TFRecordWriter w(p, c);
    for (const std::string &r : records)
      w.write(r);
    w.close();
    return p;
  }
};

/// Every record of a file, or the error that stopped it (appended as
/// "ERROR: <message>").
std::vector<std::string> readAll(const std::string &p, Compression c,
                                 size_t buffer = 256 * 1024) {
  std::vector<std::string> out;
  try {
    TFRecordReader r(p, c, buffer);
    std::string rec;
    while (r.read(rec))
      out.push_back(rec);
  } catch (const DataError &e) {
    out.push_back(std::string("ERROR: ") + e.what());
  }
  return out;
}

template <typename F> std::string errorOf(F &&fn) {
  return estc::testing::messageOf<DataError>(fn);
}

std::vector<std::string> sampleRecords() {
  std::mt19937 rng(7);
  std::vector<std::string> rs = {"hello", "", "x", std::string(1000, 'a')};
  std::string big(300000, '\0');
  for (char &c : big)
    c = static_cast<char>(rng() & 0xff);
  rs.push_back(big);
  for (int i = 0; i < 50; ++i)
    rs.push_back("record " + std::to_string(i));
  return rs;
}

std::string unhex(const std::string &hex) {
  std::string out;
  for (size_t i = 0; i < hex.size(); i += 2)
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

// What tf.io.TFRecordWriter (TF 2.15) writes for b"hello" then b"".
const char *kTfHelloEmpty = "0500000000000000eab2043e68656c6c6fbb1f1c19"
                            "000000000000000029039807d8ea82a2";

TEST_F(TFRecordTest, WritesTheBytesTfWrites) {
  std::string p = writeRecords("tf.tfrecord", {"hello", ""});
  EXPECT_EQ(readBytes(p), unhex(kTfHelloEmpty));
  EXPECT_EQ(frame_tfrecord("hello") + frame_tfrecord(""), unhex(kTfHelloEmpty));
}

TEST_F(TFRecordTest, ReadsTheBytesTfWrites) {
  std::string p = write("tf.tfrecord", unhex(kTfHelloEmpty));
  EXPECT_EQ(readAll(p, Compression::None),
            (std::vector<std::string>{"hello", ""}));
}

TEST_F(TFRecordTest, RoundTripsEveryCompressionAndBufferSize) {
  const std::vector<std::string> records = sampleRecords();
  for (Compression c :
       {Compression::None, Compression::Gzip, Compression::Zlib}) {
    std::string p = writeRecords("rt", records, c);
    for (size_t buffer : {size_t{1}, size_t{7}, size_t{4096}, size_t{1} << 18})
      EXPECT_EQ(readAll(p, c, buffer), records)
          << compression_name(c) << " buffer " << buffer;
  }
}

TEST_F(TFRecordTest, CompressedFilesAreGzipAndZlib) {
  std::string g = readBytes(writeRecords("g", {"a"}, Compression::Gzip));
  ASSERT_GE(g.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(g[0]), 0x1f);
  EXPECT_EQ(static_cast<unsigned char>(g[1]), 0x8b);
  std::string z = readBytes(writeRecords("z", {"a"}, Compression::Zlib));
  // A zlib header: CMF 0x78, FCHECK makes CMF*256+FLG a multiple of 31.
  ASSERT_GE(z.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(z[0]), 0x78);
  EXPECT_EQ((static_cast<unsigned char>(z[0]) * 256 +
             static_cast<unsigned char>(z[1])) %
                31,
            0);
  // zlib's own gunzip reads the GZIP file: TF's framing inside.
  std::string framed;
  gzFile f = gzopen(path("g").c_str(), "rb");
  char buf[256];
  for (int n; (n = gzread(f, buf, sizeof(buf))) > 0;)
    framed.append(buf, static_cast<size_t>(n));
  gzclose(f);
  EXPECT_EQ(framed, frame_tfrecord("a"));
}

TEST_F(TFRecordTest, EmptyFilesHaveNoRecords) {
  std::string p = write("empty", "");
  for (Compression c :
       {Compression::None, Compression::Gzip, Compression::Zlib})
    EXPECT_TRUE(readAll(p, c).empty()) << compression_name(c);
  // A compressed stream of no records.
  for (Compression c : {Compression::Gzip, Compression::Zlib}) {
    std::string q = writeRecords("none", {}, c);
    EXPECT_FALSE(readBytes(q).empty());
    EXPECT_TRUE(readAll(q, c).empty()) << compression_name(c);
  }
}

TEST_F(TFRecordTest, EmptyRecords) {
  for (Compression c :
       {Compression::None, Compression::Gzip, Compression::Zlib}) {
    std::string p = writeRecords("e", {"", "", "z", ""}, c);
    EXPECT_EQ(readAll(p, c), (std::vector<std::string>{"", "", "z", ""}));
  }
}

TEST_F(TFRecordTest, EachCorruptFieldIsNamed) {
  // Records "ab" (bytes 0..17) and "cd" (18..35); corrupt the second.
  const std::string good = frame_tfrecord("ab") + frame_tfrecord("cd");
  struct Case {
    size_t byte;
    const char *what;
  };
  const Case cases[] = {
      {18 + 0, "length CRC mismatch"},  // length
      {18 + 7, "length CRC mismatch"},  // length, high byte
      {18 + 8, "length CRC mismatch"},  // length CRC
      {18 + 11, "length CRC mismatch"}, // length CRC
      {18 + 12, "data CRC mismatch"},   // data
      {18 + 13, "data CRC mismatch"},   // data
      {18 + 14, "data CRC mismatch"},   // data CRC
      {18 + 17, "data CRC mismatch"},   // data CRC
  };
  for (const Case &c : cases) {
    std::string bad = good;
    bad[c.byte] = static_cast<char>(bad[c.byte] ^ 0x01);
    std::string p = write("bad", bad);
    std::vector<std::string> got = readAll(p, Compression::None);
    ASSERT_EQ(got.size(), 2u) << c.byte;
    EXPECT_EQ(got[0], "ab");
    EXPECT_EQ(got[1], "ERROR: " + p + ": corrupt record at byte 18: " + c.what)
        << c.byte;
  }
}

TEST_F(TFRecordTest, TruncationAtEveryByte) {
  const std::vector<std::string> records = {"first", "", "third record"};
  std::string whole;
  std::vector<size_t> starts;
  for (const std::string &r : records) {
    starts.push_back(whole.size());
    whole += frame_tfrecord(r);
  }
  starts.push_back(whole.size());
  for (size_t len = 0; len <= whole.size(); ++len) {
    std::string p = write("cut", whole.substr(0, len));
    std::vector<std::string> want;
    for (size_t i = 0; i < records.size(); ++i) {
      if (starts[i + 1] <= len) {
        want.push_back(records[i]);
      } else {
        if (starts[i] < len)
          want.push_back("ERROR: " + p + ": truncated record at byte " +
                         std::to_string(starts[i]));
        break;
      }
    }
    EXPECT_EQ(readAll(p, Compression::None), want) << "length " << len;
  }
}

TEST_F(TFRecordTest, TruncatedCompressedFiles) {
  const std::vector<std::string> records = {"first", "", "third record"};
  for (Compression c : {Compression::Gzip, Compression::Zlib}) {
    std::string whole = readBytes(writeRecords("w", records, c));
    for (size_t len = 0; len < whole.size(); ++len) {
      std::string p = write("cut", whole.substr(0, len));
      std::vector<std::string> got = readAll(p, c, 16);
      if (len == 0) { // an empty file is an empty stream
        EXPECT_TRUE(got.empty());
        continue;
      }
      // Some records (a prefix), then one truncation error.
      ASSERT_FALSE(got.empty()) << len;
      std::string last = got.back();
      got.pop_back();
      ASSERT_LE(got.size(), records.size());
      EXPECT_TRUE(std::equal(got.begin(), got.end(), records.begin()));
      EXPECT_TRUE(
          last == "ERROR: " + p + ": truncated " + compression_name(c) +
                      " stream" ||
          last.rfind("ERROR: " + p + ": truncated record at byte ", 0) == 0)
          << compression_name(c) << " length " << len << ": " << last;
    }
  }
}

/// A record header: length and its masked CRC (as TF's writer makes it).
std::string headerOf(uint64_t length) {
  std::string h(8, '\0');
  for (int i = 0; i < 8; ++i)
    h[i] = static_cast<char>((length >> (8 * i)) & 0xff);
  uint32_t crc = estc::crc32c::mask(estc::crc32c::value(h));
  for (int i = 0; i < 4; ++i)
    h.push_back(static_cast<char>((crc >> (8 * i)) & 0xff));
  return h;
}

TEST_F(TFRecordTest, LengthLargerThanTheFile) {
  // Only the header's own CRC vouches for the length: 2^40 passes it.
  ASSERT_EQ(headerOf(5), frame_tfrecord("hello").substr(0, 12));
  std::string bytes =
      frame_tfrecord("ok") + headerOf(uint64_t{1} << 40) + "data";
  std::string p = write("forged", bytes);
  EXPECT_EQ(readAll(p, Compression::None),
            (std::vector<std::string>{
                "ok", "ERROR: " + p +
                          ": corrupt record at byte 18: length 1099511627776 "
                          "is larger than the file (34 bytes)"}));
  // Compressed, the stream's size is unknown: the data runs out.
  std::string g = path("forged.gz");
  gzFile f = gzopen(g.c_str(), "wb");
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
  EXPECT_EQ(readAll(g, Compression::Gzip),
            (std::vector<std::string>{
                "ok", "ERROR: " + g + ": truncated record at byte 18"}));
}

TEST_F(TFRecordTest, AfterADataCrcErrorTheReaderGoesOn) {
  std::string bytes =
      frame_tfrecord("a") + frame_tfrecord("b") + frame_tfrecord("c");
  bytes[17 + 12] ^= 0x40; // the data of "b"
  std::string p = write("bad", bytes);
  TFRecordReader r(p);
  std::string rec;
  ASSERT_TRUE(r.read(rec));
  EXPECT_EQ(r.offset(), 17u);
  EXPECT_EQ(errorOf([&] { r.read(rec); }),
            p + ": corrupt record at byte 17: data CRC mismatch");
  // The framing is intact: the next read gives the record after it.
  EXPECT_EQ(r.offset(), 34u);
  ASSERT_TRUE(r.read(rec));
  EXPECT_EQ(rec, "c");
  EXPECT_FALSE(r.read(rec));
}

TEST_F(TFRecordTest, AfterAHeaderErrorTheReaderStaysOnTheRecord) {
  std::string bytes = frame_tfrecord("a") + frame_tfrecord("b");
  bytes[17 + 3] ^= 0x40; // the length of "b"
  std::string p = write("badlen", bytes);
  TFRecordReader r(p);
  std::string rec;
  ASSERT_TRUE(r.read(rec));
  std::string first = errorOf([&] { r.read(rec); });
  EXPECT_EQ(first, p + ": corrupt record at byte 17: length CRC mismatch");
  EXPECT_EQ(r.offset(), 17u);
  EXPECT_EQ(errorOf([&] { r.read(rec); }), first);
}

TEST_F(TFRecordTest, SeekResumesAtSavedOffsets) {
  const std::vector<std::string> records = sampleRecords();
  for (Compression c :
       {Compression::None, Compression::Gzip, Compression::Zlib}) {
    std::string p = writeRecords("s", records, c);
    std::vector<uint64_t> offsets;
    {
      TFRecordReader r(p, c, 4096);
      std::string rec;
      offsets.push_back(r.offset());
      while (r.read(rec))
        offsets.push_back(r.offset());
    }
    ASSERT_EQ(offsets.size(), records.size() + 1);
    // A fresh reader (a restarted iterator) at each saved offset, and one
    // reader jumping back and forth.
    TFRecordReader jumper(p, c, 4096);
    std::mt19937 rng(3);
    for (int k = 0; k < 40; ++k) {
      size_t i = rng() % records.size();
      std::string rec;
      jumper.seek(offsets[i]);
      ASSERT_TRUE(jumper.read(rec)) << compression_name(c) << " " << i;
      EXPECT_EQ(rec, records[i]);
      EXPECT_EQ(jumper.offset(), offsets[i + 1]);
    }
    for (size_t i : {size_t{0}, size_t{4}, records.size() - 1}) {
      TFRecordReader r(p, c);
      r.seek(offsets[i]);
      std::vector<std::string> rest;
      std::string rec;
      while (r.read(rec))
        rest.push_back(rec);
      EXPECT_EQ(rest,
                std::vector<std::string>(records.begin() + i, records.end()));
    }
    // The end is a valid position; past it is an error.
    TFRecordReader r(p, c);
    r.seek(offsets.back());
    std::string rec;
    EXPECT_FALSE(r.read(rec));
    std::string e = errorOf([&] { r.seek(offsets.back() + 1); });
    EXPECT_EQ(e.rfind(p + ": cannot seek to byte " +
                          std::to_string(offsets.back() + 1) + ": the ",
                      0),
              0u)
        << e;
  }
}

TEST_F(TFRecordTest, ConcatenatedGzipMembersReadAsOneStream) {
  std::string a =
      readBytes(writeRecords("a", {"one", "two"}, Compression::Gzip));
  std::string b = readBytes(writeRecords("b", {"three"}, Compression::Gzip));
  std::string p = write("ab.gz", a + b);
  for (size_t buffer : {size_t{1}, size_t{5}, size_t{1} << 18})
    EXPECT_EQ(readAll(p, Compression::Gzip, buffer),
              (std::vector<std::string>{"one", "two", "three"}));
  // Seeking back across the member boundary re-inflates both.
  TFRecordReader r(p, Compression::Gzip, 8);
  std::string rec;
  ASSERT_TRUE(r.read(rec) && r.read(rec) && r.read(rec));
  EXPECT_EQ(rec, "three");
  r.seek(0);
  ASSERT_TRUE(r.read(rec));
  EXPECT_EQ(rec, "one");
}

TEST_F(TFRecordTest, CorruptAndTrailingCompressedData) {
  std::string g =
      readBytes(writeRecords("g", {std::string(5000, 'q')}, Compression::Gzip));
  // The gzip trailer's CRC-32 of the data. The offset in the message is
  // how far zlib had read when it saw the fault: the end of the CRC.
  std::string bad = g;
  bad[bad.size() - 6] ^= 0x10;
  std::string p = write("bad.gz", bad);
  std::vector<std::string> got = readAll(p, Compression::Gzip);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], std::string(5000, 'q'));
  EXPECT_EQ(got[1], "ERROR: " + p + ": corrupt GZIP data at byte " +
                        std::to_string(g.size() - 4) +
                        ": incorrect data check");
  // Not gzip at all.
  std::string q = write("plain.gz", frame_tfrecord("x"));
  EXPECT_EQ(readAll(q, Compression::Gzip),
            (std::vector<std::string>{"ERROR: " + q +
                                      ": corrupt GZIP data at byte 2: "
                                      "incorrect header check"}));
  // Bytes after a ZLIB stream.
  std::string z = readBytes(writeRecords("z", {"x"}, Compression::Zlib));
  std::string t = write("trailing.z", z + "junk");
  EXPECT_EQ(readAll(t, Compression::Zlib),
            (std::vector<std::string>{
                "x", "ERROR: " + t +
                         ": trailing bytes after the ZLIB stream "
                         "at byte " +
                         std::to_string(z.size())}));
}

TEST_F(TFRecordTest, CorruptionFoundAfterTheInputEndsIsNotTruncation) {
  // The fuzzer's find (regressions/tfrecord/zlib-error-after-output-buffer-
  // fills): a 21-byte ZLIB stream whose last match reaches before the
  // start. With a 16-byte buffer, zlib had read all the input before it
  // had room to make that match: the reader took the end of the file for a
  // truncation instead of asking zlib for the rest.
  std::string z = unhex("789ccb6780801cc3c67b5cb91f8b0800825c8c893d");
  std::string p = write("far-back.z", z);
  for (size_t buffer : {size_t{1}, size_t{16}, size_t{1} << 18}) {
    InputStream in(p, Compression::Zlib, buffer);
    std::string bytes;
    EXPECT_EQ(errorOf([&] { in.read(1000, bytes); }),
              p + ": corrupt ZLIB data at byte 21: invalid distance too far "
                  "back")
        << buffer;
  }
}

TEST_F(TFRecordTest, OpenErrorsNameTheFile) {
  std::string missing = path("missing.tfrecord");
  EXPECT_EQ(errorOf([&] { TFRecordReader r(missing); }),
            missing + ": cannot open: No such file or directory");
  std::string nodir = path("no/such/dir/out.tfrecord");
  EXPECT_EQ(errorOf([&] { TFRecordWriter w(nodir); }),
            nodir + ": cannot open for writing: No such file or directory");
  EXPECT_EQ(errorOf([&] {
              TFRecordReader r(dir_.string());
              std::string s;
              r.read(s);
            }),
            dir_.string() + ": cannot read: Is a directory");
}

TEST_F(TFRecordTest, WriteErrorsNameTheFile) {
  if (!fs::exists("/dev/full"))
    GTEST_SKIP() << "no /dev/full";
  for (Compression c :
       {Compression::None, Compression::Gzip, Compression::Zlib}) {
    // A compressed stream's header is written at once: write() fails;
    // a plain record waits in the buffer: close() fails.
    TFRecordWriter w("/dev/full", c);
    EXPECT_EQ(errorOf([&] {
                w.write("some record");
                w.close();
              }),
              "/dev/full: cannot write: No space left on device")
        << compression_name(c);
    errorOf([&] { w.close(); });
    EXPECT_EQ(errorOf([&] { w.close(); }), ""); // closed for good
    EXPECT_THROW(w.write("more"), std::invalid_argument);
  }
  // A record larger than the buffer is written at once.
  TFRecordWriter big("/dev/full");
  EXPECT_EQ(errorOf([&] { big.write(std::string(1 << 20, 'x')); }),
            "/dev/full: cannot write: No space left on device");
}

TEST_F(TFRecordTest, FlushMakesRecordsReadable) {
  for (Compression c :
       {Compression::None, Compression::Gzip, Compression::Zlib}) {
    std::string p = path("flushed");
    TFRecordWriter w(p, c);
    w.write("one");
    w.write("two");
    w.flush();
    // The stream is not ended: a reader gets the records, then (for a
    // compressed file) the truncation.
    std::vector<std::string> got = readAll(p, c);
    ASSERT_GE(got.size(), 2u) << compression_name(c);
    EXPECT_EQ(got[0], "one");
    EXPECT_EQ(got[1], "two");
    if (c == Compression::None)
      EXPECT_EQ(got.size(), 2u);
    else
      EXPECT_EQ(got.back(), "ERROR: " + p + ": truncated " +
                                compression_name(c) + " stream");
    w.write("three");
    w.close();
    EXPECT_EQ(readAll(p, c), (std::vector<std::string>{"one", "two", "three"}));
  }
}

TEST(InputStreamTest, CompressionNames) {
  EXPECT_EQ(parse_compression(""), Compression::None);
  EXPECT_EQ(parse_compression("NONE"), Compression::None);
  EXPECT_EQ(parse_compression("GZIP"), Compression::Gzip);
  EXPECT_EQ(parse_compression("ZLIB"), Compression::Zlib);
  EXPECT_EQ(errorOf([] { parse_compression("gzip"); }),
            "unknown compression type 'gzip' (expected \"\", \"NONE\", "
            "\"GZIP\" or \"ZLIB\")");
  EXPECT_EQ(errorOf([] { parse_compression("a\nb"); }),
            "unknown compression type 'a\\x0Ab' (expected \"\", \"NONE\", "
            "\"GZIP\" or \"ZLIB\")");
}

TEST_F(TFRecordTest, LinesAndOffsetsAcrossBuffers) {
  const std::string text = "alpha\n\nbeta gamma\nlast without newline";
  std::string p = write("t.txt", text);
  std::string g = path("t.txt.gz");
  gzFile f = gzopen(g.c_str(), "wb");
  gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
  gzclose(f);
  for (auto [file, c] :
       {std::pair{p, Compression::None}, std::pair{g, Compression::Gzip}}) {
    for (size_t buffer : {size_t{1}, size_t{3}, size_t{64}}) {
      InputStream in(file, c, buffer);
      std::vector<std::string> lines;
      std::vector<uint64_t> offsets;
      std::string line;
      while (in.read_line(line)) {
        lines.push_back(line);
        offsets.push_back(in.offset());
      }
      EXPECT_EQ(lines,
                (std::vector<std::string>{"alpha\n", "\n", "beta gamma\n",
                                          "last without newline"}));
      EXPECT_EQ(offsets, (std::vector<uint64_t>{6, 7, 18, text.size()}));
      in.seek(7);
      ASSERT_TRUE(in.read_line(line));
      EXPECT_EQ(line, "beta gamma\n");
      std::string bytes;
      in.seek(2);
      EXPECT_EQ(in.read(4, bytes), 4u);
      EXPECT_EQ(bytes, "pha\n");
      EXPECT_EQ(in.read(1000, bytes), text.size() - 6);
      EXPECT_EQ(in.read(10, bytes), 0u);
    }
  }
}

} // namespace
