//===- graph_binary_fuzzer.cpp - Binary graph files (GraphIO) ------------===//

#include "test/fuzz/GraphFuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  estc::fuzz::fuzzGraphFile(estc::fuzz::bytesOf(data, size), "graph.pb");
  return 0;
}
