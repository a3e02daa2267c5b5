#include "draftgate/train/recipe.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace draftgate::train {

const char* loss_name(LossType type) { return type == LossType::kHardCrossEntropy ? "ce" : "kl"; }
const char* weighting_name(Weighting w) {
  switch (w) {
    case Weighting::kFixed:
      return "fixed";
    case Weighting::kDpace:
      return "dpace";
    case Weighting::kDpaceCumulativeConfidence:
      return "dpace-cumulative-confidence-only";
    case Weighting::kDpaceContinuationValue:
      return "dpace-continuation-value-only";
  }
  return "fixed";
}
const char* normalization_name(Normalization n) {
  switch (n) {
    case Normalization::kWeightSum:
      return "weight_sum";
    case Normalization::kMaskSum:
      return "mask_sum";
    case Normalization::kRows:
      return "rows";
  }
  return "weight_sum";
}

std::string LossRecipe::describe() const {
  std::ostringstream out;
  out << loss_name(loss) << ", ";
  if (weighting == Weighting::kDpace)
    out << "D-PACE alpha " << dpace_alpha;
  else if (is_dpace(weighting))
    out << weighting_name(weighting) << " D-PACE alpha " << dpace_alpha;
  else if (gamma > 0)
    out << "decay gamma " << gamma;
  else
    out << "uniform weights";
  out << ", normalised by " << normalization_name(normalization);
  return out.str();
}

at::Tensor position_weights(std::int64_t block_size, double gamma) {
  at::Tensor w = at::zeros({block_size}, at::kFloat);
  for (std::int64_t k = 1; k < block_size; ++k)
    w[k] = gamma > 0 ? std::exp(-static_cast<double>(k - 1) / gamma) : 1.0;
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

at::Tensor elementwise_cross_entropy(const at::Tensor& logits, const at::Tensor& labels) {
  const at::Tensor logp = at::log_softmax(logits, -1);
  return -logp.gather(-1, labels.to(logits.device()).unsqueeze(-1)).squeeze(-1);
}

at::Tensor elementwise_kl(const at::Tensor& logits, const at::Tensor& teacher_block_logits) {
  const at::Tensor logq = at::log_softmax(logits, -1);
  const at::Tensor logp = at::log_softmax(teacher_block_logits.to(logits.scalar_type()), -1);
  return (logp.exp() * (logp - logq)).sum(-1);
}

at::Tensor dpace_weights(const at::Tensor& cross_entropy, const at::Tensor& mask, double alpha,
                         Weighting variant) {
  const at::Tensor m = mask.to(cross_entropy.scalar_type());
  const at::Tensor smooth = at::where(m > 0, (1.0 - alpha) * at::exp(-cross_entropy) + alpha,
                                      at::ones_like(cross_entropy));
  const at::Tensor prefix = at::cumprod(smooth, -1);
  if (variant == Weighting::kDpaceCumulativeConfidence) return prefix;
  const at::Tensor suffix = at::flip(at::cumsum(at::flip(prefix * m, {-1}), -1), {-1});
  if (variant == Weighting::kDpaceContinuationValue)
    return suffix / prefix.clamp_min(std::numeric_limits<float>::min());
  return suffix;
}

at::Tensor recipe_weights(const LossRecipe& recipe, const at::Tensor& mask,
                          const at::Tensor& cross_entropy) {
  const at::Tensor m = mask.to(cross_entropy.scalar_type());
  if (is_dpace(recipe.weighting))
    return m * dpace_weights(cross_entropy.detach(), m, recipe.dpace_alpha, recipe.weighting);
  return m * position_weights(m.size(-1), recipe.gamma).to(m.scalar_type()).unsqueeze(0);
}

double recipe_loss(const LossRecipe& recipe, const at::Tensor& elementwise, const at::Tensor& mask,
                   const at::Tensor& weights, const std::vector<std::int64_t>& row_of_anchor,
                   std::int64_t rows) {
  const at::Tensor l = elementwise.to(at::kDouble), w = weights.to(at::kDouble);
  const at::Tensor m = mask.to(at::kDouble);
  const at::Tensor weighted = (l * w).sum(-1);  // per anchor
  if (recipe.normalization == Normalization::kWeightSum)
    return weighted.sum().item<double>() / w.sum().item<double>();
  for (auto r : row_of_anchor) rows = std::max(rows, r + 1);
  at::Tensor row = row_of_anchor.empty() ? at::zeros({l.size(0)}, at::kLong)
                                         : at::tensor(row_of_anchor, at::kLong);
  const at::Tensor numerator = at::zeros({rows}, at::kDouble).index_add_(0, row, weighted);
  if (recipe.normalization == Normalization::kRows)
    return numerator.sum().item<double>() / static_cast<double>(rows);
  // speculators' _LOSS_REDUCTION_EPS (losses/utils.py :10, :301).
  const at::Tensor denominator = at::zeros({rows}, at::kDouble).index_add_(0, row, m.sum(-1));
  return (numerator / (denominator + 1e-5)).mean().item<double>();
}

at::Tensor weighted_cross_entropy(const at::Tensor& logits, const BlockTargets& targets) {
  const at::Tensor w = targets.weight.to(logits.device(), logits.scalar_type());
  return (elementwise_cross_entropy(logits, targets.labels) * w).sum() / w.sum();
}

at::Tensor weighted_kl(const at::Tensor& logits, const at::Tensor& teacher_block_logits,
                       const BlockTargets& targets) {
  const at::Tensor w = targets.weight.to(logits.device(), logits.scalar_type());
  return (elementwise_kl(logits, teacher_block_logits) * w).sum() / w.sum();
}

}  // namespace draftgate::train
