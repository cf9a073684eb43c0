//===- event_file_fuzzer.cpp - TensorBoard event files (Summary) ---------===//
//
// An event file read with read_events (EventFileReader): TFRecord framing,
// both CRC32Cs of every record, then the Event protobuf. The documented
// failure is EventFileError, one line naming the file. Every Event read
// must frame back into a record the reader reads again.
//
//===----------------------------------------------------------------------===//

#include "test/fuzz/FuzzSupport.h"

#include "lib/Summary/Summary.h"

#include <google/protobuf/stubs/logging.h>

using namespace estc;
using namespace estc::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static bool quiet = (google::protobuf::SetLogHandler(nullptr), true);
  (void)quiet;
  std::string path =
      scratch().write("events.out.tfevents.1.fuzz", bytesOf(data, size));
  std::vector<summary::Event> events;
  try {
    events = summary::read_events(path);
  } catch (const summary::EventFileError &e) {
    checkFileError(e.what(), path);
    return 0;
  }
  std::string records;
  for (const summary::Event &event : events)
    records += summary::frame_record(event.SerializeAsString());
  std::string copy = scratch().write("events.out.tfevents.2.fuzz", records);
  try {
    if (summary::read_events(copy).size() != events.size())
      die("events framed again read back as a different number of events");
  } catch (const summary::EventFileError &e) {
    die(std::string("events framed again do not read: ") + e.what());
  }
  return 0;
}
