//===- Census.h - The out-of-tree census example's data and columns -------===//
//
// A census-like table the programs below share: age and hours (numbers),
// education and occupation (strings), label income ("<=50K" / ">50K",
// >50K when (Masters or Doctorate, or age over 45) and hours over 35). The
// CSV files are written by census_canned from a fixed seed; nothing is
// downloaded.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_OUT_OF_TREE_CENSUS_H
#define ESTC_OUT_OF_TREE_CENSUS_H

#include <cstdint>
#include <string>
#include <vector>

namespace census {

struct Row {
  float age;
  std::string education;
  std::string occupation;
  float hours;
  std::string income;
};

/// `n` rows from `seed` (std::mt19937: the same rows on every machine).
std::vector<Row> make_rows(int64_t n, uint32_t seed);
/// Writes rows as a CSV file with a header line; false on a write error.
bool write_csv(const std::string &path, const std::vector<Row> &rows);

/// The rows the serving programs send, and the file census_canned writes
/// the Estimator's own predictions of them into (one line per row: the
/// probability of ">50K", then the class name).
constexpr int64_t kServedRows = 8;
constexpr uint32_t kServedSeed = 7;
constexpr const char *kExpectedFile = "expected_predictions.txt";
/// The served rows as a CSV file (for the C client).
constexpr const char *kServedFile = "served.csv";

} // namespace census

#endif // ESTC_OUT_OF_TREE_CENSUS_H
