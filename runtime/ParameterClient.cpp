//===- runtime/ParameterClient.cpp - Parameter-server calls of compiled code
//
// The C entry points a parameter-server worker's compiled step calls, over
// whatever rt::ParameterClient the process installed
// (runtime/ParameterClient.h). Without one each is an error: a model
// compiled for ps training cannot run without its ps tasks.
//
//===----------------------------------------------------------------------===//
#include "runtime/ParameterClient.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace estc::rt {

ParameterClient::~ParameterClient() = default;

namespace {

/// The installed client and its first error. The error is written once
/// (under the mutex) and then only read.
struct ClientSlot {
  std::atomic<ParameterClient *> client{nullptr};
  std::atomic<bool> failed{false};
  std::mutex mutex;
  std::string error;
};

thread_local std::unique_ptr<ClientSlot> threadClientSlot;
ClientSlot &clientSlot() {
  static ClientSlot process;
  return threadClientSlot ? *threadClientSlot : process;
}

void record(ClientSlot &s, const std::string &message) {
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.failed.load(std::memory_order_relaxed)) {
    s.error = message;
    s.failed.store(true, std::memory_order_release);
  }
}

/// Runs fn on the client; records its failure (or the missing client).
/// Returns false when nothing ran or it failed.
template <typename Fn> bool guarded(Fn &&fn) {
  ClientSlot &s = clientSlot();
  if (s.failed.load(std::memory_order_acquire))
    return false;
  ParameterClient *c = s.client.load(std::memory_order_acquire);
  if (!c) {
    record(s, "no parameter-server client: the model was compiled for ps "
              "training");
    return false;
  }
  try {
    fn(*c);
  } catch (const std::exception &e) {
    std::string what = e.what();
    std::replace(what.begin(), what.end(), '\n', ' ');
    record(s, what);
    return false;
  }
  return true;
}

template <typename T> void push(MemRef<T, 1> *data, int64_t input) {
  int64_t n = data->sizes[0];
  std::vector<T> copy;
  const T *flat = data->data();
  if (!isContiguous(*data)) {
    copy.resize(static_cast<size_t>(std::max<int64_t>(n, 0)));
    copyView(*data, copy.data(), true);
    flat = copy.data();
  }
  guarded(
      [&](ParameterClient &c) { c.push(static_cast<int>(input), flat, n); });
}

} // namespace

void setParameterClient(ParameterClient *c) {
  ClientSlot &s = clientSlot();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.client.store(c, std::memory_order_release);
  s.error.clear();
  s.failed.store(false, std::memory_order_release);
}

void setThreadParameterClient(ParameterClient *c) {
  if (!c) {
    threadClientSlot.reset();
    return;
  }
  threadClientSlot = std::make_unique<ClientSlot>();
  threadClientSlot->client.store(c, std::memory_order_release);
}

ParameterClient *parameterClient() {
  return clientSlot().client.load(std::memory_order_acquire);
}

} // namespace estc::rt

using namespace estc::rt;

extern "C" {

void _mlir_ciface_estc_ps_pull_rows_f32(MemRef<int64_t, 1> *ids,
                                        MemRef<float, 2> *rows,
                                        int64_t variable) {
  int64_t n = ids->sizes[0], rowElements = rows->sizes[1];
  std::vector<int64_t> idCopy;
  const int64_t *flatIds = ids->data();
  if (!isContiguous(*ids)) {
    idCopy.resize(static_cast<size_t>(std::max<int64_t>(n, 0)));
    copyView(*ids, idCopy.data(), true);
    flatIds = idCopy.data();
  }
  bool contiguous = isContiguous(*rows);
  std::vector<float> rowCopy;
  float *out = rows->data();
  if (!contiguous) {
    rowCopy.assign(static_cast<size_t>(std::max<int64_t>(elements(*rows), 0)),
                   0.0f);
    out = rowCopy.data();
  }
  bool ok = guarded([&](ParameterClient &c) {
    if (rows->sizes[0] != n)
      throw ParameterServerError("pull_rows of variable " +
                                 std::to_string(variable) + ": " +
                                 std::to_string(n) + " ids but room for " +
                                 std::to_string(rows->sizes[0]) + " rows");
    if (contiguous)
      c.pullRowsLater(static_cast<int>(variable), flatIds, n, out, rowElements);
    else
      c.pullRows(static_cast<int>(variable), flatIds, n, out, rowElements);
  });
  // A failed pull leaves zeros, not garbage: the step's results are thrown
  // away (CompiledModel throws the recorded error), but it still runs.
  if (!ok)
    std::fill_n(out, std::max<int64_t>(elements(*rows), 0), 0.0f);
  if (!contiguous)
    copyView(*rows, rowCopy.data(), false);
}

void _mlir_ciface_estc_ps_wait_rows(void) {
  guarded([&](ParameterClient &c) { c.waitRows(); });
}

void _mlir_ciface_estc_ps_push_f32(MemRef<float, 1> *data, int64_t input) {
  push(data, input);
}

void _mlir_ciface_estc_ps_push_i64(MemRef<int64_t, 1> *data, int64_t input) {
  push(data, input);
}

const char *estc_ps_error(void) {
  ClientSlot &s = clientSlot();
  if (!s.failed.load(std::memory_order_acquire))
    return nullptr;
  return s.error.c_str();
}

} // extern "C"
