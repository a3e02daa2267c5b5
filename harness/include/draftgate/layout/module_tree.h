#pragma once
// The module hierarchy implied by tensor names, with identical repeated layers collapsed: the probe
// an engineer would otherwise write by hand. `layers.{0..2,4..6,…}` and `layers.{3,7,…,63}` show up
// as two groups when the layer kinds differ.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "draftgate/io/checkpoint.h"

namespace draftgate::layout {

// Tensor header info by name, or nullptr when unknown (metadata-only checkpoints).
using InfoLookup = std::function<const io::TensorInfo*(const std::string&)>;

std::string render_module_tree(const std::vector<std::string>& names, const InfoLookup& info);
std::string render_module_tree(const io::Checkpoint& checkpoint);

// "{0..63}", "{3,7,…,63}", "{0..63}\{3,7,…,63}" or "{0..2,5,7..9}" for a sorted index list.
std::string format_index_set(const std::vector<std::int64_t>& sorted);

}  // namespace draftgate::layout
