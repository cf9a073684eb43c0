//===- ps_request_fuzzer.cpp - What a parameter-server task is sent ------===//
//
// The checks a ps task runs on every request before it touches a variable
// (runtime/ps/Protocol.h), on arbitrary bytes: byte 0 picks the message
// (% 4: 0 PullDense, 1 PullRows, 2 Push, 3 PullRowsBatch), the rest is
// parsed as its
// serialized form and checked against a fixed shard (w f32 [3, 2],
// global_step i64 [], emb f32 [10, 4]; its apply takes grad/w, ids/emb,
// rows/emb, learning_rate/0). A refusal must be INVALID_ARGUMENT with one
// line. What is accepted must be safe to serve: PullDense names held
// variables within the message limit; PullRows (and each pull of a
// PullRowsBatch, all within the limit) a variable of rank >= 1 and ids
// inside its rows; a Push every input once, each tensor's bytes those
// of its shape, ids inside their variable's rows, as many rows as ids; and
// the mean of two copies of it (Aggregate, the sync step) has the shapes
// the sums and concatenations give.
//
//===----------------------------------------------------------------------===//

#include "test/fuzz/FuzzSupport.h"

#include "runtime/ps/Protocol.h"

#include <google/protobuf/stubs/logging.h>

#include <cstring>

using namespace estc;
using namespace estc::fuzz;
using namespace estc::ps;

namespace {

struct Fixture {
  std::vector<float> w = std::vector<float>(6);
  int64_t step = 0;
  std::vector<float> emb = std::vector<float>(40);
  Layout layout{{{"w", rt::DType::F32, {3, 2}, w.data()},
                 {"global_step", rt::DType::I64, {}, &step},
                 {"emb", rt::DType::F32, {10, 4}, emb.data()}},
                {{"grad/w", rt::DType::F32, {3, 2}},
                 {"ids/emb", rt::DType::I64, {rt::kValuesDim}},
                 {"rows/emb", rt::DType::F32, {rt::kValuesDim, 4}},
                 {"learning_rate/0", rt::DType::F32, {}}}};
};

const Fixture &fixture() {
  static const Fixture f;
  return f;
}

/// A small limit, so that inputs can reach it.
constexpr int64_t kMaxBytes = 4096;

void checkRefusal(const Status &s) {
  if (s.code != Code::InvalidArgument)
    die("refused with code " + std::to_string(static_cast<int>(s.code)) + ": " +
        s.message);
  if (s.message.empty() || s.message.find('\n') != std::string::npos ||
      s.message.find('\r') != std::string::npos)
    die("refusal that is not one line: " + s.message);
}

void pullDense(const Layout &layout, const uint8_t *data, size_t size) {
  PullDenseRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size)))
    return;
  std::vector<int> which;
  Status s = checkPullDense(layout, request, &which, kMaxBytes);
  if (!s.ok())
    return checkRefusal(s);
  if (which.size() != static_cast<size_t>(request.names_size()))
    die("pull_dense: accepted, but not one variable per name");
  int64_t total = 0;
  for (int v : which) {
    if (v < 0 || v >= static_cast<int>(layout.variables().size()))
      die("pull_dense: accepted a variable index out of range");
    total += layout.variableBytes(v);
  }
  if (total > kMaxBytes)
    die("pull_dense: accepted more than the message limit");
}

void pullRows(const Layout &layout, const uint8_t *data, size_t size) {
  PullRowsRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size)))
    return;
  int v = -1;
  Status s = checkPullRows(layout, request, &v, kMaxBytes);
  if (!s.ok())
    return checkRefusal(s);
  if (v < 0 || v >= static_cast<int>(layout.variables().size()))
    die("pull_rows: accepted a variable index out of range");
  const Shard::Variable &var = layout.variables()[static_cast<size_t>(v)];
  if (var.shape.empty())
    die("pull_rows: accepted a scalar");
  for (int64_t id : request.ids())
    if (id < 0 || id >= var.shape[0])
      die("pull_rows: accepted id " + std::to_string(id));
  if (request.ids_size() * layout.rowBytes(v) > kMaxBytes)
    die("pull_rows: accepted more than the message limit");
}

void pullRowsBatch(const Layout &layout, const uint8_t *data, size_t size) {
  PullRowsBatchRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size)))
    return;
  std::vector<int> which;
  Status s = checkPullRowsBatch(layout, request, &which, kMaxBytes);
  if (!s.ok())
    return checkRefusal(s);
  if (which.size() != static_cast<size_t>(request.pulls_size()))
    die("pull_rows_batch: accepted, but not one variable per pull");
  int64_t total = 0;
  for (size_t i = 0; i < which.size(); ++i) {
    int v = which[i];
    if (v < 0 || v >= static_cast<int>(layout.variables().size()))
      die("pull_rows_batch: accepted a variable index out of range");
    const Shard::Variable &var = layout.variables()[static_cast<size_t>(v)];
    for (int64_t id : request.pulls(static_cast<int>(i)).ids())
      if (var.shape.empty() || id < 0 || id >= var.shape[0])
        die("pull_rows_batch: accepted id " + std::to_string(id));
    total += request.pulls(static_cast<int>(i)).ids_size() * layout.rowBytes(v);
  }
  if (total > kMaxBytes)
    die("pull_rows_batch: accepted more than the message limit");
}

void push(const Layout &layout, const uint8_t *data, size_t size) {
  PushRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size)))
    return;
  std::map<std::string, HostTensor> inputs;
  Status s = decodePush(layout, request, &inputs);
  if (!s.ok())
    return checkRefusal(s);
  if (inputs.size() != layout.inputs().size())
    die("push: accepted without every input");
  for (const InputSpec &spec : layout.inputs()) {
    auto it = inputs.find(spec.key);
    if (it == inputs.end())
      die("push: accepted without " + spec.key);
    const HostTensor &t = it->second;
    if (t.dtype != spec.dtype || t.shape.size() != spec.shape.size())
      die("push: " + spec.key + " accepted with another dtype or rank");
    if (t.bytes.size() !=
        static_cast<size_t>(t.numElements()) * rt::dtypeBytes(t.dtype))
      die("push: " + spec.key + " holds bytes its shape does not");
  }
  const HostTensor &ids = inputs.at("ids/emb");
  if (inputs.at("rows/emb").shape[0] != ids.shape[0])
    die("push: accepted ids and rows of different counts");
  for (int64_t i = 0; i < ids.shape[0]; ++i) {
    int64_t id;
    std::memcpy(&id, ids.bytes.data() + 8 * i, 8);
    if (id < 0 || id >= 10)
      die("push: accepted id " + std::to_string(id));
  }
  // The sync step's mean of two copies.
  Aggregate aggregate;
  aggregate.add(inputs);
  aggregate.add(inputs);
  std::map<std::string, HostTensor> mean = aggregate.take();
  if (aggregate.count() != 0)
    die("aggregate: take() did not reset");
  for (const auto &[key, t] : inputs) {
    const HostTensor &m = mean.at(key);
    bool concatenated = key.rfind("ids/", 0) == 0 || key.rfind("rows/", 0) == 0;
    int64_t want = t.numElements() * (concatenated ? 2 : 1);
    if (m.numElements() != want ||
        m.bytes.size() != static_cast<size_t>(want) * rt::dtypeBytes(m.dtype))
      die("aggregate: " + key + " has the wrong size");
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // Protobuf logs every string field that is not UTF-8 it refuses.
  static bool quiet = (google::protobuf::SetLogHandler(nullptr), true);
  (void)quiet;
  if (size == 0)
    return 0;
  const Layout &layout = fixture().layout;
  switch (data[0] % 4) {
  case 0:
    pullDense(layout, data + 1, size - 1);
    break;
  case 1:
    pullRows(layout, data + 1, size - 1);
    break;
  case 3:
    pullRowsBatch(layout, data + 1, size - 1);
    break;
  default:
    push(layout, data + 1, size - 1);
    break;
  }
  return 0;
}
