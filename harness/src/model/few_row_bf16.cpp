// The AVX-512 BF16 few-row kernel (vdpbf16ps: 32 bf16 products per instruction, summed pairwise
// into 16 float32 lanes). This file alone is compiled with -mavx512f -mavx512bw -mavx512bf16 and
// runs only where the CPU has them (few_row_matmul.cpp asks); it includes nothing but the
// intrinsics and the tile driver, so no shared inline function is compiled for AVX-512 here.

#include <immintrin.h>

#include "few_row_tiles.h"

namespace draftgate::model::few_row {

namespace {

// The 16 lanes' sum as a tree of shuffles and adds (a serial sum of the lanes took ~40 % of a
// 1024-wide row's time).
DRAFTGATE_INLINE float lane_sum(__m512 v) {
  v = _mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(1, 0, 3, 2)));
  v = _mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(2, 3, 0, 1)));
  v = _mm512_add_ps(v, _mm512_shuffle_ps(v, v, _MM_SHUFFLE(1, 0, 3, 2)));
  v = _mm512_add_ps(v, _mm512_shuffle_ps(v, v, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm512_cvtss_f32(v);
}

// Weight rows this far ahead (at least ~32 KB of weight) are fetched into L2 as the tile runs:
// with only the next tile fetched into L1, a stream of 8 or 16 rows of x reached half the read
// bandwidth on the AVX-512 BF16 EPYC; with the far fetch this tile, timed alone over a 192 MB
// weight, read 1 / 8 / 16 rows at 88 / 98 / 66 % of it (docs/performance.md).
constexpr std::int64_t kFarBytes = 32 * 1024;

template <int R, int BT>
struct Bf16DotTile {
  static DRAFTGATE_INLINE void step(const std::uint16_t* w, std::int64_t ldw,
                                    const std::uint16_t* x, std::int64_t at, std::int64_t far,
                                    __mmask32 mask, __m512 (&acc)[R][BT]) {
    __m512bh wv[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      wv[r] = (__m512bh)_mm512_maskz_loadu_epi16(mask, w + r * ldw + at);
      // The next tile's rows into L1 (rows of a few KB are streams too short for the hardware
      // prefetcher to ramp up on) and the rows `far` ahead into L2.
      _mm_prefetch(reinterpret_cast<const char*>(w + (R + r) * ldw + at), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(w + (far + r) * ldw + at), _MM_HINT_T1);
    }
#pragma GCC unroll 8
    for (int b = 0; b < BT; ++b) {
      // x packed (few_row_tiles.h): the step's BT vectors side by side, the tail zero-filled.
      const auto xb = (__m512bh)_mm512_loadu_si512(x + at * BT + b * 32);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) acc[r][b] = _mm512_dpbf16_ps(acc[r][b], wv[r], xb);
    }
  }

  static DRAFTGATE_INLINE void run(const std::uint16_t* w, std::int64_t ldw, const void* xv,
                                   std::int64_t k, float* out, std::int64_t ldo) {
    const auto* x = static_cast<const std::uint16_t*>(xv);
    const std::int64_t far_rows = (kFarBytes / (2 * ldw) + R) / R * R;
    const std::int64_t far = far_rows > 2 * R ? far_rows : 2 * R;
    // Fully unrolled loops over constant indices keep the accumulators in registers.
    __m512 acc[R][BT];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
      for (int b = 0; b < BT; ++b) acc[r][b] = _mm512_setzero_ps();
    const std::int64_t whole = k / 32 * 32;
    for (std::int64_t at = 0; at < whole; at += 32) step(w, ldw, x, at, far, ~0u, acc);
    if (whole < k) step(w, ldw, x, whole, far, (1u << (k - whole)) - 1, acc);  // the ragged end
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
      for (int b = 0; b < BT; ++b) out[b * ldo + r] = lane_sum(acc[r][b]);
  }
};

}  // namespace

void bf16_dot_rows(const Operands& all, std::int64_t begin, std::int64_t end) {
  rows<Bf16DotTile, 2>(all, begin, end);
}

}  // namespace draftgate::model::few_row
