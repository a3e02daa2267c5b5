// fma_gemm.h on AVX2 + FMA: 6 weight rows broadcast against two ymm vectors of a panel's 16 rows.

#include <immintrin.h>

#include "fma_gemm_tiles.h"

namespace draftgate::model::fma_tiles {
namespace {

struct Avx2 {
  using Vec = __m256;
  static constexpr int kLanes = 8;
  static constexpr Geometry kGeometry = kAvx2;
  static Vec zero() { return _mm256_setzero_ps(); }
  static Vec load(const float* p) { return _mm256_load_ps(p); }
  static Vec broadcast(float f) { return _mm256_set1_ps(f); }
  static Vec fmadd(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
  static Vec add(Vec a, Vec b) { return _mm256_add_ps(a, b); }
  static void store(float* p, Vec v) { _mm256_store_ps(p, v); }
  static void widen(const std::uint16_t* bits, float* out) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(bits));
    _mm256_store_ps(out, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(b), 16)));
  }
};
static_assert(Avx2::kGeometry.panel_rows == 2 * Avx2::kLanes);

}  // namespace

void multiply_tiles_avx2(const Operands& op, std::int64_t tile_begin, std::int64_t tile_end) {
  multiply_tiles<Avx2>(op, tile_begin, tile_end);
}

}  // namespace draftgate::model::fma_tiles
