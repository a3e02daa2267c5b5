#include "draftgate/model/ops.h"

namespace draftgate::model {

namespace {
at::Tensor normalise_f32(const at::Tensor& x, double eps) {
  const at::Tensor xf = x.to(at::kFloat);
  return xf * at::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + eps);
}
}  // namespace

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps, NormStyle style) {
  const at::Tensor n = normalise_f32(x, eps);
  if (style == NormStyle::kPlain) return weight * n.to(x.scalar_type());
  return (n * (weight.to(at::kFloat) + 1.0)).to(x.scalar_type());
}

at::Tensor rms_norm_gated(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& gate,
                          double eps) {
  const at::Tensor n = weight * normalise_f32(x, eps).to(x.scalar_type());
  return (n * at::silu(gate.to(at::kFloat))).to(x.scalar_type());
}

at::Tensor rope_inv_freq(std::int64_t rotary_dim, double theta) {
  const at::Tensor j = at::arange(0, rotary_dim, 2, at::kLong).to(at::kFloat);
  return 1.0 / at::pow(theta, j / static_cast<double>(rotary_dim));
}

at::Tensor apply_rope(const at::Tensor& x, const at::Tensor& positions,
                      const at::Tensor& inv_freq) {
  const std::int64_t rotary = inv_freq.size(0) * 2;
  const at::Tensor freqs =
      positions.to(at::kFloat).unsqueeze(1) * inv_freq.to(positions.device()).unsqueeze(0);
  const at::Tensor emb = at::cat({freqs, freqs}, -1).unsqueeze(1);  // [T, 1, rotary]
  const at::Tensor cos = emb.cos().to(x.scalar_type());
  const at::Tensor sin = emb.sin().to(x.scalar_type());
  const at::Tensor rot = x.narrow(-1, 0, rotary);
  const std::int64_t half = rotary / 2;
  const at::Tensor rotated = at::cat({-rot.narrow(-1, half, half), rot.narrow(-1, 0, half)}, -1);
  const at::Tensor out = rot * cos + rotated * sin;
  if (rotary == x.size(-1)) return out;
  return at::cat({out, x.narrow(-1, rotary, x.size(-1) - rotary)}, -1);
}

at::Tensor swiglu(const at::Tensor& x, const at::Tensor& gate_w, const at::Tensor& up_w,
                  const at::Tensor& down_w) {
  return at::linear(at::silu(at::linear(x, gate_w)) * at::linear(x, up_w), down_w);
}

}  // namespace draftgate::model
