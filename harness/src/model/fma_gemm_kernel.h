#pragma once
// What fma_gemm.cpp hands the FMA kernels: one file per instruction set (fma_gemm_avx512.cpp,
// fma_gemm_avx2.cpp), each compiled for its own alone and called only where the CPU has it.

#include <cstdint>

namespace draftgate::model::fma_tiles {

inline constexpr int kDepth = 256;      // columns of K per widened block (in L1)
inline constexpr int kBlockPanels = 8;  // panels whose sums a tile keeps at once

// Rows of x per panel (two vectors) and weight rows per tile: 2 x tile_cols sums held in registers.
struct Geometry {
  int panel_rows, tile_cols;
};
inline constexpr Geometry kAvx512{32, 12};  // 24 of 32 zmm registers
inline constexpr Geometry kAvx2{16, 6};     // 12 of 16 ymm registers

// y [m, n] (row stride ldy) = x · wᵀ over k, for the weight's tiles [tile_begin, tile_end).
struct Operands {
  const float* panels;  // x packed: panel p holds rows p·panel_rows… as [k][panel_rows], rows
                        // past m zero
  std::int64_t m, k, n;
  const std::uint16_t* w;  // bf16 bits, row stride ldw
  std::int64_t ldw;
  float* y;
  std::int64_t ldy;
};

void multiply_tiles_avx512(const Operands& op, std::int64_t tile_begin, std::int64_t tile_end);
void multiply_tiles_avx2(const Operands& op, std::int64_t tile_begin, std::int64_t tile_end);

}  // namespace draftgate::model::fma_tiles
