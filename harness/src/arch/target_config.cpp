#include "draftgate/arch/target_config.h"

#include <algorithm>

#include "draftgate/arch/config_limits.h"
#include "draftgate/error.h"
#include "draftgate/format.h"
#include "draftgate/io/json_util.h"
#include "draftgate/io/rope_config.h"

namespace draftgate::model {

namespace {

// rope_theta / partial_rotary_factor live at the text-config level (Qwen3) or under rope_parameters
// (Qwen3.5); given in both, they must agree.
double rope_field(const io::ModelConfig& config, const char* key, double fallback, bool required) {
  if (const std::optional<double> value = io::agreed_rope_number(config, key)) return *value;
  if (required) throw Error(config.file(), std::string("missing required field ") + key);
  return fallback;
}

void require_positive(const io::ModelConfig& config, const char* key, std::int64_t value) {
  if (value <= 0)
    throw Error(config.file(),
                config.where(key) + " must be positive, got " + std::to_string(value));
}

void check_rope_type(const io::ModelConfig& config, const FamilyEntry& family) {
  const std::string type = io::rope_type(config);
  for (const auto& t : family.engine.rope_types)
    if (t == type) return;
  throw Error(config.file(), "rope type \"" + type + "\" is not supported for " + family.name +
                                 " (the engine computes " + format_list(family.engine.rope_types) +
                                 ")");
}

// The layer indices of mlp_only_layers ([] when absent or null).
std::vector<std::int64_t> mlp_only_layers(const io::ModelConfig& config, std::int64_t layers) {
  std::vector<std::int64_t> mlp_only;
  const auto& text = config.text();
  const auto it = text.find("mlp_only_layers");
  if (it == text.end() || it->is_null()) return mlp_only;
  if (!it->is_array())
    throw Error(config.file(),
                config.where("mlp_only_layers") + " must be a list of layer indices");
  for (const auto& v : *it) {
    if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() >= layers)
      throw Error(config.file(), config.where("mlp_only_layers") + " holds " + io::json_excerpt(v) +
                                     ", not a layer index 0.." + std::to_string(layers - 1));
    mlp_only.push_back(v.get<std::int64_t>());
  }
  return mlp_only;
}

// The MoE fields of Qwen3MoeConfig (configuration_qwen3_moe.py @26f4b0f6) and Qwen3_5MoeTextConfig
// (configuration_qwen3_5_moe.py @e36255cb). The expert counts and widths are required (every
// released config writes them); the rest take the config class's defaults, or are fixed where the
// family's class has no such field (ConfigDefaults).
void read_moe(const io::ModelConfig& config, const FamilyEntry& family, TargetConfig& c) {
  c.num_experts = config.require_int("num_experts");
  c.experts_per_token = config.require_int("num_experts_per_tok");
  c.moe_intermediate = config.require_int("moe_intermediate_size");
  const std::int64_t step = config.find_int("decoder_sparse_step").value_or(1);
  for (auto [key, v] : {std::pair{"num_experts", c.num_experts},
                        {"num_experts_per_tok", c.experts_per_token},
                        {"moe_intermediate_size", c.moe_intermediate},
                        {"decoder_sparse_step", step}})
    require_positive(config, key, v);
  if (c.traits.shared_expert) {
    c.shared_expert_intermediate = config.require_int("shared_expert_intermediate_size");
    require_positive(config, "shared_expert_intermediate_size", c.shared_expert_intermediate);
  }
  if (c.experts_per_token > c.num_experts)
    throw Error(config.file(),
                "num_experts_per_tok " + std::to_string(c.experts_per_token) +
                    " exceeds num_experts " + std::to_string(c.num_experts),
                "a token cannot route to more experts than the layer has");
  const std::optional<bool> renormalise = config.find_bool("norm_topk_prob");
  if (family.defaults.moe_always_renormalises && renormalise == false)
    throw Error(config.file(),
                config.where("norm_topk_prob") + " = false, but " + family.name +
                    "'s router renormalises the top-k weights whatever the config says",
                "remove the key, or use the family the checkpoint was trained as");
  c.norm_topk_prob = family.defaults.moe_always_renormalises || renormalise.value_or(false);
  const std::vector<std::int64_t> mlp_only = mlp_only_layers(config, c.num_layers);
  if (family.defaults.moe_every_layer && (step != 1 || !mlp_only.empty()))
    throw Error(config.file(),
                config.where(step != 1 ? "decoder_sparse_step" : "mlp_only_layers") +
                    " makes some layers dense, but every " + family.name + " layer routes",
                "remove the key: the family's config class has no such field");
  for (std::int64_t i = 0; i < c.num_layers; ++i)
    c.sparse.push_back(moe_layer_is_sparse(i, step, mlp_only));
}

}  // namespace

bool moe_layer_is_sparse(std::int64_t layer, std::int64_t decoder_sparse_step,
                         const std::vector<std::int64_t>& mlp_only_layers) {
  return std::find(mlp_only_layers.begin(), mlp_only_layers.end(), layer) ==
             mlp_only_layers.end() &&
         (layer + 1) % decoder_sparse_step == 0;
}

TargetConfig TargetConfig::from(const io::ModelConfig& config, const layout::DecoderStack& stack) {
  const FamilyEntry& family = family_of(config);
  TargetConfig c;
  c.family = family.family;
  c.traits = family.traits;
  c.hidden = config.require_int("hidden_size");
  // intermediate_size: the dense MLP's width, required unless every layer routes (read below).
  c.intermediate = config.find_int("intermediate_size").value_or(0);
  c.vocab = config.require_int("vocab_size");
  c.num_layers = stack.num_layers;
  c.layer_types = stack.layer_types;
  c.rms_eps = config.rms_norm_eps();
  c.max_positions = config.find_int("max_position_embeddings").value_or(0);
  if (c.max_positions < 0 ||
      (c.max_positions == 0 && config.find_int("max_position_embeddings").has_value()))
    throw Error(config.file(), config.where("max_position_embeddings") + " must be positive, got " +
                                   std::to_string(c.max_positions));
  c.num_heads = config.require_int("num_attention_heads");
  c.num_kv_heads = config.find_int("num_key_value_heads").value_or(c.num_heads);
  for (auto [key, v] : {std::pair{"hidden_size", c.hidden},
                        {"vocab_size", c.vocab},
                        {"num_attention_heads", c.num_heads},
                        {"num_key_value_heads", c.num_kv_heads}})
    require_positive(config, key, v);
  // head_dim from the config; hidden / heads only where the family's config class says so.
  if (!family.defaults.head_dim_from_heads || config.find_int("head_dim")) {
    c.head_dim = config.require_int("head_dim");
    require_positive(config, "head_dim", c.head_dim);
  } else {
    if (c.hidden % c.num_heads != 0)
      throw Error(config.file(),
                  "no head_dim, and hidden_size " + std::to_string(c.hidden) +
                      " is not a multiple of num_attention_heads " + std::to_string(c.num_heads),
                  "add head_dim to the config");
    c.head_dim = c.hidden / c.num_heads;
  }
  if (c.num_heads % c.num_kv_heads != 0)
    throw Error(config.file(), "num_attention_heads " + std::to_string(c.num_heads) +
                                   " is not a multiple of num_key_value_heads " +
                                   std::to_string(c.num_kv_heads));
  check_rope_type(config, family);
  const double theta_default = family.defaults.rope_theta;
  c.rope_theta = config.positive_finite(
      "rope_theta", rope_field(config, "rope_theta", theta_default, theta_default == 0));
  if (const auto limit = unsupported_config_value(config))
    throw Error(config.file(), limit->problem, limit->hint);
  if (config.find_bool("use_sliding_window").value_or(false))
    throw Error(config.file(), "use_sliding_window = true is not supported");

  c.rotary_dim = c.head_dim;
  if (c.head_dim % 2 != 0)  // RoPE rotates pairs: the two halves of each head
    throw Error(config.file(), config.where("head_dim") + " " + std::to_string(c.head_dim) +
                                   " is odd: rotary embeddings rotate the head's two halves");
  if (c.traits.partial_rope) {
    const double factor = rope_field(config, "partial_rotary_factor", 1.0, false);
    c.rotary_dim = static_cast<std::int64_t>(static_cast<double>(c.head_dim) * factor);
    if (c.rotary_dim <= 0 || c.rotary_dim > c.head_dim || c.rotary_dim % 2 != 0)
      throw Error(config.file(), "partial_rotary_factor " + std::to_string(factor) +
                                     " gives rotary dim " + std::to_string(c.rotary_dim) +
                                     " for head_dim " + std::to_string(c.head_dim) +
                                     " (must be even and <= head_dim)");
  }
  c.attn_output_gate =
      c.traits.attn_output_gate && config.find_bool("attn_output_gate").value_or(true);
  if (c.traits.mlp == MlpKind::kMoe) read_moe(config, family, c);
  const bool dense_layers =
      c.sparse.empty() || std::find(c.sparse.begin(), c.sparse.end(), false) != c.sparse.end();
  if (dense_layers || config.find_int("intermediate_size")) {
    c.intermediate = config.require_int("intermediate_size");
    require_positive(config, "intermediate_size", c.intermediate);
  }
  if (!c.traits.linear_attention) {
    for (const auto& t : c.layer_types)
      if (t != "full_attention")
        throw Error(config.file(), std::string(family_name(c.family)) + " layer type \"" + t +
                                       "\" is not supported (only full_attention)");
    return c;
  }
  c.linear_k_heads = config.require_int("linear_num_key_heads");
  c.linear_v_heads = config.require_int("linear_num_value_heads");
  c.linear_k_dim = config.require_int("linear_key_head_dim");
  c.linear_v_dim = config.require_int("linear_value_head_dim");
  c.conv_kernel = config.require_int("linear_conv_kernel_dim");
  for (auto [key, v] : {std::pair{"linear_num_key_heads", c.linear_k_heads},
                        {"linear_num_value_heads", c.linear_v_heads},
                        {"linear_key_head_dim", c.linear_k_dim},
                        {"linear_value_head_dim", c.linear_v_dim},
                        {"linear_conv_kernel_dim", c.conv_kernel}})
    require_positive(config, key, v);
  if (c.linear_v_heads % c.linear_k_heads != 0)
    throw Error(config.file(), "linear_num_value_heads " + std::to_string(c.linear_v_heads) +
                                   " is not a multiple of linear_num_key_heads " +
                                   std::to_string(c.linear_k_heads));
  for (const auto& t : c.layer_types)
    if (t != "full_attention" && t != "linear_attention")
      throw Error(config.file(), std::string(family_name(c.family)) + " layer type \"" + t +
                                     "\" is not supported");
  return c;
}

namespace {

// An MoE layer's MLP tensors of the other kind than its config makes it (experts and a router in a
// layer decoder_sparse_step / mlp_only_layers make dense, a dense MLP in a sparse one): the loader
// reads the kind the config says, so those would be left unread.
std::optional<std::string> mlp_of_the_other_kind(const io::Checkpoint& checkpoint,
                                                 const layout::DecoderStack& stack,
                                                 const TargetConfig& c) {
  if (c.traits.mlp != MlpKind::kMoe) return std::nullopt;
  for (const std::string& n : checkpoint.names()) {  // one pass: a 397B index has 100k names
    layout::StackName at;
    if (!layout::split_stack_name(n, &at) || at.prefix != stack.prefix ||
        at.index >= c.num_layers || at.suffix.rfind("mlp.", 0) != 0)
      continue;
    const std::int64_t l = at.index;
    const std::string part = at.suffix.substr(4);
    const bool sparse_tensor = part.rfind("experts.", 0) == 0 || part.rfind("gate.", 0) == 0;
    const bool dense_tensor = part.rfind("gate_proj.", 0) == 0 || part.rfind("up_proj.", 0) == 0 ||
                              part.rfind("down_proj.", 0) == 0;
    if (c.is_sparse(l) ? dense_tensor : sparse_tensor)
      return "layer " + std::to_string(l) + "'s MLP is " + (c.is_sparse(l) ? "sparse" : "dense") +
             " by decoder_sparse_step / mlp_only_layers, but the checkpoint holds " + n +
             ", a tensor of a " + (c.is_sparse(l) ? "dense" : "sparse") +
             " MLP the engine would not read: does config.json belong to this checkpoint?";
  }
  return std::nullopt;
}

}  // namespace

layout::EngineSupport target_engine_support(const io::Checkpoint& checkpoint,
                                            const layout::DecoderStack& stack) {
  layout::EngineSupport engine = layout::engine_support(checkpoint, stack);
  if (!engine.supported) return engine;
  try {
    const TargetConfig c = TargetConfig::from(checkpoint.config(), stack);
    if (const auto problem = mlp_of_the_other_kind(checkpoint, stack, c)) {
      engine.supported = false;
      engine.reasons.push_back(*problem);
    }
  } catch (const Error& e) {
    engine.supported = false;
    engine.reasons.push_back(e.what());
  }
  return engine;
}

void require_target_engine_support(const io::Checkpoint& checkpoint,
                                   const layout::DecoderStack& stack) {
  const layout::EngineSupport s = target_engine_support(checkpoint, stack);
  if (s.supported) return;
  throw Error(checkpoint.dir().string(),
              "the engine does not run this checkpoint: " + s.reasons.front() +
                  (s.reasons.size() > 1
                       ? " (and " + std::to_string(s.reasons.size() - 1) + " more: see probe)"
                       : ""),
              "`draftgate probe` lists what the engine runs of this checkpoint");
}

}  // namespace draftgate::model
