#include "draftgate/model/moe.h"

#include "draftgate/error.h"
#include "draftgate/model/ops.h"

namespace draftgate::model {

Routing route(const at::Tensor& logits, std::int64_t k, bool renormalise, at::ScalarType dtype) {
  const at::Tensor probs = at::softmax(logits.to(at::kFloat), -1);
  auto [weights, experts] = at::topk(probs, k, -1);
  if (renormalise) weights = weights / weights.sum(-1, /*keepdim=*/true);
  return {experts, weights.to(dtype)};
}

SparseMoe::SparseMoe(const TargetConfig& c, const WeightLoader& w, const std::string& prefix)
    : router_(w.get(prefix + "gate.weight", {c.num_experts, c.hidden})),
      k_(c.experts_per_token),
      renormalise_(c.norm_topk_prob) {
  experts_.reserve(c.num_experts);
  const std::string fused = prefix + "experts.gate_up_proj";
  if (w.contains(fused)) {
    // Stored fused (Qwen3.5 / 3.6 MoE releases, transformers' Qwen3_5MoeExperts): gate_up_proj
    // [E, 2I, H] holds each expert's gate rows then its up rows (the reference's chunk(2, -1) of
    // its output), down_proj [E, H, I]. The experts compute on views of the two tensors.
    const std::string per_expert = prefix + "experts.0.gate_proj.weight";
    if (w.contains(per_expert))
      throw Error(w.checkpoint_dir(),
                  "holds the experts of " + prefix.substr(0, prefix.size() - 1) +
                      " twice: fused (\"" + fused + "\") and per expert (\"" + per_expert + "\")",
                  "keep one layout; a re-save that fused the experts should drop the others");
    const std::int64_t inter = c.moe_intermediate;
    const at::Tensor gate_up = w.get(fused, {c.num_experts, 2 * inter, c.hidden});
    const at::Tensor down = w.get(prefix + "experts.down_proj", {c.num_experts, c.hidden, inter});
    for (std::int64_t e = 0; e < c.num_experts; ++e)
      experts_.emplace_back(gate_up[e].narrow(0, 0, inter), gate_up[e].narrow(0, inter, inter),
                            down[e]);
  } else {
    for (std::int64_t e = 0; e < c.num_experts; ++e)
      experts_.emplace_back(w, prefix + "experts." + std::to_string(e) + ".", c.hidden,
                            c.moe_intermediate);
  }
  if (!c.traits.shared_expert) return;
  shared_.emplace(w, prefix + "shared_expert.", c.hidden, c.shared_expert_intermediate);
  shared_gate_ = w.get(prefix + "shared_expert_gate.weight", {1, c.hidden});
}

at::Tensor SparseMoe::operator()(const at::Tensor& x) const {
  const Routing r = route(dense(x, router_), k_, renormalise_, x.scalar_type());
  // The (position, slot) entries grouped by expert: a stable sort of the flattened [T·k] choices.
  const at::Tensor flat = r.experts.reshape({-1});
  const at::Tensor order = std::get<1>(flat.sort(/*stable=*/true, 0, false));
  const at::Tensor counts = at::bincount(flat, {}, static_cast<std::int64_t>(experts_.size()));
  const at::Tensor counts_cpu = counts.to(at::kCPU);
  const auto* count = counts_cpu.data_ptr<std::int64_t>();
  const at::Tensor weights = r.weights.reshape({-1});
  at::Tensor out = at::zeros_like(x);
  std::int64_t start = 0;
  for (std::size_t e = 0; e < experts_.size(); ++e) {
    if (count[e] == 0) continue;
    const at::Tensor entries = order.narrow(0, start, count[e]);
    start += count[e];
    const at::Tensor positions = at::div(entries, k_, "floor");
    const at::Tensor y =
        experts_[e](x.index_select(0, positions)) * weights.index_select(0, entries).unsqueeze(1);
    out = out.index_add(0, positions, y);
  }
  if (shared_) out = out + at::sigmoid(dense(x, shared_gate_)) * (*shared_)(x);
  return out;
}

}  // namespace draftgate::model
