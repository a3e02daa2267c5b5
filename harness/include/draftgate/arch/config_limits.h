#pragma once
// Config values the engine cannot compute in any family: refused when a target is loaded
// (model/target_config.cpp) and given as a reason in probe's engine verdict
// (layout/engine_support.cpp), so probe never calls supported what forward refuses. Torch-free.

#include <optional>
#include <string>

#include "draftgate/io/config.h"

namespace draftgate::model {

struct ConfigLimit {
  std::string problem;  // names the key and its value
  std::string hint;
};

// The first such value in `config` (biased projections, an MLP activation other than silu).
std::optional<ConfigLimit> unsupported_config_value(const io::ModelConfig& config);

}  // namespace draftgate::model
