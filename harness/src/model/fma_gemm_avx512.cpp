// fma_gemm.h on AVX-512F: 12 weight rows broadcast against two zmm vectors of a panel's 32 rows.

#include <immintrin.h>

#include "fma_gemm_tiles.h"

namespace draftgate::model::fma_tiles {
namespace {

struct Avx512 {
  using Vec = __m512;
  static constexpr int kLanes = 16;
  static constexpr Geometry kGeometry = kAvx512;
  static Vec zero() { return _mm512_setzero_ps(); }
  static Vec load(const float* p) { return _mm512_load_ps(p); }
  static Vec broadcast(float f) { return _mm512_set1_ps(f); }
  static Vec fmadd(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
  static Vec add(Vec a, Vec b) { return _mm512_add_ps(a, b); }
  static void store(float* p, Vec v) { _mm512_store_ps(p, v); }
  static void widen(const std::uint16_t* bits, float* out) {
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bits));
    _mm512_store_ps(out, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(b), 16)));
  }
};
static_assert(Avx512::kGeometry.panel_rows == 2 * Avx512::kLanes);

}  // namespace

void multiply_tiles_avx512(const Operands& op, std::int64_t tile_begin, std::int64_t tile_end) {
  multiply_tiles<Avx512>(op, tile_begin, tile_end);
}

}  // namespace draftgate::model::fma_tiles
