#include "draftgate/train/recipe.h"

#include <cmath>
#include <stdexcept>

namespace draftgate::train {

const char* loss_name(LossType type) { return type == LossType::kHardCrossEntropy ? "ce" : "kl"; }

at::Tensor position_weights(std::int64_t block_size, double gamma) {
  at::Tensor w = at::zeros({block_size}, at::kFloat);
  for (std::int64_t k = 1; k < block_size; ++k)
    w[k] = std::exp(-static_cast<double>(k - 1) / gamma);
  return w;
}

BlockTargets block_targets(const std::vector<std::int64_t>& input_ids,
                           const std::vector<std::int64_t>& loss_mask,
                           const std::vector<std::int64_t>& anchors, std::int64_t block_size,
                           double gamma) {
  if (loss_mask.size() != input_ids.size())
    throw std::invalid_argument("loss_mask must match input_ids");
  const auto s = static_cast<std::int64_t>(input_ids.size());
  const auto n = static_cast<std::int64_t>(anchors.size());
  const at::Tensor w = position_weights(block_size, gamma);
  BlockTargets t{at::zeros({n, block_size}, at::kLong), at::zeros({n, block_size}, at::kFloat)};
  auto labels = t.labels.accessor<std::int64_t, 2>();
  auto weight = t.weight.accessor<float, 2>();
  const auto wk = w.accessor<float, 1>();
  for (std::int64_t j = 0; j < n; ++j) {
    for (std::int64_t k = 1; k < block_size; ++k) {
      const std::int64_t pos = anchors[j] + k;
      if (pos >= s || loss_mask[pos] == 0) continue;
      labels[j][k] = input_ids[pos];
      weight[j][k] = wk[k];
    }
  }
  return t;
}

at::Tensor block_teacher_logits(const at::Tensor& teacher, const std::vector<std::int64_t>& anchors,
                                std::int64_t block_size) {
  const std::int64_t s = teacher.size(0);
  std::vector<std::int64_t> rows;
  for (auto a : anchors)
    for (std::int64_t k = 0; k < block_size; ++k)
      rows.push_back(std::min(s - 1, a + std::max<std::int64_t>(k - 1, 0)));
  return teacher.index_select(0, at::tensor(rows, at::kLong).to(teacher.device()))
      .view({static_cast<std::int64_t>(anchors.size()), block_size, teacher.size(1)});
}

at::Tensor weighted_cross_entropy(const at::Tensor& logits, const BlockTargets& targets) {
  const at::Tensor logp = at::log_softmax(logits, -1);
  const at::Tensor nll =
      -logp.gather(-1, targets.labels.to(logits.device()).unsqueeze(-1)).squeeze(-1);
  const at::Tensor w = targets.weight.to(logits.device(), logits.scalar_type());
  return (nll * w).sum() / w.sum();
}

at::Tensor weighted_kl(const at::Tensor& logits, const at::Tensor& teacher_block_logits,
                       const BlockTargets& targets) {
  const at::Tensor logq = at::log_softmax(logits, -1);
  const at::Tensor logp = at::log_softmax(teacher_block_logits.to(logits.scalar_type()), -1);
  const at::Tensor kl = (logp.exp() * (logp - logq)).sum(-1);
  const at::Tensor w = targets.weight.to(logits.device(), logits.scalar_type());
  return (kl * w).sum() / w.sum();
}

}  // namespace draftgate::train
