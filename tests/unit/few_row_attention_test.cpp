// The one-pass attention of a few query rows (model/few_row_attention.h) against the batched
// composition the attention layer runs for many rows (written out here, the eager reference's
// order of roundings) and against float64, on causal chains, tree and window masks, GQA groups
// and head widths with a vector tail.

#include "draftgate/model/few_row_attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <tuple>

namespace draftgate::model {
namespace {

// keys/values [kv_heads, rows, D]; visible as few_row_attention takes it.
at::Tensor batched(const at::Tensor& q, const at::Tensor& keys, const at::Tensor& values,
                   const at::Tensor& visible, double scale) {
  const std::int64_t t = q.size(0), nh = q.size(1), d = q.size(2), nkv = keys.size(0);
  const std::int64_t rows = keys.size(1), committed = rows - t, group = nh / nkv;
  const at::Tensor qg =
      q.view({t, nkv, group, d}).permute({1, 2, 0, 3}).reshape({nkv, group * t, d});
  at::Tensor scores = (at::matmul(qg, keys.transpose(1, 2)) * scale).view({nkv, group, t, rows});
  at::Tensor mask;
  if (!visible.defined()) {
    const at::Tensor query_row = at::arange(committed, rows, at::kLong);
    mask = at::arange(rows, at::kLong).unsqueeze(0) <= query_row.unsqueeze(1);
  } else {
    mask = visible.size(1) == rows ? visible
                                   : at::cat({at::ones({t, committed}, at::kBool), visible}, 1);
  }
  scores = scores.masked_fill(mask.logical_not(), -INFINITY);
  const at::Tensor probs = at::softmax(scores, -1, at::kFloat).to(q.scalar_type());
  return at::matmul(probs.view({nkv, group * t, rows}), values)
      .view({nkv, group, t, d})
      .permute({2, 0, 1, 3})
      .reshape({t, nh * d});
}

at::Tensor float64_attention(const at::Tensor& q, const at::Tensor& keys, const at::Tensor& values,
                             const at::Tensor& visible, double scale) {
  const at::Tensor qd = q.to(at::kDouble), kd = keys.to(at::kDouble), vd = values.to(at::kDouble);
  const std::int64_t t = q.size(0), nh = q.size(1), rows = keys.size(1), group = nh / keys.size(0);
  at::Tensor out = at::zeros({t, nh, q.size(2)}, at::kDouble);
  for (std::int64_t i = 0; i < t; ++i)
    for (std::int64_t h = 0; h < nh; ++h) {
      at::Tensor s = at::mv(kd[h / group], qd[i][h]) * scale;
      for (std::int64_t r = 0; r < rows; ++r) {
        const std::int64_t committed = rows - t;
        const bool seen = !visible.defined() ? r <= committed + i
                          : visible.size(1) == rows
                              ? visible[i][r].item<bool>()
                              : r < committed || visible[i][r - committed].item<bool>();
        if (!seen) s[r] = -INFINITY;
      }
      out[i][h] = at::mv(vd[h / group].t(), at::softmax(s, 0));
    }
  return out.view({t, -1});
}

struct Case {
  std::int64_t queries, heads, kv_heads, width, committed;
};

// Each kernel in each dtype it takes (the tiles and the dot products: bf16, where the CPU has AMX
// or AVX-512 BF16).
using Param = std::tuple<at::ScalarType, FewRowAttentionKernel>;

class FewRowAttention : public ::testing::TestWithParam<Param> {
 protected:
  at::ScalarType dtype() const { return std::get<0>(GetParam()); }
  FewRowAttentionKernel kernel() const { return std::get<1>(GetParam()); }
  void SetUp() override {
    if (!few_row_attention_kernel_takes(kernel(), at::zeros({1, 1, 32}, dtype())))
      GTEST_SKIP() << "this kernel does not take this dtype on this CPU";
  }
  // Whether the kernel takes a case's head width (the pair products: multiples of 32).
  bool takes(const Case& c) const {
    return few_row_attention_kernel_takes(kernel(), at::zeros({1, 1, c.width}, dtype()));
  }
  at::Tensor attend(const at::Tensor& q, const at::Tensor& keys, const at::Tensor& values,
                    const at::Tensor& visible, double scale) const {
    return few_row_attention(q, keys, values, visible, scale, kernel());
  }
  // q, keys, values of a case; keys and values narrowed from a buffer with room beyond the rows,
  // as KVCache's are.
  struct Inputs {
    at::Tensor q, keys, values;
  };
  Inputs inputs(const Case& c, std::int64_t seed) const {
    at::manual_seed(seed);
    const std::int64_t rows = c.committed + c.queries;
    const at::Tensor buffer_k = at::randn({c.kv_heads, rows + 9, c.width}).to(dtype());
    const at::Tensor buffer_v = at::randn({c.kv_heads, rows + 9, c.width}).to(dtype());
    return {(at::randn({c.queries, c.heads, c.width}) * 2).to(dtype()), buffer_k.narrow(1, 0, rows),
            buffer_v.narrow(1, 0, rows)};
  }
  double scale(const Case& c) const { return 1.0 / std::sqrt(static_cast<double>(c.width)); }
};

// Decode and verify at Qwen3-0.6B's heads; widths with a vector tail (80, 40); rows and items
// (the group of heads times the queries) off the tiles' 16 and 32; 96 items of width 96 (four
// blocks of items and of width and then two, in the tiles).
const Case kCases[] = {{1, 16, 8, 128, 64}, {16, 16, 8, 128, 64}, {3, 4, 4, 80, 10},
                       {8, 8, 2, 256, 33},  {16, 2, 1, 64, 0},    {5, 6, 3, 40, 7},
                       {24, 12, 3, 96, 50}};

// visible masks: none (a causal chain), a tree over the block ([T, T]: each node its ancestors),
// a window over every row ([T, rows]).
std::vector<at::Tensor> masks(const Case& c) {
  const std::int64_t rows = c.committed + c.queries;
  at::Tensor tree = at::eye(c.queries, at::kBool);
  for (std::int64_t i = 1; i < c.queries; ++i) {
    tree[i] = tree[(i - 1) / 2].clone();
    tree[i][i] = true;
  }
  const at::Tensor q = at::arange(c.committed, rows, at::kLong).unsqueeze(1);
  const at::Tensor k = at::arange(rows, at::kLong).unsqueeze(0);
  const at::Tensor window = ((q - k) < 6).logical_and(k <= q);
  return {at::Tensor(), tree, window};
}

TEST_P(FewRowAttention, HasTheBatchedFormsRoundings) {
  std::int64_t seed = 0;
  for (const Case& c : kCases)
    for (const at::Tensor& visible : masks(c)) {
      if (!takes(c)) continue;
      const Inputs in = inputs(c, ++seed);
      const at::Tensor got = attend(in.q, in.keys, in.values, visible, scale(c));
      const at::Tensor want = batched(in.q, in.keys, in.values, visible, scale(c));
      ASSERT_EQ(got.sizes(), want.sizes());
      const at::Tensor diff = (got.to(at::kDouble) - want.to(at::kDouble)).abs();
      // Only the float32 sums' order (and exp: glibc's against Sleef's) differs: a bf16 output
      // moves by one rounding where a score or a probability fell the other side of a bf16
      // boundary, rarely; float32 by a few ulps of the values' scale.
      const double budget = dtype() == at::kBFloat16 ? 1.0 / 128 : 4e-6;
      EXPECT_LE(diff.max().item<double>(), budget) << "seed " << seed;
      if (dtype() == at::kBFloat16) {
        EXPECT_LE((diff > 0).sum().item<std::int64_t>(),
                  std::max<std::int64_t>(2, got.numel() / 500))
            << "seed " << seed;
      }
    }
}

TEST_P(FewRowAttention, IsWithinItsRoundingsOfFloat64) {
  std::int64_t seed = 100;
  for (const Case& c : kCases)
    for (const at::Tensor& visible : masks(c)) {
      if (!takes(c)) continue;
      const Inputs in = inputs(c, ++seed);
      const at::Tensor got = attend(in.q, in.keys, in.values, visible, scale(c));
      const at::Tensor want = float64_attention(in.q, in.keys, in.values, visible, scale(c));
      // float32: sums of ~D and ~rows terms; bf16: scores rounded twice (2 · 2⁻⁹ relative of
      // |s| <= ~10 moves a probability by ~4 %), probabilities and the output once more.
      const double budget = dtype() == at::kBFloat16 ? 0.08 : 2e-5;
      EXPECT_LE((got.to(at::kDouble) - want).abs().max().item<double>(), budget) << "seed " << seed;
    }
}

TEST_P(FewRowAttention, AQueryHasTheBitsOfTheSameQueryAlone) {
  const Case c{16, 16, 8, 128, 64};
  const Inputs in = inputs(c, 7);
  const at::Tensor block = attend(in.q, in.keys, in.values, {}, scale(c));
  for (std::int64_t t : {0, 5, 15}) {
    // Query t of a causal chain sees rows up to committed + t: alone, it is the last of those.
    const std::int64_t rows = c.committed + t + 1;
    const at::Tensor alone = attend(in.q.narrow(0, t, 1), in.keys.narrow(1, 0, rows),
                                    in.values.narrow(1, 0, rows), {}, scale(c));
    EXPECT_TRUE(at::equal(block[t], alone[0])) << "query " << t;
  }
}

// A cache whose rows lie apart (K/V kept [rows, kv_heads, D], read as [kv_heads, rows, D]): the
// bits of the same values contiguous.
TEST_P(FewRowAttention, ReadsACacheWhoseRowsLieApart) {
  const Case c{16, 16, 8, 128, 40};
  const Inputs in = inputs(c, 12);
  const at::Tensor keys = in.keys.transpose(0, 1).contiguous().transpose(0, 1);
  const at::Tensor values = in.values.transpose(0, 1).contiguous().transpose(0, 1);
  ASSERT_NE(keys.stride(1), c.width);
  EXPECT_TRUE(at::equal(attend(in.q, keys, values, {}, scale(c)),
                        attend(in.q, in.keys.contiguous(), in.values.contiguous(), {}, scale(c))));
}

TEST_P(FewRowAttention, AQueryThatSeesNothingIsNaNAsInTheBatchedForm) {
  const Case c{3, 4, 2, 64, 0};
  const Inputs in = inputs(c, 9);
  at::Tensor visible = at::eye(3, at::kBool);
  visible[1][1] = false;
  const at::Tensor got = attend(in.q, in.keys, in.values, visible, scale(c));
  EXPECT_TRUE(at::isnan(got[1]).all().item<bool>());
  EXPECT_TRUE(at::isfinite(got[0]).all().item<bool>());
  EXPECT_TRUE(
      at::isnan(batched(in.q, in.keys, in.values, visible, scale(c))[1]).all().item<bool>());
}

TEST_P(FewRowAttention, RefusesWhatItWouldReadOutsideOfOrAnotherDtype) {
  const at::Tensor one = at::zeros({1, 16, 128}, dtype());
  const at::Tensor cache = at::zeros({8, 80, 128}, dtype());
  EXPECT_NO_THROW(attend(one, cache, cache, at::ones({1, 80}, at::kBool), 0.1));
  EXPECT_THROW(attend(one, cache, cache, at::ones({1, 7}, at::kBool), 0.1), std::invalid_argument);
  EXPECT_THROW(attend(at::zeros({1, 12, 128}, dtype()), cache, cache, {}, 0.1),
               std::invalid_argument);
  EXPECT_THROW(attend(one.to(at::kHalf), cache.to(at::kHalf), cache.to(at::kHalf), {}, 0.1),
               std::invalid_argument);
}

// What the attention layer hands over (the best kernel for q): a decode step, a verify block
// where the tiles take it, contexts up to each kernel's measured limit; not autograd or another
// dtype, nor shapes it would read outside of.
TEST(FewRowAttentionApplies, TakesWhatEachKernelWasMeasuredFasterOn) {
  for (const at::ScalarType dtype : {at::kBFloat16, at::kFloat}) {
    const at::Tensor one = at::zeros({1, 16, 128}, dtype), block = at::zeros({16, 16, 128}, dtype);
    const at::Tensor cache = at::zeros({8, 80, 128}, dtype);
    const bool tiles = best_few_row_attention_kernel(one) == FewRowAttentionKernel::kTiles;
    // One kernel for a decode step and a verify block alike: a verify row keeps its decoded bits.
    const bool dots = few_row_attention_kernel_takes(FewRowAttentionKernel::kBf16Dots, one);
    const FewRowAttentionKernel best = tiles  ? FewRowAttentionKernel::kTiles
                                       : dots ? FewRowAttentionKernel::kBf16Dots
                                              : FewRowAttentionKernel::kVectors;
    for (const std::int64_t queries : {1, 3, 4, 16})
      EXPECT_EQ(best_few_row_attention_kernel(at::zeros({queries, 16, 128}, dtype)), best);
    EXPECT_TRUE(few_row_attention_applies(one, cache, cache));  // Qwen3-0.6B: 16 heads of 128
    // A verify block: batched unless the pair products take it.
    EXPECT_EQ(few_row_attention_applies(block, cache, cache), tiles || dots);
    const at::Tensor long_cache = at::zeros({8, 8192, 128}, dtype);
    EXPECT_EQ(few_row_attention_applies(one, long_cache, long_cache), tiles || dots);
    const std::int64_t too_many = tiles || dots ? kTileAttentionQueries + 1 : 16;
    const at::Tensor many = at::zeros({too_many, 16, 128}, dtype);
    EXPECT_FALSE(few_row_attention_applies(many, cache, cache));
    const at::Tensor grad = at::zeros({8, 80, 128}, dtype).requires_grad_();
    EXPECT_FALSE(few_row_attention_applies(one, grad, grad));
    EXPECT_FALSE(
        few_row_attention_applies(one.to(at::kHalf), cache.to(at::kHalf), cache.to(at::kHalf)));
    // Shapes it would read outside of go to the batched form, which refuses them.
    EXPECT_FALSE(few_row_attention_applies(one, cache, cache, at::ones({1, 7}, at::kBool)));
    EXPECT_FALSE(few_row_attention_applies(one, cache, cache, at::ones({2, 80}, at::kBool)));
    EXPECT_TRUE(few_row_attention_applies(one, cache, cache, at::ones({1, 80}, at::kBool)));
    EXPECT_FALSE(few_row_attention_applies(at::zeros({0, 16, 128}, dtype), cache, cache));
    EXPECT_FALSE(few_row_attention_applies(at::zeros({1, 12, 128}, dtype), cache, cache));
  }
}

INSTANTIATE_TEST_SUITE_P(DtypesAndKernels, FewRowAttention,
                         ::testing::Combine(::testing::Values(at::kBFloat16, at::kFloat),
                                            ::testing::Values(FewRowAttentionKernel::kVectors,
                                                              FewRowAttentionKernel::kTiles,
                                                              FewRowAttentionKernel::kBf16Dots)),
                         [](const auto& p) {
                           const FewRowAttentionKernel kernel = std::get<1>(p.param);
                           return std::string(c10::toString(std::get<0>(p.param))) +
                                  (kernel == FewRowAttentionKernel::kTiles      ? "_tiles"
                                   : kernel == FewRowAttentionKernel::kBf16Dots ? "_bf16_dots"
                                                                                : "_vectors");
                         });

}  // namespace
}  // namespace draftgate::model
