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

SparseMoe::SparseMoe(const TargetConfig& c, const WeightLoader& w, const std::string& prefix,
                     ExpertLoading loading)
    : router_(w.get(prefix + "gate.weight", {c.num_experts, c.hidden})),
      k_(c.experts_per_token),
      renormalise_(c.norm_topk_prob),
      prefix_(prefix),
      num_experts_(c.num_experts),
      hidden_(c.hidden),
      inter_(c.moe_intermediate),
      fused_(w.contains(prefix + "experts.gate_up_proj")) {
  if (fused_ && w.contains(prefix + "experts.0.gate_proj.weight"))
    throw Error(w.checkpoint_dir(),
                "holds the experts of " + prefix.substr(0, prefix.size() - 1) +
                    " twice: fused (\"" + prefix + "experts.gate_up_proj\") and per expert (\"" +
                    prefix + "experts.0.gate_proj.weight\")",
                "keep one layout; a re-save that fused the experts should drop the others");
  if (loading == ExpertLoading::kOnUse) {
    on_use_ = &w;
  } else if (fused_) {
    // The experts compute on views of the two fused tensors (bf16 as stored in a float32 load,
    // as every linear weight: WeightLoader::get_linear).
    const at::Tensor gate_up =
        w.get_linear(fused_name("gate_up_proj"), fused_shape("gate_up_proj"));
    const at::Tensor down = w.get_linear(fused_name("down_proj"), fused_shape("down_proj"));
    experts_.reserve(num_experts_);
    for (std::int64_t e = 0; e < num_experts_; ++e)
      experts_.emplace_back(gate_up[e].narrow(0, 0, inter_), gate_up[e].narrow(0, inter_, inter_),
                            down[e]);
  } else {
    experts_.reserve(num_experts_);
    for (std::int64_t e = 0; e < num_experts_; ++e) experts_.push_back(load_expert(w, e));
  }
  if (!c.traits.shared_expert) return;
  shared_.emplace(w, prefix + "shared_expert.", c.hidden, c.shared_expert_intermediate);
  shared_gate_ = w.get(prefix + "shared_expert_gate.weight", {1, c.hidden});
}

std::string SparseMoe::fused_name(const char* projection) const {
  return prefix_ + "experts." + projection;
}

std::vector<std::int64_t> SparseMoe::fused_shape(const char* projection) const {
  // Stored fused (Qwen3.5 / 3.6 MoE releases, transformers' Qwen3_5MoeExperts): gate_up_proj
  // [E, 2I, H] holds each expert's gate rows then its up rows (the reference's chunk(2, -1) of
  // its output), down_proj [E, H, I].
  if (std::string(projection) == "gate_up_proj") return {num_experts_, 2 * inter_, hidden_};
  return {num_experts_, hidden_, inter_};
}

SwiGluMlp SparseMoe::load_expert(const WeightLoader& w, std::int64_t e) const {
  if (!fused_) return SwiGluMlp(w, prefix_ + "experts." + std::to_string(e) + ".", hidden_, inter_);
  const at::Tensor gate_up =
      w.get_linear_slice(fused_name("gate_up_proj"), fused_shape("gate_up_proj"), e);
  return SwiGluMlp(gate_up.narrow(0, 0, inter_), gate_up.narrow(0, inter_, inter_),
                   w.get_linear_slice(fused_name("down_proj"), fused_shape("down_proj"), e));
}

at::Tensor SparseMoe::operator()(const at::Tensor& x) const {
  const Routing r = route(dense(x, router_), k_, renormalise_, x.scalar_type());
  // The (position, slot) entries grouped by expert: a stable sort of the flattened [T·k] choices.
  const at::Tensor flat = r.experts.reshape({-1});
  const at::Tensor order = std::get<1>(flat.sort(/*stable=*/true, 0, false));
  const at::Tensor counts = at::bincount(flat, {}, num_experts_);
  const at::Tensor counts_cpu = counts.to(at::kCPU);
  const auto* count = counts_cpu.data_ptr<std::int64_t>();
  const at::Tensor weights = r.weights.reshape({-1});
  at::Tensor out = at::zeros_like(x);
  std::int64_t start = 0;
  for (std::int64_t e = 0; e < num_experts_; ++e) {
    // Loaded on use: every expert, routed or not, is read and checked as an eager load checks it;
    // where an expert is converted, one converted copy is held at a time.
    std::optional<SwiGluMlp> loaded;
    if (on_use_ != nullptr) loaded.emplace(load_expert(*on_use_, e));
    if (count[e] == 0) continue;
    const SwiGluMlp& expert = loaded ? *loaded : experts_[e];
    const at::Tensor entries = order.narrow(0, start, count[e]);
    start += count[e];
    const at::Tensor positions = at::div(entries, k_, "floor");
    const at::Tensor y =
        expert(x.index_select(0, positions)) * weights.index_select(0, entries).unsqueeze(1);
    out = out.index_add(0, positions, y);
  }
  if (shared_) out = out + at::sigmoid(dense(x, shared_gate_)) * (*shared_)(x);
  return out;
}

}  // namespace draftgate::model
