//===- runtime/ps/Protocol.h - Checking what a ps task is sent -----------===//
//
// The server's validation of every request (runtime/ps/ps.proto), without
// gRPC: the bytes of a PullDense, PullRows or Push come from any peer, so
// every name, dtype, shape, byte count, id and size is checked here before
// the server touches a variable, and test/fuzz/ps_request_fuzzer.cpp feeds
// arbitrary bytes through the same functions. Also the conversions between
// the messages and host tensors, and the mean of a synchronous step's
// pushes.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_RUNTIME_PS_PROTOCOL_H
#define ESTC_RUNTIME_PS_PROTOCOL_H

#include "runtime/ps/Shard.h"
#include "runtime/ps/ps.pb.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace estc::ps {

/// gRPC's status codes (grpc::StatusCode's numbers), so that this file needs
/// no gRPC header.
enum class Code : int {
  Ok = 0,
  InvalidArgument = 3,
  DeadlineExceeded = 4,
  FailedPrecondition = 9,
  Internal = 13,
  Unavailable = 14,
};

/// The outcome of a check: Ok, or a code and one line naming what is at
/// fault.
struct Status {
  Code code = Code::Ok;
  std::string message;
  bool ok() const { return code == Code::Ok; }
  static Status invalid(std::string message) {
    return {Code::InvalidArgument, std::move(message)};
  }
};

/// The most bytes one message carries (gRPC's limit is 2 GiB; a pull is
/// refused above this, and the client splits its dense pulls under it).
constexpr int64_t kMaxMessageBytes = int64_t(1) << 30;

/// What a task answers (gRPC ABORTED) after the chief ended the job: a
/// worker's training then stops as the chief's did.
inline constexpr const char *kJobEnded = "the chief ended the job";

/// "[4, 2]"; kValuesDim is written "?".
std::string shapeText(const std::vector<int64_t> &shape);
/// `text` quoted for one error line ('a\nb'), at most 200 bytes of it.
std::string quoted(const std::string &text);

std::optional<rt::DType> fromProto(int dtype);
DataType toProto(rt::DType dtype);

/// A shard's variables and apply inputs, fixed for a server's life: what
/// requests are checked against. The constructor checks the shard itself
/// (unique names, shapes, inputs naming held variables) and throws
/// std::invalid_argument, one line.
class Layout {
public:
  Layout(std::vector<Shard::Variable> variables, std::vector<InputSpec> inputs);

  const std::vector<Shard::Variable> &variables() const { return variables_; }
  const std::vector<InputSpec> &inputs() const { return inputs_; }
  /// Index of a variable / input, or -1.
  int findVariable(const std::string &name) const;
  int findInput(const std::string &key) const;
  /// Bytes of variable `i`, and of one of its rows (rank >= 1).
  int64_t variableBytes(int i) const;
  int64_t rowBytes(int i) const;

private:
  std::vector<Shard::Variable> variables_;
  std::vector<InputSpec> inputs_;
  std::unordered_map<std::string, int> variableIndex_, inputIndex_;
};

/// The variables a PullDense names (indices into layout.variables()), or
/// why it is refused: an unknown name, more than maxBytes in all.
Status checkPullDense(const Layout &layout, const PullDenseRequest &request,
                      std::vector<int> *variables,
                      int64_t maxBytes = kMaxMessageBytes);

/// The variable a PullRows reads, or why it is refused: an unknown
/// variable, a scalar, an id outside [0, dimension 0), rows of more than
/// maxBytes.
Status checkPullRows(const Layout &layout, const PullRowsRequest &request,
                     int *variable, int64_t maxBytes = kMaxMessageBytes);
/// A PullRowsBatch: every pull as checkPullRows checks it, all their rows
/// within `maxBytes`; `variables` gets each pull's variable index.
Status checkPullRowsBatch(const Layout &layout,
                          const PullRowsBatchRequest &request,
                          std::vector<int> *variables,
                          int64_t maxBytes = kMaxMessageBytes);

/// A Push's tensors as the apply function's inputs, or why it is refused: a
/// bad worker, an unknown, repeated or missing key, a dtype or shape other
/// than the input's, bytes that do not match the shape, an id outside its
/// variable's rows, ids and rows of different counts.
Status decodePush(const Layout &layout, const PushRequest &request,
                  std::map<std::string, HostTensor> *inputs);

/// `t` as a message (shape and bytes copied).
void toProto(rt::DType dtype, const std::vector<int64_t> &shape,
             const void *data, size_t bytes, Tensor *t);

/// The mean of a synchronous step's pushes (SyncReplicasOptimizer's
/// aggregation): dense `grad/*` summed, sparse `ids/*` and `rows/*`
/// concatenated in arrival order, `learning_rate/*` and any other input the
/// first push's; take() divides the sums and rows by the pushes' count.
/// The pushes were decoded by decodePush against one layout.
class Aggregate {
public:
  void add(const std::map<std::string, HostTensor> &inputs);
  int count() const { return count_; }
  /// The mean of the pushes added since the last take(); resets.
  std::map<std::string, HostTensor> take();

private:
  std::map<std::string, HostTensor> sum_;
  int count_ = 0;
};

} // namespace estc::ps

#endif // ESTC_RUNTIME_PS_PROTOCOL_H
