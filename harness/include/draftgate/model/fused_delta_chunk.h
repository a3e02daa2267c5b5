#pragma once
// The chunked gated delta rule (gated_delta_net.h) per head in plain loops over its float32
// state, for the CPU without autograd. The ATen composition is ~30 operations per chunk on
// [H, c, c] and [H, c, dK] tensors and five batched BLAS products whose packing dominates at a
// verify block's c = 8 or 16: in a Qwen3.5-0.8B verify of 8 tokens it was 14 % of the pass, for
// ~0.2 GFLOP. Here each head walks its chunks with its state in place: the UT transform by forward
// substitution, one pass over the state forming Sᵀw and Sᵀq together, one writing the next state,
// 16 lanes at a time where dK and dV are multiples of 16 (a register of AVX-512), else 8.
// The same formula as the composition, summed in other orders: within float32's budget of it and
// of the recurrent form (tests/unit/fused_delta_chunk_test.cpp), not its bits. Every target clone
// gives the same bits (compiled without contraction), and each head has the bits it has alone.

#include <ATen/ATen.h>

#include "draftgate/model/gated_delta_net.h"

namespace draftgate::model::fused {

// Chunks of up to this many tokens: a verify block's. At a prefill's 64 these loops measured the
// same as the composition (a Qwen3.5-0.8B prefill of 128 tokens, docs/performance.md), so a prefill
// keeps the composition's bits.
constexpr std::int64_t kFusedDeltaChunkMax = 16;

// Whether delta_rule_chunked takes these: chunks of at most kFusedDeltaChunkMax tokens (the
// whole input where it is shorter than `chunk`), all float32 on the CPU, contiguous, no autograd,
// state [H, dK, dV] with dK and dV multiples of 8, q, k [T, H, dK], v [T, H, dV], g, beta [T, H].
bool takes_delta_rule_chunked(const DeltaInputs& in, const at::Tensor& state, std::int64_t chunk);

// The outputs [T, H, dV] and the state after the last token; `state` is left as it is. Chunks of
// `chunk` tokens, the last may be shorter (as the composition's).
DeltaOutputs delta_rule_chunked(const DeltaInputs& in, const at::Tensor& state, std::int64_t chunk);

}  // namespace draftgate::model::fused
