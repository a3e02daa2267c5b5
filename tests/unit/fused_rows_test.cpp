// The one-pass row operations (src/model/fused_rows.cpp, taken by ops.h's rms_norm, apply_rope and
// swiglu in an inference forward) against the ATen compositions they replace, written out here, and
// against float64: the same roundings in the same places, so bf16 outputs are the composition's
// bits but for a rare one-ulp flip where only the order of a float32 sum differs.

#include "draftgate/model/fused_rows.h"

#include <gtest/gtest.h>

#include "draftgate/model/ops.h"

namespace draftgate::model {
namespace {

at::Tensor composed_rms_norm(const at::Tensor& x, const at::Tensor& w, double eps,
                             NormStyle style) {
  const at::Tensor xf = x.to(at::kFloat);
  const at::Tensor n = xf * at::rsqrt(xf.pow(2).mean(-1, true) + eps);
  if (style == NormStyle::kPlain) return w * n.to(x.scalar_type());
  return (n * (w.to(at::kFloat) + 1.0)).to(x.scalar_type());
}

at::Tensor composed_rope(const at::Tensor& x, const RopeTables& rope) {
  const std::int64_t rotary = rope.cos.size(-1), half = rotary / 2;
  const at::Tensor rot = x.narrow(-1, 0, rotary);
  const at::Tensor swapped = at::cat({rot.narrow(-1, half, half), rot.narrow(-1, 0, half)}, -1);
  const at::Tensor out = at::addcmul(rot * rope.cos, swapped, rope.sin);
  return at::cat({out, x.narrow(-1, rotary, x.size(-1) - rotary)}, -1);
}

// Elements whose bits differ, and the largest difference in units of the dtype's last place.
struct BitDiff {
  std::int64_t differing = 0;
  double max_ulps = 0;
};
BitDiff bit_diff(const at::Tensor& a, const at::Tensor& b) {
  const at::Tensor af = a.to(at::kDouble), bf = b.to(at::kDouble);
  const double eps = a.scalar_type() == at::kBFloat16 ? 1.0 / 128 : 1.0 / 8388608;
  const at::Tensor ulp = at::clamp_min(at::maximum(af.abs(), bf.abs()), 1e-30) * eps;
  return {(af != bf).sum().item<std::int64_t>(), ((af - bf).abs() / ulp).max().item<double>()};
}

class FusedRows : public ::testing::TestWithParam<at::ScalarType> {};

TEST_P(FusedRows, RmsNormHasTheCompositionsRoundings) {
  for (NormStyle style : {NormStyle::kPlain, NormStyle::kOnePlusW})
    for (std::int64_t width : {1024, 128, 37})
      for (std::int64_t rows : {1, 16, 300}) {
        at::manual_seed(width + rows);
        const at::Tensor x = (at::randn({rows, width}) * 3).to(GetParam());
        const at::Tensor w = (at::randn({width}) * 0.5 + 1).to(GetParam());
        const at::Tensor got = rms_norm(x, w, 1e-6, style);
        if (GetParam() == at::kBFloat16) {
          const BitDiff d = bit_diff(got, composed_rms_norm(x, w, 1e-6, style));
          EXPECT_LE(d.max_ulps, 1.01) << "width " << width << " rows " << rows;
          EXPECT_LE(d.differing, std::max<std::int64_t>(1, x.numel() / 500));
        }
        // float64: a float32 sum of N squares in eight chains is within (N/8 + 3) u of its value,
        // half of that after the square root, plus the three roundings after it; bf16 adds two.
        const at::Tensor xd = x.to(at::kDouble), wd = w.to(at::kDouble);
        const at::Tensor nd = xd * at::rsqrt(xd.pow(2).mean(-1, true) + 1e-6);
        const at::Tensor ref = style == NormStyle::kPlain ? wd * nd : nd * (wd + 1);
        const double u = 1.0 / 16777216;
        const double budget = ((static_cast<double>(width) / 8 + 3) / 2 + 3) * u +
                              (GetParam() == at::kBFloat16 ? 2.0 / 256 : 0.0);
        EXPECT_LE((got.to(at::kDouble) - ref).abs().div(ref.abs()).max().item<double>(), budget)
            << "width " << width << " rows " << rows;
      }
}

TEST_P(FusedRows, RopeHasTheCompositionsRoundings) {
  // Full, partial (Qwen3.5's 64 of 256), and halves with a tail past the vectors of 8 (12 of 40).
  for (std::int64_t rotary : {128, 64, 24}) {
    at::manual_seed(rotary);
    const std::int64_t width = rotary == 128 ? 128 : rotary == 64 ? 256 : 40;
    const at::Tensor x = at::randn({16, 8, width}).to(GetParam());
    const RopeTables rope =
        rope_tables(at::arange(60, 76, at::kLong), rope_inv_freq(rotary, 1e6), GetParam());
    const at::Tensor got = apply_rope(x, rope);
    const at::Tensor want = composed_rope(x, rope);
    if (GetParam() == at::kBFloat16) {
      EXPECT_EQ(bit_diff(got, want).differing, 0) << "rotary " << rotary;
      continue;
    }
    // float32: ATen's vector kernel may contract the multiply-add into one rounding (FMA), so
    // the two differ by up to a rounding of the terms' magnitude.
    const at::Tensor magnitude = composed_rope(x.abs(), {rope.cos.abs(), rope.sin.abs()});
    EXPECT_TRUE(((got - want).abs() <= magnitude * (2.0 / 16777216)).all().item<bool>())
        << "rotary " << rotary;
  }
}

TEST(FusedRowsSilu, SwigluOfBf16HasTheCompositionsBits) {
  at::manual_seed(3);
  const at::Tensor x = at::randn({16, 256}).to(at::kBFloat16);
  const at::Tensor gate = (at::randn({512, 256}) * 0.1).to(at::kBFloat16);
  const at::Tensor up = (at::randn({512, 256}) * 0.1).to(at::kBFloat16);
  const at::Tensor down = at::eye(512).narrow(0, 0, 512).to(at::kBFloat16);  // y = the product
  const at::Tensor got = swiglu(x, gate, up, down);
  const at::Tensor want = dense(at::silu(dense(x, gate)) * dense(x, up), down);
  EXPECT_TRUE(at::equal(got, want)) << bit_diff(got, want).differing << " values differ";
}

// The table (taken from the linked ATen) and the product with up, on every bf16 gate.
TEST(FusedRowsSilu, EveryBf16GateHasAtenSiluBits) {
  const at::Tensor bits = at::arange(0, 65536, at::kInt).to(at::kShort);
  const at::Tensor gate =
      bits.view(at::kBFloat16);  // every bf16 value: NaNs, infinities, denormals
  const at::Tensor up = at::full({65536}, 1.5, at::kBFloat16);
  const at::Tensor got = fused::bf16_silu_mul(gate, up), want = at::silu(gate) * up;
  const at::Tensor same = (got == want).logical_or(at::isnan(got).logical_and(at::isnan(want)));
  EXPECT_TRUE(same.all().item<bool>()) << 65536 - same.sum().item<std::int64_t>() << " differ";
}

TEST_P(FusedRows, ARowHasTheBitsOfTheSameRowAlone) {
  at::manual_seed(5);
  const at::Tensor x = at::randn({16, 1024}).to(GetParam());
  const at::Tensor w = at::randn({1024}).to(GetParam());
  const at::Tensor all = rms_norm(x, w, 1e-6, NormStyle::kPlain);
  for (std::int64_t r : {0, 7, 15})
    EXPECT_TRUE(at::equal(all[r], rms_norm(x.narrow(0, r, 1), w, 1e-6, NormStyle::kPlain)[0]));
}

TEST_P(FusedRows, ANonFiniteValueReachesOnlyItsOwnRow) {
  at::Tensor x = at::randn({4, 64}).to(GetParam());
  x[2][5] = std::numeric_limits<float>::quiet_NaN();
  x[3][0] = std::numeric_limits<float>::infinity();
  const at::Tensor y = rms_norm(x, at::ones({64}, GetParam()), 1e-6, NormStyle::kPlain);
  EXPECT_TRUE(at::isfinite(y.narrow(0, 0, 2)).all().item<bool>());
  EXPECT_TRUE(at::isnan(y[2]).all().item<bool>());  // as the composition: the row's scale is NaN
  EXPECT_TRUE(at::isnan(y[3]).any().item<bool>());
  EXPECT_TRUE(at::equal(at::isnan(y), at::isnan(composed_rms_norm(x, at::ones({64}, GetParam()),
                                                                  1e-6, NormStyle::kPlain))));
}

TEST(FusedRowsAutograd, AWeightThatNeedsItsGradientTakesTheComposition) {
  const at::Tensor x = at::randn({3, 32});
  const at::Tensor w = at::randn({32}).requires_grad_();
  const at::Tensor y = rms_norm(x, w, 1e-6, NormStyle::kPlain);
  ASSERT_TRUE(y.requires_grad());
  y.sum().backward();
  const at::Tensor n = x * at::rsqrt(x.pow(2).mean(-1, true) + 1e-6);
  EXPECT_TRUE(at::allclose(w.grad(), n.sum(0), 1e-5, 1e-6));
}

INSTANTIATE_TEST_SUITE_P(Dtypes, FusedRows, ::testing::Values(at::kBFloat16, at::kFloat),
                         [](const auto& p) { return std::string(c10::toString(p.param)); });

}  // namespace
}  // namespace draftgate::model
