// The one-pass row operations (src/model/fused_rows.cpp, taken by ops.h's rms_norm, rms_norm_gated,
// apply_rope and swiglu and by Gated DeltaNet's q/k norms and conv silu in an inference forward)
// against the ATen compositions they replace, written out here, and against float64: the same
// roundings in the same places, so bf16 outputs are the composition's bits but for a rare one-ulp
// flip where only the order of a float32 sum differs.

#include "draftgate/model/fused_rows.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

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

// Qwen3.5 attention's output gate: x · sigmoid(gate) with the gate each head's half of the query
// projection, where it lies; every bf16 gate value (NaNs, infinities, denormals) against ATen's
// sigmoid and product, then a block of heads of 128 with a tail past the vectors.
TEST(FusedRowsSilu, SigmoidGateHasTheCompositionsBits) {
  const at::Tensor every = at::arange(0, 65536, at::kInt).to(at::kShort).view(at::kBFloat16);
  const at::Tensor x = (at::randn({65536}) * 3).to(at::kBFloat16);
  const at::Tensor gate = every.view({1, 1, 65536});
  ASSERT_TRUE(fused::takes_sigmoid_mul(x.view({1, 65536}), gate));
  const at::Tensor got = fused::bf16_sigmoid_mul(x.view({1, 65536}), gate).view({65536});
  const at::Tensor want = x * at::sigmoid(every);
  const at::Tensor same = (got == want).logical_or(at::isnan(got).logical_and(at::isnan(want)));
  EXPECT_TRUE(same.all().item<bool>()) << 65536 - same.sum().item<std::int64_t>() << " differ";
  for (std::int64_t d : {128, 13}) {
    at::manual_seed(d);
    const std::int64_t t = 16, heads = 8;
    const at::Tensor projected = (at::randn({t, heads, 2 * d}) * 2).to(at::kBFloat16);
    const at::Tensor half = projected.split(d, -1)[1];
    const at::Tensor out = at::randn({t, heads * d}).to(at::kBFloat16);
    const at::Tensor fused_out = fused::bf16_sigmoid_mul(out, half);
    const at::Tensor composed = out * at::sigmoid(half.reshape({t, heads * d}));
    EXPECT_TRUE(at::equal(fused_out, composed))
        << bit_diff(fused_out, composed).differing << " differ, d " << d;
  }
  EXPECT_FALSE(fused::takes_sigmoid_mul(at::zeros({2, 8}), at::zeros({2, 1, 8})));
  EXPECT_FALSE(fused::takes_sigmoid_mul(at::zeros({2, 8}, at::kBFloat16),
                                        at::zeros({2, 1, 8}, at::kBFloat16).transpose(1, 2)));
}

// Gated DeltaNet's v and beta: every bf16 value widened, and its sigmoid widened, to the bit
// (NaNs, infinities, denormals); a [T, heads, d] view split from wider rows read where it lies.
TEST(FusedRowsSilu, WidenedValuesHaveAtensBits) {
  const at::Tensor every = at::arange(0, 65536, at::kInt).to(at::kShort).view(at::kBFloat16);
  ASSERT_TRUE(fused::takes_widen(every));
  EXPECT_TRUE(at::equal(fused::widen(every).view(at::kInt), every.to(at::kFloat).view(at::kInt)));
  const at::Tensor sig = at::sigmoid(every).to(at::kFloat);
  const at::Tensor got = fused::sigmoid_widened(every);
  const at::Tensor same = (got == sig).logical_or(at::isnan(got).logical_and(at::isnan(sig)));
  EXPECT_TRUE(same.all().item<bool>()) << 65536 - same.sum().item<std::int64_t>() << " differ";
  const at::Tensor wide = at::randn({5, 300}).to(at::kBFloat16);
  const at::Tensor view = wide.narrow(1, 40, 256).view({5, 2, 128});
  EXPECT_TRUE(at::equal(fused::widen(view), view.to(at::kFloat)));
  EXPECT_TRUE(at::equal(fused::sigmoid_widened(view), at::sigmoid(view).to(at::kFloat)));
  EXPECT_FALSE(fused::takes_widen(at::zeros({2, 8})));
}

// Gated DeltaNet's conv output: silu alone, from the same table, on every bf16 value.
TEST(FusedRowsSilu, EveryBf16ValueHasAtenSiluBitsAlone) {
  const at::Tensor every = at::arange(0, 65536, at::kInt).to(at::kShort).view(at::kBFloat16);
  const at::Tensor got = fused::bf16_silu(every), want = at::silu(every);
  const at::Tensor same = (got == want).logical_or(at::isnan(got).logical_and(at::isnan(want)));
  EXPECT_TRUE(same.all().item<bool>()) << 65536 - same.sum().item<std::int64_t>() << " differ";
}

TEST(FusedRowsSilu, ABf16TensorOfAnotherShapeHasAtenSiluBits) {
  at::manual_seed(2);
  const at::Tensor x = (at::randn({16, 6144}) * 4).to(at::kBFloat16);
  EXPECT_TRUE(at::equal(fused::bf16_silu(x), at::silu(x)));
}

// Gated DeltaNet's delta-rule inputs in one region: the bits of the four row operations on the
// split (and, with more value heads than key heads, repeated) views, for a token and a block.
TEST(FusedRowsSilu, DeltaRuleRowsHaveTheSeparateOperationsBits) {
  for (const auto& [nk, nv] : {std::pair<std::int64_t, std::int64_t>{4, 4}, {2, 6}})
    for (std::int64_t t : {1, 5, 16}) {
      const std::int64_t dk = 32, dv = 48;
      at::manual_seed(t * 10 + nv);
      const at::Tensor mixed = (at::randn({t, 2 * nk * dk + nv * dv}) * 2).to(at::kBFloat16);
      const at::Tensor b = (at::randn({t, nv}) * 3).to(at::kBFloat16);
      const at::Tensor a = (at::randn({t, nv}) * 3).to(at::kBFloat16);
      const at::Tensor dt_bias = at::randn({nv});
      ASSERT_TRUE(fused::takes_delta_rule_rows(mixed, b, a, dt_bias, nk, dk, nv, dv));
      const fused::DeltaRuleRows got =
          fused::delta_rule_rows(mixed, b, a, dt_bias, nk, dk, nv, dv, 0.25);
      const auto parts = mixed.split_with_sizes({nk * dk, nk * dk, nv * dv}, -1);
      const auto repeated = [&](const at::Tensor& x) {
        return x.reshape({t, nk, dk}).repeat_interleave(nv / nk, 1);
      };
      const std::string at_shape =
          "nk " + std::to_string(nk) + " nv " + std::to_string(nv) + " t " + std::to_string(t);
      EXPECT_TRUE(at::equal(got.q, fused::l2_normalise(repeated(parts[0]), 0.25))) << at_shape;
      EXPECT_TRUE(at::equal(got.k, fused::l2_normalise(repeated(parts[1]), 1.0))) << at_shape;
      EXPECT_TRUE(at::equal(got.v, parts[2].reshape({t, nv, dv}).to(at::kFloat))) << at_shape;
      EXPECT_TRUE(at::equal(got.beta, at::sigmoid(b).to(at::kFloat))) << at_shape;
      EXPECT_TRUE(at::equal(got.gate_input, a.to(at::kFloat) + dt_bias)) << at_shape;
    }
  const at::Tensor mixed = at::zeros({2, 2 * 2 * 8 + 4 * 8}, at::kBFloat16);
  const at::Tensor b = at::zeros({2, 4}, at::kBFloat16), bias = at::zeros({4});
  const at::Tensor three_keys = at::zeros({2, 2 * 3 * 8 + 4 * 8}, at::kBFloat16);
  EXPECT_FALSE(fused::takes_delta_rule_rows(three_keys, b, b, bias, 3, 8, 4, 8));  // 4 on 3 keys
  EXPECT_FALSE(fused::takes_delta_rule_rows(mixed, b.narrow(1, 0, 3), b, bias, 2, 8, 4, 8));
  EXPECT_FALSE(fused::takes_delta_rule_rows(mixed, b, b, bias.to(at::kBFloat16), 2, 8, 4, 8));
  EXPECT_FALSE(
      fused::takes_delta_rule_rows(mixed.to(at::kFloat), b.to(at::kFloat), b, bias, 2, 8, 4, 8));
}

// Gated DeltaNet's short convolution over gathered windows then silu, against its composition
// (gather, the bf16 product with the taps, the float32-accumulated sum over the window, silu): the
// same roundings in the same order, so the same bits; a width with a tail past the vectors; the
// [C, 1, K] conv weight contiguous and a view of a wider one.
TEST(FusedRowsSilu, WindowSumsHaveTheCompositionsBits) {
  for (std::int64_t c : {6144, 29, 13})  // 16 channels at a time, 8, and one
    for (bool view : {false, true}) {
      at::manual_seed(c);
      const std::int64_t k = 4, t = 16;
      const at::Tensor head = at::randn({k - 1, c}).to(at::kBFloat16);
      const at::Tensor tail = (at::randn({t, c}) * 2).to(at::kBFloat16);
      const at::Tensor weight =
          view ? (at::randn({c, 1, 2 * k}) * 0.5).to(at::kBFloat16).narrow(2, 3, k)
               : (at::randn({c, 1, k}) * 0.5).to(at::kBFloat16);
      std::vector<std::int64_t> index;
      for (std::int64_t i = 0; i < t; ++i)  // a chain: each node's window its K-1 predecessors
        for (std::int64_t j = 0; j < k; ++j) index.push_back(i + j);
      ASSERT_TRUE(fused::takes_silu_window_sums(head, tail, weight));
      const at::Tensor got = fused::silu_window_sums(head, tail, index, weight);
      const at::Tensor windows =
          at::cat({head, tail}, 0).index_select(0, at::tensor(index, at::kLong)).view({t, k, c});
      const at::Tensor taps = weight.squeeze(1).t();  // [K, C]
      const at::Tensor want = at::silu((windows * taps.unsqueeze(0)).sum(1));
      EXPECT_TRUE(at::equal(got, want))
          << bit_diff(got, want).differing << " differ, width " << c << " view " << view;
    }
  const at::Tensor rows = at::zeros({3, 8}, at::kBFloat16),
                   weight = at::zeros({8, 1, 4}, at::kBFloat16);
  EXPECT_THROW(fused::silu_window_sums(rows, rows, {0, 1, 2, 6}, weight), std::out_of_range);
  EXPECT_FALSE(fused::takes_silu_window_sums(rows.to(at::kFloat), rows.to(at::kFloat),
                                             weight.to(at::kFloat)));
  EXPECT_FALSE(fused::takes_silu_window_sums(rows, rows, weight.squeeze(1).t()));  // not [C, 1, K]
}

at::Tensor composed_rms_norm_gated(const at::Tensor& x, const at::Tensor& w, const at::Tensor& gate,
                                   double eps) {
  const at::Tensor n = composed_rms_norm(x, w, eps, NormStyle::kPlain);
  return (n * at::silu(gate.to(at::kFloat))).to(x.scalar_type());
}

// The gated norm (Gated DeltaNet's output): the plain norm's roundings, then silu in float32 (of a
// bf16 gate from a table of ATen's own, whose scalar tail may differ by an ulp; of a float32 gate
// by f32x8.h's exp, within ~1 ulp of ATen's), the product cast once.
TEST_P(FusedRows, RmsNormGatedHasTheCompositionsRoundings) {
  for (std::int64_t width : {128, 37})
    for (std::int64_t rows : {1, 256}) {
      at::manual_seed(width * rows);
      const at::Tensor x = (at::randn({rows, width}) * 3).to(GetParam());
      const at::Tensor w = (at::randn({width}) * 0.5 + 1).to(GetParam());
      at::Tensor gate = (at::randn({rows, width}) * 4).to(GetParam());
      gate[0][0] = -100.0;  // exp(100) overflows to inf: silu -0, as in ATen
      gate[0][1] = -88.5;   // exp(88.5) is within float32's range, its top exponent
      const at::Tensor got = fused::rms_norm_gated(x, w, gate, 1e-6);
      const at::Tensor want = composed_rms_norm_gated(x, w, gate, 1e-6);
      const BitDiff d = bit_diff(got, want);
      // Values near 1e-37 sit below bit_diff's floor of an ulp: the one at -88.5 by itself.
      const double tiny = want[0][1].item<double>();
      EXPECT_LE(std::abs(got[0][1].item<double>() - tiny), std::abs(tiny) / 64) << "silu(-88.5)";
      if (GetParam() == at::kBFloat16) {
        EXPECT_LE(d.max_ulps, 1.01) << "width " << width << " rows " << rows;
        EXPECT_LE(d.differing, std::max<std::int64_t>(2, x.numel() / 200));
      } else {
        // float32: the sum of squares' order (as the plain norm) and the exp's ulp.
        EXPECT_LE(
            (got - want).abs().max().item<double>(),
            want.abs().max().item<double>() * (static_cast<double>(width) / 8 + 8) / 16777216);
      }
    }
  EXPECT_TRUE(fused::takes_rms_norm_gated(at::zeros({2, 8}, GetParam()), at::zeros({8}, GetParam()),
                                          at::zeros({2, 8}, GetParam())));
  // float32 x (Gated DeltaNet's output) is cast to the gate's dtype in the threads: the bits of
  // the same norm of x cast first (a float32 gate has nothing to cast).
  for (std::int64_t width : {128, 37}) {
    if (GetParam() == at::kFloat) break;
    at::manual_seed(width);
    const at::Tensor x = at::randn({256, width}) * 3;
    const at::Tensor w = (at::randn({width}) * 0.5 + 1).to(GetParam());
    const at::Tensor gate = (at::randn({256, width}) * 4).to(GetParam());
    ASSERT_TRUE(fused::takes_rms_norm_gated(x, w, gate));
    EXPECT_TRUE(at::equal(fused::rms_norm_gated(x, w, gate, 1e-6),
                          fused::rms_norm_gated(x.to(GetParam()), w, gate, 1e-6)))
        << "width " << width;
  }
  EXPECT_FALSE(fused::takes_rms_norm_gated(
      at::zeros({2, 8}, at::kFloat), at::zeros({8}, at::kBFloat16), at::zeros({2, 8}, at::kFloat)));
  EXPECT_FALSE(fused::takes_rms_norm_gated(
      at::zeros({2, 8}, GetParam()), at::zeros({8}, GetParam()), at::zeros({2, 7}, GetParam())));
}

// Gated DeltaNet's q and k: x / sqrt(Σx² + 1e-6) in float32 and the scale's second rounding.
TEST_P(FusedRows, L2NormaliseIsWithinItsSumsRoundingOfTheComposition) {
  at::manual_seed(8);
  for (std::int64_t width : {128, 21}) {
    const at::Tensor x = at::randn({16, 16, width}).to(GetParam());
    for (double scale : {1.0, 1.0 / std::sqrt(128.0)}) {
      const at::Tensor xf = x.to(at::kFloat);
      at::Tensor want = xf * at::rsqrt((xf * xf).sum(-1, true) + 1e-6);
      if (scale != 1.0) want = want * scale;
      const at::Tensor got = fused::l2_normalise(x, scale);
      ASSERT_EQ(got.scalar_type(), at::kFloat);
      // A float32 sum of N squares in another order: within (N/8 + 3) u of its value, half of
      // that through the square root, plus the products' roundings.
      const double budget = ((static_cast<double>(width) / 8 + 3) / 2 + 3) / 16777216;
      EXPECT_LE((got - want).abs().div(want.abs().clamp_min(1e-30)).max().item<double>(), budget)
          << "width " << width << " scale " << scale;
    }
  }
  // [T, heads, d] views split from wider rows (as Gated DeltaNet's q and k are), and one with its
  // first two dimensions swapped, are read where they lie: the bits of their contiguous copies.
  const at::Tensor wide = at::randn({5, 300}).to(GetParam());
  for (const at::Tensor& view : {wide.narrow(1, 40, 256).view({5, 2, 128}),
                                 wide.narrow(1, 40, 256).view({5, 2, 128}).transpose(0, 1)}) {
    ASSERT_FALSE(view.is_contiguous());
    EXPECT_TRUE(
        at::equal(fused::l2_normalise(view, 0.5), fused::l2_normalise(view.contiguous(), 0.5)));
  }
  at::Tensor bad = at::randn({2, 8}).to(GetParam());
  bad[1][3] = std::numeric_limits<float>::quiet_NaN();
  const at::Tensor y = fused::l2_normalise(bad, 1.0);
  EXPECT_TRUE(at::isfinite(y[0]).all().item<bool>());
  EXPECT_TRUE(at::isnan(y[1]).all().item<bool>());
}

// The residual add before a layer's MLP norm: ATen's add (float32, cast once), then the norm,
// to the bit; both norm styles and a width with a tail past the vectors.
TEST_P(FusedRows, AddRmsNormHasTheBitsOfTheAddThenTheNorm) {
  at::manual_seed(9);
  for (std::int64_t width : {1024, 21})
    for (NormStyle style : {NormStyle::kPlain, NormStyle::kOnePlusW}) {
      const at::Tensor h = (at::randn({16, width}) * 3).to(GetParam());
      const at::Tensor delta = at::randn({16, width}).to(GetParam());
      const at::Tensor w = at::randn({width}).to(GetParam());
      ASSERT_TRUE(fused::takes_add_rms_norm(h, delta, w));
      const auto [sum, normed] = fused::add_rms_norm(h, delta, w, 1e-6, style);
      const at::Tensor want_sum = h + delta;
      EXPECT_TRUE(at::equal(sum, want_sum)) << "width " << width;
      EXPECT_TRUE(at::equal(normed, fused::rms_norm(want_sum, w, 1e-6, style)))
          << "width " << width;
    }
  EXPECT_FALSE(fused::takes_add_rms_norm(
      at::zeros({2, 8}, GetParam()), at::zeros({2, 7}, GetParam()), at::zeros({8}, GetParam())));
}

// Qwen3.5's query heads split from the gated projection ([T, heads, d] with d contiguous) are
// normed where they lie: the bits of their contiguous copy, both styles.
TEST_P(FusedRows, RmsNormOfASplitViewHasTheBitsOfItsCopy) {
  at::manual_seed(10);
  const at::Tensor projected = at::randn({16, 4, 2 * 128}).to(GetParam());
  const at::Tensor heads = projected.split(128, -1)[0], w = at::randn({128}).to(GetParam());
  ASSERT_FALSE(heads.is_contiguous());
  for (NormStyle style : {NormStyle::kPlain, NormStyle::kOnePlusW})
    EXPECT_TRUE(at::equal(fused::rms_norm(heads, w, 1e-6, style),
                          fused::rms_norm(heads.contiguous(), w, 1e-6, style)));
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
