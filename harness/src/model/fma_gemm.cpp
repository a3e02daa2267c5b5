#include "draftgate/model/fma_gemm.h"

#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <vector>

#include "fma_gemm_kernel.h"

namespace draftgate::model {

bool fma_gemm_available() {
#if DRAFTGATE_AVX512_FMA_GEMM
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
#else
  return false;
#endif
}

bool fma_gemm_applies(const at::Tensor& x, const at::Tensor& w) {
  return x.scalar_type() == at::kFloat && w.scalar_type() == at::kBFloat16 && w.dim() == 2 &&
         x.dim() >= 1 && x.size(-1) == w.size(1) && w.size(1) > 0 && w.stride(1) == 1 &&
         x.device().is_cpu() && w.device().is_cpu() &&
         !(at::GradMode::is_enabled() && (x.requires_grad() || w.requires_grad()));
}

namespace {

// x [m, k] as panels of 32 rows, each [k][32], rows past m zero: the kernel's loads of a column
// of 32 rows are then two aligned vectors. A buffer per calling thread, reused: fresh pages per
// call would be faulted in and zeroed by the kernel.
const float* pack_panels(const at::Tensor& x) {
  using fma_tiles::kPanelRows;
  const std::int64_t m = x.size(0), k = x.size(1), panels = (m + kPanelRows - 1) / kPanelRows;
  thread_local at::Tensor buffer;
  if (!buffer.defined() || buffer.numel() < panels * k * kPanelRows) {
    c10::InferenceMode inference;
    buffer = at::empty({panels * k * kPanelRows}, at::kFloat);
  }
  float* out = buffer.data_ptr<float>();
  const float* in = x.data_ptr<float>();
  at::parallel_for(0, panels, 1, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t p = begin; p < end; ++p) {
      float* panel = out + p * k * kPanelRows;
      const std::int64_t rows = std::min<std::int64_t>(kPanelRows, m - p * kPanelRows);
      for (std::int64_t i = 0; i < rows; ++i) {
        const float* row = in + (p * kPanelRows + i) * k;
        for (std::int64_t c = 0; c < k; ++c) panel[c * kPanelRows + i] = row[c];
      }
      for (std::int64_t i = rows; i < kPanelRows; ++i)
        for (std::int64_t c = 0; c < k; ++c) panel[c * kPanelRows + i] = 0.0f;
    }
  });
  return out;
}

}  // namespace

at::Tensor fma_gemm(const at::Tensor& x, const at::Tensor& w) {
  const std::int64_t k = w.size(1), n = w.size(0);
  const at::Tensor x2 = x.reshape({-1, k}).contiguous();
  const std::int64_t m = x2.size(0);
  at::Tensor y = at::empty({m, n}, x.options());
  if (m > 0 && n > 0) {
    const fma_tiles::Operands op{pack_panels(x2),
                                 m,
                                 k,
                                 n,
                                 reinterpret_cast<const std::uint16_t*>(w.data_ptr()),
                                 w.stride(0),
                                 y.data_ptr<float>(),
                                 n};
    const std::int64_t tiles = (n + fma_tiles::kTileCols - 1) / fma_tiles::kTileCols;
#if DRAFTGATE_AVX512_FMA_GEMM
    at::parallel_for(0, tiles, 1, [&](std::int64_t begin, std::int64_t end) {
      fma_tiles::multiply_tiles(op, begin, end);
    });
#else
    (void)op, (void)tiles;
#endif
  }
  std::vector<std::int64_t> shape = x.sizes().vec();
  shape.back() = n;
  return y.view(shape);
}

}  // namespace draftgate::model
