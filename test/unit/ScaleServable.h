//===- ScaleServable.h - The serving tests' servable ----------------------===//
//
// ScaleModel: y = scale * x, so that every answer is known exactly and a
// version swap shows in them. Signatures: serving_default (x F32 [-1, 2] ->
// y, and scale [-1]), classify and regress over tf.Example records (feature
// "x"), tensor names in TF's form ("x:0"). It counts its live instances and
// its runs (for the tests of loading and batching) and can sleep delayMs
// per run. ServingServerTest and GrpcServingTest serve it.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_TEST_UNIT_SCALESERVABLE_H
#define ESTC_TEST_UNIT_SCALESERVABLE_H

#include "tools/estc-serve/Server.h"

#include "lib/Data/Example.h"

#include <atomic>
#include <chrono>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace estc {
namespace serving {
namespace testing {

class ScaleModel : public Servable {
public:
  /// Instances alive now, and run() calls so far.
  static inline std::atomic<int> liveModels{0};
  static inline std::atomic<int> runs{0};

  explicit ScaleModel(float scale, int delayMs = 0)
      : scale_(scale), delayMs_(delayMs) {
    ++liveModels;
    SignatureDef &p = sigs_["serving_default"];
    p.method_name = kPredictMethodName;
    p.inputs["x"] = {"x:0", DType::Float32, {-1, 2}};
    p.outputs["y"] = {"y:0", DType::Float32, {-1, 2}};
    p.outputs["scale"] = {"scale:0", DType::Float32, {-1}};
    SignatureDef &c = sigs_["classify"];
    c.method_name = kClassifyMethodName;
    c.inputs["inputs"] = {"examples:0", DType::String, {-1}};
    c.outputs["classes"] = {"classes:0", DType::String, {-1, 2}};
    c.outputs["scores"] = {"scores", DType::Float32, {-1, 2}};
    SignatureDef &r = sigs_["regress"];
    r.method_name = kRegressMethodName;
    r.inputs["inputs"] = {"examples:0", DType::String, {-1}};
    r.outputs["outputs"] = {"outputs:0", DType::Float32, {-1}};
  }
  ~ScaleModel() override { --liveModels; }

  const std::map<std::string, SignatureDef> &signatures() const override {
    return sigs_;
  }

  TensorMap run(const std::string &signature, const TensorMap &inputs,
                const std::vector<std::string> &) const override {
    ++runs;
    if (delayMs_)
      std::this_thread::sleep_for(std::chrono::milliseconds(delayMs_));
    TensorMap out;
    if (signature == "serving_default") {
      const TensorValue &x = inputs.at("x");
      if (x.shape.empty() || x.dtype != DType::Float32)
        throw std::invalid_argument("x must be F32 [batch, ...], is " +
                                    x.spec().str());
      std::vector<float> v = x.values<float>();
      for (float &f : v)
        f *= scale_;
      out["y"] = TensorValue::of<float>(x.shape, v);
      out["scale"] = TensorValue::of<float>(
          {x.shape[0]}, std::vector<float>(x.shape[0], scale_));
      return out;
    }
    data::FeatureSpecs spec;
    spec["x"] = data::FixedLenFeature{{}, DType::Float32, {}};
    data::Element parsed =
        data::parse_example(inputs.at("inputs"), spec); // DataError if bad
    std::vector<float> xs =
        std::get<TensorValue>(parsed["x"].leaf()).values<float>();
    int64_t n = static_cast<int64_t>(xs.size());
    if (signature == "regress") {
      for (float &f : xs)
        f *= scale_;
      out["outputs"] = TensorValue::of<float>({n}, xs);
      return out;
    }
    std::vector<std::string> classes;
    std::vector<float> scores;
    for (float f : xs) {
      classes.insert(classes.end(), {"neg", "pos"});
      scores.insert(scores.end(), {1 - f * scale_, f * scale_});
    }
    out["classes"] = TensorValue::of_strings({n, 2}, classes);
    out["scores"] = TensorValue::of<float>({n, 2}, scores);
    return out;
  }

private:
  float scale_;
  int delayMs_;
  std::map<std::string, SignatureDef> sigs_;
};

} // namespace testing
} // namespace serving
} // namespace estc

#endif // ESTC_TEST_UNIT_SCALESERVABLE_H
