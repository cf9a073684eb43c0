//===- iterator_state_fuzzer.cpp - Input pipeline states (lib/Data) ------===//
//
// What train() reads back from a checkpoint's _estc_input_pipeline_state:
// the first byte picks
//   0: IteratorState::parse of the bytes as they are (magic, CRC);
//   1: decode_element of the bytes (the element encoding inside states and
//      cache files);
//   else: the bytes framed as a state with a valid magic and CRC, restored
//      into a pipeline of most stages and iterated for a few elements.
// The documented failure is DataError, one line; nothing may crash, hang
// or allocate without bound.
//
//===----------------------------------------------------------------------===//

#include "test/fuzz/FuzzSupport.h"

#include "test/fuzz/IteratorStatePipeline.h"

#include "lib/Data/Dataset.h"
#include "lib/Support/Crc32c.h"

using namespace estc;
using namespace estc::data;
using namespace estc::fuzz;

namespace {

void checkMessage(const DataError &e) {
  std::string m = e.what();
  if (m.empty() || m.find_first_of("\n\r") != std::string::npos)
    die("DataError not one line: " + m);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  std::string_view bytes = bytesOf(data + 1, size - 1);
  try {
    if (data[0] == 0) {
      IteratorState::parse(bytes);
    } else if (data[0] == 1) {
      size_t pos = 0;
      decode_element(bytes, pos, "fuzz");
      if (pos > bytes.size())
        die("decode_element read past the end");
    } else {
      std::string framed = "estc-iterator-state-1\n";
      framed += bytes;
      uint64_t crc = crc32c::value(framed);
      for (int i = 0; i < 8; ++i)
        framed.push_back(static_cast<char>(crc >> (8 * i)));
      IteratorState state = IteratorState::parse(framed);
      Iterator it = fuzz::iteratorStatePipeline().make_iterator();
      it.restore(state);
      for (int i = 0; i < 50 && it.next(); ++i) {
      }
    }
  } catch (const DataError &e) {
    checkMessage(e);
  }
  return 0;
}
