//===- Titanic.h - The Titanic example's input and feature columns ------===//
//
// TF's linear-model tutorial (tutorials/estimator/linear) on the Kaggle
// Titanic CSVs (../shared/data/titanic: train.csv 712 rows, test.csv 179),
// exactly as bench/tf_canned_peer.py has it, so estc and TF 2.15 train the
// same model on the same features:
//
//   input   make_csv_dataset over the file (Survived, Pclass, Sex, Age
//           (28.0 when empty), SibSp, Parch, Fare, Cabin ("" when empty),
//           Embarked ("unknown" when empty); label Survived), then one map:
//           sex, n_siblings_spouses, parch, class, age, fare,
//           embark_town = Embarked, deck = Cabin's first byte or "unknown",
//           alone = SibSp + Parch == 0.
//   columns sex, class, deck, embark_town (vocabulary lists),
//           n_siblings_spouses, parch, alone (identity), age_buckets
//           (bucketized age), fare (numeric), age_buckets x sex (crossed,
//           100 buckets); the deep part: indicators of the categorical
//           ones plus age and fare.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_EXAMPLES_TITANIC_TITANIC_H
#define ESTC_EXAMPLES_TITANIC_TITANIC_H

#include "estc/canned.h"
#include "estc/data.h"

#include <cstdint>
#include <string>

namespace estc {
namespace examples {

/// The (features, labels) batches of a Titanic CSV file: `epochs` passes
/// (nullopt: forever), shuffled with `seed` when `shuffle`.
data::Dataset titanic_dataset(const std::string &csv_file, int64_t batch_size,
                              std::optional<int64_t> epochs, bool shuffle,
                              uint64_t seed);

/// The tutorial's columns: the linear model's ten.
feature_column::FeatureColumns titanic_linear_columns();
/// The deep part's: indicators of the categorical columns, age and fare.
feature_column::FeatureColumns titanic_dnn_columns();

/// The example's two models: "linear" (LinearClassifier) and
/// "dnn_linear_combined" (DNNLinearCombinedClassifier, hidden units
/// [64, 32]; with `tuned_rates`, linear Ftrl 0.2 and dnn Adagrad 0.05, as
/// the peer's dnn_linear_combined_lr; else TF's defaults).
estimator::CannedModel titanic_model(const std::string &kind,
                                     bool tuned_rates = true);

} // namespace examples
} // namespace estc

#endif // ESTC_EXAMPLES_TITANIC_TITANIC_H
