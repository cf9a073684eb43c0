//===- IdxTest.cpp - IDX reader: formats, errors, the real MNIST files ---===//

#include "lib/Data/Idx.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>

using namespace estc::data;
namespace fs = std::filesystem;

namespace {

class IdxTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("estc-idx-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string &name, const std::string &bytes) {
    std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  std::string writeGzip(const std::string &name, const std::string &bytes) {
    std::string path = (dir_ / name).string();
    gzFile f = gzopen(path.c_str(), "wb");
    gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
    gzclose(f);
    return path;
  }
  /// The error message read_idx throws for `path`.
  static std::string errorOf(const std::string &path) {
    try {
      read_idx(path);
    } catch (const DataError &e) {
      return e.what();
    }
    return "";
  }

  fs::path dir_;
};

std::string header(uint8_t type, std::vector<uint32_t> dims) {
  std::string h = {0, 0, static_cast<char>(type),
                   static_cast<char>(dims.size())};
  for (uint32_t d : dims)
    for (int shift = 24; shift >= 0; shift -= 8)
      h.push_back(static_cast<char>((d >> shift) & 0xFF));
  return h;
}

TEST_F(IdxTest, ReadsEveryElementTypeBigEndian) {
  // u8 [2,3]
  IdxArray a = read_idx(write(
      "u8", header(0x08, {2, 3}) + std::string("\x01\x02\x03\x04\x05\xFF")));
  EXPECT_EQ(a.dims, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.values, (std::vector<double>{1, 2, 3, 4, 5, 255}));
  // i8, i16, i32: sign and byte order.
  EXPECT_EQ(read_idx(write("i8", header(0x09, {1}) + "\xFE")).values[0], -2);
  EXPECT_EQ(
      read_idx(write("i16", header(0x0B, {1}) + std::string("\xFF\x00", 2)))
          .values[0],
      -256);
  EXPECT_EQ(read_idx(write("i32", header(0x0C, {1}) +
                                      std::string("\x00\x01\x00\x02", 4)))
                .values[0],
            65538);
  // f32 1.5 = 0x3FC00000, f64 -2.25 = 0xC002000000000000.
  EXPECT_EQ(read_idx(write("f32", header(0x0D, {1}) +
                                      std::string("\x3F\xC0\x00\x00", 4)))
                .values[0],
            1.5);
  EXPECT_EQ(read_idx(write("f64", header(0x0E, {1}) +
                                      std::string("\xC0\x02\0\0\0\0\0\0", 8)))
                .values[0],
            -2.25);
}

TEST_F(IdxTest, GzipAndPlainGiveTheSameArray) {
  std::string bytes = header(0x08, {4}) + std::string("\x09\x08\x07\x06");
  EXPECT_EQ(read_idx(write("plain", bytes)).values,
            read_idx(writeGzip("packed.gz", bytes)).values);
}

TEST_F(IdxTest, BadFilesAreOneLineErrorsNamingTheFile) {
  struct Case {
    std::string path;
    std::string expected;
  };
  std::string good = header(0x08, {2, 2}) + std::string("\x01\x02\x03\x04");
  std::string gz = writeGzip("good.gz", good);
  std::string gzBytes;
  {
    std::ifstream in(gz, std::ios::binary);
    gzBytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::vector<Case> cases = {
      {(dir_ / "missing").string(), "cannot open"},
      {write("short", std::string("\0\0", 2)),
       "truncated IDX header (2 bytes)"},
      {write("magic", std::string("\x01\x00\x08\x01", 4)), "not an IDX file"},
      {write("type", header(0x07, {1}) + "x"), "unknown IDX element type 0x07"},
      {write("rank0", header(0x08, {})), "IDX rank 0"},
      {write("dims", header(0x08, {2, 2}).substr(0, 9)),
       "truncated IDX header (rank 2, 9 bytes)"},
      {write("data", good.substr(0, good.size() - 1)),
       "truncated IDX data: 15 bytes, the header needs 16"},
      {write("trailing", good + "zz"), "2 trailing bytes after the IDX data"},
      {write("cut.gz", gzBytes.substr(0, gzBytes.size() - 12)),
       "corrupt gzip data"},
  };
  for (const Case &c : cases) {
    std::string message = errorOf(c.path);
    SCOPED_TRACE(c.path);
    EXPECT_EQ(message.rfind(c.path + ": ", 0), 0u) << message;
    EXPECT_NE(message.find(c.expected), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

// Found by fuzzing (test/fuzz/regressions/idx): 2^20 x 2^20 x 2^24
// elements wrapped the 64-bit count to 0, so a 16-byte file read as an
// empty array whose dimensions claim 2^64 elements.
TEST_F(IdxTest, DimensionsWhoseProductWrapsAreTooLarge) {
  std::string path =
      write("wrap", header(0x08, {1u << 20, 1u << 20, 1u << 24}));
  EXPECT_EQ(errorOf(path), path + ": IDX dimensions too large");
}

TEST_F(IdxTest, LoadMnistChecksRanksAndCounts) {
  writeGzip("t-images-idx3-ubyte.gz",
            header(0x08, {2, 1, 2}) + std::string("\x00\xFF\x80\x00", 4));
  writeGzip("t-labels-idx1-ubyte.gz", header(0x08, {2}) + "\x07\x03");
  ImageDataset d = load_mnist(dir_.string(), "t");
  EXPECT_EQ(d.size(), 2);
  EXPECT_EQ(d.rows, 1);
  EXPECT_EQ(d.cols, 2);
  EXPECT_EQ(d.images, (std::vector<float>{0.f, 1.f, 128 / 255.f, 0.f}));
  EXPECT_EQ(d.labels, (std::vector<int64_t>{7, 3}));
  ImageDataset tail = d.slice(1, 2);
  EXPECT_EQ(tail.labels, (std::vector<int64_t>{3}));
  EXPECT_EQ(tail.images, (std::vector<float>{128 / 255.f, 0.f}));
  EXPECT_THROW(d.slice(1, 3), DataError);

  // The same files as bytes; scaled, they are load_mnist's floats.
  MnistBytes bytes = load_mnist_bytes(dir_.string(), "t");
  EXPECT_EQ(bytes.size(), 2);
  EXPECT_EQ(bytes.rows, 1);
  EXPECT_EQ(bytes.cols, 2);
  EXPECT_EQ(bytes.pixels, (std::vector<uint8_t>{0x00, 0xFF, 0x80, 0x00}));
  EXPECT_EQ(bytes.labels, d.labels);
  EXPECT_EQ(bytes.to_float().images, d.images);
  MnistBytes tailBytes = bytes.slice(1, 2);
  EXPECT_EQ(tailBytes.pixels, (std::vector<uint8_t>{0x80, 0x00}));
  EXPECT_EQ(tailBytes.labels, (std::vector<int64_t>{3}));
  EXPECT_THROW(bytes.slice(2, 1), DataError);

  // Three labels for two images: the labels file is at fault.
  writeGzip("u-images-idx3-ubyte.gz",
            header(0x08, {2, 1, 1}) + std::string("\x00\x01", 2));
  writeGzip("u-labels-idx1-ubyte.gz", header(0x08, {3}) + "\x01\x02\x03");
  try {
    load_mnist(dir_.string(), "u");
    FAIL() << "no error";
  } catch (const DataError &e) {
    EXPECT_NE(std::string(e.what()).find(
                  "u-labels-idx1-ubyte.gz: 3 labels for 2 images"),
              std::string::npos)
        << e.what();
  }
  // Labels stored as images: wrong rank.
  writeGzip("v-images-idx3-ubyte.gz", header(0x08, {2}) + "\x01\x02");
  writeGzip("v-labels-idx1-ubyte.gz", header(0x08, {2}) + "\x01\x02");
  EXPECT_THROW(load_mnist(dir_.string(), "v"), DataError);
  EXPECT_THROW(load_mnist(dir_.string(), "absent"), DataError);
}

// p / 255 in double, rounded to float, for every byte (what TF's peer of
// the Fashion-MNIST benchmark computes too).
TEST(ScalePixels, EveryByteIsItsQuotientBy255RoundedToFloat) {
  std::vector<uint8_t> in(256);
  for (int p = 0; p < 256; ++p)
    in[static_cast<size_t>(p)] = static_cast<uint8_t>(p);
  std::vector<float> out(256, -1.f);
  scale_pixels(in.data(), in.size(), out.data());
  for (int p = 0; p < 256; ++p)
    EXPECT_EQ(out[static_cast<size_t>(p)],
              static_cast<float>(static_cast<double>(p) / 255.0))
        << p;
  EXPECT_EQ(out[0], 0.f);
  EXPECT_EQ(out[255], 1.f);
}

// The real MNIST test set from ../shared/data (skipped when absent).
TEST(MnistFiles, SharedTestSetHasTheKnownShapeAndLabelCounts) {
  std::string dir = data_dir(ESTC_DATA_DIR) + "/mnist-t10k";
  if (!fs::exists(dir + "/t10k-labels-idx1-ubyte.gz"))
    GTEST_SKIP() << "shared data set not found: " << dir
                 << " (set ESTC_DATA_DIR to the directory holding mnist-t10k/)";
  ImageDataset d = load_mnist(dir, "t10k");
  ASSERT_EQ(d.size(), 10000);
  EXPECT_EQ(d.rows, 28);
  EXPECT_EQ(d.cols, 28);
  std::vector<int> counts(10, 0);
  for (int64_t label : d.labels) {
    ASSERT_GE(label, 0);
    ASSERT_LT(label, 10);
    ++counts[label];
  }
  // The class counts of the official t10k set.
  EXPECT_EQ(counts, (std::vector<int>{980, 1135, 1032, 1010, 982, 892, 958,
                                      1028, 974, 1009}));
  EXPECT_EQ(d.labels[0], 7); // the famous first test digit
  for (float p : d.images) {
    ASSERT_GE(p, 0.f);
    ASSERT_LE(p, 1.f);
  }
}

} // namespace
