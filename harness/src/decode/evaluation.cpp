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

void check_eos_vocabulary(const DecodeConfig& config, const model::TargetModel& target,
                          const std::string& source) {
  for (auto id : config.eos_ids)
    if (id >= target.config().vocab)
      throw Error(source,
                  "EOS id " + std::to_string(id) + " is outside the target's vocabulary (" +
                      std::to_string(target.config().vocab) + " tokens)",
                  "the target could never emit it; take the id from its generation_config.json");
}

Evaluation evaluate(const model::TargetModel& target, BlockDrafter& drafter, const PromptSet& set,
                    const DecodeConfig& config,
                    const std::function<void(std::size_t, std::size_t)>& progress) {
  check_prompt_vocabulary(set, target);
  validate_decode_config(config, set.path);
  // Every prompt's longest sequence (prompt, generated tokens, one block being verified) must fit
  // before the first prompt runs.
  for (const auto& p : set.prompts)
    target.require_fits(static_cast<std::int64_t>(p.input_ids.size()) + config.max_new_tokens +
                            drafter.block_size() + config.tree_budget,
                        static_cast<std::int64_t>(p.input_ids.size()),
                        set.path + ": prompt \"" + p.id + "\"");
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

nlohmann::json evaluation_json(const Evaluation& e) {
  nlohmann::json out = to_json(e.stats);
  out["per_prompt"] = nlohmann::json::array();
  for (const auto& r : e.runs) out["per_prompt"].push_back(to_json(r));
  return out;
}

}  // namespace draftgate::decode
