//===- runtime/ParameterClient.h - A worker's parameter servers ----------===//
//
// Parameter-server training (docs/design/distributed.md, "Parameter
// servers"): TF_CONFIG's `ps` tasks hold the variables, workers pull the
// variables and embedding rows their step reads and push its gradients,
// and the ps tasks apply the optimizer updates. A worker's compiled step
// calls the C functions below to pull embedding rows and stage its
// gradients; they reach the ps tasks through the abstract
// `ParameterClient`, as replicas reach each other through rt::Collective,
// so compiled code and this library never depend on gRPC. The client over
// gRPC is estc::ps::Client (runtime/ps/, EstcParameterServer), which the
// Estimator installs with setParameterClient.
//
// Errors: a client throws ParameterServerError, one line naming the task,
// its address and the call ("lost task ps:1 (127.0.0.1:2223) during push:
// Connection refused"). The C entry points cannot throw through compiled
// code: they record the first error, turn every later call into a no-op
// (pulled rows are zeros), and return; rt::CompiledModel checks
// estc_ps_error() after each call of a compiled function and throws the
// recorded ParameterServerError, before anything reads the step's results.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_RUNTIME_PARAMETERCLIENT_H
#define ESTC_RUNTIME_PARAMETERCLIENT_H

#include "runtime/cpu/Kernels.h"

#include <cstdint>
#include <stdexcept>

namespace estc::rt {

/// A call to a parameter server failed (a lost or unreachable task, a
/// refused request) or a model's ps inputs were misused. what() is one line
/// naming the task and its address where there is one.
class ESTC_RT_EXPORT ParameterServerError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// What the compiled step of a parameter-server worker reaches (as
/// Collective is for replicas).
class ESTC_RT_EXPORT ParameterClient {
public:
  virtual ~ParameterClient();
  /// rows[i, :] := row ids[i] of the variable `variable` (an index into
  /// ModelSpec::psRemote: the worker does not hold it), held by a ps task;
  /// rowElements = elements
  /// per row. Throws one line on failure.
  virtual void pullRows(int variable, const int64_t *ids, int64_t n,
                        float *rows, int64_t rowElements) = 0;
  /// As pullRows, but the rows may arrive later, by the next waitRows(): a
  /// compiled step's pulls between two waits then travel as one call per
  /// task. `ids` is read before it returns; `rows` stays valid until the
  /// wait. The default pulls at once.
  virtual void pullRowsLater(int variable, const int64_t *ids, int64_t n,
                             float *rows, int64_t rowElements) {
    pullRows(variable, ids, n, rows, rowElements);
  }
  /// Every pullRowsLater's rows are in place. Throws one line on failure.
  virtual void waitRows() {}
  /// Stages a tensor the ps tasks' apply functions take as input number
  /// `input` (an index into ModelSpec::psInputs) for the push after the
  /// step. f32 or i64, flattened row-major, `n` elements.
  virtual void push(int input, const float *data, int64_t n) = 0;
  virtual void push(int input, const int64_t *data, int64_t n) = 0;
};

/// The client compiled code of this process uses: `c` (not owned; null =
/// none). Set it before the first step and keep it alive until the last;
/// clears a recorded error.
ESTC_RT_EXPORT void setParameterClient(ParameterClient *c);
ESTC_RT_EXPORT ParameterClient *parameterClient();
/// As setParameterClient, for the calling thread alone (its recorded error
/// too): workers that are threads of one process, as in tests. Null
/// returns the thread to the process's client.
ESTC_RT_EXPORT void setThreadParameterClient(ParameterClient *c);

} // namespace estc::rt

extern "C" {

// --- What compiled code calls ----------------------------------------------

/// rows[i, :] := row ids[i] of variable `variable` (an index into
/// ModelSpec::psRemote), from the ps task holding it. rows has as many
/// rows as ids; any strides. Without a client, or after an error, the rows
/// are zeros and the error is recorded.
ESTC_RT_EXPORT void
_mlir_ciface_estc_ps_pull_rows_f32(estc::rt::MemRef<int64_t, 1> *ids,
                                   estc::rt::MemRef<float, 2> *rows,
                                   int64_t variable);

/// The rows of every pull since the last wait are in place
/// (ParameterClient::waitRows; est.ps_wait). Before that, a contiguous rows
/// buffer of a pull is filled later (ParameterClient::pullRowsLater).
ESTC_RT_EXPORT void _mlir_ciface_estc_ps_wait_rows(void);

/// Stages `data` as ps input number `input` (ModelSpec::psInputs) for the
/// push after the step. Any strides.
ESTC_RT_EXPORT void
_mlir_ciface_estc_ps_push_f32(estc::rt::MemRef<float, 1> *data, int64_t input);
ESTC_RT_EXPORT void
_mlir_ciface_estc_ps_push_i64(estc::rt::MemRef<int64_t, 1> *data,
                              int64_t input);

/// The first error a ps call of compiled code recorded since the client was
/// set (one line), or null.
ESTC_RT_EXPORT const char *estc_ps_error(void);

} // extern "C"

#endif // ESTC_RUNTIME_PARAMETERCLIENT_H
