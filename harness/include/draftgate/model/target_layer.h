#pragma once
// One target decoder layer (norms, a full-attention or Gated DeltaNet mixer, a dense or
// routed-expert MLP), shared by the in-memory TargetModel and the StreamedTarget so both run the
// very same arithmetic.

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "draftgate/arch/target_config.h"
#include "draftgate/model/attention.h"
#include "draftgate/model/cache.h"
#include "draftgate/model/decoder_layer_parts.h"
#include "draftgate/model/gated_delta_net.h"
#include "draftgate/model/moe.h"
#include "draftgate/model/weights.h"

namespace draftgate::model {

// The hidden states between layers: h, plus the MLP output a layer has not yet added to its
// residual where `pending` is defined (the next layer adds it in one pass with its input norm, no
// separate add on the calling thread: ~10 us a 16-row layer).
struct HiddenStream {
  at::Tensor h, pending;
  at::Tensor summed() const { return pending.defined() ? h + pending : h; }  // the same bits
};

struct TargetLayer {
  LayerNorms norms;
  std::unique_ptr<Attention> attention;  // exactly one of the two mixers
  std::unique_ptr<GatedDeltaNet> linear;
  std::unique_ptr<SwiGluMlp> dense;  // exactly one of the two MLPs (config.is_sparse(index))
  std::unique_ptr<SparseMoe> moe;

  // Loads layer `index` from `<prefix>` (the layer's path plus "."); a routed-expert MLP reads its
  // experts as `experts` says (kOnUse: `weights` must outlive the layer).
  static TargetLayer load(const TargetConfig& config, const WeightLoader& weights,
                          const std::string& prefix, std::int64_t index,
                          ExpertLoading experts = ExpertLoading::kEager);

  // h + mixer(input_norm(h)), then + mlp(post_norm(·)): the layer's output for hidden states h.
  at::Tensor extend(const at::Tensor& h, const TargetConfig& config, const RopeTables& rope,
                    const at::Tensor& visible, const std::vector<std::int64_t>& parents,
                    GdnAlgorithm gdn, KVCache& kv, LinearState& linear_state) const;
  // The same with the last add left pending: {h + mixer(·), mlp(post_norm(·))}.
  HiddenStream extend(const HiddenStream& in, const TargetConfig& config, const RopeTables& rope,
                      const at::Tensor& visible, const std::vector<std::int64_t>& parents,
                      GdnAlgorithm gdn, KVCache& kv, LinearState& linear_state) const;
};

}  // namespace draftgate::model
