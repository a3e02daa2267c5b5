#include "draftgate/model/fp8_weights.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>

#include "draftgate/io/float8.h"

namespace draftgate::model {
namespace {

std::int64_t blocks(std::int64_t n, std::int64_t block) { return (n + block - 1) / block; }

}  // namespace

at::Tensor dequantize_fp8_blocks(const at::Tensor& codes, const at::Tensor& scale_inv,
                                 const io::Fp8Scheme& scheme) {
  const at::Tensor c = codes.contiguous();
  const at::Tensor s = scale_inv.to(at::kFloat).contiguous();
  // Leading dimensions (the experts of a fused tensor) each have their own grid of blocks.
  const std::int64_t rows = c.size(-2), cols = c.size(-1), matrices = c.numel() / (rows * cols);
  const std::int64_t bo = scheme.block_out, bi = scheme.block_in, col_blocks = blocks(cols, bi);
  const std::int64_t row_blocks = blocks(rows, bo);
  at::Tensor out = at::empty(c.sizes(), at::TensorOptions().dtype(at::kFloat));
  const auto* code = c.data_ptr<std::uint8_t>();
  const float* scale = s.data_ptr<float>();
  float* value = out.data_ptr<float>();
  const auto& table = io::e4m3fn_values();
  at::parallel_for(0, matrices * rows, 16, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t r = begin; r < end; ++r) {
      const std::int64_t matrix = r / rows, row_block = (r % rows) / bo;
      const float* row_scale = scale + (matrix * row_blocks + row_block) * col_blocks;
      for (std::int64_t b = 0; b < col_blocks; ++b) {
        const float sc = row_scale[b];
        for (std::int64_t j = b * bi, stop = std::min(cols, j + bi); j < stop; ++j)
          value[r * cols + j] = table[code[r * cols + j]] * sc;
      }
    }
  });
  return out;
}

Fp8Blocks quantize_fp8_blocks(const at::Tensor& weight, const io::Fp8Scheme& scheme) {
  const at::Tensor w = weight.to(at::kFloat).contiguous();
  const std::int64_t rows = w.size(0), cols = w.size(1);
  const std::int64_t bo = scheme.block_out, bi = scheme.block_in;
  Fp8Blocks q{
      at::empty({rows, cols}, at::TensorOptions().dtype(at::kByte)),
      at::empty({blocks(rows, bo), blocks(cols, bi)}, at::TensorOptions().dtype(at::kFloat))};
  const float* x = w.data_ptr<float>();
  auto* code = q.codes.data_ptr<std::uint8_t>();
  float* inv = q.scale_inv.data_ptr<float>();
  for (std::int64_t rb = 0; rb < q.scale_inv.size(0); ++rb)
    for (std::int64_t cb = 0; cb < q.scale_inv.size(1); ++cb) {
      const std::int64_t r0 = rb * bo, r1 = std::min(rows, r0 + bo);
      const std::int64_t c0 = cb * bi, c1 = std::min(cols, c0 + bi);
      float max_abs = 0;
      for (std::int64_t r = r0; r < r1; ++r)
        for (std::int64_t j = c0; j < c1; ++j)
          max_abs = std::max(max_abs, std::fabs(x[r * cols + j]));
      const float scale = max_abs > 0 ? io::kE4m3Max / max_abs : 1.0f;
      for (std::int64_t r = r0; r < r1; ++r)
        for (std::int64_t j = c0; j < c1; ++j)
          code[r * cols + j] = io::float_to_e4m3fn(x[r * cols + j] * scale);
      inv[rb * q.scale_inv.size(1) + cb] = 1.0f / scale;
    }
  return q;
}

}  // namespace draftgate::model
