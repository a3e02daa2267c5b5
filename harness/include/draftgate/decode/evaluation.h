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
  // One run per prompt, or per turn of a conversation decoded turn by turn (each turn counts as
  // a prompt in the statistics, as z-lab's benchmark counts mt-bench's turns).
  std::vector<PromptRun> runs;
  std::vector<std::size_t> turn;  // per run: its 1-based turn, 0 for a prompt of one turn
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

// `progress(done, total)` is called before each prompt and once at the end. A conversation's later
// turns are rendered with the earlier turns' greedy replies (set.renderer) as they are reached.
Evaluation evaluate(const model::TargetModel& target, BlockDrafter& drafter, const PromptSet& set,
                    const DecodeConfig& config,
                    const std::function<void(std::size_t, std::size_t)>& progress = {});

// τ statistics and per-prompt results (no timings: identical for identical inputs); a turn of a
// conversation carries "turn": k.
nlohmann::json evaluation_json(const Evaluation& evaluation);

}  // namespace draftgate::decode
