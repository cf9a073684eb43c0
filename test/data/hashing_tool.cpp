//===- hashing_tool.cpp - lib/Data/Hashing.h for tf_hashing_compat.py ----===//
//
// Reads requests from stdin, one per line, answers one line each:
//   bucket NUM_BUCKETS HEX...           -> the ids, space-separated
//   cross NUM_BUCKETS HASH_KEY NCOLS    -> then NCOLS lines "s|i ROWS",
//       ROWS: rows separated by ';', values in a row by ',' (hex strings or
//       decimal int64; a row may be empty); answers one line per row, the
//       row's ids space-separated.
// Errors: one line on stderr, exit 1.
//
//===----------------------------------------------------------------------===//

#include "lib/Data/Hashing.h"

#include <iostream>
#include <sstream>
#include <string>

using namespace estc;
using namespace estc::data;

namespace {

std::string unhex(const std::string &h) {
  std::string out;
  for (size_t i = 0; i + 1 < h.size(); i += 2)
    out.push_back(static_cast<char>(std::stoi(h.substr(i, 2), nullptr, 16)));
  return out;
}

std::vector<std::string> split(const std::string &s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

Value column(const std::string &line) {
  bool strings = line[0] == 's';
  std::vector<std::string> rows = split(line.substr(2), ';');
  std::vector<int64_t> indices;
  std::vector<std::string> svals;
  std::vector<int64_t> ivals;
  int64_t widest = 0;
  for (size_t r = 0; r < rows.size(); ++r) {
    if (rows[r].empty())
      continue;
    std::vector<std::string> vals = split(rows[r], ',');
    for (size_t k = 0; k < vals.size(); ++k) {
      indices.push_back(static_cast<int64_t>(r));
      indices.push_back(static_cast<int64_t>(k));
      if (strings)
        svals.push_back(unhex(vals[k]));
      else
        ivals.push_back(std::stoll(vals[k]));
    }
    widest = std::max<int64_t>(widest, static_cast<int64_t>(vals.size()));
  }
  auto rowsN = static_cast<int64_t>(rows.size());
  auto nnz = static_cast<int64_t>(strings ? svals.size() : ivals.size());
  TensorValue values = strings
                           ? TensorValue::of_strings({nnz}, std::move(svals))
                           : TensorValue::of<int64_t>({nnz}, ivals);
  return SparseTensor::make(std::move(indices), std::move(values),
                            {rowsN, widest});
}

} // namespace

int main() {
  try {
    std::string line;
    while (std::getline(std::cin, line)) {
      std::istringstream in(line);
      std::string op;
      in >> op;
      if (op == "bucket") {
        int64_t n;
        in >> n;
        std::vector<std::string> s;
        std::string h;
        while (in >> h)
          s.push_back(unhex(h));
        auto count = static_cast<int64_t>(s.size());
        TensorValue ids = string_to_hash_bucket_fast(
            TensorValue::of_strings({count}, std::move(s)), n);
        for (int64_t id : ids.values<int64_t>())
          std::cout << id << " ";
        std::cout << "\n";
      } else if (op == "cross") {
        int64_t n, cols;
        uint64_t key;
        in >> n >> key >> cols;
        std::vector<Value> inputs;
        for (int64_t c = 0; c < cols; ++c) {
          std::getline(std::cin, line);
          inputs.push_back(column(line));
        }
        SparseTensor out = sparse_cross_hashed(inputs, n, key);
        int64_t rows = out.dense_shape[0];
        std::vector<std::vector<int64_t>> byRow(static_cast<size_t>(rows));
        std::vector<int64_t> idx = out.index_values();
        std::vector<int64_t> ids = out.values.values<int64_t>();
        for (size_t v = 0; v < ids.size(); ++v)
          byRow[static_cast<size_t>(idx[2 * v])].push_back(ids[v]);
        for (const auto &r : byRow) {
          for (int64_t id : r)
            std::cout << id << " ";
          std::cout << "\n";
        }
      } else {
        throw std::invalid_argument("unknown request '" + op + "'");
      }
      std::cout.flush();
    }
  } catch (const std::exception &e) {
    std::cerr << "hashing_tool: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
