#pragma once
// One-pass forms of the row-wise operations of an inference forward on the CPU (ops.cpp and
// gated_delta_net.cpp pick them): each reads a row once and writes its result once, where the ATen
// composition is 5-12 operations with a tensor between each — at the few rows of a decode step or
// a verify block those operations' fixed costs were a sixth of the step. Every rounding of the
// composition is kept where it happens (to x's dtype after the normalisation, after each product
// of RoPE, after silu); only the order of a float32 sum (the mean of squares) may differ from
// ATen's, and a float32 silu's exp by ~1 ulp.

#include <ATen/ATen.h>

#include <vector>

#include "draftgate/arch/family_traits.h"

namespace draftgate::model::fused {

// Each form with the test of whether it takes its operands: on the CPU, all bf16 or all float32,
// no autograd, the shapes ops.h's callers pass; otherwise ops.h keeps the ATen composition.

// x [..., H], weight [H].
bool takes_rms_norm(const at::Tensor& x, const at::Tensor& weight);
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps, NormStyle style);
// a + b (float32, cast once: ATen's add) and rms_norm of that sum, in one pass: the residual add
// before a decoder layer's MLP norm. a, b [..., H], weight [H].
bool takes_add_rms_norm(const at::Tensor& a, const at::Tensor& b, const at::Tensor& weight);
std::pair<at::Tensor, at::Tensor> add_rms_norm(const at::Tensor& a, const at::Tensor& b,
                                               const at::Tensor& weight, double eps,
                                               NormStyle style);
// x [T, heads, D]; cos and sin [T, 1, rotary] (RopeTables), rotary even and <= D.
bool takes_rope(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);
at::Tensor apply_rope(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);
// weight · normalised x cast to the gate's dtype (kPlain), times silu(gate) in float32, cast once
// (ops.h's rms_norm_gated); x in the gate's dtype or float32 (cast to it first). float32 silu of a
// bf16 gate from a table of the linked ATen's float32 silu (its bits), of a float32 gate by
// f32x8.h's exp, within ~1 ulp of ATen's.
bool takes_rms_norm_gated(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& gate);
at::Tensor rms_norm_gated(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& gate,
                          double eps);
// x [..., D] (bf16 or float32) as float32, each row over sqrt(Σx² + 1e-6), then times scale (a
// second rounding; none for 1): Gated DeltaNet's q and k.
bool takes_l2_normalise(const at::Tensor& x);
at::Tensor l2_normalise(const at::Tensor& x, double scale);
// silu(x) of a bf16 x, from the linked ATen's table (as silu·up's).
bool takes_silu(const at::Tensor& x);
at::Tensor bf16_silu(const at::Tensor& x);
// A bf16 x as float32 (x.to(kFloat)'s values), or sigmoid(x) from the linked ATen's table, as
// float32 (sigmoid(x).to(kFloat)'s): Gated DeltaNet's v and beta. A [T, heads, d] view with d
// contiguous is read where it lies.
bool takes_widen(const at::Tensor& x);
at::Tensor widen(const at::Tensor& x);
at::Tensor sigmoid_widened(const at::Tensor& x);
// Gated DeltaNet's delta-rule inputs in one parallel region (they were four, with a split,
// reshapes, a cast and an add on the calling thread): from the window sums' output `mixed` [T,
// 2·nk·dk + nv·dv] (q, k and v side by side), b and a [T, nv], all bf16, and dt_bias [nv] float32:
// q and k as l2_normalise (q with q_scale), value head h taking key head h / (nv / nk) as
// repeat_interleave does; v widened; beta = sigmoid_widened(b); gate_input = a.to(kFloat) + dt_bias
// (the decay's softplus input). All float32: q and k [T, nv, dk], v [T, nv, dv], beta and
// gate_input [T, nv].
struct DeltaRuleRows {
  at::Tensor q, k, v, beta, gate_input;
};
bool takes_delta_rule_rows(const at::Tensor& mixed, const at::Tensor& b, const at::Tensor& a,
                           const at::Tensor& dt_bias, std::int64_t nk, std::int64_t dk,
                           std::int64_t nv, std::int64_t dv);
DeltaRuleRows delta_rule_rows(const at::Tensor& mixed, const at::Tensor& b, const at::Tensor& a,
                              const at::Tensor& dt_bias, std::int64_t nk, std::int64_t dk,
                              std::int64_t nv, std::int64_t dv, double q_scale);
// Gated DeltaNet's short convolution over gathered windows, then silu: out[t] =
// silu(Σ_j bf16(row(index[t·K + j]) · taps[j])) with the sum in float32 over j in order and cast
// once (the composition's roundings: the product tensor, the float32-accumulated sum), row(r) the
// r-th row of [head; tail] (the committed window, then the pending inputs), taps[j][c] =
// weight[c][0][j] of the depthwise conv weight [C, 1, K]. bf16 only. std::out_of_range for an index
// past the rows.
bool takes_silu_window_sums(const at::Tensor& head, const at::Tensor& tail,
                            const at::Tensor& weight);
at::Tensor silu_window_sums(const at::Tensor& head, const at::Tensor& tail,
                            const std::vector<std::int64_t>& index, const at::Tensor& weight);
// x ⊙ sigmoid(gate), bf16 only, sigmoid from the linked ATen's table (its bits, as silu's): the
// output gate of Qwen3.5 attention. gate [T, heads, d] with d contiguous (each head's half of the
// query projection, where it lies), x [T, heads · d] contiguous.
bool takes_sigmoid_mul(const at::Tensor& x, const at::Tensor& gate);
at::Tensor bf16_sigmoid_mul(const at::Tensor& x, const at::Tensor& gate);
// silu(gate) ⊙ up, bf16 only (float32 keeps ATen's vectorised silu: no table of its values).
bool takes_silu_mul(const at::Tensor& gate, const at::Tensor& up);
at::Tensor bf16_silu_mul(const at::Tensor& gate, const at::Tensor& up);

}  // namespace draftgate::model::fused
