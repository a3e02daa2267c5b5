#include "draftgate/decode/evaluation.h"

#include "draftgate/error.h"
#include "draftgate/tau/prompt_renderer.h"

namespace draftgate::decode {

namespace {

void check_ids_in_vocabulary(const std::vector<std::int64_t>& ids, const model::TargetModel& target,
                             const PromptSet& set, const std::string& prompt) {
  for (auto t : ids)
    if (t >= target.config().vocab)
      throw Error(set.path,
                  prompt + " holds token " + std::to_string(t) +
                      " outside the target's vocabulary (" + std::to_string(target.config().vocab) +
                      ")",
                  set.rendering ? "its text is tokenized by the target's tokenizer.json: is that "
                                  "tokenizer this target's?"
                                : "");
}

}  // namespace

void check_prompt_vocabulary(const PromptSet& set, const model::TargetModel& target) {
  for (const auto& p : set.prompts)
    check_ids_in_vocabulary(p.input_ids, target, set, "prompt \"" + p.id + "\"");
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
    const Prompt& p = set.prompts[i];
    // z-lab dflash/benchmark.py @44947fb: each turn's reply, decoded to text, is appended as the
    // assistant message before the next user turn is rendered and decoded.
    std::vector<std::string> replies;
    for (std::size_t t = 0; t < p.turns(); ++t) {
      std::vector<std::int64_t> ids = p.input_ids;
      if (t > 0) {
        const std::string where = "prompt \"" + p.id + "\" turn " + std::to_string(t + 1);
        ids = set.renderer->conversation_ids(conversation_at(p, replies), set.path + ": " + where);
        check_ids_in_vocabulary(ids, target, set, where);
        target.require_fits(static_cast<std::int64_t>(ids.size()) + config.max_new_tokens +
                                drafter.block_size() + config.tree_budget,
                            static_cast<std::int64_t>(ids.size()), set.path + ": " + where);
      }
      e.runs.push_back(speculative_generate(target, drafter, ids, config));
      e.runs.back().id = p.id;
      e.turn.push_back(p.turns() > 1 ? t + 1 : 0);
      if (t + 1 < p.turns()) replies.push_back(set.renderer->reply_text(e.runs.back().output));
    }
  }
  if (progress) progress(set.prompts.size(), set.prompts.size());
  e.block_size = drafter.block_size();
  e.stats = summarize(e.runs, e.block_size);
  return e;
}

nlohmann::json evaluation_json(const Evaluation& e) {
  nlohmann::json out = to_json(e.stats);
  out["per_prompt"] = nlohmann::json::array();
  for (std::size_t i = 0; i < e.runs.size(); ++i) {
    out["per_prompt"].push_back(to_json(e.runs[i]));
    if (i < e.turn.size() && e.turn[i] > 0) out["per_prompt"].back()["turn"] = e.turn[i];
  }
  return out;
}

}  // namespace draftgate::decode
