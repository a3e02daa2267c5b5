// The AVX-512 BF16 few-row kernel (vdpbf16ps: 32 bf16 products per instruction, summed pairwise
// into 16 float32 lanes). This file alone is compiled with -mavx512f -mavx512bw -mavx512bf16 and
// runs only where the CPU has them (few_row_matmul.cpp asks); it includes nothing but the
// intrinsics and the tile driver, so no shared inline function is compiled for AVX-512 here.

#include <immintrin.h>

#include "few_row_tiles.h"

namespace draftgate::model::few_row {

namespace {

// The lane sums of 16 vectors at once: lane 4q + m of the result is the sum of v[4m + q]. Each is
// the tree that summing one vector's lanes by shuffles would form (lane i with i + 8, then i + 4,
// i + 2, i + 1), so the bits are the same, in 45 shuffles and adds instead of 128 (3-6 % more
// GFLOP/s with the weight in L3 at 8 and 16 rows on a Zen 5 EPYC). Only v[0, Live) are summed
// (the rest must be zero): no lane of the tree adds one vector's values to another's, so the
// steps that hold only the zeros are left out (a one-row tile has 8 sums, a 3 x 8 tile 16 + 8).
template <int Live>
DRAFTGATE_INLINE __m512 lane_sums(const __m512 (&v)[16]) {
  __m512 halves[8], quarters[4], pairs[2];
#pragma GCC unroll 8
  for (int j = 0; j < 8; ++j)  // v[2j] in lanes 0-7, v[2j + 1] in 8-15: lane i + lane i + 8
    halves[j] =
        2 * j >= Live
            ? _mm512_setzero_ps()
            : _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * j], v[2 * j + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                            _mm512_shuffle_f32x4(v[2 * j], v[2 * j + 1], _MM_SHUFFLE(3, 2, 3, 2)));
#pragma GCC unroll 4
  for (int j = 0; j < 4; ++j)  // quarter q: v[4j + q]'s 4 sums so far (i + 4)
    quarters[j] =
        4 * j >= Live
            ? _mm512_setzero_ps()
            : _mm512_add_ps(
                  _mm512_shuffle_f32x4(halves[2 * j], halves[2 * j + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                  _mm512_shuffle_f32x4(halves[2 * j], halves[2 * j + 1], _MM_SHUFFLE(3, 1, 3, 1)));
#pragma GCC unroll 2
  for (int j = 0; j < 2; ++j)  // quarter q: 2 sums of v[q + 8j], then of v[q + 8j + 4] (i + 2)
    pairs[j] =
        8 * j >= Live
            ? _mm512_setzero_ps()
            : _mm512_add_ps(
                  _mm512_shuffle_ps(quarters[2 * j], quarters[2 * j + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                  _mm512_shuffle_ps(quarters[2 * j], quarters[2 * j + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  return _mm512_add_ps(_mm512_shuffle_ps(pairs[0], pairs[1], _MM_SHUFFLE(2, 0, 2, 0)),  // (i + 1)
                       _mm512_shuffle_ps(pairs[0], pairs[1], _MM_SHUFFLE(3, 1, 3, 1)));
}

// The tiles ~32 KB of weight ahead, in the order the tiles run, are fetched into L2 as a tile
// runs: with only the next tile fetched into L1, a stream of 8 or 16 rows of x reached half the
// read bandwidth on the AVX-512 BF16 EPYC; with the far fetch this tile, timed alone over a 192 MB
// weight, read 1 / 8 / 16 rows at 88 / 98 / 66 % of it (docs/performance.md).
constexpr std::int64_t kFarBytes = 32 * 1024;

// Each output's k runs in blocks of 1024 whatever the rows of x: a block's 16 lane sums are reduced
// to one (lane_sums) and the blocks' sums added in order, so a row has the same bits in a product
// of any number of rows. Sums carried whole between blocks instead (16 float32 lanes an output,
// stored and reloaded by every tile at every block, as many bytes as the tile's weight) held 16
// rows at K = 2048 / 3072 / 4096 to 380 / 525 / 730 us a 3072-row weight streamed from memory,
// against 340 / 470 / 660 so (1 and 8 rows within 3 %; interleaved, Zen 5 EPYC:
// docs/performance.md).
constexpr std::int64_t kBlockK = 1024;
// x of up to 32 KB (16 rows at K = 1024, one row at any K up to 16384) stays in L1 whole: each
// tile then runs over all of k in one call, so the weight is read row after row. A larger x runs
// a block of k at a time over a panel of tiles (x of 16 rows for a block is 32 KB); x of 64-96 KB
// read whole from L2 for every tile was slower. Beside x, L1 holds the 3-row tile being read and
// the next one fetched into it: 8 rows at K = 2048 (32 KB of x and 2 x 12 KB of tiles, over a Zen
// 5's 48 KB) ran whole 2-3 % slower a verify step than a block at a time. (The 4-row tiles of 2-4
// rows ran whole as fast or faster at K = 3072-4096; one row's tile is one stream and fetches no
// next tile: docs/performance.md.)
constexpr std::int64_t kWholeXBytes = 32 * 1024;
template <int R>
DRAFTGATE_INLINE bool x_fits_whole(const Operands& a) {
  const std::int64_t x_bytes = 2 * a.rows_x * a.k, tiles_bytes = 2 * (2 * R * a.k);
  return x_bytes <= kWholeXBytes && (R != 3 || x_bytes + tiles_bytes <= a.l1_bytes);
}

// The bf16 kernel's weight rows per tile. One row of x that fits L1 whole: one weight row at a
// time, so each thread reads its share of the weight as one sequential stream (a decode step's
// products read 17-25 % faster than with 8 rows side by side, 8 streams a thread: 0.6B / 0.8B
// decode 36.0 / 43.6 -> 30.2 / 35.2 ms, docs/performance.md); its one chain of dot products still
// outruns a core's share of the reading. Else, for a group of `bt` rows of x, enough accumulators
// to hide the latency of the dot products, few enough to stay in 32 vector registers (a one-row
// tile for 8 rows read as fast alone but slower in a verify pass).
DRAFTGATE_INLINE int rows_per_tile(const Operands& a) {
  const std::int64_t bt = lesser(a.rows_x, kGroupRows);
  return bt == 1 ? (x_fits_whole<1>(a) ? 1 : 8) : bt <= 4 ? 4 : 3;
}

// Tiles per panel: the panel's weight rows stream past a block of x in L1. 16 to 128 tiles
// measured the same.
constexpr std::int64_t kPanelTiles = 32;
static_assert(kMaxRows / kGroupRows <= 2, "a tile's fetches are split between two groups");

// Which steps of a tile fetch the far tile: every one where one group of x rows runs over the
// weight; of two groups, the first group's even steps and the second's odd ones (Bf16DotTile::run).
enum class Fetch { kEvery, kEven, kOdd };

template <int R, int BT>
struct Bf16DotTile {
  // near / far: where the next tile and the one far ahead start, in elements from w. Linear: the
  // tiles' rows lie back to back (ldw = k) and run over all of k from 0, and the next and the far
  // tile are fetched in address order, R lines a step; else their rows at this step's k. R rows
  // side by side were R streams a thread: 8-row verify passes ran 5-11 % slower (two groups of x
  // rows, which fetch the far tile at alternate steps, the same either way: docs/performance.md).
  template <bool FetchFar, bool Linear>
  static DRAFTGATE_INLINE void step(const std::uint16_t* w, std::int64_t ldw,
                                    const std::uint16_t* x, std::int64_t at, std::int64_t near,
                                    std::int64_t far, __mmask32 mask, __m512 (&acc)[R][BT]) {
    __m512bh wv[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      wv[r] = (__m512bh)_mm512_maskz_loadu_epi16(mask, w + r * ldw + at);
      const std::int64_t line = Linear ? at * R + r * 32 : r * ldw + at;
      // The next tile into L1 at every step, in both groups of x rows (at alternate steps, 15 and
      // 16 rows ran 1-4 % slower); a one-row tile's next tile is the rest of its stream: fetching
      // it too was slower.
      if (R > 1) _mm_prefetch(reinterpret_cast<const char*>(w + near + line), _MM_HINT_T0);
      if (FetchFar) _mm_prefetch(reinterpret_cast<const char*>(w + far + line), _MM_HINT_T1);
    }
#pragma GCC unroll 8
    for (int b = 0; b < BT; ++b) {
      const auto xb = (__m512bh)_mm512_loadu_si512(x + at * BT + b * 32);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) acc[r][b] = _mm512_dpbf16_ps(acc[r][b], wv[r], xb);
    }
  }

  // The steps over k in [k0, k1): every one fetching the far tile, or every other one from the
  // first (kEven) or the second (kOdd), both of the latter in the same loop of pairs; a masked last
  // step fetches in every group (one step of a block).
  template <bool Linear>
  static DRAFTGATE_INLINE void steps(const std::uint16_t* w, std::int64_t ldw,
                                     const std::uint16_t* x, std::int64_t k0, std::int64_t k1,
                                     std::int64_t near, std::int64_t far, Fetch fetch,
                                     __m512 (&acc)[R][BT]) {
    const std::int64_t whole = k1 / 32 * 32;
    std::int64_t at = k0;
    if (fetch == Fetch::kEvery) {
      for (; at < whole; at += 32) step<true, Linear>(w, ldw, x, at, near, far, ~0u, acc);
    } else {
      if (fetch == Fetch::kOdd && at < whole) {
        step<false, Linear>(w, ldw, x, at, near, far, ~0u, acc);
        at += 32;
      }
      for (; at + 32 < whole; at += 64) {
        step<true, Linear>(w, ldw, x, at, near, far, ~0u, acc);
        step<false, Linear>(w, ldw, x, at + 32, near, far, ~0u, acc);
      }
      if (at < whole) step<true, Linear>(w, ldw, x, at, near, far, ~0u, acc);
    }
    if (whole < k1) step<true, Linear>(w, ldw, x, whole, near, far, (1u << (k1 - whole)) - 1, acc);
  }

  // The tile's sums over [k0, k1), block by block (kBlockK): each block's reduced (lane_sums),
  // stored to out at k = 0, added to it after.
  // Not inlined: in one function with all the other tiles, GCC spilled an accumulator of the
  // loop to the stack (a store and a load in every step's chain; 10 % of 8 rows from L3).
  // `fetch`: which of the tile's steps fetch the far tile. Where two groups of x rows run over
  // the same weight, each fetches half of it (the first at even steps, the second at odd ones),
  // so the fetches spread over both groups' time: with the first group alone fetching, memory
  // idled while the second ran (16 rows read a streamed weight 5-35 % slower on a Zen 5 EPYC),
  // and with both fetching every line (far and next) the repeated fetches cost 10-25 %.
  static __attribute__((noinline)) void run(const std::uint16_t* w, std::int64_t ldw,
                                            const std::uint16_t* x, std::int64_t k0,
                                            std::int64_t k1, std::int64_t near, std::int64_t far,
                                            Fetch fetch, bool linear, float* out,
                                            std::int64_t ldo) {
    for (std::int64_t b0 = k0; b0 < k1; b0 += kBlockK) {
      __m512 acc[R][BT];
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
        for (int b = 0; b < BT; ++b) acc[r][b] = _mm512_setzero_ps();
      const std::int64_t b1 = lesser(k1, b0 + kBlockK);
      if (linear)
        steps<true>(w, ldw, x, b0, b1, near, far, fetch, acc);
      else
        steps<false>(w, ldw, x, b0, b1, near, far, fetch, acc);
      add_sums<0>(acc, b0, out, ldo);
      if constexpr (R * BT > 16) add_sums<16>(acc, b0, out, ldo);
    }
  }

  // Sums [First, First + 16) of the tile (zeros past the last), reduced and stored or added.
  template <int First>
  static DRAFTGATE_INLINE void add_sums(const __m512 (&acc)[R][BT], std::int64_t k0, float* out,
                                        std::int64_t ldo) {
    constexpr int kLive = R * BT - First < 16 ? R * BT - First : 16;
    __m512 v[16];
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i)
      v[i] = i < kLive ? acc[(First + i) / BT][(First + i) % BT] : _mm512_setzero_ps();
    alignas(64) float sums[16];
    _mm512_store_ps(sums, lane_sums<kLive>(v));
#pragma GCC unroll 16
    for (int i = 0; i < kLive; ++i) {
      float& o = out[(First + i) % BT * ldo + (First + i) / BT];
      o = k0 == 0 ? sums[i % 4 * 4 + i / 4] : o + sums[i % 4 * 4 + i / 4];
    }
  }
};

// The tiles run a panel at a time, the panel's tiles one k block after another, so the panel's
// block of x stays in L1 while the panel's weight rows stream past it; where x fits L1 whole
// (x_fits_whole), every tile over all of k in one call.
template <int R>
DRAFTGATE_INLINE void blocked(const Operands& a, std::int64_t from, std::int64_t to) {
  const std::int64_t k = a.k, kp = packed_k(k), ldw = a.ldw;
  const std::int64_t kc = x_fits_whole<R>(a) ? k : lesser(k, kBlockK);
  const std::int64_t blocks = (k + kc - 1) / kc, tiles = (to - from) / R;
  const std::int64_t panel = blocks == 1 ? tiles : kPanelTiles;
  const std::int64_t ahead = lesser(panel, kFarBytes / (R * kc * 2) + 2);
  const bool linear = kc == k && ldw == k && a.rows_x <= kGroupRows;
  const auto* x = static_cast<const std::uint16_t*>(a.x);
  auto fetch = [&](std::int64_t b) {
    return a.rows_x <= kGroupRows ? Fetch::kEvery : b == 0 ? Fetch::kEven : Fetch::kOdd;
  };
  for (std::int64_t p0 = 0; p0 < tiles; p0 += panel) {
    const std::int64_t count = lesser(panel, tiles - p0);
    for (std::int64_t kb = 0; kb < blocks; ++kb) {
      const std::int64_t k0 = kb * kc, k1 = lesser(k, k0 + kc);
      // Where the tile d places later in this order starts, relative to tile t, in elements.
      auto later = [&](std::int64_t t, std::int64_t d) {
        if (t + d < count) return d * R * ldw;
        if (kb + 1 < blocks) return (d - count) * R * ldw + kc;  // the next block
        return d * R * ldw - k0;                                 // the next panel
      };
      for (std::int64_t t = 0; t < count; ++t) {
        const std::int64_t n = from + (p0 + t) * R, near = later(t, 1), far = later(t, ahead);
        for (std::int64_t b = 0; b < a.rows_x; b += kGroupRows)
          run_tile<Bf16DotTile, R>(static_cast<int>(lesser(a.rows_x - b, kGroupRows)),
                                   a.w + n * ldw, ldw, x + b * kp, k0, k1, near, far, fetch(b),
                                   linear, a.out + b * a.ldo + n, a.ldo);
      }
    }
  }
}

}  // namespace

void bf16_dot_rows(const Operands& all, std::int64_t begin, std::int64_t end) {
  const int r = rows_per_tile(all);
  const std::int64_t split = begin + (end - begin) / r * r;
  if (r == 8)
    blocked<8>(all, begin, split);
  else if (r == 4)
    blocked<4>(all, begin, split);
  else if (r == 3)
    blocked<3>(all, begin, split);
  else
    blocked<1>(all, begin, split);
  blocked<1>(all, split, end);  // rows short of a whole tile
}

}  // namespace draftgate::model::few_row
