#include "draftgate/decode/evaluation.h"

#include "draftgate/error.h"

namespace draftgate::decode {

void check_prompt_vocabulary(const PromptSet& set, const model::TargetModel& target) {
  for (const auto& p : set.prompts)
    for (auto t : p.input_ids)
      if (t >= target.config().vocab)
        throw Error(set.path, "prompt \"" + p.id + "\" holds token " + std::to_string(t) +
                                  " outside the target's vocabulary (" +
                                  std::to_string(target.config().vocab) + ")");
}

Evaluation evaluate(const model::TargetModel& target, BlockDrafter& drafter, const PromptSet& set,
                    const DecodeConfig& config,
                    const std::function<void(std::size_t, std::size_t)>& progress) {
  check_prompt_vocabulary(set, target);
  Evaluation e;
  for (std::size_t i = 0; i < set.prompts.size(); ++i) {
    if (progress) progress(i, set.prompts.size());
    e.runs.push_back(speculative_generate(target, drafter, set.prompts[i].input_ids, config));
    e.runs.back().id = set.prompts[i].id;
  }
  if (progress) progress(set.prompts.size(), set.prompts.size());
  e.block_size = drafter.block_size();
  e.stats = summarize(e.runs, e.block_size);
  return e;
}

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

nlohmann::json evaluation_json(const Evaluation& e) {
  nlohmann::json out = to_json(e.stats);
  out["per_prompt"] = nlohmann::json::array();
  for (const auto& r : e.runs) out["per_prompt"].push_back(to_json(r));
  return out;
}

}  // namespace draftgate::decode
