//===- estc/feature_column.h - tf.feature_column for estc -------*- C++ -*-===//
//
// Feature columns (docs/feature-columns.md): the columns, their graph half
// (input_layer, DenseFeatures, linear_model), their host half and the
// Estimator's host transform over them (make_host_transform).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_PUBLIC_FEATURE_COLUMN_H
#define ESTC_PUBLIC_FEATURE_COLUMN_H

#include "estimator/FeatureColumnTransform.h"
#include "lib/FeatureColumn/FeatureColumn.h"
#include "lib/FeatureColumn/FeatureLayers.h"
#include "lib/FeatureColumn/Serialization.h"
#include "lib/FeatureColumn/Transformer.h"

#endif // ESTC_PUBLIC_FEATURE_COLUMN_H
