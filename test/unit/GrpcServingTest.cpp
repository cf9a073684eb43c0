//===- GrpcServingTest.cpp - estc-serve's gRPC API ----------------------===//
//
// TF Serving's gRPC API (tools/estc-serve: GrpcCodec, GrpcHandler,
// GrpcServer): the TensorProto codec and PredictRequest checks alone; the
// handler's calls with no network over a ModelManager serving ScaleModel
// (y = scale * x, version 1 scale 2, version 2 scale 3, label "stable" ->
// 1), compared with the REST handler's answers to the same requests; and
// one Predict and one error over a loopback gRPC channel.
//
//===----------------------------------------------------------------------===//

#include "test/unit/ScaleServable.h"
#include "tools/estc-serve/GrpcServer.h"
#include "tools/estc-serve/Server.h"
#include "tools/estc-serve/tf_serving_apis.grpc.pb.h"

#include "lib/Data/Example.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>

using namespace estc;
using namespace estc::serving;
using estc::serving::testing::ScaleModel;

namespace {

std::atomic<int> gLoads{0};

Loader scaleLoader() {
  Loader loader;
  loader.list_versions = [](const std::string &base) {
    std::vector<std::pair<int64_t, std::string>> v;
    if (base == "/m")
      v = {{1, "/m/1"}, {2, "/m/2"}};
    if (base == "/n")
      v = {{5, "/n/5"}};
    return v;
  };
  loader.load = [](const std::string &dir) -> std::shared_ptr<const Servable> {
    ++gLoads;
    return std::make_shared<ScaleModel>(dir == "/m/1" ? 2.0f : 3.0f);
  };
  return loader;
}

ModelConfig configM() {
  ModelConfig c;
  c.name = "m";
  c.base_path = "/m";
  c.policy.kind = VersionPolicy::Kind::All;
  c.version_labels["stable"] = 1;
  return c;
}

tfs::ModelSpec spec(const std::string &name,
                    std::optional<int64_t> version = {},
                    const std::string &label = "",
                    const std::string &signature = "") {
  tfs::ModelSpec s;
  s.set_name(name);
  if (version)
    s.mutable_version()->set_value(*version);
  if (!label.empty())
    s.set_version_label(label);
  s.set_signature_name(signature);
  return s;
}

::tensorflow::TensorProto floats(std::vector<int64_t> shape,
                                 std::vector<float> values) {
  ::tensorflow::TensorProto p;
  p.set_dtype(::tensorflow::DT_FLOAT);
  for (int64_t d : shape)
    p.mutable_tensor_shape()->add_dim()->set_size(d);
  for (float v : values)
    p.add_float_val(v);
  return p;
}

::tensorflow::Example example(float x) {
  ::tensorflow::Example e;
  (*e.mutable_features()->mutable_feature())["x"]
      .mutable_float_list()
      ->add_value(x);
  return e;
}

std::string codeOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const RestError &e) {
    return std::string(code_name(e.code())) + ": " + e.what();
  }
  return "OK";
}

} // namespace

// --- The codec ---------------------------------------------------------------

TEST(GrpcCodecTest, EveryDtypeRoundTrips) {
  std::vector<TensorValue> tensors = {
      TensorValue::of<float>({2, 2}, {1.5f, -2, 0, 3.25f}),
      TensorValue::of<double>({3}, {1e300, -0.5, 2}),
      TensorValue::of<int32_t>({2}, {-7, 2147483647}),
      TensorValue::of<int64_t>({1, 2}, {-9000000000LL, 5}),
      TensorValue::of<bool>({3}, {true, false, true}),
      TensorValue::of_strings({2}, {"a", std::string("\0\xff", 2)}),
      TensorValue::from_bytes(DType::Float16, {2},
                              std::string("\x00\x3c\x00\xc0", 4)),
      TensorValue::from_bytes(DType::BFloat16, {1}, std::string("\x80\x3f", 2)),
      TensorValue::of<float>({0, 3}, {}),
      TensorValue::of<float>({}, {7})};
  for (const TensorValue &t : tensors) {
    ::tensorflow::TensorProto p;
    tensor_to_proto(t, &p);
    EXPECT_TRUE(p.tensor_content().empty()) << t.spec().str();
    TensorValue back = tensor_from_proto(p, "t");
    EXPECT_EQ(back.spec(), t.spec());
    EXPECT_EQ(back.data, t.data) << t.spec().str();
    EXPECT_EQ(back.strings, t.strings);
  }
}

TEST(GrpcCodecTest, TensorContentAndTfFilling) {
  ::tensorflow::TensorProto p;
  p.set_dtype(::tensorflow::DT_INT32);
  p.mutable_tensor_shape()->add_dim()->set_size(3);
  int32_t v[3] = {4, -5, 6};
  p.set_tensor_content(std::string(reinterpret_cast<char *>(v), sizeof v));
  EXPECT_EQ(tensor_from_proto(p, "t").values<int32_t>(),
            (std::vector<int32_t>{4, -5, 6}));
  // One value fills the shape; none is zeros (TF's Tensor::FromProto).
  ::tensorflow::TensorProto one = floats({2, 2}, {1.5f});
  EXPECT_EQ(tensor_from_proto(one, "t").values<float>(),
            (std::vector<float>{1.5f, 1.5f, 1.5f, 1.5f}));
  ::tensorflow::TensorProto none = floats({2}, {});
  EXPECT_EQ(tensor_from_proto(none, "t").values<float>(),
            (std::vector<float>{0, 0}));
  ::tensorflow::TensorProto strings;
  strings.set_dtype(::tensorflow::DT_STRING);
  strings.mutable_tensor_shape()->add_dim()->set_size(2);
  strings.add_string_val("s");
  EXPECT_EQ(tensor_from_proto(strings, "t").strings,
            (std::vector<std::string>{"s", "s"}));
}

TEST(GrpcCodecTest, BadTensorsNameTheInput) {
  auto err = [](const ::tensorflow::TensorProto &p) {
    return codeOf([&] { tensor_from_proto(p, "x", 1 << 20); });
  };
  ::tensorflow::TensorProto p = floats({2}, {1, 2, 3});
  EXPECT_EQ(err(p), "INVALID_ARGUMENT: Input 'x': 3 values in float_val for "
                    "DT_FLOAT [2] (2 elements)");
  p = floats({2}, {});
  p.add_int64_val(1);
  EXPECT_EQ(err(p), "INVALID_ARGUMENT: Input 'x': dtype is DT_FLOAT but 1 "
                    "values are in int64_val");
  p = floats({-1}, {});
  EXPECT_EQ(err(p), "INVALID_ARGUMENT: Input 'x': dimension 0 is -1 (a "
                    "tensor's size is known)");
  p = floats({2}, {});
  p.set_tensor_content("abc");
  EXPECT_EQ(err(p), "INVALID_ARGUMENT: Input 'x': tensor_content has 3 "
                    "bytes, a DT_FLOAT [2] tensor 8");
  p = floats({1000000, 1000000}, {1});
  EXPECT_NE(err(p).find("larger than estc-serve decodes"), std::string::npos)
      << err(p);
  p = floats({2}, {});
  p.set_dtype(::tensorflow::DT_UINT8);
  EXPECT_NE(err(p).find("Input 'x': DT_UINT8 is not a dtype estc-serve takes"),
            std::string::npos)
      << err(p);
  p.set_dtype(static_cast<::tensorflow::DataType>(77));
  EXPECT_NE(err(p).find("DataType 77"), std::string::npos) << err(p);
}

TEST(GrpcCodecTest, PredictRequestChecks) {
  ScaleModel model(2);
  const auto &sigs = model.signatures();
  tfs::PredictRequest r;
  *r.mutable_model_spec() = spec("m");
  (*r.mutable_inputs())["x"] = floats({1, 2}, {1, 2});
  GrpcPredictRequest ok = decode_predict_request(r, sigs);
  EXPECT_EQ(ok.inputs.at("x").shape, (std::vector<int64_t>{1, 2}));

  auto err = [&](const tfs::PredictRequest &req) {
    return codeOf([&] { decode_predict_request(req, sigs); });
  };
  tfs::PredictRequest extra = r;
  (*extra.mutable_inputs())["z"] = floats({1}, {1});
  extra.mutable_inputs()->erase("x");
  EXPECT_EQ(err(extra),
            "INVALID_ARGUMENT: input size does not match signature: 1!=1 "
            "len({z}) != len({x}). Sent extra: {z}. Missing but required: "
            "{x}.");
  tfs::PredictRequest dtype = r;
  (*dtype.mutable_inputs())["x"].set_dtype(::tensorflow::DT_INT64);
  EXPECT_EQ(err(dtype), "INVALID_ARGUMENT: Input 'x' is DT_INT64 but "
                        "signature 'serving_default' takes DT_FLOAT");
  tfs::PredictRequest shape = r;
  (*shape.mutable_inputs())["x"] = floats({1, 3}, {1, 2, 3});
  EXPECT_EQ(err(shape), "INVALID_ARGUMENT: Input 'x' has shape [1,3] but "
                        "signature 'serving_default' takes [-1,2] (-1: any "
                        "size)");
  tfs::PredictRequest sig = r;
  sig.mutable_model_spec()->set_signature_name("nope");
  EXPECT_EQ(err(sig),
            "FAILED_PRECONDITION: Serving signature key \"nope\" not found.");
  tfs::PredictRequest filter = r;
  filter.add_output_filter("w");
  EXPECT_EQ(err(filter), "INVALID_ARGUMENT: output tensor alias not found in "
                         "signature: w Outputs expected to be in the set "
                         "{scale,y}.");
  tfs::PredictRequest noSpec = r;
  noSpec.clear_model_spec();
  EXPECT_EQ(err(noSpec), "INVALID_ARGUMENT: Missing ModelSpec");
  EXPECT_EQ(codeOf([&] { decode_predict_request_bytes("\xff\xff", sigs); }),
            "INVALID_ARGUMENT: the bytes are not a PredictRequest (2 bytes)");
}

TEST(GrpcCodecTest, ExamplesWithContext) {
  tfs::Input input;
  auto *list = input.mutable_example_list_with_context();
  *list->add_examples() = example(1);
  ::tensorflow::Example own = example(2);
  (*own.mutable_features()->mutable_feature())["c"]
      .mutable_int64_list()
      ->add_value(9);
  *list->add_examples() = own;
  ::tensorflow::Example context;
  (*context.mutable_features()->mutable_feature())["c"]
      .mutable_int64_list()
      ->add_value(7);
  *list->mutable_context() = context;
  std::vector<std::string> records = input_examples(true, input);
  ASSERT_EQ(records.size(), 2u);
  ::tensorflow::Example a, b;
  ASSERT_TRUE(a.ParseFromString(records[0]));
  ASSERT_TRUE(b.ParseFromString(records[1]));
  EXPECT_EQ(a.features().feature().at("c").int64_list().value(0), 7);
  EXPECT_EQ(b.features().feature().at("c").int64_list().value(0), 9);
  EXPECT_EQ(codeOf([] { input_examples(true, tfs::Input()); }),
            "INVALID_ARGUMENT: Input is empty.");
}

// --- The handler, no network
// --------------------------------------------------

class GrpcHandlerTest : public ::testing::Test {
protected:
  void SetUp() override {
    models_ = std::make_unique<ModelManager>(
        std::vector<ModelConfig>{configM()}, scaleLoader(),
        [](const std::string &) {});
    models_->poll();
    grpc_ = std::make_unique<GrpcHandler>(
        *models_, nullptr, metrics_,
        [this](std::vector<ModelConfig> c) { models_->reload(std::move(c)); });
    rest_ = std::make_unique<RestHandler>(*models_, nullptr, metrics_);
  }
  std::unique_ptr<ModelManager> models_;
  Metrics metrics_;
  std::unique_ptr<GrpcHandler> grpc_;
  std::unique_ptr<RestHandler> rest_;
};

TEST_F(GrpcHandlerTest, PredictAsRest) {
  tfs::PredictRequest r;
  *r.mutable_model_spec() = spec("m", {}, "stable");
  (*r.mutable_inputs())["x"] = floats({2, 2}, {1, 2, 3, 4});
  tfs::PredictResponse out;
  GrpcHandler::Status s = grpc_->predict(r, &out);
  ASSERT_TRUE(s.ok()) << s.message;
  EXPECT_EQ(out.model_spec().name(), "m");
  EXPECT_EQ(out.model_spec().version().value(), 1);
  EXPECT_EQ(out.model_spec().signature_name(), "serving_default");
  TensorValue y = tensor_from_proto(out.outputs().at("y"), "y");
  EXPECT_EQ(y.values<float>(), (std::vector<float>{2, 4, 6, 8}));
  RestHandler::Response rest =
      rest_->handle("POST", "/v1/models/m/labels/stable:predict",
                    R"({"inputs": {"x": [[1, 2], [3, 4]]}})");
  EXPECT_EQ(rest.body,
            R"({"outputs":{"scale":[2.0,2.0],"y":[[2.0,4.0],[6.0,8.0]]}})");

  // The newest version, and an output filter.
  r.mutable_model_spec()->clear_version_label();
  r.add_output_filter("scale");
  out.Clear();
  ASSERT_TRUE(grpc_->predict(r, &out).ok());
  EXPECT_EQ(out.model_spec().version().value(), 2);
  ASSERT_EQ(out.outputs().size(), 1u);
  EXPECT_EQ(out.outputs().at("scale").float_val(0), 3.0f);
}

TEST_F(GrpcHandlerTest, ErrorsAsTfServing) {
  tfs::PredictRequest r;
  (*r.mutable_inputs())["x"] = floats({1, 2}, {1, 2});
  tfs::PredictResponse out;
  *r.mutable_model_spec() = spec("nope");
  GrpcHandler::Status s = grpc_->predict(r, &out);
  EXPECT_EQ(s.code, Code::NotFound);
  EXPECT_EQ(s.message, "Servable not found for request: Latest(nope)");
  *r.mutable_model_spec() = spec("m", 7);
  s = grpc_->predict(r, &out);
  EXPECT_EQ(s.code, Code::NotFound);
  EXPECT_EQ(s.message, "Servable not found for request: Specific(m, 7)");
  *r.mutable_model_spec() = spec("m", {}, "beta");
  s = grpc_->predict(r, &out);
  EXPECT_EQ(s.code, Code::InvalidArgument);
  EXPECT_EQ(s.message, "Unrecognized servable version label: beta");
  // A classify signature asked to regress.
  tfs::RegressionRequest reg;
  *reg.mutable_model_spec() = spec("m", {}, "", "classify");
  *reg.mutable_input()->mutable_example_list()->add_examples() = example(1);
  tfs::RegressionResponse regOut;
  s = grpc_->regress(reg, &regOut);
  EXPECT_EQ(s.code, Code::FailedPrecondition);
  EXPECT_NE(s.message.find("Expected regression signature method_name"),
            std::string::npos)
      << s.message;
  EXPECT_NE(metrics_.prometheus_text().find("NOT_FOUND"), std::string::npos);
}

TEST_F(GrpcHandlerTest, ClassifyRegressMultiInferenceAsRest) {
  tfs::ClassificationRequest c;
  *c.mutable_model_spec() = spec("m", 1, "", "classify");
  auto *examples = c.mutable_input()->mutable_example_list();
  *examples->add_examples() = example(0.25f);
  *examples->add_examples() = example(0.5f);
  tfs::ClassificationResponse cOut;
  ASSERT_TRUE(grpc_->classify(c, &cOut).ok());
  ASSERT_EQ(cOut.result().classifications_size(), 2);
  const auto &second = cOut.result().classifications(1);
  EXPECT_EQ(second.classes(1).label(), "pos");
  EXPECT_EQ(second.classes(1).score(), 1.0f);
  EXPECT_EQ(cOut.model_spec().signature_name(), "classify");
  RestHandler::Response rest = rest_->handle(
      "POST", "/v1/models/m/versions/1:classify",
      R"({"signature_name": "classify", "examples": [{"x": 0.25}, {"x": 0.5}]})");
  EXPECT_EQ(rest.body, R"({"results":[[["neg",0.5],["pos",0.5]],)"
                       R"([["neg",0.0],["pos",1.0]]]})");

  tfs::RegressionRequest r;
  *r.mutable_model_spec() = spec("m", {}, "", "regress");
  *r.mutable_input() = c.input();
  tfs::RegressionResponse rOut;
  ASSERT_TRUE(grpc_->regress(r, &rOut).ok());
  ASSERT_EQ(rOut.result().regressions_size(), 2);
  EXPECT_EQ(rOut.result().regressions(0).value(), 0.75f);

  tfs::MultiInferenceRequest m;
  auto *t1 = m.add_tasks();
  *t1->mutable_model_spec() = spec("m", 1, "", "classify");
  t1->set_method_name(kClassifyMethodName);
  auto *t2 = m.add_tasks();
  *t2->mutable_model_spec() = spec("m", {}, "", "regress");
  t2->set_method_name(kRegressMethodName);
  *m.mutable_input() = c.input();
  tfs::MultiInferenceResponse mOut;
  GrpcHandler::Status s = grpc_->multi_inference(m, &mOut);
  ASSERT_TRUE(s.ok()) << s.message;
  ASSERT_EQ(mOut.results_size(), 2);
  EXPECT_EQ(mOut.results(0).classification_result().SerializeAsString(),
            cOut.result().SerializeAsString());
  // The first task's version (1: scale 2) for both.
  EXPECT_EQ(mOut.results(1).regression_result().regressions(0).value(), 0.5f);
  t2->mutable_model_spec()->set_signature_name("classify");
  mOut.Clear();
  s = grpc_->multi_inference(m, &mOut);
  EXPECT_EQ(s.code, Code::InvalidArgument);
  EXPECT_EQ(s.message, "Duplicate evaluation of signature: classify");
}

TEST_F(GrpcHandlerTest, MetadataAndStatus) {
  tfs::GetModelMetadataRequest r;
  *r.mutable_model_spec() = spec("m", 1);
  r.add_metadata_field("signature_def");
  tfs::GetModelMetadataResponse out;
  ASSERT_TRUE(grpc_->get_model_metadata(r, &out).ok());
  tfs::SignatureDefMap map;
  ASSERT_TRUE(out.metadata().at("signature_def").UnpackTo(&map));
  const auto &sig = map.signature_def().at("serving_default");
  EXPECT_EQ(sig.method_name(), kPredictMethodName);
  EXPECT_EQ(sig.inputs().at("x").name(), "x:0");
  EXPECT_EQ(sig.inputs().at("x").dtype(), ::tensorflow::DT_FLOAT);
  EXPECT_EQ(sig.inputs().at("x").tensor_shape().dim(0).size(), -1);
  EXPECT_EQ(out.model_spec().version().value(), 1);

  tfs::GetModelStatusRequest st;
  *st.mutable_model_spec() = spec("m");
  tfs::GetModelStatusResponse stOut;
  ASSERT_TRUE(grpc_->get_model_status(st, &stOut).ok());
  ASSERT_EQ(stOut.model_version_status_size(), 2);
  EXPECT_EQ(stOut.model_version_status(0).version(), 2);
  EXPECT_EQ(stOut.model_version_status(0).state(),
            tfs::ModelVersionStatus::AVAILABLE);
  *st.mutable_model_spec() = spec("nope");
  EXPECT_EQ(grpc_->get_model_status(st, &stOut).code, Code::NotFound);
}

TEST_F(GrpcHandlerTest, ReloadConfig) {
  tfs::ReloadConfigRequest r;
  auto *list = r.mutable_config()->mutable_model_config_list();
  auto *n = list->add_config();
  n->set_name("n");
  n->set_base_path("/n");
  tfs::ReloadConfigResponse out;
  GrpcHandler::Status s = grpc_->reload_config(r, &out);
  ASSERT_TRUE(s.ok()) << s.message;
  EXPECT_EQ(models_->served_versions("n"), (std::vector<int64_t>{5}));
  EXPECT_TRUE(models_->served_versions("m").empty());
  n->set_base_path("");
  s = grpc_->reload_config(r, &out);
  EXPECT_EQ(s.code, Code::InvalidArgument);
  EXPECT_EQ(s.message, "ReloadConfigRequest: model 'n': no base_path");
}

TEST_F(GrpcHandlerTest, ReloadKeepsLoadedVersions) {
  std::shared_ptr<const Servable> before = models_->get("m", 1, {}).servable;
  int loads = gLoads;
  tfs::ReloadConfigRequest r;
  auto *m = r.mutable_config()->mutable_model_config_list()->add_config();
  m->set_name("m");
  m->set_base_path("/m");
  m->mutable_model_version_policy()->mutable_all();
  (*m->mutable_version_labels())["canary"] = 2;
  tfs::ReloadConfigResponse out;
  ASSERT_TRUE(grpc_->reload_config(r, &out).ok());
  EXPECT_EQ(gLoads, loads);
  EXPECT_EQ(models_->get("m", 1, {}).servable, before);
  EXPECT_EQ(models_->get("m", {}, std::string("canary")).version, 2);
  // The new config's labels only.
  EXPECT_THROW(models_->get("m", {}, std::string("stable")), RestError);
}

TEST_F(GrpcHandlerTest, BatchedAsUnbatched) {
  BatchingOptions options;
  options.max_batch_size = 8;
  options.num_batch_threads = 1;
  Batcher batcher(options, &metrics_);
  GrpcHandler batched(*models_, &batcher, metrics_);
  tfs::PredictRequest r;
  *r.mutable_model_spec() = spec("m", 1);
  (*r.mutable_inputs())["x"] = floats({2, 2}, {1, 2, 3, 4});
  tfs::PredictResponse a, b;
  ASSERT_TRUE(batched.predict(r, &a).ok());
  ASSERT_TRUE(grpc_->predict(r, &b).ok());
  ASSERT_EQ(a.outputs().size(), b.outputs().size());
  for (const auto &[alias, t] : b.outputs())
    EXPECT_EQ(a.outputs().at(alias).SerializeAsString(), t.SerializeAsString())
        << alias;
}

// --- Over a loopback channel
// --------------------------------------------------

TEST_F(GrpcHandlerTest, OverLoopback) {
  GrpcServerOptions options;
  options.host = "127.0.0.1";
  options.port = 0;
  GrpcServer server(options, *models_, nullptr, metrics_);
  int port = server.start();
  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                     grpc::InsecureChannelCredentials());
  auto stub = tfs::PredictionService::NewStub(channel);
  tfs::PredictRequest r;
  *r.mutable_model_spec() = spec("m", 2);
  (*r.mutable_inputs())["x"] = floats({1, 2}, {1, -1});
  tfs::PredictResponse out;
  grpc::ClientContext ctx;
  grpc::Status s = stub->Predict(&ctx, r, &out);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(out.outputs().at("y").float_val(1), -3.0f);

  *r.mutable_model_spec() = spec("m", 9);
  grpc::ClientContext ctx2;
  s = stub->Predict(&ctx2, r, &out);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(s.error_message(),
            "Servable not found for request: Specific(m, 9)");

  auto models = tfs::ModelService::NewStub(channel);
  tfs::ReloadConfigRequest reload;
  tfs::ReloadConfigResponse reloadOut;
  grpc::ClientContext ctx3;
  s = models->HandleReloadConfigRequest(&ctx3, reload, &reloadOut);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNIMPLEMENTED);
  server.stop();
}

TEST_F(GrpcHandlerTest, MessageOverTheLimitIsResourceExhausted) {
  GrpcServerOptions options;
  options.host = "127.0.0.1";
  options.port = 0;
  options.max_request_bytes = 1000;
  GrpcServer server(options, *models_, nullptr, metrics_);
  auto stub = tfs::PredictionService::NewStub(
      grpc::CreateChannel("127.0.0.1:" + std::to_string(server.start()),
                          grpc::InsecureChannelCredentials()));
  tfs::PredictRequest r;
  *r.mutable_model_spec() = spec("m");
  (*r.mutable_inputs())["x"] = floats({500, 2}, std::vector<float>(1000, 1));
  tfs::PredictResponse out;
  grpc::ClientContext ctx;
  EXPECT_EQ(stub->Predict(&ctx, r, &out).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
}
