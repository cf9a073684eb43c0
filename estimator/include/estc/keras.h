//===- estc/keras.h - Keras models as Estimators --------------------------===//
//
// tf.keras.estimator.model_to_estimator for C++: a compiled Keras model
// saved by Keras (.keras, .h5) as an Estimator, fine-tuned, evaluated,
// exported, and its trained weights written back into a file Keras loads
// (estimator/KerasEstimator.h; docs/user-guide.md, "Keras models as
// Estimators"). The Keras file formats themselves: lib/Keras/KerasModel.h.
// Link estc::keras (the installed package's component `keras`, which needs
// `jit`).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_PUBLIC_KERAS_H
#define ESTC_PUBLIC_KERAS_H

#include "estc/estimator.h"
#include "estimator/KerasEstimator.h"
#include "lib/Keras/KerasGraph.h"
#include "lib/Keras/KerasModel.h"

#endif // ESTC_PUBLIC_KERAS_H
