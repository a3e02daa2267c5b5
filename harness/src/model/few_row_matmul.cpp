#include "draftgate/model/few_row_matmul.h"

#include <ATen/Parallel.h>

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

// The float32 kernel in portable vector types: 16 lanes per output, compiled for the instruction
// set of each clone of float32_fma_rows that inlines it (one zmm, two ymm or four xmm registers).
typedef float F32x16 __attribute__((vector_size(64)));
typedef std::uint32_t U32x16 __attribute__((vector_size(64)));
typedef std::uint16_t U16x16 __attribute__((vector_size(32)));

// By reference: a 64-byte vector passed by value has another ABI in each clone.
DRAFTGATE_INLINE void widen16(F32x16& out, const std::uint16_t* p) {
  U16x16 bits;
  std::memcpy(&bits, p, sizeof bits);
  out = reinterpret_cast<F32x16>(__builtin_convertvector(bits, U32x16) << 16);
}

template <int R, int BT>
struct Float32FmaTile {
  static DRAFTGATE_INLINE void run(const std::uint16_t* w, std::int64_t ldw, const void* xv,
                                   std::int64_t k, float* out, std::int64_t ldo) {
    const auto* x = static_cast<const float*>(xv);
    F32x16 acc[R][BT];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
      for (int b = 0; b < BT; ++b) acc[r][b] = F32x16{};
    std::int64_t at = 0;
    for (; at + 16 <= k; at += 16) {
      F32x16 wf[R];
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        widen16(wf[r], w + r * ldw + at);
        __builtin_prefetch(w + (R + r) * ldw + at);  // the next tile (see few_row_bf16.cpp)
      }
#pragma GCC unroll 8
      for (int b = 0; b < BT; ++b) {
        F32x16 xb;
        std::memcpy(&xb, x + b * k + at, sizeof xb);
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) acc[r][b] += wf[r] * xb;
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
      for (int b = 0; b < BT; ++b) {
        // Lanes summed as a tree: 8 + 8, 4 + 4, 2 + 2, 1 + 1.
        F32x16 v = acc[r][b];
        v += __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15, 0, 0, 0, 0, 0, 0, 0, 0);
        v += __builtin_shufflevector(v, v, 4, 5, 6, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
        v += __builtin_shufflevector(v, v, 2, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
        float sum = v[0] + v[1];
        for (std::int64_t t = at; t < k; ++t) sum += widen(w[r * ldw + t]) * x[b * k + t];
        out[b * ldo + r] = sum;
      }
  }
};

}  // namespace

// One clone per instruction set, picked by the loader for this CPU.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
void float32_fma_rows(const Operands& all, std::int64_t begin, std::int64_t end) {
  rows<Float32FmaTile, 4>(all, begin, end);
}

}  // namespace few_row

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
    const at::Tensor xs = (bf16_dot ? x : x.to(at::kFloat)).reshape({rows, k}).contiguous();
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
