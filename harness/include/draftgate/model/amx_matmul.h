#pragma once
// x · wᵀ for a bf16 weight on AMX tiles (Intel AMX-BF16: a 16 x 32 by 32 x 16 bf16 tile product
// accumulated in float32): the float32 forwards of the checks over a bf16 checkpoint (a streamed
// 27B target's arithmetic: ~1 TFLOP/s of bf16 products per core measured here, so a float32 x in
// three terms runs ~2.8x OpenBLAS's float32 GEMM), and decode and verify passes, whose weights a
// verify block reads at 2.5-2.6x the bf16 dot-product kernel's rate (docs/performance.md).
//
// Precision: a float32 x is split exactly into three bf16 terms (x = x₁ + x₂ + x₃: each takes the
// next 8 bits of the 24-bit significand), so every product w·xₜ is exact and the result is a
// float32 GEMM over 3K products: |y − y_exact| ≤ (3K + 32) · 2⁻²⁴ · Σ|w||x|, plus the flush of
// denormal terms (≤ 3K · 2⁻¹²⁶ · max|w|) — what any float32 GEMM may differ by, within a factor 3
// of the bound (tests/unit/float32_times_bf16_test.cpp checks it against float64). A bf16 x is one
// term, the result rounded once to bf16. Each output's sum is formed in one order whatever the
// number of rows of x.

#include <ATen/ATen.h>

#include <vector>

#include "draftgate/model/product_output.h"

namespace draftgate::model {

// Whether this CPU has AMX-BF16 and the kernel lets this process use the tile registers.
bool amx_available();

// Whether amx_matmul takes this product: a CPU bf16 weight [N, K] with contiguous rows, N and K
// multiples of 32, and x [..., K] of float32 or bf16 outside autograd.
bool amx_matmul_applies(const at::Tensor& x, const at::Tensor& w);

// x [..., K] · w [N, K]ᵀ → [..., N]. amx_available() and amx_matmul_applies() must hold.
at::Tensor amx_matmul(const at::Tensor& x, const at::Tensor& w,
                      ProductOutput output = ProductOutput::kXDtype);

// x · wᵢᵀ for weights that share x and K (a layer's q, k and v; an MLP's gate and up): x packed
// once and every weight's rows in one parallel region; each product has the bits amx_matmul(x, wᵢ)
// gives it.
std::vector<at::Tensor> amx_matmul(const at::Tensor& x, const std::vector<at::Tensor>& ws);

}  // namespace draftgate::model
