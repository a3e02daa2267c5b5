#pragma once
// Writes small random target checkpoints of every family of the table in its real layouts, for
// tests, benchmarks and fixtures. Deterministic for a given spec (seeded generator, sorted tensor
// order).

#include <ATen/ATen.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <vector>

#include "draftgate/arch/drafter.h"
#include "draftgate/arch/target_config.h"
#include "draftgate/io/fp8_scheme.h"

namespace draftgate::model {

struct RandomTargetSpec {
  Family family = Family::kQwen3;
  TargetLayout layout = TargetLayout::kFlat;
  std::int64_t hidden = 64;
  std::int64_t intermediate = 128;
  std::int64_t vocab = 256;
  std::int64_t layers = 4;
  std::int64_t heads = 4;
  std::int64_t kv_heads = 2;
  std::int64_t head_dim = 16;
  std::int64_t linear_k_heads = 2;  // Qwen3.5 only
  std::int64_t linear_v_heads = 4;
  std::int64_t linear_k_dim = 16;
  std::int64_t linear_v_dim = 16;
  std::int64_t full_attention_interval = 4;
  double partial_rotary_factor = 0.5;
  // Routed-expert families only (traits.mlp kMoe): the config's MoE fields; layer 1 dense by
  // default so both MLPs of the family run (where the family has dense layers: ConfigDefaults).
  std::int64_t num_experts = 8;
  std::int64_t experts_per_token = 2;
  std::int64_t moe_intermediate = 32;
  std::int64_t decoder_sparse_step = 1;
  std::vector<std::int64_t> mlp_only_layers = {1};
  bool norm_topk_prob = true;
  std::int64_t shared_expert_intermediate = 32;  // traits.shared_expert only
  // The routed experts stored fused (mlp.experts.gate_up_proj [E, 2I, H], mlp.experts.down_proj
  // [E, H, I]) as Qwen3.5 / 3.6 MoE releases hold them, with the per-expert layout's values.
  bool fused_experts = false;
  bool tied = false;
  at::ScalarType dtype = at::kBFloat16;
  std::uint64_t seed = 0;
  // 0: every value drawn independently (the whole checkpoint is generated in memory). N > 0: for
  // checkpoints larger than memory — one block of N values is drawn per distribution, and each
  // tensor is the cyclic sequence of its distribution's block, starting at an offset that depends
  // on the tensor's name, written while the file is. With N prime and above every row length, the
  // rows of a matrix are distinct shifts of one random sequence (a slice of a random circulant:
  // full rank), so activations stay finite and as varied as with independent values.
  std::int64_t repeat_block = 0;
  // Set: the decoder layers' linear weights are written block-FP8 (io/fp8_scheme.h) from their
  // `dtype` values, except the modules scheme.not_converted names; the config gets the scheme's
  // quantization_config. With repeat_block, each weight's codes are the cyclic sequence of its
  // distribution's quantized block, every block scaled alike.
  std::optional<io::Fp8Scheme> fp8;
};

void write_random_target(const std::filesystem::path& dir, const RandomTargetSpec& spec);

// The FP8 scheme make-target --quantize fp8 writes for `spec`'s family and layout: blocks of
// block_out x block_in, and kept unquantised what fine-grained FP8 releases keep — lm_head, the
// embeddings and, of routed-expert families, the router (mlp.gate) and the shared expert's gate.
io::Fp8Scheme random_target_fp8_scheme(const RandomTargetSpec& spec, std::int64_t block_out,
                                       std::int64_t block_in);

// A random DFlash drafter in the reference layout (unprefixed names, dflash_config) for a target of
// `target_hidden` width, `target_layers` layers and `vocab` tokens.
struct RandomDrafterSpec {
  std::int64_t target_hidden = 64;
  std::int64_t target_layers = 4;
  std::int64_t vocab = 256;
  std::int64_t intermediate = 128;
  std::int64_t layers = 2;
  std::int64_t heads = 4;
  std::int64_t kv_heads = 2;
  std::int64_t head_dim = 16;
  std::int64_t block_size = 8;
  std::int64_t mask_token_id = 255;
  std::vector<std::int64_t> target_layer_ids = {0, 2};
  at::ScalarType dtype = at::kBFloat16;
  std::uint64_t seed = 0;
  // Set: a DFlash2 drafter in the z-lab fixture's layout (architectures DFlash2DraftModel, sliding
  // layers, is_causal false, rope_parameters, the convolutions and the candidate_selector).
  std::optional<Dflash2Config> dflash2;
  double output_multiplier = 1.0;      // written for DFlash2 drafters
  double final_logit_softcapping = 0;  // written for DFlash2 drafters; 0 = no cap
  // DFlash2 only: sliding_attention layers (window 2048, the fixture's layout) or full_attention
  // ones (what the training-mode forward supports); the codebooks' init std (small: a walk close
  // to the argmax).
  bool dflash2_sliding_layers = true;
  double selector_codebook_std = 1.0;
};

void write_random_drafter(const std::filesystem::path& dir, const RandomDrafterSpec& spec);

}  // namespace draftgate::model
