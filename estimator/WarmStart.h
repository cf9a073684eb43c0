//===- WarmStart.h - Initializing variables from another checkpoint -----===//
//
// tf.estimator.WarmStartSettings for C++: which variables of a new model take
// their initial values from an existing checkpoint, under which old names.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_ESTIMATOR_WARMSTART_H
#define ESTC_ESTIMATOR_WARMSTART_H

#include "lib/Checkpoint/Checkpoint.h"

#include <map>
#include <string>

namespace estc {
namespace estimator {

struct WarmStartSettings {
  /// A checkpoint file, a prefix, or a model_dir (its latest valid checkpoint).
  std::string ckpt_to_initialize_from;
  /// Variables to warm-start: those whose name this regex (ECMAScript)
  /// matches from its beginning, like Python's re.match in TF.
  std::string vars_to_warm_start = ".*";
  /// New name -> name in the checkpoint, for renamed variables.
  std::map<std::string, std::string> var_name_to_prev_var_name;
};

/// The values of the current variables (`current`: name -> dtype and shape)
/// that `settings` selects, loaded from the source checkpoint under their
/// previous names and CRC-checked. Throws train::CheckpointError, one line
/// naming the checkpoint and the variable, when a selected variable is not
/// in the checkpoint or its dtype or shape differs, and when a rename names
/// a variable that is not current; std::invalid_argument for a bad regex.
/// Pass only the variables that may be warm-started (TF considers trainable
/// ones only): global_step and optimizer slots are usually left out.
train::VariableMap
warm_start(const WarmStartSettings &settings,
           const std::map<std::string, VariableSpec> &current);

} // namespace estimator
} // namespace estc

#endif // ESTC_ESTIMATOR_WARMSTART_H
