#pragma once
// The index of each row's largest value, as at::argmax(-1) picks it: the first NaN where a row has
// one, else the first index of the row's largest value (-0 and +0 equal). A float32 CPU tensor
// with contiguous rows is scanned in one vectorized pass per row, rows over ATen's threads:
// ATen's own scan is scalar, and at a verify block's or a drafter block's 16 rows of a
// 151936-wide vocabulary it took ~6 % of the drafter's block pass on an AMD EPYC Zen 5. Any other
// tensor goes to at::argmax.

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

namespace draftgate::model {

// One index per row of `logits` (its last dimension is the row), in row order.
std::vector<std::int64_t> argmax_rows(const at::Tensor& logits);

// The index in x[0, n) that at::argmax picks (n > 0), by the same scan.
std::int64_t first_argmax(const float* x, std::int64_t n);

}  // namespace draftgate::model
