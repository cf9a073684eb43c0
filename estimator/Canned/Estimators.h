//===- Estimators.h - TF 2.15's canned estimators ------------------------===//
//
// tf.estimator's canned models over feature columns, with TF 2.15's
// arguments, defaults and variable names, one header per family as TF's
// modules (tensorflow_estimator/python/estimator/canned/*.py):
//
//   Linear.h             LinearClassifier / LinearRegressor /
//                        LinearEstimator (linear.py)
//   Dnn.h                DNNClassifier / DNNRegressor / DNNEstimator
//                        (dnn.py)
//   DnnLinearCombined.h  DNNLinearCombinedClassifier / Regressor /
//                        Estimator (dnn_linear_combined.py)
//   Baseline.h           BaselineClassifier / BaselineRegressor /
//                        BaselineEstimator (baseline.py)
//   Rnn.h                RNNClassifier / RNNEstimator (rnn.py,
//                        tf.estimator.experimental)
//
// This header includes the five. Each family has a `*_model` function
// giving its CannedModel (Canned.h: head + model_fn + host transform; no
// LLVM, for ahead-of-time graphs; library EstcCanned) and JIT classes,
// CannedEstimators built from it (CannedEstimator.h; link EstcCannedJit).
// The head arguments of the classifiers and regressors, ClassifierOptions
// and RegressorOptions, are Canned.h's.
//
//   auto age = feature_column::numeric_column("age");
//   auto sex = feature_column::categorical_column_with_vocabulary_list(
//       "sex", {"male", "female"});
//   estimator::LinearClassifier model({age, sex});
//   model.train(train_input_fn, {.max_steps = 1000});
//   estimator::EvalResults r = model.evaluate(eval_input_fn);  // accuracy,
//                                                      // auc, average_loss...
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_ESTIMATOR_CANNED_ESTIMATORS_H
#define ESTC_ESTIMATOR_CANNED_ESTIMATORS_H

#include "estimator/Canned/Baseline.h"
#include "estimator/Canned/Dnn.h"
#include "estimator/Canned/DnnLinearCombined.h"
#include "estimator/Canned/Linear.h"
#include "estimator/Canned/Rnn.h"

#endif // ESTC_ESTIMATOR_CANNED_ESTIMATORS_H
