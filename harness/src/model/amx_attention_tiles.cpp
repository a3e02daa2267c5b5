// The AMX tile products of few-row attention (attention_pair_products.h). Compiled with -mamx-tile
// -mamx-bf16 -mavx512f -mavx512bw and run only where the CPU has them.
//
// Scores: a key tile (16 key rows x 32 of d, read where the cache holds it) times the items'
// query pairs gives 16 keys x 16 items; the stored tile is written transposed, a row per item.
// Weighted values: a tile of probabilities (16 items x 32 key rows) times the value rows paired
// (two rows interleaved, the layout a tile multiply takes its second operand in) gives 16 items x
// 16 of d directly.

#include <immintrin.h>

#include <cstring>

#include "amx_tile_common.h"
#include "attention_pair_products.h"
#include "attention_value_pairs.h"

namespace draftgate::model::amx {
namespace {

// Tiles: C 0-3, the first operand 4, the second 5-7 (and 5 again for a fourth block).
template <int kBlocks>
inline __attribute__((always_inline)) void zero_sums() {
  _tile_zero(0);
  if constexpr (kBlocks > 1) _tile_zero(1);
  if constexpr (kBlocks > 2) _tile_zero(2);
  if constexpr (kBlocks > 3) _tile_zero(3);
}

// C tiles 0 .. kBlocks - 1 += the tile at a (rows a_bytes apart) times the tiles at b, b + 32,
// ... (rows b_bytes apart): one first operand against kBlocks blocks of 16 columns.
template <int kBlocks>
inline __attribute__((always_inline)) void multiply_add(const std::uint16_t* a,
                                                        std::int64_t a_bytes,
                                                        const std::uint16_t* b,
                                                        std::int64_t b_bytes) {
  _tile_loadd(4, a, a_bytes);
  _tile_loadd(5, b, b_bytes);
  _tile_dpbf16ps(0, 4, 5);
  if constexpr (kBlocks > 1) {
    _tile_loadd(6, b + 32, b_bytes);
    _tile_dpbf16ps(1, 4, 6);
  }
  if constexpr (kBlocks > 2) {
    _tile_loadd(7, b + 64, b_bytes);
    _tile_dpbf16ps(2, 4, 7);
  }
  if constexpr (kBlocks > 3) {
    _tile_loadd(5, b + 96, b_bytes);
    _tile_dpbf16ps(3, 4, 5);
  }
}

// Scores of 16 key rows from r0 against kBlocks blocks of 16 items from i0.
template <int kBlocks>
inline __attribute__((always_inline)) void score_blocks(const AttentionScoreOperands& a,
                                                        const std::uint16_t* keys,
                                                        std::int64_t key_bytes, std::int64_t r0,
                                                        std::int64_t i0) {
  zero_sums<kBlocks>();
  for (std::int64_t d = 0; d < a.width; d += 32)
    multiply_add<kBlocks>(keys + d, key_bytes, a.query_pairs + (d / 2 * a.items + i0) * 2,
                          a.items * 4);
  alignas(64) float tile[16 * 16];
  const auto write = [&](int block) {
    for (std::int64_t j = 0; j < 16; ++j)
      _mm512_storeu_ps(a.scores + (i0 + block * 16 + j) * a.score_stride + r0,
                       tile_column(tile, j));
  };
  _tile_stored(0, tile, 64);
  write(0);
  if constexpr (kBlocks > 1) {
    _tile_stored(1, tile, 64);
    write(1);
  }
  if constexpr (kBlocks > 2) {
    _tile_stored(2, tile, 64);
    write(2);
  }
  if constexpr (kBlocks > 3) {
    _tile_stored(3, tile, 64);
    write(3);
  }
}

// The weighted values of 16 items from i0 in kBlocks blocks of 16 of d from n0.
template <int kBlocks>
inline __attribute__((always_inline)) void value_blocks(const AttentionValueOperands& a,
                                                        std::int64_t padded_rows, std::int64_t i0,
                                                        std::int64_t n0) {
  zero_sums<kBlocks>();
  for (std::int64_t r = 0; r < padded_rows; r += 32)
    multiply_add<kBlocks>(a.probs + i0 * a.prob_stride + r, a.prob_stride * 2,
                          a.value_pairs + (r / 2 * a.width + n0) * 2, a.width * 4);
  float* out = a.out + i0 * a.width + n0;
  const std::int64_t out_bytes = a.width * 4;
  _tile_stored(0, out, out_bytes);
  if constexpr (kBlocks > 1) _tile_stored(1, out + 16, out_bytes);
  if constexpr (kBlocks > 2) _tile_stored(2, out + 32, out_bytes);
  if constexpr (kBlocks > 3) _tile_stored(3, out + 48, out_bytes);
}

}  // namespace

void key_scores(const AttentionScoreOperands& a) {
  const TileConfig config;
  _tile_loadconfig(&config);
  // The last block of key rows where fewer than 16 remain: copied beside zeros, so no tile reads
  // past the cache's rows.
  alignas(64) std::uint16_t tail[16 * kMaxPairAttentionWidth];
  for (std::int64_t r0 = 0; r0 < a.rows; r0 += 16) {
    const std::uint16_t* keys = a.keys + r0 * a.key_stride;
    std::int64_t key_bytes = a.key_stride * 2;
    if (a.rows - r0 < 16) {
      std::memset(tail, 0, sizeof(std::uint16_t) * 16 * a.width);
      for (std::int64_t r = r0; r < a.rows; ++r)
        std::memcpy(tail + (r - r0) * a.width, a.keys + r * a.key_stride,
                    sizeof(std::uint16_t) * a.width);
      keys = tail;
      key_bytes = a.width * 2;
    }
    std::int64_t i0 = 0;
    for (; i0 + 64 <= a.items; i0 += 64) score_blocks<4>(a, keys, key_bytes, r0, i0);
    switch ((a.items - i0) / 16) {
      case 3:
        score_blocks<3>(a, keys, key_bytes, r0, i0);
        break;
      case 2:
        score_blocks<2>(a, keys, key_bytes, r0, i0);
        break;
      case 1:
        score_blocks<1>(a, keys, key_bytes, r0, i0);
        break;
      default:
        break;
    }
  }
  _tile_release();
}

void weighted_values(const AttentionValueOperands& a) {
  const std::int64_t padded_rows = (a.rows + 31) / 32 * 32;
  pair_values(a, padded_rows);
  const TileConfig config;
  _tile_loadconfig(&config);
  for (std::int64_t i0 = 0; i0 < a.items; i0 += 16) {
    std::int64_t n0 = 0;
    for (; n0 + 64 <= a.width; n0 += 64) value_blocks<4>(a, padded_rows, i0, n0);
    if (n0 < a.width) value_blocks<2>(a, padded_rows, i0, n0);  // width is a multiple of 32
  }
  _tile_release();
}

}  // namespace draftgate::model::amx
