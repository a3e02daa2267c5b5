#include "draftgate/decode/decode_config.h"

#include "draftgate/error.h"

namespace draftgate::decode {

nlohmann::json decoding_json(const DecodeConfig& config, const std::string& mode,
                             std::int64_t block_size) {
  return {
      {"mode", mode},
      {"block_size", block_size},
      {"tree_budget", config.tree_budget},
      {"tree_top_k", config.tree_top_k},
      {"max_new_tokens", config.max_new_tokens},
      {"eos_ids", config.eos_ids},
      {"temperature", 0},
      {"tau_definition", "accepted drafts + 1 per verify step; macro = mean of per-prompt means"}};
}

DecodeConfig decode_config_from_json(const nlohmann::json& d, const std::string& file) {
  DecodeConfig c;
  try {
    c.max_new_tokens = d.at("max_new_tokens").get<std::int64_t>();
    c.eos_ids = d.at("eos_ids").get<std::vector<std::int64_t>>();
    c.tree_budget = d.at("tree_budget").get<std::int64_t>();
    c.tree_top_k = d.at("tree_top_k").get<std::int64_t>();
  } catch (const nlohmann::json::exception& e) {
    throw Error(file, std::string("decoding configuration: ") + e.what());
  }
  if (c.max_new_tokens <= 0 || c.tree_budget < 0 || c.tree_top_k < 0)
    throw Error(file,
                "decoding configuration has a non-positive max_new_tokens or a negative "
                "tree budget");
  return c;
}

}  // namespace draftgate::decode
