#pragma once
// Full (softmax) attention of every family: per-head q/k RMSNorm before RoPE (traits.qk_norm), GQA,
// and for Qwen3.5 the gated output (q_proj doubled per head into [query | gate], output ⊙
// sigmoid(gate)) and partial rotary.

#include <ATen/ATen.h>

#include <string>

#include "draftgate/arch/target_config.h"
#include "draftgate/model/cache.h"
#include "draftgate/model/ops.h"
#include "draftgate/model/weights.h"

namespace draftgate::model {

// Attention over S positions never holds S × S × heads scores at once: the queries run in chunks
// whose scores [heads, queries, keys] stay within this many elements (each chunk allocates a few
// such buffers: scores, mask fill, the float32 softmax). A chunk is at least one query. Every query
// row is computed exactly as without chunking (same keys, same mask values, same row-wise softmax).
inline constexpr std::int64_t kDefaultAttentionScoreElements = std::int64_t{1} << 24;  // 64 MiB f32
// The process-wide limit (set once at start, or by a test); returns the previous one.
std::int64_t set_attention_score_elements(std::int64_t elements);
std::int64_t attention_score_elements();
// Queries per chunk for `heads` query heads over `keys` keys under `max_elements`.
std::int64_t attention_query_chunk(std::int64_t heads, std::int64_t keys,
                                   std::int64_t max_elements);

// Softmax attention of q [T, heads, D] over keys and values [kv_heads, rows, D] (the T queries' own
// rows last; visible as Attention::extend takes it) as batched products, the queries in chunks
// under attention_score_elements(): q·kᵀ cast to q's dtype, scaled, masked, softmax in float32,
// the probabilities cast, times the values. Returns [T, heads · D]. What a layer runs where
// few_row_attention does not apply.
at::Tensor batched_attention(const at::Tensor& q, const at::Tensor& keys, const at::Tensor& values,
                             const at::Tensor& visible, double scale);

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
  // Per-head q/k RMSNorm where the family has one (traits.qk_norm), else x.
  at::Tensor head_norm(const at::Tensor& x, const at::Tensor& weight) const;
  // Appends the rows of already projected k and v [T, kv_heads · head_dim].
  void append_projected(const at::Tensor& k, const at::Tensor& v, const RopeTables& rope,
                        KVCache& cache) const;

  const TargetConfig& c_;
  at::Tensor q_proj_, k_proj_, v_proj_, o_proj_, q_norm_, k_norm_;
};

}  // namespace draftgate::model
