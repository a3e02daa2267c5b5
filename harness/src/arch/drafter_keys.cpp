#include "draftgate/arch/drafter_keys.h"

#include <cmath>

#include "draftgate/error.h"
#include "draftgate/io/json_util.h"

namespace draftgate::model {

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// Accepts `value` (the key's value) in a config whose root is `root`.
using Accepts = bool (*)(const json& value, const json& root);

struct Rule {
  const char* scope;  // "" top level, else the object the key sits in
  const char* key;
  KeyStatus status;           // of an accepted value
  const char* note;           // what it does, or why it is inert
  Accepts accepts = nullptr;  // null: every value is read (type errors come later)
  const char* refusal = "";   // what an unaccepted value would change
};

bool null_or_false(const json& v, const json&) { return v.is_null() || v == false; }
bool null_or_true(const json& v, const json&) { return v.is_null() || v == true; }
bool null_or_zero(const json& v, const json&) { return v.is_null() || (v.is_number() && v == 0); }
bool null_or_one(const json& v, const json&) { return v.is_null() || (v.is_number() && v == 1); }
bool silu(const json& v, const json&) { return v.is_null() || v == "silu"; }
bool qwen3(const json& v, const json&) { return v == "qwen3"; }
bool empty_object(const json& v, const json&) {
  return v.is_null() || (v.is_object() && v.empty());
}
bool dflash_projector(const json& v, const json&) { return v.is_null() || v == "dflash"; }
bool known_architecture(const json& v, const json&) {
  if (!v.is_array() || v.size() != 1) return false;
  return v[0] == "DFlashDraftModel" || v[0] == "DFlash2DraftModel";
}
bool same_as_vocab(const json& v, const json& root) {
  return v.is_null() || (root.contains("vocab_size") && v == root["vocab_size"]);
}
bool same_as_hidden(const json& v, const json& root) {
  return v.is_null() || (root.contains("hidden_size") && v == root["hidden_size"]);
}
bool has_sliding_layers(const json& root) {
  auto lt = root.find("layer_types");
  if (lt == root.end() || !lt->is_array()) return false;
  for (const auto& t : *lt)
    if (t == "sliding_attention") return true;
  return false;
}
// transformers' Qwen3Config derives sliding layers from use_sliding_window / max_window_layers
// when layer_types is absent, and drops sliding_window when use_sliding_window is false (SpecForge
// `resolve_dflash_attention_layout` asks for "use_sliding_window=true"); z-lab and draftgate read
// layer_types and sliding_window. Only the combinations where they agree are accepted.
bool consistent_sliding_flag(const json& v, const json& root) {
  if (v.is_null()) return !has_sliding_layers(root);  // Qwen3Config's default: false
  const bool has_types = root.contains("layer_types") && root["layer_types"].is_array();
  if (v == true) return has_types;
  return v == false && !has_sliding_layers(root);
}

// z-lab dflash/model.py @10129599 (DFlashDraftModel / DFlash2DraftModel), SpecForge
// specforge/modeling/draft/dflash.py @a6b6b023 and vLLM
// vllm/model_executor/models/qwen3_dflash.py @036a00d1 are the readers the statuses follow.
const Rule kRules[] = {
    // Implemented: read by DrafterConfig::from and applied by the drafter.
    {"", "architectures", KeyStatus::kImplemented,
     "DFlashDraftModel or DFlash2DraftModel: selects the drafter's modules", known_architecture,
     "names another drafter class (Domino, DSpark, MTP, EAGLE heads...), whose extra modules "
     "draftgate does not run"},
    {"", "model_type", KeyStatus::kImplemented, "qwen3: the drafter layers are Qwen3 layers", qwen3,
     "the drafter layers would be another family's (draftgate runs Qwen3 layers: q/k RMSNorm, "
     "SwiGLU)"},
    {"", "hidden_size", KeyStatus::kImplemented, "drafter width (must equal the target's)"},
    {"", "intermediate_size", KeyStatus::kImplemented, "MLP width"},
    {"", "num_hidden_layers", KeyStatus::kImplemented, "drafter layers (must match the tensors)"},
    {"", "num_attention_heads", KeyStatus::kImplemented, "query heads"},
    {"", "num_key_value_heads", KeyStatus::kImplemented, "key/value heads (default: query heads)"},
    {"", "head_dim", KeyStatus::kImplemented, "head width (required)"},
    {"", "rms_norm_eps", KeyStatus::kImplemented, "RMSNorm epsilon (default 1e-6)"},
    {"", "rope_theta", KeyStatus::kImplemented, "RoPE θ (flat layout; must equal the nested one)"},
    {"", "rope_parameters", KeyStatus::kImplemented, "nested RoPE (rope_theta, rope_type)"},
    {"", "rope_scaling", KeyStatus::kImplemented, "legacy RoPE object: default type only"},
    {"", "block_size", KeyStatus::kImplemented, "block length (or under dflash_config)"},
    {"", "mask_token_id", KeyStatus::kImplemented, "MASK id (dflash_config first)"},
    {"", "target_layer_ids", KeyStatus::kImplemented, "taps (dflash_config first)"},
    {"", "num_target_layers", KeyStatus::kImplemented, "target layer count (compared)"},
    {"", "vocab_size", KeyStatus::kImplemented, "must equal the target's vocabulary"},
    {"", "layer_types", KeyStatus::kImplemented, "full_attention / sliding_attention per layer"},
    {"", "sliding_window", KeyStatus::kImplemented, "window of the sliding_attention layers"},
    {"", "is_causal", KeyStatus::kImplemented, "causality of every layer inside the block"},
    {"", "input_embedding_scale", KeyStatus::kImplemented, "scales the block's embeddings"},
    {"", "output_multiplier", KeyStatus::kImplemented, "scales the drafter's logits"},
    {"", "final_logit_softcapping", KeyStatus::kImplemented, "caps the drafter's logits"},
    {"", "conv_kernel_size", KeyStatus::kImplemented, "DFlash2 convolution taps"},
    {"", "conv_group_size", KeyStatus::kImplemented, "DFlash2 convolution groups"},
    {"", "selector_rank", KeyStatus::kImplemented, "DFlash2 candidate selector rank"},
    {"", "selector_top_k", KeyStatus::kImplemented, "DFlash2 candidates per position"},
    {"", "dflash_config", KeyStatus::kImplemented, "the drafter block (keys below)"},
    {"", "hidden_act", KeyStatus::kImplemented, "silu: the MLP activation", silu,
     "changes the MLP activation (draftgate runs SwiGLU with silu)"},
    {"", "attention_bias", KeyStatus::kImplemented, "false: no q/k/v/o biases", null_or_false,
     "adds biases to q/k/v/o_proj (SpecForge and vLLM read it), which draftgate's drafter lacks"},
    {"", "use_sliding_window", KeyStatus::kImplemented,
     "must agree with layer_types (true with layer_types, false without sliding layers)",
     consistent_sliding_flag,
     "makes transformers derive or drop sliding layers differently from layer_types "
     "(Qwen3Config: layers from max_window_layers without layer_types, no window when false); "
     "give layer_types and a matching use_sliding_window"},
    // vLLM's own top-level keys (qwen3_dflash.py): inert at their defaults only.
    {"", "is_neox_style", KeyStatus::kInert, "true (vLLM default): rotate-half RoPE", null_or_true,
     "switches vLLM to interleaved RoPE on the drafter's q/k; draftgate rotates halves"},
    {"", "add_swa_attention_sink_bias", KeyStatus::kInert, "false (vLLM default): no sink bias",
     null_or_false, "adds vLLM's per-head attention sink bias, which draftgate does not run"},
    {"", "logit_scale", KeyStatus::kInert, "1 (vLLM default)", null_or_one,
     "scales the drafter's logits in vLLM's LogitsProcessor; use output_multiplier"},
    {"", "draft_vocab_size", KeyStatus::kInert, "equal to vocab_size: the full vocabulary",
     same_as_vocab,
     "a reduced draft vocabulary (vLLM maps it with draft_id_to_target_id), which draftgate reads "
     "in the speculators format only (its own lm_head, d2t)"},
    {"", "target_hidden_size", KeyStatus::kInert, "equal to hidden_size", same_as_hidden,
     "an fc input width other than the drafter's, which draftgate does not run"},
    {"", "use_aux_hidden_state", KeyStatus::kInert, "true (vLLM default): fc fed by the taps",
     null_or_true, "drops the fc over the taps in vLLM"},
    {"", "eagle_config", KeyStatus::kInert, "empty", empty_object,
     "vLLM merges it into dflash_config; move its keys there"},
    // Inert: boilerplate, training-only or limits.
    {"", "torch_dtype", KeyStatus::kInert, "storage dtype (the drafter_config check flags fp16)"},
    {"", "dtype", KeyStatus::kInert, "storage dtype (the drafter_config check flags fp16)"},
    {"", "transformers_version", KeyStatus::kInert, "writer's version"},
    {"", "_name_or_path", KeyStatus::kInert,
     "writer's source path (a target checkpoint named here is compared with --target)"},
    {"", "auto_map", KeyStatus::kInert, "remote-code class names"},
    {"", "attention_dropout", KeyStatus::kInert, "dropout: training only"},
    {"", "initializer_range", KeyStatus::kInert, "weight initialisation: training only"},
    {"", "use_cache", KeyStatus::kInert, "KV-cache switch of transformers' generate"},
    {"", "bos_token_id", KeyStatus::kInert, "special ids (the drafter_config check compares)"},
    {"", "eos_token_id", KeyStatus::kInert, "special ids (the drafter_config check compares)"},
    {"", "pad_token_id", KeyStatus::kInert, "special ids (the drafter_config check compares)"},
    {"", "max_position_embeddings", KeyStatus::kInert, "a length limit; default RoPE is exact"},
    {"", "max_window_layers", KeyStatus::kInert,
     "only read by transformers without layer_types (refused there via use_sliding_window)"},
    {"", "tie_word_embeddings", KeyStatus::kInert,
     "the drafter has no embedding or head of its own: it uses the target's"},
    // dflash_config.
    {"dflash_config", "mask_token_id", KeyStatus::kImplemented, "MASK id"},
    {"dflash_config", "target_layer_ids", KeyStatus::kImplemented, "taps, in fc input order"},
    {"dflash_config", "block_size", KeyStatus::kImplemented, "block length"},
    {"dflash_config", "causal", KeyStatus::kImplemented,
     "vLLM applies it to every layer when is_causal is absent; z-lab ignores it (--causality)"},
    {"dflash_config", "use_swa", KeyStatus::kImplemented,
     "vLLM: sliding window on every layer when layer_types has no sliding layer; z-lab ignores "
     "it (--causality)"},
    {"dflash_config", "swa_window_size", KeyStatus::kImplemented,
     "vLLM: the sliding window, before sliding_window; z-lab ignores it (--causality)"},
    {"dflash_config", "input_embedding_scale", KeyStatus::kImplemented, "scales the embeddings"},
    {"dflash_config", "output_multiplier", KeyStatus::kImplemented, "scales the logits"},
    {"dflash_config", "final_logit_softcapping", KeyStatus::kImplemented, "caps the logits"},
    {"dflash_config", "conv_kernel_size", KeyStatus::kImplemented, "DFlash2 convolution taps"},
    {"dflash_config", "conv_group_size", KeyStatus::kImplemented, "DFlash2 convolution groups"},
    {"dflash_config", "selector_rank", KeyStatus::kImplemented, "DFlash2 selector rank"},
    {"dflash_config", "selector_top_k", KeyStatus::kImplemented, "DFlash2 candidates"},
    // SpecForge's Domino / DSpark keys (specforge/modeling/draft/{dflash,domino}.py): plain DFlash
    // at their defaults; otherwise auxiliary logit heads draftgate does not run.
    {"dflash_config", "projector_type", KeyStatus::kInert, "\"dflash\" or null: plain DFlash",
     dflash_projector,
     "selects SpecForge's Domino (GRU) or DSpark (Markov) logit head on top of DFlash "
     "(specforge/modeling/draft/domino.py), which draftgate does not run"},
    {"dflash_config", "pure_draft_prefix_len", KeyStatus::kInert, "0: no pure-draft prefix",
     null_or_zero,
     "sets where the Domino GRU correction starts (DominoDraftModel.suffix_start), a head "
     "draftgate does not run"},
    {"dflash_config", "shift_label", KeyStatus::kInert, "false: no label shift", null_or_false,
     "feeds the Domino head the previous tokens instead of the targets (OnlineDominoModel), a "
     "head draftgate does not run"},
    {"dflash_config", "sample_from_anchor", KeyStatus::kInert, "false: the anchor is not sampled",
     null_or_false,
     "drafts block_size tokens from the anchor and every MASK slot (speculators "
     "DFlashSpeculatorConfig), where draftgate drafts block_size-1 from the MASK slots"},
    {"dflash_config", "attention_sink_bias", KeyStatus::kInert, "false (vLLM default)",
     null_or_false, "adds vLLM's per-head attention sink bias, which draftgate does not run"},
    {"dflash_config", "use_aux_hidden_state", KeyStatus::kInert, "true (vLLM default)",
     null_or_true, "drops the fc over the taps in vLLM"},
    // Inside the RoPE objects.
    {"rope_parameters", "rope_theta", KeyStatus::kImplemented, "RoPE θ"},
    {"rope_parameters", "rope_type", KeyStatus::kImplemented,
     "default only: the reader refuses other types, the check compares with the target's"},
    {"rope_parameters", "type", KeyStatus::kImplemented, "legacy rope_type (as rope_type)"},
    {"rope_scaling", "rope_theta", KeyStatus::kImplemented, "RoPE θ"},
    {"rope_scaling", "rope_type", KeyStatus::kImplemented,
     "default only: the reader refuses other types, the check compares with the target's"},
    {"rope_scaling", "type", KeyStatus::kImplemented, "legacy rope_type (as rope_type)"},
};

const Rule* find_rule(const std::string& scope, const std::string& key) {
  for (const auto& r : kRules)
    if (scope == r.scope && key == r.key) return &r;
  return nullptr;
}

std::string path_of(const std::string& scope, const std::string& key) {
  return scope.empty() ? key : scope + "." + key;
}

// The objects whose keys the table covers, with their scope names.
std::vector<std::pair<std::string, const json*>> scopes(const json& root) {
  std::vector<std::pair<std::string, const json*>> out{{"", &root}};
  for (const char* sub : {"dflash_config", "rope_parameters", "rope_scaling"}) {
    auto it = root.find(sub);
    if (it != root.end() && it->is_object()) out.emplace_back(sub, &*it);
  }
  return out;
}

// speculators DFlashSpeculatorConfig (src/speculators/models/dflash/config.py @c05b95b3) and the
// keys vLLM's speculators reader takes from it (vllm/transformers_utils/configs/speculators/
// algos.py `update_dflash`, base.py `extract_transformers_pre_trained_config` /
// `extract_vllm_speculative_config`): the top level of a speculators config.
bool speculators_dflash(const json& v, const json&) { return v == "dflash"; }
bool speculator_architecture(const json& v, const json&) {
  return v.is_array() && v.size() == 1 && v[0] == "DFlashSpeculator";
}
bool is_object(const json& v, const json&) { return v.is_object(); }
bool layer_config_vocab(const json& v, const json& root) {
  const json& tlc = root.value("transformer_layer_config", json::object());
  if (v.is_null() || !v.is_number_integer() || !tlc.is_object() || !tlc.contains("vocab_size") ||
      !tlc["vocab_size"].is_number_integer())
    return true;  // absent, or a type error the reader reports
  return v.get<std::int64_t>() <= tlc["vocab_size"].get<std::int64_t>();
}
bool same_as_layer_hidden(const json& v, const json& root) {
  const json& tlc = root.value("transformer_layer_config", json::object());
  return v.is_null() || (tlc.is_object() && tlc.contains("hidden_size") && v == tlc["hidden_size"]);
}
// config.py :66-71: speculators trains sliding layers bidirectionally inside the block when true
// (attention.py :42-43); vLLM's update_dflash does not carry the key, so vLLM (and z-lab) run
// those layers causal. Without sliding layers it changes nothing.
bool non_causal_sliding_matches_engines(const json& v, const json& root) {
  if (v.is_null() || v == false) return true;
  const json& tlc = root.value("transformer_layer_config", json::object());
  return v == true && tlc.is_object() && !has_sliding_layers(tlc);
}
// vLLM drafts speculators_config.proposal_methods[0].speculative_tokens per step
// (extract_vllm_speculative_config); the converter writes block_size − 1 (converter.py :128-134).
bool speculative_tokens_match_block(const json& v, const json& root) {
  if (!v.is_object()) return false;
  // A structure vLLM refuses is refused by the reader (speculators_as_zlab), naming the field.
  auto methods = v.find("proposal_methods");
  if (methods == v.end() || !methods->is_array() || methods->empty()) return true;
  const json& first = (*methods)[0];
  if (!first.is_object() || !first.contains("speculative_tokens")) return true;
  auto block = root.find("block_size");
  if (block == root.end() || !block->is_number_integer()) return true;  // the reader says why
  return first["speculative_tokens"].is_number_integer() &&
         first["speculative_tokens"].get<std::int64_t>() == block->get<std::int64_t>() - 1;
}

const Rule kSpeculatorsRules[] = {
    {"", "speculators_model_type", KeyStatus::kImplemented,
     "dflash: a DFlash drafter in the speculators layout", speculators_dflash,
     "names another speculators algorithm (dspark, eagle3, dflash2, ...), whose modules or "
     "config translation draftgate does not run"},
    {"", "architectures", KeyStatus::kImplemented,
     "DFlashSpeculator: vLLM's update_dflash runs it as DFlashDraftModel", speculator_architecture,
     "names another speculators model class, whose modules draftgate does not run"},
    {"", "transformer_layer_config", KeyStatus::kImplemented,
     "the drafter layers' config, read as a z-lab config.json (keys below)", is_object,
     "must be an object: vLLM builds the drafter's config from it"},
    {"", "aux_hidden_state_layer_ids", KeyStatus::kImplemented,
     "taps = ids − 1 (converter.py :117-126 writes z-lab id + 1; vLLM update_dflash subtracts 1)"},
    {"", "mask_token_id", KeyStatus::kImplemented, "MASK id (vLLM: dflash_config.mask_token_id)"},
    {"", "block_size", KeyStatus::kImplemented, "block length"},
    {"", "draft_vocab_size", KeyStatus::kImplemented,
     "the drafter's vocabulary: lm_head rows; below the target's, d2t maps draft ids to target ids",
     layer_config_vocab,
     "a draft vocabulary larger than transformer_layer_config.vocab_size (the target's), which "
     "no engine maps"},
    {"", "target_hidden_size", KeyStatus::kInert, "equal to the layers' hidden_size",
     same_as_layer_hidden,
     "an fc input width other than the drafter's, which draftgate does not run"},
    {"", "sliding_window_non_causal", KeyStatus::kInert,
     "false, or true without sliding layers: the engines' causality (sliding causal, full not)",
     non_causal_sliding_matches_engines,
     "the drafter was trained with its sliding layers bidirectional inside the block "
     "(speculators attention.py), but vLLM's update_dflash drops the key and vLLM and z-lab run "
     "sliding layers causal: the evaluated drafter would not be the trained one"},
    {"", "sample_from_anchor", KeyStatus::kInert, "false: the anchor is the bonus token",
     null_or_false,
     "drafts block_size tokens from the anchor and every MASK slot (config.py :73-82), where "
     "vLLM's DFlash and draftgate draft block_size − 1 from the MASK slots"},
    {"", "speculators_config", KeyStatus::kInert,
     "algorithm / proposal / verifier metadata; speculative_tokens must be block_size − 1",
     speculative_tokens_match_block,
     "vLLM drafts speculators_config.proposal_methods[0].speculative_tokens per step "
     "(extract_vllm_speculative_config), which must be block_size − 1 for the block draftgate "
     "evaluates"},
    {"", "speculators_version", KeyStatus::kInert, "writer's version"},
    {"", "transformers_version", KeyStatus::kInert, "writer's version"},
    {"", "torch_dtype", KeyStatus::kInert, "storage dtype"},
    {"", "dtype", KeyStatus::kInert, "storage dtype"},
    {"", "_name_or_path", KeyStatus::kInert, "writer's source path"},
};

// z-lab keys that a speculators transformer_layer_config must not carry: converter.py :31-33
// (_NON_TRANSFORMER_KEYS) moves them out, and vLLM's update_dflash overwrites architectures and
// dflash_config and reads block, MASK and taps from the speculators top level.
constexpr const char* kNotInLayerConfig[] = {
    "architectures",    "dflash_config",     "block_size", "mask_token_id",
    "target_layer_ids", "num_target_layers", "auto_map",   "draft_vocab_size"};

const Rule* find_speculators_rule(const std::string& key) {
  for (const auto& r : kSpeculatorsRules)
    if (key == r.key) return &r;
  return nullptr;
}

constexpr const char* kUnknownKey =
    "unknown to draftgate, so it may change the drafter's computation unseen; remove it if it is "
    "inert, or evaluate the drafter with the engine that reads it";

// The fact for `key` = `value` under `rule` (null: unknown), `root` the object the rule reads.
KeyFact fact_for(const std::string& path, const json& value, const json& root, const Rule* rule) {
  KeyFact fact{path, io::json_excerpt(value), KeyStatus::kRefused, kUnknownKey};
  if (rule != nullptr && rule->accepts != nullptr && !rule->accepts(value, root))
    fact.note = rule->refusal;
  else if (rule != nullptr)
    fact = {fact.key, fact.value, rule->status, rule->note};
  return fact;
}

// The facts of a z-lab-layout object (a z-lab config.json, or speculators'
// transformer_layer_config under `prefix`).
void zlab_facts(const json& root, const std::string& prefix, std::vector<KeyFact>& facts) {
  for (const auto& [scope, obj] : scopes(root))
    for (const auto& [key, value] : obj->items())
      facts.push_back(fact_for(prefix + path_of(scope, key), value, root, find_rule(scope, key)));
  if (has_sliding_layers(root) && !root.contains("use_sliding_window"))
    facts.push_back({prefix + "use_sliding_window", "", KeyStatus::kRefused,
                     "absent while layer_types holds sliding layers, so false (Qwen3Config's "
                     "default), and transformers drops sliding_window: z-lab's reference runs "
                     "those layers with no window and vLLM refuses the config; set it to true"});
}

}  // namespace

const char* drafter_format_name(DrafterFormat format) {
  return format == DrafterFormat::kSpeculators ? "speculators" : "z-lab";
}

DrafterFormat detect_drafter_format(const io::ModelConfig& c) {
  const json& root = c.root();
  if (root.contains("speculators_model_type") || root.contains("transformer_layer_config"))
    return DrafterFormat::kSpeculators;
  auto arch = root.find("architectures");
  if (arch != root.end() && arch->is_array())
    for (const auto& a : *arch)
      if (a == "DFlashSpeculator") return DrafterFormat::kSpeculators;
  return DrafterFormat::kZLab;
}

const char* key_status_name(KeyStatus status) {
  switch (status) {
    case KeyStatus::kImplemented:
      return "implemented";
    case KeyStatus::kInert:
      return "inert";
    case KeyStatus::kRefused:
      return "refused";
  }
  return "unknown";
}

std::string RefusedKey::line() const {
  return value.empty() ? key + ": " + effect : key + " = " + value + ": " + effect;
}

std::vector<KeyFact> key_facts(const io::ModelConfig& c) {
  std::vector<KeyFact> facts;
  const json& root = c.root();
  if (detect_drafter_format(c) == DrafterFormat::kZLab) {
    zlab_facts(root, "", facts);
    return facts;
  }
  if (!root.contains("speculators_model_type"))
    facts.push_back({"speculators_model_type", "", KeyStatus::kRefused,
                     "missing from a speculators-layout config: vLLM's speculators reader "
                     "dispatches on it (base.py extract_transformers_pre_trained_config) and "
                     "refuses the config without it"});
  for (const auto& [key, value] : root.items())
    facts.push_back(fact_for(key, value, root, find_speculators_rule(key)));
  auto tlc = root.find("transformer_layer_config");
  if (tlc == root.end() || !tlc->is_object()) return facts;
  const std::string prefix = "transformer_layer_config.";
  zlab_facts(*tlc, prefix, facts);
  for (auto& fact : facts)
    for (const char* key : kNotInLayerConfig)
      if (fact.key == prefix + key) {
        fact.status = KeyStatus::kRefused;
        fact.note =
            "a z-lab key inside transformer_layer_config: speculators' converter moves it to the "
            "top level (converter.py _NON_TRANSFORMER_KEYS) and vLLM's update_dflash overwrites "
            "or ignores it, so engines would not run what it says";
      }
  return facts;
}

std::vector<RefusedKey> refused_keys(const io::ModelConfig& c) {
  std::vector<RefusedKey> out;
  for (const auto& fact : key_facts(c))
    if (fact.status == KeyStatus::kRefused) out.push_back({fact.key, fact.value, fact.note});
  return out;
}

std::vector<RefusedKey> refused_files(const fs::path& dir) {
  std::vector<RefusedKey> out;
  std::error_code ec;
  if (fs::exists(dir / "mask_embedding.pt", ec))
    out.push_back({"mask_embedding.pt", "",
                   "a separate MASK embedding that vLLM loads in place of the embedding row of "
                   "mask_token_id (DFlashQwen3Model.mask_embedding), which draftgate does not "
                   "read; the drafter would be evaluated with another MASK input"});
  return out;
}

void refuse_unread(const io::ModelConfig& c, const fs::path* drafter_dir) {
  std::vector<RefusedKey> refused = refused_keys(c);
  if (drafter_dir != nullptr)
    for (auto& f : refused_files(*drafter_dir)) refused.push_back(std::move(f));
  if (refused.empty()) return;
  std::string more;
  if (refused.size() > 1)
    more = " (and " + std::to_string(refused.size() - 1) + " more refused key" +
           (refused.size() > 2 ? "s" : "") + ": `draftgate probe` lists them)";
  throw Error(c.file(), "refused " + refused.front().line() + more);
}

}  // namespace draftgate::model
