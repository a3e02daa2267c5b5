#include "draftgate/model/ops.h"

#include <dlfcn.h>

#include "draftgate/model/few_row_matmul.h"

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

RopeTables rope_tables(const at::Tensor& positions, const at::Tensor& inv_freq,
                       at::ScalarType dtype) {
  const at::Tensor freqs = positions.to(at::kFloat).unsqueeze(1) * inv_freq.unsqueeze(0);
  const at::Tensor cos = freqs.cos(), sin = freqs.sin();
  return {at::cat({cos, cos}, -1).unsqueeze(1).to(dtype),
          at::cat({-sin, sin}, -1).unsqueeze(1).to(dtype)};
}

at::Tensor apply_rope(const at::Tensor& x, const RopeTables& rope) {
  const std::int64_t rotary = rope.cos.size(-1), half = rotary / 2;
  const at::Tensor rot = rotary == x.size(-1) ? x : x.narrow(-1, 0, rotary);
  std::vector<std::int64_t> pairs = rot.sizes().vec();
  pairs.back() = half;
  pairs.insert(pairs.end() - 1, 2);
  const at::Tensor swapped = rot.reshape(pairs).flip(-2).reshape(rot.sizes());
  const at::Tensor out = at::addcmul(rot * rope.cos, swapped, rope.sin);
  if (rotary == x.size(-1)) return out;
  return at::cat({out, x.narrow(-1, rotary, x.size(-1) - rotary)}, -1);
}

namespace {
struct OpenBlasThreads {
  using Set = void (*)(int);
  using Get = int (*)();
  Set set = reinterpret_cast<Set>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"));
  Get get = reinterpret_cast<Get>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
};
const OpenBlasThreads& openblas() {
  static const OpenBlasThreads o;
  return o;
}
}  // namespace

SingleThreadedBlas::SingleThreadedBlas() {
  if (openblas().set != nullptr && openblas().get != nullptr) {
    saved_ = openblas().get();
    openblas().set(1);
  }
}

SingleThreadedBlas::~SingleThreadedBlas() {
  if (saved_ > 0) openblas().set(saved_);
}

at::Tensor dense(const at::Tensor& x, const at::Tensor& w) {
  return few_row_matmul_applies(x, w) ? few_row_matmul(x, w) : at::linear(x, w);
}

at::Tensor swiglu(const at::Tensor& x, const at::Tensor& gate_w, const at::Tensor& up_w,
                  const at::Tensor& down_w) {
  return dense(at::silu(dense(x, gate_w)) * dense(x, up_w), down_w);
}

}  // namespace draftgate::model
