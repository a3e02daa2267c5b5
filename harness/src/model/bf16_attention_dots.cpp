// The AVX-512 BF16 pair products of few-row attention (attention_pair_products.h), for CPUs with
// bf16 dot products but no AMX. Compiled with -mavx512f -mavx512bw -mavx512bf16 and run only where
// the CPU has them.
//
// vdpbf16ps adds two exact bf16 products to each of 16 float32 lanes, so a pair of d (or of key
// rows) is one 32-bit word, broadcast from where it lies:
// - scores: the lanes are 16 items, whose query pairs are one vector; a key row's pair of d is
//   broadcast from the cache; 8 key rows at once, their 8 vectors of 16 items written transposed.
// - weighted values: the lanes are 16 of d of two value rows interleaved (as the tiles take them);
//   an item's pair of probabilities is broadcast; two items at once over up to 128 of d.
// Each output adds its pairs in order of d (or of rows), whatever the items or rows beside it.

#include <immintrin.h>

#include "attention_pair_products.h"
#include "attention_value_pairs.h"

namespace draftgate::model::bf16_dots {
namespace {

constexpr int kKeyRows = 8;  // key rows per block of scores: enough sums to hide a dot's latency

inline __attribute__((always_inline)) __m512bh broadcast_pair(const std::uint16_t* pair) {
  int word;
  __builtin_memcpy(&word, pair, sizeof word);
  return (__m512bh)_mm512_set1_epi32(word);
}

// Scores of `count` (<= kKeyRows) key rows from r0 against the 16 items from i0.
inline __attribute__((always_inline)) void score_block(const AttentionScoreOperands& a,
                                                       std::int64_t r0, int count,
                                                       std::int64_t i0) {
  const std::uint16_t* rows[kKeyRows];
  for (int j = 0; j < kKeyRows; ++j)  // rows past `count` repeat the last one, left unwritten
    rows[j] = a.keys + (r0 + (j < count ? j : count - 1)) * a.key_stride;
  __m512 sums[kKeyRows];
#pragma GCC unroll 8
  for (int j = 0; j < kKeyRows; ++j) sums[j] = _mm512_setzero_ps();
  for (std::int64_t d = 0; d < a.width; d += 2) {
    const auto items = (__m512bh)_mm512_loadu_si512(a.query_pairs + (d / 2 * a.items + i0) * 2);
#pragma GCC unroll 8
    for (int j = 0; j < kKeyRows; ++j)
      sums[j] = _mm512_dpbf16_ps(sums[j], items, broadcast_pair(rows[j] + d));
  }
  alignas(64) float block[kKeyRows][16];
#pragma GCC unroll 8
  for (int j = 0; j < kKeyRows; ++j) _mm512_store_ps(block[j], sums[j]);
  for (int i = 0; i < 16; ++i) {
    float* out = a.scores + (i0 + i) * a.score_stride + r0;
    for (int j = 0; j < count; ++j) out[j] = block[j][i];
  }
}

// The weighted values of items i0 and i0 + 1 over kBlocks blocks of 16 of d from n0.
template <int kBlocks>
inline __attribute__((always_inline)) void value_block(const AttentionValueOperands& a,
                                                       std::int64_t padded_rows, std::int64_t i0,
                                                       std::int64_t n0) {
  __m512 sums[2][kBlocks];
#pragma GCC unroll 8
  for (int b = 0; b < kBlocks; ++b) sums[0][b] = sums[1][b] = _mm512_setzero_ps();
  const std::uint16_t* first = a.probs + i0 * a.prob_stride;
  const std::uint16_t* second = first + a.prob_stride;
  for (std::int64_t r = 0; r < padded_rows; r += 2) {
    const __m512bh p0 = broadcast_pair(first + r), p1 = broadcast_pair(second + r);
    const std::uint16_t* pairs = a.value_pairs + (r / 2 * a.width + n0) * 2;
#pragma GCC unroll 8
    for (int b = 0; b < kBlocks; ++b) {
      const auto v = (__m512bh)_mm512_loadu_si512(pairs + 32 * b);
      sums[0][b] = _mm512_dpbf16_ps(sums[0][b], v, p0);
      sums[1][b] = _mm512_dpbf16_ps(sums[1][b], v, p1);
    }
  }
#pragma GCC unroll 8
  for (int b = 0; b < kBlocks; ++b) {
    _mm512_storeu_ps(a.out + i0 * a.width + n0 + 16 * b, sums[0][b]);
    _mm512_storeu_ps(a.out + (i0 + 1) * a.width + n0 + 16 * b, sums[1][b]);
  }
}

}  // namespace

void key_scores(const AttentionScoreOperands& a) {
  for (std::int64_t i0 = 0; i0 < a.items; i0 += 16)
    for (std::int64_t r0 = 0; r0 < a.rows; r0 += kKeyRows)
      score_block(a, r0, static_cast<int>(a.rows - r0 < kKeyRows ? a.rows - r0 : kKeyRows), i0);
}

void weighted_values(const AttentionValueOperands& a) {
  const std::int64_t padded_rows = (a.rows + 31) / 32 * 32;
  pair_values(a, padded_rows);
  for (std::int64_t i0 = 0; i0 < a.items; i0 += 2) {
    std::int64_t n0 = 0;
    for (; n0 + 128 <= a.width; n0 += 128) value_block<8>(a, padded_rows, i0, n0);
    switch ((a.width - n0) / 32) {  // width is a multiple of 32
      case 3:
        value_block<6>(a, padded_rows, i0, n0);
        break;
      case 2:
        value_block<4>(a, padded_rows, i0, n0);
        break;
      case 1:
        value_block<2>(a, padded_rows, i0, n0);
        break;
      default:
        break;
    }
  }
}

}  // namespace draftgate::model::bf16_dots
