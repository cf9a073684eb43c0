//===- HeadInternal.h - What the heads' sources share --------------------===//
//
// Internal to estimator/Canned (TF's head/base_head.py helpers): message
// formatting, name scopes, the loss reduction, the train op, the class-id
// predictions and the host label checks every head file uses. Defined in
// Head.cpp. Not part of the API: include Head.h.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_ESTIMATOR_CANNED_HEADINTERNAL_H
#define ESTC_ESTIMATOR_CANNED_HEADINTERNAL_H

#include "estimator/Canned/Head.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace estc {
namespace estimator {
namespace detail {

using NamedMetrics = Head::NamedMetrics;

// --- Messages and names ------------------------------------------------------

/// Python's '%g' % value (metric keys: "accuracy/positive_threshold_0.5").
std::string formatG(double value);
/// A label value in a message: integers as they are, floats to 9 digits.
std::string formatValue(double value);
/// `format` (one %g, %d or %s) filled with `value`.
std::string formatKey(const std::string &format, const std::string &value);
std::string shapeString(const Dims &dims);
/// "<kind>" or "<kind> '<name>'".
std::string describeHead(const char *kind, const std::string &name);

/// A name scope made of a metric key or head name: characters a node name
/// cannot hold become '_'.
std::string scopeName(const std::string &key);
/// A head's name scope: unique in the mode, one level ('/' becomes '_').
Scope headScope(Graph &g, const std::string &name);

// --- Argument checks ---------------------------------------------------------

/// std::invalid_argument for Reduction::NONE (no scalar loss).
void validateReduction(const std::string &who, Reduction reduction);
/// std::invalid_argument unless `t` is a tensor with a value.
void requireTensor(const std::string &who, const Tensor &t, const char *what);
/// std::invalid_argument for a key not in `valid`, listing them.
void checkPredictionKeys(const std::string &who,
                         const std::vector<std::string> &keys,
                         const std::vector<std::string> &valid);
/// Whether `keys` (empty: every key) asks for `key`.
bool wants(const std::vector<std::string> &keys, const char *key);

// --- Graph half --------------------------------------------------------------

/// The sum of the regularization losses (tf.math.add_n), or invalid.
Tensor addN(const std::string &who, const std::vector<Tensor> &losses);
/// Appends "regularization_loss" (`key`) when there are regularization
/// losses.
void addRegularizationMetric(Head::NamedMetrics &metrics,
                             const std::string &who, const std::string &key,
                             const std::vector<Tensor> &losses);
/// Keras's compute_weighted_loss: losses * weights, then summed (SUM) or
/// summed and divided by the number of weighted loss elements
/// (SUM_OVER_BATCH_SIZE, AUTO; divide_no_nan).
Tensor computeWeightedLoss(const Tensor &losses, const Tensor &weights,
                           Reduction reduction);
/// TF's base_head.create_estimator_spec_train_op: optimizer.minimize or
/// train_op_fn (exactly one), grouped with `update_ops`.
Operation createTrainOp(const std::string &who, const Tensor &loss,
                        const std::optional<train::Optimizer> &optimizer,
                        const std::vector<Variable> &trainable_variables,
                        const Head::TrainOpFn &train_op_fn,
                        const std::vector<Operation> &update_ops);
/// TF's base_head.all_class_ids: I64 [D0, ..., n] holding 0..n-1 in every
/// row (`like` has the batch dimensions and n in its last).
Tensor allClassIds(const Tensor &like, int64_t n,
                   const std::string &name = PredictionKeys::ALL_CLASS_IDS);
/// argmax over the last axis, as [D0, ..., 1] I64.
Tensor classIds(const Tensor &logits);

// --- Host half ---------------------------------------------------------------

/// The batch row of element `i` of a tensor of `shape`.
int64_t batchRow(const std::vector<int64_t> &shape, int64_t i);
/// The batch row of each element of a dense tensor.
std::function<int64_t(int64_t)> denseRows(const TensorValue &t);
/// The names of class ids (vocabulary entries or decimal ids), same shape.
TensorValue namesOf(const std::string &who, const TensorValue &ids,
                    int64_t n_classes,
                    const std::vector<std::string> &vocabulary);
/// "classes" / "all_classes" of a prediction from its "class_ids" /
/// "all_class_ids".
void addClassNames(HostPrediction &prediction,
                   const std::function<TensorValue(const TensorValue &)> &f);
/// Class ids of string labels through `lookup`; DataError for a label not
/// in the vocabulary, naming it and its batch row (`rowOf` its position).
std::vector<int64_t>
vocabularyIds(const std::string &who, const data::VocabularyLookup &lookup,
              const TensorValue &labels,
              const std::function<int64_t(int64_t)> &rowOf);
/// Numeric labels as float32, each checked in [lo, hi] when `check`.
TensorValue floatLabels(const std::string &who, const TensorValue &labels,
                        bool check, double lo, double hi,
                        const std::string &why = "");
/// The lookup of a label vocabulary (none when empty).
std::optional<data::VocabularyLookup>
makeLookup(const std::string &who, const std::vector<std::string> &vocabulary);

} // namespace detail
} // namespace estimator
} // namespace estc

#endif // ESTC_ESTIMATOR_CANNED_HEADINTERNAL_H
