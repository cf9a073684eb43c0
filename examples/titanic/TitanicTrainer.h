//===- TitanicTrainer.h - The Titanic example's command line and run -----===//
//
// What the JIT trainer (titanic) and the ahead-of-time one (titanic_aot)
// share: the flags, training over train.csv, the evaluation on test.csv,
// the JSON line (the fields bench/tf_canned_peer.py prints for TF 2.15) and
// the first predictions. Each trainer only says how its Estimator is made.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_EXAMPLES_TITANIC_TITANICTRAINER_H
#define ESTC_EXAMPLES_TITANIC_TITANICTRAINER_H

#include "estc/estimator.h"

#include <functional>
#include <memory>
#include <string>

namespace estc {
namespace examples {

/// The Estimator of the model `kind` ("linear" or "dnn_linear_combined";
/// with `default_rates`, the latter with TF's default learning rates),
/// its host transform installed.
using TitanicEstimatorFactory =
    std::function<std::unique_ptr<estimator::Estimator>(
        const std::string &kind, bool default_rates,
        const estimator::RunConfig &config)>;

/// Runs a trainer: parses argv (see --help), trains, evaluates and prints
/// one JSON line, then the first predictions. `seed_note` is appended to
/// --seed's help (the AOT form's graph seed is fixed at build time).
/// Returns 0, or 1 for a failed run (missing files, bad data; one line on
/// stderr). A bad flag exits the process with status 2
/// (lib/Support/Flags.h).
int run_titanic(const char *program, int argc, char **argv,
                const TitanicEstimatorFactory &make_estimator,
                const std::string &seed_note = "");

} // namespace examples
} // namespace estc

#endif // ESTC_EXAMPLES_TITANIC_TITANICTRAINER_H
