#include "draftgate/arch/family_table.h"

#include <algorithm>

#include "draftgate/error.h"
#include "draftgate/format.h"
#include "draftgate/io/json_util.h"

namespace draftgate::model {
namespace {

// Each family's traits, named one by one; constexpr, so a trait left out does not compile.
// Qwen3: transformers models/qwen3/modeling_qwen3.py (Qwen3RMSNorm, q_norm/k_norm, full RoPE).
constexpr FamilyTraits kQwen3Traits = TraitsBuilder()
                                          .norm(NormStyle::kPlain)
                                          .qk_norm(true)
                                          .partial_rope(false)
                                          .attn_output_gate(false)
                                          .linear_attention(false)
                                          .mlp(MlpKind::kDense)
                                          .shared_expert(false);
// Qwen3.5 / 3.6: models/qwen3_5/modeling_qwen3_5.py (Qwen3_5RMSNorm (1+w), gated q_proj,
// partial_rotary_factor, Gated DeltaNet layers).
constexpr FamilyTraits kQwen3_5Traits = TraitsBuilder()
                                            .norm(NormStyle::kOnePlusW)
                                            .qk_norm(true)
                                            .partial_rope(true)
                                            .attn_output_gate(true)
                                            .linear_attention(true)
                                            .mlp(MlpKind::kDense)
                                            .shared_expert(false);
// Llama-style dense: models/llama/modeling_llama.py (LlamaRMSNorm w·x̂, no q/k norm, rotate_half
// RoPE over the whole head, SwiGLU MLP).
constexpr FamilyTraits kLlamaTraits = TraitsBuilder()
                                          .norm(NormStyle::kPlain)
                                          .qk_norm(false)
                                          .partial_rope(false)
                                          .attn_output_gate(false)
                                          .linear_attention(false)
                                          .mlp(MlpKind::kDense)
                                          .shared_expert(false);
// Qwen3-MoE: models/qwen3_moe/modeling_qwen3_moe.py @16b6c53c (Qwen3MoeRMSNorm w·x̂, q/k norm,
// full RoPE, Qwen3MoeSparseMoeBlock: routed experts, no shared expert).
constexpr FamilyTraits kQwen3MoeTraits = TraitsBuilder()
                                             .norm(NormStyle::kPlain)
                                             .qk_norm(true)
                                             .partial_rope(false)
                                             .attn_output_gate(false)
                                             .linear_attention(false)
                                             .mlp(MlpKind::kMoe)
                                             .shared_expert(false);
// Qwen3.5 / 3.6 MoE: models/qwen3_5_moe/modeling_qwen3_5_moe.py @009e78d6 — the Qwen3.5 hybrid's
// norms, gated attention and Gated DeltaNet, with Qwen3_5MoeSparseMoeBlock on every layer: routed
// experts plus a sigmoid-gated shared expert.
constexpr FamilyTraits kQwen3_5MoeTraits = TraitsBuilder()
                                               .norm(NormStyle::kOnePlusW)
                                               .qk_norm(true)
                                               .partial_rope(true)
                                               .attn_output_gate(true)
                                               .linear_attention(true)
                                               .mlp(MlpKind::kMoe)
                                               .shared_expert(true);

std::vector<FamilyEntry> make_table() {
  std::vector<FamilyEntry> table;
  {
    FamilyEntry e{};
    e.family = Family::kQwen3;
    e.name = "qwen3";
    e.display_name = "Qwen3 dense";
    e.model_types = {"qwen3"};
    e.architectures = {"Qwen3ForCausalLM"};
    e.traits = kQwen3Traits;
    e.layouts = {TargetLayout::kFlat};
    e.engine.rope_types = {"default"};
    e.engine.quantizations = {"fp8"};  // block FP8 weights, dequantized as read (weights.h)
    table.push_back(e);
  }
  {
    FamilyEntry e{};
    e.family = Family::kQwen3_5;
    e.name = "qwen3_5";
    e.display_name = "Qwen3.5 / 3.6 dense hybrid (Gated DeltaNet)";
    e.model_types = {"qwen3_5", "qwen3_5_text"};
    e.architectures = {"Qwen3_5ForConditionalGeneration", "Qwen3_5ForCausalLM"};
    e.traits = kQwen3_5Traits;
    e.layouts = {TargetLayout::kVlm, TargetLayout::kTextResave};
    e.engine.rope_types = {"default"};
    e.engine.quantizations = {"fp8"};  // block FP8 weights, dequantized as read (weights.h)
    table.push_back(e);
  }
  {
    FamilyEntry e{};
    e.family = Family::kLlama;
    e.name = "llama";
    e.display_name = "Llama-style dense (Llama 2, TinyLlama, SmolLM)";
    e.model_types = {"llama"};
    e.architectures = {"LlamaForCausalLM"};
    e.traits = kLlamaTraits;
    e.layouts = {TargetLayout::kFlat};
    e.engine.rope_types = {"default"};  // Llama 3.1+'s "llama3" scaling is not computed
    e.engine.quantizations = {"fp8"};   // block FP8 weights, dequantized as read (weights.h)
    // LlamaConfig (models/llama/configuration_llama.py @4bdeeced): head_dim None defaults to
    // hidden_size // num_attention_heads, rope_theta to 10000.
    e.defaults.head_dim_from_heads = true;
    e.defaults.rope_theta = 10000.0;
    table.push_back(e);
  }
  {
    FamilyEntry e{};
    e.family = Family::kQwen3Moe;
    e.name = "qwen3_moe";
    e.display_name = "Qwen3-MoE (Qwen3-30B-A3B, Qwen3-Coder-30B-A3B)";
    e.model_types = {"qwen3_moe"};
    e.architectures = {"Qwen3MoeForCausalLM"};
    e.traits = kQwen3MoeTraits;
    e.layouts = {TargetLayout::kFlat};
    e.engine.rope_types = {"default"};
    e.engine.quantizations = {"fp8"};  // block FP8 weights, dequantized as read (weights.h)
    // Qwen3MoeConfig (configuration_qwen3_moe.py @26f4b0f6): rope_theta 10000; the attention reads
    // getattr(config, "head_dim", hidden_size // num_attention_heads).
    e.defaults.head_dim_from_heads = true;
    e.defaults.rope_theta = 10000.0;
    table.push_back(e);
  }
  {
    FamilyEntry e{};
    e.family = Family::kQwen3_5Moe;
    e.name = "qwen3_5_moe";
    e.display_name =
        "Qwen3.5 / 3.6 MoE hybrid (Qwen3.5-35B-A3B, Qwen3.6-35B-A3B, Qwen3.5-122B-A10B)";
    e.model_types = {"qwen3_5_moe", "qwen3_5_moe_text"};
    e.architectures = {"Qwen3_5MoeForConditionalGeneration", "Qwen3_5MoeForCausalLM"};
    e.traits = kQwen3_5MoeTraits;
    e.layouts = {TargetLayout::kVlm, TargetLayout::kTextResave};
    e.engine.rope_types = {"default"};
    e.engine.quantizations = {"fp8"};  // block FP8 weights, dequantized as read (weights.h)
    // Qwen3_5MoeTextConfig (configuration_qwen3_5_moe.py @e36255cb) deletes intermediate_size,
    // decoder_sparse_step, norm_topk_prob and mlp_only_layers: every layer routes, and
    // Qwen3_5MoeTopKRouter renormalises the top-k weights unconditionally.
    e.defaults.moe_every_layer = true;
    e.defaults.moe_always_renormalises = true;
    table.push_back(e);
  }
  return table;
}

const char* norm_name(NormStyle n) {
  switch (n) {
    case NormStyle::kPlain:
      return "plain";
    case NormStyle::kOnePlusW:
      return "one_plus_w";
  }
  return "?";
}

const char* mlp_name(MlpKind m) {
  switch (m) {
    case MlpKind::kDense:
      return "dense";
    case MlpKind::kMoe:
      return "moe";
  }
  return "?";
}

}  // namespace

const char* layout_name(TargetLayout layout) {
  switch (layout) {
    case TargetLayout::kFlat:
      return "flat";
    case TargetLayout::kVlm:
      return "vlm";
    case TargetLayout::kTextResave:
      return "text";
  }
  return "?";
}

const std::vector<FamilyEntry>& families() {
  static const std::vector<FamilyEntry> table = make_table();
  return table;
}

void for_each_family(const std::function<void(const FamilyEntry&)>& visit) {
  for (const auto& e : families()) visit(e);
}

const FamilyEntry& entry_of(Family family) {
  for (const auto& e : families())
    if (e.family == family) return e;
  throw std::logic_error("family enumerator without a table entry");  // a bug, not bad input
}

const char* family_name(Family family) { return entry_of(family).name.c_str(); }

FamilyTraits traits_of(Family family) { return entry_of(family).traits; }

const FamilyEntry* find_family(const std::string& model_type) {
  for (const auto& e : families())
    for (const auto& t : e.model_types)
      if (t == model_type) return &e;
  return nullptr;
}

std::string unknown_model_type(const std::string& model_type) {
  std::vector<std::string> known;
  for (const auto& e : families())
    known.insert(known.end(), e.model_types.begin(), e.model_types.end());
  return "model_type \"" + model_type +
         "\" is not a target family draftgate knows (known: " + format_list(known) + ")";
}

std::optional<std::string> architectures_disagree(const io::ModelConfig& config,
                                                  const FamilyEntry& family) {
  const auto listed = config.root().find("architectures");
  if (listed == config.root().end() || listed->is_null()) return std::nullopt;
  // vLLM iterates it as a list of class names (a string would be its characters).
  if (!listed->is_array() ||
      !std::all_of(listed->begin(), listed->end(), [](const auto& i) { return i.is_string(); }))
    return "architectures must be a list of class names, got " + io::json_excerpt(*listed);
  const auto lists = [](const FamilyEntry& e, const std::string& name) {
    return std::find(e.architectures.begin(), e.architectures.end(), name) != e.architectures.end();
  };
  for (const auto& item : *listed) {
    if (lists(family, item.get<std::string>())) continue;
    for (const auto& other : families())
      if (lists(other, item.get<std::string>()))
        return "architectures names " + item.get<std::string>() + ", a " + other.display_name +
               " class, but model_type \"" + config.model_type() + "\" is " + family.display_name;
  }
  return std::nullopt;
}

const FamilyEntry& family_of(const io::ModelConfig& config) {
  const std::string type = config.model_type();
  const FamilyEntry* e = find_family(type);
  if (e == nullptr)
    throw Error(config.file(), unknown_model_type(type),
                "docs/development/adding-a-target-family.md says how to add a family");
  if (const auto problem = architectures_disagree(config, *e))
    throw Error(config.file(), *problem,
                "serving engines pick the model class by architectures (a list of class "
                "names), transformers by model_type: make them agree");
  return *e;
}

nlohmann::json families_json() {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& e : families()) {
    std::vector<std::string> layouts;
    for (TargetLayout l : e.layouts) layouts.push_back(layout_name(l));
    list.push_back(
        {{"name", e.name},
         {"display_name", e.display_name},
         {"model_types", e.model_types},
         {"traits",
          {{"norm", norm_name(e.traits.norm)},
           {"partial_rope", e.traits.partial_rope},
           {"attn_output_gate", e.traits.attn_output_gate},
           {"linear_attention", e.traits.linear_attention},
           {"mlp", mlp_name(e.traits.mlp)},
           {"shared_expert", e.traits.shared_expert}}},
         {"layouts", layouts},
         {"engine",
          {{"rope_types", e.engine.rope_types}, {"quantizations", e.engine.quantizations}}}});
  }
  return {{"families", list}};
}

}  // namespace draftgate::model
