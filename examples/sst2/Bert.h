//===- Bert.h - A BERT-style encoder as an Estimator model_fn -----------===//
//
// BERT (Devlin et al. 2018) as google-research/bert's modeling.py builds it,
// written with estc's graph builder, the same variable names:
//
//   bert/embeddings/{word,token_type,position}_embeddings, their sum layer
//   normalized (bert/embeddings/LayerNorm) and dropped out;
//   num_layers x bert/encoder/layer_i: self-attention (attention/self/
//   {query,key,value}, scaled dot products, the padding mask as an additive
//   -10000 bias, softmax, dropout, attention/output/dense, dropout,
//   residual, attention/output/LayerNorm), a feed-forward layer
//   (intermediate/dense with gelu, output/dense, dropout, residual,
//   output/LayerNorm);
//   bert/pooler/dense (tanh) on the first ([CLS]) token; the classifier
//   output_weights / output_bias on the pooled output (dropped out).
//
// Trained from scratch (no pre-training) with BERT's optimization.py:
// AdamWeightDecay (no bias correction, decoupled weight decay except
// LayerNorm and bias variables), gradients clipped to global norm 1.0,
// polynomial decay to 0 after a linear warmup.
//
// Inputs: "input_ids" I64 [batch, seq_length] ([CLS] tokens... padded with
// 0), "lengths" I64 [batch] (tokens including [CLS]); labels I64 [batch].
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_EXAMPLES_SST2_BERT_H
#define ESTC_EXAMPLES_SST2_BERT_H

#include "examples/sst2/Sst2.h"

#include "estc/data.h"
#include "estc/estimator.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace estc {
namespace examples {

struct BertOptions {
  int64_t vocab_size = 0; // kBertFirstWordId + the vocabulary's tokens
  int64_t hidden_size = 256;
  int64_t num_layers = 4;
  int64_t num_heads = 4;
  int64_t intermediate_size = 1024;
  int64_t max_position_embeddings = 128;
  int64_t type_vocab_size = 2;
  int64_t seq_length = 64;
  double hidden_dropout = 0.1;
  double attention_dropout = 0.1;
  double initializer_range = 0.02;
  int64_t num_classes = 2;
  // optimization.py
  double learning_rate = 1e-4;
  int64_t num_train_steps = 1000;
  int64_t num_warmup_steps = 100;
};

/// Ids of the special tokens; the vocabulary's tokens follow.
constexpr int64_t kBertPadId = 0, kBertUnkId = 1, kBertClsId = 2,
                  kBertFirstWordId = 3;

/// The pooled output [batch, hidden_size] of the encoder (bert/...).
Tensor bert_pooled_output(const Tensor &input_ids, const Tensor &lengths,
                          bool training, const BertOptions &options);

/// The classifier's logits [batch, num_classes] on the pooled output.
Tensor bert_logits(const Tensor &input_ids, const Tensor &lengths,
                   bool training, const BertOptions &options);

/// optimization.py's train_op for `loss` (examples/sst2/AdamWeightDecay.h's
/// create_optimizer): AdamWeightDecay (weight decay 0.01) on the warmup +
/// polynomial decay schedule, gradients clipped to global norm 1.0.
Operation bert_train_op(Graph &graph, const Tensor &loss,
                        const BertOptions &options);

/// The model_fn: predictions classes / probabilities / logits, metric
/// accuracy, sparse softmax cross-entropy.
estimator::ModelFn bert_model_fn(BertOptions options);

/// The sentences as BERT's inputs: ({"input_ids": [batch, seq_length],
/// "lengths": [batch]}, labels [batch]), each sentence [CLS] + its tokens
/// (ids from `vocabulary`, kBertUnkId for others; cut to seq_length),
/// padded with kBertPadId. Shuffled from `seed` when `shuffle`; `epochs`
/// nullopt repeats forever.
data::Dataset bert_dataset(std::shared_ptr<const Sentences> sentences,
                           const std::vector<std::string> &vocabulary,
                           int64_t seq_length, int64_t batch_size,
                           std::optional<int64_t> epochs, bool shuffle,
                           uint64_t seed);

} // namespace examples
} // namespace estc

#endif // ESTC_EXAMPLES_SST2_BERT_H
