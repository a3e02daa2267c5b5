#include "draftgate/model/few_row_matmul.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "few_row_tiles.h"

namespace draftgate::model {

namespace few_row {
namespace {

DRAFTGATE_INLINE float widen(std::uint16_t bits) {
  const std::uint32_t wide = static_cast<std::uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &wide, sizeof f);
  return f;
}

// The float32 kernel in portable vector types of 8 lanes (one ymm register on x86-64-v3/v4, two
// xmm on the baseline), compiled for the instruction set of each clone of float32_fma_rows.
typedef float F32x8 __attribute__((vector_size(32)));
typedef std::uint32_t U32x8 __attribute__((vector_size(32)));
typedef std::uint16_t U16x8 __attribute__((vector_size(16)));

// By reference: a vector passed or returned by value has another ABI in each clone.
DRAFTGATE_INLINE void widen8(F32x8& out, const std::uint16_t* p) {
  U16x8 bits;
  std::memcpy(&bits, p, sizeof bits);
  out = reinterpret_cast<F32x8>(__builtin_convertvector(bits, U32x8) << 16);
}

DRAFTGATE_INLINE void load8(F32x8& out, const float* p) { std::memcpy(&out, p, sizeof out); }

constexpr int kChains = 4;  // independent sums per output: k in steps of 32
constexpr std::int64_t kStep = 8 * kChains;
constexpr int kGroup = 2;               // rows of x whose sums stay in registers at once
constexpr std::int64_t kScratch = 512;  // weights widened once per chunk for bigger groups
// Software prefetch 1 KB ahead on top of the hardware's: 20-30 % more bandwidth on one row here.
constexpr std::int64_t kAhead = 512;

// Every output's sum is formed in one order whatever the number of rows of x (a verify row has
// the bits of the same row decoded alone): chain c takes k = 32i + 8c ... 32i + 8c + 7, the four
// chains are added pairwise, the 8 lanes as a tree, then the k tail in order.
DRAFTGATE_INLINE float finish(const F32x8* chains, const std::uint16_t* w, const float* x,
                              std::int64_t from, std::int64_t k) {
  const F32x8 v = (chains[0] + chains[1]) + (chains[2] + chains[3]);
  float sum = ((v[0] + v[4]) + (v[2] + v[6])) + ((v[1] + v[5]) + (v[3] + v[7]));
  for (std::int64_t t = from; t < k; ++t) sum += widen(w[t]) * x[t];
  return sum;
}

// One weight row times BT rows of x. The row is read once, front to back: sequential rows are
// what the hardware prefetcher streams at the full bandwidth (a tile of rows read side by side,
// each a stream of a few KB, reached half of it on an AVX2 machine).
template <int R, int BT>
struct Float32FmaTile {
  static_assert(R == 1, "the float32 kernel reads one weight row at a time");
  static DRAFTGATE_INLINE void run(const std::uint16_t* w, std::int64_t, const float* x,
                                   std::int64_t k, float* out, std::int64_t ldo) {
    const std::int64_t whole = k / kStep * kStep;
    F32x8 acc[BT][kChains] = {};
    if constexpr (BT <= kGroup) {
      for (std::int64_t at = 0; at < whole; at += kStep) {
        __builtin_prefetch(w + at + kAhead);
#pragma GCC unroll 4
        for (int c = 0; c < kChains; ++c) {
          F32x8 wc, xc;
          widen8(wc, w + at + 8 * c);
#pragma GCC unroll 2
          for (int b = 0; b < BT; ++b) {
            load8(xc, x + b * k + at + 8 * c);
            acc[b][c] += wc * xc;
          }
        }
      }
    } else {
      // The row widened a chunk at a time into L1, then each pair of x rows runs over the chunk
      // with its sums in registers (all BT rows at once would spill them every step).
      alignas(32) float wide[kScratch];
      for (std::int64_t from = 0; from < whole; from += kScratch) {
        const std::int64_t to = lesser(whole, from + kScratch);
        for (std::int64_t at = from; at < to; at += kStep) {
          __builtin_prefetch(w + at + kAhead);
#pragma GCC unroll 4
          for (int c = 0; c < kChains; ++c) {
            F32x8 v;
            widen8(v, w + at + 8 * c);
            std::memcpy(wide + (at - from) + 8 * c, &v, sizeof v);
          }
        }
        for (int b0 = 0; b0 < BT; b0 += kGroup) {
          const int group = static_cast<int>(lesser(kGroup, BT - b0));
          F32x8 sums[kGroup][kChains];
#pragma GCC unroll 2
          for (int g = 0; g < kGroup; ++g)
#pragma GCC unroll 4
            for (int c = 0; c < kChains; ++c) sums[g][c] = g < group ? acc[b0 + g][c] : F32x8{};
          for (std::int64_t at = from; at < to; at += kStep)
#pragma GCC unroll 4
            for (int c = 0; c < kChains; ++c) {
              F32x8 wc, xc;
              load8(wc, wide + (at - from) + 8 * c);
#pragma GCC unroll 2
              for (int g = 0; g < kGroup; ++g) {
                load8(xc, x + (b0 + lesser(g, group - 1)) * k + at + 8 * c);
                sums[g][c] += wc * xc;
              }
            }
#pragma GCC unroll 2
          for (int g = 0; g < kGroup; ++g)
#pragma GCC unroll 4
            for (int c = 0; c < kChains; ++c)
              if (g < group) acc[b0 + g][c] = sums[g][c];
        }
      }
    }
#pragma GCC unroll 8
    for (int b = 0; b < BT; ++b) out[b * ldo] = finish(acc[b], w, x + b * k, whole, k);
  }
};

// rows x k bf16 values, row after row, into the bf16 kernel's packed layout (few_row_tiles.h).
void pack_bf16_x(const std::uint16_t* x, std::int64_t rows, std::int64_t k, std::uint16_t* packed) {
  const std::int64_t kp = packed_k(k);
  for (std::int64_t b0 = 0; b0 < rows; b0 += kGroupRows) {
    const std::int64_t bt = lesser(rows - b0, kGroupRows);
    std::uint16_t* group = packed + b0 * kp;
    for (std::int64_t at = 0; at < kp; at += 32)
      for (std::int64_t b = 0; b < bt; ++b) {
        std::uint16_t* to = group + at * bt + b * 32;
        const std::int64_t n = lesser(32, k - at);
        std::memcpy(to, x + (b0 + b) * k + at, sizeof(std::uint16_t) * n);
        std::fill(to + n, to + 32, std::uint16_t{0});  // 0 · 0 in the weight's masked tail
      }
  }
}

}  // namespace

// One clone per instruction set, picked by the loader for this CPU.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
void float32_fma_rows(const Operands& all, std::int64_t begin, std::int64_t end) {
  const auto* x = static_cast<const float*>(all.x);
  for (std::int64_t n = begin; n < end; ++n)
    for (std::int64_t b = 0; b < all.rows_x; b += kGroupRows)
      run_tile<Float32FmaTile, 1>(static_cast<int>(lesser(all.rows_x - b, kGroupRows)),
                                  all.w + n * all.ldw, all.ldw, x + b * all.k, all.k,
                                  all.out + b * all.ldo + n, all.ldo);
}

}  // namespace few_row

static_assert(few_row::kMaxRows == kFewRowsMax, "the bf16 kernel's scratch holds kMaxRows rows");

namespace {
bool cpu_has_bf16_dot() {
#if DRAFTGATE_BF16_DOT_KERNEL
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512bf16");
  return has;
#else
  return false;
#endif
}
}  // namespace

bool few_row_kernel_available(FewRowKernel kernel) {
  return kernel == FewRowKernel::kFloat32Fma || cpu_has_bf16_dot();
}

FewRowKernel best_few_row_kernel(at::ScalarType x_dtype) {
  return x_dtype == at::kBFloat16 && cpu_has_bf16_dot() ? FewRowKernel::kBf16Dot
                                                        : FewRowKernel::kFloat32Fma;
}

std::string few_row_kernel_name(FewRowKernel kernel) {
  return kernel == FewRowKernel::kBf16Dot ? "bf16-dot" : "float32-fma";
}

bool few_row_matmul_applies(const at::Tensor& x, const at::Tensor& w) {
  if (w.dim() != 2 || w.scalar_type() != at::kBFloat16 || !w.device().is_cpu() ||
      !x.device().is_cpu() || w.stride(1) != 1 || x.dim() < 1 || x.size(-1) != w.size(1) ||
      (x.scalar_type() != at::kBFloat16 && x.scalar_type() != at::kFloat))
    return false;
  const std::int64_t k = w.size(1);
  return k > 0 && x.numel() <= kFewRowsMax * k;
}

at::Tensor few_row_matmul(const at::Tensor& x, const at::Tensor& w, FewRowKernel kernel) {
  if (!few_row_matmul_applies(x, w))
    throw std::invalid_argument("few_row_matmul: not a few-row product with a bf16 weight");
  const bool bf16_dot = kernel == FewRowKernel::kBf16Dot;
  if (!few_row_kernel_available(kernel) || (bf16_dot && x.scalar_type() != at::kBFloat16))
    throw std::invalid_argument("few_row_matmul: kernel " + few_row_kernel_name(kernel) +
                                " does not run here or for this x");
  const std::int64_t k = w.size(1), n = w.size(0), rows = x.numel() / k;
  std::vector<std::int64_t> out_shape = x.sizes().vec();
  out_shape.back() = n;
  at::Tensor out = at::empty({rows, n}, x.options().dtype(at::kFloat));
  if (rows > 0 && n > 0) {
    at::Tensor xs = (bf16_dot ? x : x.to(at::kFloat)).reshape({rows, k}).contiguous();
    if (bf16_dot && (rows > 1 || k % 32 != 0)) {  // one whole row is its own packed layout
      at::Tensor packed = at::empty({rows * few_row::packed_k(k)}, xs.options());
      few_row::pack_bf16_x(static_cast<const std::uint16_t*>(xs.data_ptr()), rows, k,
                           static_cast<std::uint16_t*>(packed.data_ptr()));
      xs = packed;
    }
    const few_row::Operands all{static_cast<const std::uint16_t*>(w.data_ptr()),
                                w.stride(0),
                                xs.data_ptr(),
                                rows,
                                k,
                                out.data_ptr<float>(),
                                n};
    // Threads take whole ranges of weight rows; under ~64 KB of weight a range is not worth one.
    const std::int64_t grain = std::max<std::int64_t>(8, (std::int64_t{1} << 15) / k);
    at::parallel_for(0, n, grain, [&](std::int64_t begin, std::int64_t end) {
#if DRAFTGATE_BF16_DOT_KERNEL
      if (bf16_dot) return few_row::bf16_dot_rows(all, begin, end);
#endif
      few_row::float32_fma_rows(all, begin, end);
    });
  }
  return out.view(out_shape).to(x.scalar_type());
}

}  // namespace draftgate::model
