//===- Partitions.cpp - Partitioned variables in TF checkpoints ---------===//

#include "lib/Checkpoint/Partitions.h"

#include <algorithm>
#include <cstring>

namespace estc {
namespace train {

std::optional<std::pair<std::string, int64_t>>
parse_part_name(const std::string &name) {
  // The last "/part_<digits>" component, followed by nothing or "/<slot>".
  size_t pos = name.rfind("/part_");
  while (pos != std::string::npos) {
    size_t digits = pos + 6, end = digits;
    while (end < name.size() && name[end] >= '0' && name[end] <= '9')
      ++end;
    bool number = end > digits && end - digits <= 9 &&
                  (name[digits] != '0' || end == digits + 1);
    if (number && pos > 0 && (end == name.size() || name[end] == '/'))
      return std::make_pair(name.substr(0, pos) + name.substr(end),
                            std::stoll(name.substr(digits, end - digits)));
    if (pos == 0)
      break;
    pos = name.rfind("/part_", pos - 1);
  }
  return std::nullopt;
}

std::map<std::string, PartLayout>
partition_layouts(const std::map<std::string, VariableSpec> &specs) {
  // full name -> part index -> variable name
  std::map<std::string, std::map<int64_t, std::string>> groups;
  for (const auto &[name, spec] : specs)
    if (auto part = parse_part_name(name))
      groups[part->first][part->second] = name;
  std::map<std::string, PartLayout> out;
  for (const auto &[full, parts] : groups) {
    if (specs.count(full))
      continue; // a variable of the full name too: not a partitioning
    // Parts 0 .. n-1, all present.
    if (parts.rbegin()->first != static_cast<int64_t>(parts.size()) - 1)
      continue;
    const VariableSpec &first = specs.at(parts.begin()->second);
    size_t rank = first.shape.size();
    if (rank == 0)
      continue;
    bool ok = true;
    int64_t axis = -1;
    for (const auto &[i, name] : parts) {
      const VariableSpec &s = specs.at(name);
      if (s.dtype != first.dtype || s.shape.size() != rank) {
        ok = false;
        break;
      }
      for (size_t d = 0; d < rank; ++d)
        if (s.shape[d] != first.shape[d]) {
          if (axis >= 0 && axis != static_cast<int64_t>(d))
            ok = false;
          axis = static_cast<int64_t>(d);
        }
    }
    if (!ok)
      continue;
    if (axis < 0)
      axis = 0;
    std::vector<int64_t> fullShape = first.shape;
    fullShape[axis] = 0;
    for (const auto &[i, name] : parts)
      fullShape[axis] += specs.at(name).shape[axis];
    int64_t offset = 0;
    for (const auto &[i, name] : parts) {
      const VariableSpec &s = specs.at(name);
      PartLayout layout{full, fullShape, {}};
      for (size_t d = 0; d < rank; ++d) {
        bool along = static_cast<int64_t>(d) == axis;
        layout.slice.start.push_back(along ? offset : 0);
        layout.slice.length.push_back(s.shape[d]);
      }
      offset += s.shape[axis];
      out.emplace(name, std::move(layout));
    }
  }
  return out;
}

TensorValue slice_of(const TensorValue &full, const PartLayout &layout,
                     const std::string &what) {
  if (full.shape != layout.full_shape)
    throw CheckpointError(what + ": '" + layout.full_name + "' is " +
                          full.spec().str() + " in the checkpoint, but the " +
                          "model's parts make " +
                          shape_string(layout.full_shape));
  size_t rank = full.shape.size();
  // The one dimension the slice does not cover whole (0 when all do).
  size_t axis = 0;
  for (size_t d = 0; d < rank; ++d)
    if (layout.slice.length[d] != full.shape[d])
      axis = d;
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d)
    outer *= full.shape[d];
  for (size_t d = axis + 1; d < rank; ++d)
    inner *= full.shape[d];
  int64_t start = layout.slice.start[axis], length = layout.slice.length[axis];
  TensorValue out;
  out.dtype = full.dtype;
  out.shape = layout.slice.length;
  if (full.dtype == DType::String) {
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t k = 0; k < length * inner; ++k)
        out.strings.push_back(full.strings[static_cast<size_t>(
            (o * full.shape[axis] + start) * inner + k)]);
    return out;
  }
  size_t elem = dtype_size(full.dtype);
  size_t run = static_cast<size_t>(length * inner) * elem;
  out.data.resize(static_cast<size_t>(outer) * run);
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(
        out.data.data() + static_cast<size_t>(o) * run,
        full.data.data() +
            static_cast<size_t>((o * full.shape[axis] + start) * inner) * elem,
        run);
  return out;
}

std::optional<std::pair<std::string, TensorSlice>>
stored_part(const TensorBundleReader &reader, const std::string &name) {
  std::optional<std::pair<std::string, int64_t>> part = parse_part_name(name);
  if (!part || !reader.has_tensor(part->first))
    return std::nullopt;
  std::vector<TensorSlice> slices = reader.slices_of(part->first);
  if (part->second >= static_cast<int64_t>(slices.size()))
    return std::nullopt;
  std::sort(slices.begin(), slices.end(),
            [](const TensorSlice &a, const TensorSlice &b) {
              return a.start < b.start;
            });
  return std::make_pair(part->first, slices[static_cast<size_t>(part->second)]);
}

void add_variables(
    BundleWriter &writer,
    const std::vector<std::pair<const std::string *, const TensorValue *>>
        &refs) {
  std::map<std::string, VariableSpec> specs;
  for (const auto &[name, value] : refs)
    specs[*name] = value->spec();
  std::map<std::string, PartLayout> layouts = partition_layouts(specs);
  for (const auto &[name, value] : refs) {
    auto it = layouts.find(*name);
    if (it == layouts.end())
      writer.add(*name, *value);
    else
      writer.add_slice(it->second.full_name, it->second.full_shape,
                       it->second.slice, *value);
  }
}

} // namespace train
} // namespace estc
