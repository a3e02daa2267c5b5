#pragma once
// Acceptance-length statistics. τ of a verify step = the tokens it committed: accepted drafts + 1
// (the bonus token), fewer at a sequence end (speculative.h). τ macro
// = mean over prompts of each prompt's mean (the reference benchmark's convention); τ pooled =
// committed tokens / verify steps over the whole set.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "draftgate/decode/speculative.h"

namespace draftgate::decode {

struct AcceptanceStats {
  double tau_macro = 0;
  double tau_pooled = 0;
  std::vector<std::int64_t> histogram;  // [k] = steps with τ = k, k = 1..B (index 0 unused)
  std::vector<double>
      per_position_acceptance;          // [d−1] = share of steps whose depth-d draft was accepted
  std::int64_t prompts_with_steps = 0;  // prompts that reached a verify step (enter τ macro)
  std::int64_t steps = 0;
  std::int64_t drafted = 0;
  std::int64_t accepted = 0;
  std::int64_t generated_tokens = 0;
  std::int64_t target_forwards = 0;
  double seconds = 0;
  double target_seconds = 0;
  double drafter_seconds = 0;
};

AcceptanceStats summarize(const std::vector<PromptRun>& runs, std::int64_t block_size);

// Everything but wall-clock times: identical for identical inputs.
nlohmann::json to_json(const AcceptanceStats& stats);
// Wall-clock times and throughput.
nlohmann::json timing_json(const AcceptanceStats& stats);
nlohmann::json to_json(const PromptRun& run);

}  // namespace draftgate::decode
