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

// [B]: 0 for k = 0, exp(−(k−1)/γ) for k ≥ 1.
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

// Σ w·CE(logits, labels) / Σ w over [N, B, V] logits: a scalar in the logits' dtype,
// differentiable (checks pass float64 logits, trainers float32).
at::Tensor weighted_cross_entropy(const at::Tensor& logits, const BlockTargets& targets);
// Σ w·KL(softmax(teacher) ‖ softmax(logits)) / Σ w, likewise.
at::Tensor weighted_kl(const at::Tensor& logits, const at::Tensor& teacher_block_logits,
                       const BlockTargets& targets);

}  // namespace draftgate::train
