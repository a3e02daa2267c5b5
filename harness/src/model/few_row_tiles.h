#pragma once
// The tile driver shared by the few-row kernels (few_row_matmul.cpp, few_row_bf16.cpp). Everything
// here is always inlined into the kernel entry points, so each is compiled for the instruction set
// of the entry point that inlines it; it uses no std:: function, whose shared out-of-line copies
// could come from the AVX-512 translation unit.

#include <cstdint>

namespace draftgate::model::few_row {

// x · wᵀ for weight rows [begin, end) and every row of x, into out[b * ldo + n].
struct Operands {
  const std::uint16_t* w;  // bf16 bits, row stride ldw
  std::int64_t ldw;
  const void* x;  // rows of x: float32 rows of stride k, or bf16 packed by pack_bf16_x
  std::int64_t rows_x;
  std::int64_t k;
  float* out;
  std::int64_t ldo;
  std::int64_t l1_bytes;  // a core's L1 data cache (the bf16 kernel keeps x there)
};

// The bf16 kernel's x, packed (few_row_matmul.cpp): each group of kGroupRows rows (the last may
// be shorter, bt rows) as [⌈k/32⌉][bt][32], the tail zero-filled, so a step's bt x vectors are one
// sequential run of bt · 64 bytes. Rows of x side by side were bt streams of k · 2 bytes each: at
// k = 12288 (Qwen3-8B's MLP down) 8 rows no longer fit L1, and a stream per row beside the weight
// rows' read 8 / 16 rows at 25-26 / 13-17 GB/s where the packed run read 28-37 / 20-25 in a
// stand-alone loop on a Zen 5 EPYC (docs/performance.md).
constexpr std::int64_t packed_k(std::int64_t k) { return (k + 31) / 32 * 32; }

// The entry points, one per kernel; the bf16 one exists only where the compiler targets x86-64.
void float32_fma_rows(const Operands& all, std::int64_t begin, std::int64_t end);
void bf16_dot_rows(const Operands& all, std::int64_t begin, std::int64_t end);

#define DRAFTGATE_INLINE inline __attribute__((always_inline))

constexpr int kGroupRows = 8;  // rows of x per tile
constexpr int kMaxRows = 16;   // kFewRowsMax (few_row_matmul.cpp asserts it)

DRAFTGATE_INLINE std::int64_t lesser(std::int64_t a, std::int64_t b) { return a < b ? a : b; }

// Tile<R, BT>::run(args...) for a group of bt rows of x.
template <template <int, int> class Tile, int R, class... Args>
DRAFTGATE_INLINE void run_tile(int bt, Args... args) {
  switch (bt) {
    case 1:
      return Tile<R, 1>::run(args...);
    case 2:
      return Tile<R, 2>::run(args...);
    case 3:
      return Tile<R, 3>::run(args...);
    case 4:
      return Tile<R, 4>::run(args...);
    case 5:
      return Tile<R, 5>::run(args...);
    case 6:
      return Tile<R, 6>::run(args...);
    case 7:
      return Tile<R, 7>::run(args...);
    default:
      return Tile<R, 8>::run(args...);
  }
}

}  // namespace draftgate::model::few_row
