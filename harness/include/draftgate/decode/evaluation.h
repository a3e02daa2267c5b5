#pragma once
// Evaluating a drafter on a prompt set: speculative decoding of every prompt, the τ statistics, and
// the JSON of its results.

#include <cstddef>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "draftgate/decode/acceptance.h"
#include "draftgate/decode/speculative.h"
#include "draftgate/model/target.h"
#include "draftgate/tau/prompt_set.h"

namespace draftgate::decode {

struct Evaluation {
  std::vector<PromptRun> runs;
  AcceptanceStats stats;
  std::int64_t block_size = 0;
};

// Throws draftgate::Error naming the prompt file when a prompt holds a token outside the target's
// vocabulary.
void check_prompt_vocabulary(const PromptSet& set, const model::TargetModel& target);

// Throws draftgate::Error naming `source` (--eos, a golden) when an EOS id lies outside the
// target's vocabulary: the target could never emit it, so decoding would silently never stop there.
void check_eos_vocabulary(const DecodeConfig& config, const model::TargetModel& target,
                          const std::string& source);

// `progress(done, total)` is called before each prompt and once at the end.
Evaluation evaluate(const model::TargetModel& target, BlockDrafter& drafter, const PromptSet& set,
                    const DecodeConfig& config,
                    const std::function<void(std::size_t, std::size_t)>& progress = {});

// τ statistics and per-prompt results (no timings: identical for identical inputs).
nlohmann::json evaluation_json(const Evaluation& evaluation);

}  // namespace draftgate::decode
