#pragma once
// One-pass forms of ops.h's row-wise operations for an inference forward on the CPU (ops.cpp picks
// them): each reads a row once and writes its result once, where the ATen composition is 5-8
// operations with a tensor between each — at the few rows of a decode step or a verify block
// those operations' fixed costs were a sixth of the step. Every rounding of the composition is kept
// where it happens (to x's dtype after the normalisation, after each product of RoPE, after
// silu); only the order of a float32 sum (the mean of squares) may differ from ATen's.

#include <ATen/ATen.h>

#include "draftgate/arch/family_traits.h"

namespace draftgate::model::fused {

// Each form with the test of whether it takes its operands: on the CPU, all bf16 or all float32,
// no autograd, the shapes ops.h's callers pass; otherwise ops.h keeps the ATen composition.

// x [..., H], weight [H].
bool takes_rms_norm(const at::Tensor& x, const at::Tensor& weight);
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps, NormStyle style);
// x [T, heads, D]; cos and sin [T, 1, rotary] (RopeTables), rotary even and <= D.
bool takes_rope(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);
at::Tensor apply_rope(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);
// silu(gate) ⊙ up, bf16 only (float32 keeps ATen's vectorised silu: no table of its values).
bool takes_silu_mul(const at::Tensor& gate, const at::Tensor& up);
at::Tensor bf16_silu_mul(const at::Tensor& gate, const at::Tensor& up);

}  // namespace draftgate::model::fused
