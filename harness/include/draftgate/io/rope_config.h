#pragma once
// Where a config keeps its RoPE: flat (`rope_theta`, `rope_scaling`) or nested under
// `rope_parameters` (the transformers v5 layout), in the text config. Both layouts occur in
// published targets and drafters, sometimes in one file with different values.

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "draftgate/io/config.h"

namespace draftgate::io {

// Every place the RoPE field `key` is given, in reading order: flat (the text config, then the
// root), then under the text config's `rope_parameters` and `rope_scaling`. Each entry is
// {"text_config.rope_parameters.rope_theta", value}; a non-number is a draftgate::Error. Flat and
// nested may disagree: callers decide.
std::vector<std::pair<std::string, double>> rope_number_sources(const ModelConfig& config,
                                                                const char* key);

// The one value of the RoPE field `key` given in every place it is (std::nullopt where none); two
// places with different values are a draftgate::Error naming both, since engines read different
// places (the target's and the drafter's alike).
std::optional<double> agreed_rope_number(const ModelConfig& config, const char* key);

// The RoPE type: `rope_type` (or legacy `type`) under rope_parameters or rope_scaling, else
// "default". Two different types is a draftgate::Error.
std::string rope_type(const ModelConfig& config);

}  // namespace draftgate::io
