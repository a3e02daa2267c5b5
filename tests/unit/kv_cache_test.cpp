// The KV cache against the straightforward layout it keeps: every appended [T, heads, d] block
// permuted to [heads, T, d] and concatenated in order, then the kept rows.

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "draftgate/model/cache.h"

namespace draftgate::model {
namespace {

at::Tensor heads_first(const std::vector<at::Tensor>& blocks) {
  std::vector<at::Tensor> permuted;
  for (const at::Tensor& b : blocks) permuted.push_back(b.permute({1, 0, 2}));
  return at::cat(permuted, 1);
}

// Blocks of 1, 16 and 50 rows (the last past the first capacity of 64), bf16 and float32, and
// views whose heads are not back to back (a head's rows split from a wider projection).
TEST(KVCache, AppendedBlocksAreTheirHeadsFirstConcatenation) {
  for (at::ScalarType dtype : {at::kBFloat16, at::kFloat}) {
    at::manual_seed(4);
    KVCache cache;
    std::vector<at::Tensor> keys, values;
    for (std::int64_t t : {1, 16, 50}) {
      const at::Tensor k = at::randn({t, 4, 24}).to(dtype);
      const at::Tensor v = at::randn({t, 4, 48}).to(dtype).narrow(2, 8, 24);
      cache.append(k, v);
      keys.push_back(k);
      values.push_back(v);
      ASSERT_EQ(cache.rows(), heads_first(keys).size(1));
      EXPECT_TRUE(at::equal(cache.keys(), heads_first(keys))) << "rows " << cache.rows();
      EXPECT_TRUE(at::equal(cache.values(), heads_first(values))) << "rows " << cache.rows();
    }
    // Keep the first 17 rows and then rows 17 + {2, 5} of the 50 pending ones.
    cache.keep(17, {2, 5});
    const at::Tensor all_k = heads_first(keys);
    const at::Tensor index = at::tensor(std::vector<std::int64_t>{19, 22}, at::kLong);
    const at::Tensor want = at::cat({all_k.narrow(1, 0, 17), all_k.index_select(1, index)}, 1);
    EXPECT_TRUE(at::equal(cache.keys(), want));
  }
}

// Under autograd the blocks go through ATen's copies, so the graph reaches them.
TEST(KVCache, RecordsGradientsToTheAppendedBlocks) {
  KVCache cache;
  const at::Tensor k = at::randn({3, 2, 8}).requires_grad_(), v = at::randn({3, 2, 8});
  cache.append(k, v);
  cache.keys().sum().backward();
  ASSERT_TRUE(k.grad().defined());
  EXPECT_TRUE(at::equal(k.grad(), at::ones_like(k)));
}

}  // namespace
}  // namespace draftgate::model
