#pragma once
// x · wᵀ for a few rows of x and a bf16 weight: the matmuls of decode (1 row), verify (a block of
// B rows) and the drafter's block pass. They are bound by reading the weight, so each kernel
// streams every weight row once, multiplies it with all rows of x while it is in registers, and
// splits the weight rows over ATen's threads (oneDNN's bf16 path reads a weight at 45-60 % of the
// bandwidth on one row here, these kernels at 60-92 %; docs/performance.md).
//
// Precision: every kernel forms the products exactly (a bf16 times a bf16 or a float32 is exact in
// float32 up to the float32 rounding of the product) and accumulates in float32 in 16 (bf16-dot,
// reduced every 1024 of K and the blocks' sums added in order) or 32 (float32-fma, reduced at the
// end) partial sums per output, in a fixed order — the same for any number of rows, so a row of a
// verify pass has the bits of that row decoded alone; the result is rounded once to x's dtype. Its
// error is that of any float32 GEMM, |y - y_exact| <= K · 2^-24 · Σ|w||x|
// (tests/unit/few_row_matmul_test.cpp checks each kernel against float64 on that bound). The bf16
// dot-product kernel also flushes denormal inputs and partial sums to zero (the CPU instruction
// does), which moves a result by at most K · 2^-126 · max|x|.

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "draftgate/model/product_output.h"

namespace draftgate::model {

enum class FewRowKernel {
  kBf16Dot,     // AVX-512 BF16 dot products (vdpbf16ps); x must be bf16
  kFloat32Fma,  // the weight widened to float32 and multiplied with FMAs; any x
};

inline constexpr std::int64_t kFewRowsMax = 16;

// Whether this CPU runs `kernel` (the bf16 dot products need AVX-512 BF16).
bool few_row_kernel_available(FewRowKernel kernel);
// The fastest kernel this CPU runs for x of `x_dtype`.
FewRowKernel best_few_row_kernel(at::ScalarType x_dtype);
std::string few_row_kernel_name(FewRowKernel kernel);

// Whether few_row_matmul takes this product: a CPU bf16 weight [N, K] with contiguous rows, and x
// [..., K] of float32 or bf16 with at most kFewRowsMax rows.
bool few_row_matmul_applies(const at::Tensor& x, const at::Tensor& w);

// x [..., K] · w [N, K]ᵀ → [..., N] in x's dtype (or, for a bf16 x, widened: ProductOutput).
// `kernel` must be available and take x's dtype.
at::Tensor few_row_matmul(const at::Tensor& x, const at::Tensor& w, FewRowKernel kernel,
                          ProductOutput output = ProductOutput::kXDtype);
inline at::Tensor few_row_matmul(const at::Tensor& x, const at::Tensor& w) {
  return few_row_matmul(x, w, best_few_row_kernel(x.scalar_type()));
}

// x · wᵢᵀ for weights that share x and K (a layer's q, k and v; an MLP's gate and up): x packed
// once and every weight's rows in one parallel region, each product with the bits
// few_row_matmul(x, wᵢ, kernel) gives it (a verify pass of a 0.6B target ran ~200 parallel
// regions, and the threads waited at the end of each).
std::vector<at::Tensor> few_row_matmul(const at::Tensor& x, const std::vector<at::Tensor>& ws,
                                       FewRowKernel kernel);

// Each row's argmax of few_row_matmul(x, w, kernel, ProductOutput::kWidened) — the index
// argmax_rows picks in it — without writing the product out: greedy picks from an lm_head (a
// block's logits are 16 rows of the vocabulary in float32, written and read back only to be
// scanned). x must be bf16 and w have rows.
std::vector<std::int64_t> few_row_argmax(const at::Tensor& x, const at::Tensor& w,
                                         FewRowKernel kernel);

}  // namespace draftgate::model
