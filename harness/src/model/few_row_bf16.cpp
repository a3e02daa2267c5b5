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
// GFLOP/s with the weight in L3 at 8 and 16 rows on a Zen 5 EPYC).
DRAFTGATE_INLINE __m512 lane_sums(const __m512 (&v)[16]) {
  __m512 halves[8], quarters[4], pairs[2];
#pragma GCC unroll 8
  for (int j = 0; j < 8; ++j)  // v[2j] in lanes 0-7, v[2j + 1] in 8-15: lane i + lane i + 8
    halves[j] =
        _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * j], v[2 * j + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                      _mm512_shuffle_f32x4(v[2 * j], v[2 * j + 1], _MM_SHUFFLE(3, 2, 3, 2)));
#pragma GCC unroll 4
  for (int j = 0; j < 4; ++j)  // quarter q: v[4j + q]'s 4 sums so far (i + 4)
    quarters[j] = _mm512_add_ps(
        _mm512_shuffle_f32x4(halves[2 * j], halves[2 * j + 1], _MM_SHUFFLE(2, 0, 2, 0)),
        _mm512_shuffle_f32x4(halves[2 * j], halves[2 * j + 1], _MM_SHUFFLE(3, 1, 3, 1)));
#pragma GCC unroll 2
  for (int j = 0; j < 2; ++j)  // quarter q: 2 sums of v[q + 8j], then of v[q + 8j + 4] (i + 2)
    pairs[j] = _mm512_add_ps(
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

// The bf16 kernel's weight rows per tile for a group of `bt` rows of x: enough accumulators to
// hide the latency of its dot products, few enough to stay in 32 vector registers.
constexpr int rows_per_tile(int bt) { return bt == 1 ? 8 : bt <= 4 ? 4 : 3; }

// A k block of x is kept to 16 KB so that it stays in L1 (48 KB on Zen 5) beside the weight tile
// and the next one. x of 16 rows at k = 3072 (96 KB) was read again from L2 for every tile, and
// with the other changes of that day 8 / 16 rows read Qwen3-8B's MLP down at 34.5 -> 49.5 /
// 21.0 -> 25.0 GB/s (stand-alone, interleaved, on a Zen 5 EPYC: docs/performance.md).
constexpr std::int64_t kXBlockBytes = 16 * 1024;
// x of up to 32 KB is one block: the tiles' sums then stay in registers (in blocks, every tile
// stores and reloads them between blocks, 96 KB a panel through L1), and the weight is read row
// after row. 16 rows at k = 1024 (Qwen3-0.6B's q, k, v, gate, up and lm_head) read a streamed
// weight at 37-41 GB/s in two blocks, 44-50 in one (interleaved, Zen 5 EPYC: docs/performance.md);
// x of 64-96 KB in one block, read from L2 for every tile, was slower than blocks.
constexpr std::int64_t kWholeXBytes = 32 * 1024;
// Tiles per panel: the panel's sums between k blocks (32 · 2 groups · 24 vectors = 96 KB) stay
// in L2. 16 to 128 tiles measured the same.
constexpr std::int64_t kPanelTiles = 32;
constexpr int kMaxGroups = kMaxRows / kGroupRows;
constexpr int kSlot = 24;  // vectors per tile and group, R · BT at most
thread_local __m512 saved_sums[kPanelTiles * kMaxGroups * kSlot];
const __m512 zero_sums[kSlot] = {};

constexpr bool every_tile_fits_a_slot() {
  for (int bt = 1; bt <= kGroupRows; ++bt)
    if (rows_per_tile(bt) * bt > kSlot) return false;
  return true;
}
static_assert(every_tile_fits_a_slot(), "a tile's sums fit its slot of the scratch");

// Which steps of a tile fetch ahead: every one where one group of x rows runs over the weight; of
// two groups, the first group's even steps and the second's odd ones (Bf16DotTile::run).
enum class Fetch { kEvery, kEven, kOdd };
static_assert(kMaxGroups <= 2, "a tile's fetches are split between two groups of x rows at most");

template <int R, int BT>
struct Bf16DotTile {
  // near / far: where the next tile and the one far ahead start, in elements from w.
  template <bool Ahead>
  static DRAFTGATE_INLINE void step(const std::uint16_t* w, std::int64_t ldw,
                                    const std::uint16_t* x, std::int64_t at, std::int64_t near,
                                    std::int64_t far, __mmask32 mask, __m512 (&acc)[R][BT]) {
    __m512bh wv[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      wv[r] = (__m512bh)_mm512_maskz_loadu_epi16(mask, w + r * ldw + at);
      if (Ahead) {
        _mm_prefetch(reinterpret_cast<const char*>(w + near + r * ldw + at), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(w + far + r * ldw + at), _MM_HINT_T1);
      }
    }
#pragma GCC unroll 8
    for (int b = 0; b < BT; ++b) {
      const auto xb = (__m512bh)_mm512_loadu_si512(x + at * BT + b * 32);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) acc[r][b] = _mm512_dpbf16_ps(acc[r][b], wv[r], xb);
    }
  }

  // The steps over k in [k0, k1): every one fetching ahead, or every other one from the first
  // (kEven) or the second (kOdd), both of the latter in the same loop of pairs; a masked last step
  // fetches in every group (one step of a block).
  static DRAFTGATE_INLINE void steps(const std::uint16_t* w, std::int64_t ldw,
                                     const std::uint16_t* x, std::int64_t k0, std::int64_t k1,
                                     std::int64_t near, std::int64_t far, Fetch fetch,
                                     __m512 (&acc)[R][BT]) {
    const std::int64_t whole = k1 / 32 * 32;
    std::int64_t at = k0;
    if (fetch == Fetch::kEvery) {
      for (; at < whole; at += 32) step<true>(w, ldw, x, at, near, far, ~0u, acc);
    } else {
      if (fetch == Fetch::kOdd && at < whole) {
        step<false>(w, ldw, x, at, near, far, ~0u, acc);
        at += 32;
      }
      for (; at + 32 < whole; at += 64) {
        step<true>(w, ldw, x, at, near, far, ~0u, acc);
        step<false>(w, ldw, x, at + 32, near, far, ~0u, acc);
      }
      if (at < whole) step<true>(w, ldw, x, at, near, far, ~0u, acc);
    }
    if (whole < k1) step<true>(w, ldw, x, whole, near, far, (1u << (k1 - whole)) - 1, acc);
  }

  // The tile's sums over k in [k0, k1), started from `from` (zeros at k0 == 0): written to out as
  // lane sums at k1 == k, else to `saved` for the next block. The sums are kept whole between
  // blocks, so each output is summed in the same order as in one pass over k: the same bits.
  // Not inlined: in one function with all the other tiles, GCC spilled an accumulator of the
  // loop to the stack (a store and a load in every step's chain; 10 % of 8 rows from L3).
  // `fetch`: which of the tile's steps fetch the tiles ahead. Where two groups of x rows run over
  // the same weight, each fetches half of it (the first at even steps, the second at odd ones),
  // so the fetches spread over both groups' time: with the first group alone fetching, memory
  // idled while the second ran (16 rows read a streamed weight 5-35 % slower on a Zen 5 EPYC),
  // and with both fetching every line the repeated fetches cost 10-25 %.
  static __attribute__((noinline)) void run(const std::uint16_t* w, std::int64_t ldw,
                                            const std::uint16_t* x, std::int64_t k0,
                                            std::int64_t k1, std::int64_t k, std::int64_t near,
                                            std::int64_t far, Fetch fetch, const __m512* from,
                                            __m512* saved, float* out, std::int64_t ldo) {
    __m512 acc[R][BT];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
      for (int b = 0; b < BT; ++b) acc[r][b] = from[r * BT + b];
    steps(w, ldw, x, k0, k1, near, far, fetch, acc);
    if (k1 < k) {
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
        for (int b = 0; b < BT; ++b) saved[r * BT + b] = acc[r][b];
      return;
    }
#pragma GCC unroll 2
    for (int first = 0; first < R * BT; first += 16) {  // 16 sums at a time, zeros past the last
      __m512 v[16];
#pragma GCC unroll 16
      for (int i = 0; i < 16; ++i)
        v[i] = first + i < R * BT ? acc[(first + i) / BT][(first + i) % BT] : _mm512_setzero_ps();
      alignas(64) float sums[16];
      _mm512_store_ps(sums, lane_sums(v));
#pragma GCC unroll 16
      for (int i = 0; i < 16; ++i)
        if (first + i < R * BT)
          out[(first + i) % BT * ldo + (first + i) / BT] = sums[i % 4 * 4 + i / 4];
    }
  }
};

// The tiles run a panel at a time, the panel's tiles one k block after another, so the panel's
// block of x stays in L1 while the panel's weight rows stream past it.
template <int R>
DRAFTGATE_INLINE void blocked(const Operands& a, std::int64_t from, std::int64_t to) {
  const std::int64_t k = a.k, kp = packed_k(k), ldw = a.ldw;
  const std::int64_t kc =
      2 * a.rows_x * k <= kWholeXBytes ? k : lesser(k, kXBlockBytes / (2 * a.rows_x) / 32 * 32);
  const std::int64_t blocks = (k + kc - 1) / kc, tiles = (to - from) / R;
  const std::int64_t panel = blocks == 1 ? tiles : kPanelTiles;
  const std::int64_t ahead = lesser(panel, kFarBytes / (R * kc * 2) + 2);
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
        __m512* saved = saved_sums + t * kMaxGroups * kSlot;
        for (std::int64_t b = 0; b < a.rows_x; b += kGroupRows, saved += kSlot)
          run_tile<Bf16DotTile, R>(static_cast<int>(lesser(a.rows_x - b, kGroupRows)),
                                   a.w + n * ldw, ldw, x + b * kp, k0, k1, k, near, far, fetch(b),
                                   kb == 0 ? zero_sums : saved, saved, a.out + b * a.ldo + n,
                                   a.ldo);
      }
    }
  }
}

}  // namespace

void bf16_dot_rows(const Operands& all, std::int64_t begin, std::int64_t end) {
  const int bt = static_cast<int>(lesser(all.rows_x, kGroupRows));
  const int r = rows_per_tile(bt);
  const std::int64_t split = begin + (end - begin) / r * r;
  if (r == 8)
    blocked<8>(all, begin, split);
  else if (r == 4)
    blocked<4>(all, begin, split);
  else
    blocked<3>(all, begin, split);
  blocked<1>(all, split, end);
}

}  // namespace draftgate::model::few_row
