//===- Bert.cpp - A BERT-style encoder as an Estimator model_fn ---------===//

#include "examples/sst2/Bert.h"

#include "examples/sst2/AdamWeightDecay.h"

#include "estc/graph.h"

#include <cmath>
#include <unordered_map>

namespace estc {
namespace examples {

namespace {

Initializer weights(const BertOptions &o) {
  return truncated_normal_initializer(0.0, o.initializer_range);
}

/// modeling.py's layer_norm (tf.contrib.layers.layer_norm over the last
/// axis: epsilon 1e-12, variables LayerNorm/gamma and LayerNorm/beta), as
/// the fused op.
Tensor layerNorm(const Tensor &x) {
  Graph &g = x.graph();
  auto scope = g.name_scope("LayerNorm");
  int64_t width = x.shape().back();
  Variable gamma = g.get_variable("gamma", DType::Float32, {width},
                                  ones_initializer(), true, true);
  Variable beta = g.get_variable("beta", DType::Float32, {width},
                                 zeros_initializer(), true, true);
  return nn::layer_norm(x, gamma.read(), beta.read(), -1, -1, 1e-12);
}

/// modeling.py's gelu: the tanh approximation.
Tensor gelu(const Tensor &x) { return nn::gelu(x, /*approximate=*/true); }

Tensor dense(const Tensor &x, int64_t units, const std::string &name,
             const BertOptions &o, Activation activation = nullptr) {
  return layers::dense(x, units, activation, true, weights(o),
                       zeros_initializer(), name);
}

Tensor dropout(const Tensor &x, double rate, bool training) {
  return rate > 0 ? layers::dropout(x, rate, training) : x;
}

/// [B, S, H] -> [B, heads, S, H / heads].
Tensor splitHeads(const Tensor &x, const BertOptions &o) {
  int64_t head = o.hidden_size / o.num_heads;
  return transpose(reshape(x, {-1, o.seq_length, o.num_heads, head}),
                   {0, 2, 1, 3});
}

Tensor attentionLayer(const Tensor &x, const Tensor &bias, bool training,
                      const BertOptions &o) {
  Graph &g = x.graph();
  auto scope = g.name_scope("self");
  Tensor q = splitHeads(dense(x, o.hidden_size, "query", o), o);
  Tensor k = splitHeads(dense(x, o.hidden_size, "key", o), o);
  Tensor v = splitHeads(dense(x, o.hidden_size, "value", o), o);
  double scale =
      1.0 / std::sqrt(static_cast<double>(o.hidden_size / o.num_heads));
  // softmax(scale * q k^T + bias), one fused pass per row.
  Tensor probs =
      dropout(nn::attention_softmax(matmul(q, k, false, true), bias, scale),
              o.attention_dropout, training);
  Tensor context = transpose(matmul(probs, v), {0, 2, 1, 3});
  return reshape(context, {-1, o.seq_length, o.hidden_size});
}

} // namespace

Tensor bert_pooled_output(const Tensor &input_ids, const Tensor &lengths,
                          bool training, const BertOptions &o) {
  if (o.hidden_size % o.num_heads != 0)
    throw GraphError("bert: hidden_size " + std::to_string(o.hidden_size) +
                     " is not a multiple of num_heads " +
                     std::to_string(o.num_heads));
  if (o.seq_length > o.max_position_embeddings)
    throw GraphError("bert: seq_length " + std::to_string(o.seq_length) +
                     " exceeds max_position_embeddings " +
                     std::to_string(o.max_position_embeddings));
  Graph &g = input_ids.graph();
  auto bert = g.name_scope("bert");
  Tensor x;
  {
    auto scope = g.name_scope("embeddings");
    Variable words =
        g.get_variable("word_embeddings", DType::Float32,
                       {o.vocab_size, o.hidden_size}, weights(o), true, true);
    Variable types = g.get_variable("token_type_embeddings", DType::Float32,
                                    {o.type_vocab_size, o.hidden_size},
                                    weights(o), true, true);
    Variable positions = g.get_variable(
        "position_embeddings", DType::Float32,
        {o.max_position_embeddings, o.hidden_size}, weights(o), true, true);
    // One segment: every token's type is 0, so its embedding is row 0.
    x = add(gather(words.read(), input_ids),
            slice(types.read(), {0, 0}, {1, -1}));
    x = add(x, slice(positions.read(), {0, 0}, {o.seq_length, -1}));
    x = dropout(layerNorm(x), o.hidden_dropout, training);
  }
  // The padding mask as an additive bias [B, 1, 1, S]: 0 where a token
  // is, -10000 after the sentence.
  Tensor mask = cast(sequence_mask(lengths, o.seq_length), DType::Float32);
  Tensor bias = reshape(multiply(subtract(1.0, mask), -10000.0),
                        {-1, 1, 1, o.seq_length});
  {
    auto scope = g.name_scope("encoder");
    for (int64_t i = 0; i < o.num_layers; ++i) {
      auto layer = g.name_scope("layer_" + std::to_string(i));
      Tensor attention;
      {
        auto a = g.name_scope("attention");
        Tensor context = attentionLayer(x, bias, training, o);
        auto out = g.name_scope("output");
        attention = dense(context, o.hidden_size, "dense", o);
        attention =
            layerNorm(add(dropout(attention, o.hidden_dropout, training), x));
      }
      Tensor intermediate;
      {
        auto s = g.name_scope("intermediate");
        intermediate = dense(attention, o.intermediate_size, "dense", o, gelu);
      }
      auto out = g.name_scope("output");
      Tensor y = dense(intermediate, o.hidden_size, "dense", o);
      x = layerNorm(add(dropout(y, o.hidden_dropout, training), attention));
    }
  }
  auto pooler = g.name_scope("pooler");
  Tensor first = reshape(slice(x, {0, 0, 0}, {-1, 1, -1}), {-1, o.hidden_size});
  return dense(first, o.hidden_size, "dense", o, tanh);
}

Tensor bert_logits(const Tensor &input_ids, const Tensor &lengths,
                   bool training, const BertOptions &o) {
  Tensor pooled = bert_pooled_output(input_ids, lengths, training, o);
  Graph &g = input_ids.graph();
  Variable w = g.get_variable(
      "output_weights", DType::Float32, {o.num_classes, o.hidden_size},
      truncated_normal_initializer(0.0, 0.02), true, true);
  Variable b = g.get_variable("output_bias", DType::Float32, {o.num_classes},
                              zeros_initializer(), true, true);
  pooled = dropout(pooled, o.hidden_dropout, training);
  return nn::bias_add(matmul(pooled, w.read(), false, true), b.read());
}

Operation bert_train_op(Graph &, const Tensor &loss, const BertOptions &o) {
  return bert::create_optimizer(loss, o.learning_rate, o.num_train_steps,
                                o.num_warmup_steps);
}

estimator::ModelFn bert_model_fn(BertOptions options) {
  using namespace estimator;
  return [options](const TensorMap &features, const Tensor &labels,
                   ModeKeys mode, const Params &, const RunConfig &) {
    Graph &g = get_default_graph();
    Tensor logits = bert_logits(features["input_ids"], features["lengths"],
                                mode == ModeKeys::TRAIN, options);
    EstimatorSpec spec(mode);
    spec.predictions = {{"classes", argmax(logits, 1)},
                        {"probabilities", nn::softmax(logits)},
                        {"logits", logits}};
    if (mode == ModeKeys::PREDICT)
      return spec;
    spec.loss = losses::sparse_softmax_cross_entropy(labels, logits);
    if (mode == ModeKeys::TRAIN) {
      spec.train_op = bert_train_op(g, spec.loss, options);
      return spec;
    }
    spec.eval_metric_ops = {
        {"accuracy", metrics::accuracy(labels, spec.predictions["classes"])}};
    return spec;
  };
}

data::Dataset bert_dataset(std::shared_ptr<const Sentences> sentences,
                           const std::vector<std::string> &vocabulary,
                           int64_t seq_length, int64_t batch_size,
                           std::optional<int64_t> epochs, bool shuffle,
                           uint64_t seed) {
  auto ids = std::make_shared<std::unordered_map<std::string, int64_t>>();
  for (size_t i = 0; i < vocabulary.size(); ++i)
    ids->emplace(vocabulary[i], kBertFirstWordId + static_cast<int64_t>(i));
  auto n = static_cast<int64_t>(sentences->size());
  data::Dataset indices = data::Dataset::range(n);
  if (shuffle)
    indices = indices.shuffle(n, seed);
  return indices.repeat(epochs)
      .map([sentences, ids, seq_length](data::Element e) {
        const Sentence &s = sentences->at(
            static_cast<size_t>(data::tensor(e).values<int64_t>().at(0)));
        std::vector<int64_t> tokens(static_cast<size_t>(seq_length),
                                    kBertPadId);
        tokens[0] = kBertClsId;
        int64_t length = 1;
        for (const std::string &t : s.tokens) {
          if (length == seq_length)
            break;
          auto it = ids->find(t);
          tokens[static_cast<size_t>(length++)] =
              it == ids->end() ? kBertUnkId : it->second;
        }
        std::map<std::string, data::Element> features;
        features.emplace("input_ids", data::Element(TensorValue::of<int64_t>(
                                          {seq_length}, tokens)));
        features.emplace("lengths",
                         data::Element(TensorValue::of<int64_t>({}, {length})));
        return data::Element::tuple(
            {data::Element::dict(std::move(features)),
             data::Element(TensorValue::of<int64_t>({}, {s.label}))});
      })
      .batch(batch_size);
}

} // namespace examples
} // namespace estc
