//===- Serialization.h - Feature columns and parse specs as JSON --------===//
//
// What an exported model (docs/design/saved-model.md) keeps of its feature
// columns: their host half, the part feature_column::Transformer runs on
// raw features (keys, dtypes, shapes, defaults, vocabularies, hash bucket
// sizes, crosses, weights, boundaries, embedding and indicator wrappers),
// and the parse spec of a parsing serving receiver. A column read back
// gives a Transformer whose model inputs equal the original's on every
// batch; its graph half is not kept (numeric_column's normalizer_fn and an
// embedding's initializer are compiled into the exported code already):
// such a column says so in its JSON ("normalizer_fn": true) and the column
// read back has none.
//
// Vocabulary files: writing calls `add_asset(path)` for each file a column
// reads and stores the name it returns; reading calls `asset_path(name)` to
// find it again. The export copies the files into its assets/ folder.
//
// JSON text in and out (RapidJSON inside), so callers embed it in their own
// documents. Reading untrusted JSON (a corrupt export) throws
// std::invalid_argument, one line naming the column (by index and name) and
// the field at fault; it never crashes (fuzz target
// test/fuzz/feature_column_json_fuzzer.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef ESTC_LIB_FEATURECOLUMN_SERIALIZATION_H
#define ESTC_LIB_FEATURECOLUMN_SERIALIZATION_H

#include "lib/FeatureColumn/FeatureColumn.h"

#include <functional>
#include <string>
#include <string_view>

namespace estc {
namespace feature_column {

/// Returns the name under which a file is kept (the export's assets/).
using AddAssetFn = std::function<std::string(const std::string &path)>;
/// Returns the path of an asset by the name add_asset gave.
using AssetPathFn = std::function<std::string(const std::string &name)>;

/// The columns as a JSON array, one object per column in the given order
/// (nested columns inline; a shared embedding's columns keep their shared
/// state once). std::invalid_argument for a column this cannot write.
std::string feature_columns_to_json(const FeatureColumns &columns,
                                    const AddAssetFn &add_asset);
/// The columns back (std::invalid_argument, one line, for bad JSON).
FeatureColumns feature_columns_from_json(std::string_view json,
                                         const AssetPathFn &asset_path);

/// A parse spec (tf.io.FixedLenFeature / VarLenFeature /
/// FixedLenSequenceFeature by key, with default values) as a JSON object,
/// and back.
std::string parse_spec_to_json(const data::FeatureSpecs &specs);
data::FeatureSpecs parse_spec_from_json(std::string_view json);

} // namespace feature_column
} // namespace estc

#endif // ESTC_LIB_FEATURECOLUMN_SERIALIZATION_H
