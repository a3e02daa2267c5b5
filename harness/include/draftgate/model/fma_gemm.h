#pragma once
// x · wᵀ for a float32 x of many rows and a bf16 weight on AVX-512 float32 FMAs: the checks'
// float32 forward over a bf16 checkpoint on a CPU without AMX tiles. The weight is widened 12 rows
// by 256 columns at a time into a block in L1 as the product uses it, so it is read once, as
// stored, and never held widened; x is packed once per call into panels of 32 rows. Before, each
// 32 MB of the weight was widened into a buffer that OpenBLAS then packed a second time, and
// OpenBLAS's threads fought ATen's on the same cores (docs/performance.md).
//
// Precision: each product x·w is exact inside its FMA (a bf16 w has 8 significant bits); an output
// is summed as a blocked float32 GEMM sums it — 256 products at a time from zero in ascending k,
// one rounding per FMA, the block sums added in ascending order: |y − y_exact| ≤ (256 + ⌈K/256⌉) ·
// 2⁻²⁴ · Σ|w||x|, within a float32 GEMM's (K + 32) · 2⁻²⁴ · Σ|w||x|, its typical error within 2x
// of OpenBLAS's (tests/unit/float32_times_bf16_test.cpp, against float64). The order is the same
// whatever the number of rows of x, the tile an output falls in or the threads, so a row has the
// bits it has alone.

#include <ATen/ATen.h>

namespace draftgate::model {

// Whether this CPU runs the kernel (AVX-512F).
bool fma_gemm_available();

// Whether fma_gemm takes this product: a CPU float32 x [..., K] and a CPU bf16 weight [N, K] with
// contiguous rows, outside autograd.
bool fma_gemm_applies(const at::Tensor& x, const at::Tensor& w);

// x [..., K] · w [N, K]ᵀ → float32 [..., N]. fma_gemm_available() and fma_gemm_applies() must hold.
at::Tensor fma_gemm(const at::Tensor& x, const at::Tensor& w);

}  // namespace draftgate::model
