#pragma once
// The routed-expert MLP of a sparse decoder layer (traits.mlp kMoe), as transformers'
// Qwen3MoeSparseMoeBlock computes it (models/qwen3_moe/modeling_qwen3_moe.py @16b6c53c): router
// logits linear(x, mlp.gate.weight) in the model's dtype, softmax over the experts in float32,
// torch.topk's k largest (its order and tie rule: at::topk is the same kernel), renormalised to sum
// to 1 when norm_topk_prob, cast back; each expert a SwiGLU MLP (mlp.experts.{e}.*) run on the
// positions routed to it only, its output times the position's weight added into a zero output in
// ascending expert order (index_add_ in the model's dtype, as the reference's loop does). The
// experts are read per expert (mlp.experts.{e}.{gate,up,down}_proj.weight, Qwen3-MoE releases) or
// fused (mlp.experts.gate_up_proj [E, 2I, H], mlp.experts.down_proj [E, H, I], Qwen3.5 / 3.6 MoE
// releases and transformers 5's in-memory layout); both compute the same bits.
// With traits.shared_expert (Qwen3_5MoeSparseMoeBlock, models/qwen3_5_moe/modeling_qwen3_5_moe.py
// @009e78d6), a shared SwiGLU expert (mlp.shared_expert.*) runs on every position and its output,
// times sigmoid(linear(x, mlp.shared_expert_gate.weight)) in the model's dtype, is added to the
// routed experts' sum.

#include <ATen/ATen.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "draftgate/arch/target_config.h"
#include "draftgate/model/decoder_layer_parts.h"
#include "draftgate/model/weights.h"

namespace draftgate::model {

// The experts each position routes to and their weights: [T, k] each.
struct Routing {
  at::Tensor experts;  // int64, torch.topk's order (largest probability first)
  at::Tensor weights;  // the model's dtype
};

// Routing of positions with router logits `logits` [T, num_experts] (any dtype): float32 softmax,
// top `k`, renormalised when `renormalise`, cast to `dtype`.
Routing route(const at::Tensor& logits, std::int64_t k, bool renormalise, at::ScalarType dtype);

// When a block reads its experts: all at construction (a model held in memory), or each when the
// block runs (a streamed layer, loaded and dropped within one step of the walk): one expert's
// converted copy at a time instead of the layer's, every expert still read and checked.
enum class ExpertLoading { kEager, kOnUse };

class SparseMoe {
 public:
  // Loads `<prefix>gate.weight` [num_experts, hidden], every expert under `<prefix>experts.`
  // (either layout; a checkpoint holding both is refused) and, with traits.shared_expert,
  // `<prefix>shared_expert.*` and `<prefix>shared_expert_gate.weight`.
  // With kOnUse, `w` must outlive the block.
  SparseMoe(const TargetConfig& config, const WeightLoader& w, const std::string& prefix,
            ExpertLoading loading = ExpertLoading::kEager);

  // The block's output for post-norm hidden states x [T, hidden]. Memory beyond the output: the
  // routing ([T, k]) and one expert's activations for the positions routed to it at a time.
  at::Tensor operator()(const at::Tensor& x) const;

 private:
  std::string fused_name(const char* projection) const;
  std::vector<std::int64_t> fused_shape(const char* projection) const;
  // Expert e from either layout (fused: its slices of the two tensors).
  SwiGluMlp load_expert(const WeightLoader& w, std::int64_t e) const;

  at::Tensor router_;
  std::int64_t k_;
  bool renormalise_;
  std::string prefix_;
  std::int64_t num_experts_, hidden_, inter_;
  bool fused_;
  std::vector<SwiGluMlp> experts_;        // kEager
  const WeightLoader* on_use_ = nullptr;  // kOnUse
  std::optional<SwiGluMlp> shared_;
  at::Tensor shared_gate_;  // [1, hidden]
};

}  // namespace draftgate::model
