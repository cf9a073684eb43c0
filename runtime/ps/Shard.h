//===- runtime/ps/Shard.h - What one parameter-server task holds ---------===//
//
// A ps task's variables and their update, as the server (runtime/ps/
// Server.h) serves them: the Estimator implements Shard over a compiled
// apply function; tests implement it by hand. The server reads the
// variables (pulls) under a shared lock and calls apply() under an
// exclusive one, so a Shard needs no locking of its own.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_RUNTIME_PS_SHARD_H
#define ESTC_RUNTIME_PS_SHARD_H

#include "runtime/CompiledModel.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace estc::ps {

/// A tensor in host memory: row-major elements of `dtype`, `bytes` holding
/// exactly numElements() x rt::dtypeBytes(dtype) bytes.
struct HostTensor {
  rt::DType dtype = rt::DType::F32;
  std::vector<int64_t> shape;
  std::vector<char> bytes;

  int64_t numElements() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
  template <typename T> const T *as() const {
    return reinterpret_cast<const T *>(bytes.data());
  }
  template <typename T> T *as() { return reinterpret_cast<T *>(bytes.data()); }
};

/// An input of a ps task's apply function: its key (`grad/<variable>`,
/// `ids/<variable>`, `rows/<variable>`, `learning_rate/<k>`, as
/// rt::ModelSpec::psInputs), element type and shape (rt::kValuesDim: a
/// sparse gradient's number of values, set per push).
struct InputSpec {
  std::string key;
  rt::DType dtype = rt::DType::F32;
  std::vector<int64_t> shape;
};

/// One ps task's variables and their update.
class Shard {
public:
  virtual ~Shard();

  struct Variable {
    std::string name;
    rt::DType dtype = rt::DType::F32;
    std::vector<int64_t> shape;
    /// Row-major elements; stays valid (and in place) for the shard's life.
    void *data = nullptr;
  };
  /// What this task holds (optimizer slots too, and global_step on task 0).
  /// Called once, when the server is made.
  virtual std::vector<Variable> variables() = 0;
  /// The apply function's inputs (the same keys as ModelSpec::psInputs).
  /// Called once, when the server is made.
  virtual std::vector<InputSpec> inputs() = 0;
  /// One optimizer step on `inputs` (one tensor per inputs() key, checked
  /// against it). The server calls it with no pull running. May throw: the
  /// push (or, with sync, every push of the step) then fails with the
  /// exception's message. `step` is the task's current step (the
  /// global_step the update is the step of: a task other than 0, which
  /// does not count global_step, gives it to the rules that read it).
  virtual void apply(const std::map<std::string, HostTensor> &inputs,
                     int64_t step) = 0;
  /// The value of global_step, or -1 when this task does not hold it.
  virtual int64_t global_step() = 0;
  /// Writes the variables as part `shard` of `numShards` of a sharded
  /// checkpoint: a TF tensor bundle of one data file at `prefix` (the
  /// part's prefix; the chief merges the parts), fsynced with `sync`. May
  /// throw (one line).
  virtual void save(const std::string &prefix, int shard, int numShards,
                    bool sync) = 0;
};

} // namespace estc::ps

#endif // ESTC_RUNTIME_PS_SHARD_H
