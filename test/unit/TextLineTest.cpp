//===- TextLineTest.cpp - TextLineReader: TF's lines, positions ----------===//
//
// The expected lines are what TF 2.15's TextLineDataset gives for the same
// bytes (checked with tensorflow-cpu 2.15.1).
//
//===----------------------------------------------------------------------===//

#include "lib/Data/TextLine.h"

#include "FileTesting.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <unistd.h>

using namespace estc::data;
namespace fs = std::filesystem;

namespace {

class TextLineTest : public estc::testing::FileTest {
protected:
  TextLineTest() : FileTest("textline") {}

  static std::vector<std::string> linesOf(TextLineReader &reader) {
    std::vector<std::string> lines;
    std::string line;
    while (reader.read(line))
      lines.push_back(line);
    return lines;
  }
  std::vector<std::string> lines(const std::string &bytes,
                                 size_t bufferSize = 256 * 1024) {
    TextLineReader reader(write("f.txt", bytes), Compression::None, bufferSize);
    return linesOf(reader);
  }
};

using Lines = std::vector<std::string>;

TEST_F(TextLineTest, LinesAsTensorFlowSplitsThem) {
  EXPECT_EQ(lines("a\nb\n"), (Lines{"a", "b"}));
  EXPECT_EQ(lines("a\nb"), (Lines{"a", "b"})) << "last line without \\n";
  EXPECT_EQ(lines(""), Lines{});
  EXPECT_EQ(lines("\n"), Lines{""});
  EXPECT_EQ(lines("a\n\n"), (Lines{"a", ""})) << "an empty line is a line";
  EXPECT_EQ(lines("\n\nx"), (Lines{"", "", "x"}));
}

TEST_F(TextLineTest, CarriageReturnsAreDropped) {
  EXPECT_EQ(lines("a\r\nb\r\n"), (Lines{"a", "b"}));
  // TF drops every '\r', not only the one before '\n'.
  EXPECT_EQ(lines("a\r\nb\rc\r"), (Lines{"a", "bc"}));
  EXPECT_EQ(lines("x\ry\n"), Lines{"xy"});
  EXPECT_EQ(lines("a\r\r\n"), Lines{"a"});
  // A last "line" of '\r's alone is none.
  EXPECT_EQ(lines("\r"), Lines{});
  EXPECT_EQ(lines("a\n\r"), Lines{"a"});
  EXPECT_EQ(lines("\r\n"), Lines{""});
}

TEST_F(TextLineTest, BufferSizeDoesNotChangeLines) {
  std::string bytes = "first\r\n\nthird line is longer\rstill\nlast";
  Lines expected{"first", "", "third line is longerstill", "last"};
  for (size_t size : {1, 2, 3, 7, 64})
    EXPECT_EQ(lines(bytes, size), expected) << "buffer_size " << size;
}

TEST_F(TextLineTest, OffsetAndLineNumber) {
  TextLineReader reader(write("f.txt", "ab\r\n\ncd"));
  std::string line;
  EXPECT_EQ(reader.offset(), 0u);
  EXPECT_EQ(reader.line_number(), 0);
  ASSERT_TRUE(reader.read(line));
  EXPECT_EQ(line, "ab");
  EXPECT_EQ(reader.offset(), 4u);
  EXPECT_EQ(reader.line_number(), 1);
  ASSERT_TRUE(reader.read(line));
  EXPECT_EQ(line, "");
  EXPECT_EQ(reader.offset(), 5u);
  EXPECT_EQ(reader.line_number(), 2);
  ASSERT_TRUE(reader.read(line));
  EXPECT_EQ(line, "cd");
  EXPECT_EQ(reader.offset(), 7u);
  EXPECT_EQ(reader.line_number(), 3);
  EXPECT_FALSE(reader.read(line));
  EXPECT_FALSE(reader.read(line)) << "the end stays the end";
  EXPECT_EQ(reader.line_number(), 3);
}

TEST_F(TextLineTest, SeekResumesWhereOffsetWas) {
  std::string path = write("f.txt", "one\ntwo\nthree\nfour\n");
  TextLineReader first(path, Compression::None, 3);
  std::string line;
  ASSERT_TRUE(first.read(line));
  ASSERT_TRUE(first.read(line));
  uint64_t offset = first.offset();
  int64_t number = first.line_number();
  Lines rest = linesOf(first);
  EXPECT_EQ(rest, (Lines{"three", "four"}));

  // A fresh reader (an iterator restored after a restart).
  TextLineReader second(path);
  second.seek(offset, number);
  EXPECT_EQ(second.line_number(), 2);
  ASSERT_TRUE(second.read(line));
  EXPECT_EQ(line, "three");
  EXPECT_EQ(second.line_number(), 3);
  // Backwards too.
  second.seek(0, 0);
  EXPECT_EQ(linesOf(second), (Lines{"one", "two", "three", "four"}));
}

TEST_F(TextLineTest, Errors) {
  std::string missing = (dir_ / "missing.txt").string();
  try {
    TextLineReader reader(missing);
    FAIL() << "opened a missing file";
  } catch (const DataError &e) {
    EXPECT_EQ(std::string(e.what()),
              missing + ": cannot open: No such file or directory");
  }
  TextLineReader reader(write("f.txt", "abc\n"));
  try {
    reader.seek(5, 1);
    FAIL() << "seek past the end";
  } catch (const DataError &e) {
    std::string m = e.what();
    EXPECT_EQ(m.rfind(reader.path() + ": ", 0), 0u) << m;
    EXPECT_NE(m.find("byte 5"), std::string::npos) << m;
  }
}

TEST_F(TextLineTest, GzipWhenTheStreamSupportsIt) {
  std::string path = (dir_ / "f.txt.gz").string();
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::string bytes = "a\r\nb\n\nlast";
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
  std::unique_ptr<TextLineReader> reader;
  try {
    reader = std::make_unique<TextLineReader>(path, Compression::Gzip, 4);
  } catch (const DataError &e) {
    if (std::string(e.what()).find("not supported") != std::string::npos)
      GTEST_SKIP() << e.what();
    throw;
  }
  EXPECT_EQ(linesOf(*reader), (Lines{"a", "b", "", "last"}));
  EXPECT_EQ(reader->offset(), bytes.size()) << "uncompressed offsets";
  reader->seek(3, 1);
  EXPECT_EQ(linesOf(*reader), (Lines{"b", "", "last"}));
}

} // namespace
