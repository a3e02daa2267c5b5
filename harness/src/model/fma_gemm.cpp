#include "draftgate/model/fma_gemm.h"

#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <vector>

#include "fma_gemm_kernel.h"

namespace draftgate::model {
namespace {

using MultiplyTiles = void (*)(const fma_tiles::Operands&, std::int64_t, std::int64_t);

// The tile loop compiled for `isa`, or null where this build has none.
MultiplyTiles tile_loop(FmaGemmIsa isa) {
#if DRAFTGATE_FMA_GEMM_AVX512
  if (isa == FmaGemmIsa::kAvx512) return &fma_tiles::multiply_tiles_avx512;
#endif
#if DRAFTGATE_FMA_GEMM_AVX2
  if (isa == FmaGemmIsa::kAvx2) return &fma_tiles::multiply_tiles_avx2;
#endif
  (void)isa;
  return nullptr;
}

}  // namespace

bool fma_gemm_available(FmaGemmIsa isa) {
  // Where this build compiled that instruction set's file and the CPU has it.
  if (tile_loop(isa) == nullptr) return false;
  return isa == FmaGemmIsa::kAvx512
             ? __builtin_cpu_supports("avx512f")
             : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

bool fma_gemm_available() {
  return fma_gemm_available(FmaGemmIsa::kAvx512) || fma_gemm_available(FmaGemmIsa::kAvx2);
}

FmaGemmIsa best_fma_gemm_isa() {
  return fma_gemm_available(FmaGemmIsa::kAvx512) ? FmaGemmIsa::kAvx512 : FmaGemmIsa::kAvx2;
}

std::string fma_gemm_isa_name(FmaGemmIsa isa) {
  return isa == FmaGemmIsa::kAvx512 ? "avx512" : "avx2";
}

bool fma_gemm_applies(const at::Tensor& x, const at::Tensor& w) {
  return x.scalar_type() == at::kFloat && w.scalar_type() == at::kBFloat16 && w.dim() == 2 &&
         x.dim() >= 1 && x.size(-1) == w.size(1) && w.size(1) > 0 && w.stride(1) == 1 &&
         x.device().is_cpu() && w.device().is_cpu() &&
         !(at::GradMode::is_enabled() && (x.requires_grad() || w.requires_grad()));
}

namespace {

// x [m, k] as panels of `rows` rows, each [k][rows], rows past m zero: the kernel's loads of a
// column of a panel are then two aligned vectors. A buffer per calling thread, reused: fresh
// pages per call would be faulted in and zeroed by the kernel.
const float* pack_panels(const at::Tensor& x, std::int64_t rows) {
  const std::int64_t m = x.size(0), k = x.size(1), panels = (m + rows - 1) / rows;
  thread_local at::Tensor buffer;
  if (!buffer.defined() || buffer.numel() < panels * k * rows) {
    c10::InferenceMode inference;
    buffer = at::empty({panels * k * rows}, at::kFloat);
  }
  float* out = buffer.data_ptr<float>();
  const float* in = x.data_ptr<float>();
  at::parallel_for(0, panels, 1, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t p = begin; p < end; ++p) {
      float* panel = out + p * k * rows;
      const std::int64_t filled = std::min(rows, m - p * rows);
      for (std::int64_t i = 0; i < filled; ++i) {
        const float* row = in + (p * rows + i) * k;
        for (std::int64_t c = 0; c < k; ++c) panel[c * rows + i] = row[c];
      }
      for (std::int64_t i = filled; i < rows; ++i)
        for (std::int64_t c = 0; c < k; ++c) panel[c * rows + i] = 0.0f;
    }
  });
  return out;
}

}  // namespace

at::Tensor fma_gemm(const at::Tensor& x, const at::Tensor& w, FmaGemmIsa isa) {
  const fma_tiles::Geometry geometry =
      isa == FmaGemmIsa::kAvx512 ? fma_tiles::kAvx512 : fma_tiles::kAvx2;
  const MultiplyTiles multiply = tile_loop(isa);
  const std::int64_t k = w.size(1), n = w.size(0);
  const at::Tensor x2 = x.reshape({-1, k}).contiguous();
  const std::int64_t m = x2.size(0);
  at::Tensor y = at::empty({m, n}, x.options());
  if (m > 0 && n > 0 && multiply != nullptr) {
    const fma_tiles::Operands op{pack_panels(x2, geometry.panel_rows),
                                 m,
                                 k,
                                 n,
                                 reinterpret_cast<const std::uint16_t*>(w.data_ptr()),
                                 w.stride(0),
                                 y.data_ptr<float>(),
                                 n};
    const std::int64_t tiles = (n + geometry.tile_cols - 1) / geometry.tile_cols;
    at::parallel_for(0, tiles, 1,
                     [&](std::int64_t begin, std::int64_t end) { multiply(op, begin, end); });
  }
  std::vector<std::int64_t> shape = x.sizes().vec();
  shape.back() = n;
  return y.view(shape);
}

at::Tensor fma_gemm(const at::Tensor& x, const at::Tensor& w) {
  return fma_gemm(x, w, best_fma_gemm_isa());
}

}  // namespace draftgate::model
