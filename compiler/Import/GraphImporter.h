//===- GraphImporter.h - Model graph (GraphDef) to `est` MLIR -----------===//
//
// Turns a model graph into an MLIR module of the `est` dialect:
//   - every GraphDef variable becomes a module-level `est.variable` symbol;
//   - every signature (train / eval / predict) becomes one `func.func` whose
//     arguments are the signature's features then labels, and whose body holds
//     the nodes the signature's outputs need, in a topological order;
//   - the eval signature's metric values become `@eval_metrics`, which reads
//     the metric state after `@eval` updated it;
//   - a train signature with summaries also becomes `@train_summaries`: the
//     train step plus an output "summaries/<tag>" per summary value.
//
// The import is generic: a node `op: "matmul"` becomes `est.matmul` with the
// node's attributes, and the op infers its own result type (the dialect's
// inference uses the same shape rules as the graph builder).
//
// A bad graph (unknown op, dangling input, duplicate name, cycle, missing
// attribute, type or shape mismatch, ...) is reported as one error line that
// names the file and the node at fault.
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_COMPILER_IMPORT_GRAPHIMPORTER_H
#define ESTC_COMPILER_IMPORT_GRAPHIMPORTER_H

#include "lib/Graph/graph.pb.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>

namespace mlir {
class DialectRegistry;
class MLIRContext;
} // namespace mlir

namespace estc {

/// Registers the dialects an imported module uses (est, func).
void registerImportDialects(mlir::DialectRegistry &registry);

/// Imports `graph` (read from `fileName`, used in locations and messages).
/// On failure returns null and sets `error` to one line:
///   "<file>: node '<name>' (<op>): <problem>"  or  "<file>: <problem>".
mlir::OwningOpRef<mlir::ModuleOp> importGraph(const graph::GraphDef &graph,
                                              mlir::MLIRContext &context,
                                              const std::string &fileName,
                                              std::string &error);

/// Formats an MLIR diagnostic raised on an imported module as the one-line
/// error above, recovering the node name from the op's location.
std::string formatImportDiagnostic(mlir::Diagnostic &diag,
                                   const std::string &fileName);

} // namespace estc

#endif // ESTC_COMPILER_IMPORT_GRAPHIMPORTER_H
