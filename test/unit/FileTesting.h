//===- FileTesting.h - What the file-format tests share -----------------===//
//
// A fixture with a fresh directory per test (removed after it) and a way to
// write bytes there; and the message of the exception a call throws.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_TEST_UNIT_FILETESTING_H
#define ESTC_TEST_UNIT_FILETESTING_H

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

namespace estc {
namespace testing {

/// A test with its own directory: <tmp>/estc-<prefix>-<pid>-<test name>.
class FileTest : public ::testing::Test {
protected:
  explicit FileTest(std::string prefix) : prefix_(std::move(prefix)) {}
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("estc-" + prefix_ + "-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string path(const std::string &name) const {
    return (dir_ / name).string();
  }
  /// Writes `bytes` to the file `name` in the directory; its path.
  std::string write(const std::string &name, const std::string &bytes) const {
    std::string p = path(name);
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }

  std::filesystem::path dir_;

private:
  std::string prefix_;
};

/// The what() of the E that fn() throws; "" when it throws none (other
/// exceptions go through).
template <typename E, typename F> std::string messageOf(F &&fn) {
  try {
    fn();
  } catch (const E &e) {
    return e.what();
  }
  return "";
}

} // namespace testing
} // namespace estc

#endif // ESTC_TEST_UNIT_FILETESTING_H
