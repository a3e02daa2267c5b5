// The two-pass delta-rule step (model/fused_delta_rule.h) against the ATen composition the
// recurrent form ran (written out here) and against float64, at Qwen3.5-0.8B's 16 heads of
// 128 x 128 and at ragged sizes; heads independent, the input state untouched, a NaN kept to its
// head, and what it refuses.

#include "draftgate/model/fused_delta_rule.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <vector>

namespace draftgate::model {
namespace {

struct Inputs {
  at::Tensor state, q, k, v, g, beta;
};

Inputs inputs(std::int64_t heads, std::int64_t dk, std::int64_t dv, std::int64_t seed) {
  at::manual_seed(seed);
  Inputs in;
  in.state = at::randn({heads, dk, dv});
  in.q = at::randn({heads, dk}) / std::sqrt(static_cast<double>(dk));
  in.k = at::randn({heads, dk});
  in.k = in.k / in.k.norm(2, -1, true);  // L2-normalised, as the layer passes it
  in.v = at::randn({heads, dv});
  in.g = -at::rand({heads}) * 3;
  in.beta = at::rand({heads});
  return in;
}

// The composition, in the dtype of its inputs.
std::pair<at::Tensor, at::Tensor> composed(const Inputs& in) {
  at::Tensor s = in.state * in.g.exp().view({-1, 1, 1});
  const at::Tensor memory = at::bmm(in.k.unsqueeze(1), s).squeeze(1);
  const at::Tensor delta = (in.v - memory) * in.beta.unsqueeze(-1);
  s = s + at::bmm(in.k.unsqueeze(2), delta.unsqueeze(1));
  return {at::bmm(in.q.unsqueeze(1), s).squeeze(1), s};
}

Inputs to_double(const Inputs& in) {
  return {in.state.to(at::kDouble), in.q.to(at::kDouble), in.k.to(at::kDouble),
          in.v.to(at::kDouble),     in.g.to(at::kDouble), in.beta.to(at::kDouble)};
}

TEST(FusedDeltaRule, IsWithinItsRoundingsOfFloat64) {
  for (const auto& [heads, dk, dv] :
       std::vector<std::array<std::int64_t, 3>>{{16, 128, 128}, {3, 8, 16}, {5, 37, 24}}) {
    const Inputs in = inputs(heads, dk, dv, heads * dk + dv);
    ASSERT_TRUE(fused::takes_delta_rule_step(in.state, in.q, in.k, in.v, in.g, in.beta));
    const auto [out, next] = fused::delta_rule_step(in.state, in.q, in.k, in.v, in.g, in.beta);
    const Inputs d = to_double(in);
    const auto [want_out, want_next] = composed(d);
    // Sᵀk sums dK float32 products: within (dK + 2) u of Σ|k_i||s_ij|; δ carries it times β, the
    // new state times |k_i| (plus its own two roundings), Sᵀq sums dK more of those.
    const double u = 1.0 / 16777216;
    const at::Tensor decayed = (d.state * d.g.exp().view({-1, 1, 1})).abs();
    const at::Tensor memory_error =
        (dk + 2) * u * at::bmm(d.k.abs().unsqueeze(1), decayed).squeeze(1) + u * d.v.abs();
    const at::Tensor delta_error = memory_error * d.beta.unsqueeze(-1);
    const at::Tensor state_error =
        at::bmm(d.k.abs().unsqueeze(2), delta_error.unsqueeze(1)) + 3 * u * want_next.abs();
    const at::Tensor out_error =
        at::bmm(d.q.abs().unsqueeze(1), state_error + (dk + 2) * u * want_next.abs()).squeeze(1);
    EXPECT_TRUE(((next.to(at::kDouble) - want_next).abs() <= state_error).all().item<bool>())
        << heads << " x " << dk << " x " << dv;
    EXPECT_TRUE(((out.to(at::kDouble) - want_out).abs() <= out_error).all().item<bool>())
        << heads << " x " << dk << " x " << dv;
  }
}

TEST(FusedDeltaRule, IsWithinTheCompositionsOwnDistanceOfFloat64) {
  const Inputs in = inputs(16, 128, 128, 11);
  const auto [out, next] = fused::delta_rule_step(in.state, in.q, in.k, in.v, in.g, in.beta);
  const auto [aten_out, aten_next] = composed(in);
  const auto [want_out, want_next] = composed(to_double(in));
  // Neither order of the float32 sums is the better one by more than a small factor.
  const auto distance = [](const at::Tensor& a, const at::Tensor& b) {
    return (a.to(at::kDouble) - b).abs().max().item<double>();
  };
  EXPECT_LE(distance(next, want_next), 4 * distance(aten_next, want_next) + 1e-7);
  EXPECT_LE(distance(out, want_out), 4 * distance(aten_out, want_out) + 1e-7);
}

TEST(FusedDeltaRule, AHeadHasTheBitsOfTheSameHeadAloneAndTheStateIsLeftAsItIs) {
  const Inputs in = inputs(16, 128, 128, 5);
  const at::Tensor before = in.state.clone();
  const auto [out, next] = fused::delta_rule_step(in.state, in.q, in.k, in.v, in.g, in.beta);
  EXPECT_TRUE(at::equal(in.state, before));
  for (std::int64_t h : {0, 7, 15}) {
    const auto one = [&](const at::Tensor& t) { return t.narrow(0, h, 1).contiguous(); };
    const auto [o, n] = fused::delta_rule_step(one(in.state), one(in.q), one(in.k), one(in.v),
                                               one(in.g), one(in.beta));
    EXPECT_TRUE(at::equal(o[0], out[h])) << "head " << h;
    EXPECT_TRUE(at::equal(n[0], next[h])) << "head " << h;
  }
}

TEST(FusedDeltaRule, ANaNInOneHeadsStateStaysInThatHead) {
  Inputs in = inputs(4, 16, 16, 9);
  in.state[2][3][5] = NAN;
  const auto [out, next] = fused::delta_rule_step(in.state, in.q, in.k, in.v, in.g, in.beta);
  EXPECT_TRUE(at::isnan(out[2]).any().item<bool>());
  for (std::int64_t h : {0, 1, 3}) {
    EXPECT_TRUE(at::isfinite(out[h]).all().item<bool>()) << "head " << h;
    EXPECT_TRUE(at::isfinite(next[h]).all().item<bool>()) << "head " << h;
  }
}

TEST(FusedDeltaRule, TakesFloat32ContiguousStepsOutsideAutogradOnly) {
  const Inputs in = inputs(4, 16, 16, 1);
  const auto takes = [](const Inputs& i) {
    return fused::takes_delta_rule_step(i.state, i.q, i.k, i.v, i.g, i.beta);
  };
  EXPECT_TRUE(takes(in));
  Inputs other = in;
  other.state = in.state.to(at::kDouble);
  EXPECT_FALSE(takes(other));
  other = in;
  other.state = in.state.transpose(1, 2);  // not contiguous
  EXPECT_FALSE(takes(other));
  other = in;
  other.state = in.state.narrow(2, 0, 12).contiguous();  // dV not a multiple of 8
  other.v = in.v.narrow(1, 0, 12).contiguous();
  EXPECT_FALSE(takes(other));
  other = in;
  other.q = in.q.narrow(0, 0, 3).contiguous();
  EXPECT_FALSE(takes(other));
  other = in;
  other.state = in.state.clone().requires_grad_();
  EXPECT_FALSE(takes(other));
}

}  // namespace
}  // namespace draftgate::model
