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
#include <vector>

namespace estc {
namespace estimator {

/// tf.estimator.VocabInfo: how a warm-started variable whose rows (axis 0)
/// or columns (axis 1) follow a vocabulary is remapped from the old
/// vocabulary's order to the new one's: each new entry found in the old
/// vocabulary takes its old row; new entries and the num_oov_buckets OOV
/// rows take backup_initializer (a constant; TF's default: zeros).
struct VocabInfo {
  /// The new vocabulary file (one entry per line) and how many of its
  /// entries the variable has.
  std::string new_vocab;
  int64_t new_vocab_size = 0;
  int64_t num_oov_buckets = 0;
  /// The checkpoint's vocabulary file; old_vocab_size -1: all its lines.
  std::string old_vocab;
  int64_t old_vocab_size = -1;
  double backup_initializer = 0.0;
  int64_t axis = 0;
};

struct WarmStartSettings {
  /// A checkpoint file, a prefix, or a model_dir (its latest valid checkpoint).
  std::string ckpt_to_initialize_from;
  /// Variables to warm-start: those whose name this regex (ECMAScript)
  /// matches from its beginning, like Python's re.match in TF.
  std::string vars_to_warm_start = ".*";
  /// TF's list form of vars_to_warm_start: when not empty, the variables,
  /// trainable or not (batch-norm statistics, optimizer slots), whose name
  /// one of these regexes matches from its beginning; vars_to_warm_start
  /// is then not used. model_to_estimator (KerasEstimator.h) lists every
  /// Keras weight.
  std::vector<std::string> vars_to_warm_start_list{};
  /// New name -> name in the checkpoint, for renamed variables.
  std::map<std::string, std::string> var_name_to_prev_var_name;
  /// Variables (F32, rank 2) remapped between vocabularies, e.g. an
  /// embedding's "dnn/input_from_feature_columns/input_layer/
  /// sex_embedding/embedding_weights" or a linear model's
  /// "linear/linear_model/sex/weights".
  std::map<std::string, VocabInfo> var_name_to_vocab_info;
};

/// The values of the current variables (`current`: name -> dtype and shape)
/// that `settings` selects, loaded from the source checkpoint under their
/// previous names and CRC-checked. Throws train::CheckpointError, one line
/// naming the checkpoint and the variable, when a selected variable is not
/// in the checkpoint or its dtype or shape differs, and when a rename names
/// a variable that is not current; std::invalid_argument for a bad regex.
/// Pass only the variables that may be warm-started (TF considers trainable
/// ones only, or every variable with vars_to_warm_start_list): global_step
/// and optimizer slots are usually left out. A
/// variable with a VocabInfo is remapped (its checkpoint shape may differ
/// along `axis`); DataError naming the file for a missing or short
/// vocabulary file, CheckpointError for shapes that do not fit the
/// vocabularies, std::invalid_argument for a VocabInfo of a variable that
/// is not warm-started.
train::VariableMap
warm_start(const WarmStartSettings &settings,
           const std::map<std::string, VariableSpec> &current);

} // namespace estimator
} // namespace estc

#endif // ESTC_ESTIMATOR_WARMSTART_H
