#pragma once
// Full (softmax) attention of both families: per-head q/k RMSNorm before RoPE, GQA, and for Qwen3.5
// the gated output (q_proj doubled per head into [query | gate], output ⊙ sigmoid(gate)) and
// partial rotary.

#include <ATen/ATen.h>

#include <string>

#include "draftgate/model/cache.h"
#include "draftgate/model/ops.h"
#include "draftgate/model/target_config.h"
#include "draftgate/model/weights.h"

namespace draftgate::model {

class Attention {
 public:
  Attention(const TargetConfig& config, const WeightLoader& weights, const std::string& prefix);

  // x [T, hidden] rotated by `rope` (its positions); appends its K/V to `cache` (pending rows).
  // `visible` [T, T] bool says which pending tokens each one sees (undefined = causal chain);
  // committed rows are always visible.
  at::Tensor extend(const at::Tensor& x, const RopeTables& rope, const at::Tensor& visible,
                    KVCache& cache) const;

 private:
  const TargetConfig& c_;
  at::Tensor q_proj_, k_proj_, v_proj_, o_proj_, q_norm_, k_norm_;
};

}  // namespace draftgate::model
