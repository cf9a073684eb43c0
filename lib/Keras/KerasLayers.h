//===- KerasLayers.h - The Keras graph builder's internals -------*- C++
//-*-===//
//
// What KerasGraph.cpp (the config walk) and KerasLayers.cpp (one function
// per Keras layer class) share; not a public header.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_KERAS_KERASLAYERS_H
#define ESTC_LIB_KERAS_KERASLAYERS_H

#include "lib/Keras/KerasGraph.h"

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace estc {
namespace keras {
namespace kerasgraph {

/// A Keras tensor: its value and its Keras mask (invalid when none).
struct KTensor {
  Tensor t;
  Tensor mask;
};

/// One call of a layer: the tensors of its first argument (a list when
/// `list`), the tensors among its keyword arguments (MultiHeadAttention's
/// value and key, an RNN's initial_state) and the other keyword arguments
/// as the config has them.
struct Call {
  std::vector<KTensor> args;
  bool list = false;
  std::map<std::string, std::vector<KTensor>> tensorKwargs;
  const rapidjson::Value *kwargs = nullptr;
  /// Keras 3's positional arguments as the config has them (numbers among
  /// them: an op's NotEqual(ids, 0)); null for tf.keras 2's nodes.
  const rapidjson::Value *positional = nullptr;
};

/// The layer being built: its name, class, config and whether its variables
/// are trainable (its own `trainable` and its models').
struct Layer {
  std::string name;
  std::string cls;
  const rapidjson::Value *config = nullptr;
  bool trainable = true;
};

class Builder;
/// Builds one call of a layer; returns its outputs.
using LayerFn =
    std::function<std::vector<KTensor>(Builder &, const Layer &, const Call &)>;
struct LayerImpl {
  LayerFn fn;
  /// The function enters the layer's name scope itself (a lib/Graph layer
  /// function that names its scope by the layer's name).
  bool ownScope = false;
};
/// Every supported class by its Keras name (KerasLayers.cpp).
const std::map<std::string, LayerImpl> &layerTable();
/// Adds SimpleRNN, LSTM, GRU, Bidirectional and MultiHeadAttention
/// (KerasRecurrent.cpp).
void addRecurrentLayers(std::map<std::string, LayerImpl> &table);

class Builder {
public:
  Builder(Graph &g, const KerasModel &model, const BuildOptions &options);

  /// The top-level model called on `inputs`.
  std::vector<KTensor> callTop(const std::vector<KTensor> &inputs);
  /// The variables created (or reused) by the layers, in creation order.
  std::vector<Variable> variables() const { return variables_; }
  /// A variable's name without the name scope build_model was called in.
  std::string unscoped(const std::string &name) const;

  Graph &g;
  const KerasModel &model;
  BuildOptions options;
  /// The file was written by Keras 3 (a few semantics differ: hard_sigmoid).
  bool keras3 = false;

  // --- For the layer functions -------------------------------------------
  [[noreturn]] void fail(const Layer &layer, const std::string &problem) const;
  /// The layer's variable `name` ("kernel", "lstm_cell/bias") in the layer's
  /// name scope, shared by every call of the layer (reuse); checks the
  /// file's weight of that name has `shape`.
  Variable var(const Layer &layer, const std::string &name, const Dims &shape,
               const Initializer &init, bool trainable = true,
               DType dtype = DType::Float32);
  /// Records the variables a lib/Graph layer function created under the
  /// layer's name ("<layer>/<name>"), checking their shapes against the
  /// file's weights.
  void adopt(const Layer &layer, const std::vector<std::string> &names);
  /// Both record a variable once (a shared layer's calls reuse it) and
  /// apply its `<w>_regularizer` (a loss in the "regularization_losses"
  /// collection, which model_to_estimator adds to the loss as Keras does)
  /// and `<w>_constraint` of the config, <w> being the weight's key:
  /// kernel, bias, depthwise (DepthwiseConv2D's and SeparableConv's
  /// depthwise kernel), pointwise, embeddings, gamma, beta, alpha.

  /// The Keras regularizer `key` of the config (L1, L2, L1L2 with Keras's
  /// formulas: l1 * sum(|w|) + l2 * sum(w^2)); null when absent; `fail`
  /// for another class.
  std::function<Tensor(const Tensor &)> regularizer(const Layer &l,
                                                    const char *key) const;
  /// The Keras constraint `key` of the config (MaxNorm, NonNeg, UnitNorm,
  /// MinMaxNorm, RadialConstraint); null when absent; `fail` for another.
  std::function<Tensor(const Tensor &)> constraint(const Layer &l,
                                                   const char *key) const;

  // Config fields of the layer (`fail` when present with the wrong type).
  const rapidjson::Value *field(const Layer &l, const char *key) const;
  bool has(const Layer &l, const char *key) const;
  int64_t getInt(const Layer &l, const char *key, int64_t fallback) const;
  double getDouble(const Layer &l, const char *key, double fallback) const;
  bool getBool(const Layer &l, const char *key, bool fallback) const;
  std::string getString(const Layer &l, const char *key,
                        const std::string &fallback) const;
  /// An int or a list of `n` ints (kernel_size, strides); `fallback` when
  /// absent or null.
  Dims getInts(const Layer &l, const char *key, size_t n,
               const Dims &fallback) const;
  /// An int or a list of ints (BatchNormalization's axis [3]).
  Dims getIntList(const Layer &l, const char *key, const Dims &fallback) const;
  /// The initializer `key` of the config; `fallback` when absent.
  Initializer initializer(const Layer &l, const char *key,
                          const Initializer &fallback) const;
  /// The activation `key` ("activation": "relu"); linear when absent.
  std::function<Tensor(const Tensor &)>
  activation(const Layer &l, const char *key = "activation") const;
  /// Refuses a non-null regularizer / constraint the builder does not apply.
  void refuseNonNull(const Layer &l, const std::vector<const char *> &keys,
                     const std::string &why) const;
  /// The one input of a layer called on one tensor.
  const KTensor &single(const Layer &l, const Call &call) const;
  /// The Keras activation `name` applied to x.
  Tensor applyActivation(const Layer &l, const std::string &name,
                         const Tensor &x) const;

private:
  /// A newly recorded variable's regularizer and constraint (above).
  void regularize(const Layer &layer, const std::string &name,
                  const Variable &v);
  std::vector<KTensor> callModel(const rapidjson::Value &entry,
                                 const std::vector<KTensor> &inputs,
                                 bool trainable, int depth);
  std::vector<KTensor> callLayer(const rapidjson::Value &entry,
                                 const Call &call, bool trainable, int depth);

  std::string scopePrefix_;
  std::vector<Variable> variables_;
  std::set<std::string> recorded_;
};

} // namespace kerasgraph
} // namespace keras
} // namespace estc

#endif // ESTC_LIB_KERAS_KERASLAYERS_H
