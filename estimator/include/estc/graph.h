//===- estc/graph.h - The graph builder: ops, layers, losses, optimizers --===//
//
// What a model_fn builds its graph with: tf's ops (Ops.h, ArrayOps.h),
// tf.layers (Layers.h), loops (ControlFlow.h), Keras recurrent layers
// (Recurrent.h), losses, optimizers and learning-rate schedules (Train.h),
// tf.compat.v1.metrics (Metrics.h), tf.compat.v1.summary (Summaries.h), and
// reading or writing graph files.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_PUBLIC_GRAPH_H
#define ESTC_PUBLIC_GRAPH_H

#include "lib/Graph/ArrayOps.h"
#include "lib/Graph/ControlFlow.h"
#include "lib/Graph/GraphBuilder.h"
#include "lib/Graph/GraphIO.h"
#include "lib/Graph/Layers.h"
#include "lib/Graph/Metrics.h"
#include "lib/Graph/Ops.h"
#include "lib/Graph/PartitionedVariables.h"
#include "lib/Graph/Recurrent.h"
#include "lib/Graph/Summaries.h"
#include "lib/Graph/Train.h"

#endif // ESTC_PUBLIC_GRAPH_H
