#pragma once
// What the AMX translation units share: the tile configuration they load (palette 1, eight tiles
// of 16 rows of 64 bytes: 16 x 16 float32 sums, 16 x 32 bf16 operands) and the read of a stored
// float32 tile's column. Included only by files compiled for AMX and AVX-512F.

#include <immintrin.h>

#include <cstdint>

namespace draftgate::model::amx {

struct alignas(64) TileConfig {
  std::uint8_t palette = 1;
  std::uint8_t start_row = 0;
  std::uint8_t reserved[14] = {};
  std::uint16_t bytes_per_row[16] = {64, 64, 64, 64, 64, 64, 64, 64};
  std::uint8_t rows[16] = {16, 16, 16, 16, 16, 16, 16, 16};
};

// The masked forms with all lanes on: the unmasked ones start from GCC 12's "undefined" vectors,
// which -Wmaybe-uninitialized reports.
constexpr __mmask16 kAllLanes = 0xFFFF;

// Column j of a 16 x 16 float32 tile stored row-major: the tile's transpose, a row at a time.
inline __attribute__((always_inline)) __m512 tile_column(const float* tile, std::int64_t j) {
  const __m512i column =
      _mm512_set_epi32(240, 224, 208, 192, 176, 160, 144, 128, 112, 96, 80, 64, 48, 32, 16, 0);
  return _mm512_mask_i32gather_ps(_mm512_setzero_ps(), kAllLanes,
                                  _mm512_add_epi32(column, _mm512_set1_epi32(static_cast<int>(j))),
                                  tile, 4);
}

}  // namespace draftgate::model::amx
