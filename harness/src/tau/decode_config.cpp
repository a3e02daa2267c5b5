#include "draftgate/tau/decode_config.h"

#include "draftgate/error.h"
#include "draftgate/io/json_util.h"

namespace draftgate::decode {

std::string tau_definition(const std::string& mode) {
  const std::string per_step =
      mode == "ddtree"
          ? "accepted nodes + 1 per verify step"
          : "tokens committed per verify step (accepted drafts + bonus; the last block shortened "
            "to the tokens still wanted, cut at max_new_tokens and after an EOS id: z-lab "
            "dflash_generate @10129599)";
  return per_step + "; macro = mean of per-prompt means";
}

nlohmann::json decoding_json(const DecodeConfig& config, const std::string& mode,
                             std::int64_t block_size) {
  return {{"mode", mode},
          {"block_size", block_size},
          {"tree_budget", config.tree_budget},
          {"tree_top_k", config.tree_top_k},
          {"max_new_tokens", config.max_new_tokens},
          {"eos_ids", config.eos_ids},
          {"temperature", 0},
          {"tau_definition", tau_definition(mode)}};
}

void validate_decode_config(const DecodeConfig& c, const std::string& source) {
  auto bound = [&](const char* what, std::int64_t v, std::int64_t lo, std::int64_t hi) {
    if (v < lo || v > hi)
      throw Error(source, std::string(what) + " " + std::to_string(v) + " is outside " +
                              std::to_string(lo) + ".." + std::to_string(hi));
  };
  bound("max_new_tokens", c.max_new_tokens, 1, kMaxNewTokensLimit);
  bound("tree budget", c.tree_budget, 0, kMaxTreeBudget);
  bound("tree top-k", c.tree_top_k, 0, kMaxTreeBudget);
  if (c.eos_ids.size() > kMaxEosIds)
    throw Error(source, std::to_string(c.eos_ids.size()) + " EOS ids, more than " +
                            std::to_string(kMaxEosIds));
  for (auto id : c.eos_ids)
    if (id < 0) throw Error(source, "EOS id " + std::to_string(id) + " is negative");
}

void validate_block_size(std::int64_t block_size, const std::string& source) {
  if (block_size < 2 || block_size > kMaxBlockSize)
    throw Error(source, "block size " + std::to_string(block_size) + " is outside 2.." +
                            std::to_string(kMaxBlockSize));
}

DecodeConfig decode_config_from_json(const nlohmann::json& d, const std::string& file) {
  auto integer = [&](const char* key) {
    if (!d.is_object() || !d.contains(key))
      throw Error(file, std::string("decoding configuration has no ") + key);
    const nlohmann::json& v = d[key];
    if (!v.is_number_integer())
      throw Error(file, std::string("decoding configuration: ") + key +
                            " must be an integer, got " + io::json_excerpt(v));
    return v.get<std::int64_t>();
  };
  DecodeConfig c;
  c.max_new_tokens = integer("max_new_tokens");
  c.tree_budget = integer("tree_budget");
  c.tree_top_k = integer("tree_top_k");
  if (!d.contains("eos_ids") || !d["eos_ids"].is_array())
    throw Error(file, "decoding configuration: eos_ids must be an array of token ids");
  if (d["eos_ids"].size() > kMaxEosIds)
    throw Error(file,
                "decoding configuration: more than " + std::to_string(kMaxEosIds) + " eos_ids");
  for (const auto& id : d["eos_ids"]) {
    if (!id.is_number_integer())
      throw Error(file, "decoding configuration: eos_ids holds " + io::json_excerpt(id) +
                            ", not a token id");
    c.eos_ids.push_back(id.get<std::int64_t>());
  }
  validate_decode_config(c, file + ": decoding configuration");
  return c;
}

}  // namespace draftgate::decode
