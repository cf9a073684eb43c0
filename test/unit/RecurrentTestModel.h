//===- RecurrentTestModel.h - A BiLSTM classifier over padded batches ---===//
//
// RecurrentModelTest's model, compiled by the JIT and, through
// make_recurrent_graph, by estc ahead of time: `tokens` F32 [batch, T, 4]
// (a run-time sequence length), `lengths` I32 [batch], labels I32 [batch];
// a Bidirectional LSTM (6 units, masked by the lengths) and a GRU over its
// sequence outputs, then dense(3); sparse softmax cross entropy, Adam.
// Every mode of the graph (train, eval, predict).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_TEST_UNIT_RECURRENTTESTMODEL_H
#define ESTC_TEST_UNIT_RECURRENTTESTMODEL_H

#include "lib/Graph/GraphBuilder.h"
#include "lib/Graph/Layers.h"
#include "lib/Graph/Ops.h"
#include "lib/Graph/Recurrent.h"
#include "lib/Graph/Train.h"

namespace estc {
namespace recurrent_model {

constexpr int64_t kFeatures = 4, kClasses = 3, kUnits = 6;

inline InputSpec inputs() {
  InputSpec in;
  TensorSpec tokens{"tokens", DType::Float32, {-1, -1, kFeatures}};
  tokens.sequence_dim = true;
  in.features.push_back(tokens);
  in.features.push_back({"lengths", DType::Int32, {-1}});
  in.labels = TensorSpec{"labels", DType::Int32, {-1}};
  return in;
}

inline graph::GraphDef graph_def() {
  return build_graph_def(
      inputs(),
      [](Graph &, const TensorMap &f, const Tensor &labels, ModeKeys mode) {
        layers::RecurrentOptions seq;
        seq.return_sequences = true;
        Tensor h = layers::bidirectional(layers::CellType::LSTM, f["tokens"],
                                         kUnits, seq, "concat", f["lengths"])
                       .output;
        Tensor last =
            layers::gru(h, kUnits, layers::RecurrentOptions(), f["lengths"])
                .output;
        Tensor logits = layers::dense(last, kClasses);
        Signature s;
        s.predictions.set("logits", logits);
        if (mode != ModeKeys::PREDICT) {
          s.loss = reduce_mean(
              nn::sparse_softmax_cross_entropy_with_logits(labels, logits));
          if (mode == ModeKeys::TRAIN)
            s.train_op = train::AdamOptimizer(0.01).minimize(s.loss);
        }
        return s;
      },
      /*seed=*/11);
}

} // namespace recurrent_model
} // namespace estc

#endif // ESTC_TEST_UNIT_RECURRENTTESTMODEL_H
