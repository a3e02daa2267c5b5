#pragma once
// The DFlash training recipe's loss side (SpecForge after PR #473, the reference semantics):
// same-position labels, decay weights w_0 = 0, w_k = exp(−(k−1)/γ), hard cross-entropy on the
// target's greedy tokens, or soft KL to the teacher as the alternative. The training forward itself
// is model::DFlashDrafter::training_logits.

#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <vector>

namespace draftgate::train {

enum class LossType { kHardCrossEntropy, kSoftKl };
const char* loss_name(LossType type);  // "ce" / "kl"

// [B]: 0 for k = 0, exp(−(k−1)/γ) for k ≥ 1; γ ≤ 0 (SpecForge's loss_decay_gamma None, its
// default) is uniform: 1 for k ≥ 1.
at::Tensor position_weights(std::int64_t block_size, double gamma);

struct BlockTargets {
  at::Tensor labels;  // [N, B] int64: input_ids[a+k] (same position), 0 where invalid
  at::Tensor
      weight;  // [N, B] float32: w_k where a+k < S and loss_mask[a+k], else 0 (and 0 at k = 0)
};

// Labels and per-element weights for the blocks at `anchors` of a sequence.
BlockTargets block_targets(const std::vector<std::int64_t>& input_ids,
                           const std::vector<std::int64_t>& loss_mask,
                           const std::vector<std::int64_t>& anchors, std::int64_t block_size,
                           double gamma);

// Teacher logits for every block element: the target's logits at position a+k−1 predict token a+k.
// teacher [S, V] → [N, B, V] (rows past the sequence and k = 0 are filled from position a and carry
// weight 0).
at::Tensor block_teacher_logits(const at::Tensor& teacher, const std::vector<std::int64_t>& anchors,
                                std::int64_t block_size);

// How a trainer weights the block elements. kFixed: the position weights above (decay or uniform).
// kDpace: D-PACE, identical in SpecForge (specforge/algorithms/common/dflash_family_model.py
// @a6b6b023 :245-275 `_dpace_weight`, loss_type "dpace") and speculators
// (src/speculators/losses/utils.py @c05b95b3 :64-112 `dpace_loss_decay`): on the supervised mask m,
// s_k = (1−α)·exp(−CE_k) + α (1 where m = 0), P_k = Π_{j≤k} s_j, W_k = Σ_{j≥k} P_j·m_j, detached;
// the element weight is m·W. SpecForge's other D-PACE loss types weight by P alone
// (kDpaceCumulativeConfidence, "dpace-cumulative-confidence-only") or by W / P
// (kDpaceContinuationValue, "dpace-continuation-value-only"; P floored at the float's tiniest
// normal), the same `_dpace_weight`.
enum class Weighting { kFixed, kDpace, kDpaceCumulativeConfidence, kDpaceContinuationValue };
inline bool is_dpace(Weighting w) { return w != Weighting::kFixed; }
// How a trainer divides the weighted sum. kWeightSum: Σ ℓ·w / Σ w (SpecForge loss_type dflash,
// dflash_family_model.py :351-362, :455-458). kMaskSum: per row Σ ℓ·w / (Σ m + 1e-5), mean over
// rows (speculators losses/utils.py :290-304). kRows: Σ ℓ·w / rows (SpecForge D-PACE, :455-458).
enum class Normalization { kWeightSum, kMaskSum, kRows };
const char* weighting_name(Weighting w);          // "fixed", "dpace", SpecForge's variants' names
const char* normalization_name(Normalization n);  // "weight_sum" / "mask_sum" / "rows"

struct LossRecipe {
  LossType loss = LossType::kHardCrossEntropy;
  Weighting weighting = Weighting::kFixed;
  double gamma = 0;  // kFixed: the decay γ, ≤ 0 uniform
  double dpace_alpha = 0.5;
  Normalization normalization = Normalization::kWeightSum;
  std::string describe() const;  // e.g. "ce, decay gamma 7, weight_sum"
};

// Per element [N, B] (double precision where the logits are): −log softmax(logits)[label], and
// KL(softmax(teacher) ‖ softmax(logits)).
at::Tensor elementwise_cross_entropy(const at::Tensor& logits, const at::Tensor& labels);
at::Tensor elementwise_kl(const at::Tensor& logits, const at::Tensor& teacher_block_logits);

// D-PACE weights [N, B] of `variant` (see Weighting: W, P or W / P) from the elementwise CE and
// the 0/1 supervised mask.
at::Tensor dpace_weights(const at::Tensor& cross_entropy, const at::Tensor& mask, double alpha,
                         Weighting variant = Weighting::kDpace);

// The element weights `recipe` gives [N, B]: `mask` [N, B] is the 0/1 supervision (block kept, in
// bounds, k > 0, loss_mask); `cross_entropy` feeds D-PACE.
at::Tensor recipe_weights(const LossRecipe& recipe, const at::Tensor& mask,
                          const at::Tensor& cross_entropy);
// The trainer's scalar: Σ ℓ·w normalised as `recipe` says, over the elementwise loss [N, B] of
// `rows` batch rows (`row_of_anchor` [N] names each anchor's row; empty = every anchor in row 0).
double recipe_loss(const LossRecipe& recipe, const at::Tensor& elementwise, const at::Tensor& mask,
                   const at::Tensor& weights, const std::vector<std::int64_t>& row_of_anchor = {},
                   std::int64_t rows = 1);

// Σ w·CE(logits, labels) / Σ w over [N, B, V] logits: a scalar in the logits' dtype,
// differentiable (checks pass float64 logits, trainers float32).
at::Tensor weighted_cross_entropy(const at::Tensor& logits, const BlockTargets& targets);
// Σ w·KL(softmax(teacher) ‖ softmax(logits)) / Σ w, likewise.
at::Tensor weighted_kl(const at::Tensor& logits, const at::Tensor& teacher_block_logits,
                       const BlockTargets& targets);

}  // namespace draftgate::train
