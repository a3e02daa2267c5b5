// The peak of vdpbf16ps (machine_bounds.h): compiled alone for AVX-512 BF16, run only where the
// CPU has it.

#include <immintrin.h>

#include "machine_bounds.h"

namespace draftgate::bench {

double bf16_dot_chains(long steps, float* sink) {
  // 16 independent accumulators cover the instruction's latency at one or two issued a cycle.
  constexpr int kChains = 16;
  __m512 acc[kChains];
#pragma GCC unroll 16
  for (int c = 0; c < kChains; ++c)
    acc[c] = _mm512_set1_ps(static_cast<float>(c));       // distinct, or the compiler merges them
  const auto one = (__m512bh)_mm512_set1_epi16(0x3f80);   // 1.0
  const auto tiny = (__m512bh)_mm512_set1_epi16(0x3380);  // 2^-24: the sums stay far from overflow
  for (long s = 0; s < steps; ++s)
#pragma GCC unroll 16
    for (int c = 0; c < kChains; ++c) acc[c] = _mm512_dpbf16_ps(acc[c], one, tiny);
  __m512 total = acc[0];
#pragma GCC unroll 16
  for (int c = 1; c < kChains; ++c) total = _mm512_add_ps(total, acc[c]);
  *sink += _mm512_reduce_add_ps(total);
  return static_cast<double>(steps) * kChains * 64;  // 32 bf16 products summed into 16 lanes
}

}  // namespace draftgate::bench
