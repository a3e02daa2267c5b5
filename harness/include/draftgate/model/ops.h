#pragma once
// The numerical building blocks shared by the target families, each matching its transformers
// reference: normalisation in float32 and cast back, NeoX half-split RoPE over the first
// `rotary_dim` dims, SwiGLU.

#include <ATen/ATen.h>

#include <vector>

#include "draftgate/arch/family_traits.h"

namespace draftgate::model {

// RMS-normalises over the last dim.
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps, NormStyle style);
// {h + delta, rms_norm(h + delta)}: a residual add and the norm after it.
std::pair<at::Tensor, at::Tensor> add_rms_norm(const at::Tensor& h, const at::Tensor& delta,
                                               const at::Tensor& weight, double eps,
                                               NormStyle style);

// Qwen3_5RMSNormGated: (x̂ · w) ⊙ silu(z), normalising over the last dim in f32; x is first cast
// to z's dtype (Gated DeltaNet's float32 output).
at::Tensor rms_norm_gated(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& gate,
                          double eps);

// inv_freq[j] = theta^(-2j / rotary_dim), j < rotary_dim / 2 (float32).
at::Tensor rope_inv_freq(std::int64_t rotary_dim, double theta);

// cos and sign-folded sin at integer positions, [T, 1, rotary_dim], computed in f32 and cast to
// `dtype` as transformers does. Built once per forward and shared by every attention layer.
struct RopeTables {
  at::Tensor cos;
  at::Tensor sin;  // [-sin | sin]: rotate_half(x)·sin == swap_halves(x)·this
};
RopeTables rope_tables(const at::Tensor& positions, const at::Tensor& inv_freq,
                       at::ScalarType dtype);

// Rotates x [T, heads, D]: the first rotary_dim dims by NeoX rotate_half, the rest pass through.
at::Tensor apply_rope(const at::Tensor& x, const RopeTables& rope);

// x · wᵀ. A few rows of x (decode, verify blocks, the drafter's block) against a bf16 weight take
// the few-row kernels, which read the weight at the memory bandwidth (few_row_matmul.h); many rows
// (prefill, where oneDNN's GEMM wins) and other dtypes go to at::linear — except bf16 on a CPU
// without bf16 dot products, where oneDNN's bf16 path is ~100x slower than float32 and the
// weight is widened to float32 a block at a time instead. Where the CPU has AMX tiles
// (amx_matmul.h: exact products), a few bf16 rows against a weight of 512 KB or more and a float32
// x of many rows against a bf16 weight (the checks' float32 forward over a bf16 checkpoint) run on
// them; elsewhere that float32 product runs on float32 FMAs where the CPU has AVX-512 or AVX2
// (fma_gemm.h), else widens the weight a block at a time for OpenBLAS. All accumulate in float32.
at::Tensor dense(const at::Tensor& x, const at::Tensor& w);
// dense(x, wᵢ) for weights that share x (q, k and v; gate and up), the same bits: where the AMX
// tiles or the few-row kernels take them all, x is packed once and one parallel region runs every
// weight's rows.
std::vector<at::Tensor> dense(const at::Tensor& x, const std::vector<at::Tensor>& ws);
// dense(x, w).to(at::kFloat) — the product rounded to x's dtype, then widened — in one pass where
// the AMX tiles or the few-row kernels take it (the logits of a decode or verify pass).
at::Tensor dense_to_float(const at::Tensor& x, const at::Tensor& w);
// argmax_rows(dense_to_float(x, w)): each row's greedy pick, the product never written out where
// the few-row kernels take it (few_row_argmax).
std::vector<std::int64_t> dense_argmax(const at::Tensor& x, const at::Tensor& w);

// Runs the enclosing scope with a single-threaded BLAS: OpenBLAS's own thread pool fights ATen's
// OpenMP threads on the many small batched matmuls of Gated DeltaNet (2-3x slower on 2 cores).
// No-op for other BLAS.
class SingleThreadedBlas {
 public:
  SingleThreadedBlas();
  ~SingleThreadedBlas();
  SingleThreadedBlas(const SingleThreadedBlas&) = delete;
  SingleThreadedBlas& operator=(const SingleThreadedBlas&) = delete;

 private:
  int saved_ = 0;
};

// down(silu(gate(x)) ⊙ up(x)).
at::Tensor swiglu(const at::Tensor& x, const at::Tensor& gate_w, const at::Tensor& up_w,
                  const at::Tensor& down_w);

}  // namespace draftgate::model
