#include "naive_target.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "draftgate/arch/family_table.h"
#include "draftgate/layout/decoder_stack.h"
#include "draftgate/model/tensor_view.h"

namespace draftgate::testing {
namespace {

using at::Tensor;

// How a family computes, as this reference reads transformers' modeling files.
struct Formulas {
  bool hybrid;   // Qwen3.5: (1 + w) norms, gated q_proj, partial RoPE, Gated DeltaNet layers
  bool qk_norm;  // per-head q/k RMSNorm before RoPE (Qwen3, Qwen3.5; not Llama)
  bool sparse_moe = false;  // Qwen3MoeSparseMoeBlock on the layers Qwen3MoeDecoderLayer picks
  // Qwen3_5MoeSparseMoeBlock (modeling_qwen3_5_moe.py @009e78d6) instead: the top-k weights always
  // renormalised (Qwen3_5MoeTopKRouter), plus sigmoid(shared_expert_gate · x) · shared_expert(x).
  bool shared_expert_block = false;
};

struct Naive {
  const io::Checkpoint& ckpt;
  const nlohmann::json& cfg;
  bool hybrid;
  bool qk_norm;
  bool shared_expert_block;
  double eps;

  Tensor w(const std::string& name) const { return io::load_tensor(ckpt, name).to(at::kDouble); }
  std::int64_t get(const char* key) const { return cfg.at(key).get<std::int64_t>(); }

  // One row: x / sqrt(mean(x²) + eps) · (w or 1 + w).
  Tensor norm_row(const Tensor& x, const Tensor& weight) const {
    const double ms = (x * x).mean().item<double>();
    return x / std::sqrt(ms + eps) * (hybrid ? weight + 1.0 : weight);
  }
  Tensor norm_rows(const Tensor& x, const Tensor& weight) const {
    Tensor out = at::empty_like(x);
    for (std::int64_t t = 0; t < x.size(0); ++t) out[t] = norm_row(x[t], weight);
    return out;
  }

  // NeoX rotate-half on the first `rot` dims of one head vector, pairing dim j with dim j + rot/2.
  static Tensor rope(const Tensor& x, std::int64_t pos, std::int64_t rot, double theta) {
    Tensor out = x.clone();
    const std::int64_t half = rot / 2;
    for (std::int64_t j = 0; j < half; ++j) {
      const double angle =
          static_cast<double>(pos) * std::pow(theta, -2.0 * static_cast<double>(j) / rot);
      const double a = x[j].item<double>(), b = x[j + half].item<double>();
      out[j] = a * std::cos(angle) - b * std::sin(angle);
      out[j + half] = b * std::cos(angle) + a * std::sin(angle);
    }
    return out;
  }

  Tensor attention(const std::string& p, const Tensor& x) const {
    const std::int64_t t_len = x.size(0), nh = get("num_attention_heads"),
                       nkv = get("num_key_value_heads");
    const std::int64_t d = get("head_dim");
    const std::int64_t rot =
        hybrid ? static_cast<std::int64_t>(d * cfg.at("partial_rotary_factor").get<double>()) : d;
    const double theta = hybrid ? cfg.at("rope_parameters").at("rope_theta").get<double>()
                                : cfg.at("rope_theta").get<double>();
    const Tensor wq = w(p + "q_proj.weight"), wk = w(p + "k_proj.weight"),
                 wv = w(p + "v_proj.weight");
    const Tensor qn = qk_norm ? w(p + "q_norm.weight") : Tensor(),
                 kn = qk_norm ? w(p + "k_norm.weight") : Tensor();
    const auto head_norm = [&](const Tensor& row, const Tensor& weight) {
      return qk_norm ? norm_row(row, weight) : row;
    };
    const std::int64_t qstride = hybrid ? 2 * d : d;
    std::vector<std::vector<Tensor>> q(t_len), k(t_len), v(t_len), gate(t_len);
    for (std::int64_t t = 0; t < t_len; ++t) {
      const Tensor qf = at::mv(wq, x[t]), kf = at::mv(wk, x[t]), vf = at::mv(wv, x[t]);
      for (std::int64_t h = 0; h < nh; ++h) {
        q[t].push_back(rope(head_norm(qf.narrow(0, h * qstride, d), qn), t, rot, theta));
        if (hybrid) gate[t].push_back(qf.narrow(0, h * qstride + d, d));
      }
      for (std::int64_t h = 0; h < nkv; ++h) {
        k[t].push_back(rope(head_norm(kf.narrow(0, h * d, d), kn), t, rot, theta));
        v[t].push_back(vf.narrow(0, h * d, d));
      }
    }
    Tensor out = at::zeros({t_len, nh * d}, at::kDouble);
    for (std::int64_t t = 0; t < t_len; ++t) {
      for (std::int64_t h = 0; h < nh; ++h) {
        const std::int64_t kvh = h / (nh / nkv);
        std::vector<double> scores;
        double top = -INFINITY;
        for (std::int64_t s = 0; s <= t; ++s) {
          scores.push_back(at::dot(q[t][h], k[s][kvh]).item<double>() /
                           std::sqrt(static_cast<double>(d)));
          top = std::max(top, scores.back());
        }
        double total = 0;
        for (double& sc : scores) total += (sc = std::exp(sc - top));
        Tensor o = at::zeros({d}, at::kDouble);
        for (std::int64_t s = 0; s <= t; ++s) o += scores[s] / total * v[s][kvh];
        if (hybrid) o = o * at::sigmoid(gate[t][h]);
        out[t].narrow(0, h * d, d).copy_(o);
      }
    }
    return at::matmul(out, w(p + "o_proj.weight").t());
  }

  Tensor gated_delta_net(const std::string& p, const Tensor& x) const {
    const std::int64_t t_len = x.size(0), nk = get("linear_num_key_heads"),
                       nv = get("linear_num_value_heads");
    const std::int64_t dk = get("linear_key_head_dim"), dv = get("linear_value_head_dim");
    const std::int64_t kernel = get("linear_conv_kernel_dim");
    const Tensor raw = at::matmul(x, w(p + "in_proj_qkv.weight").t());  // [T, conv]
    const Tensor conv_w = w(p + "conv1d.weight").squeeze(1);            // [conv, K]
    Tensor mixed = at::zeros_like(raw);
    for (std::int64_t t = 0; t < t_len; ++t)
      for (std::int64_t j = 0; j < kernel; ++j) {
        const std::int64_t src = t - (kernel - 1) + j;
        if (src >= 0) mixed[t] += conv_w.select(1, j) * raw[src];
      }
    mixed = mixed * at::sigmoid(mixed);  // SiLU
    const Tensor z = at::matmul(x, w(p + "in_proj_z.weight").t());
    const Tensor beta = at::sigmoid(at::matmul(x, w(p + "in_proj_b.weight").t()));
    const Tensor a = at::matmul(x, w(p + "in_proj_a.weight").t());
    const Tensor a_log = w(p + "A_log"), dt_bias = w(p + "dt_bias"), norm_w = w(p + "norm.weight");
    Tensor out = at::zeros({t_len, nv * dv}, at::kDouble);
    for (std::int64_t h = 0; h < nv; ++h) {
      const std::int64_t kh = h / (nv / nk);
      Tensor state = at::zeros({dk, dv}, at::kDouble);
      for (std::int64_t t = 0; t < t_len; ++t) {
        Tensor q = mixed[t].narrow(0, kh * dk, dk), k = mixed[t].narrow(0, nk * dk + kh * dk, dk);
        const Tensor v = mixed[t].narrow(0, 2 * nk * dk + h * dv, dv);
        q = q / std::sqrt((q * q).sum().item<double>() + 1e-6) / std::sqrt(static_cast<double>(dk));
        k = k / std::sqrt((k * k).sum().item<double>() + 1e-6);
        const double sp = std::log1p(std::exp(a[t][h].item<double>() + dt_bias[h].item<double>()));
        const double g = -std::exp(a_log[h].item<double>()) * sp;
        state = state * std::exp(g);
        state = state + at::outer(k, beta[t][h].item<double>() * (v - at::mv(state.t(), k)));
        const Tensor o = at::mv(state.t(), q);
        const Tensor zg = z[t].narrow(0, h * dv, dv);
        const double ms = (o * o).mean().item<double>();
        out[t].narrow(0, h * dv, dv).copy_(o / std::sqrt(ms + eps) * norm_w * zg * at::sigmoid(zg));
      }
    }
    return at::matmul(out, w(p + "out_proj.weight").t());
  }

  // down(silu(gate(x)) · up(x)) of one row, from `<p>{gate,up,down}_proj.weight`.
  Tensor swiglu_row(const std::string& p, const Tensor& x) const {
    const Tensor gate = at::mv(w(p + "gate_proj.weight"), x);
    const Tensor up = at::mv(w(p + "up_proj.weight"), x);
    return at::mv(w(p + "down_proj.weight"), gate * at::sigmoid(gate) * up);
  }

  // Expert e on one row: stored per expert (`<p>experts.{e}.*`), or fused as Qwen3_5MoeExperts
  // holds them (modeling_qwen3_5_moe.py @009e78d6): gate, up = linear(x, gate_up_proj[e]).chunk(2),
  // then linear(silu(gate) * up, down_proj[e]).
  Tensor expert_row(const std::string& p, std::int64_t e, const Tensor& x) const {
    if (!ckpt.contains(p + "experts.gate_up_proj"))
      return swiglu_row(p + "experts." + std::to_string(e) + ".", x);
    const auto halves = at::mv(w(p + "experts.gate_up_proj")[e], x).chunk(2);
    return at::mv(w(p + "experts.down_proj")[e], halves[0] * at::sigmoid(halves[0]) * halves[1]);
  }

  // Qwen3MoeDecoderLayer.__init__ (modeling_qwen3_moe.py @16b6c53c): sparse unless listed in
  // mlp_only_layers, when num_experts > 0 and (layer + 1) % decoder_sparse_step == 0.
  bool sparse_layer(std::int64_t layer) const {
    const auto only = cfg.value("mlp_only_layers", std::vector<std::int64_t>{});
    const std::int64_t step = cfg.value("decoder_sparse_step", std::int64_t{1});
    return std::find(only.begin(), only.end(), layer) == only.end() &&
           cfg.value("num_experts", std::int64_t{0}) > 0 && (layer + 1) % step == 0;
  }

  // Qwen3MoeSparseMoeBlock.forward, one position at a time: router logits, softmax over the
  // experts, torch.topk of k (the reference's own call; its order and tie rule are torch's),
  // renormalised when norm_topk_prob, the weighted sum of the chosen experts.
  Tensor sparse_moe(const std::string& p, const Tensor& x) const {
    const std::int64_t experts = get("num_experts"), k = get("num_experts_per_tok");
    const bool renormalise = shared_expert_block || cfg.value("norm_topk_prob", false);
    const Tensor router = w(p + "gate.weight");
    Tensor out = at::zeros_like(x);
    for (std::int64_t t = 0; t < x.size(0); ++t) {
      // One dot product per expert: equal router rows give bit-equal logits (a tie stays a tie).
      Tensor logits = at::empty({experts}, at::kDouble);
      for (std::int64_t e = 0; e < experts; ++e) logits[e] = at::dot(router[e], x[t]);
      const Tensor probs = at::exp(logits - logits.max()) / at::exp(logits - logits.max()).sum();
      auto [top, chosen] = at::topk(probs, k);
      if (renormalise) top = top / top.sum();
      for (std::int64_t j = 0; j < k; ++j)
        out[t] += top[j].item<double>() * expert_row(p, chosen[j].item<std::int64_t>(), x[t]);
      if (shared_expert_block) {
        const double gate = at::dot(w(p + "shared_expert_gate.weight")[0], x[t]).item<double>();
        out[t] += 1.0 / (1.0 + std::exp(-gate)) * swiglu_row(p + "shared_expert.", x[t]);
      }
    }
    return out;
  }
};

// The family comes from the table; its formulas are this file's own, written from transformers
// (never the table's traits, so a wrong trait in the table shows as a difference). A family
// without a case here does not compile under -Wswitch and throws at run time.
Formulas formulas_of(model::Family family) {
  switch (family) {
    case model::Family::kQwen3:
      return {false, true};  // modeling_qwen3.py: w·x̂ norms, q/k norm, full RoPE, no gate
    case model::Family::kQwen3_5:
      return {true, true};  // modeling_qwen3_5.py: (1+w), gated q_proj, partial RoPE, GDN
    case model::Family::kLlama:
      return {false, false};  // modeling_llama.py: w·x̂ norms, no q/k norm, full RoPE
    case model::Family::kQwen3Moe:
      return {false, true, true};  // modeling_qwen3_moe.py: Qwen3 attention, routed experts
    case model::Family::kQwen3_5Moe:
      return {true, true, true, true};  // modeling_qwen3_5_moe.py: the hybrid, routed + shared
  }
  throw std::logic_error("the naive reference has no formulas for this family");
}

}  // namespace

NaiveOutput naive_forward(const io::Checkpoint& ckpt, const std::vector<std::int64_t>& tokens) {
  const auto stack = layout::resolve_decoder_stack(ckpt);
  const auto& cfg = ckpt.config().text();
  const Formulas f = formulas_of(model::family_of(ckpt.config()).family);
  const Naive n{
      ckpt, cfg, f.hybrid, f.qk_norm, f.shared_expert_block, cfg.at("rms_norm_eps").get<double>()};
  const Tensor embed = n.w(stack.embed_tokens);
  Tensor x = at::empty({static_cast<std::int64_t>(tokens.size()), embed.size(1)}, at::kDouble);
  for (std::size_t t = 0; t < tokens.size(); ++t) x[t] = embed[tokens[t]];
  NaiveOutput out;
  for (std::int64_t i = 0; i < stack.num_layers; ++i) {
    const std::string p = stack.layer_path(i) + ".";
    const Tensor a = n.norm_rows(x, n.w(p + "input_layernorm.weight"));
    x = x + (stack.layer_types[i] == "linear_attention" ? n.gated_delta_net(p + "linear_attn.", a)
                                                        : n.attention(p + "self_attn.", a));
    const Tensor b = n.norm_rows(x, n.w(p + "post_attention_layernorm.weight"));
    if (f.sparse_moe && n.sparse_layer(i)) {
      x = x + n.sparse_moe(p + "mlp.", b);
    } else {
      const Tensor gate = at::matmul(b, n.w(p + "mlp.gate_proj.weight").t());
      const Tensor up = at::matmul(b, n.w(p + "mlp.up_proj.weight").t());
      x = x + at::matmul(gate * at::sigmoid(gate) * up, n.w(p + "mlp.down_proj.weight").t());
    }
    out.layer_outputs.push_back(x.clone());
  }
  out.logits = at::matmul(n.norm_rows(x, n.w(stack.final_norm)), n.w(stack.lm_head).t());
  return out;
}

}  // namespace draftgate::testing
