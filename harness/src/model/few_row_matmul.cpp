#include "draftgate/model/few_row_matmul.h"

#include <ATen/Parallel.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <vector>

#include "draftgate/model/argmax_rows.h"
#include "draftgate/model/row_chunks.h"
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
  const std::int64_t kp = packed_k(k), whole = k / 32 * 32;
  for (std::int64_t b0 = 0; b0 < rows; b0 += kGroupRows) {
    const std::int64_t bt = lesser(rows - b0, kGroupRows);
    std::uint16_t* group = packed + b0 * kp;
    for (std::int64_t at = 0; at < kp; at += 32)
      for (std::int64_t b = 0; b < bt; ++b) {
        std::uint16_t* to = group + at * bt + b * 32;
        const std::uint16_t* from = x + (b0 + b) * k + at;
        if (at < whole) {  // a copy of constant size, inlined (a call each was 1.4 % of a verify)
          std::memcpy(to, from, sizeof(std::uint16_t) * 32);
          continue;
        }
        std::memcpy(to, from, sizeof(std::uint16_t) * (k - at));
        std::fill(to + (k - at), to + 32, std::uint16_t{0});  // 0 · 0 in the weight's masked tail
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

namespace {

// Round to nearest even, as c10::BFloat16 rounds (a NaN stays a NaN); no branch, so the loops
// below vectorize.
inline std::uint32_t bf16_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  const std::uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  return (u & 0x7fffffffu) > 0x7f800000u ? 0x7fc0u : rounded;
}

// Columns [begin, end) of the float32 sums [rows, n], rounded to bf16: into `bf16` where given,
// else in place as float32 values. The threads round the columns they computed, so no pass of
// one thread over the whole product follows the product.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
void round_columns(float* sums, std::int64_t rows, std::int64_t n, std::int64_t begin,
                   std::int64_t end, std::uint16_t* bf16) {
  for (std::int64_t b = 0; b < rows; ++b) {
    float* from = sums + b * n;
    if (bf16 != nullptr) {
      std::uint16_t* to = bf16 + b * n;
      for (std::int64_t c = begin; c < end; ++c)
        to[c] = static_cast<std::uint16_t>(bf16_bits(from[c]));
    } else {
      for (std::int64_t c = begin; c < end; ++c) {
        const std::uint32_t widened = bf16_bits(from[c]) << 16;
        std::memcpy(from + c, &widened, sizeof widened);
      }
    }
  }
}

// A core's L1 data cache as the C library reports it; 32 KB where it cannot say.
std::int64_t l1_data_bytes() {
  static const std::int64_t bytes = [] {
    const long reported = sysconf(_SC_LEVEL1_DCACHE_SIZE);
    return reported > 0 ? static_cast<std::int64_t>(reported) : std::int64_t{32} << 10;
  }();
  return bytes;
}

// Rows of the weights per chunk a thread takes at a time (row_chunks.h): ~200 KB of a 1024-wide
// weight, 1 MB of a 5120-wide one.
constexpr std::int64_t kChunkRows = 96;

// Throws unless every weight takes x with `kernel` here.
void check_product(const at::Tensor& x, const std::vector<at::Tensor>& ws, FewRowKernel kernel) {
  for (const at::Tensor& w : ws)
    if (!few_row_matmul_applies(x, w))
      throw std::invalid_argument("few_row_matmul: not a few-row product with a bf16 weight");
  if (!few_row_kernel_available(kernel) ||
      (kernel == FewRowKernel::kBf16Dot && x.scalar_type() != at::kBFloat16))
    throw std::invalid_argument("few_row_matmul: kernel " + few_row_kernel_name(kernel) +
                                " does not run here or for this x");
}

// x as the kernel reads it: float32 rows for the float32 kernel, the packed layout for the bf16
// one (a contiguous x as it is: a reshape was one more operator call on the calling thread for
// every product).
at::Tensor kernel_x(const at::Tensor& x, FewRowKernel kernel) {
  const bool bf16_dot = kernel == FewRowKernel::kBf16Dot;
  at::Tensor xs = bf16_dot ? x : x.to(at::kFloat);
  if (!xs.is_contiguous()) xs = xs.contiguous();
  const std::int64_t k = x.size(-1), rows = x.numel() / k;
  if (bf16_dot && (rows > 1 || k % 32 != 0)) {  // one whole row is its own packed layout
    at::Tensor packed = at::empty({rows * few_row::packed_k(k)}, xs.options());
    few_row::pack_bf16_x(static_cast<const std::uint16_t*>(xs.data_ptr()), rows, k,
                         static_cast<std::uint16_t*>(packed.data_ptr()));
    return packed;
  }
  return xs;
}

void kernel_rows(FewRowKernel kernel, const few_row::Operands& a, std::int64_t begin,
                 std::int64_t end) {
#if DRAFTGATE_BF16_DOT_KERNEL
  if (kernel == FewRowKernel::kBf16Dot) return few_row::bf16_dot_rows(a, begin, end);
#endif
  few_row::float32_fma_rows(a, begin, end);
}

// Threads take chunks of n weight rows of K (row_chunks.h), every weight of a product in one
// parallel region; under ~64 KB of weight a thread's share is not worth one. A chunk is whole
// tiles of every kernel (3, 4 or 8 rows) and a panel of 3-row tiles (few_row_bf16.cpp).
void for_weight_chunks(std::int64_t n, std::int64_t k,
                       const std::function<void(std::int64_t, std::int64_t)>& rows) {
  const std::int64_t grain = std::max<std::int64_t>(8, (std::int64_t{1} << 15) / k);
  const int threads =
      static_cast<int>(std::min<std::int64_t>(at::get_num_threads(), (n + grain - 1) / grain));
  for_row_chunks(n, kChunkRows, threads, rows);
}

std::vector<at::Tensor> multiply(const at::Tensor& x, const std::vector<at::Tensor>& ws,
                                 FewRowKernel kernel, ProductOutput output) {
  if (ws.empty()) return {};
  check_product(x, ws, kernel);
  const bool bf16_x = x.scalar_type() == at::kBFloat16;
  if (output == ProductOutput::kWidened && !bf16_x)
    throw std::invalid_argument("few_row_matmul: only a bf16 product is widened");
  const bool to_bf16 = bf16_x && output == ProductOutput::kXDtype;
  const std::int64_t k = x.size(-1), rows = x.numel() / k;
  std::vector<at::Tensor> ys;
  std::vector<std::int64_t> first{0};  // weight i's rows: [first[i], first[i + 1]) of the whole
  for (const at::Tensor& w : ws) {
    std::vector<std::int64_t> shape = x.sizes().vec();
    shape.back() = w.size(0);
    ys.push_back(at::empty(shape, x.options().dtype(to_bf16 ? at::kBFloat16 : at::kFloat)));
    first.push_back(first.back() + w.size(0));
  }
  if (rows == 0 || first.back() == 0) return ys;
  const at::Tensor xs = kernel_x(x, kernel);
  // The float32 sums: y itself where y is float32, else one buffer for every weight.
  const at::Tensor sums =
      to_bf16 ? at::empty({rows * first.back()}, x.options().dtype(at::kFloat)) : at::Tensor();
  std::vector<few_row::Operands> operands;
  std::vector<std::uint16_t*> bf16_ys;
  for (std::size_t i = 0; i < ws.size(); ++i) {
    float* out = to_bf16 ? sums.data_ptr<float>() + rows * first[i] : ys[i].data_ptr<float>();
    operands.push_back({static_cast<const std::uint16_t*>(ws[i].data_ptr()), ws[i].stride(0),
                        xs.data_ptr(), rows, k, out, ws[i].size(0), l1_data_bytes()});
    bf16_ys.push_back(to_bf16 ? static_cast<std::uint16_t*>(ys[i].data_ptr()) : nullptr);
  }
  for_weight_chunks(first.back(), k, [&](std::int64_t begin, std::int64_t end) {
    for (std::size_t i = 0; i < operands.size(); ++i) {
      const std::int64_t lo = std::max(begin, first[i]) - first[i];
      const std::int64_t hi = std::min(end, first[i + 1]) - first[i];
      if (lo >= hi) continue;
      kernel_rows(kernel, operands[i], lo, hi);
      if (bf16_x) round_columns(operands[i].out, rows, operands[i].ldo, lo, hi, bf16_ys[i]);
    }
  });
  return ys;
}

// A row's pick so far: the index at::argmax takes among the values seen (first_argmax's rule).
struct Pick {
  float value;
  std::int64_t index;
};

// Whether `later` (of higher indices than `pick`) takes its place: a NaN beats any number, a
// larger value a smaller one; the lower index keeps a tie.
bool replaces(const Pick& later, const Pick& pick) {
  if (std::isnan(pick.value)) return false;
  return std::isnan(later.value) || later.value > pick.value;
}

}  // namespace

at::Tensor few_row_matmul(const at::Tensor& x, const at::Tensor& w, FewRowKernel kernel,
                          ProductOutput output) {
  return multiply(x, {w}, kernel, output).front();
}

std::vector<at::Tensor> few_row_matmul(const at::Tensor& x, const std::vector<at::Tensor>& ws,
                                       FewRowKernel kernel) {
  return multiply(x, ws, kernel, ProductOutput::kXDtype);
}

std::vector<std::int64_t> few_row_argmax(const at::Tensor& x, const at::Tensor& w,
                                         FewRowKernel kernel) {
  check_product(x, {w}, kernel);
  if (x.scalar_type() != at::kBFloat16)
    throw std::invalid_argument("few_row_argmax: x must be bf16 (a widened product)");
  const std::int64_t k = x.size(-1), rows = x.numel() / k, n = w.size(0);
  if (rows == 0) return {};
  if (n == 0) throw std::invalid_argument("few_row_argmax: a weight of no rows has no argmax");
  const at::Tensor xs = kernel_x(x, kernel);
  const few_row::Operands whole{static_cast<const std::uint16_t*>(w.data_ptr()),
                                w.stride(0),
                                xs.data_ptr(),
                                rows,
                                k,
                                nullptr,
                                0,
                                l1_data_bytes()};
  // Each piece of kChunkRows weight rows: its sums in a thread's scratch (in L1), rounded and
  // widened as dense_to_float's values, and each row's pick among them; the pieces' picks joined
  // in index order after the region. The product itself is never written out: a verify block's
  // logits are 16 rows of the vocabulary in float32 (9.7 MB at 151936), written, and read back by
  // argmax_rows.
  const std::int64_t pieces = (n + kChunkRows - 1) / kChunkRows;
  std::vector<Pick> picks(static_cast<std::size_t>(pieces * rows));
  for_weight_chunks(n, k, [&](std::int64_t begin, std::int64_t end) {
    alignas(64) static thread_local float scratch[few_row::kMaxRows * kChunkRows];
    for (std::int64_t from = begin; from < end; from += kChunkRows) {
      const std::int64_t width = std::min(end - from, kChunkRows);
      few_row::Operands piece = whole;
      piece.w += from * piece.ldw;
      piece.out = scratch;
      piece.ldo = width;
      kernel_rows(kernel, piece, 0, width);
      round_columns(scratch, rows, width, 0, width, nullptr);
      for (std::int64_t b = 0; b < rows; ++b) {
        const float* row = scratch + b * width;
        const std::int64_t at = first_argmax(row, width);
        picks[static_cast<std::size_t>(from / kChunkRows * rows + b)] = {row[at], from + at};
      }
    }
  });
  std::vector<std::int64_t> out(static_cast<std::size_t>(rows));
  for (std::int64_t b = 0; b < rows; ++b) {
    Pick pick = picks[static_cast<std::size_t>(b)];
    for (std::int64_t p = 1; p < pieces; ++p) {
      const Pick& later = picks[static_cast<std::size_t>(p * rows + b)];
      if (replaces(later, pick)) pick = later;
    }
    out[static_cast<std::size_t>(b)] = pick.index;
  }
  return out;
}

}  // namespace draftgate::model
