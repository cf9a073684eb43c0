//===- EmbeddingCombiner.h - safe_embedding_lookup_sparse's combining ---===//
//
// Internal to lib/Graph: the combining half of
// tf.nn.safe_embedding_lookup_sparse (Ops.cpp), shared by the lookup in one
// params tensor and the one over a partitioned variable's parts
// (PartitionedVariables.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_GRAPH_EMBEDDINGCOMBINER_H
#define ESTC_LIB_GRAPH_EMBEDDINGCOMBINER_H

#include "lib/Graph/Ops.h"

#include <functional>
#include <string>

namespace estc {
namespace detail {

/// safe_embedding_lookup_sparse of `ids` whose embeddings `lookup` gives
/// (ids [n] -> rows [n, dim] of `dtype`, rank `rank`): checks the combiner,
/// max_norm and ids (GraphErrors naming `op`), then clips and combines the
/// rows per batch row, in the name scope `name` (else "embedding_lookup").
Tensor
combineSparseEmbeddings(const char *op, Graph &g, DType dtype, int64_t rank,
                        const std::function<Tensor(const Tensor &)> &lookup,
                        const SparseIds &ids, const std::string &combiner,
                        double max_norm, const std::string &name);

} // namespace detail
} // namespace estc

#endif // ESTC_LIB_GRAPH_EMBEDDINGCOMBINER_H
