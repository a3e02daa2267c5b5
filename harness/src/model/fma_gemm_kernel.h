#pragma once
// What fma_gemm.cpp hands the AVX-512 kernel (fma_gemm_avx512.cpp), which is compiled for AVX-512F
// alone and called only where the CPU has it.

#include <cstdint>

namespace draftgate::model::fma_tiles {

inline constexpr int kPanelRows = 32;   // rows of x per panel: two 16-lane vectors
inline constexpr int kTileCols = 12;    // weight rows per tile: 2 x 12 accumulators of 32 registers
inline constexpr int kDepth = 256;      // columns of K per widened block (12 KB in L1)
inline constexpr int kBlockPanels = 8;  // panels whose sums a tile keeps at once (12 KB)

// y [m, n] (row stride ldy) = x · wᵀ over k, for the weight's tiles [tile_begin, tile_end).
struct Operands {
  const float* panels;  // x packed: panel p holds rows 32p… as [k][32], rows past m zero
  std::int64_t m, k, n;
  const std::uint16_t* w;  // bf16 bits, row stride ldw
  std::int64_t ldw;
  float* y;
  std::int64_t ldy;
};

void multiply_tiles(const Operands& op, std::int64_t tile_begin, std::int64_t tile_end);

}  // namespace draftgate::model::fma_tiles
