#include "draftgate/model/fused_delta_rule.h"

#include <ATen/Parallel.h>

#include <vector>

#include "f32x8.h"

namespace draftgate::model::fused {
namespace {

struct Step {
  const float *state, *q, *k, *v, *decay, *beta;
  float *next, *out;
  std::int64_t dk, dv;
};

// Heads [begin, end), eight lanes of dV at a time (f32x8.h). Compiled without contraction: each
// product is rounded before its sum, as in the composition.
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) void step_heads(
    const Step& a, std::int64_t begin, std::int64_t end, std::vector<float>& scratch) {
  const std::int64_t dk = a.dk, dv = a.dv;
  scratch.resize(static_cast<std::size_t>(2 * dv));
  float* const memory = scratch.data();  // Sᵀk of the decayed state, then δ
  float* const out = memory + dv;
  F32x8 s, sum, x;
  for (std::int64_t h = begin; h < end; ++h) {
    const float* state = a.state + h * dk * dv;
    float* next = a.next + h * dk * dv;
    const float* k = a.k + h * dk;
    const float* q = a.q + h * dk;
    const float decay = a.decay[h], beta = a.beta[h];
    std::fill(memory, memory + dv, 0.0f);
    for (std::int64_t i = 0; i < dk; ++i)
      for (std::int64_t j = 0; j < dv; j += 8) {
        load8(s, state + i * dv + j);
        load8(sum, memory + j);
        sum += k[i] * (s * decay);
        std::memcpy(memory + j, &sum, sizeof sum);
      }
    for (std::int64_t j = 0; j < dv; j += 8) {  // δ = (v − Sᵀk) · β
      load8(sum, memory + j);
      load8(x, a.v + h * dv + j);
      x = (x - sum) * beta;
      std::memcpy(memory + j, &x, sizeof x);
    }
    std::fill(out, out + dv, 0.0f);
    for (std::int64_t i = 0; i < dk; ++i)
      for (std::int64_t j = 0; j < dv; j += 8) {
        load8(s, state + i * dv + j);
        load8(x, memory + j);
        s = s * decay + k[i] * x;
        std::memcpy(next + i * dv + j, &s, sizeof s);
        load8(sum, out + j);
        sum += q[i] * s;
        std::memcpy(out + j, &sum, sizeof sum);
      }
    std::memcpy(a.out + h * dv, out, sizeof(float) * dv);
  }
}

}  // namespace

bool takes_delta_rule_step(const at::Tensor& state, const at::Tensor& q, const at::Tensor& k,
                           const at::Tensor& v, const at::Tensor& g, const at::Tensor& beta) {
  for (const at::Tensor* t : {&state, &q, &k, &v, &g, &beta})
    if (!t->defined() || !t->device().is_cpu() || t->scalar_type() != at::kFloat ||
        !t->is_contiguous() || (at::GradMode::is_enabled() && t->requires_grad()))
      return false;
  if (state.dim() != 3) return false;
  const std::int64_t heads = state.size(0), dk = state.size(1), dv = state.size(2);
  return dv % 8 == 0 && q.sizes() == at::IntArrayRef{heads, dk} && k.sizes() == q.sizes() &&
         v.sizes() == at::IntArrayRef{heads, dv} && g.sizes() == at::IntArrayRef{heads} &&
         beta.sizes() == g.sizes();
}

std::pair<at::Tensor, at::Tensor> delta_rule_step(const at::Tensor& state, const at::Tensor& q,
                                                  const at::Tensor& k, const at::Tensor& v,
                                                  const at::Tensor& g, const at::Tensor& beta) {
  const at::Tensor decay = g.exp();  // ATen's exp: the composition's bits
  at::Tensor next = at::empty_like(state);
  at::Tensor out = at::empty_like(v);
  const Step a{state.data_ptr<float>(), q.data_ptr<float>(),
               k.data_ptr<float>(),     v.data_ptr<float>(),
               decay.data_ptr<float>(), beta.data_ptr<float>(),
               next.data_ptr<float>(),  out.data_ptr<float>(),
               state.size(1),           state.size(2)};
  // A head is ~2 dK·dV multiply-adds per pass: worth a thread from a few heads of 128 x 128.
  const std::int64_t grain =
      std::max<std::int64_t>(1, (std::int64_t{1} << 15) / std::max<std::int64_t>(1, a.dk * a.dv));
  at::parallel_for(0, state.size(0), grain, [&](std::int64_t begin, std::int64_t end) {
    thread_local std::vector<float> scratch;
    step_heads(a, begin, end, scratch);
  });
  return {out, next};
}

}  // namespace draftgate::model::fused
