//===- Census.cpp - The out-of-tree census example's data -----------------===//

#include "Census.h"

#include <fstream>
#include <random>

namespace census {

std::vector<Row> make_rows(int64_t n, uint32_t seed) {
  static const char *educations[] = {"HS-grad", "Bachelors", "Masters",
                                     "Doctorate"};
  static const char *occupations[] = {"Sales", "Tech-support", "Craft-repair",
                                      "Exec-managerial", "Farming-fishing"};
  std::mt19937 rng(seed);
  std::vector<Row> rows;
  for (int64_t i = 0; i < n; ++i) {
    Row r;
    r.age = static_cast<float>(18 + rng() % 60);
    r.education = educations[rng() % 4];
    r.occupation = occupations[rng() % 5];
    r.hours = static_cast<float>(10 + rng() % 50);
    bool degree = r.education == "Masters" || r.education == "Doctorate";
    r.income = (degree || r.age > 45) && r.hours > 35 ? ">50K" : "<=50K";
    rows.push_back(r);
  }
  return rows;
}

bool write_csv(const std::string &path, const std::vector<Row> &rows) {
  std::ofstream out(path);
  out << "age,education,occupation,hours,income\n";
  for (const Row &r : rows)
    out << r.age << ',' << r.education << ',' << r.occupation << ',' << r.hours
        << ',' << r.income << '\n';
  return static_cast<bool>(out.flush());
}

} // namespace census
