#pragma once
// Hyperparameters of a supported target family, read from config.json and validated against the
// resolved decoder stack. Unsupported families and options are errors, never approximations.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "draftgate/io/config.h"
#include "draftgate/layout/decoder_stack.h"
#include "draftgate/model/ops.h"

namespace draftgate::model {

// Adding a target family:
//  1. Add it to Family and build: -Wswitch names every switch over Family that must handle it
//     (family_name and traits_of in target_config.cpp; the config, architecture and layout writers
//     in random_checkpoint.cpp).
//  2. Two places the compiler cannot list: detect_family (target_config.cpp) maps config.json's
//     model_type strings to families, and tests/support/naive_target.cpp, the independent float64
//     reference, reads model_type itself.
//  3. Behaviour goes into FamilyTraits as data; the math (attention, norms, RoPE, the decoder
//     layer) branches on traits, never on the family's name. A behaviour no trait describes yet
//     is a new FamilyTraits field; the compiler then names each family (and the drafter's
//     kDrafterLayerTraits) that must set it.
//  4. Add a case to tests/unit/target_numerics_test.cpp (EngineCase) for each layout it ships in.
enum class Family {
  kQwen3,    // dense: plain-w RMSNorm, q/k norm, full NeoX RoPE
  kQwen3_5,  // hybrid (Qwen3.5 / 3.6): (1+w) RMSNorm, gated attention, partial RoPE, Gated DeltaNet
};

const char* family_name(Family family);

// How a family's layers compute, filled once from the family when a config is read. No member has
// a default on purpose: -Wextra (missing-field-initializers) then names every traits_of entry and
// kDrafterLayerTraits (dflash.cpp) that does not set a new trait.
struct FamilyTraits {
  NormStyle norm;         // every RMSNorm of the model (layers, q/k, final)
  bool partial_rope;      // rotary_dim = head_dim × partial_rotary_factor
  bool attn_output_gate;  // default of attn_output_gate (q_proj doubled)
  bool linear_attention;  // Gated DeltaNet layers (layer_types linear_attention)
};
FamilyTraits traits_of(Family family);

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

  bool is_linear(std::int64_t layer) const { return layer_types[layer] == "linear_attention"; }
  std::int64_t linear_key_width() const { return linear_k_heads * linear_k_dim; }
  std::int64_t linear_value_width() const { return linear_v_heads * linear_v_dim; }
  std::int64_t conv_width() const { return 2 * linear_key_width() + linear_value_width(); }

  // Reads and validates the family's fields. Throws draftgate::Error naming config.json and the
  // field.
  static TargetConfig from(const io::ModelConfig& config, const layout::DecoderStack& stack);
};

}  // namespace draftgate::model
