#pragma once
// x · wᵀ for a float32 x of many rows and a bf16 weight on float32 FMAs (AVX-512, else AVX2): the
// checks' float32 forward over a bf16 checkpoint on a CPU without AMX tiles. The weight is widened
// a tile of rows by 256 columns at a time into a block in L1 as the product uses it, so it is read
// once, as stored, and never held widened; x is packed once per call into panels of rows. Before,
// each 32 MB of the weight was widened into a buffer that OpenBLAS then packed a second time, and
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

#include <string>

namespace draftgate::model {

// The instruction sets it is written for, one tile loop instantiated for each
// (src/model/fma_gemm_tiles.h): 32 rows of x by 12 weight rows in zmm registers, or 16 by 6 in ymm.
enum class FmaGemmIsa { kAvx512, kAvx2 };

// Whether this CPU runs the kernel for `isa` (AVX-512F; AVX2 with FMA), or for either.
bool fma_gemm_available(FmaGemmIsa isa);
bool fma_gemm_available();
// The widest this CPU runs; fma_gemm_available() must hold.
FmaGemmIsa best_fma_gemm_isa();
std::string fma_gemm_isa_name(FmaGemmIsa isa);

// Whether fma_gemm takes this product: a CPU float32 x [..., K] and a CPU bf16 weight [N, K] with
// contiguous rows, outside autograd.
bool fma_gemm_applies(const at::Tensor& x, const at::Tensor& w);

// x [..., K] · w [N, K]ᵀ → float32 [..., N], with the same bits on either instruction set (the
// same products in the same order). fma_gemm_applies() and fma_gemm_available(isa) must hold.
at::Tensor fma_gemm(const at::Tensor& x, const at::Tensor& w, FmaGemmIsa isa);
at::Tensor fma_gemm(const at::Tensor& x, const at::Tensor& w);

}  // namespace draftgate::model
