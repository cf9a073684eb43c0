//===- graph_text_fuzzer.cpp - Text graph files (GraphIO, TextProto) -----===//

#include "test/fuzz/GraphFuzz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  estc::fuzz::fuzzGraphFile(estc::fuzz::bytesOf(data, size), "graph.pbtxt");
  return 0;
}
