#include "draftgate/model/gated_delta_net.h"

#include <ATen/Parallel.h>
#include <ATen/ThreadLocalState.h>

#include "draftgate/model/fused_delta_chunk.h"
#include "draftgate/model/fused_delta_rule.h"
#include "draftgate/model/fused_rows.h"
#include "draftgate/model/ops.h"

namespace draftgate::model {

namespace {
constexpr std::int64_t kGatherConvMaxTokens = 64;

// x / sqrt(Σx² + 1e-6) in float32, times scale: in one pass where fused_rows takes x.
at::Tensor l2_normalise(const at::Tensor& x, double scale = 1.0) {
  if (fused::takes_l2_normalise(x)) return fused::l2_normalise(x, scale);
  const at::Tensor xf = x.to(at::kFloat);
  const at::Tensor n = xf * at::rsqrt((xf * xf).sum(-1, /*keepdim=*/true) + 1e-6);
  return scale == 1.0 ? n : n * scale;
}

// silu of a bf16 tensor from the linked ATen's table (its bits), else ATen's.
at::Tensor table_silu(const at::Tensor& x) {
  return fused::takes_silu(x) ? fused::bf16_silu(x) : at::silu(x);
}

std::vector<std::int64_t> chain(std::int64_t n) {
  std::vector<std::int64_t> parents(n);
  for (std::int64_t i = 0; i < n; ++i) parents[i] = i - 1;
  return parents;
}
}  // namespace

std::pair<at::Tensor, at::Tensor> delta_rule_step(const at::Tensor& state, const at::Tensor& q,
                                                  const at::Tensor& k, const at::Tensor& v,
                                                  const at::Tensor& g, const at::Tensor& beta) {
  if (fused::takes_delta_rule_step(state, q, k, v, g, beta))
    return fused::delta_rule_step(state, q, k, v, g, beta);
  at::Tensor s = state * g.exp().view({-1, 1, 1});
  const at::Tensor memory = at::bmm(k.unsqueeze(1), s).squeeze(1);  // Sᵀk  [H, dV]
  const at::Tensor delta = (v - memory) * beta.unsqueeze(-1);
  s = s + at::bmm(k.unsqueeze(2), delta.unsqueeze(1));
  return {at::bmm(q.unsqueeze(1), s).squeeze(1), s};
}

DeltaOutputs delta_rule_recurrent(const DeltaInputs& in, const at::Tensor& state) {
  const std::int64_t t_len = in.q.size(0);
  at::Tensor s = state;
  at::Tensor out = at::empty({t_len, in.v.size(1), in.v.size(2)}, in.v.options());
  for (std::int64_t t = 0; t < t_len; ++t) {
    auto [o, next] = delta_rule_step(s, in.q[t], in.k[t], in.v[t], in.g[t], in.beta[t]);
    out[t].copy_(o);
    s = next;
  }
  return {out, s};
}

namespace {
// The chunked form over every head of `in` at once.
DeltaOutputs chunked_heads(const DeltaInputs& in, const at::Tensor& state, std::int64_t chunk) {
  const std::int64_t t_len = in.q.size(0);
  // Heads first: [H, T, d].
  const at::Tensor q = in.q.transpose(0, 1), k = in.k.transpose(0, 1), v = in.v.transpose(0, 1);
  const at::Tensor g = in.g.transpose(0, 1), beta = in.beta.transpose(0, 1);
  at::Tensor s = state;
  at::Tensor out = at::empty({q.size(0), t_len, v.size(2)}, v.options());
  for (std::int64_t start = 0; start < t_len; start += chunk) {
    const std::int64_t c = std::min(chunk, t_len - start);
    const at::Tensor qc = q.narrow(1, start, c), kc = k.narrow(1, start, c),
                     vc = v.narrow(1, start, c);
    const at::Tensor bc = beta.narrow(1, start, c).unsqueeze(-1);
    const at::Tensor gcum = g.narrow(1, start, c).cumsum(-1);  // [H, c]
    const at::Tensor lower = at::ones({c, c}, q.options().dtype(at::kBool)).tril();
    // decay[i, j] = exp(G_i − G_j) for j ≤ i, else 0.
    const at::Tensor decay =
        (gcum.unsqueeze(-1) - gcum.unsqueeze(-2)).masked_fill(lower.logical_not(), -INFINITY).exp();
    const at::Tensor k_beta = kc * bc, v_beta = vc * bc;
    // UT transform: T = (I + strict_lower(k_β kᵀ ⊙ decay))⁻¹.
    const at::Tensor eye = at::eye(c, q.options());
    const at::Tensor strict = at::matmul(k_beta, kc.transpose(-1, -2)) * decay * (1 - eye);
    const at::Tensor ut =
        at::linalg_solve_triangular(eye + strict, eye.expand_as(strict), /*upper=*/false);
    const at::Tensor u = at::matmul(ut, v_beta);                             // [H, c, dV]
    const at::Tensor w = at::matmul(ut, k_beta * gcum.exp().unsqueeze(-1));  // [H, c, dK]
    const at::Tensor v_new = u - at::matmul(w, s);
    const at::Tensor intra = at::matmul(qc, kc.transpose(-1, -2)) * decay;  // lower incl. diagonal
    out.narrow(1, start, c)
        .copy_(at::matmul(qc * gcum.exp().unsqueeze(-1), s) + at::matmul(intra, v_new));
    const at::Tensor g_last = gcum.narrow(1, c - 1, 1);  // [H, 1]
    s = s * g_last.exp().unsqueeze(-1) +
        at::matmul((kc * (g_last - gcum).exp().unsqueeze(-1)).transpose(-1, -2), v_new);
  }
  return {out.transpose(0, 1), s};
}
}  // namespace

DeltaOutputs delta_rule_chunked(const DeltaInputs& in, const at::Tensor& state,
                                std::int64_t chunk) {
  if (fused::takes_delta_rule_chunked(in, state, chunk))
    return fused::delta_rule_chunked(in, state, chunk);
  const std::int64_t heads = state.size(0);
  const bool grad = at::GradMode::is_enabled() &&
                    (state.requires_grad() || in.q.requires_grad() || in.k.requires_grad() ||
                     in.v.requires_grad() || in.g.requires_grad() || in.beta.requires_grad());
  if (grad || heads < 2 || at::get_num_threads() < 2 || at::in_parallel_region())
    return chunked_heads(in, state, chunk);
  // Heads are independent and every operation of the form is per head (batched products,
  // elementwise, the triangular solve), so ranges of heads on the threads give the bits of all
  // heads at once; each range runs its operations on one thread, where at one chunk of a verify
  // block (16 heads of [16, 128] by [128, 128]) the single-threaded products were a third of a
  // Qwen3.5-0.8B verify.
  const std::int64_t t_len = in.q.size(0);
  at::Tensor out = at::empty({t_len, heads, in.v.size(2)}, in.v.options());
  at::Tensor last = at::empty_like(state);
  // The caller's grad and inference modes are per thread: the workers take them over. One BLAS
  // thread per worker (OpenBLAS's own pool entered from OpenMP workers at once may hang).
  const at::ThreadLocalState modes;
  const SingleThreadedBlas blas;
  at::parallel_for(0, heads, 1, [&](std::int64_t begin, std::int64_t end) {
    const at::ThreadLocalStateGuard guard(modes);
    const auto part = [&](const at::Tensor& t) { return t.narrow(1, begin, end - begin); };
    const DeltaOutputs r =
        chunked_heads({part(in.q), part(in.k), part(in.v), part(in.g), part(in.beta)},
                      state.narrow(0, begin, end - begin), chunk);
    out.narrow(1, begin, end - begin).copy_(r.out);
    last.narrow(0, begin, end - begin).copy_(r.state);
  });
  return {out, last};
}

GatedDeltaNet::GatedDeltaNet(const TargetConfig& c, const WeightLoader& w, const std::string& p)
    : c_(c) {
  const std::int64_t h = c.hidden, nv = c.linear_v_heads;
  in_proj_qkv_ = w.get_linear(p + "in_proj_qkv.weight", {c.conv_width(), h});
  in_proj_z_ = w.get_linear(p + "in_proj_z.weight", {c.linear_value_width(), h});
  in_proj_a_ = w.get_linear(p + "in_proj_a.weight", {nv, h});
  in_proj_b_ = w.get_linear(p + "in_proj_b.weight", {nv, h});
  conv_w_ = w.get(p + "conv1d.weight", {c.conv_width(), 1, c.conv_kernel});
  neg_a_ = -w.get_f32(p + "A_log", {nv}).exp();
  dt_bias_ = w.get_f32(p + "dt_bias", {nv});
  norm_ = w.get(p + "norm.weight", {c.linear_v_dim});
  out_proj_ = w.get_linear(p + "out_proj.weight", {h, c.linear_value_width()});
}

LinearState GatedDeltaNet::new_state(const at::TensorOptions& options) const {
  LinearState s;
  s.conv_window = at::zeros({c_.conv_kernel - 1, c_.conv_width()}, options);
  s.recurrent =
      at::zeros({c_.linear_v_heads, c_.linear_k_dim, c_.linear_v_dim}, options.dtype(at::kFloat));
  return s;
}

at::Tensor GatedDeltaNet::conv_chain(const at::Tensor& raw, const at::Tensor& window) const {
  const at::Tensor seq = at::cat({window, raw}, 0).t().unsqueeze(0);  // [1, conv, K-1+T]
  return at::conv1d(seq, conv_w_, at::Tensor(), at::IntArrayRef{1}, at::IntArrayRef{0},
                    at::IntArrayRef{1}, c_.conv_width())
      .squeeze(0)
      .t();
}

at::Tensor GatedDeltaNet::conv_windows(const at::Tensor& raw, const at::Tensor& window,
                                       const std::vector<std::int64_t>& parents) const {
  // Rows of [window; raw]: node i's input window is its K−1 nearest ancestors (then the committed
  // window).
  const std::int64_t k = c_.conv_kernel, w = k - 1;
  std::vector<std::int64_t> index;
  for (std::size_t i = 0; i < parents.size(); ++i) {
    std::vector<std::int64_t> rows(k);
    std::int64_t node = static_cast<std::int64_t>(i), committed_back = 0;
    for (std::int64_t slot = k - 1; slot >= 0; --slot) {
      if (node >= 0) {
        rows[slot] = w + node;
        node = parents[node];
      } else {
        rows[slot] = w - 1 - committed_back++;
      }
    }
    index.insert(index.end(), rows.begin(), rows.end());
  }
  // The fused form reads the [conv width, 1, K] weight where it lies; the composition takes the
  // taps as [K, conv width], a view of the weight each call: a trained weight moves (and under
  // autograd the fused form is not taken).
  if (fused::takes_silu_window_sums(window, raw, conv_w_))
    return fused::silu_window_sums(window, raw, index, conv_w_);
  const at::Tensor taps = conv_w_.squeeze(1).t();
  const at::Tensor table = at::cat({window, raw}, 0);
  const at::Tensor idx = at::tensor(index, at::TensorOptions(at::kLong).device(raw.device()));
  const at::Tensor windows = table.index_select(0, idx).view({raw.size(0), k, -1});  // [T, K, conv]
  return at::silu((windows * taps.unsqueeze(0)).sum(1));
}

at::Tensor GatedDeltaNet::extend(const at::Tensor& x, LinearState& state,
                                 const std::vector<std::int64_t>& parents,
                                 GdnAlgorithm algorithm) const {
  const std::int64_t t_len = x.size(0), nk = c_.linear_k_heads, nv = c_.linear_v_heads;
  const std::int64_t dk = c_.linear_k_dim, dv = c_.linear_v_dim;
  // One product for the four projections of x (one parallel region, x packed once).
  const std::vector<at::Tensor> projected =
      dense(x, {in_proj_qkv_, in_proj_z_, in_proj_b_, in_proj_a_});
  const at::Tensor &raw = projected[0], &z_flat = projected[1];
  // Long chains convolve with conv1d; short ones (decode, verify blocks) and trees gather each
  // token's window, several times cheaper than a depthwise conv1d call at these sizes.
  const bool long_chain = parents.empty() && t_len > kGatherConvMaxTokens;
  const at::Tensor mixed =
      long_chain ? table_silu(conv_chain(raw, state.conv_window))
                 : conv_windows(raw, state.conv_window, parents.empty() ? chain(t_len) : parents);
  const double q_scale = 1.0 / std::sqrt(static_cast<double>(dk));
  const at::Tensor &b = projected[2], &a = projected[3];
  DeltaInputs in;
  if (fused::takes_delta_rule_rows(mixed, b, a, dt_bias_, nk, dk, nv, dv)) {
    fused::DeltaRuleRows rows =
        fused::delta_rule_rows(mixed, b, a, dt_bias_, nk, dk, nv, dv, q_scale);
    in.q = std::move(rows.q);
    in.k = std::move(rows.k);
    in.v = std::move(rows.v);
    in.beta = std::move(rows.beta);
    // g = -exp(A_log) · softplus(a + dt_bias), in place: softplus stays ATen's (its exp and log1p).
    in.g = at::softplus_out(rows.gate_input, rows.gate_input).mul_(neg_a_);
  } else {
    const auto parts = mixed.split_with_sizes({nk * dk, nk * dk, nv * dv}, -1);
    at::Tensor q = parts[0].reshape({t_len, nk, dk}), k = parts[1].reshape({t_len, nk, dk});
    if (nv > nk) {  // each K/Q head serves nv/nk consecutive V heads (repeat_interleave's order)
      q = q.unsqueeze(2).expand({t_len, nk, nv / nk, dk}).reshape({t_len, nv, dk});
      k = k.unsqueeze(2).expand({t_len, nk, nv / nk, dk}).reshape({t_len, nv, dk});
    }
    in.q = l2_normalise(q, q_scale);
    in.k = l2_normalise(k);
    const at::Tensor v = parts[2].reshape({t_len, nv, dv});
    in.v = fused::takes_widen(v) ? fused::widen(v) : v.to(at::kFloat);
    in.beta = fused::takes_widen(b) ? fused::sigmoid_widened(b) : at::sigmoid(b).to(at::kFloat);
    in.g = neg_a_ * at::softplus(a.to(at::kFloat) + dt_bias_);
  }

  at::Tensor out;
  state.pending_final = at::Tensor();
  const SingleThreadedBlas blas;
  if (parents.empty()) {
    // A single token is one recurrent step in either algorithm (as in the reference's cached
    // decode).
    DeltaOutputs r = algorithm == GdnAlgorithm::kChunked && t_len > 1
                         ? delta_rule_chunked(in, state.recurrent)
                         : delta_rule_recurrent(in, state.recurrent);
    out = r.out;
    state.pending_final = r.state;
  } else {
    std::vector<at::Tensor> states(t_len);
    out = at::empty({t_len, nv, dv}, in.v.options());
    for (std::int64_t i = 0; i < t_len; ++i) {
      const at::Tensor& from = parents[i] < 0 ? state.recurrent : states[parents[i]];
      auto [o, s] = delta_rule_step(from, in.q[i], in.k[i], in.v[i], in.g[i], in.beta[i]);
      out[i].copy_(o);
      states[i] = s;
    }
  }
  state.pending_raw = raw;
  state.pending_q = in.q;
  state.pending_k = in.k;
  state.pending_v = in.v;
  state.pending_g = in.g;
  state.pending_beta = in.beta;

  const at::Tensor z = z_flat.view({t_len, nv, dv});
  const at::Tensor normed = rms_norm_gated(out, norm_, z, c_.rms_eps);  // out cast to z's dtype
  return dense(normed.reshape({t_len, nv * dv}), out_proj_);
}

void GatedDeltaNet::commit(LinearState& state, const std::vector<std::int64_t>& path,
                           bool whole_chain) const {
  if (whole_chain && state.pending_final.defined()) {
    state.recurrent = state.pending_final;
  } else {
    for (std::int64_t i : path)
      state.recurrent =
          delta_rule_step(state.recurrent, state.pending_q[i], state.pending_k[i],
                          state.pending_v[i], state.pending_g[i], state.pending_beta[i])
              .second;
  }
  if (!path.empty()) {
    const at::Tensor idx =
        at::tensor(path, at::TensorOptions(at::kLong).device(state.pending_raw.device()));
    const at::Tensor history =
        at::cat({state.conv_window, state.pending_raw.index_select(0, idx)}, 0);
    state.conv_window =
        history.narrow(0, history.size(0) - state.conv_window.size(0), state.conv_window.size(0))
            .clone();
  }
  state.pending_raw = state.pending_q = state.pending_k = state.pending_v = state.pending_g =
      state.pending_beta = state.pending_final = at::Tensor();
}

}  // namespace draftgate::model
