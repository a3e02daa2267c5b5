// The AMX BF16 tile kernel (tdpbf16ps: a 16 x 16 float32 tile += a 16 x 32 bf16 tile times a
// 32 x 16 one, each product exact, accumulated in float32). Compiled with -mamx-tile -mamx-bf16
// -mavx512f and run only where the CPU has them; it includes nothing but the intrinsics.

#include "amx_tiles.h"

#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "amx_tile_common.h"

namespace draftgate::model::amx {
namespace {

constexpr long kArchRequestXcompPerm = 0x1023;  // arch_prctl(ARCH_REQ_XCOMP_PERM, ...)
constexpr long kXfeatureTileData = 18;

// Weight lines asked for this many k steps (of 32) ahead: DRAM's latency is a few steps' work.
constexpr std::int64_t kAhead = 8;

}  // namespace

bool request_tiles() {
  return ::syscall(SYS_arch_prctl, kArchRequestXcompPerm, kXfeatureTileData) == 0;
}

namespace {

// A finished C tile (16 weight rows by 16 x rows, row-major) into y[m + j][n + i] for the x rows
// that exist: column j of the tile is row m + j of y.
inline __attribute__((always_inline)) void write_y(const Operands& a, const float* tile,
                                                   std::int64_t n, std::int64_t m) {
  const std::int64_t valid = a.rows - m < 16 ? a.rows - m : 16;
  constexpr __mmask16 kAll = kAllLanes;
  for (std::int64_t j = 0; j < valid; ++j) {
    const __m512 v = tile_column(tile, j);
    if (a.format == YFormat::kFloat32) {
      _mm512_storeu_ps(static_cast<float*>(a.y) + (m + j) * a.n + n, v);
      continue;
    }
    // Round to nearest even as c10::BFloat16 does (bits + 0x7FFF + lsb, NaN as 0x7FC0), not
    // vcvtneps2bf16, which flushes denormals: the same bits as every other bf16 path.
    const __m512i bits = _mm512_castps_si512(v);
    const __m512i lsb =
        _mm512_and_si512(_mm512_maskz_srli_epi32(kAll, bits, 16), _mm512_set1_epi32(1));
    __m512i rounded = _mm512_maskz_srli_epi32(
        kAll, _mm512_add_epi32(bits, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF))), 16);
    rounded = _mm512_mask_mov_epi32(rounded, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q),
                                    _mm512_set1_epi32(0x7FC0));
    if (a.format == YFormat::kBf16AsFloat32)
      _mm512_storeu_si512(static_cast<float*>(a.y) + (m + j) * a.n + n,
                          _mm512_maskz_slli_epi32(kAll, rounded, 16));
    else
      _mm256_storeu_si256(
          reinterpret_cast<__m256i*>(static_cast<std::uint16_t*>(a.y) + (m + j) * a.n + n),
          _mm512_maskz_cvtepi32_epi16(kAll, rounded));
  }
}

// C for weight rows [n, n + 32) and x rows [m, m + 16 · kBlocks) over k in [from, to): two weight
// row blocks by one or two x row blocks (a verify block of up to 16 rows takes one, and reads
// and multiplies no padding); rows_end bounds the prefetch: the end of this thread's rows.
template <int kBlocks>
inline __attribute__((always_inline)) void block(const Operands& a, std::int64_t n, std::int64_t m,
                                                 std::int64_t from, std::int64_t to,
                                                 std::int64_t rows_end) {
  const std::int64_t ldw_bytes = a.ldw * 2, ldc_bytes = a.mp * 4, ldx_bytes = a.mp * 4;
  const std::int64_t term_stride = a.k / 2 * a.mp * 2;
  // The partial sums of this block's tiles, where k is in several chunks (a.c is null otherwise).
  const auto partial = [&](std::int64_t row) { return a.c + row * a.mp + m; };
  if (from == 0) {
    _tile_zero(0);
    _tile_zero(2);
    if constexpr (kBlocks == 2) {
      _tile_zero(1);
      _tile_zero(3);
    }
  } else {
    _tile_loadd(0, partial(n), ldc_bytes);
    _tile_loadd(2, partial(n + 16), ldc_bytes);
    if constexpr (kBlocks == 2) {
      _tile_loadd(1, partial(n) + 16, ldc_bytes);
      _tile_loadd(3, partial(n + 16) + 16, ldc_bytes);
    }
  }
  for (std::int64_t at = from; at < to; at += 32) {
    // A tile is one 64-byte line of each of 16 weight rows, a row apart: a stride the hardware
    // prefetcher does not follow. The first pass over the rows asks for the lines kAhead steps on,
    // past the chunk's end in the next block of rows (short rows would otherwise start each block
    // with its first kAhead lines unrequested).
    if (m == 0) {
      std::int64_t rows = n, line = at + 32 * kAhead;
      if (line >= to) rows += 32, line += from - to;
      if (rows < rows_end && line < to)
        for (int r = 0; r < 32; ++r)
          _mm_prefetch(reinterpret_cast<const char*>(a.w + (rows + r) * a.ldw + line), _MM_HINT_T0);
    }
    _tile_loadd(4, a.w + n * a.ldw + at, ldw_bytes);
    _tile_loadd(5, a.w + (n + 16) * a.ldw + at, ldw_bytes);
    for (int t = 0; t < a.terms; ++t) {
      const std::uint16_t* x = a.xp + t * term_stride + (at / 2 * a.mp + m) * 2;
      _tile_loadd(6, x, ldx_bytes);
      _tile_dpbf16ps(0, 4, 6);
      _tile_dpbf16ps(2, 5, 6);
      if constexpr (kBlocks == 2) {
        _tile_loadd(7, x + 32, ldx_bytes);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(3, 5, 7);
      }
    }
  }
  if (to < a.k) {
    _tile_stored(0, partial(n), ldc_bytes);
    _tile_stored(2, partial(n + 16), ldc_bytes);
    if constexpr (kBlocks == 2) {
      _tile_stored(1, partial(n) + 16, ldc_bytes);
      _tile_stored(3, partial(n + 16) + 16, ldc_bytes);
    }
    return;
  }
  alignas(64) float tile[16 * 16];
  _tile_stored(0, tile, 64);
  write_y(a, tile, n, m);
  _tile_stored(2, tile, 64);
  write_y(a, tile, n + 16, m);
  if constexpr (kBlocks == 2) {
    _tile_stored(1, tile, 64);
    write_y(a, tile, n, m + 16);
    _tile_stored(3, tile, 64);
    write_y(a, tile, n + 16, m + 16);
  }
}

}  // namespace

// Tiles (amx_tile_common.h): C 0-3 (2 weight row blocks x 2 x row blocks), the weight tiles 4-5,
// the x tiles 6-7.
void multiply_rows(const Operands& a, std::int64_t begin, std::int64_t end) {
  const TileConfig config;
  _tile_loadconfig(&config);
  for (std::int64_t from = 0; from < a.k; from += a.chunk) {
    const std::int64_t to = from + a.chunk < a.k ? from + a.chunk : a.k;
    for (std::int64_t n = begin; n < end; n += 32) {
      std::int64_t m = 0;
      for (; m + 32 <= a.mp; m += 32) block<2>(a, n, m, from, to, end);
      if (m < a.mp) block<1>(a, n, m, from, to, end);
    }
  }
  _tile_release();
}

}  // namespace draftgate::model::amx
