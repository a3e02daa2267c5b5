#pragma once
// fc_excludes_target_layer's dynamic half (naming the target layer each fed fc-input slice came
// from) runs target forwards, so it is linked only into the engine, which installs it here; the
// torch-free front end runs the static half alone and hands step-record runs to the engine.

#include <filesystem>
#include <string>
#include <vector>

#include "check.h"
#include "draftgate/io/checkpoint.h"
#include "draftgate/model/drafter_config.h"

namespace draftgate::checks {

// Adds the per-slice evidence to `result` and a problem per slice that is not its declared tap (or
// is farther than `max_nmse` from it).
using FedFeatureMatcher = void (*)(const io::Checkpoint& target,
                                   const std::filesystem::path& step_record,
                                   const model::DrafterConfig& drafter, double max_nmse,
                                   CheckResult& result, std::vector<std::string>& problems);

bool install_fed_feature_matcher(FedFeatureMatcher matcher);
FedFeatureMatcher fed_feature_matcher();  // nullptr where the engine is not linked

}  // namespace draftgate::checks
