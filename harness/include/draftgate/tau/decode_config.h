#pragma once
// How τ is measured: the decoding configuration, and its JSON as `eval --json`, golden files and
// the min_tau check record it. Torch-free: golden files are read without loading libtorch.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace draftgate::decode {

// Bounds on what one decoding run may ask for, checked before any work starts (a golden or a flag
// asking for 1e9 new tokens or tree nodes is bad input, not a run that never ends).
inline constexpr std::int64_t kMaxNewTokensLimit = 1 << 16;
inline constexpr std::int64_t kMaxTreeBudget = 1024;
inline constexpr std::int64_t kMaxBlockSize = 256;
inline constexpr std::size_t kMaxEosIds = 1024;

struct DecodeConfig {
  std::int64_t max_new_tokens = 128;
  std::vector<std::int64_t> eos_ids;
  std::int64_t tree_budget = 0;  // 0: linear DFlash; K > 0: DDTree with K non-root nodes
  std::int64_t tree_top_k = 0;   // candidates per depth; 0 = min(budget, vocab)
  bool record_drafts = false;  // keep each step's drafted tokens (PromptRun::drafts); not recorded
};

// How a verify step's acceptance is counted in `mode` (speculative.h), as recorded in reports and
// goldens: τ from another definition is not comparable.
std::string tau_definition(const std::string& mode);
// The decoding configuration as recorded in reports and goldens ("mode": dflash | ddtree | oracle).
nlohmann::json decoding_json(const DecodeConfig& config, const std::string& mode,
                             std::int64_t block_size);
// Throws draftgate::Error naming `source` (a file or a flag) when a field is outside the bounds
// above (max_new_tokens 1..kMaxNewTokensLimit, tree budget and top-k 0..kMaxTreeBudget, EOS ids
// non-negative and at most kMaxEosIds of them).
void validate_decode_config(const DecodeConfig& config, const std::string& source);
// Throws unless 2 <= block_size <= kMaxBlockSize.
void validate_block_size(std::int64_t block_size, const std::string& source);
// Reads back the fields decoding_json wrote (draftgate::Error naming `file` when malformed).
DecodeConfig decode_config_from_json(const nlohmann::json& decoding, const std::string& file);

}  // namespace draftgate::decode
