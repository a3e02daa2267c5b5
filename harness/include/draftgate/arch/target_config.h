#pragma once
// Hyperparameters of a target family of the table (family_table.h), read from config.json and
// validated against the resolved decoder stack. Unknown families and unsupported options are
// errors, never approximations.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "draftgate/arch/family_table.h"
#include "draftgate/io/checkpoint.h"
#include "draftgate/io/config.h"
#include "draftgate/layout/decoder_stack.h"
#include "draftgate/layout/engine_support.h"

namespace draftgate::model {

struct TargetConfig {
  Family family = Family::kQwen3;
  FamilyTraits traits{};
  std::int64_t hidden = 0;
  std::int64_t intermediate = 0;
  std::int64_t vocab = 0;
  std::int64_t num_layers = 0;
  std::vector<std::string> layer_types;  // full_attention | linear_attention, per layer
  double rms_eps = 1e-6;
  std::int64_t max_positions = 0;  // max_position_embeddings; 0 when the config does not say

  // Full attention.
  std::int64_t num_heads = 0;
  std::int64_t num_kv_heads = 0;
  std::int64_t head_dim = 0;    // from the config, never hidden / heads
  std::int64_t rotary_dim = 0;  // head_dim x partial_rotary_factor (Qwen3.5), head_dim (Qwen3)
  double rope_theta = 0;
  bool attn_output_gate = false;  // q_proj doubled: per head [query | gate]

  // Gated DeltaNet (linear attention).
  std::int64_t linear_k_heads = 0;
  std::int64_t linear_v_heads = 0;
  std::int64_t linear_k_dim = 0;
  std::int64_t linear_v_dim = 0;
  std::int64_t conv_kernel = 0;

  // Mixture of experts (traits.mlp kMoe): Qwen3MoeSparseMoeBlock's routing and which layers
  // route; the other layers run the dense MLP of intermediate_size (0 when every layer routes and
  // the config has none).
  std::int64_t num_experts = 0;
  std::int64_t experts_per_token = 0;  // num_experts_per_tok: the top-k
  std::int64_t moe_intermediate = 0;   // moe_intermediate_size: each expert's SwiGLU width
  bool norm_topk_prob = false;         // the k routing weights renormalised to sum to 1
  std::vector<bool> sparse;            // per layer: routed experts (else the dense MLP)
  // traits.shared_expert: shared_expert_intermediate_size, the shared expert's SwiGLU width.
  std::int64_t shared_expert_intermediate = 0;

  bool is_linear(std::int64_t layer) const { return layer_types[layer] == "linear_attention"; }
  bool is_sparse(std::int64_t layer) const { return !sparse.empty() && sparse[layer]; }
  std::int64_t linear_key_width() const { return linear_k_heads * linear_k_dim; }
  std::int64_t linear_value_width() const { return linear_v_heads * linear_v_dim; }
  std::int64_t conv_width() const { return 2 * linear_key_width() + linear_value_width(); }

  // Reads and validates the family's fields. Throws draftgate::Error naming config.json and the
  // field.
  static TargetConfig from(const io::ModelConfig& config, const layout::DecoderStack& stack);
};

// Whether the engine runs this target, as probe and layer_path report it: layout::engine_support,
// and where that finds nothing, what TargetConfig::from (forward, eval) refuses of the config.
layout::EngineSupport target_engine_support(const io::Checkpoint& checkpoint,
                                            const layout::DecoderStack& stack);
// Throws draftgate::Error naming the checkpoint and the first thing target_engine_support says the
// engine cannot run: what `probe` reports as unsupported is refused when the target is loaded,
// never run as the nearest thing the engine computes (a qwen3_moe shared expert left out, a dense
// family's experts ignored).
void require_target_engine_support(const io::Checkpoint& checkpoint,
                                   const layout::DecoderStack& stack);

// Qwen3MoeDecoderLayer's rule (models/qwen3_moe/modeling_qwen3_moe.py @16b6c53c): layer `layer`
// routes to experts when it is not in mlp_only_layers and (layer + 1) % decoder_sparse_step == 0
// (num_experts > 0 is required of the config).
bool moe_layer_is_sparse(std::int64_t layer, std::int64_t decoder_sparse_step,
                         const std::vector<std::int64_t>& mlp_only_layers);

}  // namespace draftgate::model
