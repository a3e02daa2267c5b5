#include "draftgate/model/attention.h"

#include <cmath>

#include "draftgate/model/ops.h"

namespace draftgate::model {

Attention::Attention(const TargetConfig& c, const WeightLoader& w, const std::string& p) : c_(c) {
  const std::int64_t q_width = c.num_heads * c.head_dim * (c.attn_output_gate ? 2 : 1);
  q_proj_ = w.get(p + "q_proj.weight", {q_width, c.hidden});
  k_proj_ = w.get(p + "k_proj.weight", {c.num_kv_heads * c.head_dim, c.hidden});
  v_proj_ = w.get(p + "v_proj.weight", {c.num_kv_heads * c.head_dim, c.hidden});
  o_proj_ = w.get(p + "o_proj.weight", {c.hidden, c.num_heads * c.head_dim});
  q_norm_ = w.get(p + "q_norm.weight", {c.head_dim});
  k_norm_ = w.get(p + "k_norm.weight", {c.head_dim});
}

void Attention::append_kv(const at::Tensor& x, const RopeTables& rope, KVCache& cache) const {
  const std::int64_t t_len = x.size(0), nkv = c_.num_kv_heads, d = c_.head_dim;
  const at::Tensor k = apply_rope(
      rms_norm(dense(x, k_proj_).view({t_len, nkv, d}), k_norm_, c_.rms_eps, c_.traits.norm), rope);
  cache.append(k, dense(x, v_proj_).view({t_len, nkv, d}));
}

at::Tensor Attention::extend(const at::Tensor& x, const RopeTables& rope, const at::Tensor& visible,
                             KVCache& cache) const {
  const std::int64_t t_len = x.size(0), nh = c_.num_heads, nkv = c_.num_kv_heads, d = c_.head_dim;
  const NormStyle style = c_.traits.norm;
  at::Tensor q = dense(x, q_proj_), gate;
  if (c_.attn_output_gate) {
    const auto halves = q.view({t_len, nh, 2 * d}).split(d, -1);  // per head: [query | gate]
    q = halves[0];
    gate = halves[1].reshape({t_len, nh * d});
  } else {
    q = q.view({t_len, nh, d});
  }
  q = apply_rope(rms_norm(q, q_norm_, c_.rms_eps, style), rope);
  append_kv(x, rope, cache);

  // GQA without copying K/V: query head h uses KV head h / group, so group queries per KV head.
  const std::int64_t group = nh / nkv, rows = cache.rows(), committed = rows - t_len;
  const at::Tensor qg =
      q.view({t_len, nkv, group, d}).permute({1, 2, 0, 3}).reshape({nkv, group * t_len, d});
  at::Tensor scores =
      at::matmul(qg, cache.keys().transpose(1, 2)) * (1.0 / std::sqrt(static_cast<double>(d)));
  scores = scores.view({nkv, group, t_len, rows});
  if (t_len > 1 || visible.defined()) {
    at::Tensor mask =
        visible.defined() ? visible : at::ones({t_len, t_len}, x.options().dtype(at::kBool)).tril();
    if (mask.size(1) != rows)  // only the appended rows given: earlier rows are visible to all
      mask = at::cat({at::ones({t_len, committed}, mask.options()), mask}, 1);
    scores = scores.masked_fill(mask.logical_not(), -INFINITY);
  }
  const at::Tensor probs = at::softmax(scores, -1, at::kFloat).to(x.scalar_type());
  const at::Tensor out = at::matmul(probs.view({nkv, group * t_len, rows}), cache.values())
                             .view({nkv, group, t_len, d})
                             .permute({2, 0, 1, 3})
                             .reshape({t_len, nh * d});
  return dense(c_.attn_output_gate ? out * at::sigmoid(gate) : out, o_proj_);
}

}  // namespace draftgate::model
