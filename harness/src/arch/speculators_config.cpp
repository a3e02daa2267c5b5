#include "draftgate/arch/speculators_config.h"

#include <algorithm>

#include "draftgate/error.h"
#include "draftgate/io/json_util.h"

namespace draftgate::model {

namespace {

using nlohmann::json;

std::int64_t required_int(const io::ModelConfig& c, const char* key) {
  auto it = c.root().find(key);
  if (it == c.root().end() || it->is_null())
    throw Error(c.file(),
                std::string("missing ") + key + " (speculators DFlash config, top level)");
  if (!it->is_number_integer())
    throw Error(c.file(), std::string(key) + " must be an integer, got " + io::json_excerpt(*it));
  return it->get<std::int64_t>();
}

// What vLLM requires before it loads a speculators checkpoint (SpeculatorsConfig.
// validate_speculators_config: "Invalid speculators config structure" otherwise): the drafted
// tokens per step and the verifier's name.
void require_vllm_structure(const io::ModelConfig& c) {
  const json& root = c.root();
  const auto sc = root.find("speculators_config");
  auto refuse = [&](const std::string& what) {
    throw Error(c.file(),
                what +
                    ", which vLLM requires (validate_speculators_config: \"Invalid "
                    "speculators config structure\")",
                "write the config with speculators' converter, which records the tokens drafted "
                "per step (block_size - 1) and the verifier");
  };
  if (sc == root.end() || !sc->is_object())
    refuse("speculators_config is missing or not an object");
  const auto methods = sc->find("proposal_methods");
  if (methods == sc->end() || !methods->is_array() || methods->empty())
    refuse("speculators_config.proposal_methods is missing or empty");
  const json& first = (*methods)[0];
  if (!first.is_object() || !first.contains("speculative_tokens"))
    refuse("speculators_config.proposal_methods[0] has no speculative_tokens");
  const auto verifier = sc->find("verifier");
  if (verifier == sc->end() || !verifier->is_object() || !verifier->contains("name_or_path"))
    refuse("speculators_config.verifier has no name_or_path");
}

}  // namespace

std::vector<std::int64_t> speculators_taps(const io::ModelConfig& c) {
  auto it = c.root().find("aux_hidden_state_layer_ids");
  if (it == c.root().end() || it->is_null())
    throw Error(c.file(), "missing aux_hidden_state_layer_ids",
                "declare the taps the drafter was trained with; the default formula is not used");
  if (!it->is_array() || it->empty())
    throw Error(c.file(),
                "aux_hidden_state_layer_ids must be a non-empty array of layer ids, got " +
                    io::json_excerpt(*it));
  std::vector<std::int64_t> taps;
  for (const auto& id : *it) {
    if (!id.is_number_integer())
      throw Error(c.file(),
                  "aux_hidden_state_layer_ids holds " + io::json_excerpt(id) + ", not an integer");
    if (id.get<std::int64_t>() < 1)
      throw Error(c.file(),
                  "aux_hidden_state_layer_ids holds " + io::json_excerpt(id) +
                      ": speculators id 0 is the embedding output (ids are z-lab layer ids + 1), "
                      "which no DFlash drafter taps");
    taps.push_back(id.get<std::int64_t>() - 1);
  }
  // vLLM, which serves this format, collects the aux hidden states in layer order whatever the
  // list's (the target's forward appends layer idx when idx is in the set) and fc reads their
  // concatenation in that order.
  std::sort(taps.begin(), taps.end());
  return taps;
}

io::ModelConfig speculators_as_zlab(const io::ModelConfig& c) {
  require_vllm_structure(c);
  const json& root = c.root();
  auto tlc = root.find("transformer_layer_config");
  if (tlc == root.end() || !tlc->is_object())
    throw Error(c.file(),
                "transformer_layer_config must be an object (the drafter layers' config)");
  json z = *tlc;
  // update_dflash (algos.py): the architecture, the vocabulary pair and dflash_config.
  z["architectures"] = json::array({"DFlashDraftModel"});
  if (auto dv = root.find("draft_vocab_size"); dv != root.end() && !dv->is_null())
    z["draft_vocab_size"] = *dv;
  if (auto th = root.find("target_hidden_size"); th != root.end() && !th->is_null())
    z["target_hidden_size"] = *th;
  z["dflash_config"] = {{"mask_token_id", required_int(c, "mask_token_id")},
                        {"target_layer_ids", speculators_taps(c)}};
  z["block_size"] = required_int(c, "block_size");
  return io::ModelConfig::from_json(std::move(z), c.file());
}

}  // namespace draftgate::model
