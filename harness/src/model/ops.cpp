#include "draftgate/model/ops.h"

#include <c10/core/InferenceMode.h>
#include <dlfcn.h>

#include <algorithm>
#include <vector>

#include "draftgate/model/amx_matmul.h"
#include "draftgate/model/argmax_rows.h"
#include "draftgate/model/few_row_matmul.h"
#include "draftgate/model/fma_gemm.h"
#include "draftgate/model/fused_rows.h"

namespace draftgate::model {

namespace {
at::Tensor normalise_f32(const at::Tensor& x, double eps) {
  const at::Tensor xf = x.to(at::kFloat);
  return xf * at::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + eps);
}
}  // namespace

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps, NormStyle style) {
  if (fused::takes_rms_norm(x, weight)) return fused::rms_norm(x, weight, eps, style);
  const at::Tensor n = normalise_f32(x, eps);
  if (style == NormStyle::kPlain) return weight * n.to(x.scalar_type());
  return (n * (weight.to(at::kFloat) + 1.0)).to(x.scalar_type());
}

std::pair<at::Tensor, at::Tensor> add_rms_norm(const at::Tensor& h, const at::Tensor& delta,
                                               const at::Tensor& weight, double eps,
                                               NormStyle style) {
  if (fused::takes_add_rms_norm(h, delta, weight))
    return fused::add_rms_norm(h, delta, weight, eps, style);
  const at::Tensor sum = h + delta;
  return {sum, rms_norm(sum, weight, eps, style)};
}

at::Tensor rms_norm_gated(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& gate,
                          double eps) {
  if (fused::takes_rms_norm_gated(x, weight, gate))
    return fused::rms_norm_gated(x, weight, gate, eps);
  const at::Tensor n = weight * normalise_f32(x.to(gate.scalar_type()), eps).to(gate.scalar_type());
  return (n * at::silu(gate.to(at::kFloat))).to(gate.scalar_type());
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
  if (fused::takes_rope(x, rope.cos, rope.sin)) return fused::apply_rope(x, rope.cos, rope.sin);
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

namespace {

// Without bf16 dot products in the CPU (AVX-512 BF16), oneDNN's bf16 GEMM takes a reference path:
// 1.3 GFLOP/s on 2 AVX2 cores against 110-128 in float32 (measured with Debian's torch at
// [128, 5120] x [5120, 4096]). There a bf16 product widens the weight to float32 a block of rows at
// a time (exact), multiplies in float32 and rounds the result once to bf16 — the precision of a
// bf16 GEMM with float32 accumulation, which is what oneDNN's is.
// A float32 x with a bf16 weight (a float32 forward over a bf16 checkpoint keeps its linear
// weights as stored, WeightLoader::get_linear) takes the same path where the CPU has neither AMX
// nor FMA vectors (fma_gemm.h): the weight widened a block at a time, not held widened.
bool widened_gemm_applies(const at::Tensor& x, const at::Tensor& w) {
  const bool bf16_without_dot =
      x.scalar_type() == at::kBFloat16 && !few_row_kernel_available(FewRowKernel::kBf16Dot);
  return (bf16_without_dot || x.scalar_type() == at::kFloat) && w.scalar_type() == at::kBFloat16 &&
         w.dim() == 2 && x.dim() >= 1 && x.size(-1) == w.size(1) && x.device().is_cpu() &&
         w.device().is_cpu() &&
         !(at::GradMode::is_enabled() && (x.requires_grad() || w.requires_grad()));
}

at::Tensor widened_linear(const at::Tensor& x, const at::Tensor& w) {
  constexpr std::int64_t kBlockElements = std::int64_t{1} << 23;  // 32 MB of float32 weight
  const std::int64_t n = w.size(0), k = w.size(1);
  const std::int64_t rows =
      std::max<std::int64_t>(1, kBlockElements / std::max<std::int64_t>(1, k));
  // One block buffer per thread, reused: a fresh one per call is fresh pages to fault in.
  thread_local at::Tensor wide;
  if (!wide.defined() || wide.numel() < std::min(n, rows) * k) {
    c10::InferenceMode inference;
    wide = at::empty({std::min(n, rows) * k}, at::kFloat);
  }
  const at::Tensor xf = x.reshape({-1, k}).to(at::kFloat);
  at::Tensor out = at::empty({xf.size(0), n}, x.options());
  for (std::int64_t r = 0; r < n; r += rows) {
    const std::int64_t count = std::min(rows, n - r);
    const at::Tensor block = wide.narrow(0, 0, count * k).view({count, k});
    {
      c10::InferenceMode inference;
      block.copy_(w.narrow(0, r, count));
    }
    out.narrow(1, r, count).copy_(at::linear(xf, block));
  }
  std::vector<std::int64_t> shape = x.sizes().vec();
  shape.back() = n;
  return out.view(shape);
}

// Whether dense(x, w) takes the AMX tiles: for a bf16 x of up to 16 rows (a verify block reads the
// weight at 2.5-2.6x the bf16 dot-product kernel's rate there, and a row has the same bits
// however many rows of a decode or verify pass are beside it), for a float32 x beyond the
// few-row kernels (a forward over a record's sequence: its float32 arithmetic at ~2.8x OpenBLAS's
// rate on the same cores). bf16 prefill stays on oneDNN's GEMM, measured faster on the 0.6B
// shapes. Under 512 KB of weight (tiny models) a call's fixed cost (packing x, the tile set-up,
// the threads' wake-up) outweighs the tiles: the few-row kernels keep those.
bool takes_amx(const at::Tensor& x, const at::Tensor& w) {
  constexpr std::int64_t kAmxMinWeight = std::int64_t{1} << 18;
  if (!amx_available() || !amx_matmul_applies(x, w) || w.numel() < kAmxMinWeight) return false;
  const bool few_rows = few_row_matmul_applies(x, w);
  return x.scalar_type() == at::kBFloat16 ? few_rows : !few_rows;
}

}  // namespace

at::Tensor dense(const at::Tensor& x, const at::Tensor& w) {
  if (takes_amx(x, w)) return amx_matmul(x, w);
  if (few_row_matmul_applies(x, w)) return few_row_matmul(x, w);
  if (fma_gemm_available() && fma_gemm_applies(x, w)) return fma_gemm(x, w);
  if (widened_gemm_applies(x, w)) return widened_linear(x, w);
  if (x.scalar_type() == at::kFloat && w.scalar_type() == at::kBFloat16)
    return at::linear(x, w.to(at::kFloat));  // under autograd
  return at::linear(x, w);
}

std::vector<at::Tensor> dense(const at::Tensor& x, const std::vector<at::Tensor>& ws) {
  const auto all = [&](auto takes) { return std::all_of(ws.begin(), ws.end(), takes); };
  if (all([&](const at::Tensor& w) { return takes_amx(x, w); })) return amx_matmul(x, ws);
  if (all([&](const at::Tensor& w) { return !takes_amx(x, w) && few_row_matmul_applies(x, w); }))
    return few_row_matmul(x, ws, best_few_row_kernel(x.scalar_type()));
  std::vector<at::Tensor> ys;
  for (const at::Tensor& w : ws) ys.push_back(dense(x, w));
  return ys;
}

at::Tensor dense_to_float(const at::Tensor& x, const at::Tensor& w) {
  if (x.scalar_type() == at::kBFloat16 && takes_amx(x, w))
    return amx_matmul(x, w, ProductOutput::kWidened);
  if (x.scalar_type() == at::kBFloat16 && few_row_matmul_applies(x, w))
    return few_row_matmul(x, w, best_few_row_kernel(x.scalar_type()), ProductOutput::kWidened);
  return dense(x, w).to(at::kFloat);
}

std::vector<std::int64_t> dense_argmax(const at::Tensor& x, const at::Tensor& w) {
  if (x.scalar_type() == at::kBFloat16 && !takes_amx(x, w) && few_row_matmul_applies(x, w) &&
      x.numel() > 0 && w.size(0) > 0)
    return few_row_argmax(x, w, best_few_row_kernel(x.scalar_type()));
  return argmax_rows(dense_to_float(x, w));
}

at::Tensor swiglu(const at::Tensor& x, const at::Tensor& gate_w, const at::Tensor& up_w,
                  const at::Tensor& down_w) {
  const std::vector<at::Tensor> gate_up = dense(x, {gate_w, up_w});
  const at::Tensor &gate = gate_up[0], &up = gate_up[1];
  if (fused::takes_silu_mul(gate, up)) return dense(fused::bf16_silu_mul(gate, up), down_w);
  return dense(at::silu(gate) * up, down_w);
}

}  // namespace draftgate::model
