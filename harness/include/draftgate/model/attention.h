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

  // Appends the K/V of x [T, hidden] (k_norm, then RoPE at `rope`'s positions) to `cache`.
  void append_kv(const at::Tensor& x, const RopeTables& rope, KVCache& cache) const;
  // Appends x's K/V, then attends x's queries (at `rope`'s positions) over every cache row.
  // `visible` says which rows each query sees: [T, T] for the rows just appended (earlier rows
  // always visible), [T, rows] for all of them, or undefined for a causal chain.
  at::Tensor extend(const at::Tensor& x, const RopeTables& rope, const at::Tensor& visible,
                    KVCache& cache) const;

 private:
  const TargetConfig& c_;
  at::Tensor q_proj_, k_proj_, v_proj_, o_proj_, q_norm_, k_norm_;
};

}  // namespace draftgate::model
