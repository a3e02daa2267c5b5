#pragma once
// How τ is measured: the decoding configuration, and its JSON as `eval --json`, golden files and
// the min_tau check record it. Torch-free: golden files are read without loading libtorch.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace draftgate::decode {

struct DecodeConfig {
  std::int64_t max_new_tokens = 128;
  std::vector<std::int64_t> eos_ids;
  std::int64_t tree_budget = 0;  // 0: linear DFlash; K > 0: DDTree with K non-root nodes
  std::int64_t tree_top_k = 0;   // candidates per depth; 0 = min(budget, vocab)
};

// The decoding configuration as recorded in reports and goldens ("mode": dflash | ddtree | oracle).
nlohmann::json decoding_json(const DecodeConfig& config, const std::string& mode,
                             std::int64_t block_size);
// Reads back the fields decoding_json wrote (draftgate::Error naming `file` when malformed).
DecodeConfig decode_config_from_json(const nlohmann::json& decoding, const std::string& file);

}  // namespace draftgate::decode
