#pragma once
// The tile loop of fma_gemm.h, written once over an instruction set's vector traits V and
// instantiated in one file per instruction set, compiled for it alone. Every function here is a
// template on V, so no out-of-line copy is shared between those files. V provides: Vec, kLanes,
// kGeometry (kLanes = panel_rows / 2), zero(), load(p), broadcast(f), fmadd(a, b, c) = a·b + c,
// add(a, b), store(p, v) (p aligned to the vector) and widen(bits, out): kLanes bf16 values to
// float32.

#include "fma_gemm_kernel.h"

namespace draftgate::model::fma_tiles {

// Weight rows [n0, n0 + cols) x columns [k0, k0 + depth) as float32 into block[j * kDepth + c];
// rows past n are zero (their sums are never written out).
template <class V>
void widen_block(const Operands& op, std::int64_t n0, std::int64_t k0, int depth, float* block) {
  for (int j = 0; j < V::kGeometry.tile_cols; ++j) {
    float* out = block + j * kDepth;
    if (n0 + j >= op.n) {
      for (int c = 0; c < depth; ++c) out[c] = 0.0f;
      continue;
    }
    const std::uint16_t* row = op.w + (n0 + j) * op.ldw + k0;
    int c = 0;
    for (; c + V::kLanes <= depth; c += V::kLanes) V::widen(row + c, out + c);
    for (; c < depth; ++c) {
      const std::uint32_t widened = static_cast<std::uint32_t>(row[c]) << 16;
      __builtin_memcpy(out + c, &widened, sizeof widened);
    }
  }
}

// The block's sums, Σ_c panel[c * rows + i] · block[j * kDepth + c] over c < depth in ascending c
// from zero, stored to sums[j * rows + i] (`first`) or added to it: a blocked GEMM's order, whose
// typical error is a float32 GEMM's (one running sum over K = 5120 measured 3.7x OpenBLAS's).
template <class V, bool first>
void tile(const float* panel, const float* block, int depth, float* sums) {
  constexpr int cols = V::kGeometry.tile_cols, rows = V::kGeometry.panel_rows;
  typename V::Vec lo[cols], hi[cols];
#pragma GCC unroll 12
  for (int j = 0; j < cols; ++j) lo[j] = hi[j] = V::zero();
  for (int c = 0; c < depth; ++c) {
    const typename V::Vec x0 = V::load(panel + c * rows),
                          x1 = V::load(panel + c * rows + V::kLanes);
#pragma GCC unroll 12
    for (int j = 0; j < cols; ++j) {
      const typename V::Vec w = V::broadcast(block[j * kDepth + c]);
      lo[j] = V::fmadd(x0, w, lo[j]);
      hi[j] = V::fmadd(x1, w, hi[j]);
    }
  }
#pragma GCC unroll 12
  for (int j = 0; j < cols; ++j) {
    float* s = sums + j * rows;
    V::store(s, first ? lo[j] : V::add(V::load(s), lo[j]));
    V::store(s + V::kLanes, first ? hi[j] : V::add(V::load(s + V::kLanes), hi[j]));
  }
}

template <class V>
void multiply_tiles(const Operands& op, std::int64_t tile_begin, std::int64_t tile_end) {
  constexpr int cols = V::kGeometry.tile_cols, rows = V::kGeometry.panel_rows;
  alignas(64) float block[cols * kDepth];
  alignas(64) float sums[kBlockPanels * cols * rows];
  const std::int64_t panels = (op.m + rows - 1) / rows;
  for (std::int64_t p0 = 0; p0 < panels; p0 += kBlockPanels) {
    const std::int64_t count = panels - p0 < kBlockPanels ? panels - p0 : kBlockPanels;
    for (std::int64_t t = tile_begin; t < tile_end; ++t) {
      const std::int64_t n0 = t * cols;
      for (std::int64_t k0 = 0; k0 < op.k; k0 += kDepth) {
        const int depth = static_cast<int>(op.k - k0 < kDepth ? op.k - k0 : kDepth);
        widen_block<V>(op, n0, k0, depth, block);
        for (std::int64_t p = 0; p < count; ++p) {
          const float* panel = op.panels + ((p0 + p) * op.k + k0) * rows;
          float* s = sums + p * cols * rows;
          k0 == 0 ? tile<V, true>(panel, block, depth, s) : tile<V, false>(panel, block, depth, s);
        }
      }
      const int written = static_cast<int>(op.n - n0 < cols ? op.n - n0 : cols);
      for (std::int64_t p = 0; p < count; ++p) {
        const float* s = sums + p * cols * rows;
        for (int i = 0; i < rows; ++i) {
          const std::int64_t row = (p0 + p) * rows + i;
          if (row >= op.m) break;
          float* out = op.y + row * op.ldy + n0;
          for (int j = 0; j < written; ++j) out[j] = s[j * rows + i];
        }
      }
    }
  }
}

}  // namespace draftgate::model::fma_tiles
