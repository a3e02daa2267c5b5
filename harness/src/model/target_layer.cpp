#include "draftgate/model/target_layer.h"

namespace draftgate::model {

TargetLayer TargetLayer::load(const TargetConfig& c, const WeightLoader& w,
                              const std::string& prefix, std::int64_t index,
                              ExpertLoading experts) {
  TargetLayer l{LayerNorms(w, prefix, c.hidden), nullptr, nullptr, nullptr, nullptr};
  if (c.is_sparse(index))
    l.moe = std::make_unique<SparseMoe>(c, w, prefix + "mlp.", experts);
  else
    l.dense = std::make_unique<SwiGluMlp>(w, prefix + "mlp.", c.hidden, c.intermediate);
  if (c.is_linear(index))
    l.linear = std::make_unique<GatedDeltaNet>(c, w, prefix + "linear_attn.");
  else
    l.attention = std::make_unique<Attention>(c, w, prefix + "self_attn.");
  return l;
}

at::Tensor TargetLayer::extend(const at::Tensor& h, const TargetConfig& c, const RopeTables& rope,
                               const at::Tensor& visible, const std::vector<std::int64_t>& parents,
                               GdnAlgorithm gdn, KVCache& kv, LinearState& linear_state) const {
  return extend(HiddenStream{h, {}}, c, rope, visible, parents, gdn, kv, linear_state).summed();
}

HiddenStream TargetLayer::extend(const HiddenStream& in, const TargetConfig& c,
                                 const RopeTables& rope, const at::Tensor& visible,
                                 const std::vector<std::int64_t>& parents, GdnAlgorithm gdn,
                                 KVCache& kv, LinearState& linear_state) const {
  const auto [h, normed] = in.pending.defined()
                               ? norms.add_mixer_input(in.h, in.pending, c.rms_eps, c.traits.norm)
                               : std::pair<at::Tensor, at::Tensor>{
                                     in.h, norms.mixer_input(in.h, c.rms_eps, c.traits.norm)};
  const auto [mixed, x] =
      norms.add_mlp_input(h,
                          linear ? linear->extend(normed, linear_state, parents, gdn)
                                 : attention->extend(normed, rope, visible, kv),
                          c.rms_eps, c.traits.norm);
  return {mixed, moe ? (*moe)(x) : (*dense)(x)};
}

}  // namespace draftgate::model
