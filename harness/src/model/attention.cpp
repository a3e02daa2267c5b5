#include "draftgate/model/attention.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "draftgate/arch/family_table.h"
#include "draftgate/error.h"
#include "draftgate/model/few_row_attention.h"
#include "draftgate/model/fused_rows.h"
#include "draftgate/model/ops.h"

namespace draftgate::model {
namespace {
std::atomic<std::int64_t> score_elements{kDefaultAttentionScoreElements};
}  // namespace

std::int64_t set_attention_score_elements(std::int64_t elements) {
  if (elements < 1) throw std::invalid_argument("attention score elements must be positive");
  return score_elements.exchange(elements);
}

std::int64_t attention_score_elements() { return score_elements.load(); }

std::int64_t attention_query_chunk(std::int64_t heads, std::int64_t keys,
                                   std::int64_t max_elements) {
  return std::max<std::int64_t>(1, max_elements / std::max<std::int64_t>(1, heads * keys));
}

at::Tensor batched_attention(const at::Tensor& q, const at::Tensor& keys, const at::Tensor& values,
                             const at::Tensor& visible, double scale) {
  const std::int64_t t_len = q.size(0), nh = q.size(1), nkv = keys.size(0), d = q.size(2);
  // GQA without copying K/V: query head h uses KV head h / group, so group queries per KV head.
  const std::int64_t group = nh / nkv, rows = keys.size(1), committed = rows - t_len;
  const at::Tensor keys_t = keys.transpose(1, 2);
  const at::Tensor q4 = q.view({t_len, nkv, group, d});
  // Which rows each query sees; only the appended rows given: earlier rows are visible to all.
  const bool masked = t_len > 1 || visible.defined();
  const std::int64_t chunk = attention_query_chunk(nh, rows, attention_score_elements());
  std::vector<at::Tensor> outs;
  for (std::int64_t q0 = 0; q0 < t_len; q0 += chunk) {
    const std::int64_t n = std::min(chunk, t_len - q0);
    const at::Tensor qg = q4.narrow(0, q0, n).permute({1, 2, 0, 3}).reshape({nkv, group * n, d});
    at::Tensor scores = (at::matmul(qg, keys_t) * scale).view({nkv, group, n, rows});
    if (masked) {
      at::Tensor mask;
      if (!visible.defined()) {  // causal chain: query i sees rows up to committed + i
        const at::Tensor query_row =
            at::arange(committed + q0, committed + q0 + n, q.options().dtype(at::kLong));
        mask = at::arange(rows, query_row.options()).unsqueeze(0) <= query_row.unsqueeze(1);
      } else {
        mask = visible.narrow(0, q0, n);
        if (mask.size(1) != rows)
          mask = at::cat({at::ones({n, committed}, mask.options()), mask}, 1);
      }
      scores = scores.masked_fill(mask.logical_not(), -INFINITY);
    }
    const at::Tensor probs = at::softmax(scores, -1, at::kFloat).to(q.scalar_type());
    outs.push_back(at::matmul(probs.view({nkv, group * n, rows}), values)
                       .view({nkv, group, n, d})
                       .permute({2, 0, 1, 3})
                       .reshape({n, nh * d}));
  }
  return outs.size() == 1 ? outs.front() : at::cat(outs, 0);
}

Attention::Attention(const TargetConfig& c, const WeightLoader& w, const std::string& p) : c_(c) {
  const std::int64_t q_width = c.num_heads * c.head_dim * (c.attn_output_gate ? 2 : 1);
  q_proj_ = w.get_linear(p + "q_proj.weight", {q_width, c.hidden});
  k_proj_ = w.get_linear(p + "k_proj.weight", {c.num_kv_heads * c.head_dim, c.hidden});
  v_proj_ = w.get_linear(p + "v_proj.weight", {c.num_kv_heads * c.head_dim, c.hidden});
  o_proj_ = w.get_linear(p + "o_proj.weight", {c.hidden, c.num_heads * c.head_dim});
  if (c.traits.qk_norm) {
    q_norm_ = w.get(p + "q_norm.weight", {c.head_dim});
    k_norm_ = w.get(p + "k_norm.weight", {c.head_dim});
  } else {
    // A family without q/k norms would run such a checkpoint without them (a Qwen3 checkpoint
    // whose config says model_type llama).
    for (const char* norm : {"q_norm.weight", "k_norm.weight"})
      if (w.contains(p + norm))
        throw Error(w.checkpoint_dir(),
                    "tensor \"" + p + norm + "\" is a q/k norm, which " + family_name(c.family) +
                        " attention does not have",
                    "the config's model_type names another family than the weights were trained "
                    "as (Qwen3 has q/k norms)");
  }
}

at::Tensor Attention::head_norm(const at::Tensor& x, const at::Tensor& weight) const {
  return c_.traits.qk_norm ? rms_norm(x, weight, c_.rms_eps, c_.traits.norm) : x;
}

void Attention::append_kv(const at::Tensor& x, const RopeTables& rope, KVCache& cache) const {
  const std::vector<at::Tensor> kv = dense(x, {k_proj_, v_proj_});
  append_projected(kv[0], kv[1], rope, cache);
}

void Attention::append_projected(const at::Tensor& k, const at::Tensor& v, const RopeTables& rope,
                                 KVCache& cache) const {
  const std::int64_t t_len = k.size(0), nkv = c_.num_kv_heads, d = c_.head_dim;
  cache.append(apply_rope(head_norm(k.view({t_len, nkv, d}), k_norm_), rope),
               v.view({t_len, nkv, d}));
}

at::Tensor Attention::extend(const at::Tensor& x, const RopeTables& rope, const at::Tensor& visible,
                             KVCache& cache) const {
  const std::int64_t t_len = x.size(0), nh = c_.num_heads, d = c_.head_dim;
  const std::vector<at::Tensor> qkv = dense(x, {q_proj_, k_proj_, v_proj_});
  at::Tensor q = qkv[0], gate;
  if (c_.attn_output_gate) {
    const auto halves = q.view({t_len, nh, 2 * d}).split(d, -1);  // per head: [query | gate]
    q = halves[0];
    gate = halves[1];
  } else {
    q = q.view({t_len, nh, d});
  }
  q = apply_rope(head_norm(q, q_norm_), rope);
  append_projected(qkv[1], qkv[2], rope, cache);

  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  const auto output = [&](const at::Tensor& out) {
    if (!c_.attn_output_gate) return dense(out, o_proj_);
    // The gate where it lies, in one pass (a copy, sigmoid and product were ~55 us a verify layer
    // on the calling thread).
    if (fused::takes_sigmoid_mul(out, gate))
      return dense(fused::bf16_sigmoid_mul(out, gate), o_proj_);
    return dense(out * at::sigmoid(gate.reshape({t_len, nh * d})), o_proj_);
  };
  const at::Tensor keys = cache.keys(), values = cache.values();  // views: an operator call each
  if (few_row_attention_applies(q, keys, values, visible))
    return output(few_row_attention(q, keys, values, visible, scale));

  return output(batched_attention(q, keys, values, visible, scale));
}

}  // namespace draftgate::model
