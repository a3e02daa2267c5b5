#pragma once
// Value rows paired for the pair products (attention_pair_products.h), shared by both backends'
// files. Internal linkage and always inlined: each file compiles its own copy for its own
// instructions (AVX-512BW at least), so no out-of-line copy of one is linked into the other.

#include <immintrin.h>

#include <cstdint>

#include "attention_pair_products.h"

namespace draftgate::model {
namespace {

// Value rows r and r + 1 interleaved: pairs[(r / 2 · width + n) · 2 + r % 2] = value_r[n], rows
// past `rows` zero (a probability of zero times whatever lies beyond the cache could be NaN).
inline __attribute__((always_inline)) void pair_values(const AttentionValueOperands& a,
                                                       std::int64_t padded_rows) {
  const __m512i low = _mm512_set_epi16(47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41, 9, 40, 8,
                                       39, 7, 38, 6, 37, 5, 36, 4, 35, 3, 34, 2, 33, 1, 32, 0);
  const __m512i high = _mm512_add_epi16(low, _mm512_set1_epi16(16));
  const auto row = [&](std::int64_t r, std::int64_t n) {
    return r < a.rows ? _mm512_loadu_si512(a.values + r * a.value_stride + n)
                      : _mm512_setzero_si512();
  };
  for (std::int64_t r = 0; r < padded_rows; r += 2)
    for (std::int64_t n = 0; n < a.width; n += 32) {
      const __m512i even = row(r, n), odd = row(r + 1, n);
      std::uint16_t* out = a.value_pairs + (r / 2 * a.width + n) * 2;
      _mm512_storeu_si512(out, _mm512_permutex2var_epi16(even, low, odd));
      _mm512_storeu_si512(out + 32, _mm512_permutex2var_epi16(even, high, odd));
    }
}

}  // namespace
}  // namespace draftgate::model
