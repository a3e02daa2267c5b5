#pragma once
// Gated DeltaNet (Qwen3.5 / 3.6 linear attention), in two algorithms: a chunked parallel form for
// prefill and a token-by-token recurrent form for decode and tree walks. They compute the same
// recurrence
//   S ← exp(g_t)·S;  S ← S + k_t ⊗ β_t·(v_t − Sᵀk_t);  o_t = Sᵀq_t
// with different float32 reduction orders, so the parity check can compare them.

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "draftgate/arch/target_config.h"
#include "draftgate/model/cache.h"
#include "draftgate/model/weights.h"

namespace draftgate::model {

enum class GdnAlgorithm { kChunked, kRecurrent };

// Per-token recurrence inputs, float32: q, k [T, H, dK] (L2-normalised, q scaled by dK^-0.5), v [T,
// H, dV], g (log decay, <= 0) and beta [T, H].
struct DeltaInputs {
  at::Tensor q, k, v, g, beta;
};

struct DeltaOutputs {
  at::Tensor out;    // [T, H, dV] float32
  at::Tensor state;  // [H, dK, dV] float32, after the last token
};

// One recurrent step from `state` [H, dK, dV]; returns (o_t [H, dV], new state).
std::pair<at::Tensor, at::Tensor> delta_rule_step(const at::Tensor& state, const at::Tensor& q,
                                                  const at::Tensor& k, const at::Tensor& v,
                                                  const at::Tensor& g, const at::Tensor& beta);
DeltaOutputs delta_rule_recurrent(const DeltaInputs& in, const at::Tensor& state);
// Chunks of `chunk` tokens (the last may be shorter; no padding enters the state).
DeltaOutputs delta_rule_chunked(const DeltaInputs& in, const at::Tensor& state,
                                std::int64_t chunk = 64);

class GatedDeltaNet {
 public:
  GatedDeltaNet(const TargetConfig& config, const WeightLoader& weights, const std::string& prefix);

  LinearState new_state(const at::TensorOptions& options) const;
  // Runs pending tokens x [T, hidden] after the committed state. parents empty = a chain (uses
  // `algorithm`); otherwise a tree walked recurrently, each node from its parent's state. Stores
  // what commit() needs.
  at::Tensor extend(const at::Tensor& x, LinearState& state,
                    const std::vector<std::int64_t>& parents, GdnAlgorithm algorithm) const;
  // Keeps the pending nodes `path` (root to node) and drops the rest.
  void commit(LinearState& state, const std::vector<std::int64_t>& path, bool whole_chain) const;

 private:
  at::Tensor conv_chain(const at::Tensor& raw, const at::Tensor& window) const;
  // silu of the convolution over each node's gathered window (a short chain's, a tree's).
  at::Tensor conv_windows(const at::Tensor& raw, const at::Tensor& window,
                          const std::vector<std::int64_t>& parents) const;

  const TargetConfig& c_;
  at::Tensor in_proj_qkv_, in_proj_z_, in_proj_a_, in_proj_b_, conv_w_, dt_bias_, norm_, out_proj_;
  at::Tensor neg_a_;  // −exp(A_log), float32
};

}  // namespace draftgate::model
