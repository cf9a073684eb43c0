//===- SummaryTest.cpp - TensorBoard event files
//---------------------------===//

#include "lib/Summary/Summary.h"
#include "lib/Support/Crc32c.h"
#include "lib/Support/FileIO.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace estc;
using namespace estc::summary;
namespace fs = std::filesystem;

namespace {
class SummaryTest : public ::testing::Test {
protected:
  void SetUp() override {
    const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir = (fs::temp_directory_path() /
           ("estc-summary-test-" + std::to_string(::getpid()) + "-" +
            info->name()))
              .string();
    fs::remove_all(dir);
  }
  void TearDown() override { fs::remove_all(dir); }
  std::string dir;
};

uint64_t le(const std::string &s, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i)
    v = v << 8 | static_cast<unsigned char>(s[at + i]);
  return v;
}

// Decodes the TFRecord framing by hand, checking both CRCs of every record.
std::vector<std::string> decodeRecords(const std::string &bytes) {
  std::vector<std::string> records;
  size_t pos = 0;
  while (pos < bytes.size()) {
    EXPECT_LE(pos + 12, bytes.size());
    uint64_t length = le(bytes, pos, 8);
    EXPECT_EQ(le(bytes, pos + 8, 4),
              crc32c::mask(crc32c::value(bytes.data() + pos, 8)));
    std::string data = bytes.substr(pos + 12, length);
    EXPECT_EQ(le(bytes, pos + 12 + length, 4),
              crc32c::mask(crc32c::value(data)));
    records.push_back(data);
    pos += 12 + length + 4;
  }
  EXPECT_EQ(pos, bytes.size());
  return records;
}

template <typename F> std::string errorOf(F f) {
  try {
    f();
  } catch (const EventFileError &e) {
    return e.what();
  }
  return "(no error)";
}
} // namespace

TEST(EventFraming, KnownBytes) {
  // A record of "abc": 3 as uint64 LE, masked CRCs around it.
  std::string r = frame_record("abc");
  ASSERT_EQ(r.size(), 8u + 4 + 3 + 4);
  EXPECT_EQ(r.substr(0, 8), std::string("\x03\0\0\0\0\0\0\0", 8));
  EXPECT_EQ(le(r, 8, 4), crc32c::mask(crc32c::value(r.data(), 8)));
  EXPECT_EQ(r.substr(12, 3), "abc");
  EXPECT_EQ(le(r, 15, 4), crc32c::mask(crc32c::value("abc")));
}

TEST_F(SummaryTest, WritesScalarsTensorBoardReads) {
  double clock = 1700000000.25;
  std::string path;
  {
    SummaryWriter writer(dir + "/eval", [&clock] { return clock; });
    path = writer.path();
    writer.add_scalar("loss", 0.5, 100);
    clock += 1;
    writer.add_scalars({{"accuracy", 0.875}, {"auc", 0.25}}, 200);
    writer.flush();
  } // the destructor closes
  std::string name = fileio::baseName(path);
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  EXPECT_EQ(name, std::string("events.out.tfevents.1700000000.") + host);
  EXPECT_EQ(list_event_files(dir + "/eval"), std::vector<std::string>{path});

  std::vector<std::string> records = decodeRecords(fileio::readFile(path));
  ASSERT_EQ(records.size(), 3u);
  Event first;
  ASSERT_TRUE(first.ParseFromString(records[0]));
  EXPECT_EQ(first.file_version(), "brain.Event:2");
  EXPECT_EQ(first.wall_time(), 1700000000.25);

  // Field numbers as in TensorFlow: the scalar record byte for byte.
  Event loss;
  ASSERT_TRUE(loss.ParseFromString(records[1]));
  EXPECT_EQ(loss.step(), 100);
  ASSERT_EQ(loss.summary().value_size(), 1);
  EXPECT_EQ(loss.summary().value(0).tag(), "loss");
  EXPECT_EQ(loss.summary().value(0).simple_value(), 0.5f);
  const std::string &b = records[1];
  EXPECT_EQ(b[0], '\x09');  // wall_time: field 1, fixed64
  EXPECT_EQ(b[9], '\x10');  // step: field 2, varint
  EXPECT_EQ(b[10], '\x64'); // 100
  EXPECT_EQ(b[11], '\x2a'); // summary: field 5, length-delimited
  // Summary.value (field 1) = {tag (field 1) "loss", simple_value (field 2,
  // fixed32) 0.5f}.
  std::string value = "\x0a\x04loss\x15" + std::string("\0\0\0\x3f", 4);
  std::string summary = "\x0a" + std::string(1, char(value.size())) + value;
  EXPECT_EQ(b.substr(12), std::string(1, char(summary.size())) + summary);

  std::vector<Event> events = read_events(path);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[2].step(), 200);
  EXPECT_EQ(events[2].wall_time(), 1700000001.25);
  ASSERT_EQ(events[2].summary().value_size(), 2);
  EXPECT_EQ(events[2].summary().value(1).tag(), "auc");
  EXPECT_EQ(events[2].summary().value(1).simple_value(), 0.25f);
}

TEST_F(SummaryTest, SecondWriterInTheSameSecondGetsItsOwnFile) {
  auto clock = [] { return 1.0; };
  SummaryWriter a(dir, clock), b(dir, clock);
  EXPECT_NE(a.path(), b.path());
  EXPECT_EQ(list_event_files(dir).size(), 2u);
}

TEST_F(SummaryTest, WriteAfterClose) {
  SummaryWriter writer(dir);
  writer.close();
  writer.close(); // idempotent
  EXPECT_NE(
      errorOf([&] { writer.add_scalar("x", 1, 1); }).find("write after close"),
      std::string::npos);
}

TEST_F(SummaryTest, EveryCorruptByteIsDetected) {
  std::string path;
  {
    SummaryWriter writer(dir);
    path = writer.path();
    writer.add_scalar("loss", 1.25, 7);
  }
  std::string bytes = fileio::readFile(path);
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string bad = bytes;
    bad[i] ^= 0x10;
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bad;
    std::string error = errorOf([&] { read_events(path); });
    ASSERT_NE(error, "(no error)") << "byte " << i;
    EXPECT_EQ(error.rfind(path + ": record at offset ", 0), 0u) << error;
    EXPECT_EQ(error.find('\n'), std::string::npos);
  }
  size_t second = 12 + le(bytes, 0, 8) + 4; // the offset of the 2nd record
  bytes[second + 12] ^= 1;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  EXPECT_EQ(errorOf([&] { read_events(path); }),
            path + ": record at offset " + std::to_string(second) +
                ": data CRC mismatch (corrupt record)");
}

TEST_F(SummaryTest, TruncationIsDetected) {
  std::string path;
  {
    SummaryWriter writer(dir);
    path = writer.path();
    writer.add_scalar("loss", 1.25, 7);
  }
  std::string bytes = fileio::readFile(path);
  size_t second = 12 + le(bytes, 0, 8) + 4;
  for (size_t len = second + 1; len < bytes.size(); ++len) {
    std::ofstream(path, std::ios::binary | std::ios::trunc)
        << bytes.substr(0, len);
    EXPECT_NE(errorOf([&] { read_events(path); }).find("truncated"),
              std::string::npos)
        << len;
  }
  EXPECT_NE(errorOf([&] { read_events(dir + "/nope"); }).find("cannot open"),
            std::string::npos);
}

// Optional: TensorBoard's own loader reads the file.
TEST_F(SummaryTest, TensorBoardLoaderReadsIt) {
  if (std::system("python3 -c 'import tensorboard' > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "SKIP: python3 module tensorboard not installed";
  std::string path;
  {
    SummaryWriter writer(dir);
    path = writer.path();
    writer.add_scalar("loss", 0.5, 100);
    writer.add_scalar("loss", 0.25, 200);
  }
  std::string script =
      "import sys\n"
      "from tensorboard.backend.event_processing import event_file_loader\n"
      "events = "
      "list(event_file_loader.LegacyEventFileLoader(sys.argv[1]).Load())\n"
      "assert events[0].file_version == 'brain.Event:2'\n"
      "got = [(e.step, v.tag, v.simple_value) for e in events[1:] for v in "
      "e.summary.value]\n"
      "assert got == [(100, 'loss', 0.5), (200, 'loss', 0.25)], got\n";
  std::ofstream(dir + "/check.py") << script;
  EXPECT_EQ(std::system(("python3 " + dir + "/check.py " + path).c_str()), 0);
}
