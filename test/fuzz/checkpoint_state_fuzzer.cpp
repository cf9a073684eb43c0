//===- checkpoint_state_fuzzer.cpp - The `checkpoint` state file ---------===//
//
// model_dir/checkpoint (TF's CheckpointState, protobuf text format) read
// with get_checkpoint_state, as every restore does first. The documented
// failure is CheckpointError, one line naming the file. A state that reads
// must write back (update_checkpoint_state) to a file that reads the same.
//
//===----------------------------------------------------------------------===//

#include "test/fuzz/FuzzSupport.h"

#include "lib/Checkpoint/Checkpoint.h"

#include <cmath>
#include <cstring>
#include <sys/stat.h>

using namespace estc;
using namespace estc::fuzz;

namespace {
bool same(double a, double b) {
  return std::memcmp(&a, &b, sizeof a) == 0 || (std::isnan(a) && std::isnan(b));
}

std::string makeDir(const std::string &name) {
  std::string dir = scratch().path() + "/" + name;
  ::mkdir(dir.c_str(), 0755);
  return dir;
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const std::string modelDir = makeDir("model_dir");
  static const std::string copyDir = makeDir("copy");
  std::string path =
      scratch().write("model_dir/checkpoint", bytesOf(data, size));
  std::optional<train::CheckpointState> state;
  try {
    state = train::get_checkpoint_state(modelDir);
  } catch (const train::CheckpointError &e) {
    checkFileError(e.what(), path);
    return 0;
  }
  if (!state)
    die("get_checkpoint_state found no state file beside " + path);

  std::optional<train::CheckpointState> again;
  try {
    train::update_checkpoint_state(copyDir, *state);
    again = train::get_checkpoint_state(copyDir);
  } catch (const train::CheckpointError &e) {
    die(std::string("a state written back does not read: ") + e.what());
  }
  if (!again || again->model_checkpoint_path != state->model_checkpoint_path ||
      again->all_model_checkpoint_paths != state->all_model_checkpoint_paths ||
      again->all_model_checkpoint_timestamps.size() !=
          state->all_model_checkpoint_timestamps.size() ||
      !same(again->last_preserved_timestamp, state->last_preserved_timestamp))
    die("a state changes when written back");
  for (size_t i = 0; i < state->all_model_checkpoint_timestamps.size(); ++i)
    if (!same(again->all_model_checkpoint_timestamps[i],
              state->all_model_checkpoint_timestamps[i]))
      die("a timestamp changes when written back");
  return 0;
}
