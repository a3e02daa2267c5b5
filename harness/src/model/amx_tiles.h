#pragma once
// The AMX tile kernel's entry points (amx_tiles.cpp, compiled for AMX and AVX-512F alone and run
// only where the CPU has them and the kernel lets this process use it; amx_matmul.cpp asks). Plain
// types only: nothing inline is shared with the AMX translation unit.

#include <cstdint>

namespace draftgate::model::amx {

// How y holds the float32 sums: as they are, or rounded to bf16 nearest even (as c10::BFloat16
// rounds, NaN as 0x7FC0) and stored as bf16 bits or as the float32 of those bits.
enum class YFormat : int { kFloat32, kBf16, kBf16AsFloat32 };

// The operands of C[n][m] += Σ_t Σ_k w[n][k] · x_t[m][k] for weight rows [begin, end).
struct Operands {
  const std::uint16_t* w;  // bf16 bits [N, K], row stride ldw elements
  std::int64_t ldw;
  // The terms of x, bf16 bits in pairs of k (the layout a tile multiply takes its second operand
  // in): x_t[m][k] at xp[((t · K/2 + k/2) · mp + m) · 2 + k % 2].
  const std::uint16_t* xp;
  int terms;
  std::int64_t mp;  // rows of x, padded to a multiple of 16
  std::int64_t k;   // a multiple of 32
  // k in chunks of this (a multiple of 32) whose x tiles (terms x chunk x mp bf16) stay in L2
  // while the weight rows pass.
  std::int64_t chunk;
  // Partial sums between chunks of k, [N, mp] float32, C[n][m] at c[n · mp + m]; null where
  // chunk >= k (one chunk: nothing to keep between chunks).
  float* c;
  // The product, [rows, N] row-major, in `format`.
  void* y;
  YFormat format;
  std::int64_t rows;  // rows of x (<= mp) written to y
  std::int64_t n;     // weight rows N: y's row stride
};

// Whether this process may use the tile registers (Linux asks a process to request them once).
bool request_tiles();

// C for weight rows [begin, end), both multiples of 32.
void multiply_rows(const Operands& a, std::int64_t begin, std::int64_t end);

}  // namespace draftgate::model::amx
