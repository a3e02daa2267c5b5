#include "draftgate/model/argmax_rows.h"

#include <ATen/Parallel.h>

#include <cmath>
#include <limits>

#include "f32x8.h"

namespace draftgate::model {
namespace {

// A row's index as at::argmax picks it (ReduceOpsKernel.cpp's GreaterOrNan: a NaN beats any
// number and the lower index wins a tie). Each of eight lanes keeps the first index of its largest
// value (a later one replaces it only if strictly larger); the lanes' best then goes to the lowest
// index among the equal values. A row with a NaN is scanned again for its first NaN.
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) std::int64_t
row_argmax(const float* x, std::int64_t n) {
  const std::int64_t whole = n / 8 * 8;
  F32x8 best = F32x8{} - std::numeric_limits<float>::infinity(), v;
  I32x8 at = {0, 1, 2, 3, 4, 5, 6, 7}, best_at = at, nan = {};
  for (std::int64_t i = 0; i < whole; i += 8, at += 8) {
    load8(v, x + i);
    const I32x8 larger = v > best;
    best = larger ? v : best;
    best_at = larger ? at : best_at;
    nan |= v != v;
  }
  float top = -std::numeric_limits<float>::infinity();
  std::int64_t index = 0;
  bool has_nan = false;
  for (int j = 0; j < 8; ++j) {
    has_nan |= nan[j] != 0;
    if (best[j] > top || (best[j] == top && best_at[j] < index)) {
      top = best[j];
      index = best_at[j];
    }
  }
  for (std::int64_t i = whole; i < n; ++i) {
    has_nan |= std::isnan(x[i]);
    if (x[i] > top) {
      top = x[i];
      index = i;
    }
  }
  if (has_nan)
    for (std::int64_t i = 0; i < n; ++i)
      if (std::isnan(x[i])) return i;
  return index;
}

bool scans(const at::Tensor& logits) {
  return logits.device().is_cpu() && logits.scalar_type() == at::kFloat && logits.dim() > 0 &&
         logits.size(-1) > 0 && logits.size(-1) <= std::numeric_limits<std::int32_t>::max() - 8 &&
         logits.is_contiguous();
}

}  // namespace

std::int64_t first_argmax(const float* x, std::int64_t n) { return row_argmax(x, n); }

std::vector<std::int64_t> argmax_rows(const at::Tensor& logits) {
  if (!scans(logits)) {
    const at::Tensor a = logits.argmax(-1).to(at::kCPU).contiguous();
    return std::vector<std::int64_t>(a.data_ptr<std::int64_t>(),
                                     a.data_ptr<std::int64_t>() + a.numel());
  }
  const std::int64_t width = logits.size(-1), rows = logits.numel() / width;
  std::vector<std::int64_t> out(static_cast<std::size_t>(rows));
  const float* x = logits.data_ptr<float>();
  // A row of a 151936-wide vocabulary is ~10 µs: a thread per row is worth a parallel region.
  const std::int64_t grain = std::max<std::int64_t>(1, (std::int64_t{1} << 16) / width);
  at::parallel_for(0, rows, grain, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t r = begin; r < end; ++r)
      out[static_cast<std::size_t>(r)] = row_argmax(x + r * width, width);
  });
  return out;
}

}  // namespace draftgate::model
