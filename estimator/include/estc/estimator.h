//===- estc/estimator.h - The Estimator API (tf.estimator for C++) --------===//
//
// The one header of a trainer: model_fn, EstimatorSpec, Estimator (train,
// evaluate, predict, export_saved_model), RunConfig, input_fns, hooks,
// train_and_evaluate, exporters, early stopping, warm starts, and everything
// a model_fn builds with (estc/graph.h, estc/data.h, estc/feature_column.h,
// estc/canned.h). Link estc::estimator (models compiled ahead of time), or
// estc::estimator_jit to compile model_fns in process (docs/user-guide.md).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_PUBLIC_ESTIMATOR_H
#define ESTC_PUBLIC_ESTIMATOR_H

#include "estc/canned.h"
#include "estc/data.h"
#include "estc/feature_column.h"
#include "estc/graph.h"
#include "estimator/EarlyStopping.h"
#include "estimator/Estimator.h"
#include "estimator/EstimatorSpec.h"
#include "estimator/Export.h"
#include "estimator/Exporters.h"
#include "estimator/Hooks.h"
#include "estimator/Input.h"
#include "estimator/Logging.h"
#include "estimator/RunConfig.h"
#include "estimator/SessionRunHook.h"
#include "estimator/Training.h"
#include "estimator/WarmStart.h"
#include "lib/Checkpoint/Checkpoint.h"
#include "lib/Checkpoint/TensorBundle.h"
#include "lib/Summary/Summary.h"

#endif // ESTC_PUBLIC_ESTIMATOR_H
