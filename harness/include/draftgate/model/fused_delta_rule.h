#pragma once
// One step of the gated delta rule (gated_delta_net.h) for every head in two passes over its
// float32 state, where the ATen composition is eight operations with a fresh [H, dK, dV] tensor
// between most of them (a Qwen3.5-0.8B layer's state is 1 MB: a decode step, a tree walk's node or
// a commit's replay read and wrote it ~6 times). The first pass forms Sᵀk of the decayed state, the
// second writes the new state and forms Sᵀq from it. Every element of the new state has the
// composition's roundings (exp(g) from ATen, times the state, plus the product k_i · δ_j rounded
// before the sum) given the same δ; the sums Sᵀk and Sᵀq run over dK in order, one chain per
// lane, where the composition's batched products sum in the BLAS's order.

#include <ATen/ATen.h>

#include <utility>

namespace draftgate::model::fused {

// Whether delta_rule_step takes these: all float32 on the CPU, contiguous, no autograd, state
// [H, dK, dV] with dV a multiple of 8, q, k [H, dK], v [H, dV], g, beta [H].
bool takes_delta_rule_step(const at::Tensor& state, const at::Tensor& q, const at::Tensor& k,
                           const at::Tensor& v, const at::Tensor& g, const at::Tensor& beta);

// (o [H, dV], the new state [H, dK, dV]); `state` is left as it is.
std::pair<at::Tensor, at::Tensor> delta_rule_step(const at::Tensor& state, const at::Tensor& q,
                                                  const at::Tensor& k, const at::Tensor& v,
                                                  const at::Tensor& g, const at::Tensor& beta);

}  // namespace draftgate::model::fused
